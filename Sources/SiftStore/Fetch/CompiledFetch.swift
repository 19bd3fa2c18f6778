// Store stage: requests compiled once. A fetch request's predicate is
// parsed, bound (transient attributes refused), optimized, and its sort keys
// bound, once per shape — the entity, the predicate's text, the kind of each
// argument, the sort descriptors — and kept in the store's bounded cache. A
// string or integer argument compared with an attribute of its type is
// bound as a parameter, so every value of it shares the compiled shape (and,
// on a SQL store, its plan and statements); any other argument is part of
// the shape. Everything that fetches takes a `CompiledFetch`: plain fetches,
// fetches that include pending changes, fetched results controllers,
// dictionary fetches, batch updates and templates. An error in a later stage
// is placed in the text by the source map made with the shape.

import Foundation
import OrderedCollections
import Sift
import Synchronization

/// A fetch request compiled against a store's model: its entity, its
/// predicate bound and optimized, its sort keys bound.
///
/// ```swift
/// let fetch = try store.compile(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: ["Ada"]))
/// print(fetch.predicate?.outline ?? "every object")     // name == "Ada"
/// ```
///
/// A store compiles each request shape once (``PersistentStore/compile(_:)``):
/// the same text with other string or integer arguments reuses it.
public struct CompiledFetch: Sendable {
    /// The request as given: its paging, batching, prefetching and result type.
    public private(set) var request: FetchRequest
    let shape: CompiledShape
    /// The values of the shape's argument parameters, by parameter name.
    let arguments: [String: PredicateValue]

    init(request: FetchRequest, shape: CompiledShape, arguments: [String: PredicateValue]) {
        self.request = request
        self.shape = shape
        self.arguments = arguments
    }

    /// The entity whose objects (and subentities' objects) are fetched.
    public var entity: Entity { shape.entity }

    /// The predicate, bound, optimized, with the request's arguments in
    /// place; nil when the request selects every object.
    public var predicate: BoundPredicate? { shape.predicate?.fillingParameters(arguments) }

    /// The sort keys, bound, in order.
    public var sortKeys: [SQLSortKey] { shape.sortKeys }

    /// The optimizer rules that changed the predicate.
    public var rewrites: [String] { shape.rewrites }

    /// Where in the predicate's text a bound expression of it came from.
    ///
    /// - Parameter expression: An expression of the bound (unoptimized) predicate.
    /// - Returns: Its range in the request's predicate text; nil when it did not come from the text.
    public func sourceRange(of expression: BoundExpression?) -> SourceRange? {
        expression.flatMap { shape.sourceMap[$0] }
    }

    /// The same compiled fetch for a request that differs from this one only
    /// in what the shape does not hold (limit, offset, batch size,
    /// prefetching, whether pending changes count).
    package func with(_ change: (inout FetchRequest) -> Void) -> CompiledFetch {
        var copy = self
        change(&copy.request)
        return copy
    }

    /// The values a statement of the shape's plan binds to its parameters.
    package var parameterValues: [String: PredicateValue] { arguments }
}

/// One compiled request shape, shared by every request of that shape.
final class CompiledShape: Sendable {
    let entity: Entity
    /// Bound and optimized; argument slots are parameters.
    let predicate: BoundPredicate?
    let rewrites: [String]
    let sortKeys: [SQLSortKey]
    let sourceMap: [BoundExpression: SourceRange]
    /// The parameter name of each argument slot, by argument index.
    let slots: [Int: String]
    /// A SQL store's plan for the shape, made once (`SQLStoreBackend`) and
    /// shared by reference: a fetch reads the fields it needs, where a copy
    /// of the plan counted a reference for each of its trees and arrays.
    let plan = LockedState<SharedFetchPlan?>(nil)
    /// The statements of the plan, rendered once per kind of columns, limit and offset.
    let statements = LockedState<[StatementKey: SQLQuery]>([:])

    struct StatementKey: Hashable {
        var columns: SQLColumns
        var limit: Int?
        var offset: Int?
    }

