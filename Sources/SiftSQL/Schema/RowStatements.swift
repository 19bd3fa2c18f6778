// Stage 6b (SQL lowering): the statements the store runs on rows — reading
// rows by key, reading links, the largest key, inserting, updating with the
// version check, deleting, and writing join-table links — all built from the
// schema mapping. A row statement run many times has positional slots, and
// the values for them come from the same place (`bindings(…)`), so the store
// never needs to know which column is which.

import Foundation
import SiftModel
import SiftValues
import SiftTree

/// How the columns of a row statement (`SQLSchema.rowColumns`) become an
/// object's values: which column holds the entity number, and for each
/// entity a row may be, which column holds each attribute and to-one key.
package struct RowLayout: Sendable {
    /// An attribute's column, the slot its value goes in, and its type.
    package struct AttributeColumn: Sendable {
        /// The position of the attribute's column among the row statement's
        /// columns (the primary key is 0).
        package let column: Int
        /// The attribute's slot: its index among the entity's attributes,
        /// where its value goes in the object's values.
        package let slot: Int
        /// The attribute's type, which says how the column's value is read.
        package let type: AttributeType
        /// Whether the value may be stored in a file beside the store
        /// (Core Data's external binary storage: see `SQLSchema.externalData`).
        package let external: Bool
        /// The name of the value transformer of a transformable attribute.
        package let transformer: String?
    }

    /// The columns of the rows of one entity.
    package struct Member: Sendable {
        /// The entity's index in the model.
        package let entity: Int
        /// The index of its root entity.
        package let root: Int
        /// Its number (`Z_ENT`).
        package let number: Int64
        /// Its stored attributes, in slot order.
        package let attributes: [AttributeColumn]
        /// Its to-one keys, in slot order.
        package let toOne: [(column: Int, slot: Int)]
        /// The values a node starts with: nil for stored attributes, the
        /// default value for those the row does not hold (transient ones).
        package let initialValues: [PredicateValue]
        /// How many attributes it has.
        package let attributeCount: Int
        /// How many to-one relationships it has (the slots of to-one values).
        package let toOneCount: Int
        /// How many to-many relationships it has (the slots of to-many values).
        package let toManyCount: Int

        // What a row reader needs of the layout, worked out once here rather
        // than at every fetch, in plain arrays (a reader's loop over a row's
        // columns copies nothing that counts references).
        /// Each stored attribute's column, slot and type, in slot order.
        package let attributeColumns: [Int32]
        package let attributeSlots: [Int32]
        package let attributeTypes: [AttributeType]
        /// Each to-one slot's column, or -1 when the row has none.
        package let toOneColumns: [Int]
        /// Whether the stored attributes are every attribute, in slot order.
        package let everyAttributeInOrder: Bool
        /// Whether some attribute is in Core Data's external storage form.
        package let hasExternal: Bool
        /// Whether some attribute names a value transformer.
        package let hasTransformers: Bool

        package init(entity: Int, root: Int, number: Int64, attributes: [AttributeColumn], toOne: [(column: Int, slot: Int)],
                     initialValues: [PredicateValue], attributeCount: Int, toOneCount: Int, toManyCount: Int) {
            self.entity = entity
            self.root = root
            self.number = number
            self.attributes = attributes
            self.toOne = toOne
            self.initialValues = initialValues
            self.attributeCount = attributeCount
            self.toOneCount = toOneCount
            self.toManyCount = toManyCount
            attributeColumns = attributes.map { Int32(clamping: $0.column) }
            attributeSlots = attributes.map { Int32(clamping: $0.slot) }
            attributeTypes = attributes.map(\.type)
            var toOneColumns = Array(repeating: -1, count: toOneCount)
            for (column, slot) in toOne where slot >= 0 && slot < toOneColumns.count { toOneColumns[slot] = column }
            self.toOneColumns = toOneColumns
            everyAttributeInOrder = attributes.count == attributeCount
                && attributes.enumerated().allSatisfy { $0.offset == $0.element.slot }
            hasExternal = attributes.contains(where: \.external)
            hasTransformers = attributes.contains { $0.transformer != nil }
        }
    }

    /// The column holding the row's entity number; nil when every row is
    /// the first member's (the entity has no subentities).
    package let entityColumn: Int?
    /// The entity and each of its subentities.
    package let members: [Member]

    /// The member whose entity number is `number`.
    ///
    /// - Parameter number: The entity number read from a row.
    /// - Returns: The member, or nil when none has that number.
    package func member(number: Int64) -> Member? {
        members.first { $0.number == number }
    }
}

