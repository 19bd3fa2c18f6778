// A retried save is applied once. A change set names its origin and its
// sequence; the server remembers its answer (in a table of the store, in the
// save's own transaction) and answers a retry as it answered the first
// request, writing nothing. The fault: the server's `beforeAnswer` hook throws
// after the commit, so the answer is lost (the client hears a 500). On SQLite,
// and on PostgreSQL when SIFT_POSTGRES_URL names a server.

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sift
import SiftHTTPAPI
import SiftRemote
@testable import SiftServer
import SiftStore
import Synchronization
import Testing

/// The answers a server was about to send, and how many more of them to lose.
final class AnswerTap: Sendable {
    struct LostAnswer: Error {}

    private let state: Mutex<(seen: [(answer: Components.Schemas.SaveAnswer, remembered: Bool)], losing: Int)>

    init(losing: Int) {
        state = Mutex(([], losing))
    }

    /// The server's hook: records the answer, and loses it while there are answers to lose.
    var hook: @Sendable (Components.Schemas.SaveAnswer, Bool) async throws -> Void {
        { answer, remembered in
            let lose = self.state.withLock { state in
                state.seen.append((answer, remembered))
                defer { state.losing -= 1 }
                return state.losing > 0
            }
            if lose { throw LostAnswer() }
        }
    }

    var seen: [(answer: Components.Schemas.SaveAnswer, remembered: Bool)] { state.withLock { $0.seen } }
}

@Suite("A retried save is applied once")
struct RetriedSaveTests {
    /// The stores whose answers are remembered in a table: SQLite, and PostgreSQL when configured.
    static let sqlKinds: [StoreKind] = StoreKind.postgresURL == nil ? [.sqlite] : [.sqlite, .postgres]
    /// Those, and a store without tables (its answers remembered in the server's memory).
    static let allKinds: [StoreKind] = sqlKinds + [.atomic]

    static let names = ["Retry Ann", "Retry Bo", "Retry Cy"]

    /// How many employees of `name` the served store holds.
    static func count(_ name: String, in store: any PersistentStore) throws -> Int {
        try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee", predicate: "name == '\(name)'"))
    }

    /// Inserts an employee for each of `names` into `context`.
    static func hire(_ names: [String], into context: ObjectContext) throws -> [ManagedObject] {
        try names.map { name in
            let hire = try context.insert("Employee")
            try hire.setValue(.string(name), forKey: "name")
            try hire.setValue(.int(33), forKey: "age")
            try hire.setValue(.double(50_000), forKey: "salary")
            try hire.setValue(.bool(false), forKey: "isManager")
            try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
            return hire
        }
    }

    @Test("A save whose answer is lost after the commit is sent again: one row per insert, the same answer both times",
          arguments: sqlKinds)
    func answerLostAfterCommit(kind: StoreKind) async throws {
        try await offThePool { try self.run_answerLostAfterCommit(kind) }
    }

