// The store over HTTP: `StoreServer` in the test process on 127.0.0.1 and a
// free port, `RemoteStore` clients on it. The corpus through a remote store
// answers as the local store does; two clients conflict under each merge
// policy; a save the server stops under leaves nothing written and the
// client's changes intact, and succeeds when retried; clients follow a
// restarted server; the disk cache answers while the server is away and
// forgets what the feed says was deleted; sixteen clients saving at once
// lose no increment.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sift
import SiftHTTPAPI
import SiftRemote
import SiftServer
import SiftStore
import Synchronization
import Testing

/// The company data set in an SQLite store, served.
final class ServedCompany: Sendable {
    let store: SQLiteStore
    let server: TestServer
    let file: URL?

    init(file: Bool = false, configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        if file {
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-served-\(UUID().uuidString).sqlite")
            store = try SQLiteStore(url: url, model: Company.model)
            self.file = url
        } else {
            store = try SQLiteStore(inMemoryWith: Company.model)
            self.file = nil
        }
        try store.importDataSet(Company.dataSet)
        server = try TestServer(serving: store, configure: configure)
    }

    var url: URL { server.url }

    func client(_ configure: (inout RemoteStoreConfiguration) -> Void = { _ in }) throws -> RemoteStore {
        var configuration = RemoteStoreConfiguration()
        configure(&configuration)
        return try RemoteStore(url: url, configuration: configuration)
    }

    deinit {
        server.stop()
        if let file { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: file.path + suffix) } }
    }
}

/// Waits up to `seconds` for `condition`.
func eventually(_ seconds: Double = 10, _ condition: () throws -> Bool) rethrows -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while Date() < deadline {
        if try condition() { return true }
        Thread.sleep(forTimeInterval: 0.02)
    }
    return try condition()
}

@Suite("Remote store over HTTP")
struct RemoteStoreTests {
    @Test("Every corpus case answers through the server as the local store answers it")
    func corpus() async throws {
        try await offThePool { try self.run_corpus() }
    }

    func run_corpus() throws {
        let served = try ServedCompany()
        let remote = try served.client { $0.followsChanges = false }
        var checked = 0
        for testCase in CorpusCase.all {
            var request = FetchRequest(entityName: testCase.entity, predicate: testCase.predicate, arguments: testCase.args ?? [])
            request.includesPendingChanges = false
            let ids: [Int64]
            do {
                ids = try ObjectContext(store: remote).fetchObjectIDs(request).map(\.primaryKey)
            } catch {
                guard case .invalidPredicate(let compileError, _) = error else { throw error }
                #expect(testCase.expect == .error(compileError.kind), "\(testCase.predicate)")
                continue
            }
            #expect(testCase.expect == .matches(ids), "\(testCase.predicate)")
            let local = try ObjectContext(store: served.store).fetchObjectIDs(request).map(\.primaryKey)
            #expect(Set(ids) == Set(local), "\(testCase.predicate)")
            checked += 1
        }
        #expect(checked > 100)
        // Every term went to the server: nothing was left for memory.
        let plan = try remote.plan(FetchRequest(entityName: "Employee", predicate: "ANY department.employees.age > 60 AND name LIKE[c] 'a*'"))
        #expect(plan.memory == nil)
    }

    @Test("Sorting, paging, counting and dictionary fetches agree with the local store")
    func sortingAndPaging() async throws {
        try await offThePool { try self.run_sortingAndPaging() }
    }

