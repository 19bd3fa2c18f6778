// The remote store's backend: the incremental-store protocol
// (`IncrementalStoreBackend`) spoken to a `sift serve` server through the
// types generated from its OpenAPI document. The server evaluates the whole
// language, so every predicate is sent (as format text and JSON arguments),
// sorted and paged there; prefetched key paths come back with the fetch
// (1 request, plus one per to-many step a fault reaches, never one per
// object); saves carry the versions read and come back written or as
// conflicts. References are the server's own keys, so object IDs and URIs
// are the same on both sides.
//
// Requests are AsyncHTTPClient's, waited on with its futures: a context is
// synchronous, and a wait that needs no Swift concurrency cannot starve
// (on Linux the cooperative pool is as wide as the machine has cores, and
// callers blocked on it would keep an async request from ever running). The
// bodies are the types generated from the OpenAPI document.
//
// With a disk cache (an SQLite store in Core Data's layout beside the
// app), every row that comes back is kept there with its version: a fetch
// asked again within the staleness interval is answered from it without a
// request, and with the server out of reach every read is answered from it
// (the status turns `.offline`, observers hear it) while saves fail with the
// retryable `StoreError.unreachable` or `.unavailable`. Once offline, reads go
// straight to the cache without a request, and a thread of its own asks the
// server again with a growing pause until it answers (then the status is
// `.online` and reads go to the server again). A server not there fails at
// once: a refused connection is not tried again. The change feed keeps the
// cache current: rows other clients changed are fetched again, deleted ones dropped.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import AsyncHTTPClient
import Dispatch
import NIOCore
import NIOHTTP1
import NIOPosix
import OpenAPIRuntime
import Sift
import SiftHTTPAPI
import SiftStore

/// How a remote store reaches its server and what it keeps.
///
/// ```swift
/// var configuration = RemoteStoreConfiguration()
/// configuration.token = "s3cret"
/// configuration.cacheURL = URL(fileURLWithPath: "cache.sqlite")   // answers fetches offline
/// configuration.stalenessInterval = 60                            // a fetch asked again within a minute is not sent
/// ```
public struct RemoteStoreConfiguration: Sendable {
    /// The server's bearer token, when it asks for one.
    public var token: String?
    /// Where to keep the disk cache (an SQLite store); nil for none.
    public var cacheURL: URL?
    /// How long, in seconds, a fetch's answer from the server is answered
    /// again from the disk cache without a request (0: always ask the server while it answers).
    public var stalenessInterval: TimeInterval = 0
    /// Whether the store follows the server's change feed, merging other clients' saves.
    public var followsChanges: Bool = true
    /// How long a request may take before the server counts as unreachable.
    public var requestTimeout: Duration = .seconds(30)
    /// Whether, with a disk cache, saves made while the server is out of reach are kept in the cache
    /// and sent when it answers again (the default), rather than failing with a retryable error.
    public var queuesOfflineSaves: Bool = true
    /// Called when the server refuses a save made offline once it is sent (a conflict the saving
    /// context's merge policy, `.error`, leaves unresolved; a change the server does not accept): the
    /// save is set aside, nothing of it written, and the queue goes on with the next. Called on the
    /// store's own thread; set it here, so that no refusal is missed while the store opens.
    public var offlineSaveRefused: (@Sendable (RefusedOfflineSave) -> Void)?

    /// No token, no disk cache, changes followed.
    public init() {}
}

/// Whether a remote store's last request reached its server, and how many saves made offline wait to be sent.
public enum RemoteStatus: Hashable, Sendable {
    /// The server answered, and no save waits.
    case online
    /// The server could not be reached: reads come from the disk cache, and saves wait in it (`waiting` of
    /// them), or fail with a retryable error without a cache or with ``RemoteStoreConfiguration/queuesOfflineSaves`` off.
    case offline(reason: String, waiting: Int = 0)
    /// The server answers again and the saves made offline are being sent, in order: `waiting` are left.
    /// Reads come from the disk cache (which holds them) until none is left.
    case sending(waiting: Int)

    /// How many saves made offline wait to be sent.
    public var waitingSaves: Int {
        switch self {
        case .online: 0
        case .offline(_, let waiting), .sending(let waiting): waiting
        }
    }
}

/// A store on a `sift serve` server: an `IncrementalStore` on a ``RemoteBackend``.
///
/// ```swift
/// let store = try RemoteStore(url: URL(string: "http://127.0.0.1:8080")!)
/// let context = ObjectContext(store: store)
/// let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'"))
/// ```
public typealias RemoteStore = IncrementalStore<RemoteBackend>

extension IncrementalStore where Backend == RemoteBackend {
    /// A store on the server at `url`, with the model the server serves.
    ///
    /// - Parameters:
    ///   - url: The server, `http://HOST:PORT`.
    ///   - configuration: Its token, the disk cache, the staleness interval, the change feed.
    ///   - functions: The application's functions predicates may call (the server must know them too).
    /// - Throws: `StoreError`: `.unreachable` when no server answers at `url` (a refused connection fails
    ///   at once), or `.unavailable` when it cannot answer now, and there is no disk cache to open instead;
    ///   `.server` when it answers with an error; the disk cache's error when it cannot be opened.
    public convenience init(url: URL, configuration: RemoteStoreConfiguration = RemoteStoreConfiguration(),
                            functions: FunctionRegistry = FunctionRegistry()) throws(StoreError) {
        let backend = try RemoteBackend(url: url, configuration: configuration)
        try self.init(backend: backend, model: backend.model, functions: functions)
        backend.attach(self)
    }
}

/// The incremental-store backend of a ``RemoteStore``: a `sift serve` server over HTTP.
public final class RemoteBackend: IncrementalStoreBackend, @unchecked Sendable {
    /// References are the server's keys.
    public typealias Reference = Int64

