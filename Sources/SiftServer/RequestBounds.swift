// The API's document enforced: every request's numbers, strings and arrays
// within the bounds openapi.yaml gives them (minimum, maximum, maxLength,
// maxItems), or a 400 naming the field; and a method a path does not take
// answered 405 with `Allow`. The generated code checks types, required
// members and enumerations only; these checks are the rest of the schema.
// (The store's own limits, such as the page size, are StoreAPI's.)

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Hummingbird
import SiftHTTPAPI

/// The API with each request checked against the document's bounds before ``StoreAPI`` runs it.
struct BoundedAPI: APIProtocol {
    let api: StoreAPI

    func getStore(_ input: Operations.GetStore.Input) async throws -> Operations.GetStore.Output {
        try await api.getStore(input)
    }

    func fetch(_ input: Operations.Fetch.Input) async throws -> Operations.Fetch.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in try bounds.check(body) }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.fetch(input)
    }

    func objects(_ input: Operations.Objects.Input) async throws -> Operations.Objects.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.text(body.entity, "entity", maxLength: 256)
            try bounds.items(body.keys, "keys", max: 10_000)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.objects(input)
    }

    func destinations(_ input: Operations.Destinations.Input) async throws -> Operations.Destinations.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.text(body.entity, "entity", maxLength: 256)
            try bounds.text(body.relationship, "relationship", maxLength: 256)
            try bounds.items(body.owners, "owners", max: 10_000)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.destinations(input)
    }

    func save(_ input: Operations.Save.Input) async throws -> Operations.Save.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in try bounds.check(body) }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.save(input)
    }

    func batchUpdate(_ input: Operations.BatchUpdate.Input) async throws -> Operations.BatchUpdate.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.predicate(body.entity, body.predicate, body.arguments)
            try bounds.items(body.assignments, "assignments", max: 256)
            for (index, assignment) in body.assignments.enumerated() {
                try bounds.text(assignment.property, "assignments[\(index)].property", maxLength: 256)
                try bounds.text(assignment.expression, "assignments[\(index)].expression", maxLength: 16_384)
            }
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.batchUpdate(input)
    }

    func batchDelete(_ input: Operations.BatchDelete.Input) async throws -> Operations.BatchDelete.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.predicate(body.entity, body.predicate, body.arguments)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.batchDelete(input)
    }

    func changes(_ input: Operations.Changes.Input) async throws -> Operations.Changes.Output {
        if let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.text(input.query.after, "after", maxLength: 64)
            try bounds.integer(input.query.wait, "wait", minimum: 0, maximum: 30)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.changes(input)
    }

    func explain(_ input: Operations.Explain.Input) async throws -> Operations.Explain.Output {
        if case .json(let body) = input.body, let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.predicate(body.entity, body.predicate, body.arguments)
            try bounds.sort(body.sort)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.explain(input)
    }

    func history(_ input: Operations.History.Input) async throws -> Operations.History.Output {
        if let failure = RequestBounds.failure({ bounds throws(ServerFailure) in
            try bounds.integer(input.query.before, "before", minimum: 0)
            try bounds.integer(input.query.limit, "limit", minimum: 1, maximum: 500)
        }) {
            return .default(statusCode: failure.status, failure.response)
        }
        return try await api.history(input)
    }
}

/// The checks of the document's bounds: each throws a 400 naming the field and its bound.
struct RequestBounds {
    /// The failure `checks` throw, if any.
    static func failure(_ checks: (RequestBounds) throws(ServerFailure) -> Void) -> ServerFailure? {
        do {
            try checks(RequestBounds())
            return nil
        } catch {
            return error
        }
    }

    static func outOfBounds(_ field: String, _ bound: String, _ found: String) -> ServerFailure {
        ServerFailure(400, "bad_request", "'\(field)' \(bound) (the API's document says so); this request's is \(found)")
    }

    func integer<T: BinaryInteger>(_ value: T?, _ field: String, minimum: T? = nil, maximum: T? = nil) throws(ServerFailure) {
        guard let value else { return }
        let bound = switch (minimum, maximum) {
        case (let low?, let high?): "is from \(low) to \(high)"
        case (let low?, nil): "is at least \(low)"
        case (nil, let high?): "is at most \(high)"
        case (nil, nil): ""
        }
        if let minimum, value < minimum { throw Self.outOfBounds(field, bound, "\(value)") }
        if let maximum, value > maximum { throw Self.outOfBounds(field, bound, "\(value)") }
    }

    /// A string's length as JSON Schema counts it: in Unicode scalars.
    func text(_ value: String?, _ field: String, maxLength: Int) throws(ServerFailure) {
        guard let value else { return }
        let length = value.unicodeScalars.count
        if length > maxLength { throw Self.outOfBounds(field, "is at most \(maxLength) characters long", "\(length) long") }
    }

    func items<C: Collection>(_ value: C?, _ field: String, max: Int) throws(ServerFailure) {
        guard let value else { return }
        if value.count > max { throw Self.outOfBounds(field, "has at most \(max) items", "\(value.count) long") }
    }

    /// A body's entity, predicate and its arguments.
    func predicate(_ entity: String, _ predicate: String?, _ arguments: [Components.Schemas.Value]?) throws(ServerFailure) {
        try text(entity, "entity", maxLength: 256)
        try text(predicate, "predicate", maxLength: 16_384)
        try items(arguments, "arguments", max: 1000)
        try values(arguments, "arguments")
    }