extension SQLSchema {
    /// The columns of a row, in the order every row statement reads them:
    /// primary key, version, the entity number when the entity has
    /// subentities, then each stored attribute in slot order
    /// (`storedAttributes`), each to-one key in slot order, then the
    /// subentities' own (`rowLayout` says which is which).
    func rowColumns(_ entity: Entity, alias: String) -> [SQLExpression] {
        if alias == "t0", let columns = rowColumnsOfFirstTable(entity) { return columns }
        return rowColumnNames(entity).map { .column(alias, $0.name, nullable: $0.nullable) }
    }

    /// The rows of `entity` with these keys, in key order.
    ///
    /// - Parameters:
    ///   - entity: The entity; rows of its subentities are included.
    ///   - keys: The rows' primary keys, bound as one array.
    /// - Returns: A SELECT of the rows' columns (`rowColumns`).
    package func selectRows(_ entity: Entity, keys: [Int64]) -> SQLQuery {
        let key = SQLExpression.column("t0", primaryKey(entity), nullable: false)
        let array = dialect.arrayValue(keys.map(SQLValue.integer)) ?? .null
        return render(.select(SQLSelect(rowColumns(entity, alias: "t0"), from: .table(table(entity), alias: "t0"),
                                        where: [.in(key, array: .value(array))] + [entityFilter(entity, alias: "t0")].compactMap { $0 },
                                        orderBy: [SQLOrdering(key)])))
    }

    /// The links of a to-many relationship for the owners with these keys:
    /// rows of (owner, member) ordered by member; with `withRows`, each
    /// member's whole row follows the owner instead (`rowColumns`). Nil for a
    /// to-one relationship.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship.
    ///   - entity: The entity whose objects have it.
    ///   - owners: The owners' primary keys, bound as one array.
    ///   - withRows: Whether each link brings the member's whole row rather
    ///     than its key.
    /// - Returns: The SELECT, or nil for a to-one relationship or one whose
    ///   destination the model does not have.
    package func selectLinks(_ relationship: Relationship, in entity: Entity, owners: [Int64], withRows: Bool) -> SQLQuery? {
        guard let destination = model.entity(named: relationship.destination) else { return nil }
        let owners = SQLExpression.value(dialect.arrayValue(owners.map(SQLValue.integer)) ?? .null)
        let member = "t0"
        let memberKey = SQLExpression.column(member, primaryKey(destination), nullable: false)
        switch storage(of: relationship, in: entity) {
        case .foreignKey:
            return nil
        case .inverseForeignKey(let table, let column):
            let owner = SQLExpression.column(member, column, nullable: true)
            let columns = withRows ? [owner] + rowColumns(destination, alias: member) : [owner, memberKey]
            // An ordered relationship's members in their order, as Core Data keeps it.
            let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
            let order = relationship.isOrdered ? inverse.flatMap { orderKey($0, of: destination) } : nil
            return render(.select(SQLSelect(columns, from: .table(table, alias: member),
                                            where: [.in(owner, array: owners)] + [entityFilter(destination, alias: member)].compactMap { $0 },
                                            orderBy: order.map { [SQLOrdering(.column(member, $0, nullable: true))] } ?? []
                                                + [SQLOrdering(memberKey)])))
        case .joinTable(let table, let sourceColumn, let targetColumn):
            let owner = SQLExpression.column("j", sourceColumn, nullable: false)
            let target = SQLExpression.column("j", targetColumn, nullable: false)
            let order = relationship.isOrdered
                ? [SQLOrdering(.column("j", orderKey(ofJoinColumn: targetColumn, in: table), nullable: true))] : []
            if withRows {
                return render(.select(SQLSelect(
                    [owner] + rowColumns(destination, alias: member), from: .table(table, alias: "j"),
                    joins: [SQLJoin(.inner, .table(self.table(destination), alias: member), on: .compare(.equal, memberKey, target))],
                    where: [.in(owner, array: owners)], orderBy: order + [SQLOrdering(memberKey)])))
            }
            return render(.select(SQLSelect([owner, target], from: .table(table, alias: "j"), where: [.in(owner, array: owners)],
                                            orderBy: order + [SQLOrdering(target)])))
        }
    }

