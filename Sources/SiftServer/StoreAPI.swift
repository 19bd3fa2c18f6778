// The API's operations (openapi.yaml) over one store: each request is read
// from the generated types, checked against the server's limits, run on the
// store on a thread of the server's own (stores are synchronous), and
// answered with the generated types; a store's error becomes a JSON failure
// with a status (ServerFailure.swift). Nothing here builds SQL: predicates
// are the format language, compiled by the store as a context's are.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
import Foundation
import OpenAPIRuntime
import Sift
import SiftHTTPAPI
import SiftStore

/// A save's answer: written (or, `remembered`, written by an earlier request
/// of the same change set), or the conflicts (nothing written).
enum SaveOutcome: Sendable {
    case saved(Components.Schemas.SaveAnswer, remembered: Bool)
    case conflicts(Components.Schemas.Conflicts)
}

struct StoreAPI: APIProtocol {
    let store: any PersistentStore
    let configuration: ServerConfiguration
    let log: ChangeLog
    /// The store's identifier, in its objects' URIs.
    let identifier: String
    /// The server's threads for store work, and how many run at once.
    let work: StoreWork
    /// Set when the server is stopping.
    let stopping: LockedState<Bool>
    /// The answers of change sets with an identity, so that each is applied once (SaveAnswers.swift).
    let answers = SaveAnswers()

    var model: DataModel { store.model }

    // MARK: Running store work

    /// Runs `body` on a store thread, within the request time limit; its
    /// errors become failures. The store work runs under a fetch budget
    /// whose time ends with the request's (`EvaluationBudget`): when the
    /// request is answered 503 its fetches stop too (SQLite's progress
    /// handler, PostgreSQL's `statement_timeout`, the loops in memory)
    /// rather than running on with no one to answer.
    func perform<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async -> Result<T, ServerFailure> {
        let deadline = ContinuousClock.now.advanced(by: configuration.requestTimeout)
        let bounded: @Sendable () throws -> T = {
            try EvaluationBudget.run(steps: PredicateLimits.standard.regularExpressionStepsPerFetch,
                                     timeLimit: ContinuousClock.now.duration(to: deadline), body)
        }
        do {
            return .success(try await work.run(timeout: configuration.requestTimeout, bounded))
        } catch let failure as ServerFailure {
            return .failure(failure)
        } catch let error as StoreError {
            return .failure(ServerFailure(error))
        } catch let error as WireError {
            return .failure(.badRequest(error.description))
        } catch {
            return .failure(ServerFailure(500, "internal", "\(error)"))
        }
    }

    func entity(_ name: String) throws(ServerFailure) -> Entity {
        guard let entity = model.entity(named: name) else {
            throw ServerFailure(404, "unknown_entity", "the model has no entity '\(name)'")
        }
        return entity
    }

    func checkPredicate(_ text: String?) throws(ServerFailure) {
        guard let text else { return }
        guard text.utf8.count <= configuration.maximumPredicateLength else {
            throw .tooLarge("a predicate is at most \(configuration.maximumPredicateLength) bytes; this one is \(text.utf8.count)")
        }
    }

    func checkCount(_ count: Int, of what: String) throws(ServerFailure) {
        guard count <= configuration.maximumPageSize else {
            throw .tooLarge("at most \(configuration.maximumPageSize) \(what) in one request; this one has \(count)")
        }
    }

    func checkWritable() throws(ServerFailure) {
        guard configuration.isWritable else {
            throw ServerFailure(403, "read_only", "this server is read-only (start it with --writable to save)")
        }
    }

    // MARK: Operations

