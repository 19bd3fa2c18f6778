// Stage 6b (SQL lowering): the schema mapping — where each part of a model
// lives in tables. Every table and column name the store uses comes from
// here; swapping the mapping swaps the layout.
//
// Core Data's layout, the only one: a table per root entity, `Z` and the
// upper-cased name, shared by its subentities, with an integer primary key
// `Z_PK`, the entity's number `Z_ENT` (Core Data's numbering: entities in a
// pre-order walk, roots and children sorted case-insensitively) and a version
// `Z_OPT` (incremented by every save of the row); a column per stored
// attribute, `Z` and the upper-cased name (a number added when two
// properties of one table would share it); a column per to-one relationship
// holding the destination's primary key, and, when the destination has
// subentities, `Z<n>_<NAME>` (n the destination's number) holding the
// entity number of the row it points at. A to-many relationship whose
// inverse is to-one is read through that inverse's column; one whose inverse
// is also to-many (or that has none) lives in a join table (derived for a
// new store; in a store that exists, named as the store names it:
// `JoinTableNames`, `matchingJoinTables(_:)`). `Z_PRIMARYKEY`
// lists the entities and the largest key handed out per root (`Z_MAX`);
// `Z_METADATA` holds the metadata property list, `Z_MODELCACHE` the compiled
// model. Sift's extras, which Core
// Data ignores: folded companion columns `Z_FOLD1_<column>` (`[c]`) and
// `Z_FOLD3_<column>` (`[cd]`) for attributes marked canonical.

import Foundation
import SiftModel
import SiftTree

/// The databases whose SQL Sift writes.
public enum SQLDatabase: String, Hashable, Sendable, CaseIterable {
    /// SQLite 3 (`?N` parameters, Sift's functions registered with it).
    case sqlite
    /// PostgreSQL (`$N` parameters, `IS [NOT] DISTINCT FROM`, arrays).
    case postgreSQL

    /// How the database writes the `number`-th parameter (`?1`, `$1`).
    ///
    /// - Parameter number: The parameter's number, from 1.
    /// - Returns: Its placeholder in the database's SQL.
    public func placeholder(_ number: Int) -> String {
        switch self {
        case .sqlite: "?\(number)"
        case .postgreSQL: "$\(number)"
        }
    }
}

/// Where a relationship's links are stored.
public enum RelationshipStorage: Hashable, Sendable {
    /// A to-one relationship: a column of the entity's own table.
    ///
    /// - Parameter column: The column holding the primary key of the row the
    ///   relationship points at.
    case foreignKey(column: String)
    /// A to-many relationship read through its to-one inverse: the
    /// destination table's column that points back.
    ///
    /// - Parameters:
    ///   - table: The destination's table.
    ///   - column: Its column (the inverse's foreign key) holding the key of
    ///     the row that owns the link.
    case inverseForeignKey(table: String, column: String)
    /// A join table: `sourceColumn` holds this side's key, `targetColumn`
    /// the destination's.
    ///
    /// - Parameters:
    ///   - table: The join table's name.
    ///   - sourceColumn: The column holding this side's keys.
    ///   - targetColumn: The column holding the destination's keys.
    case joinTable(table: String, sourceColumn: String, targetColumn: String)
}

/// How a model is laid out in tables, and the dialect its SQL is written in.
///
/// ```swift
/// let schema = SQLSchema(model: model)   // SQLite's dialect; `dialect: .postgreSQL` for PostgreSQL's
/// guard let employee = model.entity(named: "Employee"),
///       let age = employee.attribute(named: "age"),
///       let tags = employee.relationship(named: "tags") else { return }
/// print(schema.table(employee))                                           // ZEMPLOYEE
/// print(schema.column(age, of: employee))                                 // ZAGE
/// print(schema.storage(of: tags, in: employee))
/// // joinTable(table: "Z_2TAGS", sourceColumn: "Z_2EMPLOYEES", targetColumn: "Z_3TAGS")
/// for statement in schema.createStatements { print(statement.sql) }     // CREATE TABLE "ZDEPARTMENT" (…), …
/// ```
public struct SQLSchema: Sendable {
    /// The database whose SQL the statements are written in.
    public var database: SQLDatabase { dialect is PostgreSQLDialect ? .postgreSQL : .sqlite }

