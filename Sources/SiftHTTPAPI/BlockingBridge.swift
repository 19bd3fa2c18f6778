// Sift's contexts and stores are synchronous; the HTTP libraries are async.
// The bridge runs async work on threads of its own (a task executor over a
// dispatch queue) and waits for it, so that a synchronous caller — even one
// on Swift's cooperative pool, as tests are — never waits for a pool thread
// it is itself holding. The server runs on such an executor too, so a test
// that blocks pool threads does not starve the server in the same process.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
internal import Foundation
import Sift

/// A task executor whose jobs run on threads of their own, off Swift's
/// cooperative pool: each job on a new serial dispatch queue, which libdispatch
/// runs on its overcommitting pool (a thread even when every other one is
/// blocked). On Linux the cooperative pool is libdispatch's default root
/// queue, as wide as the machine has cores; jobs queued there behind callers
/// blocked in `BlockingBridge.run` would never run.
package final class DispatchTaskExecutor: TaskExecutor, @unchecked Sendable {
    private let label: String

    package init(label: String) {
        self.label = label
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        DispatchQueue(label: label).async { job.runSynchronously(on: executor) }
    }
}

package enum BlockingBridge {
    /// The executor the bridge runs async work on.
    package static let executor = DispatchTaskExecutor(label: "sift.http.bridge")

    /// Runs `body` on the bridge's executor and waits for its result.
    package static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let result = LockedState<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: executor) {
            let outcome: Result<T, any Error>
            do { outcome = .success(try await body()) } catch { outcome = .failure(error) }
            result.withLock { $0 = outcome }
            done.signal()
        }
        done.wait()
        guard let outcome = result.withLock({ $0 }) else { throw CancellationError() }
        return try outcome.get()
    }
}
#endif
