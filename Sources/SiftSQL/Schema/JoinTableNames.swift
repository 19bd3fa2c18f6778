// Stage 6b (SQL lowering): the names of a store's join tables, as the store
// has them. Core Data names a many-to-many relationship's table after one of
// its two sides, `Z_<n><RELATIONSHIP>`, and which side has changed between
// its versions (a pair of inverse to-many relationships of one entity,
// `ignoredClients` / `ignoredByClients`, is `Z_14IGNOREDCLIENTS` in one
// store and `Z_14IGNOREDBYCLIENTS` in another); a join column, named
// `Z_<n><RELATIONSHIP>` after the relationship that reaches the keys it holds,
// gets a number after it when another join table has a column of that name
// (`Z_22USERS1`), and an ordered side's order keys are `Z_FOK_` and the
// column's name after `Z_`. So a store that exists is read, not guessed: its
// tables and columns (`sqlite_master`) are matched to the model's
// many-to-many relationships by entity numbers and names, suffixes allowed,
// and the schema mapping takes those names; only a new store's are derived.

import SiftModel

/// The join tables of a store that exists, matched to the model's
/// many-to-many relationships: the names the schema mapping uses for them
/// instead of deriving them (``SQLSchema/matchingJoinTables(_:)``).
package struct JoinTableNames: Sendable, Hashable {
    /// Where one side of a many-to-many relationship keeps its links.
    package struct Link: Sendable, Hashable {
        /// The join table.
        package var table: String
        /// Its column holding the keys of the objects that have the relationship.
        package var sourceColumn: String
        /// Its column holding the keys of the objects the relationship reaches.
        package var targetColumn: String
    }

    /// Each relationship's link, by the name of the entity that declares
    /// it, then the relationship's name.
    private var links: [String: [String: Link]] = [:]
    /// The order-key column of each join column that has one, by table,
    /// then column.
    private var orderKeys: [String: [String: String]] = [:]

    /// No names read: every name derived (a new store).
    package init() {}

    /// Where `relationship`, declared by `entity`, keeps its links in the store.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's name.
    ///   - entity: The name of the entity that declares it.
    /// - Returns: The store's join table and columns, or nil when none was read for it.
    package func link(_ relationship: String, declaredBy entity: String) -> Link? {
        links[entity]?[relationship]
    }

    /// The order-key column of a join table's column, as the store names it.
    ///
    /// - Parameters:
    ///   - column: The join column holding the ordered members' keys.
    ///   - table: The join table.
    /// - Returns: Its order-key column, or nil when none was read for it.
    package func orderKey(ofJoinColumn column: String, in table: String) -> String? {
        orderKeys[table]?[column]
    }

    /// Records both sides of one join table.
    fileprivate mutating func record(owner: String, _ relationship: String, inverse: (entity: String, name: String)?,
                                     table: String, ownerColumn: String, destinationColumn: String,
                                     orders: [String: String]) {
        links[owner, default: [:]][relationship] = Link(table: table, sourceColumn: ownerColumn, targetColumn: destinationColumn)
        if let inverse {
            links[inverse.entity, default: [:]][inverse.name] = Link(table: table, sourceColumn: destinationColumn,
                                                                       targetColumn: ownerColumn)
        }
        if !orders.isEmpty { orderKeys[table] = orders }
    }
}

/// A store whose join tables do not fit the model's many-to-many
/// relationships: the table the store lacks or has in another shape.
package struct JoinTableMismatch: Error, Hashable, Sendable, CustomStringConvertible {
    /// The join table: the store's, or the name Core Data gives it when the store has none.
    package var table: String
    /// What does not fit, in a sentence.
    package var reason: String

    package var description: String { "the join table \(table) does not fit the model: \(reason)" }
}