    /// The largest primary key of an entity's table (0 when it is empty).
    ///
    /// - Parameter entity: An entity stored in the table.
    /// - Returns: A SELECT of one row and one column.
    package func selectLargestKey(_ entity: Entity) -> SQLQuery {
        render(.select(SQLSelect([.coalesce(.aggregate(.maximum, .column("t0", primaryKey(entity), nullable: false)), .literal(0))],
                                 from: .table(table(entity), alias: "t0"))))
    }

    /// One row as the store has it now, by primary key (slot 0): the row's
    /// columns (`rowColumns`).
    ///
    /// - Parameter entity: The entity of the row.
    /// - Returns: A SELECT whose one slot is the primary key.
    package func selectRow(_ entity: Entity) -> SQLQuery {
        render(.select(SQLSelect(rowColumns(entity, alias: "t0"), from: .table(table(entity), alias: "t0"),
                                 where: [.compare(.equal, .column("t0", primaryKey(entity), nullable: false), .slot(0))])))
    }

    /// The entity number of the row whose primary key is in slot 0, in an
    /// entity's table.
    ///
    /// - Parameter entity: An entity stored in the table.
    /// - Returns: A SELECT whose one slot is the primary key.
    package func selectEntityNumber(_ entity: Entity) -> SQLQuery {
        render(.select(SQLSelect([.column("t0", entityColumn(entity), nullable: false)], from: .table(table(entity), alias: "t0"),
                                 where: [.compare(.equal, .column("t0", primaryKey(entity), nullable: false), .slot(0))])))
    }

    // MARK: Writing rows

    /// The statement that inserts a row of `entity`, and the values for it.
    ///
    /// - Parameter entity: The entity of the rows inserted.
    /// - Returns: The INSERT, whose
    ///   `RowInsert.bindings(key:version:values:toOne:targetEntity:into:)` gives
    ///   the values of a row.
    package func insertRow(_ entity: Entity) -> RowInsert {
        RowInsert(schema: self, entity: entity)
    }

    /// The statement that updates these attributes and to-one keys of a row
    /// of `entity` if its version is still the expected one, incrementing
    /// the version.
    ///
    /// - Parameters:
    ///   - entity: The entity of the rows updated.
    ///   - attributes: The attributes written; those without a column are
    ///     left out.
    ///   - toOne: The to-one relationships written; transient ones are left
    ///     out.
    /// - Returns: The UPDATE, whose
    ///   `RowUpdate.bindings(values:toOne:key:expectedVersion:targetEntity:)`
    ///   gives the values for a row.
    package func updateRow(_ entity: Entity, attributes: [Attribute], toOne: [Relationship]) -> RowUpdate {
        RowUpdate(schema: self, entity: entity, attributes: attributes, toOne: toOne)
    }

    /// Deletes a row by primary key (slot 0) and, with `checkingVersion`,
    /// only at the version in slot 1.
    ///
    /// - Parameters:
    ///   - entity: The entity of the row.
    ///   - checkingVersion: Whether the row is deleted only at the version in
    ///     slot 1.
    /// - Returns: The DELETE.
    package func deleteRow(_ entity: Entity, checkingVersion: Bool) -> SQLQuery {
        var conditions = [SQLExpression.compare(.equal, .column("", primaryKey(entity), nullable: false), .slot(0))]
        if checkingVersion { conditions.append(.compare(.equal, .column("", version(entity), nullable: false), .slot(1))) }
        return render(.delete(SQLDelete(table: table(entity), conditions: conditions)))
    }

    /// Adds a link (source key in slot 0, target in slot 1) to the join table
    /// of a relationship; nil when it has none.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: An INSERT that skips a link already there, or nil when the
    ///   relationship has no join table.
    package func insertLink(_ relationship: Relationship, in entity: Entity) -> SQLQuery? {
        guard case .joinTable(let table, let source, let target) = storage(of: relationship, in: entity) else { return nil }
        return render(.insert(SQLInsert(table: table, columns: [source, target], values: [.slot(0), .slot(1)],
                                        ignoringDuplicates: true)))
    }

