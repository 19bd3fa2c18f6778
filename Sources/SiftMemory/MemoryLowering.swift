// Stage 6a (memory lowering): compiles a bound tree once into closures that evaluate it
// against objects, with no tree walk per object.
//
// The compiler is generic over an evaluation domain, which says how to read
// an attribute or follow a relationship of its objects: row-cache nodes
// (`RowNodeDomain`) or key-value records (`KeyValueDomain`). Readers are asked
// for once per key path at compile time, so the per-object work is a closure
// call and a slot read.

import Foundation
import SiftTree
import SiftValues

/// How the evaluator reads the objects it tests.
///
/// The compiler asks for a handle once per attribute or relationship of a
/// predicate; evaluation then passes the handle back for each object, so a
/// domain can resolve names and slots ahead of time.
public protocol EvaluationDomain {
    /// The objects predicates are evaluated against.
    associatedtype Object
    /// What the domain needs to read an attribute quickly.
    associatedtype AttributeHandle
    /// What the domain needs to follow a relationship quickly.
    associatedtype RelationshipHandle
    /// What the domain needs to look a key up quickly, in a predicate bound
    /// without a model: the key itself, unless the domain knows its objects'
    /// layout ahead of time.
    associatedtype KeyHandle = String

    /// Prepares to read `attribute`, once, when a predicate is compiled.
    ///
    /// - Parameter attribute: The attribute a bound predicate reads.
    /// - Returns: What `value(_:of:)` needs to read it from each object.
    func handle(for attribute: AttributeReference) -> AttributeHandle
    /// Prepares to follow `relationship`, once, when a predicate is compiled.
    ///
    /// - Parameter relationship: The relationship a bound predicate follows.
    /// - Returns: What `object(_:of:)` and `objects(_:of:)` need to follow
    ///   it from each object.
    func handle(for relationship: RelationshipReference) -> RelationshipHandle
    /// An attribute's value.
    ///
    /// - Parameters:
    ///   - attribute: The attribute's handle, from `handle(for:)`.
    ///   - object: The object to read.
    /// - Returns: The attribute's value; `.null` when it has none.
    func value(_ attribute: AttributeHandle, of object: Object) -> PredicateValue
    /// A to-one relationship's object, or nil when it is empty.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - object: The object to follow it from.
    /// - Returns: The related object, or nil.
    func object(_ relationship: RelationshipHandle, of object: Object) -> Object?
    /// A to-many relationship's objects.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - object: The object to follow it from.
    /// - Returns: The related objects, in the relationship's order.
    func objects(_ relationship: RelationshipHandle, of object: Object) -> [Object]
    /// Calls `body` with each object of a to-many relationship until it
    /// returns false.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - object: The object to follow it from.
    ///   - body: Called with each related object; returns false to stop.
    /// - Returns: False if `body` stopped early; true otherwise.
    func forEach(_ relationship: RelationshipHandle, of object: Object, _ body: (Object) -> Bool) -> Bool
    /// A value that identifies an object, for `SELF == %@` and `manager IN %@`.
    ///
    /// - Parameter object: The object to identify.
    /// - Returns: The object's reference, or the value it stands for.
    func reference(to object: Object) -> PredicateValue
    /// Prepares to look `key` up, once, when a predicate bound without a
    /// model is compiled.
    ///
    /// - Parameter key: A key of the predicate.
    /// - Returns: What `lookUp(_:in:)` needs to look it up in each object.
    func handle(forKey key: String) -> KeyHandle
    /// The object under `key`, looked up when the predicate runs (in a
    /// predicate bound without a model).
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The object to look it up in.
    /// - Returns: What the key holds, or the name of the object's type when it
    ///   has no keys.
    func lookUp(_ key: KeyHandle, in object: Object) -> KeyLookup<Object>
    /// The members of an object that is a collection; the object itself otherwise.
    ///
    /// - Parameter object: The object to take the members of.
    /// - Returns: Its members, in order.
    func members(of object: Object) -> [Object]
    /// A value as an object of the domain, when its objects are values
    /// (bound without a model); nil otherwise.
    ///
    /// - Parameter value: A value of the predicate or of its arguments.
    /// - Returns: The value as an object, or nil.
    func object(from value: PredicateValue) -> Object?
    /// The value under `key`, looked up when the predicate runs: `lookUp`
    /// then `reference(to:)`, which a domain may do in one step.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The object to look it up in.
    /// - Returns: The key's value, or the name of the object's type when it
    ///   has no keys.
    func value(forKey key: KeyHandle, in object: Object) -> KeyLookup<PredicateValue>
}

extension EvaluationDomain {
    /// Objects of a model have no keys but their properties.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The object to look the key up in.
    /// - Returns: `KeyLookup.notKeyed`, naming "an object of a model".
    public func lookUp(_ key: KeyHandle, in object: Object) -> KeyLookup<Object> { .notKeyed("an object of a model") }

    /// Objects of a model are not collections.
    ///
    /// - Parameter object: The object.
    /// - Returns: The object alone.
    public func members(of object: Object) -> [Object] { [object] }

    /// Objects of a model are not values.
    ///
    /// - Parameter value: A value.
    /// - Returns: Nil.
    public func object(from value: PredicateValue) -> Object? { nil }