    func run_answerLostAfterCommit(_ kind: StoreKind) throws {
        let served = try kind.make()
        let tap = AnswerTap(losing: 1)
        let server = try TestServer(serving: served.store) { $0.beforeAnswer = tap.hook }
        defer { server.stop() }
        let remote = try RemoteStore(url: server.url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let context = ObjectContext(store: remote)
        let hires = try Self.hire(Self.names, into: context)
        try context.save()
        #expect(!context.hasChanges)
        // The first answer was lost after its commit; the client sent the change set again and was answered
        // as the first request was, from what the server remembered.
        let seen = tap.seen
        try #require(seen.count == 2)
        #expect(seen.map(\.remembered) == [false, true])
        #expect(seen[0].answer == seen[1].answer)
        #expect(seen[0].answer.keys.count == Self.names.count)
        for name in Self.names { #expect(try Self.count(name, in: served.store) == 1, "\(name)") }
        // The context holds the keys the server gave.
        #expect(Set(hires.map(\.objectID.primaryKey)) == Set(seen[0].answer.keys.map(\.key)))
    }

    @Test("A context's retry of a save whose answers were lost, to a restarted server, is answered from the store: one row per insert",
          arguments: sqlKinds)
    func retryAfterRestart(kind: StoreKind) async throws {
        try await offThePool { try self.run_retryAfterRestart(kind) }
    }

    func run_retryAfterRestart(_ kind: StoreKind) throws {
        let served = try kind.make()
        // Both the first answer and the one to the client's resend are lost: the save fails, retryably.
        let tap = AnswerTap(losing: 2)
        let first = try TestServer(serving: served.store) { $0.beforeAnswer = tap.hook }
        let port = first.port
        let remote = try RemoteStore(url: first.url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let context = ObjectContext(store: remote)
        let hires = try Self.hire(Self.names, into: context)
        let failure = Result { () throws(StoreError) in try context.save() }
        guard case .failure(let error) = failure else {
            Issue.record("the save succeeded though its answers were lost")
            first.stop()
            return
        }
        #expect(error.isRetryable, "\(error)")
        #expect(context.hasChanges)
        #expect(tap.seen.map(\.remembered) == [false, true])
        // Written once, though the client does not know it.
        for name in Self.names { #expect(try Self.count(name, in: served.store) == 1, "\(name)") }
        first.stop()
        // Another run of the server, on the same store and port: it knows the answer from the store alone.
        let again = AnswerTap(losing: 0)
        let restarted = try TestServer(serving: served.store, port: port) { $0.beforeAnswer = again.hook }
        defer { restarted.stop() }
        var attempts = 0
        while true {
            attempts += 1
            let result = Result { () throws(StoreError) in try context.save() }
            // A connection pooled to the stopped server may fail once more, retryably.
            guard case .failure(let error) = result, error.isRetryable, attempts < 5 else {
                try result.get()
                break
            }
            Thread.sleep(forTimeInterval: 0.2)
        }
        #expect(!context.hasChanges)
        let seen = again.seen
        try #require(seen.count == 1)
        #expect(seen[0].remembered)
        let original = tap.seen[0].answer
        #expect(seen[0].answer.keys == original.keys)
        #expect(seen[0].answer.versions == original.versions)
        for name in Self.names { #expect(try Self.count(name, in: served.store) == 1, "\(name)") }
        #expect(Set(hires.map(\.objectID.primaryKey)) == Set(original.keys.map(\.key)))
    }

    /// A change set inserting one employee, as JSON.
    static func changeSet(name: String, origin: String?, sequence: Int64?) -> Data {
        var body: [String: Any] = [
            "inserts": [["temporaryID": -1, "entity": "Employee",
                         "values": ["name": name, "age": 40, "salary": ["double": 1000], "isManager": false, "startDate": ["date": 0]]]],
        ]
        if let origin { body["origin"] = origin }
        if let sequence { body["sequence"] = sequence }
        return (try? JSONSerialization.data(withJSONObject: body)) ?? Data()
    }

    @Test("The same change set sent twice with its identity is written once and answered the same; a new sequence is written again",
          arguments: allKinds)
    func sameChangeSetTwice(kind: StoreKind) async throws {
        try await offThePool { try self.run_sameChangeSetTwice(kind) }
    }

    func run_sameChangeSetTwice(_ kind: StoreKind) throws {
        let served = try kind.make()
        let server = try TestServer(serving: served.store)
        defer { server.stop() }
        let url = server.url.appendingPathComponent("v1/save")
        let body = Self.changeSet(name: "Twice", origin: "tester", sequence: 7)
        let first = try exchange(url, body: body)
        let second = try exchange(url, body: body)
        #expect(first.status == 200)
        #expect(second.status == 200)
        let decoder = JSONDecoder()
        let answers = try [first, second].map { try decoder.decode(Components.Schemas.SaveAnswer.self, from: $0.data) }
        #expect(answers[0] == answers[1])
        #expect(answers[0].keys.count == 1)
        #expect(try Self.count("Twice", in: served.store) == 1)
        // Another sequence of the origin is another change set, and so is the same sequence of another origin.
        #expect(try exchange(url, body: Self.changeSet(name: "Twice", origin: "tester", sequence: 8)).status == 200)
        #expect(try exchange(url, body: Self.changeSet(name: "Twice", origin: "other", sequence: 7)).status == 200)
        #expect(try Self.count("Twice", in: served.store) == 3)
        // Without an identity nothing is remembered: sent twice, written twice.
        let anonymous = Self.changeSet(name: "Anonymous", origin: "tester", sequence: nil)
        #expect(try exchange(url, body: anonymous).status == 200)
        #expect(try exchange(url, body: anonymous).status == 200)
        #expect(try Self.count("Anonymous", in: served.store) == 2)
        // A sequence needs an origin, and is at least 1.
        #expect(try exchange(url, body: Self.changeSet(name: "Bad", origin: nil, sequence: 1)).status == 400)
        #expect(try exchange(url, body: Self.changeSet(name: "Bad", origin: "tester", sequence: 0)).status == 400)
        #expect(try Self.count("Bad", in: served.store) == 0)
    }

    @Test("An origin's answers are remembered for its latest 100 change sets")
    func boundedPerOrigin() async throws {
        try await offThePool { try self.run_boundedPerOrigin() }
    }

    func run_boundedPerOrigin() throws {
        let served = try StoreKind.sqlite.make()
        let server = try TestServer(serving: served.store)
        defer { server.stop() }
        let url = server.url.appendingPathComponent("v1/save")
        for sequence in 1...101 {
            #expect(try exchange(url, body: Self.changeSet(name: "Bounded \(sequence)", origin: "bounded", sequence: Int64(sequence))).status
                    == 200)
        }
        // Change set 2 is among the latest 100: answered, not written again; change set 1 is forgotten.
        #expect(try exchange(url, body: Self.changeSet(name: "Bounded 2", origin: "bounded", sequence: 2)).status == 200)
        #expect(try Self.count("Bounded 2", in: served.store) == 1)
        #expect(try exchange(url, body: Self.changeSet(name: "Bounded 1", origin: "bounded", sequence: 1)).status == 200)
        #expect(try Self.count("Bounded 1", in: served.store) == 2)
    }
}
