// Stage 6a (memory lowering): state shared between threads, behind a lock.
//
// A pthread mutex (through NSLock) rather than the standard library's
// `Mutex`: both are correct, but the thread sanitizer sees the ordering a
// pthread mutex gives and not the futex inside `Mutex` (which it reports as
// races between accesses made under the lock). CI runs the write path under
// the thread sanitizer, so shared state uses this.

import Foundation

/// A value that several threads read and change, one at a time.
package final class LockedState<State>: @unchecked Sendable {
    private let lock = NSLock()
    private var state: State

    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the value, under the lock.
    package func withLock<R>(_ body: (inout State) throws -> R) rethrows -> R {
        lock.lock()
        defer { lock.unlock() }
        return try body(&state)
    }
}