    /// The model laid out.
    public let model: DataModel
    /// The dialect its statements are written in.
    package let dialect: any SQLDialect

    /// Each entity's row columns (`rowColumns`), by entity index: worked out once.
    private var rows: [[(name: String, nullable: Bool)]] = []
    /// How each entity's rows are read from those columns, by entity index.
    private var layouts: [RowLayout] = []
    /// The entity at each entity number.
    private var entitiesByNumber: [Int: Int] = [:]
    /// The column holding the entity number of a to-one relationship's
    /// destination row (`Z<n>_…`), for destinations with subentities; by
    /// entity name, then relationship name.
    private var entityKeys: [String: [String: String]] = [:]
    /// The same columns read from the alias a fetch's table always has, `t0`.
    private var rowsOfFirstTable: [[SQLExpression]] = []
    /// Each entity's number (`Z_ENT`), by name.
    public let entityNumbers: [String: Int]
    /// The column of each stored attribute and to-one relationship, by
    /// entity name, then property name.
    private var columns: [String: [String: String]] = [:]
    /// The order-key column (`Z_FOK_…`) of each to-one relationship whose
    /// inverse is an ordered to-many, by entity name, then relationship name.
    private var orderKeys: [String: [String: String]] = [:]
    /// The join tables of a store that exists, as it names them
    /// (`matchingJoinTables(_:)`); empty for a new store, whose names are derived.
    package internal(set) var joinTableNames = JoinTableNames()

    /// The mapping of `model` for a store on `database`, with Core Data's
    /// entity numbers (or those a store already has, by entity name).
    ///
    /// - Parameters:
    ///   - model: The model laid out.
    ///   - database: The database whose SQL its statements are written in; SQLite by default.
    ///   - entityNumbers: The number of each entity, by name, as a store already has them; nil (the default)
    ///     for Core Data's numbering (`entityNumbers(of:)`).
    public init(model: DataModel, database: SQLDatabase = .sqlite, entityNumbers: [String: Int]? = nil) {
        switch database {
        case .sqlite: self.init(model: model, dialect: SQLiteDialect(), entityNumbers: entityNumbers)
        case .postgreSQL: self.init(model: model, dialect: PostgreSQLDialect(), entityNumbers: entityNumbers)
        }
    }

