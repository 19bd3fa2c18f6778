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
        stop()
    }
}