    /// `lookUp(_:in:)` then `reference(to:)`.
    ///
    /// - Parameters:
    ///   - key: The key's handle.
    ///   - object: The object to look it up in.
    /// - Returns: The key's value, or the name of the object's type when it
    ///   has no keys.
    public func value(forKey key: KeyHandle, in object: Object) -> KeyLookup<PredicateValue> {
        switch lookUp(key, in: object) {
        case .found(let item): .found(reference(to: item))
        case .notKeyed(let type): .notKeyed(type)
        }
    }

    /// The key is its own handle.
    ///
    /// - Parameter key: A key of the predicate.
    /// - Returns: The key.
    public func handle(forKey key: String) -> KeyHandle where KeyHandle == String { key }

    /// Calls `body` with each of `objects(_:of:)` until it returns false.
    ///
    /// - Parameters:
    ///   - relationship: The relationship's handle.
    ///   - object: The object to follow it from.
    ///   - body: Called with each related object; returns false to stop.
    /// - Returns: False if `body` stopped early; true otherwise.
    public func forEach(_ relationship: RelationshipHandle, of object: Object, _ body: (Object) -> Bool) -> Bool {
        for member in objects(relationship, of: object) where !body(member) { return false }
        return true
    }
}

/// The values of the variables a predicate binds (SUBQUERY members, and the
/// members that `reports.age` ranges over), by slot.
public struct EvaluationScope<Object> {
    var slots: [Object?]
    /// The values of a template's `$variables`, for this evaluation.
    var parameters: [String: PredicateValue] = [:]
}

/// A predicate compiled for evaluation in memory.
///
/// ```swift
/// let filter = MemoryPredicate(bound, domain: RowNodeDomain(cache: cache))
/// let matches = try nodes.filter(filter.evaluate)
/// ```
///
/// Evaluation throws (``/SiftValues/EvaluationError``) when a `MATCHES` or
/// `LIKE` pattern needs more than ``/SiftValues/PredicateLimits/regularExpressionSteps``
/// on one value; in a predicate bound without a model, when a key is looked
/// up in a value that has no keys; and, compiled with `locations`, when an
/// operator meets values it cannot work on. A predicate bound to a model,
/// without `MATCHES` or `LIKE`, never throws.
public struct MemoryPredicate<Domain: EvaluationDomain> {
    typealias Object = Domain.Object
    let test: (Object, inout EvaluationScope<Object>) -> Bool
    let slotCount: Int
    /// Whether the predicate has a test that can run out of budget
    /// (`MATCHES`, `LIKE`).
    let mayFail: Bool
    /// The predicate compiled, and the domain it reads: a table's columns
    /// are evaluated from them (`filter(_:)` over a `RowTable`).
    let source: BoundPredicate
    let domain: Domain

    /// Compiles `predicate` for objects of `domain`.
    ///
    /// - Parameters:
    ///   - predicate: The bound predicate to compile.
    ///   - domain: How to read the objects the predicate is evaluated against.
    @_specialize(exported: true, where Domain == RowNodeDomain)
    @_specialize(exported: true, where Domain == DynamicDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == ColumnDomain)
    public init(_ predicate: BoundPredicate, domain: Domain) {
        var compiler = MemoryCompiler(domain: domain)
        test = compiler.test(predicate)
        slotCount = compiler.slotCount
        mayFail = compiler.mayFail
        source = predicate
        self.domain = domain
    }

    /// Compiles a predicate bound without a model for objects of `domain`:
    /// operands whose types were unknown at binding are checked per value,
    /// and an error names its place in the predicate's text, from
    /// `locations` (UTF-8 offsets, as the binder's source map has them).
    ///
    /// - Parameters:
    ///   - predicate: The predicate, bound without a model.
    ///   - domain: How to read the values the predicate is evaluated against.
    ///   - locations: Where each expression is in the predicate's text, as
    ///     UTF-8 offsets, for the locations of errors.
    @_specialize(exported: true, where Domain == DynamicDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == ColumnDomain)
    public init(_ predicate: BoundPredicate, domain: Domain, locations: [BoundExpression: Range<Int>]) {
        var compiler = MemoryCompiler(domain: domain)
        compiler.locations = locations
        compiler.checksTypesAtRunTime = true
        test = compiler.test(predicate)
        slotCount = compiler.slotCount
        mayFail = compiler.mayFail
        source = predicate
        self.domain = domain
    }

    /// Whether `object` satisfies the predicate.
    ///
    /// - Parameter object: The object to test.
    /// - Returns: True when the object satisfies the predicate.
    /// - Throws: `EvaluationError` when a `MATCHES` or `LIKE` pattern runs out
    ///   of budget on one value; in a predicate bound without a model, also
    ///   when a key is looked up in a value that has no keys
    ///   (`notKeyValueCoding`) or, compiled with `locations`, an operator
    ///   meets values it cannot work on (`incompatibleTypes`).
    @_specialize(exported: true, where Domain == RowNodeDomain)
    @_specialize(exported: true, where Domain == DynamicDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == ColumnDomain)
    public func evaluate(_ object: Domain.Object) throws(EvaluationError) -> Bool {
        var scope = EvaluationScope<Object>(slots: slotCount == 0 ? [] : Array(repeating: nil, count: slotCount))
        guard mayFail else { return test(object, &scope) }
        return try EvaluationFailure.scoped { test(object, &scope) }
    }