    /// The mapping of `model` with statements in `dialect`.
    package init(model: DataModel, dialect: any SQLDialect, entityNumbers: [String: Int]? = nil) {
        self.model = model
        self.dialect = dialect
        self.entityNumbers = entityNumbers ?? Self.entityNumbers(of: model)
        // Columns, per root table: ancestors' first, so that subentities share them.
        for root in model.entities where root.superentity == nil {
            // One name generator per table: the first to claim a name gets it, later ones a number after it.
            var used: Set<String> = ["Z_PK", "Z_ENT", "Z_OPT"]
            func unique(_ base: String) -> String {
                var name = base
                var suffix = 1
                while used.contains(name) {
                    name = base + String(suffix)
                    suffix += 1
                }
                used.insert(name)
                return name
            }
            for entity in model.descendants(of: root) {
                var names = entity.superentity.flatMap { columns[$0] } ?? [:]
                func claim(_ property: String, asciiOnly: Bool) {
                    // Core Data upper-cases an attribute's ASCII letters only, a relationship's fully;
                    // a composite's element is named by its own name (`place.city` is ZCITY).
                    let leaf = property.split(separator: ".").last.map(String.init) ?? property
                    names[property] = unique("Z" + (asciiOnly ? Self.asciiUppercased(leaf) : leaf.uppercased()))
                }
                // Core Data's claim order: the entity's own attributes by name, then its own to-one relationships.
                for attribute in entity.declaredAttributes.filter(\.isStored).sorted(by: { $0.name < $1.name }) {
                    claim(attribute.name, asciiOnly: true)
                }
                var keys = entity.superentity.flatMap { entityKeys[$0] } ?? [:]
                for relationship in entity.declaredRelationships where !relationship.isToMany && !relationship.isTransient {
                    claim(relationship.name, asciiOnly: false)
                    // The destination row's entity, when it may be one of several.
                    if let destination = model.entity(named: relationship.destination), !destination.subentities.isEmpty {
                        keys[relationship.name] = unique("Z\(self.entityNumbers[destination.name] ?? 0)_" + relationship.name.uppercased())
                    }
                }
                columns[entity.name] = names
                entityKeys[entity.name] = keys
            }
            // Second pass: the order keys of ordered to-many relationships,
            // in the table of the objects they order, next to the inverse's key.
            for entity in model.descendants(of: root) {
                for relationship in entity.declaredRelationships where !relationship.isToMany && !relationship.isTransient {
                    guard let destination = model.entity(named: relationship.destination),
                          let inverse = relationship.inverse.flatMap({ destination.relationship(named: $0) }),
                          inverse.isToMany, inverse.isOrdered else { continue }
                    let name = unique("Z_FOK_" + relationship.name.uppercased())
                    for member in model.descendants(of: entity) { orderKeys[member.name, default: [:]][relationship.name] = name }
                }
            }
        }
        for (name, number) in self.entityNumbers {
            if let entity = model.entity(named: name) { entitiesByNumber[number] = entity.index }
        }
        for entity in model.entities {
            let (names, layout) = Self.rowLayout(of: entity, in: self)
            rows.append(names)
            layouts.append(layout)
        }
        rowsOfFirstTable = rows.map { $0.map { SQLExpression.column("t0", $0.name, nullable: $0.nullable) } }
    }

    /// The columns a row of `entity` is read from, and how: primary key,
    /// version, the entity number when the entity has subentities (a row may
    /// be any of them), the entity's attributes and to-one keys, then each
    /// subentity's own.
    private static func rowLayout(of entity: Entity, in schema: SQLSchema) -> ([(name: String, nullable: Bool)], RowLayout) {
        let model = schema.model
        let family = model.descendants(of: entity)
        var names: [(name: String, nullable: Bool)] = [(schema.primaryKey(entity), false), (schema.version(entity), false)]
        if family.count > 1 { names.append((schema.entityColumn(entity), false)) }
        var position: [String: Int] = [:]
        for member in family {
            let declaredAttributes = member.name == entity.name ? schema.storedAttributes(entity) : member.declaredAttributes.filter(\.isStored)
            for attribute in declaredAttributes where position[schema.column(attribute, of: member)] == nil {
                position[schema.column(attribute, of: member)] = names.count
                names.append((schema.column(attribute, of: member), attribute.isOptional || member.name != entity.name))
            }
            let declaredToOne = member.name == entity.name ? schema.toOneRelationships(entity)
                : member.declaredRelationships.filter { !$0.isToMany && !$0.isTransient }
            for relationship in declaredToOne where position[schema.foreignKey(relationship, of: member)] == nil {
                position[schema.foreignKey(relationship, of: member)] = names.count
                names.append((schema.foreignKey(relationship, of: member), true))
            }
        }
        let members = family.map { member in
            RowLayout.Member(
                entity: member.index, root: member.rootIndex, number: Int64(schema.entityNumber(member)),
                attributes: schema.storedAttributes(member).map {
                    RowLayout.AttributeColumn(column: position[schema.column($0, of: member)]!, slot: $0.slot, type: $0.type,
                                              external: $0.allowsExternalStorage,
                                              transformer: $0.type == .transformable ? $0.valueTransformerName : nil)
                },
                toOne: schema.toOneRelationships(member).map { (column: position[schema.foreignKey($0, of: member)]!, slot: $0.slot) },
                initialValues: member.attributes.map { $0.isStored ? .null : $0.defaultValue ?? .null },
                attributeCount: member.attributes.count, toOneCount: member.toOneCount, toManyCount: member.toManyCount)
        }
        return (names, RowLayout(entityColumn: family.count > 1 ? 2 : nil, members: members))
    }

