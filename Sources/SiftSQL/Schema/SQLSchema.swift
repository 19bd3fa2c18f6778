// Stage 5 (SQL lowering): the schema mapping — where each part of a model
// lives in tables. Every table and column name the store uses comes from
// here; swapping the mapping swaps the layout.
//
// Sift's layout: a table per entity, named after it, with an integer primary
// key `Z_PK`, a version `Z_OPT` (incremented by every save of the row), a
// column per attribute named after it, and a column per to-one relationship
// holding the destination's primary key. A to-many relationship whose
// inverse is to-one is read through that inverse's column; one whose inverse
// is also to-many (or that has no inverse) lives in a join table
// `Z_<Entity>_<relationship>` with columns `Z_SOURCE` and `Z_TARGET`, shared
// by both directions. Attributes marked canonical have folded companion
// columns `Z_FOLD1_<name>` (`[c]`) and `Z_FOLD3_<name>` (`[cd]`). The model
// itself is kept in `Z_METADATA` (`Z_KEY`, `Z_VALUE`).

import SiftModel
import SiftTree

/// Where a relationship's links are stored.
public enum RelationshipStorage: Hashable, Sendable {
    /// A to-one relationship: a column of the entity's own table.
    case foreignKey(column: String)
    /// A to-many relationship read through its to-one inverse: the
    /// destination table's column that points back.
    case inverseForeignKey(table: String, column: String)
    /// A join table: `sourceColumn` holds this side's key, `targetColumn`
    /// the destination's.
    case joinTable(table: String, sourceColumn: String, targetColumn: String)
}

/// How a model is laid out in tables, and the dialect its SQL is written in.
public struct SQLSchema: Sendable {
    /// The model laid out.
    public let model: DataModel
    /// The dialect its statements are written in.
    public let dialect: any SQLDialect

    /// Each entity's row columns (`rowColumns`), by entity index: worked out once.
    private var rows: [[(name: String, nullable: Bool)]] = []
    /// The same columns read from the alias a fetch's table always has, `t0`.
    private var rowsOfFirstTable: [[SQLExpression]] = []

    public init(model: DataModel, dialect: any SQLDialect = .sqlite) {
        self.model = model
        self.dialect = dialect
        rows = model.entities.map { entity in
            [(primaryKey(entity), false), (version(entity), false)]
                + entity.attributes.map { (column($0), $0.isOptional) }
                + toOneRelationships(entity).map { (foreignKey($0), true) }
        }
        rowsOfFirstTable = rows.map { $0.map { SQLExpression.column("t0", $0.name, nullable: $0.nullable) } }
    }

    /// The names of a row's columns and whether each may be NULL, in the
    /// order row statements read them.
    func rowColumnNames(_ entity: Entity) -> [(name: String, nullable: Bool)] {
        rows.indices.contains(entity.index) ? rows[entity.index] : []
    }

    /// `rowColumnNames` as columns of the alias `t0`.
    func rowColumnsOfFirstTable(_ entity: Entity) -> [SQLExpression]? {
        rowsOfFirstTable.indices.contains(entity.index) ? rowsOfFirstTable[entity.index] : nil
    }

    /// The table of an entity.
    public func table(_ entity: Entity) -> String { entity.name }

    /// The primary key column of an entity's table.
    public func primaryKey(_ entity: Entity) -> String { "Z_PK" }

    /// The version column of an entity's table.
    public func version(_ entity: Entity) -> String { "Z_OPT" }

    /// The column of an attribute.
    public func column(_ attribute: Attribute) -> String { attribute.name }

    /// The column of a to-one relationship: the destination's primary key.
    public func foreignKey(_ relationship: Relationship) -> String { relationship.name }

    /// The column of an attribute a bound tree names.
    public func column(_ attribute: AttributeReference) -> String {
        model.entity(named: attribute.entity)?.attribute(named: attribute.name).map(column) ?? attribute.name
    }

    /// The column of a to-one relationship a bound tree names.
    public func foreignKey(_ relationship: RelationshipReference) -> String {
        model.entity(named: relationship.entity)?.relationship(named: relationship.name).map(foreignKey) ?? relationship.name
    }

    /// The companion column of an attribute a bound tree names.
    public func companionColumn(_ attribute: AttributeReference, flags: Int) -> String {
        model.entity(named: attribute.entity)?.attribute(named: attribute.name).map { companionColumn($0, flags: flags) }
            ?? "Z_FOLD\(flags)_\(attribute.name)"
    }

    /// The folding flags companion columns exist for: `[c]` (1) and `[cd]` (3).
    public static let companionFlags = [1, 3]

    /// The companion column holding an attribute folded with `flags`.
    public func companionColumn(_ attribute: Attribute, flags: Int) -> String {
        "Z_FOLD\(flags)_\(attribute.name)"
    }

    /// The companion columns of an attribute (none unless it is canonical).
    public func companionColumns(_ attribute: Attribute) -> [String] {
        attribute.isCanonical ? Self.companionFlags.map { companionColumn(attribute, flags: $0) } : []
    }

    /// The table holding a store's metadata, and its key and value columns:
    /// where it lives does not depend on the model, so a store's model can be
    /// read before the store is opened with it.
    public static let metadataTable = (name: "Z_METADATA", key: "Z_KEY", value: "Z_VALUE")

