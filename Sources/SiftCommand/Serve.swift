// `sift serve`: a store behind the HTTP API (SiftServer), until SIGINT or
// SIGTERM. It prints one line, `listening on http://HOST:PORT`, on standard
// output when it accepts connections; everything else goes to standard error.

import ArgumentParser
import Dispatch
import Foundation
import Sift
#if HTTP
import SiftHTTPAPI
import SiftServer
#endif
import SiftStore

struct Serve: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve a store over HTTP (JSON): its model, fetches by predicate, objects, saves and a change feed.",
        discussion: "Read-only unless --writable. It listens on 127.0.0.1 unless --host says otherwise, and any other host "
            + "needs --token (requests then carry Authorization: Bearer TOKEN). --port 0 picks a free port. The API is "
            + "described by Sources/SiftHTTPAPI/openapi.yaml. A store on it opens with --store http://HOST:PORT. "
            + "Open http://HOST:PORT/ in a browser for a page that looks into the store: its model, objects, a predicate box, "
            + "the SQL a predicate becomes, groups as a chart, its history, and editing with --writable. "
            + "Several servers may serve one PostgreSQL schema (the same --postgres and --schema, each on its own --port): "
            + "each one's change feed carries every server's saves, under the same tokens, which outlive a restart.")

    @Option(help: ArgumentHelp("The store file to serve (Sift's, or one Core Data wrote).", valueName: "path"))
    var store: String?

    @Option(help: ArgumentHelp("Serve a store on a PostgreSQL server instead: postgres://user[:password]@host[:port]/database.",
                               valueName: "url"))
    var postgres: String?

    @Option(help: ArgumentHelp("The database schema of the PostgreSQL store.", valueName: "name"))
    var schema: String = "public"

    @Option(help: ArgumentHelp("The model of a store Core Data wrote (an .xcdatamodeld bundle); by default the store's own.",
                               valueName: "path"))
    var model: String?

    @Option(help: ArgumentHelp("The address to listen on.", valueName: "host"))
    var host: String = "127.0.0.1"

    @Option(parsing: .unconditional, help: ArgumentHelp("The port to listen on (0: a free one).", valueName: "port"))
    var port: Int = 8080

    @Flag(help: "Take saves and batch changes (read-only otherwise).")
    var writable = false

    @Option(help: ArgumentHelp("A bearer token every request must carry (required for a host other than loopback).",
                               valueName: "token"))
    var token: String?

    /// The store's name in the page's header: the file's name, the server's address (without credentials or
    /// query) for a store served elsewhere, or the PostgreSQL schema (never the URL, which may hold a password).
    var storeName: String {
        guard let store else { return "schema \(schema) on PostgreSQL" }
        guard isServerAddress(store) else { return URL(fileURLWithPath: store).lastPathComponent }
        guard var components = URLComponents(string: store) else { return "a store served elsewhere" }
        components.user = nil
        components.password = nil
        components.query = nil
        components.fragment = nil
        return components.string ?? "a store served elsewhere"
    }

    func validate() throws {
        if (store == nil) == (postgres == nil) { throw ValidationError("give a store file (--store) or a server (--postgres)") }
        if !(0...65535).contains(port) { throw ValidationError("--port takes 0 to 65535, not \(port)") }
    }

    func run() throws {
        #if HTTP
        let served: any PersistentStore
        if let store {
            served = isServerAddress(store)
                ? try openRemoteStore(store, token: nil)
                : try openStore(store, model: model, readOnly: !writable)
        } else {
            served = try openServerStore(url: postgres ?? "", model: nil, schemaName: schema, observesOtherProcesses: true)
        }
        defer { close(served) }
        var configuration = ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.isWritable = writable
        configuration.token = token
        configuration.storeName = storeName
        let server: StoreServer
        do {
            server = try StoreServer(store: served, configuration: configuration)
        } catch {
            throw CommandFailure(.usage, "\(error)")
        }
        let url: URL
        do {
            url = try BlockingBridge.run { try await server.start() }
        } catch {
            throw CommandFailure(.cannotCreate, "\(error)")
        }
        print("listening on \(url.absoluteString)")
        fflush(nil)   // every output stream: the line reaches a pipe now
        printError("serving \(store ?? "\(postgres ?? "") (schema \(schema))") \(writable ? "read-write" : "read-only"); "
                   + "Ctrl-C stops")
        // Stop on SIGINT or SIGTERM.
        let stop = DispatchSemaphore(value: 0)
        var sources: [any DispatchSourceSignal] = []
        for signalNumber in [SIGINT, SIGTERM] {
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        try? BlockingBridge.run { await server.stop() }
        printError("stopped")
        #else
        throw CommandFailure(.usage, "this sift was built without the HTTP trait: serve is not available")
        #endif
    }
}
