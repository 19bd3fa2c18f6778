// Several servers on one database, and a change feed that outlives its
// server. Servers run in the test process (`StoreServer` on 127.0.0.1), each
// on a PostgreSQL store of its own on one schema, as `sift serve --postgres`
// processes would: a save through one reaches the feed of every other, their
// tokens are the same (the store's change history numbers them), a remote
// store on one hears what was saved through another, and a restarted server
// answers a client's old token with what was saved while it was down. An
// SQLite store keeps the same durable feed when it keeps persistent history,
// and answers `reset` after a restart when it keeps none.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sift
import SiftPostgres
import SiftRemote
import SiftServer
import SiftStore
import Synchronization
import Testing

/// One answer of a server's change feed.
struct FeedAnswer {
    var token: String
    var reset: Bool
    /// Each change's token and the keys it inserted, updated and deleted ("Entity/key").
    var changes: [(token: String, inserted: Set<String>, updated: Set<String>, deleted: Set<String>)]

    var updated: Set<String> { changes.reduce(into: []) { $0.formUnion($1.updated) } }
    var inserted: Set<String> { changes.reduce(into: []) { $0.formUnion($1.inserted) } }
}

/// Reads a server's change feed after `token`, waiting up to `wait` seconds for a change.
func feed(_ server: URL, after token: String?, wait: Int = 0) throws -> FeedAnswer {
    var components = URLComponents(url: server.appendingPathComponent("v1/changes"), resolvingAgainstBaseURL: false)
    components?.queryItems = (token.map { [URLQueryItem(name: "after", value: $0)] } ?? []) + [URLQueryItem(name: "wait", value: "\(wait)")]
    let answer = try exchange(try #require(components?.url), method: "GET")
    #expect(answer.status == 200, "\(String(decoding: answer.data, as: UTF8.self))")
    let body = json(answer.data)
    func keys(_ value: Any?) -> Set<String> {
        Set((value as? [[String: Any]] ?? []).map { "\($0["entity"] ?? "")/\($0["key"] ?? "")" })
    }
    return FeedAnswer(token: body["token"] as? String ?? "", reset: body["reset"] as? Bool ?? false,
                      changes: (body["changes"] as? [[String: Any]] ?? []).map {
                          ($0["token"] as? String ?? "", keys($0["inserted"]), keys($0["updated"]), keys($0["deleted"]))
                      })
}

/// The feed's current token, as `GET /v1/store` gives it.
func feedToken(_ server: URL) throws -> String {
    let answer = try exchange(server.appendingPathComponent("v1/store"), method: "GET")
    return try #require(json(answer.data)["token"] as? String)
}

/// Sets `name`'s age through `store` in a context of its own; returns the employee's key as the feed names it.
@discardableResult
func setAge(_ age: Int64, of name: String, through store: any PersistentStore) throws -> String {
    let context = ObjectContext(store: store)
    let employee = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@",
                                                               arguments: [.string(name)])).first)
    try employee.setValue(.int(age), forKey: "age")
    try context.save()
    return "Employee/\(employee.objectID.primaryKey)"
}

/// The company in a new PostgreSQL schema, served by several servers, each on a store of its own.
final class ServedSchema: @unchecked Sendable {
    let schemaName: String
    /// The first store, which made the schema (and drops it at the end).
    private let first: PostgresStore
    private(set) var stores: [PostgresStore]
    private(set) var servers: [TestServer]

    init(servers count: Int) throws {
        first = try StoreKind.makePostgres(Company.model)
        try first.importDataSet(Company.dataSet)
        schemaName = first.schemaName
        stores = [first]
        for _ in 1..<max(count, 1) { stores.append(try Self.store(schemaName)) }
        servers = try stores.map { try TestServer(serving: $0) }
    }

