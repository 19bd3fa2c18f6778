// The store on a real PostgreSQL server, beyond the write-path suites (which
// run on it as one more store kind): two stores on the same tables, as two
// processes would have them — their saves reach each other through
// LISTEN/NOTIFY, their conflicts are found; many writers at once get
// distinct keys; a store reopens with the model it was made for and refuses
// another; canonical attributes' folded comparisons run on the server.
//
// The server is the one SIFT_POSTGRES_URL names (.ci/run starts one);
// without it these tests are skipped, with that reason shown.

import Foundation
import Sift
import SiftPostgres
import SiftStore
import Synchronization
import Testing

@Suite("PostgreSQL store", .enabled(if: StoreKind.postgresURL != nil,
                                    "SIFT_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresStoreTests {
    /// A store with the company in a new schema, and a second store on the
    /// same schema: another process, as far as the first knows.
    func twoStores() throws -> (TestStore, PostgresStore) {
        let first = try StoreKind.postgres.make()
        let schemaName = try #require((first.store as? PostgresStore)?.schemaName)
        let second = try PostgresStore(url: StoreKind.postgresURL!, schemaName: schemaName, maximumConnections: 2)
        return (first, second)
    }

    func employee(_ context: ObjectContext, _ id: Int64) -> ManagedObject {
        context.object(for: ObjectID(entity: Company.model.entity(named: "Employee")!.index, primaryKey: id))
    }

    /// Waits (up to 10 seconds) until `condition` holds.
    func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<200 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        return condition()
    }

    @Test("Another process's save reaches this store's observers, and a context merges it")
    func notificationsBetweenStores() async throws {
        let (first, second) = try twoStores()
        defer { second.close() }
        let here = first.context()
        let alice = employee(here, 101)
        #expect(try alice.value(forKey: "age") == 58)
        let heard = Mutex<[StoreChanges]>([])
        let observation = first.store.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }

        let there = ObjectContext(store: second)
        try employee(there, 101).setValue(61, forKey: "age")
        try there.delete(employee(there, 102))
        let newcomer = try there.insert("Department")
        try newcomer.setValue("Research", forKey: "name")
        try newcomer.setValue(5, forKey: "budget")
        try there.save()

        #expect(await eventually { !heard.withLock { $0.isEmpty } })
        // One save, one announcement.
        #expect(heard.withLock { $0.count } == 1)
        let changes = try #require(heard.withLock { $0.first })
        #expect(changes.updated.contains(alice.objectID))
        #expect(changes.deleted.map(\.primaryKey) == [102])
        #expect(changes.inserted.contains(newcomer.objectID))
        try here.mergeChanges(from: changes)
        #expect(try alice.value(forKey: "age") == 61)
        #expect(try here.count(for: FetchRequest(entityName: "Department", predicate: "name == 'Research'")) == 1)
        // Its own saves are not announced twice: once, by the store itself.
        heard.withLock { $0.removeAll() }
        try alice.setValue(62, forKey: "age")
        try here.save()
        try await Task.sleep(for: .milliseconds(300))
        #expect(heard.withLock { $0.count } == 1)
    }

    @Test("A large save's notifications arrive whole, in several payloads")
    func largeSavesAreAnnouncedWhole() async throws {
        let (first, second) = try twoStores()
        defer { second.close() }
        let heard = Mutex<Set<ObjectID>>([])
        let observation = first.store.addObserver { changes in heard.withLock { $0.formUnion(changes.inserted) } }
        defer { observation.cancel() }
        let there = ObjectContext(store: second)
        for i in 0..<700 {
            let department = try there.insert("Department")
            try department.setValue(.string("D\(i)"), forKey: "name")
            try department.setValue(.int(Int64(i)), forKey: "budget")
        }
        try there.save()
        #expect(await eventually { heard.withLock { $0.count } == 700 })
    }

    @Test("A stale save from another process is a conflict, resolved by the merge policy", arguments: [
        MergePolicy.error, .storeTrump, .objectTrump, .rollback,
    ])
    func conflictsBetweenStores(_ policy: MergePolicy) throws {
        let (first, second) = try twoStores()
        defer { second.close() }
        let mine = first.context()
        mine.mergePolicy = policy
        let alice = employee(mine, 101)
        _ = try alice.value(forKey: "age")
        let theirs = ObjectContext(store: second)
        try employee(theirs, 101).setValue(70, forKey: "age")
        try theirs.save()
        try alice.setValue(40, forKey: "age")
        if policy == .error {
            let error = try #require(throws: StoreError.self) { try mine.save() }
            guard case .conflicts(let conflicts) = error else {
                Issue.record("not a conflict: \(error)")
                return
            }
            #expect(conflicts.count == 1)
            return
        }
        try mine.save()
        first.rowCache.removeAll()
        let check = first.context()
        let stored = try employee(check, 101).value(forKey: "age")
        #expect(stored == (policy == .objectTrump ? 40 : 70))
    }

    @Test("Many writers on separate stores at once: every insert gets its own key, nothing is lost")
    func manyWritersGetDistinctKeys() async throws {
        let (first, _) = try twoStores()
        let schemaName = try #require((first.store as? PostgresStore)?.schemaName)
        let writers = 4
        let saves = 10
        let perSave = 5
        let keys = try await withThrowingTaskGroup(of: [Int64].self) { group in
            for writer in 0..<writers {
                group.addTask {
                    let store = try PostgresStore(url: StoreKind.postgresURL!, schemaName: schemaName, maximumConnections: 1,
                                                  observesOtherProcesses: false)
                    defer { store.close() }
                    let context = ObjectContext(store: store)
                    var keys: [Int64] = []
                    for save in 0..<saves {
                        var inserted: [ManagedObject] = []
                        for i in 0..<perSave {
                            let department = try context.insert("Department")
                            try department.setValue(.string("w\(writer)-\(save)-\(i)"), forKey: "name")
                            try department.setValue(.int(Int64(i)), forKey: "budget")
                            inserted.append(department)
                        }
                        try context.save()
                        keys += inserted.map(\.objectID.primaryKey)
                        await Task.yield()
                    }
                    return keys
                }
            }
            var all: [Int64] = []
            for try await keys in group { all += keys }
            return all
        }
        #expect(keys.count == writers * saves * perSave)
        #expect(Set(keys).count == keys.count)
        let count = try first.context().count(for: FetchRequest(entityName: "Department", predicate: "name BEGINSWITH 'w'"))
        #expect(count == writers * saves * perSave)
    }

    @Test("A store reopens with the model it was made for, and refuses another")
    func reopening() throws {
        let first = try StoreKind.postgres.make()
        let schemaName = try #require((first.store as? PostgresStore)?.schemaName)
        let reopened = try PostgresStore(url: StoreKind.postgresURL!, schemaName: schemaName, observesOtherProcesses: false)
        defer { reopened.close() }
        #expect(reopened.model.versionHash == Company.model.versionHash)
        #expect(try ObjectContext(store: reopened).count(for: FetchRequest(entityName: "Employee")) == 60)
        let error = try #require(throws: StoreError.self) {
            try PostgresStore(url: StoreKind.postgresURL!, model: PlannerTests.canonicalModel, schemaName: schemaName,
                              observesOtherProcesses: false)
        }
        guard case .modelMismatch = error else {
            Issue.record("not a model mismatch: \(error)")
            return
        }
        let noServer = try #require(throws: StoreError.self) {
            try PostgresStore(url: "postgres://sift@127.0.0.1:1/none", model: Company.model)
        }
        #expect("\(noServer)".contains("cannot connect"))
        #expect(throws: StoreError.self) { try PostgresStore(url: "http://example.com", model: Company.model) }
    }

    @Test("Folded comparisons of canonical attributes run on the server, through the companion columns", arguments: [
        "name ==[cd] 'renee roux'", "name BEGINSWITH[cd] 'emile'", "name ==[c] 'alice anderson'",
        "name IN[cd] {'jose garcia', 'zoe zimmermann'}",
    ])
    func companionColumns(_ text: String) throws {
        let store = TestStore(try StoreKind.makePostgres(PlannerTests.canonicalModel, observesOtherProcesses: false), file: nil)
        let postgres = try #require(store.store as? PostgresStore)
        try postgres.importDataSet(try PlannerTests.canonicalDataSet())
        let request = FetchRequest(entityName: "Employee", predicate: text)
        let plan = try postgres.plan(request)
        #expect(plan.residual == nil, "\(plan)")
        let query = try postgres.sqlQuery(for: request)
        #expect(query.sql.contains("Z_FOLD"))
        let ids = try store.context().fetchObjectIDs(request).map(\.primaryKey)
        let bound = try PredicateCompiler(model: Company.model).bind(text, entity: "Employee")
        #expect(ids == (try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey)))
        #expect(!ids.isEmpty)
        #expect(try postgres.queryPlan(query).contains { $0.contains("Scan") })
    }

    @Test("MATCHES in the shared subset runs on the server and selects what ICU selects, line breaks and all")
    func regularExpressionsAgree() throws {
        let model = try DataModel([Entity("Line", attributes: [Attribute("text", .string, optional: true)])])
        let subjects: [String?] = [
            "", "a", "abc", "ABC", "a\nc", "a\rc", "a\u{85}c", "a\u{2028}c", "a\u{2029}c", "a\u{0B}c", "a\u{0C}c", "a\tc",
            "abc\n", "\nabc", "é", "e\u{301}", "😀", "a😀c", "aaab", "aab", "ab", "xyz9", "a.c", "a*[", "cde", "abe", "ace", nil,
        ]
        let postgres = TestStore(try StoreKind.makePostgres(model, observesOtherProcesses: false), file: nil)
        let sqlite = TestStore(try SQLiteStore(inMemoryWith: model), file: nil)
        for store in [postgres, sqlite] {
            let context = store.context()
            for subject in subjects {
                try context.insert("Line").setValue(subject.map(PredicateValue.string) ?? .null, forKey: "text")
            }
            try context.save()
        }
        let patterns = [
            "a.c", "...", ".*", "a.*", "[a-z]+", "[^0-9]*", "(ab|cd)e", "a{2,5}b?", "a+?b", "a\\.c", "a\\*\\[", "é", ".",
            ".{2}", "[A-Z]+", "a\\nc", "[^a]bc", "(?:a|b)c", "abc", "[a-z]{3}[0-9]", "a.+", "(a|b|c)(b|c)", "e.", "a[^b]c",
        ]
        let pg = try #require(postgres.store as? PostgresStore)
        let pgContext = postgres.context()
        let sqliteContext = sqlite.context()
        for pattern in patterns {
            for text in ["text MATCHES %@", "NOT (text MATCHES %@)"] {
                let request = FetchRequest(entityName: "Line", predicate: text, arguments: [.string(pattern)],
                                           sortDescriptors: [FetchSortDescriptor("text")])
                #expect(try pg.plan(request).residual == nil, "\(pattern) runs in memory")
                let onServer = try pgContext.fetch(request).map { try $0.value(forKey: "text") }
                let inMemory = try sqliteContext.fetch(request).map { try $0.value(forKey: "text") }
                #expect(onServer == inMemory, "\(text) with \(pattern)")
            }
        }
    }

    @Test("Nil sorts first ascending and last descending, as on SQLite and in memory")
    func nilSortsFirst() throws {
        let postgres = try StoreKind.postgres.make()
        let here = postgres.context()
        let there = ObjectContext(store: CompanyStore.store)
        for ascending in [true, false] {
            let request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("nickname", ascending: ascending)])
            let onServer = try here.fetch(request).map(\.objectID.primaryKey)
            #expect(onServer == (try there.fetch(request).map(\.objectID.primaryKey)))
            #expect(try here.fetch(request).first?.value(forKey: "nickname") == (ascending ? .null : "Zed") || !ascending)
        }
        // A case-insensitive key PostgreSQL cannot fold: memory sorts, then offset and limit apply.
        var folded = FetchRequest(entityName: "Employee", predicate: "age > 30",
                                  sortDescriptors: [FetchSortDescriptor("name", caseInsensitive: true)], fetchLimit: 7, fetchOffset: 3)
        let plan = try #require(postgres.store as? PostgresStore).plan(folded)
        #expect(plan.sortKeysInMemory != nil && plan.residual == nil && plan.description.contains("memory sorts"))
        #expect(try here.fetch(folded).map(\.objectID.primaryKey) == (try there.fetch(folded).map(\.objectID.primaryKey)))
        folded.fetchBatchSize = 2
        #expect(try here.fetchObjectIDs(folded) == (try there.fetchObjectIDs(folded)))
    }

    @Test("An import with text PostgreSQL cannot hold is refused by name, and writes nothing")
    func importRefusesNUL() throws {
        let test = TestStore(try StoreKind.makePostgres(Company.model, observesOtherProcesses: false), file: nil)
        let store = try #require(test.store as? PostgresStore)
        let department = try #require(Company.model.entity(named: "Department"))
        let values = department.attributes.map { attribute -> PredicateValue in
            attribute.name == "name" ? .string("a\u{0}b") : (attribute.type.convert(.int(1)) ?? .null)
        }
        let node = RowNode(id: ObjectID(entity: department, primaryKey: 1), values: values,
                           toMany: Array(repeating: [], count: department.toManyCount))
        let error = try #require(throws: StoreError.self) { try store.importNodes([node]) }
        guard case .validation(let failures) = error else {
            Issue.record("not a validation error: \(error)")
            return
        }
        #expect(failures.map(\.property) == ["name"])
        #expect(try test.context().count(for: FetchRequest(entityName: "Department")) == 0)
    }
}