    /// Whether `object` satisfies a template's predicate with its
    /// `$variables` set to `parameters`.
    ///
    /// - Parameters:
    ///   - object: The object to test.
    ///   - parameters: The value of each `$variable`, by name.
    /// - Returns: True when the object satisfies the predicate.
    /// - Throws: `EvaluationError` when a `MATCHES` or `LIKE` pattern runs out
    ///   of budget on one value; in a predicate bound without a model, also
    ///   when a key is looked up in a value that has no keys
    ///   (`notKeyValueCoding`) or, compiled with `locations`, an operator
    ///   meets values it cannot work on (`incompatibleTypes`).
    @_specialize(exported: true, where Domain == DynamicDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == ColumnDomain)
    public func evaluate(_ object: Domain.Object, parameters: [String: PredicateValue]) throws(EvaluationError) -> Bool {
        var scope = EvaluationScope<Object>(slots: slotCount == 0 ? [] : Array(repeating: nil, count: slotCount),
                                            parameters: parameters)
        guard mayFail else { return test(object, &scope) }
        return try EvaluationFailure.scoped { test(object, &scope) }
    }

    /// The indices in `0..<count` whose objects satisfy the predicate, in
    /// order: the objects made by `object`, with one evaluation scope for
    /// them all, and one budget for their `MATCHES` and `LIKE` tests
    /// (`EvaluationBudget`: the fetch's this runs in, or
    /// `PredicateLimits.regularExpressionStepsPerFetch`). Stops at the first
    /// error.
    ///
    /// - Parameters:
    ///   - count: How many objects there are.
    ///   - parameters: The value of each `$variable`, by name (none by default).
    ///   - object: Makes the object at an index.
    /// - Returns: The indices of the objects that satisfy the predicate, in
    ///   increasing order.
    /// - Throws: `EvaluationError` from the first object whose evaluation fails:
    ///   a `MATCHES` or `LIKE` pattern that runs out of budget; in a predicate
    ///   bound without a model, a key looked up in a value that has no keys
    ///   (`notKeyValueCoding`) or, compiled with `locations`, an operator that
    ///   meets values it cannot work on (`incompatibleTypes`).
    @_specialize(exported: true, where Domain == ColumnDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == DynamicDomain)
    public func matchingIndices(count: Int, parameters: [String: PredicateValue] = [:],
                                _ object: (Int) -> Domain.Object) throws(EvaluationError) -> [Int] {
        var scope = EvaluationScope<Object>(slots: slotCount == 0 ? [] : Array(repeating: nil, count: slotCount),
                                            parameters: parameters)
        var matching: [Int] = []
        guard mayFail else {
            for index in 0..<count where test(object(index), &scope) { matching.append(index) }
            return matching
        }
        // One fetch: its patterns share one budget over every object (the
        // budget of the fetch it runs in, if any).
        try EvaluationBudget.joining(orRunning: PredicateLimits.standard.regularExpressionStepsPerFetch) {
            () throws(EvaluationError) in
            try EvaluationFailure.scoped {
                for index in 0..<count {
                    // A recorded error ends the evaluation, whatever the test gave.
                    let result = test(object(index), &scope)
                    if EvaluationFailure.pending != nil { return }
                    if result { matching.append(index) }
                }
            }
        }
        return matching
    }

    /// The objects of `objects` that satisfy the predicate, in their order,
    /// with one budget for their `MATCHES` and `LIKE` tests
    /// (`EvaluationBudget`: the fetch's this runs in, or
    /// `PredicateLimits.regularExpressionStepsPerFetch`).
    ///
    /// - Parameter objects: The objects to test.
    /// - Returns: The objects that satisfy the predicate.
    /// - Throws: `EvaluationError` from the first object whose evaluation fails,
    ///   as `evaluate(_:)` throws it, or `fetchTooCostly` when the patterns'
    ///   work over all the objects passes the budget.
    public func filter(_ objects: some Sequence<Domain.Object>) throws(EvaluationError) -> [Domain.Object] {
        var matching: [Domain.Object] = []
        guard mayFail else {
            for object in objects where try evaluate(object) { matching.append(object) }
            return matching
        }
        // One fetch: its patterns share one budget over every object (the
        // budget of the fetch it runs in, if any).
        try EvaluationBudget.joining(orRunning: PredicateLimits.standard.regularExpressionStepsPerFetch) {
            () throws(EvaluationError) in
            for object in objects where try evaluate(object) { matching.append(object) }
        }
        return matching
    }
}

/// An expression compiled for evaluation in memory.
public struct MemoryExpression<Domain: EvaluationDomain> {
    typealias Object = Domain.Object
    let value: (Object, inout EvaluationScope<Object>) -> PredicateValue
    let slotCount: Int
    let mayFail: Bool

