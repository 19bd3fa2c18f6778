// The invariants a store in Core Data's layout keeps after every save, as
// Apple's framework would have left it: SQLite's integrity check; Z_MAX at
// least each root table's largest key; every row's Z_ENT one of its table's
// entities; every foreign key and join-table row pointing at an existing row
// of an allowed entity, and the column beside a key that names the entity
// of the row it points at (`Z<n>_…`) naming it. And on every kind of store
// (SQLite, atomic, PostgreSQL), over the rows as the store holds them: no
// key or link points at a row that is not there, but through a relationship
// whose inverse's delete rule is no action (which leaves it, by design), and
// the two sides of every link agree (a member's inverse points back at its
// owner). Every store the write-path tests make (`TestStore`) checks them
// after each save and each batch change.

import Foundation
import Sift
import SiftStore
import Testing

enum CoreDataInvariants {
    /// What is wrong with any kind of store, if anything: Core Data's
    /// invariants for an SQLite store, and for every store its links.
    static func violations(of store: any PersistentStore) -> [String] {
        var problems: [String] = []
        if let sqlite = store as? SQLiteStore { problems += violations(of: sqlite) }
        do {
            problems += linkViolations(try StoredRows(store), model: store.model)
        } catch {
            problems.append("the rows could not be read: \(error)")
        }
        return problems
    }

    /// The relationships of every row a store holds, read without going
    /// through the row cache (so that checking changes nothing a test sees).
    struct StoredRows {
        /// Each row's own entity, by ID.
        var entities: [ObjectID: Int] = [:]
        /// Each row's to-one keys and to-many members, by relationship name.
        var links: [ObjectID: [String: [Int64]]] = [:]

        init(_ store: any PersistentStore) throws {
            if let atomic = store as? AtomicStore<DataSetFormat> {
                // The file, as the store last wrote it.
                let model = atomic.model
                for node in try DataSet(contentsOf: atomic.url).nodes {
                    entities[node.id] = node.id.entity
                    for relationship in model.entities[node.id.entity].relationships {
                        links[node.id, default: [:]][relationship.name] = relationship.isToMany
                            ? node.toMany[relationship.slot] ?? []
                            : node.toOne[relationship.slot].map { [$0] } ?? []
                    }
                }
            } else if let sql = store as? any SQLStoreBackend {
                try read(sql)
            }
        }

        private mutating func read(_ store: some SQLStoreBackend) throws {
            let model = store.model
            for root in model.entities where root.superentity == nil {
                for id in try store.keys(for: try store.compile(FetchRequest(entityName: root.name))) { entities[id] = id.entity }
            }
            for (index, ids) in Dictionary(grouping: entities.keys, by: { entities[$0]! }) {
                let entity = model.entities[index]
                let keys = ids.map(\.primaryKey).sorted()
                let byKey = Dictionary(uniqueKeysWithValues: ids.map { ($0.primaryKey, $0) })
                for relationship in entity.relationships where !relationship.isTransient {
                    let query = relationship.isToMany
                        ? store.schema.selectLinks(relationship, in: entity, owners: keys, withRows: false)
                        : store.schema.selectToOneKeys(relationship, of: entity, keys: keys)
                    for id in ids { links[id, default: [:]][relationship.name] = [] }
                    guard let query else { continue }
                    let pairs = try store.fetchIntegers(query, columns: 2)
                    for i in stride(from: 0, to: pairs.count - 1, by: 2) {
                        if let owner = byKey[pairs[i]] { links[owner, default: [:]][relationship.name, default: []].append(pairs[i + 1]) }
                    }
                }
            }
        }
    }

    /// What is wrong with the links of the rows: keys and members that point
    /// nowhere (but through a relationship whose inverse's rule is no action),
    /// and links whose inverse does not point back.
    static func linkViolations(_ rows: StoredRows, model: DataModel) -> [String] {
        var problems: [String] = []
        func row(_ key: Int64, of destination: Entity) -> ObjectID? {
            let id = ObjectID(entity: destination, primaryKey: key)
            guard let index = rows.entities[id], model.isEntity(at: index, kindOf: destination.index) else { return nil }
            return ObjectID(entity: model.entities[index], primaryKey: key)
        }
        for (id, index) in rows.entities.sorted(by: { ($0.key.root, $0.key.primaryKey) < ($1.key.root, $1.key.primaryKey) }) {
            let entity = model.entities[index]
            for relationship in entity.relationships where !relationship.isTransient {
                guard let destination = model.entity(named: relationship.destination) else { continue }
                let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
                for key in rows.links[id]?[relationship.name] ?? [] {
                    guard let target = row(key, of: destination) else {
                        if inverse?.deleteRule != .noAction {
                            problems.append("\(entity.name) \(id.primaryKey).\(relationship.name) points at \(destination.name) \(key), "
                                            + "which is not there")
                        }
                        continue
                    }
                    if let inverse, !(rows.links[target]?[inverse.name] ?? []).contains(id.primaryKey) {
                        problems.append("\(entity.name) \(id.primaryKey).\(relationship.name) holds \(destination.name) \(key), "
                                        + "whose \(inverse.name) does not hold it back")
                    }
                }
            }
        }
        return problems
    }

