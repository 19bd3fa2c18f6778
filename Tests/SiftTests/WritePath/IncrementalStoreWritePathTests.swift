// An incremental store on a backend of one's own: a "server" behind a
// request counter (an SQLite store of its own, with text references that
// start with a digit), answering only what its capabilities say. With a
// capability set of only `==` on one attribute, with none and with
// everything, the store answers every corpus case as expected; prefetching
// costs 1 + k requests; saves, cascades and conflicts under the merge
// policies end as they do on a built-in store; a failing backend is a typed
// error that leaves the context's changes to retry; several contexts on
// several threads save through it (the thread sanitizer runs this suite).

import Foundation
import Sift
import SiftStore
import Synchronization
import Testing

/// A backend whose rows live in an SQLite store of its own, known by their keys as text.
final class ServerBackend: IncrementalStoreBackend, Sendable {
    typealias Reference = String

    let server: SQLiteStore
    let capabilities: BackendCapabilities
    let requests = Mutex<[String]>([])
    let failing = Mutex(false)
    let wantsRegistrations: Bool
    let identifier = "STORE-1"
    /// What contexts hold, by reference: registrations minus unregistrations.
    let held = Mutex<[String: Int]>([:])

    init(_ dataSet: DataSet = Company.dataSet, capabilities: BackendCapabilities, wantsRegistrations: Bool = false) throws {
        server = try SQLiteStore(inMemoryWith: dataSet.model)
        try server.importDataSet(dataSet)
        self.capabilities = capabilities
        self.wantsRegistrations = wantsRegistrations
    }

    func loadMetadata() throws -> BackendMetadata {
        try note("metadata")
        return BackendMetadata(identifier: identifier, modelVersionHash: server.model.versionHash)
    }

    func objectsRegistered(_ objects: [(entityName: String, reference: String)]) {
        held.withLock { held in for object in objects { held["\(object.entityName) \(object.reference)", default: 0] += 1 } }
    }

    func objectsUnregistered(_ objects: [(entityName: String, reference: String)]) {
        held.withLock { held in
            for object in objects {
                let key = "\(object.entityName) \(object.reference)"
                held[key] = (held[key] ?? 0) > 1 ? (held[key] ?? 0) - 1 : nil
            }
        }
    }

    var requestCount: Int { requests.withLock { $0.count } }

    private func note(_ request: String) throws {
        requests.withLock { $0.append(request) }
        if failing.withLock({ $0 }) { throw CocoaError(.fileReadUnknown) }
    }

    func primaryKey(for reference: String) -> Int64? { Int64(reference) }

    func reference(forPrimaryKey primaryKey: Int64) -> String? { String(primaryKey) }

    private func row(_ node: RowNode) -> BackendRow<String> {
        let entity = server.model.entities[node.id.entity]
        var row = BackendRow<String>(entityName: entity.name, reference: String(node.id.primaryKey), version: node.version)
        for attribute in entity.attributes where node.values[attribute.slot] != .null { row.values[attribute.name] = node.values[attribute.slot] }
        for relationship in entity.relationships where !relationship.isToMany {
            if let target = node.toOne[relationship.slot] { row.toOne[relationship.name] = String(target) }
        }
        return row
    }

    func fetch(_ fetch: BackendFetch) throws -> [BackendRow<String>] {
        try note("fetch \(fetch.entityName)")
        var request = FetchRequest(entityName: fetch.entityName)
        request.predicate = fetch.predicate.map { .bound($0) }
        request.sortDescriptors = fetch.sortDescriptors ?? []
        request.fetchOffset = fetch.offset
        request.fetchLimit = fetch.limit
        return try server.rows(for: server.compile(request)).map(row)
    }

    func count(_ fetch: BackendFetch) throws -> Int? {
        try note("count \(fetch.entityName)")
        var request = FetchRequest(entityName: fetch.entityName)
        request.predicate = fetch.predicate.map { .bound($0) }
        return try server.count(for: server.compile(request))
    }