    /// The server.
    public let url: URL
    /// The model the server serves.
    public let model: DataModel
    /// The server's store identifier.
    public let identifier: String
    /// Whether the server takes saves (for a store opened offline that queues saves, assumed until the server answers).
    public var isWritable: Bool { writable.withLock { $0 } }
    private let writable = LockedState(false)
    /// The saves made offline, kept in the disk cache until the server applies them; nil without a
    /// cache or with ``RemoteStoreConfiguration/queuesOfflineSaves`` off.
    let offlineQueue: OfflineQueue?
    /// The disk cache, when the configuration names one.
    public let cache: SQLiteStore?
    let configuration: RemoteStoreConfiguration
    let httpClient: HTTPClient
    /// The request time limit.
    let timeout: TimeAmount
    let state: LockedState<State>
    private let sentRequests = LockedState(0)
    /// This client's name in the change feed: its own saves come back under it.
    let origin = UUID().uuidString
    /// Set when the change feed should stop.
    private let stopped = LockedState(false)
    /// The sequence number of the next new change set (with ``origin``, its identity), and the
    /// change sets whose answer never came, by their identity: a context's retry of one is sent
    /// under the same number, so the server answers it as it answered the first, if it wrote it.
    private let saves = LockedState<(next: Int64, unanswered: [OutgoingChanges: Int64])>((1, [:]))
    /// How many unanswered change sets are remembered for a retry.
    static let unansweredCapacity = 64

    struct State {
        var status: RemoteStatus = .online
        var observers: [UUID: @Sendable (RemoteStatus) -> Void] = [:]
        /// When each fetch (by its text) was last answered by the server.
        var answered: [String: Date] = [:]
        /// Rows and links that came with the last fetch (prefetching), for the reads that follow it.
        var stashedRows: [String: BackendRow<Int64>] = [:]
        /// The same, come in the compact form (RemoteBackend+Compact.swift).
        var stashedNodes: [String: RowNode] = [:]
        /// Whether the server reads change sets in the compact form (until it answers one 415).
        var readsCompactChanges = true
        var stashedLinks: [String: [Int64]] = [:]
        var stashedAt: Date = .distantPast
        weak var store: IncrementalStore<RemoteBackend>?
        /// Whether a thread is asking an unreachable server again.
        var reconnecting = false
        /// Whether the change feed's thread runs.
        var following = false
    }

    /// The pauses between attempts to reach the server again while offline, in seconds: the first, and the longest.
    static let reconnectionBackoff: (first: TimeInterval, longest: TimeInterval) = (0.25, 15)

    /// Connects to the server at `url` and reads what it serves.
    ///
    /// - Parameters:
    ///   - url: The server.
    ///   - configuration: The token, disk cache and feed.
    /// - Throws: `StoreError`, as ``RemoteStore``'s initializer says.
    public init(url: URL, configuration: RemoteStoreConfiguration = RemoteStoreConfiguration()) throws(StoreError) {
        self.url = url
        self.configuration = configuration
        let (seconds, attoseconds) = configuration.requestTimeout.components
        timeout = .milliseconds(max(seconds * 1000 + attoseconds / 1_000_000_000_000_000, 1))
        // A connection pool of its own: connections to this server only, closed with the store.
        var http = HTTPClient.Configuration()
        http.timeout.connect = .seconds(5)
        // A connection that cannot be made fails the request at once (a refused connection is
        // immediate) instead of being tried again until the connect timeout.
        http.connectionPool.retryConnectionEstablishment = false
        let httpClient = HTTPClient(eventLoopGroupProvider: .singleton, configuration: http)
        self.httpClient = httpClient
        state = LockedState(State())
        // Every way out of this initializer but the last closes the connection pool.
        var opened = false
        defer { if !opened { _ = httpClient.shutdown() } }
        let description: Components.Schemas.StoreDescription
        do {
            description = try Self.exchange(httpClient, url, "GET", "v1/store", token: configuration.token, timeout: timeout,
                                            body: Optional<Components.Schemas.FetchBody>.none).decoded()
        } catch {
            // With the server out of reach, a disk cache opens in its place, with the model it keeps.
            guard let reason = Self.outOfReach(error), let cacheURL = configuration.cacheURL,
                  FileManager.default.fileExists(atPath: cacheURL.path) else { throw error }
            let cache = try SQLiteStore(url: cacheURL)
            self.cache = cache
            model = cache.model
            identifier = (try? cache.identifier) ?? cache.model.versionHash
            offlineQueue = configuration.queuesOfflineSaves ? try OfflineQueue(cache: cache) : nil
            writable.withLock { $0 = offlineQueue != nil }
            let waiting = offlineQueue?.count ?? 0
            state.withLock { $0.status = .offline(reason: reason, waiting: waiting) }
            opened = true
            reconnect()
            return
        }
        do {
            let data = try JSONEncoder().encode(description.model.additionalProperties)
            model = try DataModel(json: data)
        } catch {
            throw .server("the server's model cannot be read: \(error)", sql: nil)
        }
        identifier = description.identifier
        writable.withLock { $0 = description.writable }
        if let cacheURL = configuration.cacheURL {
            let cache = try SQLiteStore(url: cacheURL, model: model)
            self.cache = cache
            offlineQueue = configuration.queuesOfflineSaves ? try OfflineQueue(cache: cache) : nil
        } else {
            cache = nil
            offlineQueue = nil
        }
        // Saves a run before this one made offline go first: reads stay on the cache until they are sent.
        if let waiting = offlineQueue?.count, waiting > 0 { state.withLock { $0.status = .sending(waiting: waiting) } }
        startToken = description.token
        opened = true
    }

    private var startToken: String?

    deinit {
        stopped.withLock { $0 = true }
        let httpClient = self.httpClient
        _ = httpClient.shutdown()
    }

    /// Ties the backend to its store and starts following the change feed.
    func attach(_ store: IncrementalStore<RemoteBackend>) {
        state.withLock { $0.store = store }
        if status != .online { reconnect() }
        guard let token = startToken else { return }
        follow(after: token)
    }

    /// Starts the change feed's thread from `token`, unless it runs already or changes are not followed.
    private func follow(after token: String) {
        guard configuration.followsChanges, state.withLock({ state in
            defer { state.following = true }
            return !state.following && state.store != nil
        }) else { return }
        let stopped = self.stopped
        let thread = Thread { [weak self] in
            var token = token
            while !stopped.withLock({ $0 }) {
                guard let self, self.state.withLock({ $0.store }) != nil else { return }
                token = self.followChanges(after: token)
            }
        }
        thread.name = "sift.remote.feed"
        thread.start()
    }

    /// Stops following the change feed.
    public func stopFollowingChanges() {
        stopped.withLock { $0 = true }
    }

    // MARK: Status

    /// Whether the last request reached the server, and how many saves made offline wait.
    public var status: RemoteStatus { state.withLock { $0.status } }

