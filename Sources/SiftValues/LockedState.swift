// Stage 0 (values): state shared between threads, behind a lock — the one
// lock utility of every stage.
//
// A pthread mutex (through NSLock) rather than the standard library's
// `Mutex`: both are correct, but the thread sanitizer sees the ordering a
// pthread mutex gives and not the futex inside `Mutex` (which it reports as
// races between accesses made under the lock). CI runs the write path under
// the thread sanitizer, so shared state uses this.

import Foundation

/// A value that several threads read and change, one at a time.
package final class LockedState<State>: @unchecked Sendable {
    // (Inlinable, so that callers may specialize it.)
    @usableFromInline let lock = NSLock()
    @usableFromInline var state: State

    package init(_ state: State) {
        self.state = state
    }

    /// Runs `body` with the value, under the lock.
    @inlinable
    package func withLock<R, Failure: Error>(_ body: (inout State) throws(Failure) -> R) throws(Failure) -> R {
        // The access to `state` ends with the call to `body`, before the
        // unlock on either path, whatever order the compiler would give a
        // `defer` and the end of an access (the thread sanitizer once saw a
        // zero-sized state accessed after the unlock). (No `Result`: an
        // unspecialized call looked up the metadata of its `Result` type.)
        lock.lock()
        do {
            let result = try body(&state)
            lock.unlock()
            return result
        } catch {
            lock.unlock()
            throw error
        }
    }
}