    func rows(_ references: [String], entityName: String) throws -> [BackendRow<String>] {
        try note("rows \(entityName) \(references.count)")
        guard let entity = server.model.entity(named: entityName) else { return [] }
        return try server.rows(entity, keys: references.compactMap { Int64($0) }).map(row)
    }

    func destinations(of relationship: String, entityName: String, owners: [String]) throws -> [String: [String]] {
        try note("destinations \(entityName).\(relationship) \(owners.count)")
        guard let entity = server.model.entity(named: entityName), let link = entity.relationship(named: relationship) else { return [:] }
        let links = try server.links(link, of: owners.compactMap { Int64($0) }, entity: entity, loadingRows: false)
        return Dictionary(uniqueKeysWithValues: links.map { (String($0.key), $0.value.map(String.init)) })
    }

    func save(_ changes: BackendChanges<String>) throws -> BackendSaveOutcome<String> {
        try note("save")
        let model = server.model
        func key(_ object: BackendObject<String>) -> Int64 {
            switch object {
            case .existing(let reference): Int64(reference) ?? 0
            case .inserted(let temporary): temporary
            }
        }
        func row(_ entity: Entity, _ values: [String: PredicateValue], _ toOne: [String: BackendObject<String>]) -> ([PredicateValue], [Int64?]) {
            (entity.attributes.map { values[$0.name] ?? .null },
             entity.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }.map { toOne[$0.name].map(key) })
        }
        var request = SaveRequest()
        for insert in changes.inserts {
            guard let entity = model.entity(named: insert.entityName) else { continue }
            let (values, toOne) = row(entity, insert.values, insert.toOne)
            request.inserts.append(.init(id: ObjectID(entity: entity, primaryKey: insert.temporaryID), values: values, toOne: toOne))
        }
        for update in changes.updates {
            guard let entity = model.entity(named: update.entityName) else { continue }
            let (values, toOne) = row(entity, update.values, update.toOne)
            request.updates.append(.init(id: ObjectID(entity: entity, primaryKey: Int64(update.reference) ?? 0),
                                         expectedVersion: update.expectedVersion, attributeSlots: Array(values.indices),
                                         toOneSlots: Array(toOne.indices), values: values, toOne: toOne))
        }
        for delete in changes.deletes {
            guard let entity = model.entity(named: delete.entityName) else { continue }
            request.deletes.append(.init(id: ObjectID(entity: entity, primaryKey: Int64(delete.reference) ?? 0),
                                         expectedVersion: delete.expectedVersion))
        }
        for link in changes.links {
            guard let entity = model.entity(named: link.entityName), let relationship = entity.relationship(named: link.relationship) else { continue }
            request.links.append(.init(owner: ObjectID(entity: entity, primaryKey: key(link.owner)), relationship: relationship,
                                       added: link.added.map(key), removed: link.removed.compactMap { Int64($0) }))
        }
        // The server applies the delete rules itself; a row whose link is cleared stays (the merge policy kept it).
        for clear in changes.clears {
            guard let entity = model.entity(named: clear.entityName) else { continue }
            for row in clear.rows { request.kept.insert(ObjectID(entity: entity, primaryKey: Int64(row) ?? 0)) }
        }
        switch try server.apply(request) {
        case .committed(let result):
            var versions: [String: Int64] = [:]
            for node in result.nodes.values { versions[String(node.id.primaryKey)] = node.version }
            return .saved(versions: versions, references: result.keys.mapValues(String.init))
        case .conflicts(let conflicts):
            return .conflicts(conflicts.map { conflict in
                (String(conflict.id.primaryKey), model.entities[conflict.id.entity].name, conflict.current.map(self.row))
            })
        }
    }
}

@Suite("Incremental store")
struct IncrementalStoreWritePathTests {
    static let capabilitySets: [(String, BackendCapabilities)] = [
        ("nothing", .nothing),
        ("name == only", .comparisons(of: ["name"], operators: [.equalTo])),
        ("everything", .everything),
    ]