    /// How the row columns of `entity` (`rowColumns`) are read into nodes.
    ///
    /// - Parameter entity: An entity of the model.
    /// - Returns: Its layout; one with no members for an entity the model does
    ///   not have.
    package func rowLayout(_ entity: Entity) -> RowLayout {
        layouts.indices.contains(entity.index) ? layouts[entity.index]
            : RowLayout(entityColumn: nil, members: [])
    }

    /// The entity whose number is `number`, if the model has it.
    ///
    /// - Parameter number: The entity number (`Z_ENT`).
    /// - Returns: The entity, or nil when no entity of the model has that
    ///   number.
    public func entity(number: Int64) -> Entity? {
        Int(exactly: number).flatMap { entitiesByNumber[$0] }.map { model.entities[$0] }
    }

    /// The condition that keeps, of an entity's table, the rows of the
    /// entity and its subentities: nil when that is every row (the entity
    /// is a root).
    ///
    /// - Parameters:
    ///   - entity: The entity.
    ///   - alias: The alias of its table in the statement.
    /// - Returns: A condition on the entity column (equality for one entity
    ///   number, IN for several), or nil for a root entity.
    package func entityFilter(_ entity: Entity, alias: String) -> SQLExpression? {
        guard entity.superentity != nil else { return nil }
        // Numbers of the schema, not of the user: written in the statement.
        let numbers = model.descendants(of: entity).map { SQLExpression.literal(entityNumber($0)) }
        let column = SQLExpression.column(alias, entityColumn(entity), nullable: false)
        return numbers.count == 1 ? .compare(.equal, column, numbers[0]) : .in(column, numbers)
    }

    /// The column holding the entity number of the row a to-one
    /// relationship of `entity` points at, when its destination has subentities.
    ///
    /// - Parameters:
    ///   - relationship: A to-one relationship of `entity`.
    ///   - entity: The entity.
    /// - Returns: The column's name, or nil when the destination has no
    ///   subentities (or `relationship` is not a stored to-one relationship of
    ///   `entity`).
    public func entityKey(_ relationship: Relationship, of entity: Entity) -> String? {
        entityKeys[entity.name]?[relationship.name]
    }

    /// `text` with its ASCII letters upper-cased, as Core Data names an attribute's column.
    static func asciiUppercased(_ text: String) -> String {
        String(decoding: text.utf8.map { (0x61...0x7A).contains($0) ? $0 - 0x20 : $0 }, as: UTF8.self)
    }

    /// Core Data's entity numbers: a pre-order walk of the inheritance tree,
    /// roots and each entity's subentities sorted by name, case ignored.
    ///
    /// - Parameter model: The model.
    /// - Returns: The number of each entity, by name, counting from 1.
    public static func entityNumbers(of model: DataModel) -> [String: Int] {
        func sorted(_ entities: [Entity]) -> [Entity] {
            entities.sorted { ($0.name.lowercased(), $0.name) < ($1.name.lowercased(), $1.name) }
        }
        var numbers: [String: Int] = [:]
        func visit(_ entity: Entity) {
            numbers[entity.name] = numbers.count + 1
            for child in sorted(entity.subentities.compactMap { model.entity(named: $0) }) { visit(child) }
        }
        for root in sorted(model.entities.filter { $0.superentity == nil }) { visit(root) }
        return numbers
    }

    /// An entity's number (`Z_ENT`).
    ///
    /// - Parameter entity: The entity.
    /// - Returns: Its number; 0 when the schema has none for it.
    public func entityNumber(_ entity: Entity) -> Int { entityNumbers[entity.name] ?? 0 }

