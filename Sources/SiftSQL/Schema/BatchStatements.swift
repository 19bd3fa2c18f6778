// Stage 6b (SQL lowering): the statements of a batch delete — reading which
// rows a delete reaches through relationships (to-one keys, entity
// numbers; to-many links are `selectLinks`), then deleting rows and their
// join-table links and clearing the to-one keys that pointed at them. Each
// takes its keys as one bound array, however many there are.

import SiftModel
import SiftValues

extension SQLSchema {
    private func keyArray(_ keys: [Int64]) -> SQLExpression {
        .value(dialect.arrayValue(keys.map(SQLValue.integer)) ?? .null)
    }

    /// The destination keys of a to-one relationship of the rows of
    /// `entity` with these keys: rows of (key, destination key), for rows
    /// that have one.
    ///
    /// - Parameters:
    ///   - relationship: The to-one relationship.
    ///   - entity: The entity whose objects have it.
    ///   - keys: The rows' primary keys, bound as one array.
    /// - Returns: The SELECT, ordered by key.
    package func selectToOneKeys(_ relationship: Relationship, of entity: Entity, keys: [Int64]) -> SQLQuery {
        let key = SQLExpression.column("t0", primaryKey(entity), nullable: false)
        let target = SQLExpression.column("t0", foreignKey(relationship, of: entity), nullable: true)
        return render(.select(SQLSelect([key, target], from: .table(table(entity), alias: "t0"),
                                        where: [.in(key, array: keyArray(keys)), .isNotNull(target)], orderBy: [SQLOrdering(key)])))
    }

    /// The entity number of each row of `entity`'s table with these keys:
    /// rows of (key, number).
    ///
    /// - Parameters:
    ///   - entity: An entity stored in the table.
    ///   - keys: The rows' primary keys, bound as one array.
    /// - Returns: The SELECT.
    package func selectEntityNumbers(_ entity: Entity, keys: [Int64]) -> SQLQuery {
        let key = SQLExpression.column("t0", primaryKey(entity), nullable: false)
        return render(.select(SQLSelect([key, .column("t0", entityColumn(entity), nullable: false)],
                                        from: .table(table(entity), alias: "t0"), where: [.in(key, array: keyArray(keys))])))
    }

    /// Deletes the rows of `entity`'s table with these keys; returns each
    /// deleted row's key.
    ///
    /// - Parameters:
    ///   - entity: An entity stored in the table.
    ///   - keys: The primary keys of the rows deleted, bound as one array.
    /// - Returns: The DELETE.
    package func deleteRows(_ entity: Entity, keys: [Int64]) -> SQLQuery {
        let key = SQLExpression.column("", primaryKey(entity), nullable: false)
        return render(.delete(SQLDelete(table: table(entity), conditions: [.in(key, array: keyArray(keys))], returning: [key])))
    }

    /// Deletes every link of the owners with these keys from the join
    /// table of a relationship; nil when it has none.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship.
    ///   - entity: The entity whose objects have it.
    ///   - owners: The owners' primary keys, bound as one array.
    /// - Returns: The DELETE, or nil when the relationship has no join table.
    package func deleteLinks(_ relationship: Relationship, in entity: Entity, owners: [Int64]) -> SQLQuery? {
        guard case .joinTable(let table, let source, _) = storage(of: relationship, in: entity) else { return nil }
        return render(.delete(SQLDelete(table: table, conditions: [
            .in(.column("", source, nullable: false), array: keyArray(owners)),
        ])))
    }

    /// Clears a to-one relationship of the rows of `entity` with these keys
    /// that point at one of `targets` (its key, the destination's entity
    /// number and its place in an ordered inverse), incrementing each row's
    /// version; returns the key of each row changed.
    ///
    /// - Parameters:
    ///   - relationship: The to-one relationship cleared.
    ///   - entity: The entity whose objects have it.
    ///   - keys: The primary keys of the rows that may be changed.
    ///   - targets: The primary keys of the rows it must point at to be
    ///     cleared.
    /// - Returns: The UPDATE.
    package func clearToOne(_ relationship: Relationship, of entity: Entity, keys: [Int64], pointingAt targets: [Int64]) -> SQLQuery {
        let foreignKey = foreignKey(relationship, of: entity)
        let cleared = [foreignKey] + [entityKey(relationship, of: entity), orderKey(relationship, of: entity)].compactMap { $0 }
        let version = SQLExpression.column("", version(entity), nullable: false)
        let key = SQLExpression.column("", primaryKey(entity), nullable: false)
        return render(.update(SQLUpdate(
            table: table(entity),
            assignments: cleared.map { ($0, SQLExpression.null) } + [(self.version(entity), .arithmetic(.add, version, .literal(1)))],
            conditions: [.in(key, array: keyArray(keys)), .in(.column("", foreignKey, nullable: true), array: keyArray(targets))],
            returning: [key])))
    }
}
