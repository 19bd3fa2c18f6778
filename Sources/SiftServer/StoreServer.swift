// `sift serve`: a store behind the HTTP API of openapi.yaml, on Hummingbird.
// Safe by default: it binds 127.0.0.1, is read-only unless told otherwise,
// refuses to listen beyond loopback without a bearer token, and bounds each
// request's body, predicate, page and time. The server runs on threads of
// its own (a task executor off Swift's cooperative pool), and store work —
// synchronous, as contexts are — on a bounded number of threads beside it.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
import Foundation
import Hummingbird
import Logging
import OpenAPIHummingbird
import OpenAPIRuntime
import ServiceLifecycle
import Sift
import SiftHTTPAPI
import SiftStore

/// How a ``StoreServer`` listens and what it allows.
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 0                  // a free port
/// configuration.isWritable = true         // saves and batch changes allowed
/// ```
public struct ServerConfiguration: Sendable {
    /// The address to listen on: `127.0.0.1` (loopback only) unless told otherwise.
    public var host: String = "127.0.0.1"
    /// The port; 0 picks a free one (``StoreServer/start()`` says which).
    public var port: Int = 8080
    /// Whether saves and batch changes are allowed (read-only by default).
    public var isWritable: Bool = false
    /// The bearer token every request must carry; required for a host other than loopback.
    public var token: String?
    /// The store's name as the page at `/` shows it in its header (`company.sqlite`, `schema public on
    /// PostgreSQL`), with the store's identifier as its tooltip; nil shows the identifier.
    public var storeName: String?
    /// The largest request body, in bytes (4 MiB).
    public var maximumBodySize: Int = 4 << 20
    /// The longest predicate or expression, in bytes (16 KiB).
    public var maximumPredicateLength: Int = 16 << 10
    /// The most objects one request returns or names (10 000).
    public var maximumPageSize: Int = 10_000
    /// The longest a request may run before the server answers 503 (10 seconds).
    public var requestTimeout: Duration = .seconds(10)
    /// How many requests run store work at once (8).
    public var maximumConcurrentRequests: Int = 8
    /// Called before each save is applied (tests hold a save here to stop the server under it).
    public var beforeSave: (@Sendable () async -> Void)?
    /// Called with each save's answer after the save committed (or was found
    /// answered before: `remembered`) and before the answer is sent; when it
    /// throws, a 500 is sent instead of the answer, which is lost as it would
    /// be with a dropped connection. Tests lose answers here.
    package var beforeAnswer: (@Sendable (_ answer: Components.Schemas.SaveAnswer, _ remembered: Bool) async throws -> Void)?

    /// The defaults: loopback, port 8080, read-only, no token.
    public init() {}
}

/// Why a server cannot start.
public enum ServerError: Error, CustomStringConvertible, Sendable {
    /// A host other than loopback was asked for with no token.
    case tokenRequired(host: String)
    /// A limit that is not positive.
    case invalidLimit(String)
    /// The address could not be listened on.
    case cannotListen(String)

    public var description: String {
        switch self {
        case .tokenRequired(let host):
            "listening on \(host), beyond this machine, needs a bearer token (--token): the store would be open to the network"
        case .invalidLimit(let name): "the limit \(name) must be positive"
        case .cannotListen(let reason): "cannot listen: \(reason)"
        }
    }
}

/// A store served over HTTP, as `sift serve` runs it: the model, fetches by
/// predicate, objects and relationships by key, saves with optimistic
/// locking, batch changes and a change feed (the API is in the package's
/// `Sources/SiftHTTPAPI/openapi.yaml`).
///
/// ```swift
/// var configuration = ServerConfiguration()
/// configuration.port = 0
/// let server = try StoreServer(store: store, configuration: configuration)
/// let url = try await server.start()            // http://127.0.0.1:PORT
/// // … a RemoteStore(url: url) anywhere …
/// await server.stop()
/// ```
public final class StoreServer: Sendable {
    /// The store served.
    public let store: any PersistentStore
    /// How the server listens and what it allows.
    public let configuration: ServerConfiguration
    private let log: ChangeLog
    private let observation: StoreObservation
    private let identifier: String
    private let running = LockedState<(task: Task<Void, any Error>?, group: ServiceGroup?, url: URL?)>((nil, nil, nil))
    /// Set by ``stop()``: held saves write nothing, long polls answer at once.
    private let stopping = LockedState(false)
    /// The token the page at `/` is served with, which a browser's writes must carry (a new one each server).
    let pageToken: String = (0..<2).map { _ in
        let word = UInt64.random(in: .min ... .max)
        return String(repeating: "0", count: 16 - String(word, radix: 16).count) + String(word, radix: 16)
    }.joined()