    @Test("Every corpus case answers as expected, whatever the backend evaluates", arguments: [0, 1, 2])
    func corpus(_ set: Int) throws {
        let backend = try ServerBackend(capabilities: Self.capabilitySets[set].1)
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        var checked = 0
        for testCase in CorpusCase.all {
            var request = FetchRequest(entityName: testCase.entity, predicate: testCase.predicate, arguments: testCase.args ?? [])
            request.includesPendingChanges = false
            let context = ObjectContext(store: store)
            let ids: [Int64]
            do {
                ids = try context.fetchObjectIDs(request).map(\.primaryKey)
            } catch {
                guard case .invalidPredicate(let compileError, _) = error else { throw error }
                #expect(testCase.expect == .error(compileError.kind), "\(testCase.predicate)")
                continue
            }
            #expect(testCase.expect == .matches(ids), "\(Self.capabilitySets[set].0): \(testCase.predicate)")
            checked += 1
        }
        #expect(checked > 100)
    }

    @Test("The backend receives only the terms it accepts; sorting and paging move to memory with a residual")
    func split() throws {
        let backend = try ServerBackend(capabilities: .comparisons(of: ["name"], operators: [.equalTo]))
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        let context = ObjectContext(store: store)
        var request = FetchRequest(entityName: "Employee", predicate: "age > 30 AND department.name == 'Sales'",
                                   sortDescriptors: [FetchSortDescriptor("age", ascending: false)])
        request.fetchLimit = 2
        let reference = ObjectContext(store: try StoreKind.sqlite.make().store)
        let expected = try reference.fetch(request).map(\.objectID.primaryKey)
        #expect(try context.fetch(request).map(\.objectID.primaryKey) == expected)
        let exact = try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'"))
        #expect(exact.count == 1)
        // A count the backend runs whole is its own; one with a residual counts the rows that pass.
        #expect(try context.count(for: FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")) == 1)
        #expect(backend.requests.withLock { $0.last } == "count Employee")
        #expect(try context.count(for: FetchRequest(entityName: "Employee", predicate: "age > 30")) == reference.count(for: FetchRequest(entityName: "Employee", predicate: "age > 30")))
        #expect(backend.requests.withLock { $0.last } == "fetch Employee")
    }

    @Test("Prefetching costs 1 + k requests; faults fire in batches")
    func requestCounts() throws {
        let backend = try ServerBackend(capabilities: .everything)
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        var request = FetchRequest(entityName: "Employee")
        request.relationshipKeyPathsForPrefetching = ["department", "tags"]
        let context = ObjectContext(store: store)
        let before = backend.requestCount
        let employees = try context.fetch(request)
        for employee in employees {
            _ = try employee.object(forKey: "department")?.value(forKey: "name")
            _ = try employee.objects(forKey: "tags").map { try $0.value(forKey: "name") }
        }
        let prefetched = backend.requestCount - before
        #expect(employees.count == 60)   // the fetch, the departments by key, the tag links, the tags by key: 1 + 3, not 1 + 60
        #expect(prefetched == 4, "\(backend.requests.withLock { $0 })")   // the fetch, then per key path its links and rows

        // A batched fetch: the rows come with the one fetch request, and every fault fires from the row cache.
        let fresh = ObjectContext(store: try IncrementalStore(backend: backend, model: Company.dataSet.model))
        var batched = FetchRequest(entityName: "Employee")
        batched.fetchBatchSize = 20
        let start = backend.requestCount
        let all = try fresh.fetch(batched)
        for employee in all { _ = try employee.value(forKey: "name") }
        #expect(backend.requestCount - start == 1, "\(backend.requests.withLock { $0.suffix(8) })")
    }

    @Test("Saves, cascades and links end as on a built-in store; conflicts go through the merge policy")
    func saves() throws {
        let backend = try ServerBackend(capabilities: .comparisons(of: ["name"], operators: [.equalTo]))
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        let builtIn = try StoreKind.sqlite.make()
        for target in [store as any PersistentStore, builtIn.store] {
            let context = ObjectContext(store: target)
            let sales = try #require(try context.fetch(FetchRequest(entityName: "Department", predicate: "name == 'Sales'")).first)
            let hire = try context.insert("Employee")
            try hire.setValue("Dee", forKey: "name")
            try hire.setValue(35, forKey: "age")
            try hire.setValue(50_000.0, forKey: "salary")
            try hire.setValue(false, forKey: "isManager")
            try hire.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "startDate")
            try hire.setObject(sales, forKey: "department")
            let tag = try #require(try context.fetch(FetchRequest(entityName: "Tag")).first)
            try hire.addObject(tag, forKey: "tags")
            try context.save()
            let legal = try #require(try context.fetch(FetchRequest(entityName: "Department", predicate: "name == 'Legal'")).first)
            try context.delete(legal)
            try context.save()
        }
        #expect(try StoreCopyTests.contents(backend.server) == StoreCopyTests.contents(builtIn.store))

