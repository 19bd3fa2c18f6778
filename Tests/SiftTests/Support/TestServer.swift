// A `sift serve` server in the test process, on 127.0.0.1 and a free port
// (or the port of a server that stopped, to restart it), stopped when the
// test lets go of it.

import Foundation
import SiftHTTPAPI
import SiftRemote
import SiftServer
import SiftStore

final class TestServer: Sendable {
    let server: StoreServer
    let url: URL

    init(serving store: any PersistentStore, port: Int = 0,
         configure: (inout ServerConfiguration) -> Void = { _ in }) throws {
        var configuration = ServerConfiguration()
        configuration.port = port
        configuration.isWritable = true
        configure(&configuration)
        let server = try StoreServer(store: store, configuration: configuration)
        self.server = server
        url = try BlockingBridge.run { try await server.start() }
    }

    /// The port it listens on.
    var port: Int { url.port ?? 0 }

    func stop() {
        let server = self.server
        try? BlockingBridge.run { await server.stop() }
    }

    deinit {
        // Not waited for: a test's thread may be one of Swift's cooperative pool.
        let server = self.server
        Task(executorPreference: BlockingBridge.executor) { await server.stop() }
    }
}

/// Runs `body` on a thread of its own and waits for it without holding a
/// thread of Swift's cooperative pool (which is as wide as the machine has
/// cores): a test that blocks on servers in its own process, starting and
/// stopping them, leaves the pool to the servers.
func offThePool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try body() }) }.start()
    }
}