    /// A server for `store`; nothing listens until ``start()``.
    ///
    /// - Parameters:
    ///   - store: The store to serve.
    ///   - configuration: Where to listen and what to allow.
    /// - Throws: `ServerError.tokenRequired` for a host beyond loopback with no token;
    ///   `.invalidLimit` for a limit that is not positive.
    public init(store: any PersistentStore, configuration: ServerConfiguration = ServerConfiguration()) throws(ServerError) {
        if !Self.isLoopback(configuration.host), (configuration.token ?? "").isEmpty {
            throw .tokenRequired(host: configuration.host)
        }
        for (name, value) in [("maximumBodySize", configuration.maximumBodySize),
                              ("maximumPredicateLength", configuration.maximumPredicateLength),
                              ("maximumPageSize", configuration.maximumPageSize),
                              ("maximumConcurrentRequests", configuration.maximumConcurrentRequests)] where value <= 0 {
            throw .invalidLimit(name)
        }
        self.store = store
        self.configuration = configuration
        let log = ChangeLog(store: store)
        self.log = log
        observation = store.addObserver { changes in log.append(changes) }
        if let sqlite = store as? SQLiteStore, let uuid = try? sqlite.identifier, !uuid.isEmpty {
            identifier = uuid
        } else {
            identifier = store.model.versionHash
        }
    }

    deinit {
        observation.cancel()
    }

    /// Whether `host` names this machine only.
    static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }

    /// Starts listening and returns the server's address once it accepts connections.
    ///
    /// - Returns: `http://HOST:PORT`, with the port chosen when the configuration's is 0.
    /// - Throws: `ServerError.cannotListen` when the address is taken or cannot be bound.
    @discardableResult
    public func start() async throws(ServerError) -> URL {
        if let url = running.withLock({ $0.url }) { return url }
        stopping.withLock { $0 = false }
        let (ready, readyContinuation) = AsyncStream<Result<Int, any Error>>.makeStream()
        let (application, logger) = makeApplication { port in readyContinuation.yield(.success(port)) }
        let group = ServiceGroup(configuration: .init(services: [application], logger: logger))
        let task = Task(executorPreference: BlockingBridge.executor) {
            do {
                try await group.run()
            } catch {
                readyContinuation.yield(.failure(error))
                throw error
            }
            readyContinuation.yield(.failure(ServerError.cannotListen("the server stopped")))
        }
        var iterator = ready.makeAsyncIterator()
        switch await iterator.next() {
        case .success(let port)?:
            let host = configuration.host.contains(":") ? "[\(configuration.host)]" : configuration.host
            guard let url = URL(string: "http://\(host):\(port)") else { throw .cannotListen("no URL for \(host):\(port)") }
            running.withLock { $0 = (task, group, url) }
            return url
        case .failure(let error)?:
            task.cancel()
            throw .cannotListen("\(error)")
        case nil:
            throw .cannotListen("the server did not start")
        }
    }

    /// Starts the server and runs until the task is cancelled (the command line stops on SIGINT or SIGTERM).
    ///
    /// - Parameter ready: Called with the address once the server accepts connections.
    /// - Throws: `ServerError.cannotListen` when the address is taken or cannot be bound.
    public func run(ready: @Sendable (URL) -> Void) async throws {
        let url = try await start()
        ready(url)
        await withTaskCancellationHandler {
            let task = running.withLock { $0.task }
            _ = await task?.result
        } onCancel: {
            running.withLock { $0.task }?.cancel()
        }
    }

    /// Stops listening and waits until the server has stopped: requests under
    /// way end (a held save writes nothing, a long poll answers at once), and
    /// any still running after five seconds are cut off.
    public func stop() async {
        stopping.withLock { $0 = true }
        let (task, group) = running.withLock { state in
            defer { state = (nil, nil, nil) }
            return (state.task, state.group)
        }
        guard let task else { return }
        log.wakeAll()
        await group?.triggerGracefulShutdown()
        // Requests still running after five seconds are cut off (a dispatch timer: no thread of
        // Swift's cooperative pool is needed to fire it).
        DispatchQueue(label: "sift.serve.stop").asyncAfter(deadline: .now() + 5) { task.cancel() }
        _ = await task.result
    }

    private func makeApplication(ready: @escaping @Sendable (Int) -> Void) -> (some ApplicationProtocol, Logger) {
        let router = Router()
        router.middlewares.add(FailureMiddleware())
        router.middlewares.add(BrowserGuard(pageToken: pageToken, isLoopback: Self.isLoopback(configuration.host)))
        if let token = configuration.token, !token.isEmpty { router.middlewares.add(BearerMiddleware(token: token)) }
        StorePage.register(on: router, token: pageToken, isWritable: configuration.isWritable, storeName: configuration.storeName)
        router.middlewares.add(MethodMiddleware())
        router.middlewares.add(BodyLimitMiddleware(limit: configuration.maximumBodySize))
        router.middlewares.add(NullMemberMiddleware())
        let api = StoreAPI(store: store, configuration: configuration, log: log, identifier: identifier,
                           work: StoreWork(width: configuration.maximumConcurrentRequests), stopping: stopping)
        do {
            // Each request checked against the document's bounds first (RequestBounds.swift).
            try BoundedAPI(api: api).registerHandlers(on: router)
        } catch {
            // Registering the generated routes fails only on a malformed path template, which a test would see.
            preconditionFailure("the API's routes could not be registered: \(error)")
        }
        var logger = Logger(label: "sift.serve")
        logger.logLevel = ProcessInfo.processInfo.environment["SIFT_LOG_LEVEL"].flatMap(Logger.Level.init(rawValue:)) ?? .warning
        return (Application(router: router,
                           server: .http1(configuration: .init(idleTimeout: .seconds(60))),
                           configuration: .init(address: .hostname(configuration.host, port: configuration.port), serverName: "sift"),
                           onServerRunning: { channel in ready(channel.localAddress?.port ?? 0) },
                           logger: logger), logger)
    }
}

