// Stores Apple's Core Data framework wrote (../shared/coredata-stores),
// opened as they are (on copies: opening a WAL store may change its files)
// and queried: every query of each fixture's queries.jsonl must give exactly
// its expected keys — with the store's own model cache, and with the Xcode
// model version that made it.

import Foundation
import Sift
import SiftStore
import Testing

/// One line of a fixture's `queries.jsonl`.
struct CoreDataQuery: Decodable, Sendable, CustomTestStringConvertible {
    var id: String
    var entity: String
    var predicate: String
    var expect: [Int64]
    var testDescription: String { id }

    static func all(of fixture: CoreDataFixture) -> [CoreDataQuery] {
        let url = CoreDataFixture.folder.appendingPathComponent(fixture.name).appendingPathComponent("queries.jsonl")
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSONDecoder().decode(CoreDataQuery.self, from: Data($0.utf8)) }
    }
}

@Suite("Core Data stores", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct CoreDataStoreTests {
    /// Runs every query of `fixture` on `store`.
    static func check(_ fixture: CoreDataFixture, _ store: SQLiteStore, _ source: String) throws {
        let context = ObjectContext(store: store)
        let queries = CoreDataQuery.all(of: fixture)
        #expect(!queries.isEmpty)
        for query in queries {
            do {
                let ids = try context.fetchObjectIDs(FetchRequest(entityName: query.entity, predicate: query.predicate))
                #expect(ids.map(\.primaryKey).sorted() == query.expect, "\(query.id) (\(source)): \(query.predicate)")
            } catch {
                Issue.record("\(query.id) (\(source)): \(query.predicate): \(error)")
            }
        }
    }

    @Test("Every query of a Core Data store gives its expected objects", arguments: CoreDataFixture.all)
    func queries(_ fixture: CoreDataFixture) throws {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        if fixture.name != "restkit-rktwittercoredata-seed" {
            try Self.check(fixture, try SQLiteStore(url: url), "its model cache")
        }
        if ["xcdatamodeld", "xcdatamodel"].contains(fixture.modelURL.pathExtension) {
            let model = fixture.modelURL.pathExtension == "xcdatamodeld"
                ? try #require(ModelBundle(contentsOf: fixture.modelURL).version(matching: Self.storeHashes(url))?.model)
                : try DataModel(contentsOf: fixture.modelURL)
            try Self.check(fixture, try SQLiteStore(url: url, model: model), "its Xcode model")
        }
    }

    @Test("Every query through sift query and sift count", arguments: CoreDataFixture.all)
    func commandLine(_ fixture: CoreDataFixture) throws {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        // RestKit's store has no model cache: its Xcode 3 model is given.
        let model = fixture.name == "restkit-rktwittercoredata-seed" ? ["--model", fixture.modelURL.path] : []
        for query in CoreDataQuery.all(of: fixture) {
            let result = try runSift(["query", "--store", url.path, "--entity", query.entity, "--format", "json"] + model
                                     + [query.predicate])
            #expect(result.status == 0, "\(query.id): \(result.error)")
            let rows = try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [[String: Any]] ?? []
            #expect(rows.compactMap { ($0["id"] as? Int).map(Int64.init) }.sorted() == query.expect, "\(query.id)")
            let count = try runSift(["count", "--store", url.path, "--entity", query.entity] + model + [query.predicate])
            #expect(count.output == "\(query.expect.count)\n", "\(query.id)")
        }
    }

    static func storeHashes(_ url: URL) throws -> [String: Data] {
        let connection = try SQLiteConnection(path: url.path, readOnly: true)
        guard case .blob(let data)? = try connection.query("SELECT Z_PLIST FROM Z_METADATA").first?.first,
              let metadata = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { return [:] }
        return CoreDataModelTests.hashes(metadata)
    }
}

@Suite("Core Data's layout", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct CoreDataLayoutTests {
    /// A store's tables and their columns, read on a copy.
    static func tables(of url: URL) throws -> [String: Set<String>] {
        let connection = try SQLiteConnection(path: url.path, readOnly: true)
        var result: [String: Set<String>] = [:]
        for row in try connection.query("SELECT name FROM sqlite_master WHERE type = 'table'") {
            guard case .text(let table) = row[0] else { continue }
            result[table] = Set(try connection.query("SELECT name FROM pragma_table_info(?1)", [.text(table)]).compactMap {
                if case .text(let name) = $0[0] { name } else { nil }
            })
        }
        return result
    }

    @Test("The schema mapping names what Core Data named, in every fixture store", arguments: CoreDataFixture.all)
    func names(_ fixture: CoreDataFixture) throws {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let summary = try StoreInspection(url: url, model: fixture.modelURL.pathExtension == "xcdatamodel" ? fixture.modelURL : nil)
        let model = try #require(summary.model)
        let numbers = Dictionary(uniqueKeysWithValues: summary.entities.compactMap { e in e.number.map { (e.name, $0) } })
        // Entity numbers: Core Data's rule gives the store's (renamed entities aside).
        if !model.entities.contains(where: { $0.renamingIdentifier != nil }) {
            #expect(SQLSchema.entityNumbers(of: model) == numbers.filter { model.entity(named: $0.key) != nil })
        }
        let schema = SQLSchema(model: model, entityNumbers: numbers)
        let tables = try Self.tables(of: url)
        for entity in model.entities {
            let table = schema.table(entity)
            let columns = try #require(tables[table], "\(fixture.name): no table \(table)")
            for attribute in schema.storedAttributes(entity) {
                #expect(columns.contains(schema.column(attribute, of: entity)), "\(fixture.name): \(table).\(attribute.name)")
            }
            for relationship in entity.relationships {
                switch schema.storage(of: relationship, in: entity) {
                case .foreignKey(let column):
                    #expect(columns.contains(column), "\(fixture.name): \(table).\(relationship.name)")
                case .inverseForeignKey(let other, let column):
                    #expect(tables[other]?.contains(column) == true, "\(fixture.name): \(other).\(column)")
                case .joinTable(let name, let source, let target):
                    #expect(tables[name]?.isSuperset(of: [source, target]) == true, "\(fixture.name): \(name)(\(source), \(target))")
                }
            }
        }
    }
}

@Suite("Core Data stores with persistent history")
struct HistoryTrackingTests {
    @Test("A store with history tables opened with tracking off reads, and refuses saves; as stored, it writes history")
    func aStoreWithHistoryTrackingOffRefusesSaves() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        // Only one of the three tables: the store gets the others when it writes history.
        try SQLiteConnection(path: file.path).execute("CREATE TABLE ATRANSACTION (Z_PK INTEGER PRIMARY KEY)")
        do {
            let store = try SQLiteStore(url: file, historyTracking: .off)
            let context = ObjectContext(store: store)
            let employee = try #require(try context.fetch(FetchRequest(entityName: "Employee")).first)
            try employee.setValue(.int(77), forKey: "age")
            let error = #expect(throws: StoreError.self) { try context.save() }
            #expect(error.map { "\($0)" }?.contains("persistent history") == true)
            #expect(store.writesRefused != nil)
        }
        try SQLiteConnection(path: file.path).execute("DROP TABLE ATRANSACTION")
        try SQLiteConnection(path: file.path).execute("""
            CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB )
            """)
        let store = try SQLiteStore(url: file)
        #expect(store.writesRefused == nil && store.writesPersistentHistory)
        let context = ObjectContext(store: store)
        let employee = try #require(try context.fetch(FetchRequest(entityName: "Employee")).first)
        try employee.setValue(.int(77), forKey: "age")
        try context.save()
        #expect(try store.persistentHistory().first?.changes.map(\.updatedProperties) == [["age"]])
    }
}

extension CoreDataLayoutTests {
    @Test func orderedRelationshipsReadInCoreDataOrder() throws {
        guard let fixture = CoreDataFixture.all.first(where: { $0.name == "bsk-bookmarks-v5" }) else { return }
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try SQLiteStore(url: url, readOnly: true)
        let entity = try #require(store.model.entity(named: "BookmarkEntity"))
        #expect(store.schema.orderKey(try #require(entity.relationship(named: "parent")), of: entity) == "Z_FOK_PARENT")
        let context = ObjectContext(store: store)
        var checked = 0
        for folder in try context.fetch(FetchRequest(entityName: "BookmarkEntity", predicate: "children.@count > 1")) {
            let expected = try store.withConnection {
                try $0.query("SELECT Z_PK FROM ZBOOKMARKENTITY WHERE ZPARENT = ?1 ORDER BY Z_FOK_PARENT", [.integer(folder.objectID.primaryKey)])
            }.compactMap { if case .integer(let key) = $0[0] { key } else { nil } }
            #expect(try folder.objects(forKey: "children").map(\.objectID.primaryKey) == expected)
            checked += 1
        }
        #expect(checked > 0)
    }
}

extension CoreDataStoreTests {
    @Test func aTransientAttributeInAStoresPredicateIsAnErrorWithAHint() throws {
        guard let fixture = CoreDataFixture.all.first(where: { $0.name == "coredataplus-samplemodel-v1" }) else { return }
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let context = ObjectContext(store: try SQLiteStore(url: url, readOnly: true))
        let error = #expect(throws: StoreError.self) {
            try context.fetch(FetchRequest(entityName: "Person", predicate: "firstName != nil AND isDriving == NO"))
        }
        let message = error.map { "\($0)" } ?? ""
        #expect(message.contains("'isDriving' is a transient attribute") && message.contains("in memory"), "\(message)")
        // Fetched objects have the attribute's default, and memory can filter on it.
        let people = try context.fetch(FetchRequest(entityName: "Person"))
        #expect(!people.isEmpty && people.allSatisfy { $0["isDriving"] == .bool(false) })
    }
}

