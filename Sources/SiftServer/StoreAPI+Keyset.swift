// Keyset paging for the fetch operation: a page's `next` cursor holds the
// sort values of its last object and how many objects with those values it
// has returned; the next page is one fetch of the objects sorted at or after
// them (`%K == %@ OR %K > %@`, nil placed as sorts place it) that skips those
// ties, so a far page costs what the first does (but for a long run of equal
// sort values, and in key order with no sort, where the skip is a count).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import OpenAPIRuntime
import Sift
import SiftHTTPAPI
import SiftStore

/// What a cursor holds: the request it is for (a digest), the last object's sort values and the ties already seen.
struct PageCursor: Codable, Sendable {
    /// A digest of the entity, predicate, arguments and sort.
    var shape: String
    /// The sort values of the last object returned, one per sort key.
    var values: [OpenAPIValueContainer]
    /// How many objects with those sort values were returned before.
    var skip: Int

    /// The cursor as text: base64url of its JSON.
    var text: String {
        let data = (try? JSONEncoder().encode(self)) ?? Data()
        return data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    init(shape: String, values: [OpenAPIValueContainer], skip: Int) {
        self.shape = shape
        self.values = values
        self.skip = skip
    }

    /// Reads a cursor's text; nil for text that is not one.
    init?(text: String) {
        var base64 = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard let data = Data(base64Encoded: base64), let cursor = try? JSONDecoder().decode(PageCursor.self, from: data),
              cursor.skip >= 0 else { return nil }
        self = cursor
    }

    /// A stable digest of what a cursor pages through (64-bit FNV-1a of the request's parts).
    static func shape(of body: Components.Schemas.FetchBody) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let arguments = (try? encoder.encode(body.arguments ?? [])) ?? Data()
        let sort = (try? encoder.encode(body.sort ?? [])) ?? Data()
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for part in [Data(body.entity.utf8), Data((body.predicate ?? "").utf8), arguments, sort] {
            for byte in part + [0] {
                hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3
            }
        }
        return String(hash, radix: 16)
    }
}

extension StoreAPI {
    /// A page of objects after `cursor`: the rest of its ties, then the objects sorted after them, in one fetch.
    func objects(after text: String, request: FetchRequest, body: Components.Schemas.FetchBody, steps: Int) throws -> [RowNode] {
        guard body.offset ?? 0 == 0 else { throw ServerFailure.badRequest("a cursor ('after') pages by itself: leave out 'offset'") }
        guard let cursor = PageCursor(text: text), cursor.shape == PageCursor.shape(of: body),
              cursor.values.count == request.sortDescriptors.count else {
            throw ServerFailure.badRequest("'after' is not a cursor of this request (its entity, predicate, arguments and sort)")
        }
        let values = try cursor.values.map { container throws(WireError) in try WireValue.value(container) }
        let limit = request.fetchLimit ?? configuration.maximumPageSize
        let predicate = body.predicate
        let arguments = try WireValue.arguments(body.arguments)
        func conjunction(_ term: (String, [PredicateValue])) -> FetchRequest {
            var next = FetchRequest(entityName: request.entityName,
                                    predicate: predicate.map { "(\($0)) AND (\(term.0))" } ?? term.0,
                                    arguments: arguments + term.1, sortDescriptors: request.sortDescriptors)
            next.regularExpressionStepLimit = request.regularExpressionStepLimit
            return next
        }
        // The objects sorted at or after the last one, past the ties already returned: in the sort's order
        // the ties come first, so one fetch skips them and goes on.
        let equal = Self.equalTerm(request.sortDescriptors, values)
        let later = Self.afterTerm(request.sortDescriptors[...], values[...])
        var next = request.sortDescriptors.isEmpty ? conjunction(equal)
            : conjunction(("(\(equal.0)) OR (\(later.0))", equal.1 + later.1))
        next.fetchOffset = cursor.skip
        next.fetchLimit = limit
        let nodes = try EvaluationBudget.run(steps: steps) { () throws(StoreError) in try store.rows(for: try store.compile(next)) }
        return nodes
    }

