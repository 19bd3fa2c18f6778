// Store stage: who hears about saves — a store's observers, the token that
// stops one, and what each committed save changed.

import Foundation
import Sift
import Synchronization

/// What a save changed, as the store announces it to every observer.
public struct StoreChanges: Hashable, Sendable {
    /// Rows the save inserted, by their permanent IDs.
    public var inserted: Set<ObjectID>
    /// Rows the save wrote new values or links to.
    public var updated: Set<ObjectID>
    /// Rows the save deleted, or found deleted.
    public var deleted: Set<ObjectID>
    /// Whether rows changed that the store cannot name: another process
    /// wrote a store that keeps no persistent history. Anything read may
    /// be stale: refetch.
    public var includesUnknownChanges = false

    /// Changes another process made that the store cannot name (it keeps no
    /// persistent history to read them from).
    public static var unknown: StoreChanges {
        var changes = StoreChanges()
        changes.includesUnknownChanges = true
        return changes
    }

    /// Changes of these rows.
    ///
    /// - Parameters:
    ///   - inserted: Rows inserted, by their permanent IDs.
    ///   - updated: Rows that got new values or links.
    ///   - deleted: Rows deleted, or found deleted.
    public init(inserted: Set<ObjectID> = [], updated: Set<ObjectID> = [], deleted: Set<ObjectID> = []) {
        self.inserted = inserted
        self.updated = updated
        self.deleted = deleted
    }

    /// Whether the save changed nothing.
    public var isEmpty: Bool { inserted.isEmpty && updated.isEmpty && deleted.isEmpty && !includesUnknownChanges }
}

/// Who hears about a store's saves: the observers ``PersistentStore/addObserver(_:)``
/// adds. A store holds one and keeps it for its life.
public final class StoreObservers: Sendable {
    /// No observers yet.
    public init() {}
    let handlers = LockedState<[UUID: @Sendable (StoreChanges) -> Void]>([:])

    /// Adds an observer; the token removes it.
    /// Called when the first observer is added (a store that learns of
    /// other processes' writes only while someone listens starts then).
    let whenFirstObserved = LockedState<(@Sendable () -> Void)?>(nil)

    func add(_ observer: @escaping @Sendable (StoreChanges) -> Void) -> StoreObservation {
        let token = StoreObservation(observers: self)
        let first = handlers.withLock { handlers in
            defer { handlers[token.id] = observer }
            return handlers.isEmpty
        }
        if first, let start = whenFirstObserved.withLock({ $0 }) { start() }
        return token
    }

    /// Whether anyone listens.
    var isObserved: Bool { handlers.withLock { !$0.isEmpty } }

    /// Calls every observer with what a save changed (nothing when it
    /// changed nothing), on this thread.
    ///
    /// - Parameter changes: What the save changed.
    public func announce(_ changes: StoreChanges) {
        guard !changes.isEmpty else { return }
        for observer in handlers.withLock({ Array($0.values) }) { observer(changes) }
    }
}

/// An observer of a store; `cancel()` stops it, and nothing else does while
/// the store is open (releasing the observation does not).
public final class StoreObservation: Sendable {
    let id = UUID()
    weak let observers: StoreObservers?

    init(observers: StoreObservers) {
        self.observers = observers
    }

    /// Stops observing.
    public func cancel() {
        _ = observers?.handlers.withLock { $0.removeValue(forKey: id) }
    }
}