    func getStore(_ input: Operations.GetStore.Input) async throws -> Operations.GetStore.Output {
        let model = self.model
        let result = await perform { () throws -> Components.Schemas.StoreDescription in
            let container = try JSONDecoder().decode(OpenAPIObjectContainer.self, from: model.jsonData)
            return Components.Schemas.StoreDescription(
                identifier: identifier, versionHash: model.versionHash, writable: configuration.isWritable,
                model: .init(additionalProperties: container), token: log.token.description)
        }
        switch result {
        case .success(let description): return .ok(.init(body: .json(description)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }


    func fetch(_ input: Operations.Fetch.Input) async throws -> Operations.Fetch.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let compact = Self.wantsCompact(input.headers.accept)
        let result = await perform { () throws -> Rows<Components.Schemas.FetchAnswer> in try runFetch(body, compact: compact) }
        switch result {
        case .success(.json(let answer)): return .ok(.init(body: .json(answer)))
        case .success(.compact(let bytes)): return .ok(.init(body: .applicationVnd_sift_rows(HTTPBody(bytes))))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    /// An answer with rows: JSON, or the compact form (`CompactRows`) for a client that accepts it.
    enum Rows<JSON: Sendable>: Sendable {
        case json(JSON)
        case compact([UInt8])
    }

    /// Whether a request's `Accept` prefers the compact form of rows to JSON: it names the compact
    /// form at a higher quality than JSON's (`application/vnd.sift.rows, application/json;q=0.5`), or
    /// JSON not at all. A tie goes to JSON, the default: the generated code reads a request without
    /// `Accept` as accepting every content type the operation answers in, at the same quality.
    static func wantsCompact<T: AcceptableProtocol>(_ accept: [AcceptHeaderContentType<T>]) -> Bool {
        var compact = 0.0, json = 0.0
        for entry in accept {
            switch entry.contentType.rawValue.lowercased() {
            case CompactRows.contentType: compact = max(compact, entry.quality.doubleValue)
            case "application/json", "application/*", "*/*": json = max(json, entry.quality.doubleValue)
            default: break
            }
        }
        return compact > json
    }

    func runFetch(_ body: Components.Schemas.FetchBody, compact: Bool = false) throws -> Rows<Components.Schemas.FetchAnswer> {
        let entity = try entity(body.entity)
        try checkPredicate(body.predicate)
        try checkPredicate(body.having)
        let page = configuration.maximumPageSize
        let asked = body.limit
        var request = FetchRequest(entityName: entity.name, predicate: body.predicate, arguments: try WireValue.arguments(body.arguments),
                                   sortDescriptors: (body.sort ?? []).map {
                                       FetchSortDescriptor($0.keyPath, ascending: $0.ascending ?? true, caseInsensitive: $0.caseInsensitive ?? false)
                                   },
                                   fetchLimit: min(max(asked ?? page, 0), page), fetchOffset: max(body.offset ?? 0, 0))
        let standard = PredicateLimits.standard.regularExpressionStepsPerFetch
        let steps = min(max(body.stepLimit ?? standard, 1), standard)
        request.regularExpressionStepLimit = steps
        var answer = Components.Schemas.FetchAnswer()
        if body.after != nil, let result = body.result, result != .objects {
            throw ServerFailure.badRequest("'after' pages objects; a \(result.rawValue) fetch takes 'offset'")
        }
        switch body.result ?? .objects {
        case .count:
            request.fetchLimit = asked
            let compiled = try store.compile(request)
            answer.count = try EvaluationBudget.run(steps: steps) { () throws(StoreError) in try store.count(for: compiled) }
        case .keys:
            let compiled = try store.compile(request)
            let ids = try EvaluationBudget.run(steps: steps) { () throws(StoreError) in try store.keys(for: compiled) }
            answer.keys = ids.map { Components.Schemas.ObjectKey(entity: model.entities[$0.entity].name, key: $0.primaryKey) }
            answer.complete = ids.count < page || (asked ?? .max) <= page
        case .objects:
            let nodes: [RowNode]
            if let after = body.after {
                nodes = try objects(after: after, request: request, body: body, steps: steps)
            } else {
                let compiled = try store.compile(request)
                nodes = try EvaluationBudget.run(steps: steps) { () throws(StoreError) in try store.rows(for: compiled) }
            }
            let complete = nodes.count < page || (asked ?? .max) <= page
            var next: String?
            // A full page may have a next one.
            if let limit = request.fetchLimit, nodes.count == limit, limit > 0 {
                next = try cursor(after: nodes, request: request, body: body, previous: body.after)
            }
            var related: [RowNode] = []
            var links: [Components.Schemas.Links] = []
            if let paths = body.prefetch, !paths.isEmpty {
                try checkCount(paths.count, of: "prefetched key paths")
                (related, links) = try prefetch(paths, from: nodes, entity: entity)
            }
            if compact {
                var encoder = CompactRowEncoder(model: model)
                for node in nodes { encoder.add(node) }
                for node in related { encoder.add(node, related: true) }
                for link in links {
                    encoder.addLinks(entity: link.entity, relationship: link.relationship, owner: link.owner, members: link.members)
                }
                encoder.addPage(complete: complete, next: next)
                return .compact(encoder.finish())
            }
            answer.objects = nodes.map { WireRow.row($0, model: model) }
            answer.complete = complete
            answer.next = next
            if let paths = body.prefetch, !paths.isEmpty {
                answer.related = related.map { WireRow.row($0, model: model) }
                answer.links = links
            }
        case .dictionaries:
            guard let columns = body.select, !columns.isEmpty else {
                throw ServerFailure.badRequest("a dictionary fetch names its columns in 'select'")
            }
            for column in columns { try checkPredicate(column.expression) }
            request.propertiesToFetch = columns.map { ExpressionDescription(name: $0.name, expression: $0.expression) }
            request.propertiesToGroupBy = body.groupBy ?? []
            if let having = body.having { request.havingPredicate = .format(having, try WireValue.arguments(body.havingArguments)) }
            request.returnsDistinctResults = body.distinct ?? false
            request.resultType = .dictionaries(columns.map(\.name))
            let context = ObjectContext(store: store)
            let rows = try context.fetchDictionaries(request)
            answer.dictionaries = rows.map { row in
                var named: [String: PredicateValue] = [:]
                for (name, value) in row { named[name] = value }
                return WireValue.dictionary(named)
            }
            answer.complete = rows.count < page || (asked ?? .max) <= page
        }
        return .json(answer)
    }

    /// The rows the prefetched key paths reach from `nodes`, and the
    /// members of the to-many relationships on the way: one store read per
    /// relationship of each path.
    func prefetch(_ paths: [String], from nodes: [RowNode],
                  entity: Entity) throws -> ([RowNode], [Components.Schemas.Links]) {
        var related: [ObjectID: RowNode] = [:]
        var links: [Components.Schemas.Links] = []
        var linked = Set<String>()
        for path in paths {
            var current = nodes
            var currentEntity = entity
            for key in path.split(separator: ".").map(String.init) {
                guard let relationship = currentEntity.relationship(named: key),
                      let destination = model.entity(named: relationship.destination) else {
                    throw StoreError.unknownRelationship(path, entity: entity.name)
                }
                let next: [RowNode]
                if relationship.isToMany {
                    let owners = current.map(\.id.primaryKey)
                    let members = try store.links(relationship, of: owners, entity: currentEntity, loadingRows: false)
                    for owner in owners where linked.insert("\(currentEntity.name).\(relationship.name).\(owner)").inserted {
                        links.append(.init(entity: currentEntity.name, relationship: relationship.name, owner: owner,
                                           members: members[owner] ?? []))
                    }
                    let keys = Array(Set(members.values.joined())).sorted()
                    try checkCount(keys.count, of: "related objects")
                    next = try store.rows(destination, keys: keys)
                } else {
                    let keys = Array(Set(current.compactMap { $0.toOne[relationship.slot] })).sorted()
                    next = try store.rows(destination, keys: keys)
                }
                for node in next { related[node.id] = node }
                current = next
                currentEntity = destination
            }
        }
        return (related.values.sorted { ($0.id.entity, $0.id.primaryKey) < ($1.id.entity, $1.id.primaryKey) }, links)
    }

    func objects(_ input: Operations.Objects.Input) async throws -> Operations.Objects.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let compact = Self.wantsCompact(input.headers.accept)
        let result = await perform { () throws -> Rows<Components.Schemas.ObjectsAnswer> in
            let entity = try entity(body.entity)
            try checkCount(body.keys.count, of: "keys")
            let nodes = try store.rows(entity, keys: body.keys)
            if compact {
                var encoder = CompactRowEncoder(model: model)
                for node in nodes { encoder.add(node) }
                return .compact(encoder.finish())
            }
            return .json(.init(objects: nodes.map { WireRow.row($0, model: model) }))
        }
        switch result {
        case .success(.json(let answer)): return .ok(.init(body: .json(answer)))
        case .success(.compact(let bytes)): return .ok(.init(body: .applicationVnd_sift_rows(HTTPBody(bytes))))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    func destinations(_ input: Operations.Destinations.Input) async throws -> Operations.Destinations.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let compact = Self.wantsCompact(input.headers.accept)
        let result = await perform { () throws -> Rows<Components.Schemas.DestinationsAnswer> in
            let entity = try entity(body.entity)
            try checkCount(body.owners.count, of: "owners")
            guard let relationship = entity.relationship(named: body.relationship), relationship.isToMany,
                  let destination = model.entity(named: relationship.destination) else {
                throw ServerFailure.badRequest("'\(body.relationship)' is not a to-many relationship of \(entity.name)")
            }
            let members = try store.links(relationship, of: body.owners, entity: entity, loadingRows: false)
            var related: [RowNode]?
            if body.includeRows == true {
                let keys = Array(Set(members.values.joined())).sorted()
                try checkCount(keys.count, of: "related objects")
                related = try store.rows(destination, keys: keys)
            }
            if compact {
                var encoder = CompactRowEncoder(model: model)
                for owner in body.owners {
                    encoder.addLinks(entity: entity.name, relationship: relationship.name, owner: owner, members: members[owner] ?? [])
                }
                for node in related ?? [] { encoder.add(node, related: true) }
                return .compact(encoder.finish())
            }
            return .json(Components.Schemas.DestinationsAnswer(
                links: body.owners.map { .init(entity: entity.name, relationship: relationship.name, owner: $0, members: members[$0] ?? []) },
                related: related.map { $0.map { WireRow.row($0, model: model) } }))
        }
        switch result {
        case .success(.json(let answer)): return .ok(.init(body: .json(answer)))
        case .success(.compact(let bytes)): return .ok(.init(body: .applicationVnd_sift_rows(HTTPBody(bytes))))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    func save(_ input: Operations.Save.Input) async throws -> Operations.Save.Output {
        // A change set in JSON, or in the compact form (CompactChanges.swift), read on the store's queue.
        let received: Rows<Components.Schemas.ChangeSet>
        switch input.body {
        case .json(let body):
            received = .json(body)
        case .applicationVnd_sift_rows(let body):
            // (Buffered already, within the limit: BodyLimitMiddleware.)
            received = .compact(try await [UInt8](collecting: body, upTo: configuration.maximumBodySize))
        }
        if let hold = configuration.beforeSave { await hold() }
        // A server stopping writes nothing more: the client hears 503 and keeps its changes.
        if Task.isCancelled || stopping.withLock({ $0 }) {
            return .default(statusCode: 503, ServerFailure(503, "unavailable", "the server is stopping; nothing was written").response)
        }
        let result = await perform { () throws -> SaveOutcome in
            try checkWritable()
            let reader = SaveRequestReader(model: model)
            let request: SaveRequest, origin: String?, identity: SaveIdentity?
            switch received {
            case .json(let body):
                identity = try answers.identity(origin: body.origin, sequence: body.sequence)
                request = try reader.request(body)
                origin = body.origin
            case .compact(let bytes):
                let changes = try bytes.withUnsafeBytes { body in try reader.request(compact: body) }
                identity = try answers.identity(origin: changes.origin, sequence: changes.sequence)
                request = changes.request
                origin = changes.origin
            }
            // The client's origin is the transaction's author: a store's history names it, and so does a durable feed.
            return try TransactionNames.$current.withValue(TransactionNames(author: origin)) { () throws -> SaveOutcome in
                // A change set with an identity is applied once, a retry answered as the first request was.
                if let identity { return try answers.save(request, identity: identity, api: self) }
                switch try store.apply(request) {
                case .committed(let saved):
                    var answer = Self.answer(saved, model: model, token: "")
                    answer.token = announce(saved, origin: origin)
                    return .saved(answer, remembered: false)
                case .conflicts(let conflicts):
                    return .conflicts(self.conflicts(conflicts))
                }
            }
        }
        switch result {
        case .success(.saved(let answer, let remembered)):
            // The tests' fault: the save committed, its answer lost.
            if let lose = configuration.beforeAnswer {
                do {
                    try await lose(answer, remembered)
                } catch {
                    return .default(statusCode: 500, ServerFailure(500, "internal", "the save's answer was lost: \(error)").response)
                }
            }
            if Self.wantsCompact(input.headers.accept) {
                let body = CompactSaveAnswer.body(versions: answer.versions.map { ($0.entity, $0.key, $0.version) },
                                                  keys: answer.keys.map { ($0.temporaryID, $0.key) }, token: answer.token)
                return .ok(.init(body: .applicationVnd_sift_rows(HTTPBody(body))))
            }
            return .ok(.init(body: .json(answer)))
        case .success(.conflicts(let conflicts)): return .conflict(.init(body: .json(conflicts)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    /// A committed save's answer: the versions and keys it wrote, and `token`.
    static func answer(_ saved: SaveResult, model: DataModel, token: String) -> Components.Schemas.SaveAnswer {
        let versions = saved.nodes.values.map {
            Components.Schemas.Version(entity: model.entities[$0.id.entity].name, key: $0.id.primaryKey, version: $0.version)
        }
        let keys = saved.keys.map { Components.Schemas.AssignedKey(temporaryID: $0.key, key: $0.value) }
        return .init(versions: versions, keys: keys, token: token)
    }

    /// Announces a committed save to the store's observers (the change feed
    /// names it `origin`'s); returns the feed's token after it.
    func announce(_ saved: SaveResult, origin: String?) -> String {
        log.announcing(from: origin) { store.announce(saved.changes) }
        return log.token.description
    }

    /// The answer of a save that found rows moved.
    func conflicts(_ conflicts: [RowConflict]) -> Components.Schemas.Conflicts {
        .init(code: "conflict", message: "\(conflicts.count) object(s) changed since they were read; nothing was written",
              conflicts: conflicts.map { conflict in
                  .init(entity: model.entities[conflict.id.entity].name, key: conflict.id.primaryKey,
                        current: conflict.current.map { WireRow.row($0, model: model) })
              })
    }

    func batchUpdate(_ input: Operations.BatchUpdate.Input) async throws -> Operations.BatchUpdate.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let result = await perform { () throws -> Components.Schemas.BatchAnswer in
            try checkWritable()
            let entity = try entity(body.entity)
            try checkPredicate(body.predicate)
            for assignment in body.assignments { try checkPredicate(assignment.expression) }
            let arguments = try WireValue.arguments(body.arguments)
            let request = BatchUpdateRequest(entityName: entity.name, predicate: body.predicate.map { .format($0, arguments) },
                                             propertiesToUpdate: body.assignments.map {
                                                 ExpressionDescription(name: $0.property, expression: $0.expression)
                                             })
            let outcome = try ObjectContext(store: store).execute(request)
            return .init(count: outcome.count, token: log.token.description)
        }
        switch result {
        case .success(let answer): return .ok(.init(body: .json(answer)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    func batchDelete(_ input: Operations.BatchDelete.Input) async throws -> Operations.BatchDelete.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let result = await perform { () throws -> Components.Schemas.BatchAnswer in
            try checkWritable()
            let entity = try entity(body.entity)
            try checkPredicate(body.predicate)
            let arguments = try WireValue.arguments(body.arguments)
            let request = BatchDeleteRequest(entityName: entity.name, predicate: body.predicate.map { .format($0, arguments) })
            let outcome = try ObjectContext(store: store).execute(request)
            return .init(count: outcome.count, token: log.token.description)
        }
        switch result {
        case .success(let answer): return .ok(.init(body: .json(answer)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }
}
#endif
