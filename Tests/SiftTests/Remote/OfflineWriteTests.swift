// Saves made offline through a remote store with a disk cache: kept in the
// cache's queue and seen by the store's own fetches, counted by the status,
// sent in order when the server answers again (an insert then an update of
// the same object, a relationship to an object inserted offline), each
// applied once, conflicts resolved by the saving context's merge policy or
// handed to `offlineSaveRefused` for `.error`; a client killed outright after
// saving offline finds its queue when it opens again.

import Foundation
import Sift
import SiftRemote
import SiftServer
import SiftStore
import Synchronization
import Testing

/// A served company store, a disk cache filled while the server answered, then the server stopped.
private final class OfflineClient: Sendable {
    let served: ServedCompany
    let port: Int
    let cacheURL: URL

    init() throws {
        served = try ServedCompany()
        port = served.server.port
        cacheURL = FileManager.default.temporaryDirectory.appendingPathComponent("sift-offline-\(UUID().uuidString).sqlite")
        // Fill the cache: every employee and department.
        let primer = try served.client { $0.cacheURL = self.cacheURL; $0.followsChanges = false }
        let context = ObjectContext(store: primer)
        _ = try context.fetch(FetchRequest(entityName: "Employee"))
        _ = try context.fetch(FetchRequest(entityName: "Department"))
        served.server.stop()
    }

    /// A store on the cache (the server away, or back).
    func open(refused: (@Sendable (RefusedOfflineSave) -> Void)? = nil, followsChanges: Bool = false) throws -> RemoteStore {
        var configuration = RemoteStoreConfiguration()
        configuration.cacheURL = cacheURL
        configuration.followsChanges = followsChanges
        configuration.offlineSaveRefused = refused
        return try RemoteStore(url: served.url, configuration: configuration)
    }

    /// The server back on its port.
    func restart() throws -> TestServer { try TestServer(serving: served.store, port: port) }

    /// The attribute values of the objects of the served store a predicate selects, read there.
    func stored(_ entity: String, _ predicate: String) throws -> [[String: PredicateValue]] {
        let context = ObjectContext(store: served.store)
        return try context.fetch(FetchRequest(entityName: entity, predicate: predicate)).map { object in
            var values: [String: PredicateValue] = [:]
            for attribute in object.entity.attributes { values[attribute.name] = try object.value(forKey: attribute.name) }
            return values
        }
    }

    /// Changes an employee in the served store directly (as another client would while this one is away).
    func change(_ name: String, _ values: [String: PredicateValue]) throws {
        let context = ObjectContext(store: served.store)
        let employee = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(name)])).first)
        for (key, value) in values { try employee.setValue(value, forKey: key) }
        try context.save()
    }

    deinit {
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cacheURL.path + suffix) }
    }
}

/// Inserts the offline department and employee, then changes the employee's age: two saves.
private func insertOlive(_ context: ObjectContext) throws -> (department: ManagedObject, olive: ManagedObject) {
    let department = try context.insert("Department")
    try department.setValue(.string("Offline"), forKey: "name")
    try department.setValue(.double(1), forKey: "budget")
    let olive = try context.insert("Employee")
    for (key, value) in [("name", PredicateValue.string("Olive Offline")), ("age", .int(30)), ("salary", .double(1)),
                         ("isManager", .bool(false)), ("startDate", .date(Date(timeIntervalSinceReferenceDate: 0)))] {
        try olive.setValue(value, forKey: key)
    }
    try olive.setObject(department, forKey: "department")
    try context.save()
    try olive.setValue(.int(31), forKey: "age")
    try context.save()
    return (department, olive)
}

@Suite("Saves made offline")
struct OfflineWriteTests {
    @Test("Offline, saves wait in the cache, counted by the status and seen by fetches; back online they are sent once, in order")
    func queuedAndSent() async throws {
        try await offThePool { try self.run_queuedAndSent() }
    }