@Suite("Writing to Core Data stores", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct CoreDataWriteTests {
    /// A value of an attribute's type, unique per call (uniqueness constraints).
    static func sample(_ type: AttributeType, _ n: Int) -> PredicateValue? {
        switch type {
        case .integer16, .integer32, .integer64: .int(Int64(n % 100))
        case .double, .float, .decimal: .double(Double(n) / 4)
        case .string, .uri: .string("sift-\(n)-\(UUID().uuidString)")
        case .boolean: .bool(n % 2 == 0)
        case .date: .date(Date(timeIntervalSinceReferenceDate: Double(700_000_000 + n)))
        case .binary, .transformable: .data(Data([0x73, 0x69, UInt8(n % 256)]))
        case .uuid: .uuid(UUID())
        case .objectID, .composite, .undefined: nil
        }
    }

    @Test("Inserting, linking, updating and deleting in every store Core Data wrote keeps its invariants",
          arguments: CoreDataFixture.all)
    func writes(_ fixture: CoreDataFixture) throws {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = fixture.name == "restkit-rktwittercoredata-seed"
            ? try SQLiteStore(url: url, model: DataModel(contentsOf: fixture.modelURL)) : try SQLiteStore(url: url)
        let context = ObjectContext(store: store)
        let model = store.model
        var n = 0
        var inserted: [(ManagedObject, [String: PredicateValue])] = []
        for entity in model.entities where !entity.isAbstract {
            let existing = try context.fetch(FetchRequest(entityName: entity.name))
            // An update of the first object's first stored string.
            if let first = existing.first, let text = entity.attributes.first(where: { $0.type == .string && $0.isStored && $0.derivation == nil }) {
                try first.setValue(.string("updated by Sift"), forKey: text.name)
            }
            let object = try context.insert(entity.name)
            var values: [String: PredicateValue] = [:]
            for attribute in entity.attributes where attribute.isStored && attribute.derivation == nil {
                n += 1
                guard let value = Self.sample(attribute.type, n) else { continue }
                try object.setValue(value, forKey: attribute.name)
                values[attribute.name] = value
            }
            for relationship in entity.relationships where !relationship.isTransient {
                guard let target = try context.fetch(FetchRequest(entityName: relationship.destination)).last(where: { !$0.isInserted })
                else { continue }
                if relationship.isToMany {
                    try object.addObject(target, forKey: relationship.name)
                } else {
                    try object.setObject(target, forKey: relationship.name)
                }
            }
            inserted.append((object, values))
        }
        // A delete, with the deletion rules of its relationships.
        if let entity = model.entities.last(where: { !$0.isAbstract }),
           let victim = try context.fetch(FetchRequest(entityName: entity.name)).first(where: { !$0.isInserted }) {
            try context.delete(victim)
        }
        let historyBefore = store.writesPersistentHistory ? try store.persistentHistory() : []
        try context.save()
        if store.writesPersistentHistory {
            // The save is one more transaction: an insert for each object inserted, the earlier ones intact.
            let history = try store.persistentHistory()
            #expect(history.count == historyBefore.count + 1)
            #expect(history.dropLast().map(\.changes.count) == historyBefore.map(\.changes.count))
            let changes = try #require(history.last).changes
            for (object, _) in inserted where !object.isDeleted {
                #expect(changes.contains { $0.changeType == .insert && $0.objectID == object.objectID }, "\(fixture.name)")
            }
        }
        #expect(!inserted.isEmpty && inserted.allSatisfy { $0.0.objectID.primaryKey > 0 })
        #expect(CoreDataInvariants.violations(of: store) == [], "\(fixture.name)")

        // Read back from the file by a store opened afresh.
        let reopened = fixture.name == "restkit-rktwittercoredata-seed"
            ? try SQLiteStore(url: url, model: model) : try SQLiteStore(url: url)
        let reader = ObjectContext(store: reopened)
        for (object, values) in inserted where !object.isDeleted {
            let copy = reader.object(for: object.objectID)
            #expect(copy.entity.name == object.entity.name)
            for (key, value) in values where copy[key] != value {
                Issue.record("\(fixture.name): \(object.entity.name).\(key) reads \(copy[key] ?? .null), not \(value)")
            }
        }
        #expect(CoreDataInvariants.violations(of: reopened) == [], "\(fixture.name)")
    }
}
