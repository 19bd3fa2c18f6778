// Store stage: other processes' saves to a SQLite store. While anyone
// observes the store (a context that merges automatically, a fetched
// results controller's context, `sift watch`, an `addObserver` of yours),
// the store asks SQLite every `otherProcessesPollingInterval` seconds
// whether another connection committed (`PRAGMA data_version`, which its
// own commits leave alone). When one did, a store that keeps persistent
// history reads the transactions after the last one it saw — skipping its
// own — and announces what they changed, as its own saves are announced;
// a store without history (or a commit that wrote none, or history deleted
// before it was read) announces `StoreChanges.unknown`: refetch. The
// rows named leave the row cache first, so the next read sees them new.

import Foundation
import Sift

/// Polls a store's file for other connections' commits, on a queue of its own.
final class OtherProcessWatcher: @unchecked Sendable {
    // @unchecked: `timer`, `dataVersion` and `lastTransaction` are used on
    // `queue` alone (and under the store's connection lock); the rest are locked.
    private let queue = DispatchQueue(label: "sift.sqlite.other-processes")
    private var timer: DispatchSourceTimer?
    private var scheduledInterval = 0.0
    /// The connection's `data_version` when last read.
    var dataVersion: Int64?
    /// The last transaction of the store's history already announced (or its own).
    var lastTransaction: Int64 = 0
    /// Transactions this store wrote and the watcher has not passed yet: not announced again.
    let ownTransactions = LockedState<Set<Int64>>([])
    /// Seconds between two looks at the file.
    let interval = LockedState<Double>(0.1)
    private weak var store: SQLiteStore?

    init(store: SQLiteStore) {
        self.store = store
    }

    /// Whether it polls (or is about to).
    private let running = LockedState(false)

    /// Starts polling (nothing when it polls already). Where it starts from
    /// is read now, on the caller's thread: a fetch made after the observer
    /// was added misses nothing that is announced.
    func start() {
        let starting = running.withLock { running in
            defer { running = true }
            return !running
        }
        guard starting, let store else { return }
        store.beginWatching(self)
        queue.async { [self] in
            let timer = DispatchSource.makeTimerSource(queue: queue)
            timer.setEventHandler { [weak self] in self?.tick() }
            self.timer = timer
            schedule()
            timer.resume()
        }
    }

    private func schedule() {
        let seconds = interval.withLock { $0 }
        scheduledInterval = seconds
        timer?.schedule(deadline: .now() + seconds, repeating: seconds, leeway: .milliseconds(5))
    }

    private func tick() {
        // Nobody listens any more, or the store is gone: stop (the next observer starts it again).
        let stopping = running.withLock { running in
            guard let store, store.observers.isObserved else {
                running = false
                return true
            }
            return false
        }
        guard !stopping, let store else {
            timer?.cancel()
            timer = nil
            return
        }
        store.checkOtherProcesses(self)
        if interval.withLock({ $0 }) != scheduledInterval { schedule() }
    }
}

extension SQLiteStore {
    /// How often, in seconds, the store looks for other processes' saves
    /// while it is observed: 0.1 by default, kept between 0.01 and 10.
    public var otherProcessesPollingInterval: Double {
        get { otherProcesses?.interval.withLock { $0 } ?? 0.1 }
        set {
            let bounded = newValue.isNaN ? 0.1 : min(max(newValue, 0.01), 10)
            otherProcesses?.interval.withLock { $0 = bounded }
        }
    }

    /// Where watching starts: the file's version now, and the last transaction of its history.
    func beginWatching(_ watcher: OtherProcessWatcher) {
        try? withConnection { connection in
            watcher.dataVersion = try Self.dataVersion(connection)
            if tracksPersistentHistory, let last = try currentPersistentHistoryToken() {
                watcher.lastTransaction = last.transactionNumber
            }
        }
    }

    /// Announces what other connections committed since the last look, if anything.
    func checkOtherProcesses(_ watcher: OtherProcessWatcher) {
        let changes: StoreChanges? = try? withConnection { connection in
            let version = try Self.dataVersion(connection)
            guard version != watcher.dataVersion else { return nil }
            watcher.dataVersion = version
            guard tracksPersistentHistory else { return .unknown }
            let transactions = try persistentHistory(
                after: PersistentHistoryToken(storeUUID: try identifier, transactionNumber: watcher.lastTransaction))
            var changes = StoreChanges()
            // A gap: history another process deleted before it was read.
            if let first = transactions.first?.transactionNumber, first > watcher.lastTransaction &+ 1 {
                changes.includesUnknownChanges = true
            }
            let own = watcher.ownTransactions.withLock { own in
                defer { own = own.filter { $0 > (transactions.last?.transactionNumber ?? watcher.lastTransaction) } }
                return own
            }
            // Another connection committed, and wrote no history: a writer that keeps none (a tool's raw SQL, say).
            if !transactions.contains(where: { !own.contains($0.transactionNumber) }) { changes.includesUnknownChanges = true }
            for transaction in transactions where !own.contains(transaction.transactionNumber) {
                for change in transaction.changes { changes.record(change) }
            }
            if let last = transactions.last?.transactionNumber { watcher.lastTransaction = last }
            return changes.isEmpty ? nil : changes
        }
        guard let changes else { return }
        if changes.includesUnknownChanges {
            rowCache.removeAll()
        } else {
            rowCache.remove(changes.updated.union(changes.deleted))
        }
        announce(changes)
    }

    private static func dataVersion(_ connection: SQLiteConnection) throws -> Int64? {
        if case .integer(let version)? = try connection.query(HistoryStatements.dataVersion).first?.first { return version }
        return nil
    }
}