    /// What is wrong with an SQLite store, if anything.
    static func violations(of store: SQLiteStore) -> [String] {
        let schema = store.schema
        let model = store.model
        var problems: [String] = []
        store.withConnection { connection in
            func integers(_ sql: String) -> [Int64] {
                ((try? connection.query(sql)) ?? []).compactMap { if case .integer(let i) = $0[0] { i } else { nil } }
            }
            let check = (try? connection.query("PRAGMA integrity_check")) ?? []
            if check.first?.first != .text("ok") { problems.append("integrity_check: \(check)") }
            for root in model.entities where root.superentity == nil {
                let table = schema.table(root)
                let family = model.descendants(of: root).map { Int64(schema.entityNumber($0)) }
                let largest = integers("SELECT COALESCE(MAX(Z_PK), 0) FROM \"\(table)\"").first ?? 0
                let recorded = integers("SELECT Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT = \(schema.entityNumber(root))").first ?? -1
                if recorded < largest { problems.append("\(table): Z_MAX \(recorded) < largest Z_PK \(largest)") }
                for number in integers("SELECT DISTINCT Z_ENT FROM \"\(table)\"") where !family.contains(number) {
                    problems.append("\(table): a row of entity \(number), which is not one of the table's")
                }
            }
            for entity in model.entities {
                // Each relationship where it is declared: its rows are those of the entity and its subentities.
                for relationship in entity.declaredRelationships {
                    guard let destination = model.entity(named: relationship.destination) else { continue }
                    let allowed = model.descendants(of: destination).map { String(schema.entityNumber($0)) }.joined(separator: ", ")
                    let target = schema.table(destination)
                    func dangling(_ sql: String, _ what: String) {
                        let count = integers(sql).first ?? 0
                        if count > 0 { problems.append("\(count) \(what) of \(entity.name).\(relationship.name) point nowhere") }
                    }
                    switch schema.storage(of: relationship, in: entity) {
                    case .foreignKey(let column):
                        if let entityKey = schema.entityKey(relationship, of: entity) {
                            // The destination row's entity, next to its key.
                            let wrong = integers("SELECT COUNT(*) FROM \"\(schema.table(entity))\" AS s WHERE s.Z_ENT IN "
                                + "(\(model.descendants(of: entity).map { String(schema.entityNumber($0)) }.joined(separator: ", "))) AND "
                                + "s.\"\(entityKey)\" IS NOT (SELECT d.Z_ENT FROM \"\(target)\" AS d WHERE d.Z_PK = s.\"\(column)\")").first ?? 0
                            if wrong > 0 { problems.append("\(wrong) rows of \(entity.name).\(relationship.name) name the wrong entity in \(entityKey)") }
                        }
                        // A no-action rule on the other side leaves the key pointing at a deleted row, by design.
                        let inverse = relationship.inverse.flatMap { destination.relationship(named: $0) }
                        if inverse?.deleteRule == .noAction { break }
                        dangling("SELECT COUNT(*) FROM \"\(schema.table(entity))\" AS s WHERE s.\"\(column)\" IS NOT NULL AND NOT EXISTS "
                                 + "(SELECT 1 FROM \"\(target)\" AS d WHERE d.Z_PK = s.\"\(column)\" AND d.Z_ENT IN (\(allowed)))",
                                 "foreign keys")
                    case .joinTable(let table, let source, let targetColumn):
                        let owners = model.descendants(of: entity).map { String(schema.entityNumber($0)) }.joined(separator: ", ")
                        dangling("SELECT COUNT(*) FROM \"\(table)\" AS j WHERE NOT EXISTS (SELECT 1 FROM \"\(target)\" AS d "
                                 + "WHERE d.Z_PK = j.\"\(targetColumn)\" AND d.Z_ENT IN (\(allowed)))", "join rows")
                        dangling("SELECT COUNT(*) FROM \"\(table)\" AS j WHERE NOT EXISTS (SELECT 1 FROM \"\(schema.table(entity))\" AS s "
                                 + "WHERE s.Z_PK = j.\"\(source)\" AND s.Z_ENT IN (\(owners)))", "join rows (owner side)")
                    case .inverseForeignKey:
                        break  // checked as the inverse's foreign key
                    }
                }
            }
        }
        return problems
    }
}

@Suite("Core Data's invariants")
struct CoreDataInvariantTests {
    @Test func aStoreSiftWroteKeepsThemAndABrokenOneDoesNot() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        #expect(CoreDataInvariants.violations(of: store).isEmpty)
        let context = ObjectContext(store: store)
        let hire = try context.insert("Employee")
        try hire.setValue(.string("New"), forKey: "name")
        try hire.setValue(.int(30), forKey: "age")
        try hire.setValue(.double(1000), forKey: "salary")
        try hire.setValue(.bool(false), forKey: "isManager")
        try hire.setValue(.date(Date()), forKey: "startDate")
        try context.save()
        #expect(CoreDataInvariants.violations(of: store).isEmpty)
        // Broken on purpose: the key record behind the table, a dangling manager.
        try store.withConnection { try $0.execute("UPDATE Z_PRIMARYKEY SET Z_MAX = 1; UPDATE ZEMPLOYEE SET ZMANAGER = 999999") }
        let problems = CoreDataInvariants.violations(of: store)
        #expect(problems.contains { $0.contains("Z_MAX") })
        #expect(problems.contains { $0.contains("Employee.manager") })
    }
}