    /// Removes a link (source key in slot 0, target in slot 1) from the join
    /// table of a relationship; nil when it has none.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The DELETE, or nil when the relationship has no join table.
    package func deleteLink(_ relationship: Relationship, in entity: Entity) -> SQLQuery? {
        guard case .joinTable(let table, let source, let target) = storage(of: relationship, in: entity) else { return nil }
        return render(.delete(SQLDelete(table: table, conditions: [
            .compare(.equal, SQLExpression.column("", source, nullable: false), .slot(0)),
            .compare(.equal, SQLExpression.column("", target, nullable: false), .slot(1)),
        ])))
    }

    /// Removes every link of the object in slot 0 from the join table of a
    /// relationship; nil when it has none.
    ///
    /// - Parameters:
    ///   - relationship: The to-many relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The DELETE, or nil when the relationship has no join table.
    package func deleteLinks(_ relationship: Relationship, in entity: Entity) -> SQLQuery? {
        guard case .joinTable(let table, let source, _) = storage(of: relationship, in: entity) else { return nil }
        return render(.delete(SQLDelete(table: table, conditions: [
            .compare(.equal, SQLExpression.column("", source, nullable: false), .slot(0)),
        ])))
    }

    /// The columns of to-one relationships: each key, and after it the
    /// column of the destination row's entity number when it has one.
    static func toOneColumns(_ relationships: [Relationship], of entity: Entity, in schema: SQLSchema) -> [String] {
        relationships.flatMap { [schema.foreignKey($0, of: entity)] + [schema.entityKey($0, of: entity)].compactMap { $0 } }
    }

    /// Appends the values of to-one columns (`toOneColumns`).
    static func appendToOneValues(_ slots: [(slot: Int, typed: Bool)], _ keys: [Int64?],
                                  _ targetEntity: (Int, Int64) -> Int64?, to values: inout [SQLValue]) {
        for (slot, typed) in slots {
            values.append(keys[slot].map(SQLValue.integer) ?? .null)
            if typed { values.append(keys[slot].flatMap { targetEntity(slot, $0) }.map(SQLValue.integer) ?? .null) }
        }
    }

    /// The order key Core Data gives the member at `index` of an ordered
    /// relationship: 2048, then 1024 apart.
    ///
    /// - Parameter index: The member's position in the order, from 0.
    /// - Returns: 2048 plus 1024 times `index`.
    package static func orderKeyValue(at index: Int) -> Int64 {
        2048 &+ 1024 &* Int64(clamping: index)
    }

    /// Sets the order key (slot 0) of one member (slot 1) of an ordered
    /// to-many relationship of one owner (slot 2): in the member's row, or
    /// in the join table's link. Nil when the relationship is not ordered.
    ///
    /// - Parameters:
    ///   - relationship: The ordered to-many relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The UPDATE, or nil when the relationship is not an ordered
    ///   to-many relationship (or has no order-key column).
    package func updateOrderKey(_ relationship: Relationship, in entity: Entity) -> SQLQuery? {
        guard relationship.isToMany, relationship.isOrdered, let destination = model.entity(named: relationship.destination) else {
            return nil
        }
        switch storage(of: relationship, in: entity) {
        case .inverseForeignKey(let table, let column):
            guard let inverse = relationship.inverse.flatMap({ destination.relationship(named: $0) }),
                  let order = orderKey(inverse, of: destination) else { return nil }
            return render(.update(SQLUpdate(table: table, assignments: [(column: order, value: .slot(0))], conditions: [
                .compare(.equal, .column("", primaryKey(destination), nullable: false), .slot(1)),
                .compare(.equal, .column("", column, nullable: true), .slot(2)),
            ])))
        case .joinTable(let table, let source, let target):
            let order = orderKey(ofJoinColumn: target, in: table)
            return render(.update(SQLUpdate(table: table, assignments: [(column: order, value: .slot(0))],
                                            conditions: [
                .compare(.equal, .column("", target, nullable: false), .slot(1)),
                .compare(.equal, .column("", source, nullable: false), .slot(2)),
            ])))
        case .foreignKey:
            return nil
        }
    }

    /// The column value of an attribute with external binary storage, as
    /// Core Data writes one it keeps in the row: the byte 1, then the data.
    static func externalStorageForm(_ value: PredicateValue) -> SQLValue {
        guard case .data(let data) = value else { return SQLLowering.sqlValue(value) }
        var bytes = Data([1])
        bytes.append(data)
        return .blob(bytes)
    }