    /// The store the backend is attached to, while it lives.
    var attachedStore: IncrementalStore<RemoteBackend>? { state.withLock { $0.store } }

    /// Calls `observer` each time the status changes (the server goes out of reach, or answers again).
    ///
    /// - Parameter observer: Hears the new status, on the thread that found it.
    /// - Returns: A token; ``removeStatusObserver(_:)`` stops the calls.
    @discardableResult
    public func addStatusObserver(_ observer: @escaping @Sendable (RemoteStatus) -> Void) -> UUID {
        let id = UUID()
        state.withLock { $0.observers[id] = observer }
        return id
    }

    /// Stops calls to a status observer.
    ///
    /// - Parameter id: The token ``addStatusObserver(_:)`` gave.
    public func removeStatusObserver(_ id: UUID) {
        state.withLock { $0.observers[id] = nil }
    }

    /// Sets the status, with the number of saves waiting now: `.online` while some wait is `.sending`.
    func setStatus(_ status: RemoteStatus) {
        let waiting = offlineQueue?.count ?? 0
        let status: RemoteStatus = switch status {
        case .online, .sending: waiting > 0 ? .sending(waiting: waiting) : .online
        case .offline(let reason, _): .offline(reason: reason, waiting: waiting)
        }
        let observers: [@Sendable (RemoteStatus) -> Void] = state.withLock { state in
            guard state.status != status else { return [] }
            state.status = status
            return Array(state.observers.values)
        }
        for observer in observers { observer(status) }
        if status != .online { reconnect() }
    }

    /// While the server is out of reach and reads are answered by the disk cache, asks it again on a
    /// thread of its own, with a pause that doubles up to ``reconnectionBackoff``'s longest, until it
    /// answers (the status turns `.online`) or the store is released. One such thread at a time.
    private func reconnect() {
        guard cache != nil, state.withLock({ state in
            defer { state.reconnecting = true }
            return !state.reconnecting
        }) else { return }
        let stopped = self.stopped
        let thread = Thread { [weak self] in
            var pause = Self.reconnectionBackoff.first
            while true {
                Thread.sleep(forTimeInterval: pause)
                guard !stopped.withLock({ $0 }), let self else { return }
                guard self.status != .online else { break }
                pause = min(pause * 2, Self.reconnectionBackoff.longest)
                let description: Components.Schemas.StoreDescription
                do {
                    description = try Self.exchange(self.httpClient, self.url, "GET", "v1/store", token: self.configuration.token,
                                                    timeout: self.timeout, body: Optional<Components.Schemas.FetchBody>.none).decoded()
                } catch {
                    continue
                }
                guard description.versionHash == self.model.versionHash else {
                    // Another model: what the cache holds cannot be sent, so it stays offline (and stops asking).
                    self.setStatus(.offline(reason: "the server at \(self.url.absoluteString) serves another model now (its version hash "
                                                + "is \(description.versionHash), the disk cache's \(self.model.versionHash))"))
                    return
                }
                // What the server answered while this store was away may have changed: fetches are asked again.
                self.state.withLock { $0.answered = [:] }
                self.dropStash()
                self.writable.withLock { $0 = description.writable }
                // Saves made offline go first, in order (reads stay on the cache meanwhile).
                self.setStatus(.sending(waiting: 0))
                guard self.sendQueuedSaves() else { continue }
                self.setStatus(.online)
                // Saved offline meanwhile: sent on the next round, at once.
                guard self.status == .online else {
                    pause = Self.reconnectionBackoff.first
                    continue
                }
                self.refreshRefusedRows()
                self.follow(after: description.token)
                break
            }
            self?.state.withLock { $0.reconnecting = false }
            // Offline again since the answer: ask again.
            if let self, self.status != .online { self.reconnect() }
        }
        thread.name = "sift.remote.reconnect"
        thread.start()
    }

    /// The reason, in words, when `error` says the server was not reached or could not answer
    /// (`.unreachable`, `.unavailable`); nil for any other error.
    static func outOfReach(_ error: StoreError) -> String? {
        switch error {
        case .unavailable(let reason): reason
        case .unreachable(let server, let reason): "\(server): \(reason)"
        default: nil
        }
    }

    /// A request that got no answer, as a `StoreError`: `.unreachable` when no connection was made
    /// (refused, a host that does not resolve or cannot be routed to, no connection in time),
    /// `.unavailable` when one was and the answer did not come (dropped, reset, too late). The reason
    /// is in words, not the network library's.
    static func transportFailure(_ error: any Error, server: URL, timeout: TimeAmount) -> StoreError {
        let address = server.absoluteString
        func words(_ error: any Error) -> (reached: Bool, reason: String) {
            switch error {
            case let error as NIOConnectionError:
                if let first = error.connectionErrors.first { return words(first.error) }
                return (false, "its host name '\(error.host)' cannot be resolved")
            case let error as SocketAddressError:
                if case .unknown(let host, _) = error { return (false, "its host name '\(host)' cannot be resolved") }
                return (false, "its address cannot be used (\(error))")
            case let error as IOError:
                switch error.errnoCode {
                case ECONNREFUSED: return (false, "the connection was refused: no server listens there (is `sift serve` running?)")
                case ENETUNREACH, EHOSTUNREACH: return (false, "its host cannot be reached from this network")
                case ETIMEDOUT: return (false, "the connection timed out")
                case ECONNRESET, EPIPE: return (true, "the connection was reset before the server answered")
                default: return (false, String(cString: strerror(error.errnoCode)).lowercased())
                }
            case let error as ChannelError:
                if case .connectTimeout(let limit) = error {
                    return (false, "no connection within \(limit.nanoseconds / 1_000_000) ms")
                }
                return (true, "the connection failed (\(error))")
            case let error as HTTPClientError:
                switch error {
                case .connectTimeout: return (false, "no connection within 5 s")
                case .deadlineExceeded, .readTimeout, .writeTimeout:
                    return (true, "no answer within \(Double(timeout.nanoseconds) / 1e9) s")
                case .remoteConnectionClosed: return (true, "the server closed the connection before answering")
                default: return (true, "the request failed (\(error))")
                }
            default:
                return (true, "the request failed (\(error))")
            }
        }
        let (reached, reason) = words(error)
        return reached ? .unavailable("\(address): \(reason)") : .unreachable(server: address, reason: reason)
    }

    // MARK: Requests