    /// The cursor after the last of `nodes`, the page of `body` that began after `previous` (nil for a first page).
    func cursor(after nodes: [RowNode], request: FetchRequest, body: Components.Schemas.FetchBody, previous: String?) throws -> String? {
        guard !nodes.isEmpty else { return nil }
        let sort = request.sortDescriptors
        // Ties as the sort sees them: a case-insensitive key's strings folded as `[c]` folds them.
        func key(_ tuple: [PredicateValue]) -> [PredicateValue] {
            zip(tuple, sort).map { value, descriptor in
                if descriptor.caseInsensitive, case .string(let text) = value { .string(StringFolding.fold(text, .caseInsensitive)) } else { value }
            }
        }
        let tuples = try sortValues(of: nodes, keyPaths: sort.map(\.keyPath))
        let lastTuple = tuples[tuples.count - 1]
        var skip = tuples.reversed().prefix { key($0) == key(lastTuple) }.count
        // A page of ties only continues the run the previous page ended with.
        if skip == nodes.count, let previous, let cursor = PageCursor(text: previous),
           let values = try? cursor.values.map({ container throws(WireError) in try WireValue.value(container) }), key(values) == key(lastTuple) {
            skip += cursor.skip
        }
        return PageCursor(shape: PageCursor.shape(of: body), values: lastTuple.map(WireValue.container), skip: skip).text
    }

    /// Each node's values at `keyPaths` (attributes, through to-one relationships), one store read per
    /// relationship level for all the nodes.
    func sortValues(of nodes: [RowNode], keyPaths: [String]) throws -> [[PredicateValue]] {
        var tuples = Array(repeating: [PredicateValue](), count: nodes.count)
        for keyPath in keyPaths {
            var current: [RowNode?] = nodes
            var keys = keyPath.split(separator: ".").map(String.init)[...]
            while let key = keys.first {
                let remaining = keys.joined(separator: ".")
                // An attribute (a composite's element is named with its dot), read from each node's own entity.
                let attributes = current.map { node in node.flatMap { model.entities[$0.id.entity].attribute(named: remaining) } }
                if attributes.contains(where: { $0 != nil }) || keys.count == 1 {
                    for (index, node) in current.enumerated() {
                        tuples[index].append(node.flatMap { node in attributes[index].map { node.value(at: $0.slot) } } ?? .null)
                    }
                    break
                }
                // A to-one relationship: its destinations, read together.
                guard let owner = current.lazy.compactMap({ $0 }).first,
                      let relationship = model.entities[owner.id.entity].relationship(named: key), !relationship.isToMany,
                      let destination = model.entity(named: relationship.destination) else {
                    for index in current.indices { tuples[index].append(.null) }
                    break
                }
                let targets = current.map { node in node.flatMap { $0.toOneKey(at: relationship.slot) } }
                let rows = try store.rows(destination, keys: Array(Set(targets.compactMap { $0 })).sorted())
                let byKey = Dictionary(rows.map { ($0.id.primaryKey, $0) }, uniquingKeysWith: { first, _ in first })
                current = targets.map { $0.flatMap { byKey[$0] } }
                keys = keys.dropFirst()
            }
        }
        return tuples
    }

    /// Objects whose sort values equal `values`: `%K == %@` for each key (`%K == nil` for nil).
    static func equalTerm(_ sort: [FetchSortDescriptor], _ values: [PredicateValue]) -> (String, [PredicateValue]) {
        guard !sort.isEmpty else { return ("TRUEPREDICATE", []) }
        var terms: [String] = []
        var arguments: [PredicateValue] = []
        for (descriptor, value) in zip(sort, values) {
            arguments.append(.string(descriptor.keyPath))
            if value == .null {
                terms.append("%K == nil")
            } else {
                terms.append(descriptor.caseInsensitive ? "%K ==[c] %@" : "%K == %@")
                arguments.append(value)
            }
        }
        return (terms.joined(separator: " AND "), arguments)
    }

    /// Objects sorted after `values`: after on the first key, or equal on it and after on the rest.
    /// Nil sorts first in an ascending sort and last in a descending one.
    static func afterTerm(_ sort: ArraySlice<FetchSortDescriptor>, _ values: ArraySlice<PredicateValue>) -> (String, [PredicateValue]) {
        guard let descriptor = sort.first, let value = values.first else { return ("FALSEPREDICATE", []) }
        let key = PredicateValue.string(descriptor.keyPath)
        let c = descriptor.caseInsensitive ? "[c]" : ""
        let greater: (String, [PredicateValue]) = switch (descriptor.ascending, value == .null) {
        case (true, true): ("%K != nil", [key])
        case (true, false): ("%K >\(c) %@", [key, value])
        case (false, true): ("FALSEPREDICATE", [])
        case (false, false): ("(%K <\(c) %@ OR %K == nil)", [key, value, key])
        }
        guard sort.count > 1 else { return greater }
        let equal = equalTerm([descriptor], [value])
        let rest = afterTerm(sort.dropFirst(), values.dropFirst())
        return ("\(greater.0) OR (\(equal.0) AND (\(rest.0)))", greater.1 + equal.1 + rest.1)
    }
}
#endif
