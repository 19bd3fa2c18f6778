// Stage 5 (SQL lowering): how a model is laid out in SQLite tables.
//
// A table per entity, named after it, with an integer primary key `Z_PK`, a
// version `Z_OPT` (incremented by every save of the row), a column per
// attribute named after it, and a column per to-one relationship holding the
// destination's primary key. A to-many relationship whose inverse is to-one is
// read through that inverse's column; one whose inverse is also to-many (or
// that has no inverse) lives in a join table `Z_<Entity>_<relationship>` with
// columns `Z_SOURCE` and `Z_TARGET`, shared by both directions. Identifiers
// are quoted in one place: `SQLSchema.quote`.

import SiftModel

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

/// The SQLite layout of a model.
public struct SQLSchema: Sendable {
    /// The primary key column of every table.
    public static let primaryKey = "Z_PK"
    /// The version column of every table.
    public static let version = "Z_OPT"

    public let model: DataModel

    public init(model: DataModel) {
        self.model = model
    }

    /// An identifier quoted for SQLite: the one place identifiers are quoted.
    public static func quote(_ identifier: String) -> String {
        guard identifier.utf8.contains(UInt8(ascii: "\"")) else { return "\"" + identifier + "\"" }
        return "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// The table of an entity.
    public func table(_ entity: Entity) -> String { entity.name }

    /// The column of an attribute.
    public func column(_ attribute: Attribute) -> String { attribute.name }

    /// The folding flags companion columns exist for: `[c]` (1) and `[cd]` (3).
    public static let companionFlags = [1, 3]

    /// The companion column holding an attribute folded with `flags`, named
    /// `Z_FOLD<flags>_<attribute>`.
    public static func companionColumn(_ attribute: String, flags: Int) -> String {
        "Z_FOLD\(flags)_\(attribute)"
    }

    /// Where a relationship of `entity` is stored.
    public func storage(of relationship: Relationship, in entity: Entity) -> RelationshipStorage {
        if !relationship.isToMany { return .foreignKey(column: relationship.name) }
        let destination = model.entity(named: relationship.destination)!
        if let inverseName = relationship.inverse, let inverse = destination.relationship(named: inverseName) {
            if !inverse.isToMany { return .inverseForeignKey(table: table(destination), column: inverse.name) }
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

    /// The SQLite type of an attribute's column.
    public static func columnType(_ type: AttributeType) -> String {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: "INTEGER"
        case .decimal, .double, .float, .date: "REAL"
        case .string, .uuid: "TEXT"
        case .binary: "BLOB"
        }
    }

    /// The statements that create the store's tables and indexes.
    public var createStatements: [String] {
        var statements: [String] = []
        var joinTables = Set<String>()
        let q = Self.quote
        for entity in model.entities {
            var columns = ["\(q(Self.primaryKey)) INTEGER PRIMARY KEY", "\(q(Self.version)) INTEGER NOT NULL DEFAULT 1"]
            for attribute in entity.attributes {
                columns.append("\(q(column(attribute))) \(Self.columnType(attribute.type))"
                    + (attribute.isOptional ? "" : " NOT NULL"))
            }
            for relationship in entity.relationships where !relationship.isToMany {
                columns.append("\(q(relationship.name)) INTEGER")
            }
            for attribute in entity.attributes where attribute.isCanonical {
                for flags in Self.companionFlags {
                    columns.append("\(q(Self.companionColumn(attribute.name, flags: flags))) TEXT")
                }
            }
            statements.append("CREATE TABLE \(q(table(entity))) (\(columns.joined(separator: ", ")))")
            for relationship in entity.relationships where !relationship.isToMany {
                statements.append("CREATE INDEX \(q("Z_\(entity.name)_\(relationship.name)_INDEX")) "
                    + "ON \(q(table(entity))) (\(q(relationship.name)))")
            }
            for attribute in entity.attributes where attribute.isCanonical {
                for flags in Self.companionFlags {
                    let column = Self.companionColumn(attribute.name, flags: flags)
                    statements.append("CREATE INDEX \(q("Z_\(entity.name)_\(column)_INDEX")) ON \(q(table(entity))) (\(q(column)))")
                }
            }
            for attribute in entity.attributes where attribute.isIndexed {
                statements.append("CREATE INDEX \(q("Z_\(entity.name)_\(attribute.name)_INDEX")) "
                    + "ON \(q(table(entity))) (\(q(column(attribute))))")
            }
            for relationship in entity.relationships {
                guard case .joinTable(let name, _, _) = storage(of: relationship, in: entity),
                      joinTables.insert(name).inserted else { continue }
                statements.append("CREATE TABLE \(q(name)) (\(q("Z_SOURCE")) INTEGER NOT NULL, "
                    + "\(q("Z_TARGET")) INTEGER NOT NULL, PRIMARY KEY (\(q("Z_SOURCE")), \(q("Z_TARGET")))) WITHOUT ROWID")
                statements.append("CREATE INDEX \(q(name + "_TARGET_INDEX")) ON \(q(name)) (\(q("Z_TARGET")), \(q("Z_SOURCE")))")
            }
        }
        return statements
    }
}