    init(entity: Entity, predicate: BoundPredicate?, rewrites: [String], sortKeys: [SQLSortKey],
         sourceMap: [BoundExpression: SourceRange], slots: [Int: String]) {
        self.entity = entity
        self.predicate = predicate
        self.rewrites = rewrites
        self.sortKeys = sortKeys
        self.sourceMap = sourceMap
        self.slots = slots
    }
}

/// The requests a store has compiled, by shape; at most `capacity` of them
/// (the oldest go first).
public final class CompiledFetchCache: Sendable {
    /// The most shapes kept.
    public let capacity: Int
    private let entries = LockedState<OrderedDictionary<ShapeKey, Entry>>([:])
    private let resultEntries = LockedState<OrderedDictionary<ResultsKey, CompiledResults>>([:])

    /// An empty cache.
    ///
    /// - Parameter capacity: The most request shapes kept; 512 by default.
    public init(capacity: Int = 512) {
        self.capacity = max(capacity, 1)
    }

    /// How many request shapes the cache holds.
    public var count: Int { entries.withLock { $0.count } }

    /// Forgets every compiled request.
    public func removeAll() {
        entries.withLock { $0.removeAll() }
        resultEntries.withLock { $0.removeAll() }
    }

    enum Entry {
        case shape(CompiledShape)
        /// The shape's arguments cannot be parameters: compile with their values.
        case byValue
    }

    struct ShapeKey: Hashable {
        var entity: String
        var predicate: PredicateKey?
        var sort: [FetchSortDescriptor]
        var functions: Int
    }

    enum PredicateKey: Hashable {
        case format(String, [ArgumentKey])
        case bound(BoundPredicate)
    }

    enum ArgumentKey: Hashable {
        /// A string or integer argument, a parameter of the shape.
        case slot(ValueType)
        case value(PredicateValue)
    }

    struct ResultsKey: Hashable {
        var entity: String
        var properties: [ExpressionDescription]
        var groupBy: [String]
        var having: PredicateKey?
        var distinct: Bool
        var sort: [FetchSortDescriptor]
        var functions: Int
    }

    func entry(_ key: ShapeKey) -> Entry? { entries.withLock { $0[key] } }

    func store(_ entry: Entry, for key: ShapeKey) {
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeFirst(max(capacity / 4, 1)) }
            entries[key] = entry
        }
    }

    func results(_ key: ResultsKey) -> CompiledResults? { resultEntries.withLock { $0[key] } }

    func store(_ results: CompiledResults, for key: ResultsKey) {
        resultEntries.withLock { entries in
            if entries.count >= capacity { entries.removeFirst(max(capacity / 4, 1)) }
            entries[key] = results
        }
    }
}

/// A dictionary fetch's results compiled: its columns, grouping and having
/// predicate, and its sort keys (which name results).
package struct CompiledResults: Sendable {
    package let fetch: BoundDictionaryFetch
    package let sort: [ResultSortKey]
}