    func run_queuedAndSent() throws {
        let client = try OfflineClient()
        let remote = try client.open()
        #expect(remote.backend.status.waitingSaves == 0)
        guard case .offline = remote.backend.status else {
            Issue.record("\(remote.backend.status)")
            return
        }
        #expect(remote.backend.isWritable)
        let statuses = Mutex<[RemoteStatus]>([])
        remote.backend.addStatusObserver { status in statuses.withLock { $0.append(status) } }
        let context = ObjectContext(store: remote)
        let (department, olive) = try insertOlive(context)
        #expect(remote.backend.status.waitingSaves == 2)
        #expect(statuses.withLock { $0.last?.waitingSaves } == 2)
        // Seen by the store's own fetches, with the relationship to the department inserted offline.
        let fresh = ObjectContext(store: remote)
        let seen = try fresh.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Olive Offline'"))
        #expect(seen.count == 1)
        #expect(try seen.first?.value(forKey: "age") == .int(31))
        #expect(try fresh.count(for: FetchRequest(entityName: "Employee", predicate: "department.name == 'Offline'")) == 1)
        // Nothing reached the server yet.
        #expect(try client.stored("Employee", "name == 'Olive Offline'").isEmpty)

        let server = try client.restart()
        defer { server.stop() }
        #expect(eventually(30) { remote.backend.status == .online })
        #expect(statuses.withLock { $0.contains { if case .sending = $0 { true } else { false } } })
        let stored = try client.stored("Employee", "name == 'Olive Offline'")
        #expect(stored.count == 1)
        #expect(stored.first?["age"] == .int(31))
        #expect(try client.stored("Employee", "name == 'Olive Offline' AND department.name == 'Offline'").count == 1)
        #expect(try client.stored("Department", "name == 'Offline'").count == 1)
        // The objects saved offline go on in the context that saved them: a change is saved to the server.
        try olive.setValue(.int(32), forKey: "age")
        try context.save()
        #expect(try client.stored("Employee", "name == 'Olive Offline'").first?["age"] == .int(32))
        #expect(try client.stored("Employee", "name == 'Olive Offline'").count == 1)
        // A fetch by the department inserted offline finds its employee on the server.
        #expect(try ObjectContext(store: remote).count(for: FetchRequest(entityName: "Employee", predicate: "department == %@",
                                                                         arguments: [.object(ObjectReference(entity: "Department",
                                                                                                             id: department.objectID.primaryKey))])) == 1)
        // Another store on the same cache has nothing left to send.
        let again = try client.open()
        #expect(again.backend.status.waitingSaves == 0)
    }

    @Test("A conflict found when a save made offline is sent: objectTrump writes its changes over the other client's; error hands it to offlineSaveRefused")
    func mergePolicies() async throws {
        try await offThePool { try self.run_mergePolicies() }
    }

    func run_mergePolicies() throws {
        let client = try OfflineClient()
        let refused = Mutex<[RefusedOfflineSave]>([])
        let remote = try client.open { save in refused.withLock { $0.append(save) } }
        for (name, policy, age) in [("Alice Anderson", MergePolicy.objectTrump, Int64(50)), ("CHARLIE CHEN", .error, 60),
                                    ("Zoe Zimmer", .storeTrump, 70)] {
            let context = ObjectContext(store: remote)
            context.mergePolicy = policy
            let employee = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(name)])).first)
            try employee.setValue(.int(age), forKey: "age")
            if policy == .storeTrump { try employee.setValue(.string("Zed"), forKey: "nickname") }
            try context.save()
        }
        // Meanwhile another client changes the same employees on the server.
        try client.change("Alice Anderson", ["age": .int(40), "nickname": .string("Al")])
        try client.change("CHARLIE CHEN", ["age": .int(41)])
        try client.change("Zoe Zimmer", ["age": .int(42)])
        #expect(remote.backend.status.waitingSaves == 3)
        let server = try client.restart()
        defer { server.stop() }
        #expect(eventually(30) { remote.backend.status == .online })
        // objectTrump: the changed age wins, the other client's nickname stays.
        let alice = try client.stored("Employee", "name == 'Alice Anderson'").first ?? [:]
        #expect(alice["age"] == .int(50))
        #expect(alice["nickname"] == .string("Al"))
        // storeTrump: the age the other client changed stays, the nickname only this save changed is written.
        let zoe = try client.stored("Employee", "name == 'Zoe Zimmer'").first ?? [:]
        #expect(zoe["age"] == .int(42))
        #expect(zoe["nickname"] == .string("Zed"))
        // error: nothing written, the refusal heard with the conflict, the cache reads the server's row again.
        let charlie = try client.stored("Employee", "name == 'CHARLIE CHEN'").first ?? [:]
        #expect(charlie["age"] == .int(41))
        let heard = refused.withLock { $0 }
        #expect(heard.count == 1)
        guard case .conflicts(let conflicts)? = heard.first?.error else {
            Issue.record("\(heard)")
            return
        }
        #expect(conflicts.count == 1)
        #expect(conflicts.first?.storeValues?["age"] == .int(41))
        #expect(conflicts.first?.contextValues["age"] == .int(60))
        let cache = try #require(remote.backend.cache)
        #expect(eventually {
            (try? ObjectContext(store: cache).count(for: FetchRequest(entityName: "Employee", predicate: "name == 'CHARLIE CHEN' AND age == 41"))) == 1
        })
    }

    @Test("A client killed outright after saving offline: opened again it finds its queue, and the server back applies each save once, in order")
    func killedClient() async throws {
        try await offThePool { try self.run_killedClient() }
    }

    func run_killedClient() throws {
        let client = try OfflineClient()
        let process = Process()
        process.executableURL = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift")
        process.arguments = ["stress-offline", "--server", client.served.url.absoluteString, "--cache", client.cacheURL.path,
                             "--trump", "Alice Anderson", "--refuse", "CHARLIE CHEN"]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var seen = Data()
        while !seen.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            seen.append(chunk)
        }
        // (SIGKILL: nothing of the process runs after it.)
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        let line = String(decoding: seen, as: UTF8.self)
        #expect(line.contains(#""waiting":4"#), "\(line)")
        #expect(line.contains(#""seen":1"#), "\(line)")
        // Meanwhile another client changes two of the same employees on the server.
        try client.change("Alice Anderson", ["age": .int(40), "nickname": .string("Al")])
        try client.change("CHARLIE CHEN", ["age": .int(41)])
        // Opened again, still offline: the queue is there, and fetches see it.
        let refused = Mutex<[RefusedOfflineSave]>([])
        let remote = try client.open { save in refused.withLock { $0.append(save) } }
        #expect(remote.backend.status.waitingSaves == 4)
        #expect(try ObjectContext(store: remote).count(for: FetchRequest(entityName: "Employee",
                                                                         predicate: "name == 'Olive Offline' AND age == 31")) == 1)
        let server = try client.restart()
        defer { server.stop() }
        #expect(eventually(30) { remote.backend.status == .online })
        // Each save applied once, in order: the insert, then the update of the same object.
        let olive = try client.stored("Employee", "name == 'Olive Offline'")
        #expect(olive.count == 1)
        #expect(olive.first?["age"] == .int(31))
        #expect(try client.stored("Employee", "name == 'Olive Offline' AND department.name == 'Offline'").count == 1)
        #expect(try client.stored("Department", "name == 'Offline'").count == 1)
        #expect(try client.stored("Employee", "name == 'Alice Anderson'").first?["age"] == .int(50))
        #expect(try client.stored("Employee", "name == 'Alice Anderson'").first?["nickname"] == .string("Al"))
        #expect(try client.stored("Employee", "name == 'CHARLIE CHEN'").first?["age"] == .int(41))
        #expect(refused.withLock { $0.count } == 1)
        // Opened once more: nothing is sent again.
        let again = try client.open()
        #expect(again.backend.status.waitingSaves == 0)
        Thread.sleep(forTimeInterval: 0.5)
        #expect(try client.stored("Employee", "name == 'Olive Offline'").count == 1)
    }

    @Test("Without the queue, a save offline fails as retryable and nothing waits")
    func queueTurnedOff() async throws {
        try await offThePool { try self.run_queueTurnedOff() }
    }

    func run_queueTurnedOff() throws {
        let client = try OfflineClient()
        var configuration = RemoteStoreConfiguration()
        configuration.cacheURL = client.cacheURL
        configuration.followsChanges = false
        configuration.queuesOfflineSaves = false
        let remote = try RemoteStore(url: client.served.url, configuration: configuration)
        let context = ObjectContext(store: remote)
        let alice = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        try alice.setValue(.int(44), forKey: "age")
        #expect {
            try context.save()
        } throws: { error in
            (error as? StoreError)?.isRetryable == true
        }
        #expect(context.hasChanges)
        #expect(remote.backend.status.waitingSaves == 0)
    }
}