    /// The names of a row's columns and whether each may be NULL, in the
    /// order row statements read them.
    func rowColumnNames(_ entity: Entity) -> [(name: String, nullable: Bool)] {
        rows.indices.contains(entity.index) ? rows[entity.index] : []
    }

    /// `rowColumnNames` as columns of the alias `t0`.
    func rowColumnsOfFirstTable(_ entity: Entity) -> [SQLExpression]? {
        rowsOfFirstTable.indices.contains(entity.index) ? rowsOfFirstTable[entity.index] : nil
    }

    /// The attributes of an entity a row holds, in slot order: those with a
    /// column (not transient; not a composite itself, an object ID or
    /// undefined).
    ///
    /// - Parameter entity: The entity.
    /// - Returns: The attributes that have a column, in slot order.
    public func storedAttributes(_ entity: Entity) -> [Attribute] { entity.attributes.filter(\.isStored) }

    /// The table of an entity: its root entity's.
    ///
    /// - Parameter entity: The entity.
    /// - Returns: `Z` and the root entity's name, upper-cased.
    public func table(_ entity: Entity) -> String { "Z" + model.root(of: entity).name.uppercased() }

    /// The primary key column of an entity's table.
    ///
    /// - Parameter entity: The entity (every table's is the same).
    /// - Returns: `Z_PK`.
    public func primaryKey(_ entity: Entity) -> String { "Z_PK" }

    /// The column holding each row's entity number.
    ///
    /// - Parameter entity: The entity (every table's is the same).
    /// - Returns: `Z_ENT`.
    public func entityColumn(_ entity: Entity) -> String { "Z_ENT" }

    /// The version column of an entity's table.
    ///
    /// - Parameter entity: The entity (every table's is the same).
    /// - Returns: `Z_OPT`.
    public func version(_ entity: Entity) -> String { "Z_OPT" }

    /// The column of an attribute a bound tree names.
    ///
    /// - Parameter attribute: The attribute, as the binder resolved it.
    /// - Returns: The column's name; `Z` and the attribute's name, upper-cased,
    ///   when the schema does not know the attribute.
    public func column(_ attribute: AttributeReference) -> String {
        columns[attribute.entity]?[attribute.name] ?? "Z" + attribute.name.uppercased()
    }

    /// The column of a to-one relationship a bound tree names.
    ///
    /// - Parameter relationship: The relationship, as the binder resolved it.
    /// - Returns: The column's name; `Z` and the relationship's name,
    ///   upper-cased, when the schema does not know the relationship.
    public func foreignKey(_ relationship: RelationshipReference) -> String {
        columns[relationship.entity]?[relationship.name] ?? "Z" + relationship.name.uppercased()
    }

    /// The companion column of an attribute a bound tree names.
    ///
    /// - Parameters:
    ///   - attribute: The canonical attribute, as the binder resolved it.
    ///   - flags: The folding: 1 for `[c]`, 3 for `[cd]` (`companionFlags`).
    /// - Returns: `Z_FOLD`, the flags, `_` and the attribute's column.
    public func companionColumn(_ attribute: AttributeReference, flags: Int) -> String {
        "Z_FOLD\(flags)_" + column(attribute)
    }

    /// The folding flags companion columns exist for: `[c]` (1) and `[cd]` (3).
    public static let companionFlags = [1, 3]

    /// The column of an attribute of `entity` (declared or inherited).
    ///
    /// - Parameters:
    ///   - attribute: The attribute.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The column's name; `Z` and the attribute's name, upper-cased,
    ///   when the schema does not know the attribute.
    public func column(_ attribute: Attribute, of entity: Entity) -> String {
        columns[entity.name]?[attribute.name] ?? "Z" + attribute.name.uppercased()
    }

    /// The column of a to-one relationship of `entity`.
    ///
    /// - Parameters:
    ///   - relationship: The to-one relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The column's name; `Z` and the relationship's name,
    ///   upper-cased, when the schema does not know the relationship.
    public func foreignKey(_ relationship: Relationship, of entity: Entity) -> String {
        columns[entity.name]?[relationship.name] ?? "Z" + relationship.name.uppercased()
    }