    /// A server's answer: its status and body.
    struct Exchange {
        var url: URL
        var status: Int
        var data: Data
        /// The body's content type, when the server named it.
        var contentType: String?

        /// The body as `T` when the status is 2xx; the failure as a `StoreError` otherwise.
        func decoded<T: Decodable>(_ type: T.Type = T.self) throws(StoreError) -> T {
            guard (200..<300).contains(status) else { throw failure() }
            do {
                return try JSONDecoder().decode(T.self, from: data)
            } catch {
                throw .server("the server's answer cannot be read: \(error)", sql: nil)
            }
        }

        func failure() -> StoreError {
            guard let failure = try? JSONDecoder().decode(Components.Schemas.Failure.self, from: data) else {
                return status >= 500 ? .unavailable("\(url.absoluteString) answered \(status)")
                    : .server("\(url.absoluteString) answered \(status)", sql: nil)
            }
            return RemoteBackend.storeError(status, failure, url: url)
        }
    }

    /// Sends one request and waits for the answer: a connection that cannot be
    /// made is `.unreachable`; one that drops, or no answer in time, `.unavailable`.
    static func exchange<Body: Encodable>(_ client: HTTPClient, _ base: URL, _ method: String, _ path: String, query: String? = nil,
                                          token: String?, timeout: TimeAmount, accept: String = "application/json",
                                          body: Body?) throws(StoreError) -> Exchange {
        try exchange(client, base, method, path, query: query, token: token, timeout: timeout, accept: accept, payload: try json(body))
    }

    /// A body in JSON.
    static func json<Body: Encodable>(_ body: Body?) throws(StoreError) -> (body: HTTPClient.Body, contentType: String)? {
        guard let body else { return nil }
        do {
            return (.data(try JSONEncoder().encode(body)), "application/json")
        } catch {
            throw .server("a value JSON cannot carry: \(error)", sql: nil)
        }
    }

    /// Sends one request with a body of any content type, as ``exchange(_:_:_:_:query:token:timeout:accept:body:)`` does.
    static func exchange(_ client: HTTPClient, _ base: URL, _ method: String, _ path: String, query: String? = nil,
                         token: String?, timeout: TimeAmount, accept: String,
                         payload: (body: HTTPClient.Body, contentType: String)?) throws(StoreError) -> Exchange {
        var address = base.appendingPathComponent(path).absoluteString
        if let query { address += "?" + query }
        guard let url = URL(string: address) else { throw .server("no address for \(path)", sql: nil) }
        var headers = HTTPHeaders()
        headers.add(name: "Accept", value: accept)
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        if let payload { headers.add(name: "Content-Type", value: payload.contentType) }
        let response: HTTPClient.Response
        do {
            let request = try HTTPClient.Request(url: url, method: HTTPMethod(rawValue: method), headers: headers, body: payload?.body)
            response = try client.execute(request: request, deadline: .now() + timeout).wait()
        } catch {
            throw transportFailure(error, server: base, timeout: timeout)
        }
        return Exchange(url: base, status: Int(response.status.code), data: response.body.map { Data($0.readableBytesView) } ?? Data(),
                        contentType: response.headers.first(name: "Content-Type"))
    }

    /// Sends a request (counted in ``requestsSent``). A read that failed
    /// before an answer came (a pooled connection the server closed, a
    /// server just restarted) is sent once more; one that reached no server is not.
    func exchange<Body: Encodable>(_ method: String, _ path: String, query: String? = nil, idempotent: Bool = true,
                                   timeout: TimeAmount? = nil, accept: String = "application/json", body: Body?) throws(StoreError) -> Exchange {
        try exchange(method, path, query: query, idempotent: idempotent, timeout: timeout, accept: accept, payload: try Self.json(body))
    }

    /// Sends a request with a body of any content type, as ``exchange(_:_:query:idempotent:timeout:accept:body:)`` does.
    func exchange(_ method: String, _ path: String, query: String? = nil, idempotent: Bool = true, timeout: TimeAmount? = nil,
                  accept: String = "application/json", payload: (body: HTTPClient.Body, contentType: String)?) throws(StoreError) -> Exchange {
        sentRequests.withLock { $0 += 1 }
        do {
            return try Self.exchange(httpClient, url, method, path, query: query, token: configuration.token,
                                     timeout: timeout ?? self.timeout, accept: accept, payload: payload)
        } catch {
            guard idempotent, case .unavailable = error else { throw error }
            sentRequests.withLock { $0 += 1 }
            return try Self.exchange(httpClient, url, method, path, query: query, token: configuration.token,
                                     timeout: timeout ?? self.timeout, accept: accept, payload: payload)
        }
    }

    /// How many requests the store has sent its server (the change feed's aside): what prefetching saves.
    public var requestsSent: Int { sentRequests.withLock { $0 } }

    /// A failure the server answered, as the store error a local store would have thrown; any
    /// other 5xx is `.unavailable` (retryable: nothing was written).
    static func storeError(_ status: Int, _ failure: Components.Schemas.Failure, url: URL) -> StoreError {
        if failure.code == "keys_exhausted" { return .keysExhausted(entity: failure.entity ?? "") }
        if status >= 500 || failure.code == "unavailable" || failure.code == "timeout" {
            return .unavailable("\(url.absoluteString) answered \(status): \(failure.message)")
        }
        if let evaluation = failure.evaluation {
            switch evaluation.kind {
            case .fetchTooCostly: return .evaluation(.fetchTooCostly(term: evaluation.subject, steps: evaluation.steps))
            case .regularExpressionTooCostly:
                return .evaluation(.regularExpressionTooCostly(pattern: evaluation.subject, steps: evaluation.steps))
            case .likeTooCostly: return .evaluation(.likeTooCostly(pattern: evaluation.subject, steps: evaluation.steps))
            }
        }
        switch failure.code {
        case "keys_exhausted": return .keysExhausted(entity: failure.entity ?? "")
        case "unknown_entity": return .unknownEntity(failure.entity ?? "")
        case "read_only": return .readOnly(path: url.absoluteString)
        case "invalid_predicate":
            return .server("the server refused the predicate: \(failure.diagnostic?.rendered ?? failure.message)", sql: nil)
        default: return .server("\(url.absoluteString) answered \(status) \(failure.code): \(failure.message)", sql: nil)
        }
    }