/// Store work, on threads of its own, a bounded number at once, each within a time limit.
/// (Each request's work on a serial queue of its own, which libdispatch runs on
/// its overcommitting pool: never behind threads blocked elsewhere.)
final class StoreWork: Sendable {
    private let timers = DispatchQueue(label: "sift.serve.timers")
    private let slots: DispatchSemaphore

    init(width: Int) {
        slots = DispatchSemaphore(value: width)
    }

    /// Runs `body` and returns its result, or throws a 503 failure when it
    /// takes longer than `timeout` (the work runs on to its end, its result unused).
    func run<T: Sendable>(timeout: Duration, _ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let pending = LockedState<CheckedContinuation<T, any Error>?>(continuation)
            let slots = self.slots
            DispatchQueue(label: "sift.serve.store").async {
                slots.wait()
                defer { slots.signal() }
                let result = Result { try body() }
                pending.withLock { state in
                    defer { state = nil }
                    return state
                }?.resume(with: result)
            }
            let (seconds, attoseconds) = timeout.components
            let nanoseconds = Double(seconds) * 1e9 + Double(attoseconds) / 1e9
            timers.asyncAfter(deadline: .now() + .nanoseconds(Int(min(nanoseconds, 1e15)))) {
                pending.withLock { state in
                    defer { state = nil }
                    return state
                }?.resume(throwing: ServerFailure(503, "timeout", "the request ran longer than the server allows"))
            }
        }
    }
}

/// Every error as a JSON failure: the generated code's (a body that does not
/// decode is a 400), Hummingbird's (a body too large is a 413), and any other.
struct FailureMiddleware<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        do {
            return try await next(request, context)
        } catch let failure as ServerFailure {
            return Self.response(failure)
        } catch let error as HTTPError {
            let code = error.status == .contentTooLarge ? "too_large" : error.status == .notFound ? "not_found" : "bad_request"
            return Self.response(ServerFailure(Int(error.status.code), code, error.body ?? error.status.reasonPhrase))
        } catch let error as ServerError {
            return Self.response(ServerFailure(500, "internal", "\(error)"))
        } catch let error as OpenAPIRuntime.ServerError {
            // The request did not fit the API: a body or parameter that does not decode (400), a body of a
            // content type the operation does not read (415: a client falls back to JSON), an `Accept` it
            // cannot answer (406).
            switch error.httpStatus {
            case .unsupportedMediaType:
                return Self.response(ServerFailure(415, "unsupported_media_type", "the request does not fit the API: \(error.underlyingError)"))
            case .notAcceptable:
                return Self.response(ServerFailure(406, "not_acceptable", "the request does not fit the API: \(error.underlyingError)"))
            default:
                return Self.response(.badRequest("the request does not fit the API: \(error.underlyingError)"))
            }
        } catch {
            return Self.response(ServerFailure(500, "internal", "\(error)"))
        }
    }

    static func response(_ failure: ServerFailure) -> Response {
        let data = (try? JSONEncoder().encode(failure.body)) ?? Data(#"{"code":"internal","message":"?"}"#.utf8)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        return Response(status: .init(code: failure.status), headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Requests without the bearer token are refused (401).
struct BearerMiddleware<Context: RequestContext>: RouterMiddleware {
    let token: String

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // The page's own files hold no data: a browser loads them, then asks for the token.
        if request.method == .get, StorePage.paths.contains(request.uri.path) { return try await next(request, context) }
        guard let header = request.headers[.authorization], header.hasPrefix("Bearer "),
              Self.equal(Array(header.utf8.dropFirst(7)), Array(token.utf8)) else {
            throw ServerFailure(401, "unauthorized", "this server needs its bearer token (Authorization: Bearer …)")
        }
        return try await next(request, context)
    }

    /// Compares in time that depends on the lengths only.
    static func equal(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for (x, y) in zip(a, b) { difference |= x ^ y }
        return difference == 0
    }
}

/// A body larger than the limit is refused (413) before it is read further.
struct BodyLimitMiddleware<Context: RequestContext>: RouterMiddleware {
    let limit: Int

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var request = request
        if let length = request.headers[.contentLength].flatMap(Int.init), length > limit {
            throw ServerFailure.tooLarge("a request body is at most \(limit) bytes; this one is \(length)")
        }
        do {
            _ = try await request.collectBody(upTo: limit)
        } catch {
            throw ServerFailure.tooLarge("a request body is at most \(limit) bytes")
        }
        return try await next(request, context)
    }
}
#endif