    /// Values each in one of the forms the document gives a `Value` (whether or not the request uses them).
    func values(_ values: [Components.Schemas.Value]?, _ field: String) throws(ServerFailure) {
        for (index, value) in (values ?? []).enumerated() {
            do {
                _ = try WireValue.value(value)
            } catch {
                throw ServerFailure(400, "bad_request", "'\(field)[\(index)]' is not a value (the API's document says what one is): \(error.description)")
            }
        }
    }

    func sort(_ keys: [Components.Schemas.SortKey]?) throws(ServerFailure) {
        try items(keys, "sort", max: 32)
        for (index, key) in (keys ?? []).enumerated() { try text(key.keyPath, "sort[\(index)].keyPath", maxLength: 1024) }
    }

    func check(_ body: Components.Schemas.FetchBody) throws(ServerFailure) {
        try predicate(body.entity, body.predicate, body.arguments)
        try sort(body.sort)
        try integer(body.limit, "limit", minimum: 0, maximum: 10_000)
        try integer(body.offset, "offset", minimum: 0)
        try text(body.after, "after", maxLength: 8192)
        try items(body.prefetch, "prefetch", max: 32)
        for (index, path) in (body.prefetch ?? []).enumerated() { try text(path, "prefetch[\(index)]", maxLength: 1024) }
        try items(body.select, "select", max: 64)
        for (index, column) in (body.select ?? []).enumerated() {
            try text(column.name, "select[\(index)].name", maxLength: 256)
            try text(column.expression, "select[\(index)].expression", maxLength: 16_384)
        }
        try items(body.groupBy, "groupBy", max: 32)
        for (index, path) in (body.groupBy ?? []).enumerated() { try text(path, "groupBy[\(index)]", maxLength: 1024) }
        try text(body.having, "having", maxLength: 16_384)
        try items(body.havingArguments, "havingArguments", max: 1000)
        try values(body.havingArguments, "havingArguments")
        try integer(body.stepLimit, "stepLimit", minimum: 1)
    }

    func check(_ body: Components.Schemas.ChangeSet) throws(ServerFailure) {
        try text(body.origin, "origin", maxLength: 64)
        try integer(body.sequence, "sequence", minimum: 1)
        try items(body.inserts, "inserts", max: 100_000)
        try items(body.updates, "updates", max: 100_000)
        try items(body.deletes, "deletes", max: 100_000)
        try items(body.links, "links", max: 100_000)
        try items(body.kept, "kept", max: 100_000)
        for (index, insert) in (body.inserts ?? []).enumerated() { try text(insert.entity, "inserts[\(index)].entity", maxLength: 256) }
        for (index, update) in (body.updates ?? []).enumerated() { try text(update.entity, "updates[\(index)].entity", maxLength: 256) }
        for (index, delete) in (body.deletes ?? []).enumerated() { try text(delete.entity, "deletes[\(index)].entity", maxLength: 256) }
        for (index, link) in (body.links ?? []).enumerated() {
            try text(link.entity, "links[\(index)].entity", maxLength: 256)
            try text(link.relationship, "links[\(index)].relationship", maxLength: 256)
        }
    }
}

/// A body member that is `null` where the document does not say nullable (only `Value`s are: format
/// arguments and attribute values) is a 400 naming it; the generated decoder would read it as left out.
struct NullMemberMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Members that hold `Value`s, where null is a value.
    static var valueMembers: Set<String> { ["arguments", "havingArguments", "values"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        // (A body in another content type, such as the compact form of rows, is not JSON: not looked into.)
        guard request.method == .post, request.uri.path.hasPrefix("/v1/"),
              request.headers[.contentType].map({ $0.lowercased().contains("json") }) ?? true else { return try await next(request, context) }
        var request = request
        // Buffered already (BodyLimitMiddleware): read again, parsed only when it holds a null.
        let body = try await request.collectBody(upTo: .max)
        let bytes = body.readableBytesView
        guard bytes.firstRange(of: Array("null".utf8)) != nil,
              let json = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
            return try await next(request, context)
        }
        if let field = Self.nullMember(json, path: "") {
            throw ServerFailure(400, "bad_request", "'\(field)' is not nullable (the API's document says so): leave it out instead of null")
        }
        return try await next(request, context)
    }

    /// The path of the first member that is null outside a value, if any.
    static func nullMember(_ json: Any, path: String) -> String? {
        if let object = json as? [String: Any] {
            for (key, member) in object.sorted(by: { $0.key < $1.key }) {
                let place = path.isEmpty ? key : "\(path).\(key)"
                if member is NSNull { return place }
                if valueMembers.contains(key) { continue }
                if let found = nullMember(member, path: place) { return found }
            }
        } else if let array = json as? [Any] {
            for (index, element) in array.enumerated() {
                if element is NSNull { return "\(path)[\(index)]" }
                if let found = nullMember(element, path: "\(path)[\(index)]") { return found }
            }
        }
        return nil
    }
}

/// A method an API path does not take: 405, with the one it takes in `Allow` (the document's paths).
struct MethodMiddleware<Context: RequestContext>: RouterMiddleware {
    /// Each API path and the method the document gives it.
    static var methods: [String: HTTPRequest.Method] {
        ["/v1/store": .get, "/v1/fetch": .post, "/v1/objects": .post, "/v1/destinations": .post, "/v1/save": .post,
         "/v1/batch-update": .post, "/v1/batch-delete": .post, "/v1/changes": .get, "/v1/explain": .post, "/v1/history": .get]
    }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        guard let allowed = Self.methods[request.uri.path], request.method != allowed else { return try await next(request, context) }
        var response = FailureMiddleware<Context>.response(ServerFailure(
            405, "method_not_allowed", "\(request.uri.path) takes \(allowed.rawValue) requests, not \(request.method.rawValue)"))
        response.headers[.allow] = allowed.rawValue
        return response
    }
}
#endif