    /// Where a relationship of `entity` is stored.
    public func storage(of relationship: Relationship, in entity: Entity) -> RelationshipStorage {
        if !relationship.isToMany { return .foreignKey(column: foreignKey(relationship)) }
        guard let destination = model.entity(named: relationship.destination) else {
            return .joinTable(table: "Z_\(entity.name)_\(relationship.name)", sourceColumn: "Z_SOURCE", targetColumn: "Z_TARGET")
        }
        if let inverseName = relationship.inverse, let inverse = destination.relationship(named: inverseName) {
            if !inverse.isToMany { return .inverseForeignKey(table: table(destination), column: foreignKey(inverse)) }
            // Many-to-many: one table for both directions, named after the side that sorts first.
            let mine = (entity.name, relationship.name)
            let theirs = (destination.name, inverse.name)
            if mine <= theirs {
                return .joinTable(table: "Z_\(mine.0)_\(mine.1)", sourceColumn: "Z_SOURCE", targetColumn: "Z_TARGET")
            }
            return .joinTable(table: "Z_\(theirs.0)_\(theirs.1)", sourceColumn: "Z_TARGET", targetColumn: "Z_SOURCE")
        }
        return .joinTable(table: "Z_\(entity.name)_\(relationship.name)", sourceColumn: "Z_SOURCE", targetColumn: "Z_TARGET")
    }

    /// Whether a join table is written from this side (each link once).
    public func writesLinks(of relationship: Relationship, in entity: Entity) -> Bool {
        if case .joinTable(_, let source, _) = storage(of: relationship, in: entity) { return source == "Z_SOURCE" }
        return false
    }

    /// The to-one relationships of an entity in slot order: the order their
    /// columns come in a row.
    public func toOneRelationships(_ entity: Entity) -> [Relationship] {
        entity.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }
    }

    // MARK: Tables

    /// The statements that create the store's tables, indexes and metadata table.
    public var createStatements: [SQLQuery] {
        var statements: [SQLStatement] = []
        var joinTables = Set<String>()
        for entity in model.entities {
            let table = table(entity)
            var columns = [SQLColumnDefinition(primaryKey(entity), .integer, primaryKey: true),
                           SQLColumnDefinition(version(entity), .integer, nullable: false, default: .integer(1))]
            for attribute in entity.attributes {
                columns.append(SQLColumnDefinition(column(attribute), SQLColumnType(attribute.type), nullable: attribute.isOptional))
            }
            for relationship in toOneRelationships(entity) {
                columns.append(SQLColumnDefinition(foreignKey(relationship), .integer))
            }
            for attribute in entity.attributes {
                for companion in companionColumns(attribute) { columns.append(SQLColumnDefinition(companion, .text)) }
            }
            statements.append(.createTable(SQLCreateTable(name: table, columns: columns, compositeKey: [])))
            func index(_ column: String) {
                statements.append(.createIndex(SQLCreateIndex(name: "Z_\(entity.name)_\(column)_INDEX", table: table, columns: [column])))
            }
            for relationship in toOneRelationships(entity) { index(foreignKey(relationship)) }
            for attribute in entity.attributes { companionColumns(attribute).forEach(index) }
            for attribute in entity.attributes where attribute.isIndexed { index(column(attribute)) }
            for relationship in entity.relationships {
                guard case .joinTable(let name, _, _) = storage(of: relationship, in: entity),
                      joinTables.insert(name).inserted else { continue }
                statements.append(.createTable(SQLCreateTable(
                    name: name, columns: [SQLColumnDefinition("Z_SOURCE", .integer, nullable: false),
                                          SQLColumnDefinition("Z_TARGET", .integer, nullable: false)],
                    compositeKey: ["Z_SOURCE", "Z_TARGET"])))
                statements.append(.createIndex(SQLCreateIndex(name: name + "_TARGET_INDEX", table: name,
                                                              columns: ["Z_TARGET", "Z_SOURCE"])))
            }
        }
        let metadata = Self.metadataTable
        statements.append(.createTable(SQLCreateTable(
            name: metadata.name, columns: [SQLColumnDefinition(metadata.key, .text, primaryKey: true),
                                           SQLColumnDefinition(metadata.value, .text, nullable: false)],
            compositeKey: [])))
        return statements.map(render)
    }

    /// Renders a statement in the schema's dialect.
    public func render(_ statement: SQLStatement) -> SQLQuery {
        SQLRenderer.render(statement, in: dialect)
    }

    // MARK: Metadata

    /// Stores one metadata entry.
    public func insertMetadata(key: String, value: String) -> SQLQuery {
        let metadata = Self.metadataTable
        return render(.insert(SQLInsert(table: metadata.name, columns: [metadata.key, metadata.value],
                                        values: [.value(.text(key)), .value(.text(value))], ignoringDuplicates: false)))
    }

    /// Every metadata entry: key, then value.
    public static func selectMetadata(in dialect: any SQLDialect) -> SQLQuery {
        let metadata = metadataTable
        return SQLRenderer.render(.select(SQLSelect([.column("m", metadata.key, nullable: false), .column("m", metadata.value, nullable: false)],
                                        from: .table(metadata.name, alias: "m"))), in: dialect)
    }
}