    /// Compiles `expression` for objects of `domain`.
    ///
    /// - Parameters:
    ///   - expression: The bound expression to compile.
    ///   - domain: How to read the objects the expression is evaluated against.
    @_specialize(exported: true, where Domain == RowNodeDomain)
    @_specialize(exported: true, where Domain == DynamicDomain)
    @_specialize(exported: true, where Domain == ValueTreeDomain)
    @_specialize(exported: true, where Domain == ColumnDomain)
    public init(_ expression: BoundExpression, domain: Domain) {
        var compiler = MemoryCompiler(domain: domain)
        value = compiler.value(expression)
        slotCount = compiler.slotCount
        mayFail = compiler.mayFail
    }

    /// The expression's value for `object`.
    ///
    /// - Parameter object: The object to evaluate the expression for.
    /// - Returns: The expression's value.
    /// - Throws: `EvaluationError` when a `MATCHES` or `LIKE` pattern inside the
    ///   expression runs out of budget on one value, or, in an expression bound
    ///   without a model, when a key is looked up in a value that has no keys
    ///   (`notKeyValueCoding`).
    public func evaluate(_ object: Domain.Object) throws(EvaluationError) -> PredicateValue {
        var scope = EvaluationScope<Object>(slots: slotCount == 0 ? [] : Array(repeating: nil, count: slotCount))
        guard mayFail else { return value(object, &scope) }
        return try EvaluationFailure.scoped { value(object, &scope) }
    }
}

struct MemoryCompiler<Domain: EvaluationDomain> {
    typealias Object = Domain.Object
    typealias Scope = EvaluationScope<Object>
    typealias Test = (Object, inout Scope) -> Bool
    typealias ValueFn = (Object, inout Scope) -> PredicateValue
    typealias ObjectFn = (Object, inout Scope) -> Object?
    typealias ValuesFn = (Object, inout Scope) -> [PredicateValue]
    typealias ObjectsFn = (Object, inout Scope) -> [Object]

    let domain: Domain
    /// The slot of each variable in scope.
    var slots: [String: Int] = [:]
    var slotCount = 0
    /// Whether a compiled test can fail: run out of budget (`MATCHES`,
    /// `LIKE`), or meet types it cannot work on (bound without a model).
    var mayFail = false
    /// Where each expression is in the predicate's text, for errors.
    var locations: [BoundExpression: Range<Int>] = [:]
    /// Whether comparisons of operands whose types were unknown at binding
    /// are checked per value (predicates bound without a model). A model's
    /// predicates keep the semantics SQL shares: a template's `$variable` of
    /// another type compares false, as in SQL.
    var checksTypesAtRunTime = false

    init(domain: Domain) {
        self.domain = domain
    }

    /// Whether a loop compiled now runs inside another loop (a subquery's or
    /// a map's, whose variable is in scope): such a loop charges its members
    /// to the fetch's time budget (`EvaluationBudget.chargeLoop`), since
    /// nested loops cost the product of their collections. A loop on its own
    /// costs what its collection holds, and is not charged.
    var chargesLoops: Bool { !slots.isEmpty }

    /// A loop as an error names it: `SUBQUERY(reports, $a, …)`, `reports.…`.
    static func loopName(_ e: BoundExpression) -> String {
        switch e.kind {
        case .subquery(let collection, let variable, _): "SUBQUERY(\(path(collection)), $\(variable), …)"
        case .map(let collection, _, _): "\(path(collection)).…"
        default: path(e)
        }
    }

    /// A key path as the predicate wrote it, as far as it can be told.
    static func path(_ e: BoundExpression) -> String {
        func joined(_ base: BoundExpression, _ name: String) -> String {
            if case .evaluatedObject = base.kind { return name }
            return path(base) + "." + name
        }
        switch e.kind {
        case .evaluatedObject: return "SELF"
        case .variable(let name): return "$" + name
        case .attribute(let base, let attribute): return joined(base, attribute.name)
        case .toOne(let base, let relationship), .toMany(let base, let relationship): return joined(base, relationship.name)
        case .key(let base, let key): return joined(base, key)
        case .subquery, .map: return loopName(e)
        default: return "…"
        }
    }

    /// Gives `variable` a new slot while `body` compiles.
    mutating func withSlot<T>(for variable: String, _ body: (inout Self, Int) -> T) -> T {
        let slot = slotCount
        slotCount += 1
        let saved = slots[variable]
        slots[variable] = slot
        defer { slots[variable] = saved }
        return body(&self, slot)
    }

    // MARK: Predicates

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func test(_ predicate: BoundPredicate) -> Test {
        switch predicate {
        case .constant(let value):
            return { _, _ in value }
        case .not(let p):
            let t = test(p)
            return { o, s in !t(o, &s) }
        case .and(let ps):
            return Self.all(ps.map { test($0) }[...])
        case .or(let ps):
            return Self.any(ps.map { test($0) }[...])
        case .comparison(let c):
            return comparison(c)
        case .exists(let collection):
            if case .collection(.object) = collection.type {
                if case .toMany(let base, let relationship) = collection.kind, case .evaluatedObject = base.kind {
                    let (d, r) = (domain, domain.handle(for: relationship))
                    return { o, _ in !d.forEach(r, of: o) { _ in false } }
                }
                let members = objects(collection)
                return { o, s in !members(o, &s).isEmpty }
            }
            let members = values(collection)
            return { o, s in !members(o, &s).isEmpty }
        }
    }