extension SQLSchema {
    /// This mapping, with the join tables of a store that exists named as the
    /// store names them: each many-to-many relationship (and each to-many one
    /// without an inverse) matched to one of `tables` by its entity numbers
    /// and names — the table named after either side (`Z_<n><NAME>`), each
    /// column after the relationship reaching the keys it holds
    /// (`Z_<n><NAME>`), a number allowed after a name, and for an ordered
    /// side its order keys (`Z_FOK_…`).
    ///
    /// - Parameter tables: The store's tables and their columns, by table
    ///   name (tables other than join tables are ignored).
    /// - Returns: The mapping, reading and writing links where the store keeps them.
    /// - Throws: `JoinTableMismatch` naming the table when a relationship has
    ///   no table in the store, or its table lacks a column it needs.
    package func matchingJoinTables(_ tables: [String: [String]]) throws(JoinTableMismatch) -> SQLSchema {
        var names = JoinTableNames()
        var claimed = Set<String>()
        // The names as they are derived, whatever this mapping has read before.
        var derived = self
        derived.joinTableNames = JoinTableNames()
        // Pairs whose table has a name Core Data gives it first, so that a
        // table with a number after its name goes to the pair it belongs to.
        var pairs: [JoinTablePair] = []
        for entity in model.entities {
            for relationship in entity.declaredRelationships where relationship.isToMany && !relationship.isTransient {
                guard derived.writesLinks(of: relationship, in: entity),
                      let pair = JoinTablePair(relationship, of: entity, in: derived) else {
                    continue
                }
                pairs.append(pair)
            }
        }
        var unmatched: [JoinTablePair] = []
        for pair in pairs {
            let exact = pair.tableNames.filter { tables[$0] != nil && !claimed.contains($0) }
            guard let found = try pair.firstMatch(exact, in: tables) else {
                unmatched.append(pair)
                continue
            }
            claimed.insert(found.table)
            pair.record(found, in: &names)
        }
        for pair in unmatched {
            let suffixed = tables.keys.filter { name in
                !claimed.contains(name) && pair.tableNames.contains { Self.isName(name, numbered: $0) && name != $0 }
            }.sorted()
            guard let found = try pair.firstMatch(suffixed, in: tables) else {
                throw JoinTableMismatch(table: pair.tableNames[0], reason: pair.missingTable)
            }
            claimed.insert(found.table)
            pair.record(found, in: &names)
        }
        derived.joinTableNames = names
        return derived
    }

    /// Whether `name` is `base`, or `base` and a number after it.
    static func isName(_ name: String, numbered base: String) -> Bool {
        guard name.hasPrefix(base) else { return false }
        let rest = name.utf8.dropFirst(base.utf8.count)
        return rest.allSatisfy { (0x30...0x39).contains($0) }
    }
}

/// One join table's relationships, as the mapping derives its names: what
/// is matched to a store's tables.
private struct JoinTablePair {
    let owner: Entity
    let relationship: Relationship
    let inverse: (entity: Entity, relationship: Relationship)?
    /// The names Core Data gives the table: after the side the mapping
    /// derives it from first, then after the other side.
    let tableNames: [String]
    /// The derived columns: the owner's keys and the destination's.
    let ownerColumn: String
    let destinationColumn: String
    /// The columns' names before a number Core Data may add.
    let ownerBase: String
    let destinationBase: String

    /// A table that fits, its key columns and order keys.
    struct Match {
        let table: String
        let ownerColumn: String
        let destinationColumn: String
        let orders: [String: String]
    }

    init?(_ relationship: Relationship, of entity: Entity, in schema: SQLSchema) {
        guard case .joinTable(let table, let source, let target) = schema.storage(of: relationship, in: entity) else { return nil }
        let model = schema.model
        let owner = model.declaringEntity(of: relationship.name, from: entity)
        self.owner = owner
        self.relationship = relationship
        var inverse: (entity: Entity, relationship: Relationship)?
        if let destination = model.entity(named: relationship.destination),
           let other = relationship.inverse.flatMap({ destination.relationship(named: $0) }) {
            inverse = (model.declaringEntity(of: other.name, from: destination), other)
        }
        self.inverse = inverse
        (ownerColumn, destinationColumn) = (source, target)
        let destinationNumber = inverse.map { schema.entityNumber($0.entity) } ?? schema.entityNumber(owner)
        ownerBase = "Z_\(schema.entityNumber(owner))\((inverse?.relationship.name ?? owner.name).uppercased())"
        destinationBase = "Z_\(destinationNumber)\(relationship.name.uppercased())"
        var names = [table]
        if let inverse {
            let other = "Z_\(schema.entityNumber(inverse.entity))\(inverse.relationship.name.uppercased())"
            if other != table { names.append(other) }
        }
        tableNames = names
    }

