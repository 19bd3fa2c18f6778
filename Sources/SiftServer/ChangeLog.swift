// The server's change feed: every change its store's observers hear — saves
// and batch changes through the API, saves of contexts in the same process,
// another process's saves a PostgreSQL or SQLite store hears of — numbered
// in order under a token (`<run>.<number>`). A client asks for the changes
// after its token and waits (long poll) for the next.
//
// Where the store numbers its write transactions itself (a PostgreSQL store's
// change history; an SQLite store's persistent history), the feed is durable:
// the run is the history's name (the store's UUID), the number the
// transaction's, and the changes are read from the history (the newest kept
// in memory, refreshed when the store's observers hear of a change, and at
// least every second while clients wait). Every server on the store then
// gives the same tokens, a restarted server goes on from where it was, and a
// client may move from one server to another. Otherwise the run is this run
// of the server, the changes kept in memory as the observers hear them.
//
// A token of another run, newer than the last, or older than the changes
// kept, answers `reset`: refetch; so do changes the store could not name
// (another process wrote an SQLite store and kept no history).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

final class ChangeLog: Sendable {
    /// One change, as the store's observers heard it or its history holds it.
    struct Entry: Sendable {
        var sequence: Int64
        var changes: StoreChanges
        /// Who saved, when the request named itself (in a history, the transaction's author).
        var origin: String?
    }

    /// The changes after a token: oldest first, the number to ask after
    /// next, the run the numbers belong to, and whether the token is unknown.
    struct Answer: Sendable {
        var entries: [Entry]
        var last: Int64
        var run: String
        var reset: Bool
    }

    private struct State {
        /// The run tokens belong to.
        var run: String
        /// The changes kept, oldest first: all of them after `floor`.
        var entries: [Entry] = []
        /// The last number.
        var last: Int64 = 0
        /// The number the changes kept follow.
        var floor: Int64 = 0
        /// Durable: whether the history has not been read yet, or a change was heard since it was read.
        var stale = true
        /// Durable: when the history was last read.
        var refreshed: ContinuousClock.Instant?
        /// Durable: how many changes the store could not name were heard (each makes a new run).
        var unknownChanges = 0
    }

    /// The store's history, when the feed is durable.
    private let history: (any ChangeHistoryStore)?
    /// The history's name, when the feed is durable.
    private let identity: String?
    /// How many changes are kept in memory.
    let capacity: Int
    private let state: LockedState<State>
    /// Held while the history is read: one reader at a time, the others then find it read.
    private let reading = LockedState(())
    /// Long polls waiting for the next change, each resumed once: by a change, its deadline, or the server stopping.
    private let waiters = LockedState<[UUID: CheckedContinuation<Void, Never>]>([:])
    /// The queue the deadlines fire on (a serial queue: libdispatch's overcommitting pool, never
    /// behind threads blocked elsewhere; `Task.sleep` would need a thread of Swift's cooperative pool).
    private let timers = DispatchQueue(label: "sift.serve.feed")
    /// How long, at most, the history goes unread while clients wait (in case a notification is lost).
    static let refreshInterval: Duration = .seconds(1)

    /// A feed for `store`: durable when the store keeps a change history.
    init(store: any PersistentStore, capacity: Int = 10_000) {
        self.capacity = capacity
        if let history = store as? any ChangeHistoryStore, let identity = try? history.changeHistoryIdentity() {
            self.history = history
            self.identity = identity
            state = LockedState(State(run: identity))
        } else {
            history = nil
            identity = nil
            state = LockedState(State(run: String(UUID().uuidString.prefix(8)).lowercased(), stale: false))
        }
    }

    /// The token of the last change. Durable, it may read the store (off Swift's cooperative pool only).
    var token: ChangeToken {
        if history != nil { try? refresh() }
        return state.withLock { ChangeToken(run: $0.run, sequence: $0.last) }
    }

    /// Records a change the store's observers heard; returns its token.
    /// Durable, the change is read from the history instead: this marks it
    /// to be read, and a change the store could not name starts a new run.
    @discardableResult
    func append(_ changes: StoreChanges) -> ChangeToken {
        defer { wakeAll() }
        guard history == nil else {
            return state.withLock { state in
                state.stale = true
                if changes.includesUnknownChanges, let identity {
                    state.unknownChanges += 1
                    state.run = "\(identity)~\(state.unknownChanges)"
                }
                return ChangeToken(run: state.run, sequence: state.last)
            }
        }
        let origin = origins.withLock { $0[Self.thread] }
        return state.withLock { state in
            state.last += 1
            keep([Entry(sequence: state.last, changes: changes, origin: origin)], in: &state)
            return ChangeToken(run: state.run, sequence: state.last)
        }
    }