    /// The value of an attribute with external binary storage, from its
    /// column: after the byte 1, the data itself; after the byte 2, the name
    /// of the file in `folder` (`externalData`) that holds it. Nil when the
    /// column holds neither, or the file cannot be read.
    ///
    /// - Parameters:
    ///   - column: The column's bytes.
    ///   - folder: The folder of the store's external data
    ///     (`externalData(ofStoreAt:)`), or nil when there is none.
    /// - Returns: The data; nil when the column holds neither form, or when
    ///   it names a file and `folder` is nil, the name is not a plain file
    ///   name, or the file cannot be read.
    package static func externalStorageValue(_ column: Data, in folder: URL?) -> Data? {
        guard let marker = column.first else { return nil }
        let rest = column.dropFirst()
        switch marker {
        case 1:
            return Data(rest)
        case 2:
            let name = String(decoding: rest.prefix { $0 != 0 }, as: UTF8.self)
            guard let folder, !name.isEmpty, !name.contains("/"), name != "..", name != "." else { return nil }
            return FileManager.default.contents(atPath: folder.appendingPathComponent(name).path)
        default:
            return nil
        }
    }

    /// The folder of the files Core Data keeps external binary data in, for
    /// the store at `url`: `.<name>_SUPPORT/_EXTERNAL_DATA` beside it.
    ///
    /// - Parameter url: The store's file.
    /// - Returns: The folder's URL; the folder may not exist.
    package static func externalData(ofStoreAt url: URL) -> URL {
        let name = url.deletingPathExtension().lastPathComponent
        return url.deletingLastPathComponent().appendingPathComponent(".\(name)_SUPPORT").appendingPathComponent("_EXTERNAL_DATA")
    }

    /// Appends the values of the companion columns of a canonical attribute holding `value`.
    static func appendCompanionValues(of value: PredicateValue, to values: inout [SQLValue]) {
        for flags in companionFlags {
            guard case .string(let text) = value else {
                values.append(.null)
                continue
            }
            values.append(.text(StringFolding.fold(text, ComparisonOptions(foldingFlags: flags))))
        }
    }
}

/// The INSERT of a row of one entity: the statement, and its values for a
/// row. A class: a save's rows share one, read through a reference.
package final class RowInsert: Sendable {
    /// The statement, its parameters positional.
    package let query: SQLQuery
    /// The slot of each attribute, in column order, whether it has companion
    /// columns, and whether it is in Core Data's external storage form.
    let attributes: [(slot: Int, canonical: Bool, external: Bool)]
    /// The slot of each to-one relationship, in column order, and whether
    /// the destination row's entity number has a column too.
    let toOneSlots: [(slot: Int, typed: Bool)]

    /// The entity's number, for its rows' `Z_ENT`.
    let entityNumber: Int64

    init(schema: SQLSchema, entity: Entity) {
        var columns = [schema.primaryKey(entity), schema.entityColumn(entity), schema.version(entity)]
        let stored = schema.storedAttributes(entity)
        for attribute in stored {
            columns += [schema.column(attribute, of: entity)] + schema.companionColumns(attribute, of: entity)
        }
        let toOne = schema.toOneRelationships(entity)
        columns += SQLSchema.toOneColumns(toOne, of: entity, in: schema)
        attributes = stored.map { ($0.slot, $0.isCanonical, $0.allowsExternalStorage) }
        toOneSlots = toOne.map { ($0.slot, schema.entityKey($0, of: entity) != nil) }
        entityNumber = Int64(schema.entityNumber(entity))
        query = schema.render(.insert(SQLInsert(table: schema.table(entity), columns: columns,
                                                values: columns.indices.map(SQLExpression.slot), ignoringDuplicates: false)))
    }

    /// The values for a row: its key, entity number, version, attribute
    /// values by slot, to-one keys by slot, and the entity numbers of the
    /// rows they point at (by slot; asked only for destinations with subentities).
    ///
    /// - Parameters:
    ///   - key: The row's primary key.
    ///   - version: The row's version.
    ///   - values: The object's attribute values, by slot.
    ///   - toOne: The object's to-one keys, by slot (nil where it points at
    ///     nothing).
    ///   - targetEntity: Given a to-one relationship's slot and the key it
    ///     points at, the entity number of that row; asked only for
    ///     destinations with subentities.
    ///   - result: Emptied, then given the statement's bindings, in order,
    ///     companion columns' folded values and external storage forms
    ///     included (one array a save's rows reuse).
    package func bindings(key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?],
                         targetEntity: (_ slot: Int, _ key: Int64) -> Int64?, into result: inout [SQLValue]) {
        result.removeAll(keepingCapacity: true)
        result.reserveCapacity(query.bindings.count)
        result.append(.integer(key))
        result.append(.integer(entityNumber))
        result.append(.integer(version))
        for (slot, canonical, external) in attributes {
            result.append(external ? SQLSchema.externalStorageForm(values[slot]) : SQLLowering.sqlValue(values[slot]))
            if canonical { SQLSchema.appendCompanionValues(of: values[slot], to: &result) }
        }
        SQLSchema.appendToOneValues(toOneSlots, toOne, targetEntity, to: &result)
    }

    /// The values for a row, in a new array: as
    /// `bindings(key:version:values:toOne:targetEntity:into:)`.
    package func bindings(key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?],
                         targetEntity: (_ slot: Int, _ key: Int64) -> Int64?) -> [SQLValue] {
        var result: [SQLValue] = []
        bindings(key: key, version: version, values: values, toOne: toOne, targetEntity: targetEntity, into: &result)
        return result
    }
}