    /// Runs a request; a server out of reach is answered by `offline` when
    /// there is a disk cache (the status turns offline), thrown otherwise.
    /// While the status is offline, `offline` answers at once, without a
    /// request (``reconnect()`` finds when the server is back).
    func request<T>(_ online: () throws(StoreError) -> T, offline: ((SQLiteStore) throws(StoreError) -> T)?) throws(StoreError) -> T {
        if let cache, let offline, status != .online { return try offline(cache) }
        do {
            let value = try online()
            setStatus(.online)
            return value
        } catch {
            guard let reason = Self.outOfReach(error) else { throw error }
            setStatus(.offline(reason: reason))
            guard let cache, let offline else { throw error }
            return try offline(cache)
        }
    }

    // MARK: IncrementalStoreBackend

    /// The server evaluates the whole language: every term the format language can write is sent.
    public var capabilities: BackendCapabilities {
        BackendCapabilities(evaluates: { $0.canonicalFormat != nil }, sorts: true, pages: true)
    }

    /// Requests may overlap: the HTTP client and the server take them concurrently.
    public var allowsConcurrentRequests: Bool { true }

    /// The server's key.
    ///
    /// - Parameter reference: A row's reference (its key).
    /// - Returns: The key.
    public func primaryKey(for reference: Int64) -> Int64? { reference > 0 ? reference : nil }

    /// The server's key.
    ///
    /// - Parameter primaryKey: A row's key.
    /// - Returns: The key, as the reference.
    public func reference(forPrimaryKey primaryKey: Int64) -> Int64? { primaryKey > 0 ? primaryKey : nil }

    /// The server's identity and model version.
    ///
    /// - Returns: The metadata read when the backend connected.
    /// - Throws: Nothing: the metadata was read when the backend connected.
    public func loadMetadata() throws -> BackendMetadata {
        BackendMetadata(identifier: identifier, modelVersionHash: model.versionHash)
    }

    /// The rows a fetch selects, from the server (every page of them), or
    /// from the disk cache within the staleness interval or offline.
    ///
    /// - Parameter fetch: The fetch, its whole predicate written as format text for the server.
    /// - Returns: The rows, in the fetch's order.
    /// - Throws: `StoreError`: `.unreachable` or `.unavailable` when the server cannot be reached and there is no disk cache;
    ///   the server's refusal otherwise (`.evaluation` for a pattern over its budget).
    public func fetch(_ fetch: BackendFetch) throws -> [BackendRow<Int64>] {
        let format = try serverFormat(fetch)
        let signature = Self.signature(fetch, format)
        if let cache, configuration.stalenessInterval > 0, let answered = state.withLock({ $0.answered[signature] }),
           Date().timeIntervalSince(answered) < configuration.stalenessInterval {
            return try cachedRows(fetch, cache)
        }
        var rows: [BackendRow<Int64>] = []
        var related: [Components.Schemas.Row] = []
        var links: [Components.Schemas.Links] = []
        return try request({ () throws(StoreError) -> [BackendRow<Int64>] in
            try fetchPages(fetch, format: format, accept: "application/json") { exchange throws(StoreError) in
                let answer: Components.Schemas.FetchAnswer = try exchange.decoded()
                let objects = answer.objects ?? []
                rows += try rowsRead(objects)
                related += answer.related ?? []
                links += answer.links ?? []
                return (objects.count, answer.complete)
            }
            stash(related: related, links: links)
            if let cache {
                try mirror(rows + (try backendRows(related)), into: cache)
                state.withLock { $0.answered[signature] = Date() }
            }
            return rows
        }, offline: { cache throws(StoreError) in try self.cachedRows(fetch, cache) })
    }

    /// A fetch's predicate as format text for the server (with the server's keys for rows saved offline).
    func serverFormat(_ fetch: BackendFetch) throws(StoreError) -> CanonicalFormat? {
        let format = fetch.predicate.flatMap(\.canonicalFormat).map { offlineQueue?.serverForm($0) ?? $0 }
        if fetch.predicate != nil, format == nil {
            throw .unexpected("a predicate the remote store accepted cannot be written for its server")
        }
        return format
    }

    /// Asks for a fetch's objects a page at a time, each page's answer given to `read`, which says how many
    /// objects it held and whether it was complete (nil: stop asking). With a disk cache, the rows the
    /// predicate's key paths reach come too, so that the cache answers the same fetch offline.
    ///
    /// - Returns: False when `read` stopped the pages.
    @discardableResult
    func fetchPages(_ fetch: BackendFetch, format: CanonicalFormat?, accept: String,
                    _ read: (Exchange) throws(StoreError) -> (objects: Int, complete: Bool?)?) throws(StoreError) -> Bool {
        let page = 10_000
        var prefetch = fetch.prefetchKeyPaths
        if cache != nil, let predicate = fetch.predicate {
            prefetch += RelationshipPaths.of(predicate).subtracting(prefetch).sorted()
        }
        // A negative offset skips nothing and a negative limit is none, as everywhere in Sift.
        var offset = max(fetch.offset, 0)
        var fetched = 0
        let wanted = fetch.limit.flatMap { $0 < 0 ? nil : $0 }
        while true {
            let limit = wanted.map { max($0 - fetched, 0) }
            let body = Components.Schemas.FetchBody(
                entity: fetch.entityName, predicate: format?.format, arguments: format.map { WireValue.arguments($0.arguments) },
                sort: fetch.sortDescriptors?.map { .init(keyPath: $0.keyPath, ascending: $0.ascending, caseInsensitive: $0.caseInsensitive) },
                limit: limit.map { min($0, page) }, offset: offset,
                prefetch: prefetch.isEmpty ? nil : prefetch, result: .objects,
                stepLimit: fetch.patternStepLimit.map { max($0, 1) })
            guard let answer = try read(try exchange("POST", "v1/fetch", accept: accept, body: body)) else { return false }
            fetched += answer.objects
            offset += answer.objects
            if answer.complete != false || answer.objects == 0 || (limit.map { answer.objects >= $0 } ?? false) { return true }
        }
    }

    /// Objects the server sent in JSON, as rows.
    func rowsRead(_ objects: [Components.Schemas.Row]) throws(StoreError) -> [BackendRow<Int64>] {
        do {
            var rows: [BackendRow<Int64>] = []
            rows.reserveCapacity(objects.count)
            for object in objects { rows.append(try WireRow.backendRow(object, model: model)) }
            return rows
        } catch {
            throw .server("the server sent a row that cannot be read: \(error)", sql: nil)
        }
    }