    /// Another store on the schema, as another process opens it.
    static func store(_ schemaName: String) throws -> PostgresStore {
        try PostgresStore(url: try #require(StoreKind.postgresURL), schemaName: schemaName, maximumConnections: 2)
    }

    /// Stops server `index` and closes its store, as a process that ends.
    func stop(_ index: Int) {
        servers[index].stop()
        if stores[index] !== first { stores[index].close() }
    }

    /// A new server on a new store of the schema in place of server `index`, on the same port.
    func restart(_ index: Int) throws {
        let store = try Self.store(schemaName)
        stores[index] = store
        servers[index] = try TestServer(serving: store, port: servers[index].port)
    }

    deinit {
        for server in servers { server.stop() }
        for store in stores where store !== first { store.close() }
        try? first.destroy()
    }
}

@Suite("Several servers on one PostgreSQL database", .enabled(if: StoreKind.postgresURL != nil,
                                                              "SIFT_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct SharedFeedTests {
    @Test("A save through any server is in the feed of every server, under the same token", arguments: [2, 3])
    func everyServerHears(count: Int) async throws {
        try await offThePool { try self.run_everyServerHears(count) }
    }

    func run_everyServerHears(_ count: Int) throws {
        let served = try ServedSchema(servers: count)
        var tokens = try served.servers.map { try feedToken($0.url) }
        #expect(Set(tokens).count == 1, "every server on the store gives the same token: \(tokens)")
        for (index, writer) in served.servers.enumerated() {
            // Long polls waiting on every other server when the save commits.
            let answers = Mutex<[Int: FeedAnswer]>([:])
            let polls = DispatchGroup()
            for other in served.servers.indices where other != index {
                let url = served.servers[other].url
                let token = tokens[other]
                DispatchQueue.global().async(group: polls) {
                    let answer = Result { try feed(url, after: token, wait: 30) }
                    if case .success(let answer) = answer { answers.withLock { $0[other] = answer } }
                }
            }
            Thread.sleep(forTimeInterval: 0.3)
            let client = try RemoteStore(url: writer.url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
            let key = try setAge(Int64(40 + index), of: "Bob Baker", through: client)
            polls.wait()
            for other in served.servers.indices where other != index {
                let answer = try #require(answers.withLock { $0[other] }, "server \(other) answered its long poll")
                #expect(!answer.reset)
                #expect(answer.updated == [key], "server \(other) hears the save made through server \(index)")
            }
            // Every server's feed is at the same token now, the save's.
            tokens = try served.servers.map { try feed($0.url, after: tokens[index]).token }
            #expect(Set(tokens).count == 1, "\(tokens)")
            #expect(try feedToken(served.servers[index].url) == tokens[0])
        }
    }

    @Test("A remote store on one server hears an object saved through another, and reads it")
    func remoteStoreHearsOtherServer() async throws {
        try await offThePool { try self.run_remoteStoreHearsOtherServer() }
    }

    func run_remoteStoreHearsOtherServer() throws {
        let served = try ServedSchema(servers: 2)
        let watcher = try RemoteStore(url: served.servers[0].url)
        let heard = Mutex<[StoreChanges]>([])
        let observation = watcher.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        // The watcher's feed begins.
        Thread.sleep(forTimeInterval: 0.5)
        let writer = try RemoteStore(url: served.servers[1].url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let context = ObjectContext(store: writer)
        let hire = try context.insert("Employee")
        try hire.setValue(.string("Shared Sam"), forKey: "name")
        try hire.setValue(.int(29), forKey: "age")
        try hire.setValue(.double(61_000), forKey: "salary")
        try hire.setValue(.bool(false), forKey: "isManager")
        try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        try context.save()
        // The watcher's ID of the object: the server's key names it.
        let reference = try #require(writer.reference(for: hire.objectID))
        let id = try #require(watcher.objectID(for: reference, entityName: "Employee"))
        #expect(eventually(30) { heard.withLock { $0.contains { $0.inserted.contains(id) } } })
        #expect(!heard.withLock { $0.contains(where: \.includesUnknownChanges) })
        let sam = try ObjectContext(store: watcher).fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Shared Sam'"))
        #expect(sam.map(\.objectID) == [id])
    }

    @Test("A restarted server answers a client's token with what was saved while it was down, without a reset")
    func restartedServerResumes() async throws {
        try await offThePool { try self.run_restartedServerResumes() }
    }

    func run_restartedServerResumes() throws {
        let served = try ServedSchema(servers: 2)
        let url = served.servers[0].url
        let watcher = try RemoteStore(url: url)
        let heard = Mutex<[StoreChanges]>([])
        let observation = watcher.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        Thread.sleep(forTimeInterval: 0.5)
        let token = try feedToken(url)
        served.stop(0)
        // While server 0 is down: a save through server 1, and one by a context on a store of its own (another process).
        let writer = try RemoteStore(url: served.servers[1].url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let bob = try setAge(51, of: "Bob Baker", through: writer)
        let other = try ServedSchema.store(served.schemaName)
        let diana = try setAge(52, of: "Diana Diaz", through: other)
        other.close()
        try served.restart(0)
        // The token from before the restart, on the new server and on the other one.
        for server in served.servers {
            let answer = try feed(server.url, after: token)
            #expect(!answer.reset)
            #expect(answer.updated == [bob, diana])
            #expect(answer.changes.count == 2)
        }
        // The watcher, whose feed was asking the stopped server, goes on from its token.
        let ids = try [bob, diana].map { key in
            let reference = try #require(Int64(key.split(separator: "/")[1]))
            return try #require(watcher.objectID(for: reference, entityName: "Employee"))
        }
        #expect(eventually(30) { heard.withLock { heard in ids.allSatisfy { id in heard.contains { $0.updated.contains(id) } } } })
        #expect(!heard.withLock { $0.contains(where: \.includesUnknownChanges) }, "no reset: the watcher keeps what it holds")
    }

    @Test("Writers at once: the history numbers their saves in commit order, and a reader following it misses none")
    func historyInCommitOrder() async throws {
        try await offThePool { try self.run_historyInCommitOrder() }
    }

    func run_historyInCommitOrder() throws {
        let served = try ServedSchema(servers: 1)
        let reader = served.stores[0]
        let writers = try (0..<4).map { _ in try ServedSchema.store(served.schemaName) }
        defer { for writer in writers { writer.close() } }
        let names = ["Bob Baker", "Diana Diaz"]
        let done = Mutex(false)
        let seen = Mutex<[Int64]>([])
        // A reader asks for what came after the last number it saw, again and again, while the writers save.
        let reading = Thread {
            var last: Int64 = 0
            while true {
                let finished = done.withLock { $0 }
                let read = (try? reader.changeHistory(after: last, limit: 50)) ?? []
                seen.withLock { $0 += read.map(\.number) }
                last = read.last?.number ?? last
                if finished && read.isEmpty { break }
                if read.isEmpty { Thread.sleep(forTimeInterval: 0.005) }
            }
            done.withLock { $0 = false }
        }
        reading.start()
        DispatchQueue.concurrentPerform(iterations: writers.count) { index in
            for round in 0..<10 {
                // Conflicts are expected (two writers on one row): a save that fails writes nothing and numbers nothing.
                _ = try? setAge(Int64(20 + round), of: names[index % names.count], through: writers[index])
            }
        }
        done.withLock { $0 = true }
        #expect(eventually(30) { !done.withLock { $0 } })
        let all = try reader.changeHistory(after: 0, limit: 1_000).map(\.number)
        #expect(!all.isEmpty)
        #expect(all == Array(1...Int64(all.count)), "numbers follow one another")
        #expect(seen.withLock { $0 } == all, "the reader saw every number, once, in order")
    }
}

@Suite("The change feed of an SQLite store across a server's restart")
struct SQLiteFeedRestartTests {
    @Test("Without persistent history a restarted server answers an old token with reset; with it, with what came since")
    func restart() async throws {
        try await offThePool { try self.run_restart() }
    }

    func run_restart() throws {
        let folder = try ScratchFolder()
        for history in [false, true] {
            let file = folder.url.appendingPathComponent("company-\(history).sqlite")
            let store = try SQLiteStore(url: file, model: Company.model, historyTracking: history ? .on : .asStored)
            try store.importDataSet(Company.dataSet)
            var server: TestServer? = try TestServer(serving: store)
            let before = try feedToken(try #require(server?.url))
            if history { #expect(before.hasPrefix(try store.identifier + "."), "the token names the store's history: \(before)") }
            let saved = try setAge(44, of: "Bob Baker", through: store)
            let token = try feed(try #require(server?.url), after: before).token
            server?.stop()
            server = nil
            // While the server is down.
            let later = try setAge(45, of: "Diana Diaz", through: store)
            let restarted = try TestServer(serving: store)
            defer { restarted.stop() }
            let answer = try feed(restarted.url, after: token)
            if history {
                #expect(!answer.reset)
                #expect(answer.updated == [later])
                #expect(try feed(restarted.url, after: before).updated == [saved, later])
            } else {
                #expect(answer.reset, "a store without history: the restarted server cannot know what came since")
                #expect(answer.changes.isEmpty)
            }
        }
    }
}