    /// The conjunction of tests, as a balanced tree of two-way closures:
    /// calling a captured closure costs less than iterating an array of them.
    static func all(_ tests: ArraySlice<Test>) -> Test {
        switch tests.count {
        case 0: return { _, _ in true }
        case 1: return tests.first!
        default:
            let middle = tests.startIndex + tests.count / 2
            let (a, b) = (all(tests[..<middle]), all(tests[middle...]))
            return { o, s in a(o, &s) && b(o, &s) }
        }
    }

    /// The disjunction of tests, as `all` builds conjunctions.
    static func any(_ tests: ArraySlice<Test>) -> Test {
        switch tests.count {
        case 0: return { _, _ in false }
        case 1: return tests.first!
        default:
            let middle = tests.startIndex + tests.count / 2
            let (a, b) = (any(tests[..<middle]), any(tests[middle...]))
            return { o, s in a(o, &s) || b(o, &s) }
        }
    }

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func comparison(_ c: BoundComparison) -> Test {
        if c.operator == .matches || c.operator == .like { mayFail = true }
        // `collection CONTAINS x`: membership.
        if c.quantifier == .direct, c.operator == .contains, c.left.type.isCollection {
            let members = values(c.left)
            let item = value(c.right)
            let options = c.options
            return { o, s in
                let x = item(o, &s)
                return members(o, &s).contains { ValueComparison.equal($0, x, options) }
            }
        }
        // `object == nil`, `nil != object`: whether the object is there, which
        // needs no identity from the domain.
        if c.quantifier == .direct, c.operator == .equalTo || c.operator == .notEqualTo {
            let sides = [(c.left, c.right), (c.right, c.left)]
            for (objectSide, other) in sides {
                guard case .object = objectSide.type, case .constant(.null) = other.kind else { continue }
                let target = object(objectSide)
                let wantNil = c.operator == .equalTo
                return { o, s in (target(o, &s) == nil) == wantNil }
            }
        }
        if checksTypesAtRunTime, c.left.type == .any || c.right.type.elementType == .any { return dynamicComparison(c) }
        if let fused = fusedComparison(c) { return fused }
        let check = elementTest(c)
        switch c.quantifier {
        case .direct:
            let left = value(c.left)
            return { o, s in check(left(o, &s), o, &s) }
        case .any:
            let left = values(c.left)
            return { o, s in
                for v in left(o, &s) where check(v, o, &s) { return true }
                return false
            }
        case .all:
            let left = values(c.left)
            return { o, s in
                for v in left(o, &s) where !check(v, o, &s) { return false }
                return true
            }
        case .none:
            let left = values(c.left)
            return { o, s in
                for v in left(o, &s) where check(v, o, &s) { return false }
                return true
            }
        }
    }

    /// A comparison whose operands' types are known only when it runs (bound
    /// without a model). Each pair of values is checked first: a pair the
    /// operator cannot work on (`DynamicTypes.conflict`) stops the evaluation
    /// with `EvaluationError.incompatibleTypes`, as Apple's operators raise.
    /// `CONTAINS` with an array on the left is membership.
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func dynamicComparison(_ c: BoundComparison) -> Test {
        mayFail = true
        let (op, options, quantifier) = (c.operator, c.options, c.quantifier)
        let location: Range<Int>? = switch (locations[c.left], locations[c.right]) {
        case (let l?, let r?): min(l.lowerBound, r.lowerBound)..<max(l.upperBound, r.upperBound)
        case (let l, let r): l ?? r
        }
        var constant = c.right.constantValue
        if case .list(let elements) = c.right.kind, elements.allSatisfy({ $0.constantValue != nil }) {
            constant = .array(elements.compactMap(\.constantValue))
        }
        let prepared = constant.map { PreparedComparison(op, options, right: $0).makeTest() }
        let right: ValueFn = constant.map { k in { _, _ in k } }
            ?? (c.right.type.isCollection ? array(values(c.right)) : value(c.right))
        let check: (PredicateValue, PredicateValue) -> Bool = { v, r in
            if op == .contains, case .array(let members) = v { return members.contains { ValueComparison.equal($0, r, options) } }
            if let (a, b) = DynamicTypes.conflict(op, v, r) {
                EvaluationFailure.record(.incompatibleTypes(operation: op.rawValue, left: a, right: b, location: location))
                return false
            }
            if let prepared { return prepared(v) }
            return PreparedComparison(op, options, right: r).test(v)
        }
        // The commonest shape, `key op constant`, as one closure: the key read
        // straight from the evaluated value.
        if quantifier == .direct, op != .contains, let prepared, let constant, case .key(let base, let key) = c.left.kind,
           case .evaluatedObject = base.kind {
            let (d, keyLocation, handle) = (domain, locations[c.left], domain.handle(forKey: key))
            return { o, _ in
                let v: PredicateValue
                switch d.value(forKey: handle, in: o) {
                case .found(let found): v = found
                case .notKeyed(let type):
                    EvaluationFailure.record(.notKeyValueCoding(key: key, type: type, location: keyLocation))
                    return false
                }
                if let (a, b) = DynamicTypes.conflict(op, v, constant) {
                    EvaluationFailure.record(.incompatibleTypes(operation: op.rawValue, left: a, right: b, location: location))
                    return false
                }
                return prepared(v)
            }
        }
        let left = value(c.left)
        guard quantifier != .direct else { return { o, s in check(left(o, &s), right(o, &s)) } }
        return { o, s in
            let members: [PredicateValue]
            switch left(o, &s) {
            case .array(let values): members = values
            case .null: members = []
            case let other:
                EvaluationFailure.record(.incompatibleTypes(operation: quantifier.rawValue, left: DynamicTypes.name(of: other),
                                                            right: "a collection", location: location))
                return false
            }
            let r = right(o, &s)
            switch quantifier {
            case .any: return members.contains { check($0, r) }
            case .all: return members.allSatisfy { check($0, r) }
            default: return !members.contains { check($0, r) }
            }
        }
    }