        // Two contexts change one row: the second conflicts; objectTrump keeps its change.
        let first = ObjectContext(store: store)
        let second = ObjectContext(store: store)
        let alice = FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")
        let mine = try #require(try first.fetch(alice).first)
        let theirs = try #require(try second.fetch(alice).first)
        #expect(theirs["age", as: Int.self] == 58)
        try mine.setValue(59, forKey: "age")
        try first.save()
        try theirs.setValue("Al", forKey: "nickname")
        #expect { try second.save() } throws: { ($0 as? StoreError)?.code == .conflicts }
        second.mergePolicy = .objectTrump
        try second.save()
        let reader = ObjectContext(store: try IncrementalStore(backend: backend, model: Company.dataSet.model))
        let saved = try #require(try reader.fetch(alice).first)
        #expect(saved["age", as: Int.self] == 59 && saved["nickname", as: String.self] == "Al")

        // A failing backend is a typed error, and the context keeps its change to retry.
        try mine.setValue(60, forKey: "age")
        backend.failing.withLock { $0 = true }
        #expect { try first.save() } throws: { ($0 as? StoreError)?.code == .server }
        backend.failing.withLock { $0 = false }
        first.mergePolicy = .objectTrump
        try first.save()
        #expect(try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee", predicate: "age == 60")) >= 1)
    }

    @Test("References are text that starts with a digit; object IDs have Core Data's URI form")
    func references() throws {
        let backend = try ServerBackend(capabilities: .nothing)
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        let context = ObjectContext(store: store)
        let alice = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        #expect(store.reference(for: alice.objectID) == "101")
        #expect(store.objectID(for: "101", entityName: "Employee") == alice.objectID)
        #expect { try IncrementalStore(backend: backend, model: DataModel([Entity("Note", attributes: [Attribute("text", .string)])])) }
            throws: { ($0 as? StoreError)?.code == .modelMismatch }
        let uri = try #require(store.uri(for: alice.objectID))
        #expect(uri.absoluteString == "x-coredata://STORE-1/Employee/p101")
        #expect(store.objectID(for: uri) == alice.objectID)
        #expect(context.object(for: try #require(store.objectID(for: uri))) === alice)
        #expect(store.objectID(for: try #require(URL(string: "x-coredata://OTHER/Employee/p101"))) == nil)
    }

    @Test("The backend hears which objects contexts hold, when it asks to")
    func registrations() throws {
        let backend = try ServerBackend(capabilities: .nothing, wantsRegistrations: true)
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        do {
            let context = ObjectContext(store: store)
            let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'"))
            #expect(sales.count == 5)
            for employee in sales { _ = employee["name", as: String.self] }        // the objects take their rows
            #expect(backend.held.withLock { $0.keys.filter { $0.hasPrefix("Employee ") }.count } == 5)
            withExtendedLifetime(context) {}
        }
        #expect(backend.held.withLock { $0.isEmpty })                     // the context is gone: nothing is held
    }

    @Test("The plan says what the backend evaluates and what memory does")
    func plan() throws {
        let store = try IncrementalStore(backend: try ServerBackend(capabilities: .comparisons(of: ["name"], operators: [.equalTo])),
                                     model: Company.dataSet.model)
        var request = FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson' AND age > 30",
                                   sortDescriptors: [FetchSortDescriptor("age")])
        request.fetchLimit = 3
        let plan = try store.plan(request)
        #expect(plan.backend.map { "\($0)" }?.contains("name") == true && plan.memory.map { "\($0)" }?.contains("age") == true)
        #expect(plan.memorySorts && plan.memoryPages)
        #expect(plan.description.hasPrefix("backend: "))
        let everything = try IncrementalStore(backend: try ServerBackend(capabilities: .everything), model: Company.dataSet.model)
        let whole = try everything.plan(request)
        #expect(whole.memory == nil && !whole.memorySorts && !whole.memoryPages)
    }

    @Test("An observer that fetches from inside a save notification does not wait on the save")
    func observerFetches() throws {
        let store = try IncrementalStore(backend: try ServerBackend(capabilities: .nothing), model: Company.dataSet.model)
        let heard = Mutex(-1)
        let observation = store.addObserver { _ in
            let context = ObjectContext(store: store)
            let count = (try? context.count(for: FetchRequest(entityName: "Employee", predicate: "nickname == 'Heard'"))) ?? -2
            heard.withLock { $0 = count }
        }
        defer { observation.cancel() }
        let context = ObjectContext(store: store)
        let alice = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        try alice.setValue("Heard", forKey: "nickname")
        try context.save()
        #expect(heard.withLock { $0 } == 1)
    }

    @Test("Several contexts on several threads save through one store")
    func concurrentContexts() async throws {
        let backend = try ServerBackend(capabilities: .comparisons(of: ["name"], operators: [.equalTo]))
        let store = try IncrementalStore(backend: backend, model: Company.dataSet.model)
        let reader = ObjectContext(store: store)                   // a context outlives the objects read through it
        let names = try reader.fetch(FetchRequest(entityName: "Employee")).compactMap { $0["name", as: String.self] }
        #expect(names.count == 60)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for name in names.prefix(12) {
                group.addTask {
                    let context = ObjectContext(store: store)
                    try await context.perform { context in
                        let employee = try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(name)]))
                        try employee.first?.setValue("x", forKey: "nickname")
                        try context.save()
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(try ObjectContext(store: backend.server).count(for: FetchRequest(entityName: "Employee", predicate: "nickname == 'x'")) == 12)
        #expect(try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee", predicate: "nickname == 'x'")) == 12)
    }
}

