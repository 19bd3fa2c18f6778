// The remote store's reads and saves in the compact form of rows
// (SiftHTTPAPI's CompactRows.swift and CompactChanges.swift): fetches and
// objects by key ask for `application/vnd.sift.rows` (JSON still accepted),
// and the answer is read straight into the row cache's batches, which the
// incremental store takes as they are (`NodeAnsweringBackend`). A server that
// answers JSON is read as before; answers from the disk cache (within the
// staleness interval, offline) come through `fetch(_:)` and
// `rows(_:entityName:)`. A change set goes in the compact form too, and its
// answer comes in it; a server that does not read the form (415) is sent
// JSON from then on. Saves made offline are sent in JSON (OfflineQueue.swift).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import AsyncHTTPClient
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

extension RemoteBackend: NodeAnsweringBackend {
    /// The store this backend serves, to make nodes of rows by name as it does.
    private func store() throws(StoreError) -> IncrementalStore<RemoteBackend> {
        guard let store = state.withLock({ $0.store }) else { throw .unexpected("the remote store was released") }
        return store
    }

    /// Whether a read is answered by the disk cache without a request: offline, or a fetch answered within
    /// the staleness interval.
    private func answeredByCache(signature: String?) -> Bool {
        guard cache != nil else { return false }
        if case .offline = status { return true }
        guard let signature, configuration.stalenessInterval > 0,
              let answered = state.withLock({ $0.answered[signature] }) else { return false }
        return Date().timeIntervalSince(answered) < configuration.stalenessInterval
    }

    /// An answer in the compact form, read against the model.
    private func compactAnswer(_ exchange: Exchange) throws(StoreError) -> CompactAnswer {
        guard (200..<300).contains(exchange.status) else { throw exchange.failure() }
        let read = exchange.data.withUnsafeBytes { bytes in Result { () throws(WireError) in try CompactAnswer(bytes, model: model) } }
        switch read {
        case .success(let answer): return answer
        case .failure(let error): throw .server("the server's answer cannot be read: \(error.description)", sql: nil)
        }
    }

    /// The rows a fetch selects, as the row cache's nodes: read from the compact form (every page of
    /// them), or as ``fetch(_:)`` reads them (the disk cache's answer, a server that answers JSON).
    ///
    /// - Parameter fetch: The fetch, its whole predicate written as format text for the server.
    /// - Returns: The nodes, in the fetch's order.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    package func fetchNodes(_ fetch: BackendFetch) throws -> [RowNode] {
        let format = try serverFormat(fetch)
        let signature = Self.signature(fetch, format)
        if answeredByCache(signature: signature) { return try store().makeNodes(try self.fetch(fetch)) }
        var nodes: [RowNode] = []
        var related: [RowNode] = []
        var links: [(entity: String, relationship: String, owner: Int64, members: [Int64])] = []
        let answered = try request({ () throws(StoreError) -> Bool in
            try fetchPages(fetch, format: format, accept: CompactRows.accept) { exchange throws(StoreError) in
                guard (200..<300).contains(exchange.status) else { throw exchange.failure() }
                // A server that answers JSON: its rows made nodes here (rather than asked for again).
                guard CompactRows.isCompact(exchange.contentType) else {
                    let answer: Components.Schemas.FetchAnswer = try exchange.decoded()
                    let objects = answer.objects ?? []
                    nodes += try store().makeNodes(try rowsRead(objects))
                    related += try store().makeNodes(try backendRows(answer.related ?? []))
                    links += (answer.links ?? []).map { ($0.entity, $0.relationship, $0.owner, $0.members) }
                    return (objects.count, answer.complete)
                }
                let answer = try compactAnswer(exchange)
                nodes += answer.objects
                related += answer.related
                links += answer.links
                return (answer.objects.count, answer.complete)
            }
            stash(related: related, links: links)
            if let cache {
                try cache.mirror(nodes + related, deleting: [])
                state.withLock { $0.answered[signature] = Date() }
            }
            return true
        }, offline: { _ throws(StoreError) -> Bool in false })
        if answered { return nodes }
        return try store().makeNodes(try self.fetch(fetch))
    }

    /// Rows by key as the row cache's nodes: those the last fetch brought with it, or one request for
    /// each 10 000 in the compact form (as ``rows(_:entityName:)`` reads them otherwise).
    ///
    /// - Parameters:
    ///   - references: The rows' keys.
    ///   - entityName: Their entity, or an ancestor.
    /// - Returns: The nodes of the rows the server holds.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    package func nodes(_ references: [Int64], entityName: String) throws -> [RowNode] {
        let root = model.entity(named: entityName).map { model.root(of: $0).name } ?? entityName
        let stashed = state.withLock { state in
            Date().timeIntervalSince(state.stashedAt) < Self.stashLife ? references.compactMap { state.stashedNodes["\(root).\($0)"] } : []
        }
        if !references.isEmpty, stashed.count == references.count { return stashed }
        if answeredByCache(signature: nil) { return try store().makeNodes(try rows(references, entityName: entityName)) }
        let answer = try request({ () throws(StoreError) -> [RowNode]? in
            var nodes: [RowNode] = []
            for start in stride(from: 0, to: references.count, by: 10_000) {
                let body = Components.Schemas.ObjectsBody(entity: entityName, keys: Array(references[start..<min(start + 10_000, references.count)]))
                let exchange = try exchange("POST", "v1/objects", accept: CompactRows.accept, body: body)
                guard (200..<300).contains(exchange.status) else { throw exchange.failure() }
                guard CompactRows.isCompact(exchange.contentType) || !nodes.isEmpty else { return nil }
                nodes += try compactAnswer(exchange).objects
            }
            if let cache { try cache.mirror(nodes, deleting: []) }
            return nodes
        }, offline: { _ throws(StoreError) -> [RowNode]? in nil })
        if let answer { return answer }
        return try store().makeNodes(try rows(references, entityName: entityName))
    }

    /// Keeps the rows and links that came in the compact form with a fetch for the reads that follow it.
    private func stash(related: [RowNode], links: [(entity: String, relationship: String, owner: Int64, members: [Int64])]) {
        state.withLock { state in
            state.stashedRows = [:]
            state.stashedNodes = [:]
            state.stashedLinks = [:]
            state.stashedAt = Date()
            for node in related {
                state.stashedNodes["\(model.entities[node.id.root].name).\(node.id.primaryKey)"] = node
            }
            for link in links { state.stashedLinks["\(link.entity).\(link.relationship).\(link.owner)"] = link.members }
        }
    }
}