    /// The order-key column of a to-one relationship of `entity` whose
    /// inverse is an ordered to-many: where a member's place in the order is kept.
    ///
    /// - Parameters:
    ///   - relationship: The to-one relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The column's name, or nil when the relationship's inverse is
    ///   not an ordered to-many relationship.
    public func orderKey(_ relationship: Relationship, of entity: Entity) -> String? {
        orderKeys[entity.name]?[relationship.name]
    }

    /// The order-key column of a join table, for the side whose members an
    /// ordered relationship orders (`Z_FOK_` and the members' column).
    ///
    /// - Parameter column: The join table's column holding the ordered
    ///   members' keys (`Z_<n><NAME>`).
    /// - Returns: `Z_FOK_` and the column's name after its first two
    ///   characters.
    public func orderKey(ofJoinColumn column: String) -> String { "Z_FOK_" + column.dropFirst(2) }

    /// The order-key column of a join table's column: as the store names it
    /// when it was read from the store, else `orderKey(ofJoinColumn:)`.
    ///
    /// - Parameters:
    ///   - column: The join table's column holding the ordered members' keys.
    ///   - table: The join table.
    /// - Returns: The order-key column's name.
    package func orderKey(ofJoinColumn column: String, in table: String) -> String {
        joinTableNames.orderKey(ofJoinColumn: column, in: table) ?? orderKey(ofJoinColumn: column)
    }

    /// The companion columns of an attribute of `entity` (none unless it is canonical).
    ///
    /// - Parameters:
    ///   - attribute: The attribute.
    ///   - entity: The entity whose objects have it.
    /// - Returns: The `[c]` and `[cd]` companion columns of a canonical
    ///   attribute; empty for any other.
    public func companionColumns(_ attribute: Attribute, of entity: Entity) -> [String] {
        attribute.isCanonical ? Self.companionFlags.map { "Z_FOLD\($0)_" + column(attribute, of: entity) } : []
    }

    /// Where a relationship of `entity` is stored.
    ///
    /// - Parameters:
    ///   - relationship: The relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: A foreign key for a to-one relationship; the inverse's
    ///   foreign key for a to-many relationship whose inverse is to-one; else
    ///   a join table (the store's own, when the mapping was matched to a
    ///   store that exists with `matchingJoinTables(_:)`).
    public func storage(of relationship: Relationship, in entity: Entity) -> RelationshipStorage {
        if !relationship.isToMany { return .foreignKey(column: foreignKey(relationship, of: entity)) }
        // A join table belongs to the entities that declare the two sides.
        let entity = model.declaringEntity(of: relationship.name, from: entity)
        // A store that exists: its own join table, whatever the rule below would name it.
        if let link = joinTableNames.link(relationship.name, declaredBy: entity.name) {
            return .joinTable(table: link.table, sourceColumn: link.sourceColumn, targetColumn: link.targetColumn)
        }
        guard var destination = model.entity(named: relationship.destination) else {
            return joinTable(owner: entity, relationship, destination: entity, inverse: nil, ownerSide: true)
        }
        let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
        if let inverse, !inverse.isToMany {
            return .inverseForeignKey(table: table(destination), column: foreignKey(inverse, of: destination))
        }
        if let inverse { destination = model.declaringEntity(of: inverse.name, from: destination) }
        guard let inverse else { return joinTable(owner: entity, relationship, destination: destination, inverse: nil, ownerSide: true) }
        // Many-to-many: one table for both directions, named after one side's relationship.
        if Self.ownsJoinTable(relationship, of: entity, over: inverse, of: destination) {
            return joinTable(owner: entity, relationship, destination: destination, inverse: inverse, ownerSide: true)
        }
        return joinTable(owner: destination, inverse, destination: entity, inverse: relationship, ownerSide: false)
    }