@Suite("Conflict detection for unchanged objects")
struct DetectConflictsWritePathTests {
    @Test("An object marked with detectConflicts(for:) conflicts when another context changed it, on every store",
          arguments: StoreKind.allCases)
    func lockedObjects(_ kind: StoreKind) throws {
        let store = try kind.make()
        let mine = store.context()
        let theirs = store.context()
        let sales = FetchRequest(entityName: "Department", predicate: "name == 'Sales'")
        let alice = FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")
        let department = try #require(try mine.fetch(sales).first)
        let employee = try #require(try mine.fetch(alice).first)
        try mine.detectConflicts(for: department)
        #expect(!mine.hasChanges)

        let changed = try #require(try theirs.fetch(sales).first)
        try changed.setValue("Sales & Marketing", forKey: "name")
        try theirs.save()

        try employee.setValue(91_000.0, forKey: "salary")
        #expect { try mine.save() } throws: { ($0 as? StoreError)?.code == .conflicts }
        mine.mergePolicy = .storeTrump
        try mine.save()
        let reader = store.context()
        #expect(try reader.fetch(alice).first?["salary", as: Double.self] == 91_000)
        #expect(try reader.fetch(FetchRequest(entityName: "Department", predicate: "name == 'Sales & Marketing'")).count == 1)

        // Unmarked, the same sequence saves; marked alone, a save checks just that object.
        let third = store.context()
        let fourth = store.context()
        let renamed = FetchRequest(entityName: "Department", predicate: "name == 'Sales & Marketing'")
        let seen = try #require(try third.fetch(renamed).first)
        try third.detectConflicts(for: seen)
        let other = try #require(try fourth.fetch(renamed).first)
        try other.setValue("Sales", forKey: "name")
        try fourth.save()
        #expect { try third.save() } throws: { ($0 as? StoreError)?.code == .conflicts }
        third.rollback()
        try third.save()                                              // nothing marked any more: nothing to check
    }
}
