// Store stage: contexts and Swift concurrency. A context is one scratch pad,
// used by one thread or task at a time; `perform` (async) and
// `performAndWait` run work on the context's own serial queue, one piece at
// a time, as Core Data's `perform` and `performAndWait` do, so that tasks
// and threads can share a context without racing. What comes out of a
// piece of work must be `Sendable` (IDs, counts, records), not the
// context's objects, which stay on its queue.

import Dispatch
import Foundation
import Sift

extension ObjectContext {
    /// Runs `body` on the context's queue, after the work queued before it,
    /// and returns its result to the calling task.
    ///
    /// ```swift
    /// let count = try await context.perform { context in
    ///     try context.count(for: FetchRequest(entityName: "Employee"))
    /// }
    /// ```
    ///
    /// - Parameter body: The work, given the context.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func perform<T: Sendable>(_ body: @escaping @Sendable (ObjectContext) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            queue.async {
                continuation.resume(with: Result { try body(self) })
            }
        }
    }

    /// Runs `body` on the context's queue and waits for it: at once when
    /// called from work the context is already running (so it never waits
    /// on itself).
    ///
    /// ```swift
    /// let names = try context.performAndWait { context in
    ///     try context.fetch(FetchRequest(entityName: "Employee")).compactMap { $0["name", as: String.self] }
    /// }
    /// ```
    ///
    /// - Parameter body: The work, given the context.
    /// - Returns: What `body` returns.
    /// - Throws: What `body` throws.
    public func performAndWait<T>(_ body: (ObjectContext) throws -> T) rethrows -> T {
        if DispatchQueue.getSpecific(key: Self.queueKey) == ObjectIdentifier(self) { return try body(self) }
        return try queue.sync { try body(self) }
    }
}