    /// The relationship as a sentence names it.
    private var described: String {
        "the many-to-many relationship '\(owner.name).\(relationship.name)'"
            + (inverse.map { " (and its inverse '\($0.entity.name).\($0.relationship.name)')" } ?? "")
    }

    /// Why no table fits, when the store has none of the names.
    var missingTable: String {
        "the store has no join table for \(described): Core Data names it "
            + tableNames.joined(separator: " or ") + ", perhaps with a number after the name"
    }

    /// The first of `candidates` whose columns fit; nil when there are none.
    /// - Throws: `JoinTableMismatch` naming the first candidate when none fits.
    func firstMatch(_ candidates: [String], in tables: [String: [String]]) throws(JoinTableMismatch) -> Match? {
        var problem: JoinTableMismatch?
        for table in candidates {
            switch match(table, columns: tables[table] ?? []) {
            case .success(let found): return found
            case .failure(let mismatch): if problem == nil { problem = mismatch }
            }
        }
        if let problem { throw problem }
        return nil
    }

    /// Which of a table's columns hold the owner's keys, the destination's and their order keys.
    private func match(_ table: String, columns: [String]) -> Result<Match, JoinTableMismatch> {
        let keys = columns.filter { !$0.hasPrefix("Z_FOK_") }
        let orderColumns = columns.filter { $0.hasPrefix("Z_FOK_") }
        func numbered(_ base: String, besides taken: String?) -> String? {
            let found = keys.filter { $0 != taken && SQLSchema.isName($0, numbered: base) }
            return found.count == 1 ? found[0] : nil
        }
        var owner = keys.contains(ownerColumn) ? ownerColumn : nil
        var destination = keys.contains(destinationColumn) && destinationColumn != owner ? destinationColumn : nil
        if destination == nil { destination = numbered(destinationBase, besides: owner) }
        if owner == nil { owner = numbered(ownerBase, besides: destination) }
        guard let owner, let destination, owner != destination else {
            return .failure(JoinTableMismatch(table: table, reason: "its columns (\(keys.joined(separator: ", "))) are not "
                + "\(ownerColumn) and \(destinationColumn), the keys of \(described)"))
        }
        // An ordered side orders the keys of the objects it reaches.
        var orders: [String: String] = [:]
        func orderKey(of column: String, base: String, side: String) -> JoinTableMismatch? {
            let named = ["Z_FOK_" + column.dropFirst(2), "Z_FOK_" + base.dropFirst(2)]
            var found = named.first(where: orderColumns.contains)
            if found == nil {
                let numbered = orderColumns.filter { SQLSchema.isName($0, numbered: named[1]) && !orders.values.contains($0) }
                if numbered.count == 1 { found = numbered[0] }
            }
            guard let found else {
                return JoinTableMismatch(table: table, reason: "it has no order-key column \(named[0]) for the ordered "
                                         + "relationship '\(side)' (its columns: \(columns.joined(separator: ", ")))")
            }
            orders[column] = found
            return nil
        }
        if relationship.isOrdered,
           let problem = orderKey(of: destination, base: destinationBase, side: "\(self.owner.name).\(relationship.name)") {
            return .failure(problem)
        }
        if let inverse, inverse.relationship.isOrdered,
           let problem = orderKey(of: owner, base: ownerBase, side: "\(inverse.entity.name).\(inverse.relationship.name)") {
            return .failure(problem)
        }
        return .success(Match(table: table, ownerColumn: owner, destinationColumn: destination, orders: orders))
    }

    /// Records a table that fits as both sides' links.
    func record(_ match: Match, in names: inout JoinTableNames) {
        names.record(owner: owner.name, relationship.name,
                     inverse: inverse.map { ($0.entity.name, $0.relationship.name) },
                     table: match.table, ownerColumn: match.ownerColumn, destinationColumn: match.destinationColumn,
                     orders: match.orders)
    }
}