    /// Adds entries to those kept, dropping the oldest past the capacity.
    private func keep(_ entries: [Entry], in state: inout State) {
        state.entries += entries
        if state.entries.count > capacity {
            let dropped = state.entries.count - capacity
            state.floor = state.entries[dropped - 1].sequence
            state.entries.removeFirst(dropped)
        }
    }

    /// Reads the history's new transactions into memory when a change was
    /// heard since it was last read, it was read more than
    /// ``refreshInterval`` ago, or `force`; nothing for a feed that is not durable.
    ///
    /// - Throws: `StoreError` when the store cannot be read (the history is read again next time).
    func refresh(force: Bool = false) throws(StoreError) {
        guard let history else { return }
        try reading.withLock { (_: inout ()) throws(StoreError) -> Void in try read(history, force: force) }
    }

    /// ``refresh(force:)``'s work, one reader at a time.
    private func read(_ history: any ChangeHistoryStore, force: Bool) throws(StoreError) {
        let now = ContinuousClock.now
        let (due, first, last) = state.withLock { state in
            let due = force || state.stale || state.refreshed.map { now - $0 >= Self.refreshInterval } ?? true
            if due { state.stale = false }
            return (due, state.refreshed == nil, state.last)
        }
        guard due else { return }
        do {
            var read: [Entry] = []
            var after = last
            if first {
                // The feed starts at the history's end.
                after = try history.changeHistoryBounds().newest ?? 0
                state.withLock { state in (state.last, state.floor) = (after, after) }
            }
            // The newest transactions, a few batches at most (the next read goes on from there); memory
            // keeps `capacity` of them, and those before are read from the store when asked for.
            for _ in 0..<4 {
                let batch = try history.changeHistory(after: after, limit: capacity)
                read += batch.map { Entry(sequence: $0.number, changes: $0.changes, origin: $0.author) }
                after = batch.last?.number ?? after
                if batch.count < capacity { break }
            }
            state.withLock { state in
                state.refreshed = now
                guard let newest = read.last?.sequence, newest > state.last else { return }
                keep(read.filter { $0.sequence > state.last }, in: &state)
                state.last = newest
            }
        } catch {
            state.withLock { $0.stale = true }
            throw error
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

    /// The changes after `token` as memory holds them; nil when the store
    /// must be read first (``changes(after:)``, off Swift's cooperative pool).
    func changesInMemory(after token: ChangeToken?) -> Answer? {
        answer(after: token, fresh: false)
    }

    /// The changes after `token` as memory holds them; nil when a durable
    /// feed must read its history first: when `fresh` is false, because it
    /// was not read since a change was heard or for a while; and because the
    /// token is newer than the last or older than the changes kept.
    private func answer(after token: ChangeToken?, fresh: Bool) -> Answer? {
        state.withLock { state in
            if history != nil, !fresh {
                guard !state.stale, let refreshed = state.refreshed, ContinuousClock.now - refreshed < Self.refreshInterval else {
                    return nil
                }
            }
            guard let token else { return Answer(entries: [], last: state.last, run: state.run, reset: false) }
            let reset = Answer(entries: [], last: state.last, run: state.run, reset: true)
            guard token.run == state.run else { return reset }
            // Newer than the last: durable, another server may have read further.
            guard token.sequence <= state.last else { return history == nil ? reset : nil }
            // Older than the changes kept: durable, the history may hold them.
            guard token.sequence >= state.floor else { return history == nil ? reset : nil }
            let entries = state.entries.filter { $0.sequence > token.sequence }
            if entries.contains(where: { $0.changes.includesUnknownChanges }) { return reset }
            return Answer(entries: entries, last: state.last, run: state.run, reset: false)
        }
    }

    /// The changes after `token`, oldest first, and whether the token is
    /// unknown (another run's, newer than the last, or older than the changes
    /// kept). Durable, it reads the store (off Swift's cooperative pool only).
    ///
    /// - Throws: `StoreError` when the store's history cannot be read.
    func changes(after token: ChangeToken?) throws(StoreError) -> Answer {
        try refresh()
        if let answer = answer(after: token, fresh: true) { return answer }
        let (run, last) = state.withLock { ($0.run, $0.last) }
        let reset = Answer(entries: [], last: last, run: run, reset: true)
        guard let history, let token else { return reset }
        if token.sequence > last {
            // A number another server read before this one: read the history once more.
            try refresh(force: true)
            return answer(after: token, fresh: true) ?? state.withLock { Answer(entries: [], last: $0.last, run: $0.run, reset: true) }
        }
        // Older than memory holds: from the history, unless it no longer holds them all.
        guard let oldest = try history.changeHistoryBounds().oldest, token.sequence >= oldest - 1 else { return reset }
        let read = try history.changeHistory(after: token.sequence, limit: capacity)
        return Answer(entries: read.map { Entry(sequence: $0.number, changes: $0.changes, origin: $0.author) },
                      last: read.last?.number ?? token.sequence, run: run, reset: false)
    }
}
#endif