/// A change set as it goes to the server, without its sequence number: the compact form's records, or JSON
/// (for a server that does not read the compact form). What the store keys a change set sent without an
/// answer by, to send it again under the same number.
enum OutgoingChanges: Hashable, Sendable {
    case compact([UInt8])
    case json(Components.Schemas.ChangeSet)
}

extension RemoteBackend {
    /// A change set as it goes to the server: in the compact form, unless the server does not read it.
    func outgoing(_ changes: BackendChanges<Int64>) -> OutgoingChanges {
        if state.withLock({ $0.readsCompactChanges }), let records = CompactChangeSet.records(changes, model: model) {
            return .compact(records)
        }
        return .json(changeSet(changes))
    }

    /// Sends a change set under this store's origin and `sequence`, as ``send(_:)`` sends a JSON one: once
    /// more under the same identity when no answer came. A server that does not read the compact form
    /// (415, nothing written) is sent JSON, now and from then on.
    ///
    /// - Returns: The new versions and keys, or the conflicts (nothing written).
    /// - Throws: `StoreError`, as ``save(_:)`` says.
    func send(_ outgoing: OutgoingChanges, sequence: Int64, changes: BackendChanges<Int64>) throws(StoreError) -> BackendSaveOutcome<Int64> {
        guard case .compact(let records) = outgoing else {
            guard case .json(var body) = outgoing else { throw .unexpected("a change set in no form") }
            body.sequence = sequence
            return try send(body)
        }
        let payload = (body: HTTPClient.Body.bytes(CompactChangeSet.body(records, origin: origin, sequence: sequence)),
                       contentType: CompactRows.contentType)
        // An answer that is neither the save's nor its conflicts' (415 aside) is its failure: `.unavailable` for a 5xx.
        func post() throws(StoreError) -> Exchange {
            let answer = try exchange("POST", "v1/save", idempotent: false, accept: CompactRows.accept, payload: payload)
            guard (200..<300).contains(answer.status) || answer.status == 409 || answer.status == 415 else { throw answer.failure() }
            return answer
        }
        var answer: Exchange
        do throws(StoreError) {
            answer = try post()
        } catch {
            guard case .unavailable = error else { throw error }
            answer = try post()
        }
        if answer.status == 415 {
            state.withLock { $0.readsCompactChanges = false }
            var body = changeSet(changes)
            body.sequence = sequence
            return try send(body)
        }
        if answer.status == 409, let conflicts = try? JSONDecoder().decode(Components.Schemas.Conflicts.self, from: answer.data) {
            return try conflictsOutcome(conflicts)
        }
        guard answer.status != 409 else { throw answer.failure() }
        guard CompactRows.isCompact(answer.contentType) else { return savedOutcome(try answer.decoded()) }
        let read = answer.data.withUnsafeBytes { bytes in Result { () throws(WireError) in try CompactSaveAnswer(bytes) } }
        switch read {
        case .success(let answer): return .saved(versions: answer.versions, references: answer.keys)
        case .failure(let error): throw .server("the server's answer cannot be read: \(error.description)", sql: nil)
        }
    }

    /// The outcome of a save the server wrote, from its answer in JSON.
    func savedOutcome(_ saved: Components.Schemas.SaveAnswer) -> BackendSaveOutcome<Int64> {
        var versions: [Int64: Int64] = [:]
        for version in saved.versions { versions[version.key] = version.version }
        var keys: [Int64: Int64] = [:]
        for assigned in saved.keys { keys[assigned.temporaryID] = assigned.key }
        return .saved(versions: versions, references: keys)
    }

    /// The outcome of a save the server found conflicts in (nothing written).
    func conflictsOutcome(_ conflicts: Components.Schemas.Conflicts) throws(StoreError) -> BackendSaveOutcome<Int64> {
        var found: [(reference: Int64, entityName: String, current: BackendRow<Int64>?)] = []
        for conflict in conflicts.conflicts {
            found.append((conflict.key, conflict.entity, try conflict.current.map { row throws(StoreError) in try backendRow(row) }))
        }
        return .conflicts(found)
    }
}
#endif