    /// The commonest comparisons, as one closure that reads the object and
    /// tests the constant: `attribute op constant`, `toOne.attribute op
    /// constant`, and `ANY toMany.attribute op constant`.
    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func fusedComparison(_ c: BoundComparison) -> Test? {
        guard case .constant(let k) = c.right.kind,
              case .attribute(let base, let attribute) = c.left.mappedAttribute ?? c.left.kind else { return nil }
        let t = PreparedComparison(c.operator, c.options, right: k).makeTest()
        let (d, a) = (domain, domain.handle(for: attribute))
        switch (c.quantifier, base.kind) {
        case (.direct, .evaluatedObject):
            return { o, _ in t(d.value(a, of: o)) }
        case (.direct, .toOne(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let r = domain.handle(for: relationship)
            return { o, _ in t(d.object(r, of: o).map { d.value(a, of: $0) } ?? .null) }
        case (.any, .toMany(let root, let relationship)), (.none, .toMany(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let r = domain.handle(for: relationship)
            let wantAny = c.quantifier == .any
            return { o, _ in d.forEach(r, of: o) { !t(d.value(a, of: $0)) } != wantAny }
        case (.all, .toMany(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let r = domain.handle(for: relationship)
            return { o, _ in d.forEach(r, of: o) { t(d.value(a, of: $0)) } }
        default:
            return nil
        }
    }

    /// The test of one left value against the comparison's right operand.
    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func elementTest(_ c: BoundComparison) -> (PredicateValue, Object, inout Scope) -> Bool {
        // A list of constants is a constant array.
        if case .list(let elements) = c.right.kind, elements.allSatisfy({ $0.constantValue != nil }) {
            let t = PreparedComparison(c.operator, c.options, right: .array(elements.compactMap(\.constantValue))).makeTest()
            return { v, _, _ in t(v) }
        }
        if case .constant(let k) = c.right.kind {
            let t = PreparedComparison(c.operator, c.options, right: k).makeTest()
            return { v, _, _ in t(v) }
        }
        // The right side depends on the object: prepare it per evaluation.
        let right: ValueFn = c.right.type.isCollection ? array(values(c.right)) : value(c.right)
        let (op, options) = (c.operator, c.options)
        return { v, o, s in PreparedComparison(op, options, right: right(o, &s)).test(v) }
    }

    func array(_ f: @escaping ValuesFn) -> ValueFn {
        { o, s in .array(f(o, &s)) }
    }

    // MARK: Objects

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func object(_ e: BoundExpression) -> ObjectFn {
        switch e.kind {
        case .evaluatedObject:
            return { o, _ in o }
        case .variable(let name):
            guard let slot = slots[name] else { return { _, _ in nil } }
            return { _, s in s.slots[slot] }
        case .toOne(let base, let relationship):
            let (d, h) = (domain, domain.handle(for: relationship))
            if case .evaluatedObject = base.kind { return { o, _ in d.object(h, of: o) } }
            let b = object(base)
            return { o, s in b(o, &s).flatMap { d.object(h, of: $0) } }
        case .ternary(let condition, let then, let otherwise):
            let (t, a, b) = (test(condition), object(then), object(otherwise))
            return { o, s in t(o, &s) ? a(o, &s) : b(o, &s) }
        case .key(let base, let key):
            mayFail = true
            let (d, b, location, handle) = (domain, object(base), locations[e], domain.handle(forKey: key))
            return { o, s in
                guard let item = b(o, &s) else { return nil }
                switch d.lookUp(handle, in: item) {
                case .found(let found): return found
                case .notKeyed(let type):
                    EvaluationFailure.record(.notKeyValueCoding(key: key, type: type, location: location))
                    return nil
                }
            }
        default:
            // A value (`items[FIRST]`, a string from TERNARY) as an object of
            // the domain, whose keys are then looked up as any value's are.
            let (d, v) = (domain, value(e))
            return { o, s in d.object(from: v(o, &s)) }
        }
    }

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func objects(_ e: BoundExpression) -> ObjectsFn {
        if e.type == .any, e.isDynamicObject {
            let (d, target) = (domain, object(e))
            return { o, s in target(o, &s).map(d.members(of:)) ?? [] }
        }
        switch e.kind {
        case .toMany(let base, let relationship):
            let (d, h) = (domain, domain.handle(for: relationship))
            if case .evaluatedObject = base.kind { return { o, _ in d.objects(h, of: o) } }
            let b = object(base)
            return { o, s in b(o, &s).map { d.objects(h, of: $0) } ?? [] }
        case .map(let collection, let variable, let each):
            let members = objects(collection)
            let charged = chargesLoops
            if charged { mayFail = true }
            let name = charged ? Self.loopName(e) : ""
            return withSlot(for: variable) { compiler, slot in
                if each.type.isCollection {
                    let inner = compiler.objects(each)
                    return { o, s in
                        var result: [Object] = []
                        let all = members(o, &s)
                        if charged, !EvaluationBudget.chargeLoop(all.count, term: name) { return [] }
                        for m in all {
                            s.slots[slot] = m
                            result += inner(o, &s)
                        }
                        return result
                    }
                }
                let inner = compiler.object(each)
                return { o, s in
                    var result: [Object] = []
                    let all = members(o, &s)
                    if charged, !EvaluationBudget.chargeLoop(all.count, term: name) { return [] }
                    for m in all {
                        s.slots[slot] = m
                        if let x = inner(o, &s) { result.append(x) }
                    }
                    return result
                }
            }
        case .subquery(let collection, let variable, let predicate):
            let members = objects(collection)
            // A loop inside another loop is charged to the fetch's time
            // budget: nested loops cost the product of their collections.
            let charged = chargesLoops
            if charged { mayFail = true }
            let name = charged ? Self.loopName(e) : ""
            return withSlot(for: variable) { compiler, slot in
                let t = compiler.test(predicate)
                if !charged {
                    return { o, s in
                        members(o, &s).filter { m in
                            s.slots[slot] = m
                            return t(o, &s)
                        }
                    }
                }
                return { o, s in
                    let all = members(o, &s)
                    guard EvaluationBudget.chargeLoop(all.count, term: name) else { return [] }
                    return all.filter { m in
                        s.slots[slot] = m
                        return t(o, &s)
                    }
                }
            }
        case .ternary(let condition, let then, let otherwise):
            let (t, a, b) = (test(condition), objects(then), objects(otherwise))
            return { o, s in t(o, &s) ? a(o, &s) : b(o, &s) }
        case .function(let function, let arguments) where [.distinct, .union, .intersect, .minus].contains(function):
            // Set operations on objects work on their references.
            let d = domain
            let parts = arguments.map { objects($0) }
            return { o, s in
                let lists = parts.map { $0(o, &s) }
                return Self.setOperation(function, lists, key: { d.reference(to: $0) })
            }
        default:
            return { _, _ in [] }
        }
    }

    /// UNION, INTERSECT, MINUS and distinct, keeping first occurrences in order.
    static func setOperation<T>(_ function: BuiltinFunction, _ lists: [[T]], key: (T) -> PredicateValue) -> [T] {
        func contains(_ list: [T], _ k: PredicateValue) -> Bool { list.contains { ValueComparison.equal(key($0), k) } }
        func distinct(_ list: [T]) -> [T] {
            var result: [T] = []
            for x in list where !contains(result, key(x)) { result.append(x) }
            return result
        }
        switch function {
        case .distinct: return distinct(lists[0])
        case .union: return distinct(lists[0] + lists[1])
        case .intersect: return distinct(lists[0].filter { contains(lists[1], key($0)) })
        case .minus: return distinct(lists[0].filter { !contains(lists[1], key($0)) })
        default: return lists.first ?? []
        }
    }

    // MARK: Collections of values

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func values(_ e: BoundExpression) -> ValuesFn {
        if e.type == .any && e.isDynamicObject || e.type == .collection(.any) && e.isSubquery {
            // Plain values bound without a model: the members as the domain reads them.
            let (d, members) = (domain, objects(e))
            return { o, s in members(o, &s).map(d.reference(to:)) }
        }
        if case .collection(.object) = e.type {
            let members = objects(e)
            let d = domain
            return { o, s in members(o, &s).map { d.reference(to: $0) } }
        }
        switch e.kind {
        case .map(let collection, let variable, let each):
            let members = objects(collection)
            let charged = chargesLoops
            if charged { mayFail = true }
            let name = charged ? Self.loopName(e) : ""
            return withSlot(for: variable) { compiler, slot in
                if each.type.isCollection {
                    let inner = compiler.values(each)
                    return { o, s in
                        var result: [PredicateValue] = []
                        let all = members(o, &s)
                        if charged, !EvaluationBudget.chargeLoop(all.count, term: name) { return [] }
                        for m in all {
                            s.slots[slot] = m
                            result += inner(o, &s)
                        }
                        return result
                    }
                }
                let inner = compiler.value(each)
                return { o, s in
                    var result: [PredicateValue] = []
                    let all = members(o, &s)
                    if charged, !EvaluationBudget.chargeLoop(all.count, term: name) { return [] }
                    for m in all {
                        s.slots[slot] = m
                        result.append(inner(o, &s))
                    }
                    return result
                }
            }
        case .list(let elements):
            let parts = elements.map { value($0) }
            return { o, s in parts.map { $0(o, &s) } }
        case .function(let function, let arguments) where [.distinct, .union, .intersect, .minus].contains(function):
            let parts = arguments.map { values($0) }
            return { o, s in Self.setOperation(function, parts.map { $0(o, &s) }, key: { $0 }) }
        case .ternary(let condition, let then, let otherwise):
            let (t, a, b) = (test(condition), values(then), values(otherwise))
            return { o, s in t(o, &s) ? a(o, &s) : b(o, &s) }
        default:
            // A constant array, or a value whose type is known only when it
            // is evaluated.
            let v = value(e)
            return { o, s in
                switch v(o, &s) {
                case .array(let members): return members
                case .null: return []
                case let other: return [other]
                }
            }
        }
    }

    // MARK: Values

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func value(_ e: BoundExpression) -> ValueFn {
        if e.type == .any, e.isDynamicObject {
            let (d, target) = (domain, object(e))
            return { o, s in target(o, &s).map(d.reference(to:)) ?? .null }
        }
        if case .object = e.type, !isConstant(e) {
            let target = object(e)
            let d = domain
            return { o, s in target(o, &s).map { d.reference(to: $0) } ?? .null }
        }
        if e.type.isCollection, !isConstant(e) {
            return array(values(e))
        }
        switch e.kind {
        case .constant(let v):
            return { _, _ in v }
        case .evaluatedObject, .variable, .toOne, .toMany, .map, .subquery, .list, .key:
            return { _, _ in .null }
        case .attribute(let base, let attribute):
            let (d, h) = (domain, domain.handle(for: attribute))
            if case .evaluatedObject = base.kind { return { o, _ in d.value(h, of: o) } }
            let b = object(base)
            return { o, s in b(o, &s).map { d.value(h, of: $0) } ?? .null }
        case .aggregate(let op, let collection):
            if op == .count {
                if case .collection(.object) = collection.type {
                    let members = objects(collection)
                    return { o, s in .int(Int64(members(o, &s).count)) }
                }
                let members = values(collection)
                return { o, s in .int(Int64(members(o, &s).count)) }
            }
            let members = values(collection)
            let integer = e.type == .integer
            return { o, s in Aggregates.apply(op, members(o, &s), integer: integer) }
        case .arithmetic(let op, let l, let r):
            let (a, b) = (value(l), value(r))
            return { o, s in Arithmetic.apply(op, a(o, &s), b(o, &s)) }
        case .negate(let operand):
            let a = value(operand)
            return { o, s in Arithmetic.apply(.subtract, .int(0), a(o, &s)) }
        case .function(let function, let arguments):
            return self.function(function, arguments, type: e.type)
        case .ternary(let condition, let then, let otherwise):
            let (t, a, b) = (test(condition), value(then), value(otherwise))
            return { o, s in t(o, &s) ? a(o, &s) : b(o, &s) }
        case .index(let base, let position):
            let (b, p) = (value(base), value(position))
            return { o, s in Aggregates.index(b(o, &s), p(o, &s)) }
        case .size(let base):
            let b = values(base)
            return { o, s in .int(Int64(b(o, &s).count)) }
        case .custom(let function, let arguments):
            let parts = arguments.map { value($0) }
            let body = function.body
            return { o, s in body(parts.map { $0(o, &s) }) }
        case .parameter(let name):
            return { _, s in s.parameters[name] ?? .null }
        }
    }

    func isConstant(_ e: BoundExpression) -> Bool {
        if case .constant = e.kind { return true }
        return false
    }

    @_specialize(where Domain == RowNodeDomain)
    @_specialize(where Domain == DynamicDomain)
    @_specialize(where Domain == ValueTreeDomain)
    @_specialize(where Domain == ColumnDomain)
    mutating func function(_ function: BuiltinFunction, _ arguments: [BoundExpression], type: ValueType) -> ValueFn {
        switch function {
        case .sum, .count, .min, .max, .average, .median, .mode, .stddev:
            let members = values(arguments[0])
            let integer = type == .integer
            return { o, s in Aggregates.function(function, members(o, &s), integer: integer) }
        case .distinct, .union, .intersect, .minus:
            let members = values(BoundExpression(.function(function, arguments), type: type))
            return { o, s in .array(members(o, &s)) }
        case .random:
            return { _, _ in .double(Double.random(in: 0..<1)) }
        case .now:
            return { _, _ in .date(Date()) }
        default:
            let parts = arguments.map { value($0) }
            return { o, s in Functions.apply(function, parts.map { $0(o, &s) }) }
        }
    }
}

extension BoundExpression {
    /// Whether the expression is SELF, a variable or a key looked up when
    /// the predicate runs: an object of the domain (bound without a model).
    var isDynamicObject: Bool {
        switch kind {
        case .evaluatedObject, .variable, .key: true
        default: false
        }
    }

    /// Whether the expression is a SUBQUERY.
    var isSubquery: Bool {
        if case .subquery = kind { return true }
        return false
    }

    /// For `collection.attribute` bound as `map(collection, $v, $v.attribute)`:
    /// the attribute read from the collection itself, so the fused
    /// comparisons can see `toMany.attribute` as one shape. Nil otherwise.
    var mappedAttribute: BoundExpression.Kind? {
        guard case .map(let collection, let variable, let each) = kind,
              case .attribute(let member, let attribute) = each.kind,
              case .variable(variable) = member.kind else { return nil }
        return .attribute(collection, attribute)
    }
}

extension BoundExpression {
    /// The value of a constant expression.
    var constantValue: PredicateValue? {
        if case .constant(let v) = kind { return v }
        return nil
    }
}