    /// Which side of a many-to-many relationship names its join table: the
    /// one Core Data reaches first, walking entities by name (case
    /// ignored); between two relationships of one entity, the one whose name
    /// sorts last (Core Data's choice there is not known to follow a rule;
    /// this one gives the Bookmarks store's `favorites`).
    static func ownsJoinTable(_ relationship: Relationship, of entity: Entity, over inverse: Relationship,
                              of destination: Entity) -> Bool {
        let (mine, theirs) = (entity.name.lowercased(), destination.name.lowercased())
        if mine != theirs { return mine < theirs }
        if entity.name != destination.name { return entity.name < destination.name }
        return relationship.name.utf8.lexicographicallyPrecedes(inverse.name.utf8) == false
    }

    /// The join table `Z_<n><RELATIONSHIP>` of `relationship` of `owner`
    /// (number n): a column `Z_<owner's number><INVERSE>` with the owner's
    /// keys, and `Z_<destination's number><RELATIONSHIP>` with the
    /// destination's; read from the other side, the columns swap.
    private func joinTable(owner: Entity, _ relationship: Relationship, destination: Entity, inverse: Relationship?,
                           ownerSide: Bool) -> RelationshipStorage {
        let name = relationship.name.uppercased()
        let table = "Z_\(entityNumber(owner))\(name)"
        let ownerColumn = "Z_\(entityNumber(owner))\((inverse?.name ?? owner.name).uppercased())"
        let destinationColumn = "Z_\(entityNumber(destination))\(name)"
        // A self-referencing pair with the same numbers: keep the columns apart.
        let first = ownerColumn == destinationColumn ? ownerColumn + "1" : ownerColumn
        return ownerSide ? .joinTable(table: table, sourceColumn: first, targetColumn: destinationColumn)
            : .joinTable(table: table, sourceColumn: destinationColumn, targetColumn: first)
    }

    /// Whether a join table is written from this side (each link once).
    ///
    /// - Parameters:
    ///   - relationship: The relationship.
    ///   - entity: The entity whose objects have it.
    /// - Returns: True for a to-many relationship stored in a join table when
    ///   it has no inverse or its side names the table; false otherwise.
    public func writesLinks(of relationship: Relationship, in entity: Entity) -> Bool {
        let entity = model.declaringEntity(of: relationship.name, from: entity)
        guard relationship.isToMany, var destination = model.entity(named: relationship.destination),
              case .joinTable = storage(of: relationship, in: entity) else { return false }
        guard let inverse = relationship.inverse.flatMap({ destination.relationship(named: $0) }) else { return true }
        destination = model.declaringEntity(of: inverse.name, from: destination)
        return Self.ownsJoinTable(relationship, of: entity, over: inverse, of: destination)
    }

    /// The to-one relationships of an entity in slot order: the order their
    /// columns come in a row.
    ///
    /// - Parameter entity: The entity.
    /// - Returns: Its to-one relationships that are not transient, inherited
    ///   ones included, in slot order.
    public func toOneRelationships(_ entity: Entity) -> [Relationship] {
        entity.relationships.filter { !$0.isToMany && !$0.isTransient }.sorted { $0.slot < $1.slot }
    }

    /// Renders a statement in the schema's dialect.
    ///
    /// - Parameter statement: The statement.
    /// - Returns: Its text and bindings.
    package func render(_ statement: SQLStatement) -> SQLQuery {
        SQLRenderer.render(statement, in: dialect)
    }

    // MARK: Metadata and keys

    /// Stores the metadata property list, and the store's identifier.
    ///
    /// - Parameters:
    ///   - plist: The bytes of the metadata property list.
    ///   - uuid: The store's identifier.
    /// - Returns: The INSERT of `Z_METADATA`'s one row.
    public func insertMetadata(plist: [UInt8], uuid: String) -> SQLQuery {
        render(.insert(SQLInsert(table: "Z_METADATA", columns: ["Z_VERSION", "Z_UUID", "Z_PLIST"],
                                 values: [.value(.integer(1)), .value(.text(uuid)), .value(.blob(Data(plist)))],
                                 ignoringDuplicates: false)))
    }