    /// How many rows a fetch selects, counted by the server (or the disk cache offline).
    ///
    /// - Parameter fetch: The fetch.
    /// - Returns: The count.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    public func count(_ fetch: BackendFetch) throws -> Int? {
        let format = fetch.predicate.flatMap(\.canonicalFormat).map { offlineQueue?.serverForm($0) ?? $0 }
        if fetch.predicate != nil, format == nil { return nil }
        return try request({ () throws(StoreError) -> Int? in
            let body = Components.Schemas.FetchBody(entity: fetch.entityName, predicate: format?.format,
                                                    arguments: format.map { WireValue.arguments($0.arguments) }, result: .count,
                                                    stepLimit: fetch.patternStepLimit.map { max($0, 1) })
            let answer: Components.Schemas.FetchAnswer = try exchange("POST", "v1/fetch", body: body).decoded()
            return answer.count
        }, offline: { cache throws(StoreError) in try cache.count(for: cache.compile(Self.request(fetch))) })
    }

    /// Rows by key (a batch of faults): those the last fetch brought with it, or one request
    /// (the disk cache offline).
    ///
    /// - Parameters:
    ///   - references: The rows' keys.
    ///   - entityName: Their entity, or an ancestor.
    /// - Returns: The rows the server holds.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    public func rows(_ references: [Int64], entityName: String) throws -> [BackendRow<Int64>] {
        let root = model.entity(named: entityName).map { model.root(of: $0).name } ?? entityName
        let stashed = state.withLock { state in
            Date().timeIntervalSince(state.stashedAt) < Self.stashLife ? references.compactMap { state.stashedRows["\(root).\($0)"] } : []
        }
        if !references.isEmpty, stashed.count == references.count { return stashed }
        return try request({ () throws(StoreError) -> [BackendRow<Int64>] in
            var rows: [BackendRow<Int64>] = []
            for start in stride(from: 0, to: references.count, by: 10_000) {
                let body = Components.Schemas.ObjectsBody(entity: entityName, keys: Array(references[start..<min(start + 10_000, references.count)]))
                let answer: Components.Schemas.ObjectsAnswer = try exchange("POST", "v1/objects", body: body).decoded()
                rows += try backendRows(answer.objects)
            }
            if let cache { try mirror(rows, into: cache) }
            return rows
        }, offline: { cache throws(StoreError) in
            guard let entity = self.model.entity(named: entityName) else { throw .unknownEntity(entityName) }
            return try cache.rows(entity, keys: references).map(self.backendRow)
        })
    }

    /// A to-many relationship's members for a batch of owners, with the members' rows, in one
    /// request (the disk cache offline).
    ///
    /// - Parameters:
    ///   - relationship: The relationship's name.
    ///   - entityName: The owners' entity.
    ///   - owners: The owners' keys.
    /// - Returns: Each owner's member keys.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    public func destinations(of relationship: String, entityName: String, owners: [Int64]) throws -> [Int64: [Int64]] {
        let stashed: [Int64: [Int64]]? = state.withLock { state in
            guard Date().timeIntervalSince(state.stashedAt) < Self.stashLife else { return nil }
            var found: [Int64: [Int64]] = [:]
            for owner in owners {
                guard let members = state.stashedLinks["\(entityName).\(relationship).\(owner)"] else { return nil }
                found[owner] = members
            }
            return found
        }
        if let stashed { return stashed }
        return try request({ () throws(StoreError) -> [Int64: [Int64]] in
            var result: [Int64: [Int64]] = [:]
            var related: [Components.Schemas.Row] = []
            for start in stride(from: 0, to: owners.count, by: 10_000) {
                let body = Components.Schemas.DestinationsBody(entity: entityName, relationship: relationship,
                                                               owners: Array(owners[start..<min(start + 10_000, owners.count)]), includeRows: true)
                let answer: Components.Schemas.DestinationsAnswer = try exchange("POST", "v1/destinations", body: body).decoded()
                for link in answer.links { result[link.owner] = link.members }
                related += answer.related ?? []
            }
            stash(related: related, links: [])
            if let cache { try mirror(try backendRows(related), into: cache) }
            return result
        }, offline: { cache throws(StoreError) in
            guard let entity = self.model.entity(named: entityName), let relation = entity.relationship(named: relationship) else {
                throw .unknownRelationship(relationship, entity: entityName)
            }
            return try cache.links(relation, of: owners, entity: entity, loadingRows: false)
        })
    }

    /// Sends one change set; the server writes all of it in one transaction or finds conflicts.
    ///
    /// Each change set is numbered (with the store's origin, its identity): when no answer comes (the
    /// connection drops, the server answers 5xx) it is sent once more, and when a context saves the same
    /// changes again after `.unavailable`, they go under the same number; the server answers a change set
    /// it has written as it answered it then, and writes nothing, so a save is written once however often
    /// it is sent. With a disk cache (and ``RemoteStoreConfiguration/queuesOfflineSaves``), a save made
    /// while the server is out of reach, or while saves made offline still wait, is kept in the cache and
    /// answered at once: it waits there, in order, until the server answers again (see ``RemoteStatus``).
    ///
    /// - Parameter changes: The change set, with the versions read.
    /// - Returns: New versions and keys, or the conflicts (nothing written); for a save kept in the cache,
    ///   keys and versions of the cache's own until the server gives its.
    /// - Throws: `StoreError`: `.unreachable` or `.unavailable` (both retryable) when the server cannot be reached and
    ///   saves are not kept offline — nothing was written, or it was and a retry of the same changes is answered as it
    ///   was written; `.readOnly` for a read-only server; the disk cache's error when a save cannot be kept in it.
    public func save(_ changes: BackendChanges<Int64>) throws -> BackendSaveOutcome<Int64> {
        dropStash()
        // Offline, or with saves made offline still waiting, a save waits behind them, in the disk cache.
        if let offlineQueue, status != .online || offlineQueue.count > 0 {
            return try enqueue(changes, in: offlineQueue, identity: nil)
        }
        // The change set's identity: a new number, or the one it was sent under before when its answer never came.
        let unnumbered = outgoing(changes)
        let sequence = saves.withLock { saves in
            if let sequence = saves.unanswered[unnumbered] { return sequence }
            defer { saves.next += 1 }
            return saves.next
        }
        let outcome: BackendSaveOutcome<Int64>
        do throws(StoreError) {
            outcome = try request({ () throws(StoreError) -> BackendSaveOutcome<Int64> in
                try send(unnumbered, sequence: sequence, changes: changes)
            }, offline: nil)
        } catch {
            let offline = Self.outOfReach(error) != nil
            saves.withLock { saves in
                if offline, offlineQueue == nil {
                    saves.unanswered[unnumbered] = sequence
                    if saves.unanswered.count > Self.unansweredCapacity,
                       let oldest = saves.unanswered.min(by: { $0.value < $1.value }) {
                        saves.unanswered[oldest.key] = nil
                    }
                } else {
                    saves.unanswered[unnumbered] = nil
                }
            }
            // With a queue, the save waits in it under the identity it was sent under (the server may have written it).
            if offline, let offlineQueue {
                return try enqueue(changes, in: offlineQueue, identity: (origin, sequence))
            }
            throw error
        }
        saves.withLock { $0.unanswered[unnumbered] = nil }
        if case .saved(let versions, let keys) = outcome {
            state.withLock { $0.answered = [:] }
            if let cache { try? mirrorSave(changes, versions: versions, keys: keys, into: cache) }
        }
        return outcome
    }

    /// A change set as the API's body, under this store's origin, without a sequence number.
    func changeSet(_ changes: BackendChanges<Int64>) -> Components.Schemas.ChangeSet {
        func target(_ object: BackendObject<Int64>) -> Components.Schemas.Target {
            switch object {
            case .existing(let key): .init(key: key)
            case .inserted(let temporary): .init(inserted: temporary)
            }
        }
        func targets(_ named: [String: BackendObject<Int64>]) -> Components.Schemas.TargetsByName {
            .init(additionalProperties: named.mapValues(target))
        }
        // Attribute values in their plain forms, by their types in the model; a transient attribute's value stays
        // with the context, as a local store's save leaves it.
        func values(_ named: [String: PredicateValue], _ entityName: String) -> Components.Schemas.Values {
            model.entity(named: entityName).map { entity in
                WireValue.values(named.filter { entity.attribute(named: $0.key)?.isTransient != true }, of: entity)
            } ?? WireValue.values(named)
        }
        return Components.Schemas.ChangeSet(
            origin: origin,
            inserts: changes.inserts.map {
                .init(temporaryID: $0.temporaryID, entity: $0.entityName, values: values($0.values, $0.entityName), toOne: targets($0.toOne))
            },
            updates: changes.updates.map {
                .init(key: $0.reference, entity: $0.entityName, expectedVersion: $0.expectedVersion, values: values($0.values, $0.entityName),
                      toOne: targets($0.toOne))
            },
            deletes: changes.deletes.map { .init(key: $0.reference, entity: $0.entityName, expectedVersion: $0.expectedVersion) },
            links: changes.links.map {
                .init(owner: target($0.owner), entity: $0.entityName, relationship: $0.relationship, added: $0.added.map(target),
                      removed: $0.removed)
            },
            kept: changes.kept.isEmpty ? nil : changes.kept.map { .init(entity: $0.entityName, key: $0.reference) })
    }

    /// Sends a change set with its identity, once more under the same identity when no answer came (a dropped
    /// connection, a 5xx: the server answers it as it answered the first if that one was written).
    ///
    /// - Returns: The new versions and keys, or the conflicts (nothing written).
    /// - Throws: `StoreError`, as ``save(_:)`` says.
    func send(_ body: Components.Schemas.ChangeSet) throws(StoreError) -> BackendSaveOutcome<Int64> {
        enum Answer { case saved(Components.Schemas.SaveAnswer), conflicts(Components.Schemas.Conflicts) }
        func post() throws(StoreError) -> Answer {
            let exchange = try exchange("POST", "v1/save", idempotent: false, body: body)
            if exchange.status == 409, let conflicts = try? JSONDecoder().decode(Components.Schemas.Conflicts.self, from: exchange.data) {
                return .conflicts(conflicts)
            }
            return .saved(try exchange.decoded())
        }
        let answer: Answer
        do throws(StoreError) {
            answer = try post()
        } catch {
            guard case .unavailable = error else { throw error }
            answer = try post()
        }
        switch answer {
        case .conflicts(let conflicts):
            return try conflictsOutcome(conflicts)
        case .saved(let saved):
            return savedOutcome(saved)
        }
    }

    // MARK: The change feed

    /// Asks for the changes after `token` (waiting up to 10 seconds for one),
    /// merges those of other clients, and returns the token to ask after next.
    func followChanges(after token: String) -> String {
        let query = "after=\(token.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(["."])) ?? "")&wait=10"
        let feed: Components.Schemas.ChangeFeed
        do {
            let exchange = try Self.exchange(httpClient, url, "GET", "v1/changes", query: query, token: configuration.token,
                                             timeout: .seconds(45), body: Optional<Components.Schemas.FetchBody>.none)
            feed = try exchange.decoded()
        } catch {
            if let reason = Self.outOfReach(error) { setStatus(.offline(reason: reason)) }
            Thread.sleep(forTimeInterval: 1)
            return token
        }
        setStatus(.online)
        if feed.reset {
            // Another run of the server, or changes too old: what is held may be stale.
            state.withLock { $0.answered = [:] }
            let store = state.withLock { $0.store }
            store?.rowCache.removeAll()
            // Observers refetch: what changed is not known (another process wrote a store without history, say).
            store?.announce(.unknown)
            return feed.token
        }
        // This client's own saves are merged already, when the save answered (the feed may bring them first).
        // (A change that names no origin is another's: a context's on the server, another process's.)
        for change in feed.changes where change.origin == nil || (change.origin != origin && change.origin != offlineQueue?.origin) {
            state.withLock { $0.answered = [:] }
            dropStash()
            if let cache {
                let deleted = change.deleted.compactMap { key in model.entity(named: key.entity).map { ObjectID(entity: $0, primaryKey: key.key) } }
                try? cache.mirror([], deleting: deleted)
                let fresh = Dictionary(grouping: change.inserted + change.updated, by: \.entity)
                for (entityName, keys) in fresh {
                    _ = try? rows(keys.map(\.key), entityName: entityName)
                }
            }
            let store = state.withLock { $0.store }
            store?.backendDidChange(inserted: change.inserted.map { ($0.entity, $0.key) }, updated: change.updated.map { ($0.entity, $0.key) },
                                    deleted: change.deleted.map { ($0.entity, $0.key) })
        }
        return feed.token
    }

    // MARK: Rows and the disk cache

    /// How long rows that came with a fetch answer the reads that follow it (its prefetching), in seconds.
    static let stashLife: TimeInterval = 2

    /// Keeps the rows and links that came with a fetch for the reads that
    /// follow it; a save or a change another client made drops them.
    private func stash(related: [Components.Schemas.Row], links: [Components.Schemas.Links]) {
        let rows = (try? backendRows(related)) ?? []
        let roots = rows.map { row in model.entity(named: row.entityName).map { model.root(of: $0).name } ?? row.entityName }
        state.withLock { state in
            state.stashedRows = [:]
            state.stashedNodes = [:]
            state.stashedLinks = [:]
            state.stashedAt = Date()
            for (row, root) in zip(rows, roots) { state.stashedRows["\(root).\(row.reference)"] = row }
            for link in links { state.stashedLinks["\(link.entity).\(link.relationship).\(link.owner)"] = link.members }
        }
    }

    func dropStash() {
        state.withLock { state in
            state.stashedRows = [:]
            state.stashedNodes = [:]
            state.stashedLinks = [:]
        }
    }

    func backendRows(_ rows: [Components.Schemas.Row]) throws(StoreError) -> [BackendRow<Int64>] {
        var result: [BackendRow<Int64>] = []
        result.reserveCapacity(rows.count)
        for row in rows { result.append(try backendRow(row)) }
        return result
    }

    func backendRow(_ row: Components.Schemas.Row) throws(StoreError) -> BackendRow<Int64> {
        do {
            return try WireRow.backendRow(row, model: model)
        } catch {
            throw .server("the server sent a row that cannot be read: \(error)", sql: nil)
        }
    }

    /// A node of the disk cache as the server's row.
    func backendRow(_ node: RowNode) -> BackendRow<Int64> {
        let entity = model.entities[node.id.entity]
        var values: [String: PredicateValue] = [:]
        for attribute in entity.attributes where node.value(at: attribute.slot) != .null { values[attribute.name] = node.value(at: attribute.slot) }
        var toOne: [String: Int64] = [:]
        for relationship in entity.relationships where !relationship.isToMany {
            if let key = node.toOneKey(at: relationship.slot) { toOne[relationship.name] = key }
        }
        return BackendRow(entityName: entity.name, reference: node.id.primaryKey, version: node.version, values: values, toOne: toOne)
    }

    /// The request a backend fetch is, for the disk cache.
    static func request(_ fetch: BackendFetch) -> FetchRequest {
        var request = FetchRequest(entityName: fetch.entityName, sortDescriptors: fetch.sortDescriptors ?? [], fetchLimit: fetch.limit,
                                   fetchOffset: fetch.offset)
        request.predicate = fetch.predicate.map { .bound($0) }
        return request
    }

    func cachedRows(_ fetch: BackendFetch, _ cache: SQLiteStore) throws(StoreError) -> [BackendRow<Int64>] {
        try cache.rows(for: cache.compile(Self.request(fetch))).map(backendRow)
    }

    /// The text that names a fetch, for the staleness interval.
    static func signature(_ fetch: BackendFetch, _ format: CanonicalFormat?) -> String {
        let sort = (fetch.sortDescriptors ?? []).map { "\($0.keyPath):\($0.ascending):\($0.caseInsensitive)" }.joined(separator: ",")
        return "\(fetch.entityName)|\(format?.description ?? "")|\(sort)|\(fetch.offset)|\(fetch.limit ?? -1)|\(fetch.prefetchKeyPaths)"
    }

    /// Rows as the disk cache keeps them: the server's keys and versions.
    private func mirror(_ rows: [BackendRow<Int64>], into cache: SQLiteStore) throws(StoreError) {
        var nodes: [RowNode] = []
        nodes.reserveCapacity(rows.count)
        for row in rows {
            guard let node = node(row.entityName, key: row.reference, version: row.version, values: row.values, toOne: row.toOne) else { continue }
            nodes.append(node)
        }
        try cache.mirror(nodes, deleting: [])
    }

    func node(_ entityName: String, key: Int64, version: Int64, values: [String: PredicateValue], toOne: [String: Int64]) -> RowNode? {
        guard let entity = model.entity(named: entityName), key > 0 else { return nil }
        var slots = [PredicateValue](repeating: .null, count: entity.attributes.count)
        for attribute in entity.attributes {
            if let value = values[attribute.name] { slots[attribute.slot] = DataSet.convert(value, to: attribute.type) ?? .null }
        }
        var keys = [Int64?](repeating: nil, count: entity.toOneCount)
        for relationship in entity.relationships where !relationship.isToMany { keys[relationship.slot] = toOne[relationship.name] }
        return RowNode(id: ObjectID(entity: entity, primaryKey: key), version: version, values: slots, toOne: keys,
                       toMany: [[Int64]?](repeating: nil, count: entity.toManyCount))
    }

    /// A committed save, written to the disk cache as the server holds it now.
    private func mirrorSave(_ changes: BackendChanges<Int64>, versions: [Int64: Int64], keys: [Int64: Int64],
                            into cache: SQLiteStore) throws(StoreError) {
        func resolved(_ named: [String: BackendObject<Int64>]) -> [String: Int64] {
            named.compactMapValues { object in
                switch object {
                case .existing(let key): key
                case .inserted(let temporary): keys[temporary]
                }
            }
        }
        var nodes: [RowNode] = []
        for insert in changes.inserts {
            guard let key = keys[insert.temporaryID],
                  let node = node(insert.entityName, key: key, version: versions[key] ?? 1, values: insert.values, toOne: resolved(insert.toOne))
            else { continue }
            nodes.append(node)
        }
        for update in changes.updates {
            guard let node = node(update.entityName, key: update.reference, version: versions[update.reference] ?? update.expectedVersion + 1,
                                  values: update.values, toOne: resolved(update.toOne)) else { continue }
            nodes.append(node)
        }
        let deleted = changes.deletes.compactMap { delete in
            model.entity(named: delete.entityName).map { ObjectID(entity: $0, primaryKey: delete.reference) }
        }
        try cache.mirror(nodes, deleting: deleted)
    }
}
#endif