extension PersistentStore {
    /// Compiles a fetch request against the store's model, or takes it from
    /// the store's cache when a request of the same shape was compiled
    /// before: the same entity, predicate text, kinds of arguments and sort
    /// descriptors. Every fetch a context runs is compiled here.
    ///
    /// - Parameter request: The request to compile.
    /// - Returns: The compiled request.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model (a transient attribute included: the store
    ///   holds no value of one).
    public func compile(_ request: FetchRequest) throws(StoreError) -> CompiledFetch {
        // (The entity by its index: a cached shape needs no copy of it.)
        guard let entityIndex = model.entityIndex(named: request.entityName) else { throw .unknownEntity(request.entityName) }
        var key = CompiledFetchCache.ShapeKey(entity: request.entityName, predicate: nil, sort: request.sortDescriptors,
                                              functions: functions.generation)
        var text: String?
        var arguments: [PredicateValue] = []
        var slots = ArgumentSlots()
        switch request.predicate {
        case nil:
            break
        case .bound(let bound):
            key.predicate = .bound(bound)
        case .format(let format, let values):
            text = format
            arguments = values
            slots = ArgumentSlots(values)
            key.predicate = .format(format, values.indices.map { index in
                slots.contains(index) ? .slot(Self.slotType(values[index])) : .value(values[index])
            })
        }
        // A shape keyed by large values (a long list for IN, a long text) is
        // not kept: the cache bounds how many shapes it holds, and so how
        // much memory they take.
        let keepable = (text?.utf8.count ?? 0) <= 16_384
            && arguments.indices.allSatisfy { slots.contains($0) || Self.isSmall(arguments[$0]) }
        switch compiledFetches.entry(key) {
        case .shape(let shape)?:
            return CompiledFetch(request: request, shape: shape, arguments: Self.slotValues(shape, arguments))
        case .byValue?:
            key.predicate = .format(text!, arguments.map { .value($0) })
            if case .shape(let shape)? = compiledFetches.entry(key) {
                return CompiledFetch(request: request, shape: shape, arguments: [:])
            }
            slots = ArgumentSlots()
        case nil:
            break
        }
        let entity = model.entities[entityIndex]
        if !slots.isEmpty {
            if let shape = try? makeShape(request, entity: entity, text: text!, arguments: arguments, slots: slots.indices) {
                if keepable { compiledFetches.store(.shape(shape), for: key) }
                return CompiledFetch(request: request, shape: shape, arguments: Self.slotValues(shape, arguments))
            }
            // Some argument is not a plain operand of a comparison: compile
            // with the values in place, cached by them.
            if keepable { compiledFetches.store(.byValue, for: key) }
            key.predicate = .format(text!, arguments.map { .value($0) })
        }
        let shape = try makeShape(request, entity: entity, text: text, arguments: arguments, slots: [])!
        if keepable && arguments.allSatisfy(Self.isSmall) { compiledFetches.store(.shape(shape), for: key) }
        return CompiledFetch(request: request, shape: shape, arguments: [:])
    }

    /// Whether a value is small enough to be part of a cache key.
    private static func isSmall(_ value: PredicateValue) -> Bool {
        switch value {
        case .string(let s): s.utf8.count <= 1024
        case .data(let d): d.count <= 1024
        case .array(let members): members.count <= 64 && members.allSatisfy(isSmall)
        case .dictionary(let members): members.count <= 64 && members.values.allSatisfy(isSmall)
        default: true
        }
    }

    /// The arguments that may be parameters: strings without U+0000 (which
    /// PostgreSQL's text cannot hold) and integers a double holds exactly;
    /// none when there are more than eight (a long chain of them is better
    /// one table of values, which takes constants).

    private static func slotType(_ value: PredicateValue) -> ValueType {
        if case .int = value { return .integer }
        return .string
    }

    private static func slotValues(_ shape: CompiledShape, _ arguments: [PredicateValue]) -> [String: PredicateValue] {
        var values: [String: PredicateValue] = [:]
        values.reserveCapacity(shape.slots.count)
        for (index, name) in shape.slots where index < arguments.count { values[name] = arguments[index] }
        return values
    }

