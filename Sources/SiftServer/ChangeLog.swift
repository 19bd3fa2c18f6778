// The server's change feed: every change its store's observers hear — saves
// and batch changes through the API, saves of contexts in the same process,
// another process's saves a PostgreSQL or SQLite store hears of — numbered
// in order under a token (`<run>.<number>`). A client asks for the changes
// after its token and waits (long poll) for the next; a token of another
// run of the server, or older than the changes kept, answers `reset`:
// refetch; so do changes the store could not name (another process wrote a
// SQLite store that keeps no history).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

final class ChangeLog: Sendable {
    /// One change, as the store's observers heard it.
    struct Entry: Sendable {
        var sequence: Int64
        var changes: StoreChanges
        /// Who saved, when the request named itself.
        var origin: String?
    }

    /// This run of the server: tokens of other runs are unknown.
    let run: String
    /// How many changes are kept.
    let capacity: Int
    private let state = LockedState<(entries: [Entry], last: Int64)>(([], 0))
    /// Long polls waiting for the next change, each resumed once: by a change, its deadline, or the server stopping.
    private let waiters = LockedState<[UUID: CheckedContinuation<Void, Never>]>([:])
    /// The queue the deadlines fire on (a serial queue: libdispatch's overcommitting pool, never
    /// behind threads blocked elsewhere; `Task.sleep` would need a thread of Swift's cooperative pool).
    private let timers = DispatchQueue(label: "sift.serve.feed")

    init(capacity: Int = 10_000) {
        run = String(UUID().uuidString.prefix(8)).lowercased()
        self.capacity = capacity
    }

    /// The token of the last change.
    var token: ChangeToken { ChangeToken(run: run, sequence: state.withLock { $0.last }) }

    /// Records a change; returns its token.
    @discardableResult
    func append(_ changes: StoreChanges) -> ChangeToken {
        defer { wakeAll() }
        let origin = origins.withLock { $0[Self.thread] }
        return state.withLock { state in
            state.last += 1
            state.entries.append(Entry(sequence: state.last, changes: changes, origin: origin))
            if state.entries.count > capacity { state.entries.removeFirst(state.entries.count - capacity) }
            return ChangeToken(run: run, sequence: state.last)
        }
    }

    /// Who is saving on each thread, while ``announcing(from:_:)`` runs.
    private let origins = LockedState<[ObjectIdentifier: String]>([:])

    private static var thread: ObjectIdentifier { ObjectIdentifier(Thread.current) }

    /// Runs `body` (a save's announcement) with the changes it announces on
    /// this thread recorded as `origin`'s.
    func announcing(from origin: String?, _ body: () -> Void) {
        guard let origin else { return body() }
        let thread = Self.thread
        origins.withLock { $0[thread] = origin }
        defer { origins.withLock { $0[thread] = nil } }
        body()
    }

    /// Waits until a change is appended, `seconds` pass, or ``wakeAll()``.
    func waitForChange(seconds: Double) async {
        let id = UUID()
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            waiters.withLock { $0[id] = continuation }
            timers.asyncAfter(deadline: .now() + seconds) { [weak self] in
                self?.waiters.withLock { $0.removeValue(forKey: id) }?.resume()
            }
        }
    }

    /// Resumes every long poll (a change came, or the server is stopping).
    func wakeAll() {
        let all = waiters.withLock { waiters in
            defer { waiters = [:] }
            return Array(waiters.values)
        }
        for continuation in all { continuation.resume() }
    }

    /// The changes after `token`, oldest first, and whether the token is
    /// unknown (another run's, newer than the last, or older than those kept).
    func changes(after token: ChangeToken?) -> (entries: [Entry], last: Int64, reset: Bool) {
        state.withLock { state in
            guard let token else { return ([], state.last, false) }
            guard token.run == run, token.sequence <= state.last else { return ([], state.last, true) }
            if let first = state.entries.first, token.sequence < first.sequence - 1 { return ([], state.last, true) }
            let entries = state.entries.filter { $0.sequence > token.sequence }
            if entries.contains(where: { $0.changes.includesUnknownChanges }) { return ([], state.last, true) }
            return (entries, state.last, false)
        }
    }
}
#endif