    func run_sortingAndPaging() throws {
        let served = try ServedCompany()
        let remote = try served.client { $0.followsChanges = false }
        var request = FetchRequest(entityName: "Employee", predicate: "age > %@", arguments: [.int(30)],
                                   sortDescriptors: [FetchSortDescriptor("department.name"), FetchSortDescriptor("name", ascending: false, caseInsensitive: true)])
        request.fetchLimit = 7
        request.fetchOffset = 3
        let local = ObjectContext(store: served.store)
        let context = ObjectContext(store: remote)
        #expect(try context.fetch(request).map(\.objectID.primaryKey) == local.fetch(request).map(\.objectID.primaryKey))
        #expect(try context.count(for: request) == local.count(for: request))
        var sums = FetchRequest(entityName: "Employee")
        sums.propertiesToFetch = ["department.name", ExpressionDescription(name: "total", expression: "@sum.salary")]
        sums.propertiesToGroupBy = ["department.name"]
        sums.sortDescriptors = [FetchSortDescriptor("department.name")]
        #expect(try context.fetchDictionaries(sums) == local.fetchDictionaries(sums))
        // Values of every type come back as they went.
        let object = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        let same = try #require(try local.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        for attribute in object.entity.attributes {
            #expect(try object.value(forKey: attribute.name) == same.value(forKey: attribute.name), "\(attribute.name)")
        }
    }

    @Test("Prefetching comes with the fetch: 1 request for the objects and their departments, none to read them")
    func prefetching() async throws {
        try await offThePool { try self.run_prefetching() }
    }

    func run_prefetching() throws {
        let served = try ServedCompany()
        let remote = try served.client { $0.followsChanges = false }
        let context = ObjectContext(store: remote)
        var request = FetchRequest(entityName: "Employee")
        request.relationshipKeyPathsForPrefetching = ["department"]
        let before = remote.backend.requestsSent
        let employees = try context.fetch(request)
        #expect(employees.count == 60)
        for employee in employees { _ = try employee.object(forKey: "department")?.value(forKey: "name") }
        #expect(remote.backend.requestsSent - before == 1)
        // A to-many step: its members come with the destinations, in one request for every owner.
        let departments = try context.fetch(FetchRequest(entityName: "Department"))
        let afterDepartments = remote.backend.requestsSent
        for department in departments { _ = try department.objects(forKey: "employees").map { try $0.value(forKey: "name") } }
        #expect(remote.backend.requestsSent - afterDepartments <= 1 + departments.count)
    }

    @Test("Two clients edit the same object: each merge policy decides, as on one store", arguments: [
        MergePolicy.error, .rollback, .storeTrump, .objectTrump, .overwrite,
    ])
    func twoClients(_ policy: MergePolicy) async throws {
        try await offThePool { try self.run_twoClients(policy) }
    }

    func run_twoClients(_ policy: MergePolicy) throws {
        let served = try ServedCompany()
        let first = try served.client()
        let second = try served.client()
        let predicate = "name == 'Alice Anderson'"
        let a = ObjectContext(store: first)
        let b = ObjectContext(store: second)
        b.mergePolicy = policy
        let alice = try #require(try a.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
        let alsoAlice = try #require(try b.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
        try alice.setValue(.int(40), forKey: "age")
        try alsoAlice.setValue(.int(50), forKey: "age")
        try alsoAlice.setValue(.string("Al"), forKey: "nickname")
        let heard = Mutex(false)
        let observation = first.addObserver { _ in heard.withLock { $0 = true } }
        defer { observation.cancel() }
        try a.save()
        heard.withLock { $0 = false }   // a's own save, announced at once; the feed brings b's
        switch policy {
        case .error:
            #expect {
                try b.save()
            } throws: { error in
                guard let error = error as? StoreError, case .conflicts(let conflicts) = error else { return false }
                return conflicts.count == 1
            }
            #expect(alsoAlice.hasChanges)
        default:
            try b.save()
        }
        let reader = ObjectContext(store: served.store)
        let stored = try #require(try reader.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
        let age = try stored.value(forKey: "age")
        switch policy {
        case .error, .rollback: #expect(age == .int(40))
        case .storeTrump: #expect(age == .int(40))
        case .objectTrump, .overwrite: #expect(age == .int(50))
        }
        // The first client hears the second's save through the feed.
        if policy != .error && policy != .rollback && policy != .storeTrump {
            #expect(eventually { heard.withLock { $0 } })
        }
    }

    @Test("Another client's save reaches this one's contexts through the change feed")
    func changeFeed() async throws {
        try await offThePool { try self.run_changeFeed() }
    }

    func run_changeFeed() throws {
        let served = try ServedCompany()
        let watcher = try served.client()
        let writer = try served.client { $0.followsChanges = false }
        let context = ObjectContext(store: watcher)
        let bob = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Bob Baker'")).first)
        let heard = Mutex<[StoreChanges]>([])
        let observation = watcher.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        let other = ObjectContext(store: writer)
        let otherBob = try #require(try other.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Bob Baker'")).first)
        try otherBob.setValue(.int(77), forKey: "age")
        try other.save()
        #expect(eventually { heard.withLock { $0.contains { $0.updated.contains(bob.objectID) } } })
        try context.mergeChanges(from: StoreChanges(updated: [bob.objectID]))
        #expect(try bob.value(forKey: "age") == .int(77))
        // A delete too: the object leaves the context.
        try other.delete(otherBob)
        try other.save()
        #expect(eventually { heard.withLock { $0.contains { $0.deleted.contains(bob.objectID) } } })
    }

    @Test("The server stopped under a save: nothing written and the changes kept, then the retry saves them; or the stop finishes the save, once")
    func serverStoppedMidSave() async throws {
        try await offThePool { try self.run_serverStoppedMidSave() }
    }

    func run_serverStoppedMidSave() throws {
        let held = Mutex(false)
        let release = Mutex(false)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-stop-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        let store = try SQLiteStore(url: url, model: Company.model)
        try store.importDataSet(Company.dataSet)
        var server: TestServer? = try TestServer(serving: store) { configuration in
            configuration.beforeSave = {
                held.withLock { $0 = true }
                while !release.withLock({ $0 }) { try? await Task.sleep(for: .milliseconds(10)) }
            }
        }
        let port = try #require(server?.port)
        let remote = try RemoteStore(url: try #require(server?.url))
        let context = ObjectContext(store: remote)
        let hire = try context.insert("Employee")
        try hire.setValue(.string("Dee"), forKey: "name")
        try hire.setValue(.int(33), forKey: "age")
        try hire.setValue(.double(50_000), forKey: "salary")
        try hire.setValue(.bool(false), forKey: "isManager")
        try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        let outcome = Mutex<StoreError?>(nil)
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            do { try context.performAndWait { try $0.save() } } catch { outcome.withLock { $0 = error as? StoreError } }
            done.signal()
        }
        #expect(eventually { held.withLock { $0 } })
        // The server goes away with the save in its hands.
        let stopping = DispatchSemaphore(value: 0)
        let stopped = server
        DispatchQueue.global().async {
            stopped?.stop()
            stopping.signal()
        }
        Thread.sleep(forTimeInterval: 0.2)
        release.withLock { $0 = true }
        done.wait()
        stopping.wait()
        server = nil
        let count = { try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee", predicate: "name == 'Dee'")) }
        guard let error = outcome.withLock({ $0 }) else {
            // The stop is graceful: it may finish the request it holds. Then
            // the save committed, once, and the context holds no changes.
            #expect(!context.hasChanges)
            #expect(try count() == 1)
            return
        }
        #expect(error.isRetryable, "\(error)")
        #expect(context.hasChanges)
        #expect(try count() == 0)
        // Restarted on the same port, the same store: the retry writes it.
        let restarted = try TestServer(serving: store, port: port)
        // The retry, as a client retries a retryable error: a connection the
        // client pooled to the stopped server may fail once more, retryably.
        var attempts = 0
        while true {
            attempts += 1
            let result = Result { () throws(StoreError) in try context.save() }
            guard case .failure(let error) = result, error.isRetryable, attempts < 5 else {
                try result.get()
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(!context.hasChanges)
        #expect(try count() == 1)
        restarted.stop()
    }

    @Test("A restarted server: clients reconnect and the feed resumes, from a reset")
    func restartedServer() async throws {
        try await offThePool { try self.run_restartedServer() }
    }

    func run_restartedServer() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        var server: TestServer? = try TestServer(serving: store)
        let port = try #require(server?.port)
        let url = try #require(server?.url)
        let watcher = try RemoteStore(url: url)
        let heard = Mutex<[StoreChanges]>([])
        let observation = watcher.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        server?.stop()
        server = nil
        #expect(throws: StoreError.self) { try ObjectContext(store: watcher).count(for: FetchRequest(entityName: "Employee")) }
        server = try TestServer(serving: store, port: port)
        // Generous waits: under a loaded machine (the whole suite in parallel) a reconnection
        // can wait out a request's timeout first.
        #expect(try eventually(30) { (try? ObjectContext(store: watcher).count(for: FetchRequest(entityName: "Employee"))) == 60 })
        #expect(eventually(30) { watcher.backend.status == .online })
        // A save through another client after the restart reaches the watcher.
        let writer = try RemoteStore(url: url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let context = ObjectContext(store: writer)
        let cy = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name BEGINSWITH 'C'")).first)
        try cy.setValue(.int(61), forKey: "age")
        // The feed asks again within its wait; give it time to come back from the reset.
        Thread.sleep(forTimeInterval: 1.5)
        try context.save()
        #expect(eventually(30) { heard.withLock { $0.contains { $0.updated.contains(cy.objectID) } } })
        server?.stop()
    }

    @Test("Another process's write to a served store without history reaches clients as a change to refetch")
    func otherProcessWithoutHistory() async throws {
        try await offThePool { try self.run_otherProcessWithoutHistory() }
    }

    func run_otherProcessWithoutHistory() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let served = try SQLiteStore(url: file)
        served.otherProcessesPollingInterval = 0.02
        let server = try TestServer(serving: served)
        defer { server.stop() }
        let client = try RemoteStore(url: server.url)
        let heard = Mutex<[StoreChanges]>([])
        let observation = client.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        let context = ObjectContext(store: client)
        #expect(try context.count(for: FetchRequest(entityName: "Employee", predicate: "age == 99")) == 0)
        // Let the client's feed begin, then write through a connection of its own, as another process would.
        Thread.sleep(forTimeInterval: 1)
        try SQLiteConnection(path: file.path).execute(#"UPDATE "ZEMPLOYEE" SET "ZAGE" = 99, "Z_OPT" = "Z_OPT" + 1"#)
        #expect(eventually(30) { heard.withLock { $0.contains(where: \.includesUnknownChanges) } })
        #expect(try ObjectContext(store: client).count(for: FetchRequest(entityName: "Employee", predicate: "age == 99")) > 0)
    }

    @Test("The disk cache answers while the server is away, says so, and (saves not queued) refuses saves as retryable")
    func offline() async throws {
        try await offThePool { try self.run_offline() }
    }

    func run_offline() throws {
        let cacheURL = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cache-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cacheURL.path + suffix) } }
        let served = try ServedCompany()
        let remote = try served.client { $0.cacheURL = cacheURL; $0.queuesOfflineSaves = false }
        let statuses = Mutex<[RemoteStatus]>([])
        remote.backend.addStatusObserver { status in statuses.withLock { $0.append(status) } }
        let request = FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'", sortDescriptors: [FetchSortDescriptor("name")])
        let online = try ObjectContext(store: remote).fetch(request).map(\.objectID.primaryKey)
        #expect(!online.isEmpty)
        // What the feed says was deleted leaves the cache.
        let writer = try served.client { $0.followsChanges = false }
        let other = ObjectContext(store: writer)
        let gone = try #require(try other.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string("Bob Baker")])).first)
        let goneKey = gone.objectID.primaryKey
        try other.delete(gone)
        try other.save()
        #expect(eventually { (try? ObjectContext(store: try #require(remote.backend.cache)).count(
            for: FetchRequest(entityName: "Employee", predicate: "name == 'Bob Baker'"))) == 0 })
        served.server.stop()
        let context = ObjectContext(store: remote)
        let offline = try context.fetch(request).map(\.objectID.primaryKey)
        #expect(offline == online.filter { $0 != goneKey })
        #expect(remote.backend.status != .online)
        #expect(statuses.withLock { $0.contains { $0 != .online } })
        let sam = try #require(try context.fetch(request).first)
        try sam.setValue(.int(44), forKey: "age")
        #expect {
            try context.save()
        } throws: { error in
            (error as? StoreError)?.isRetryable == true
        }
        #expect(context.hasChanges)
        // Every Sift tool reads the cache: it is a store in Core Data's layout.
        let cache = try SQLiteStore(url: cacheURL, readOnly: true)
        #expect(try ObjectContext(store: cache).count(for: request) == offline.count)
    }

    /// (Issue 54: with the server stopped, opening with a disk cache took 5 s and each fetch 10 s, even once
    /// the status was `.offline`; the reason was NIO's `connection reset (error set): … (errno: 111)`.)
    @Test("Offline, a disk cache opens and answers at once, says why in words, and the store reconnects by itself")
    func offlineAnswersAtOnce() async throws {
        try await offThePool { try self.run_offlineAnswersAtOnce() }
    }

    func run_offlineAnswersAtOnce() throws {
        let cacheURL = FileManager.default.temporaryDirectory.appendingPathComponent("sift-fast-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cacheURL.path + suffix) } }
        let served = try ServedCompany()
        let port = served.server.port
        let request = FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'", sortDescriptors: [FetchSortDescriptor("name")])
        let online = try ObjectContext(store: try served.client { $0.cacheURL = cacheURL; $0.followsChanges = false })
            .fetch(request).map(\.objectID.primaryKey)
        #expect(!online.isEmpty)
        served.server.stop()
        let clock = ContinuousClock()
        var opened: RemoteStore?
        let opening = try clock.measure { opened = try served.client { $0.cacheURL = cacheURL } }
        let remote = try #require(opened)
        #expect(opening < .seconds(1), "opening took \(opening) (it took 5 s)")
        guard case .offline(let reason, _) = remote.backend.status else {
            Issue.record("\(remote.backend.status)")
            return
        }
        #expect(reason.contains("refused"), "\(reason)")
        #expect(!reason.contains("errno"), "\(reason)")
        for _ in 0..<3 {
            let context = ObjectContext(store: remote)
            var keys: [Int64] = []
            let fetching = try clock.measure { keys = try context.fetch(request).map(\.objectID.primaryKey) }
            #expect(keys == online)
            #expect(fetching < .seconds(1), "a fetch from the cache took \(fetching) (it took 10 s)")
        }
        // The server back on its port: the store finds it without being asked, and reads go to it again.
        let restarted = try TestServer(serving: served.store, port: port)
        defer { restarted.stop() }
        #expect(eventually(30) { remote.backend.status == .online })
        let sent = remote.backend.requestsSent
        #expect(try ObjectContext(store: remote).fetch(request).map(\.objectID.primaryKey) == online)
        #expect(remote.backend.requestsSent > sent)
    }

    @Test("No server at the address: .unreachable at once, in words")
    func unreachable() async throws {
        try await offThePool { try self.run_unreachable() }
    }

    func run_unreachable() throws {
        let started = ContinuousClock.now
        let error = #expect(throws: StoreError.self) { try RemoteStore(url: URL(string: "http://127.0.0.1:1")!) }
        #expect(ContinuousClock.now - started < .seconds(1), "it took 5 s")
        guard case .unreachable(let server, let reason)? = error else {
            Issue.record("\(String(describing: error))")
            return
        }
        #expect(server == "http://127.0.0.1:1")
        #expect(reason.contains("refused") && !reason.contains("errno"), "\(reason)")
        #expect(error?.isRetryable == true)
        #expect(error?.code == .unreachable)
    }

    @Test("Within the staleness interval a fetch asked again is answered from the disk cache, without a request")
    func staleness() async throws {
        try await offThePool { try self.run_staleness() }
    }

    func run_staleness() throws {
        let cacheURL = FileManager.default.temporaryDirectory.appendingPathComponent("sift-stale-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: cacheURL.path + suffix) } }
        let served = try ServedCompany()
        let remote = try served.client {
            $0.cacheURL = cacheURL
            $0.stalenessInterval = 600
            $0.followsChanges = false
        }
        let request = FetchRequest(entityName: "Employee", predicate: "age > 50")
        let first = try ObjectContext(store: remote).fetch(request).count
        let sent = remote.backend.requestsSent
        let second = try ObjectContext(store: remote).fetch(request).count
        #expect(first == second)
        #expect(remote.backend.requestsSent == sent)
        // Another request is sent.
        _ = try ObjectContext(store: remote).fetch(FetchRequest(entityName: "Employee", predicate: "age > 51"))
        #expect(remote.backend.requestsSent == sent + 1)
    }

    @Test("Sixteen clients incrementing one value for a while lose no increment")
    func sixteenClients() async throws {
        try await offThePool { try self.run_sixteenClients() }
    }

    func run_sixteenClients() throws {
        let served = try ServedCompany(file: true)
        let seconds = Double(ProcessInfo.processInfo.environment["SIFT_REMOTE_STRESS_SECONDS"] ?? "") ?? 30
        let predicate = "name == 'Alice Anderson'"
        let reader = ObjectContext(store: served.store)
        let start = try #require(try reader.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
        guard case .int(let initial) = try start.value(forKey: "age") else { Issue.record("no age"); return }
        let increments = Mutex(0)
        let failures = Mutex<[String]>([])
        let deadline = Date().addingTimeInterval(seconds)
        let group = DispatchGroup()
        for client in 0..<16 {
            group.enter()
            Thread {
                defer { group.leave() }
                do {
                    let remote = try served.client { $0.followsChanges = client % 2 == 0 }
                    while Date() < deadline {
                        let context = ObjectContext(store: remote)
                        let object = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
                        guard case .int(let age) = try object.value(forKey: "age") else { return }
                        try object.setValue(.int(age + 1), forKey: "age")
                        do {
                            try context.save()
                            increments.withLock { $0 += 1 }
                        } catch {
                            guard let conflict = error as? StoreError, case .conflicts = conflict else { throw error }
                        }
                        // Someone else's read, to keep fetches in the mix.
                        _ = try context.count(for: FetchRequest(entityName: "Employee", predicate: "age > 30"))
                    }
                } catch {
                    failures.withLock { $0.append("client \(client): \(error)") }
                }
            }.start()
        }
        group.wait()
        #expect(failures.withLock { $0 } == [])
        let check = ObjectContext(store: served.store)
        let final = try #require(try check.fetch(FetchRequest(entityName: "Employee", predicate: predicate)).first)
        let total = increments.withLock { $0 }
        #expect(total > 16)
        #expect(try final.value(forKey: "age") == .int(initial + Int64(total)))
    }
}

@Suite("Store server: limits, errors and safety")
struct StoreServerTests {
    /// Sends `body` to `path` and returns the status and the JSON answer.
    func post(_ url: URL, _ path: String, _ body: Data, headers: [String: String] = [:]) throws -> (Int, [String: Any]) {
        let answer = try exchange(url.appendingPathComponent(path), body: body, headers: headers)
        return (answer.status, json(answer.data))
    }

    @Test("A predicate that does not check is a 400 with its diagnostic")
    func diagnostics() async throws {
        try await offThePool { try self.run_diagnostics() }
    }

    func run_diagnostics() throws {
        let served = try ServedCompany()
        let (status, answer) = try post(served.url, "v1/fetch", Data(#"{"entity": "Employee", "predicate": "agee > 3"}"#.utf8))
        #expect(status == 400)
        #expect(answer["code"] as? String == "invalid_predicate")
        let diagnostic = try #require(answer["diagnostic"] as? [String: Any])
        #expect(diagnostic["line"] as? Int == 1)
        #expect(diagnostic["column"] as? Int == 1)
        #expect((diagnostic["rendered"] as? String)?.contains("did you mean 'age'") == true)
        let (syntax, syntaxAnswer) = try post(served.url, "v1/fetch", Data(#"{"entity": "Employee", "predicate": "age >"}"#.utf8))
        #expect(syntax == 400)
        #expect(syntaxAnswer["code"] as? String == "invalid_predicate")
    }

    @Test("Bodies, predicates and pages are bounded; a costly MATCHES ends in an error")
    func limits() async throws {
        try await offThePool { try self.run_limits() }
    }

    func run_limits() throws {
        let served = try ServedCompany { configuration in
            configuration.maximumBodySize = 4096
            configuration.maximumPageSize = 10
        }
        let large = Data(("{\"entity\": \"Employee\", \"predicate\": \"" + String(repeating: "a", count: 5000) + "\"}").utf8)
        #expect(try post(served.url, "v1/fetch", large).0 == 413)
        let (status, answer) = try post(served.url, "v1/fetch", Data(#"{"entity": "Employee"}"#.utf8))
        #expect(status == 200)
        #expect((answer["objects"] as? [Any])?.count == 10)
        #expect(answer["complete"] as? Bool == false)
        let hostile = #"{"entity": "Employee", "predicate": "name MATCHES '(a|aa)*(b|c)+(a|aa)*(b|c)+(a|aa)*b'"}"#
        let started = Date()
        let (hostileStatus, hostileAnswer) = try post(served.url, "v1/fetch", Data(hostile.utf8))
        #expect(Date().timeIntervalSince(started) < 10)
        #expect(hostileStatus == 200 || hostileAnswer["code"] as? String == "too_costly")
        #expect(try post(served.url, "v1/fetch", Data("{not json".utf8)).0 == 400)
        #expect(try post(served.url, "v1/fetch", Data(#"{"entity": "Nobody"}"#.utf8)).0 == 404)
    }

    /// (Issue 54: `"limit": -1` was a 200, though the document says minimum 0.)
    @Test("Numbers, strings and arrays outside the document's bounds are a 400 naming the field")
    func documentBounds() async throws {
        try await offThePool { try self.run_documentBounds() }
    }

    func run_documentBounds() throws {
        let served = try ServedCompany()
        let cases: [(String, String, String)] = [
            ("v1/fetch", #"{"entity": "Employee", "limit": -1}"#, "'limit'"),
            ("v1/fetch", #"{"entity": "Employee", "limit": 10001}"#, "'limit'"),
            ("v1/fetch", #"{"entity": "Employee", "offset": -3}"#, "'offset'"),
            ("v1/fetch", #"{"entity": "Employee", "stepLimit": 0}"#, "'stepLimit'"),
            ("v1/fetch", #"{"entity": "Employee", "sort": [{"keyPath": "\#(String(repeating: "a", count: 1025))"}]}"#, "'sort[0].keyPath'"),
            ("v1/objects", #"{"entity": "\#(String(repeating: "E", count: 257))", "keys": [1]}"#, "'entity'"),
            ("v1/save", #"{"sequence": 0}"#, "'sequence'"),
            ("v1/fetch", #"{"entity": "Employee", "stepLimit": null}"#, "'stepLimit'"),
            ("v1/save", #"{"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {"name": null}}], "kept": null}"#, "'kept'"),
        ]
        for (path, body, field) in cases {
            let (status, answer) = try post(served.url, path, Data(body.utf8))
            #expect(status == 400, "\(path) \(body.prefix(80))")
            #expect(answer["code"] as? String == "bad_request")
            #expect((answer["message"] as? String)?.contains(field) == true, "\(answer)")
        }
        let waited = try exchange(served.url.appendingPathComponent("v1/changes").appending(queryItems: [.init(name: "wait", value: "31")]),
                                  method: "GET")
        #expect(waited.status == 400)
        #expect((json(waited.data)["message"] as? String)?.contains("'wait'") == true)
        let history = try exchange(served.url.appendingPathComponent("v1/history").appending(queryItems: [.init(name: "limit", value: "0")]),
                                   method: "GET")
        #expect(history.status == 400)
        // Within the bounds, as before.
        #expect(try post(served.url, "v1/fetch", Data(#"{"entity": "Employee", "limit": 0}"#.utf8)).0 == 200)
        #expect(try post(served.url, "v1/fetch", Data(#"{"entity": "Employee", "predicate": "name == %@", "arguments": [null]}"#.utf8)).0 == 200)
        #expect(try post(served.url, "v1/fetch", Data(#"{"entity": "Employee", "limit": 10000, "offset": 0, "stepLimit": 1}"#.utf8)).0 == 200)
    }

    @Test("A method a path does not take is a 405 with Allow")
    func methodNotAllowed() async throws {
        try await offThePool { try self.run_methodNotAllowed() }
    }

    func run_methodNotAllowed() throws {
        let served = try ServedCompany()
        let fetch = try exchange(served.url.appendingPathComponent("v1/fetch"), method: "GET")
        #expect(fetch.status == 405)
        #expect(fetch.headers["allow"] == "POST")
        #expect(json(fetch.data)["code"] as? String == "method_not_allowed")
        let store = try exchange(served.url.appendingPathComponent("v1/store"), method: "DELETE")
        #expect(store.status == 405)
        #expect(store.headers["allow"] == "GET")
        #expect(try exchange(served.url.appendingPathComponent("v1/nothing"), method: "GET").status == 404)
        #expect(try exchange(served.url.appendingPathComponent("v1/store"), method: "GET").status == 200)
    }

    @Test("Read-only unless writable; a token guards every request; beyond loopback only with a token")
    func safety() async throws {
        try await offThePool { try self.run_safety() }
    }

    func run_safety() throws {
        let readOnly = try ServedCompany { $0.isWritable = false }
        let remote = try readOnly.client { $0.followsChanges = false }
        let context = ObjectContext(store: remote)
        let tag = try context.insert("Tag")
        try tag.setValue(.string("ops"), forKey: "name")
        #expect {
            try context.save()
        } throws: { error in
            guard case .readOnly = error as? StoreError else { return false }
            return true
        }
        let guarded = try ServedCompany { $0.token = "s3cret" }
        #expect(try post(guarded.url, "v1/fetch", Data(#"{"entity": "Employee", "result": "count"}"#.utf8)).0 == 401)
        #expect(try post(guarded.url, "v1/fetch", Data(#"{"entity": "Employee", "result": "count"}"#.utf8),
                         headers: ["Authorization": "Bearer s3cret"]).0 == 200)
        #expect(throws: StoreError.self) { try guarded.client { $0.followsChanges = false } }
        let allowed = try guarded.client { $0.token = "s3cret"; $0.followsChanges = false }
        #expect(try ObjectContext(store: allowed).count(for: FetchRequest(entityName: "Employee")) == 60)
        var open = ServerConfiguration()
        open.host = "0.0.0.0"
        #expect(throws: ServerError.self) { try StoreServer(store: CompanyStore.store, configuration: open) }
    }

    @Test("Values cross the wire and come back the same")
    func wireValues() async throws {
        try await offThePool { try self.run_wireValues() }
    }

    func run_wireValues() throws {
        let values: [PredicateValue] = [
            .null, .bool(true), .int(-7), .int(.max), .double(2.5), .double(3), .double(.nan), .double(-.infinity), .string("é\u{0}x"),
            .date(Date(timeIntervalSinceReferenceDate: 12.25)), .data(Data([0, 1, 255])), .uuid(UUID()),
            .object(ObjectReference(entity: "Employee", id: 101)), .array([.int(1), .string("a")]),
            .dictionary(["a": .int(1), "b": .array([])]),
        ]
        for value in values {
            let data = try JSONEncoder().encode(WireValue.values(["v": value]))
            let back = try WireValue.values(try JSONDecoder().decode(Components.Schemas.Values.self, from: data))["v"] ?? .null
            if case .double(let d) = value, d.isNaN {
                guard case .double(let e) = back else { Issue.record("nan came back as \(back)"); continue }
                #expect(e.isNaN)
            } else {
                #expect(back == value, "\(value)")
            }
        }
    }
}