    /// Parses, binds and optimizes a request's predicate and binds its sort
    /// keys. With `slots`, nil when an argument slot is anything but one side
    /// of a plain comparison (`==`, `!=`, `<`, `<=`, `>`, `>=`, no options,
    /// no quantifier) with an attribute of its type, or when it does not bind:
    /// the caller compiles with the values in place then.
    private func makeShape(_ request: FetchRequest, entity: Entity, text: String?, arguments: [PredicateValue],
                           slots: Set<Int>) throws(StoreError) -> CompiledShape? {
        var predicate: BoundPredicate?
        var rewrites: [String] = []
        var sourceMap: [BoundExpression: SourceRange] = [:]
        var names: [Int: String] = [:]
        if let text {
            let syntax: PredicateSyntax
            do {
                syntax = slots.isEmpty
                    ? try PredicateParser.parse(text, arguments: arguments)
                    : try PredicateParser.parse(text, arguments: arguments, slots: slots)
            } catch {
                throw .invalidPredicate(.syntax(error), text: text)
            }
            var binder = self.binder
            for index in slots {
                let name = PredicateParser.argumentSlotName(index)
                guard syntax.variables.contains(name) else { return nil }
                names[index] = name
                binder.parameterTypes[name] = Self.slotType(arguments[index])
            }
            let bound: BoundPredicate
            do {
                (bound, sourceMap) = try binder.bindWithSourceMap(syntax, entity: entity.name)
            } catch {
                if !slots.isEmpty { return nil }
                throw .invalidPredicate(.validation(error), text: text)
            }
            if !slots.isEmpty {
                let occurrences = bound.parameterOccurrences
                guard occurrences.count == slots.count, Set(occurrences.map(\.name)).count == slots.count,
                      occurrences.allSatisfy(Self.isPlainComparison) else { return nil }
            }
            (predicate, rewrites) = Optimizer.standard.optimizeWithTrace(bound)
        } else if case .bound(let bound)? = request.predicate {
            (predicate, rewrites) = Optimizer.standard.optimizeWithTrace(bound)
        }
        return CompiledShape(entity: entity, predicate: predicate, rewrites: rewrites, sortKeys: try sortKeys(request),
                             sourceMap: sourceMap, slots: names)
    }

    private static func isPlainComparison(_ occurrence: (name: String, comparison: BoundComparison?)) -> Bool {
        guard let c = occurrence.comparison, c.quantifier == .direct, c.options.isEmpty,
              [.equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo].contains(c.operator) else { return false }
        let (parameter, other) = if case .parameter = c.left.kind { (c.left, c.right) } else { (c.right, c.left) }
        guard case .attribute = other.kind, case .parameter = parameter.kind else { return false }
        return other.type == parameter.type
    }

    /// A dictionary fetch's results compiled (its properties, grouping,
    /// having predicate and sort keys naming results), once per shape.
    package func compileResults(_ request: FetchRequest) throws(StoreError) -> CompiledResults {
        let key = CompiledFetchCache.ResultsKey(
            entity: request.entityName, properties: request.propertiesToFetch, groupBy: request.propertiesToGroupBy,
            having: request.havingPredicate.map { having in
                switch having {
                case .format(let text, let arguments): .format(text, arguments.map { .value($0) })
                case .bound(let bound): .bound(bound)
                }
            },
            distinct: request.returnsDistinctResults, sort: request.sortDescriptors, functions: functions.generation)
        if let results = compiledFetches.results(key) { return results }
        let (fetch, sort) = try bindDictionaryFetch(request)
        let results = CompiledResults(fetch: fetch, sort: sort)
        compiledFetches.store(results, for: key)
        return results
    }
}

/// The arguments of a format predicate that may become parameters of
/// a cached shape (at most 8: a string without NUL, or an integer a
/// double holds exactly), one bit each: a fetch from the cache builds
/// no set.
private struct ArgumentSlots {
    private var bits: UInt8 = 0

    init() {}

    init(_ arguments: [PredicateValue]) {
        guard arguments.count <= 8 else { return }
        for (index, argument) in arguments.enumerated() {
            let slot: Bool
            switch argument {
            case .string(let s):
                // (Through its bytes: a generic scan of the UTF-8 view costs a call per byte.)
                slot = !(s.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? s.utf8.contains(0))
            case .int(let i): slot = i.magnitude <= 1 << 53
            default: slot = false
            }
            if slot { bits |= 1 << UInt8(index) }
        }
    }

    var isEmpty: Bool { bits == 0 }

    func contains(_ index: Int) -> Bool { index >= 0 && index < 8 && bits & (1 << UInt8(index)) != 0 }

    /// The slots as a set of argument indexes.
    var indices: Set<Int> { Set((0..<8).filter(contains)) }
}