/// The UPDATE of some columns of a row of one entity, checked against the
/// version the writer read.
package final class RowUpdate: Sendable {
    /// The statement, its parameters positional.
    package let query: SQLQuery
    let attributes: [(slot: Int, canonical: Bool, external: Bool)]
    let toOneSlots: [(slot: Int, typed: Bool)]

    init(schema: SQLSchema, entity: Entity, attributes: [Attribute], toOne: [Relationship]) {
        let attributes = attributes.filter(\.isStored)
        let toOne = toOne.filter { !$0.isTransient }
        self.attributes = attributes.map { ($0.slot, $0.isCanonical, $0.allowsExternalStorage) }
        self.toOneSlots = toOne.map { ($0.slot, schema.entityKey($0, of: entity) != nil) }
        var columns: [String] = []
        for attribute in attributes {
            columns += [schema.column(attribute, of: entity)] + schema.companionColumns(attribute, of: entity)
        }
        columns += SQLSchema.toOneColumns(toOne, of: entity, in: schema)
        let version = SQLExpression.column("", schema.version(entity), nullable: false)
        let assignments = columns.enumerated().map { (column: $1, value: SQLExpression.slot($0)) }
            + [(column: schema.version(entity), value: SQLExpression.arithmetic(.add, version, .literal(1)))]
        query = schema.render(.update(SQLUpdate(table: schema.table(entity), assignments: assignments, conditions: [
            .compare(.equal, .column("", schema.primaryKey(entity), nullable: false), .slot(columns.count)),
            .compare(.equal, version, .slot(columns.count + 1)),
        ])))
    }

    /// The values for a row: the new attribute values and to-one keys (by
    /// slot), the entity numbers of the rows those point at (as for
    /// `RowInsert`), the row's key and the version it must still have.
    ///
    /// - Parameters:
    ///   - values: The object's attribute values, by slot.
    ///   - keys: The object's to-one keys, by slot (nil where it points at
    ///     nothing).
    ///   - key: The row's primary key.
    ///   - expectedVersion: The version the row must still have.
    ///   - targetEntity: Given a to-one relationship's slot and the key it
    ///     points at, the entity number of that row; asked only for
    ///     destinations with subentities.
    /// - Returns: The statement's bindings, in order, companion columns'
    ///   folded values and external storage forms included.
    package func bindings(values: [PredicateValue], toOne keys: [Int64?], key: Int64, expectedVersion: Int64,
                         targetEntity: (_ slot: Int, _ key: Int64) -> Int64?) -> [SQLValue] {
        var result: [SQLValue] = []
        result.reserveCapacity(query.bindings.count)
        for (slot, canonical, external) in attributes {
            result.append(external ? SQLSchema.externalStorageForm(values[slot]) : SQLLowering.sqlValue(values[slot]))
            if canonical { SQLSchema.appendCompanionValues(of: values[slot], to: &result) }
        }
        SQLSchema.appendToOneValues(toOneSlots, keys, targetEntity, to: &result)
        result.append(.integer(key))
        result.append(.integer(expectedVersion))
        return result
    }
}