    /// Stores the model cache: the compiled model, raw-deflate compressed
    /// (`DataModel.modelCacheData`).
    ///
    /// - Parameter content: The compressed model.
    /// - Returns: The INSERT of `Z_MODELCACHE`'s one row.
    public func insertModelCache(_ content: Data) -> SQLQuery {
        render(.insert(SQLInsert(table: CoreDataCatalog.modelCacheTable, columns: ["Z_CONTENT"],
                                 values: [.value(.blob(content))], ignoringDuplicates: false)))
    }

    /// The largest key handed out for an entity's table (`Z_MAX` of its
    /// root, 0 when none).
    ///
    /// - Parameter entity: An entity stored in the table.
    /// - Returns: A SELECT of one row and one column.
    public func selectKeyMaximum(_ entity: Entity) -> SQLQuery {
        let root = model.root(of: entity)
        return render(.select(SQLSelect([.coalesce(.column("k", "Z_MAX", nullable: true), .literal(0))],
                                        from: .table("Z_PRIMARYKEY", alias: "k"),
                                        where: [.equal(.column("k", "Z_ENT", nullable: false),
                                                       .value(.integer(Int64(entityNumber(root)))))])))
    }

    /// Records `largest` as the largest key handed out for an entity's table.
    ///
    /// - Parameters:
    ///   - entity: An entity stored in the table.
    ///   - largest: The largest key handed out.
    /// - Returns: The UPDATE of the root entity's row of `Z_PRIMARYKEY`.
    public func updateKeyMaximum(_ entity: Entity, to largest: Int64) -> SQLQuery {
        let root = model.root(of: entity)
        return render(.update(SQLUpdate(table: "Z_PRIMARYKEY", assignments: [(column: "Z_MAX", value: .value(.integer(largest)))],
                                        conditions: [.equal(.column("", "Z_ENT", nullable: false),
                                                            .value(.integer(Int64(entityNumber(root)))))])))
    }

    /// Deletes one row of `entity`'s table by its key (parameter 1), with no
    /// delete rules: for a store kept as a copy of another store's rows.
    ///
    /// - Parameter entity: The entity (its root's table holds the row).
    /// - Returns: The statement.
    package func deleteRowByKey(_ entity: Entity) -> String {
        "DELETE FROM \(table(entity)) WHERE \(primaryKey(entity)) = \(database.placeholder(1))"
    }

    /// Reserves `count` keys of an entity's table in one statement, safe
    /// with many writers at once (the row is locked until the statement's
    /// transaction ends): the largest key handed out moves up by `count`,
    /// past the largest key in the table, and comes back. The reserved keys
    /// are the `count` keys up to and including it.
    ///
    /// - Parameters:
    ///   - entity: An entity stored in the table.
    ///   - count: How many keys to reserve.
    /// - Returns: The UPDATE of the root entity's row of `Z_PRIMARYKEY`,
    ///   returning the largest key reserved.
    public func reserveKeys(_ entity: Entity, count: Int64) -> SQLQuery {
        let root = model.root(of: entity)
        let largestInTable = SQLExpression.scalar(
            SQLSelect([.coalesce(.aggregate(.maximum, .column("t0", primaryKey(root), nullable: false)), .literal(0))],
                      from: .table(table(root), alias: "t0")), nullable: false)
        let recorded = SQLExpression.coalesce(.column("", "Z_MAX", nullable: true), .literal(0))
        let current = SQLExpression.caseWhen(.compare(.greaterOrEqual, recorded, largestInTable), then: recorded, else: largestInTable)
        return render(.update(SQLUpdate(table: "Z_PRIMARYKEY",
                                        assignments: [(column: "Z_MAX", value: .arithmetic(.add, current, .value(.integer(count))))],
                                        conditions: [.equal(.column("", "Z_ENT", nullable: false),
                                                            .value(.integer(Int64(entityNumber(root)))))],
                                        returning: [.column("", "Z_MAX", nullable: false)])))
    }
}
