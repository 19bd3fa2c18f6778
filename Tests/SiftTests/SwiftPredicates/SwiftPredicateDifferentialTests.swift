// Issue 50: Swift's own predicates, differentially against Foundation itself.
//
// Random expression trees are built directly from Foundation's public
// `PredicateExpressions` initializers (no macro) over a plain `Codable`
// record, wrapped in `Predicate<DiffRow>`, and each is answered three ways
// over the same fixed rows:
//
// - Foundation: `try predicate.evaluate(row)`;
// - Sift in memory: `try FormatPredicate(predicate).evaluate(with: row)`;
// - Sift on SQLite: `context.fetch(DiffRow.self, entityName:where:)` from an
//   in-memory SQLite store holding the same rows.
//
// 600 predicates over 40 rows, each tree of height at most 4 (a leaf has
// height 0), made of `Value`, `NilLiteral`, `KeyPath`, `Conjunction`,
// `Disjunction`, `Negation`, `Equal`, `NotEqual`, `Comparison`, `Arithmetic`,
// `IntDivision`, `FloatDivision`, `IntRemainder`, `UnaryMinus`, `Conditional`,
// `NilCoalesce`, `ForcedUnwrap`, `OptionalFlatMap` (both initializers: a
// transform of a plain or of an optional type), `SequenceStartsWith`,
// `CollectionContainsCollection`, `ClosedRange`, `Range`,
// `RangeExpressionContains` (of built and of captured ranges) and
// `SequenceContains` (of captured arrays), over Bool, Int, Double, String and
// Date and their optionals. About 17,800 row answers are compared with
// Foundation's in a run of a few seconds. (It found two conversion bugs:
// `flatMap` whose transform reads a key path of the input, or is itself an
// optional condition, ignored the wrapped value's nil; and `starts(with: "")`
// and `contains("")`, true in Swift, became BEGINSWITH and CONTAINS, which
// never match an empty pattern.)
//
// The law, per predicate and row:
//
// 1. Every generated tree converts (the generator writes only well-typed
//    trees of expression types Sift converts and Linux's Foundation has).
// 2. Where Swift defines an answer, all three give it.
// 3. Where Swift defines none, Sift still does, the same in memory and on
//    SQLite (or both stop with a typed error: memory's `PredicateEvaluationError`,
//    the store's `StoreError`; no tree here makes either throw today). Swift
//    defines no answer where
//    - Foundation throws: a forced unwrap of nil (`ForcedUnwrap` throws
//      `PredicateError.forceUnwrapFailure`, it does not trap) and a half-open
//      range whose lower bound is above its upper (`PredicateExpressions.Range`
//      throws `.invalidInput`); the test asks Foundation and expects the throw;
//    - Swift traps: integer overflow in `+ - *` and unary minus, integer `/`
//      or `%` by zero (or `Int.min / -1`, `Int.min % -1`), a closed range
//      `lower...upper` with lower above upper. These are predicted ahead by
//      `DiffMirror`, an interpreter of the same trees with Swift's semantics
//      and Foundation's evaluation order (short circuits included), and
//      Foundation is not asked (it would crash the process). Sift's answer
//      there is the format language's: an integer overflow becomes a double,
//      division by zero nil, a forced unwrap of nil compares nil, an empty
//      range contains nothing.
// 4. Where Swift's answer rests on a floating-point value the format language
//    does not have, Sift's answer is its own (memory and SQLite still agree):
//    a `Double` division by zero (Swift: ±infinity or NaN; Sift: nil, as
//    SQLite divides) and any NaN (Sift has none: NaN is nil, as SQLite stores
//    it). The mirror flags these rows; Foundation is asked and must agree
//    with the mirror, and the rows are counted, not compared with Sift.
//
// Restrictions on the generator, each a known and intended difference
// between Swift's and Cocoa's semantics, or a gap in Linux's Foundation:
//
// - Strings are all in NFC and every Character is one Unicode scalar. Swift
//   compares strings by canonical equivalence and walks them by grapheme
//   cluster; the format language (and SQLite's BINARY) compares Unicode
//   scalars (`PredicateValue.==`), so "é" == "e\u{301}" is true only in Swift.
// - No `caseInsensitiveCompare(_:)`, `localizedStandardContains(_:)` or
//   `localizedCompare(_:)`: Foundation has their expressions only on Apple's
//   platforms (`#if FOUNDATION_FRAMEWORK`).
// - No collections in the record (an attribute holds one value) and no
//   captured `Character` (predicate values have no character type).
//
// The rows are fixed; the trees come from a seeded SplitMix64, so a failure
// names its seed and case (run another seed with SIFT_DIFFERENTIAL_SEED=<n>).

import Foundation
import Sift
import SiftStore
import Testing

fileprivate typealias PE = PredicateExpressions
fileprivate typealias Expr<T> = any StandardPredicateExpression<T>

// MARK: The record and its rows

/// The plain record every tree reads: one field of each type a store holds, optional and not.
fileprivate struct DiffRow: Codable, Sendable, Equatable {
    var id: Int
    var rank: Int
    var score: Int?
    var weight: Double
    var ratio: Double?
    var title: String
    var name: String?
    var nickname: String?
    var active: Bool
    var flag: Bool?
    var when: Date?
}

/// The values trees and rows are made of: small numbers with the 64-bit and floating-point edges, strings of
/// mixed case, empty, unicode (NFC, one scalar per character) and the format language's special characters.
fileprivate enum DiffPools {
    static let ints = [0, 1, -1, 2, 3, 5, -5, 7, 10, 42, -42, 100]
    static let extremeInts = [Int.max, Int.min, Int.max - 1, Int.min + 1, 1 << 62, -(1 << 62)]
    static let doubles = [0.0, -0.0, 0.5, -0.5, 1.5, 2.0, -2.5, 3.25, 10.0, 100.0, 0.1, 0.2, 0.3]
    static let extremeDoubles = [1e300, -1e300, 1e-300, Double.greatestFiniteMagnitude, 9_007_199_254_740_993.0]
    static let strings = ["", "a", "A", "ab", "aB", "Ab", "abc", "ABC", "b", "ba", "z", "Zoë", "zoë", "straße",
                          "STRASSE", "naïve", "日本", "日本語", "😀", "Ａ", "a b", " ", "%", "_", "*", "?", "\\",
                          "O'Brien", "0", "10", "9"]
    static let dates = [0.0, 1e9, -1e9, 5e8, 5e8 + 0.5].map(Date.init(timeIntervalSinceReferenceDate:))
}

fileprivate enum DiffRows {
    /// The rows: three written by hand (all nils and zeros; the 64-bit and floating-point edges; negatives and
    /// case), the rest drawn from the pools with a fixed seed, about a quarter of each optional field nil.
    static let all: [DiffRow] = {
        var rows = [
            DiffRow(id: 1, rank: 0, score: nil, weight: 0, ratio: nil, title: "", name: nil, nickname: nil,
                    active: false, flag: nil, when: nil),
            DiffRow(id: 2, rank: .max, score: .min, weight: 1e300, ratio: -1e300, title: "日本語", name: "",
                    nickname: "", active: true, flag: true, when: DiffPools.dates[0]),
            DiffRow(id: 3, rank: -1, score: -42, weight: -0.0, ratio: -2.5, title: "ABC", name: "abc", nickname: "ABC",
                    active: true, flag: false, when: DiffPools.dates[2]),
        ]
        var g = DiffRandom(seed: 50)
        for id in 4...40 {
            rows.append(DiffRow(
                id: id, rank: g.intValue(), score: g.chance(25) ? nil : g.intValue(), weight: g.doubleValue(),
                ratio: g.chance(25) ? nil : g.doubleValue(), title: g.pick(DiffPools.strings),
                name: g.chance(25) ? nil : g.pick(DiffPools.strings),
                nickname: g.chance(30) ? nil : g.pick(DiffPools.strings), active: g.chance(50),
                flag: g.chance(30) ? nil : g.chance(50), when: g.chance(30) ? nil : g.pick(DiffPools.dates)))
        }
        return rows
    }()
}

/// A small, repeatable generator (SplitMix64) and the draws the test makes from it.
fileprivate struct DiffRandom {
    var state: UInt64
    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    mutating func int(_ n: Int) -> Int { Int(next() % UInt64(n)) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }
    mutating func pick<T>(_ values: [T]) -> T { values[int(values.count)] }
    mutating func intValue() -> Int { chance(8) ? pick(DiffPools.extremeInts) : pick(DiffPools.ints) }
    mutating func doubleValue() -> Double { chance(8) ? pick(DiffPools.extremeDoubles) : pick(DiffPools.doubles) }
}

// MARK: Trees

/// The Swift type of an expression.
fileprivate enum DiffType: CaseIterable, Hashable {
    case bool, optBool, int, optInt, double, optDouble, string, optString, date, optDate

    var isOptional: Bool { [.optBool, .optInt, .optDouble, .optString, .optDate].contains(self) }

    /// The type without its optional.
    var wrapped: DiffType {
        switch self {
        case .optBool: .bool
        case .optInt: .int
        case .optDouble: .double
        case .optString: .string
        case .optDate: .date
        default: self
        }
    }

    /// The type made optional (an optional type itself).
    var optional: DiffType {
        switch self {
        case .bool: .optBool
        case .int: .optInt
        case .double: .optDouble
        case .string: .optString
        case .date: .optDate
        default: self
        }
    }

    static let comparable: [DiffType] = [.int, .double, .string, .date]

    /// The Swift type.
    var swiftType: any (Equatable & Codable & Sendable).Type {
        switch self {
        case .bool: Bool.self
        case .optBool: Bool?.self
        case .int: Int.self
        case .optInt: Int?.self
        case .double: Double.self
        case .optDouble: Double?.self
        case .string: String.self
        case .optString: String?.self
        case .date: Date.self
        case .optDate: Date?.self
        }
    }

    /// The Swift type, for a comparable one.
    var comparableType: any (Comparable & Codable & Sendable).Type {
        switch self {
        case .int: Int.self
        case .double: Double.self
        case .string: String.self
        case .date: Date.self
        default: fatalError("\(self) is not comparable")
        }
    }
}

/// A value of a tree or a row, as Swift sees it (`none` is an optional's nil).
fileprivate enum DiffValue: Equatable, CustomStringConvertible {
    case none, bool(Bool), int(Int), double(Double), string(String), date(Date)

    var bool: Bool? { if case .bool(let b) = self { b } else { nil } }

    /// The value as a Swift value of `T` (an optional `T` for nil or a wrapped value).
    func swift<T>(as _: T.Type) -> T {
        let value: Any
        switch self {
        case .none:
            guard let nilType = T.self as? any ExpressibleByNilLiteral.Type else { fatalError("nil is not a \(T.self)") }
            value = nilType.init(nilLiteral: ())
        case .bool(let b): value = b
        case .int(let i): value = i
        case .double(let d): value = d
        case .string(let s): value = s
        case .date(let d): value = d
        }
        guard let typed = value as? T else { fatalError("\(self) is not a \(T.self)") }
        return typed
    }

    /// The value as Swift source.
    var description: String {
        switch self {
        case .none: "nil"
        case .bool(let b): "\(b)"
        case .int(let i): i == .max ? "Int.max" : i == .min ? "Int.min" : "\(i)"
        case .double(let d): d == .greatestFiniteMagnitude ? ".greatestFiniteMagnitude" : "\(d)"
        case .string(let s): String(reflecting: s)
        case .date(let d): "Date(timeIntervalSinceReferenceDate: \(d.timeIntervalSinceReferenceDate))"
        }
    }
}

/// A field of the record.
fileprivate enum DiffField: String, CaseIterable {
    case id, rank, score, weight, ratio, title, name, nickname, active, flag, when

    var type: DiffType {
        switch self {
        case .id, .rank: .int
        case .score: .optInt
        case .weight: .double
        case .ratio: .optDouble
        case .title: .string
        case .name, .nickname: .optString
        case .active: .bool
        case .flag: .optBool
        case .when: .optDate
        }
    }

    func value(of row: DiffRow) -> DiffValue {
        func optional<T>(_ value: T?, _ make: (T) -> DiffValue) -> DiffValue { value.map(make) ?? .none }
        switch self {
        case .id: return .int(row.id)
        case .rank: return .int(row.rank)
        case .score: return optional(row.score, DiffValue.int)
        case .weight: return .double(row.weight)
        case .ratio: return optional(row.ratio, DiffValue.double)
        case .title: return .string(row.title)
        case .name: return optional(row.name, DiffValue.string)
        case .nickname: return optional(row.nickname, DiffValue.string)
        case .active: return .bool(row.active)
        case .flag: return optional(row.flag, DiffValue.bool)
        case .when: return optional(row.when, DiffValue.date)
        }
    }

    /// `PredicateExpressions.KeyPath` reading the field from `root`.
    func expression(_ root: PE.Variable<DiffRow>) -> any StandardPredicateExpression {
        switch self {
        case .id: PE.KeyPath(root: root, keyPath: \DiffRow.id)
        case .rank: PE.KeyPath(root: root, keyPath: \DiffRow.rank)
        case .score: PE.KeyPath(root: root, keyPath: \DiffRow.score)
        case .weight: PE.KeyPath(root: root, keyPath: \DiffRow.weight)
        case .ratio: PE.KeyPath(root: root, keyPath: \DiffRow.ratio)
        case .title: PE.KeyPath(root: root, keyPath: \DiffRow.title)
        case .name: PE.KeyPath(root: root, keyPath: \DiffRow.name)
        case .nickname: PE.KeyPath(root: root, keyPath: \DiffRow.nickname)
        case .active: PE.KeyPath(root: root, keyPath: \DiffRow.active)
        case .flag: PE.KeyPath(root: root, keyPath: \DiffRow.flag)
        case .when: PE.KeyPath(root: root, keyPath: \DiffRow.when)
        }
    }
}

/// A well-typed expression tree, one case per `PredicateExpressions` type the test builds.
fileprivate indirect enum DiffNode: CustomStringConvertible {
    /// `Value(v)` of the type.
    case value(DiffValue, DiffType)
    /// `NilLiteral<Wrapped>()`, of an optional type.
    case nilLiteral(DiffType)
    /// `KeyPath(root: row, keyPath: \DiffRow.field)`.
    case key(DiffField)
    /// The innermost `OptionalFlatMap`'s variable: its wrapped value.
    case it(DiffType)
    case and(DiffNode, DiffNode), or(DiffNode, DiffNode), not(DiffNode)
    case equal(DiffNode, DiffNode), notEqual(DiffNode, DiffNode)
    case compare(DiffNode, PE.ComparisonOperator, DiffNode)
    case arithmetic(DiffNode, PE.ArithmeticOperator, DiffNode)
    /// `IntDivision` or `FloatDivision`.
    case divide(DiffNode, DiffNode)
    /// `IntRemainder`.
    case remainder(DiffNode, DiffNode)
    /// `UnaryMinus`.
    case negate(DiffNode)
    case conditional(DiffNode, DiffNode, DiffNode)
    /// `NilCoalesce`.
    case coalesce(DiffNode, DiffNode)
    /// `ForcedUnwrap`.
    case unwrap(DiffNode)
    /// `OptionalFlatMap`: the wrapped optional, and the transform of its value (`.it`).
    case flatMap(DiffNode, DiffNode)
    /// `SequenceStartsWith`, on strings.
    case startsWith(DiffNode, DiffNode)
    /// `CollectionContainsCollection`, on strings.
    case contains(DiffNode, DiffNode)
    /// `RangeExpressionContains` of a `ClosedRange` or `Range` built of two expressions: element, lower, upper.
    case inRange(DiffNode, DiffNode, DiffNode, closed: Bool)
    /// `RangeExpressionContains` of a captured `ClosedRange` or `Range` value.
    case inCapturedRange(DiffNode, DiffValue, DiffValue, closed: Bool)
    /// `SequenceContains` of a captured array.
    case inArray(DiffNode, [DiffValue])

    var type: DiffType {
        switch self {
        case .value(_, let t), .nilLiteral(let t), .it(let t): t
        case .key(let field): field.type
        case .and, .or, .not, .equal, .notEqual, .compare, .startsWith, .contains, .inRange, .inCapturedRange, .inArray:
            .bool
        case .arithmetic(let l, _, _), .divide(let l, _), .remainder(let l, _), .negate(let l): l.type
        case .conditional(_, let a, _): a.type
        case .coalesce(_, let r): r.type
        case .unwrap(let inner): inner.type.wrapped
        case .flatMap(_, let transform): transform.type.optional
        }
    }

    /// The tree as Swift source (`it` is the innermost `flatMap`'s value).
    var description: String {
        switch self {
        case .value(let v, let t): t.isOptional && v != .none ? "Optional(\(v))" : "\(v)"
        case .nilLiteral: "nil"
        case .key(let field): "$0.\(field.rawValue)"
        case .it: "it"
        case .and(let l, let r): "(\(l) && \(r))"
        case .or(let l, let r): "(\(l) || \(r))"
        case .not(let w): "!\(w)"
        case .equal(let l, let r): "(\(l) == \(r))"
        case .notEqual(let l, let r): "(\(l) != \(r))"
        case .compare(let l, let op, let r):
            "(\(l) \(op == .lessThan ? "<" : op == .lessThanOrEqual ? "<=" : op == .greaterThan ? ">" : ">=") \(r))"
        case .arithmetic(let l, let op, let r): "(\(l) \(op == .add ? "+" : op == .subtract ? "-" : "*") \(r))"
        case .divide(let l, let r): "(\(l) / \(r))"
        case .remainder(let l, let r): "(\(l) % \(r))"
        case .negate(let w): "-\(w)"
        case .conditional(let t, let a, let b): "(\(t) ? \(a) : \(b))"
        case .coalesce(let l, let r): "(\(l) ?? \(r))"
        case .unwrap(let inner): "\(inner)!"
        case .flatMap(let w, let t): "\(w).flatMap { it in \(t) }"
        case .startsWith(let b, let p): "\(b).starts(with: \(p))"
        case .contains(let b, let o): "\(b).contains(\(o))"
        case .inRange(let e, let l, let u, let closed): "(\(l)\(closed ? "..." : "..<")\(u)).contains(\(e))"
        case .inCapturedRange(let e, let l, let u, let closed): "(\(l)\(closed ? "..." : "..<")\(u)).contains(\(e))"
        case .inArray(let e, let members): "\(members).contains(\(e))"
        }
    }
}

// MARK: Building trees with Foundation's initializers

/// Builds a tree's `PredicateExpressions` value. Operands are built as existentials of their output type and
/// opened by the generic helpers below, so each node is Foundation's own generic type over its operands' types:
/// the predicate's expression is the same concrete type `#Predicate` would build.
fileprivate struct DiffBuilder {
    let row: PE.Variable<DiffRow>
    /// The variables of the enclosing `OptionalFlatMap`s, innermost last.
    var bound: [any StandardPredicateExpression] = []

    func build<T>(_ node: DiffNode, as _: T.Type) -> Expr<T> {
        let built = expression(node)
        guard let typed = built as? Expr<T> else { fatalError("\(node) built \(type(of: built)), not one of \(T.self)") }
        return typed
    }

    func expression(_ node: DiffNode) -> any StandardPredicateExpression {
        switch node {
        case .value(let v, let t): return value(t.swiftType, v)
        case .nilLiteral(let t):
            switch t.wrapped {
            case .bool: return PE.NilLiteral<Bool>()
            case .int: return PE.NilLiteral<Int>()
            case .double: return PE.NilLiteral<Double>()
            case .string: return PE.NilLiteral<String>()
            default: return PE.NilLiteral<Date>()
            }
        case .key(let field): return field.expression(row)
        case .it: return bound.last!
        case .and(let l, let r): return Self.and(build(l, as: Bool.self), build(r, as: Bool.self))
        case .or(let l, let r): return Self.or(build(l, as: Bool.self), build(r, as: Bool.self))
        case .not(let w): return Self.not(build(w, as: Bool.self))
        case .equal(let l, let r): return equal(l.type.swiftType, l, r, negated: false)
        case .notEqual(let l, let r): return equal(l.type.swiftType, l, r, negated: true)
        case .compare(let l, let op, let r): return compare(l.type.comparableType, l, op, r)
        case .arithmetic(let l, let op, let r):
            return l.type == .int ? arithmetic(Int.self, l, op, r) : arithmetic(Double.self, l, op, r)
        case .divide(let l, let r):
            return l.type == .int ? Self.intDivide(build(l, as: Int.self), build(r, as: Int.self))
                : Self.floatDivide(build(l, as: Double.self), build(r, as: Double.self))
        case .remainder(let l, let r): return Self.remainder(build(l, as: Int.self), build(r, as: Int.self))
        case .negate(let w): return w.type == .int ? negate(Int.self, w) : negate(Double.self, w)
        case .conditional(let t, let a, let b): return conditional(a.type.swiftType, t, a, b)
        case .coalesce(let l, let r): return coalesce(r.type.swiftType, l, r)
        case .unwrap(let inner): return unwrap(node.type.swiftType, inner)
        case .flatMap(let w, let t):
            return t.type.isOptional ? flatMapOptional(w.type.wrapped.swiftType, t.type.wrapped.swiftType, w, t)
                : flatMap(w.type.wrapped.swiftType, t.type.swiftType, w, t)
        case .startsWith(let b, let p): return Self.startsWith(build(b, as: String.self), build(p, as: String.self))
        case .contains(let b, let o): return Self.contains(build(b, as: String.self), build(o, as: String.self))
        case .inRange(let e, let l, let u, let closed): return inRange(e.type.comparableType, e, l, u, closed: closed)
        case .inCapturedRange(let e, let l, let u, let closed):
            return inCapturedRange(e.type.comparableType, e, l, u, closed: closed)
        case .inArray(let e, let members): return inArray(e.type.swiftType, e, members)
        }
    }

    // Helpers that give a type to an operand's existential, and open it.

    private func value<T: Equatable & Codable & Sendable>(_: T.Type, _ v: DiffValue) -> any StandardPredicateExpression {
        PE.Value(v.swift(as: T.self))
    }

    private static func and<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ l: L, _ r: R)
        -> any StandardPredicateExpression
    {
        PE.Conjunction(lhs: l, rhs: r)
    }

    private static func or<L: StandardPredicateExpression<Bool>, R: StandardPredicateExpression<Bool>>(_ l: L, _ r: R)
        -> any StandardPredicateExpression
    {
        PE.Disjunction(lhs: l, rhs: r)
    }

    private static func not<W: StandardPredicateExpression<Bool>>(_ w: W) -> any StandardPredicateExpression {
        PE.Negation(w)
    }

    private func equal<T: Equatable & Codable & Sendable>(_: T.Type, _ l: DiffNode, _ r: DiffNode, negated: Bool)
        -> any StandardPredicateExpression
    {
        Self.equal(build(l, as: T.self), build(r, as: T.self), negated: negated)
    }

    private static func equal<T: Equatable, L: StandardPredicateExpression<T>, R: StandardPredicateExpression<T>>(
        _ l: L, _ r: R, negated: Bool) -> any StandardPredicateExpression
    {
        if negated { return PE.NotEqual(lhs: l, rhs: r) }
        return PE.Equal(lhs: l, rhs: r)
    }

    private func compare<T: Comparable & Codable & Sendable>(_: T.Type, _ l: DiffNode, _ op: PE.ComparisonOperator,
                                                             _ r: DiffNode) -> any StandardPredicateExpression
    {
        Self.compare(build(l, as: T.self), op, build(r, as: T.self))
    }

    private static func compare<T: Comparable, L: StandardPredicateExpression<T>, R: StandardPredicateExpression<T>>(
        _ l: L, _ op: PE.ComparisonOperator, _ r: R) -> any StandardPredicateExpression
    {
        PE.Comparison(lhs: l, rhs: r, op: op)
    }

    private func arithmetic<T: Numeric & Codable & Sendable>(_: T.Type, _ l: DiffNode, _ op: PE.ArithmeticOperator,
                                                             _ r: DiffNode) -> any StandardPredicateExpression
    {
        Self.arithmetic(build(l, as: T.self), op, build(r, as: T.self))
    }

    private static func arithmetic<T: Numeric, L: StandardPredicateExpression<T>, R: StandardPredicateExpression<T>>(
        _ l: L, _ op: PE.ArithmeticOperator, _ r: R) -> any StandardPredicateExpression
    {
        PE.Arithmetic(lhs: l, rhs: r, op: op)
    }

    private static func intDivide<L: StandardPredicateExpression<Int>, R: StandardPredicateExpression<Int>>(_ l: L, _ r: R)
        -> any StandardPredicateExpression
    {
        PE.IntDivision(lhs: l, rhs: r)
    }

    private static func floatDivide<L: StandardPredicateExpression<Double>, R: StandardPredicateExpression<Double>>(
        _ l: L, _ r: R) -> any StandardPredicateExpression
    {
        PE.FloatDivision(lhs: l, rhs: r)
    }

    private static func remainder<L: StandardPredicateExpression<Int>, R: StandardPredicateExpression<Int>>(_ l: L, _ r: R)
        -> any StandardPredicateExpression
    {
        PE.IntRemainder(lhs: l, rhs: r)
    }

    private func negate<T: SignedNumeric & Codable & Sendable>(_: T.Type, _ w: DiffNode) -> any StandardPredicateExpression {
        Self.negate(build(w, as: T.self))
    }

    private static func negate<T: SignedNumeric, W: StandardPredicateExpression<T>>(_ w: W) -> any StandardPredicateExpression {
        PE.UnaryMinus(w)
    }

    private func conditional<T: Equatable & Codable & Sendable>(_: T.Type, _ t: DiffNode, _ a: DiffNode, _ b: DiffNode)
        -> any StandardPredicateExpression
    {
        Self.conditional(build(t, as: Bool.self), build(a, as: T.self), build(b, as: T.self))
    }

    private static func conditional<T, C: StandardPredicateExpression<Bool>, A: StandardPredicateExpression<T>,
                                    B: StandardPredicateExpression<T>>(_ t: C, _ a: A, _ b: B)
        -> any StandardPredicateExpression
    {
        PE.Conditional(test: t, trueBranch: a, falseBranch: b)
    }

    private func coalesce<T: Equatable & Codable & Sendable>(_: T.Type, _ l: DiffNode, _ r: DiffNode)
        -> any StandardPredicateExpression
    {
        Self.coalesce(build(l, as: T?.self), build(r, as: T.self))
    }

    private static func coalesce<T, L: StandardPredicateExpression<T?>, R: StandardPredicateExpression<T>>(_ l: L, _ r: R)
        -> any StandardPredicateExpression
    {
        PE.NilCoalesce(lhs: l, rhs: r)
    }

    private func unwrap<T: Equatable & Codable & Sendable>(_: T.Type, _ inner: DiffNode) -> any StandardPredicateExpression {
        Self.unwrap(build(inner, as: T?.self))
    }

    private static func unwrap<T, I: StandardPredicateExpression<T?>>(_ inner: I) -> any StandardPredicateExpression {
        PE.ForcedUnwrap<I, T>(inner)
    }

    /// The transform of an `OptionalFlatMap`: `body` built with the map's variable as `.it`.
    private func transform<W, U>(_ body: DiffNode, _: W.Type, _: U.Type) -> (PE.Variable<W>) -> Expr<U> {
        { variable in
            var inner = self
            inner.bound.append(variable)
            return inner.build(body, as: U.self)
        }
    }

    /// `wrapped.flatMap { body }` for a body of a non-optional type `U`: an `OptionalFlatMap` of output `U?`.
    private func flatMap<W: Equatable & Codable & Sendable, U: Equatable & Codable & Sendable>(
        _: W.Type, _: U.Type, _ wrapped: DiffNode, _ body: DiffNode) -> any StandardPredicateExpression
    {
        Self.flatMap(build(wrapped, as: W?.self), transform(body, W.self, U.self))
    }

    private static func flatMap<W, U, L: StandardPredicateExpression<W?>>(_ wrapped: L,
                                                                       _ transform: @escaping (PE.Variable<W>) -> Expr<U>)
        -> any StandardPredicateExpression
    {
        // `OptionalFlatMap` makes its variable and calls the builder once, which must return one concrete type:
        // build the body once with a variable of ours to learn its type, then again inside, as that type (the
        // same node builds the same type).
        func make<R: StandardPredicateExpression<U>>(_: R) -> any StandardPredicateExpression {
            let map: PE.OptionalFlatMap<L, W, R, U> = PE.OptionalFlatMap(wrapped) { transform($0) as! R }
            return map
        }
        return make(transform(PE.Variable<W>()))
    }

    /// `wrapped.flatMap { body }` for a body of an optional type `U?`: an `OptionalFlatMap` of output `U?`.
    private func flatMapOptional<W: Equatable & Codable & Sendable, U: Equatable & Codable & Sendable>(
        _: W.Type, _: U.Type, _ wrapped: DiffNode, _ body: DiffNode) -> any StandardPredicateExpression
    {
        Self.flatMapOptional(build(wrapped, as: W?.self), transform(body, W.self, U?.self))
    }

    private static func flatMapOptional<W, U, L: StandardPredicateExpression<W?>>(
        _ wrapped: L, _ transform: @escaping (PE.Variable<W>) -> Expr<U?>) -> any StandardPredicateExpression
    {
        func make<R: StandardPredicateExpression<U?>>(_: R) -> any StandardPredicateExpression {
            let map: PE.OptionalFlatMap<L, W, R, U> = PE.OptionalFlatMap(wrapped) { transform($0) as! R }
            return map
        }
        return make(transform(PE.Variable<W>()))
    }

    private static func startsWith<B: StandardPredicateExpression<String>, P: StandardPredicateExpression<String>>(
        _ base: B, _ prefix: P) -> any StandardPredicateExpression
    {
        PE.SequenceStartsWith(base: base, prefix: prefix)
    }

    private static func contains<B: StandardPredicateExpression<String>, O: StandardPredicateExpression<String>>(
        _ base: B, _ other: O) -> any StandardPredicateExpression
    {
        PE.CollectionContainsCollection(base: base, other: other)
    }

    private func inRange<T: Comparable & Codable & Sendable>(_: T.Type, _ e: DiffNode, _ l: DiffNode, _ u: DiffNode,
                                                             closed: Bool) -> any StandardPredicateExpression
    {
        Self.inRange(build(e, as: T.self), build(l, as: T.self), build(u, as: T.self), closed: closed)
    }

    private static func inRange<T: Comparable, E: StandardPredicateExpression<T>, L: StandardPredicateExpression<T>,
                                U: StandardPredicateExpression<T>>(_ e: E, _ l: L, _ u: U, closed: Bool)
        -> any StandardPredicateExpression
    {
        if closed { return PE.RangeExpressionContains(range: PE.ClosedRange(lower: l, upper: u), element: e) }
        return PE.RangeExpressionContains(range: PE.Range(lower: l, upper: u), element: e)
    }

    private func inCapturedRange<T: Comparable & Codable & Sendable>(_: T.Type, _ e: DiffNode, _ l: DiffValue,
                                                                     _ u: DiffValue, closed: Bool)
        -> any StandardPredicateExpression
    {
        Self.inCapturedRange(build(e, as: T.self), l.swift(as: T.self), u.swift(as: T.self), closed: closed)
    }

    private static func inCapturedRange<T: Comparable & Codable & Sendable, E: StandardPredicateExpression<T>>(
        _ e: E, _ l: T, _ u: T, closed: Bool) -> any StandardPredicateExpression
    {
        if closed { return PE.RangeExpressionContains(range: PE.Value(l...u), element: e) }
        return PE.RangeExpressionContains(range: PE.Value(l..<u), element: e)
    }

    private func inArray<T: Equatable & Codable & Sendable>(_: T.Type, _ e: DiffNode, _ members: [DiffValue])
        -> any StandardPredicateExpression
    {
        Self.inArray(build(e, as: T.self), members.map { $0.swift(as: T.self) })
    }

    private static func inArray<T: Equatable & Codable & Sendable, E: StandardPredicateExpression<T>>(_ e: E, _ members: [T])
        -> any StandardPredicateExpression
    {
        PE.SequenceContains(sequence: PE.Value(members), element: e)
    }
}

// MARK: Swift's semantics, to know where Foundation traps

/// The trees evaluated with Swift's semantics in Foundation's order (operands left to right; `&&`, `||`, `??`,
/// `?:` and `flatMap` evaluate only what they need; a range's bounds before its element), to know ahead where
/// Foundation would trap, and where Swift's answer rests on a NaN or a floating-point division by zero.
fileprivate struct DiffMirror {
    enum Stop: Error, Equatable {
        /// Foundation throws (a forced unwrap of nil, a half-open range with its bounds reversed).
        case thrown
        /// Swift traps: Foundation must not evaluate the tree on this row.
        case trap
    }

    let row: DiffRow
    var bound: [DiffValue] = []
    /// Whether Swift met a NaN or divided a `Double` by zero: its answer is then not the format language's.
    var nonFinite = false

    init(row: DiffRow) {
        self.row = row
    }

    mutating func evaluate(_ node: DiffNode) -> Result<Bool, Stop> {
        do {
            guard let answer = try eval(node).bool else { fatalError("\(node) is not a condition") }
            return .success(answer)
        } catch {
            return .failure(error)
        }
    }

    mutating func eval(_ node: DiffNode) throws(Stop) -> DiffValue {
        switch node {
        case .value(let v, _): return v
        case .nilLiteral: return .none
        case .key(let field): return field.value(of: row)
        case .it: return bound.last!
        case .and(let l, let r):
            guard try eval(l).bool! else { return .bool(false) }
            return try eval(r)
        case .or(let l, let r):
            if try eval(l).bool! { return .bool(true) }
            return try eval(r)
        case .not(let w): return .bool(!(try eval(w).bool!))
        case .equal(let l, let r):
            let a = try eval(l), b = try eval(r)
            return .bool(a == b)
        case .notEqual(let l, let r):
            let a = try eval(l), b = try eval(r)
            return .bool(a != b)
        case .compare(let l, let op, let r):
            let a = try eval(l), b = try eval(r)
            switch op {
            case .lessThan: return .bool(Self.less(a, b))
            case .lessThanOrEqual: return .bool(Self.lessOrEqual(a, b))
            case .greaterThan: return .bool(Self.less(b, a))
            case .greaterThanOrEqual: return .bool(Self.lessOrEqual(b, a))
            @unknown default: fatalError()
            }
        case .arithmetic(let l, let op, let r):
            let a = try eval(l), b = try eval(r)
            switch (a, b) {
            case (.int(let x), .int(let y)):
                let (result, overflow) = switch op {
                case .add: x.addingReportingOverflow(y)
                case .subtract: x.subtractingReportingOverflow(y)
                case .multiply: x.multipliedReportingOverflow(by: y)
                @unknown default: fatalError()
                }
                if overflow { throw .trap }
                return .int(result)
            case (.double(let x), .double(let y)):
                return double(op == .add ? x + y : op == .subtract ? x - y : x * y)
            default: fatalError("\(node) on \(a), \(b)")
            }
        case .divide(let l, let r):
            let a = try eval(l), b = try eval(r)
            switch (a, b) {
            case (.int(let x), .int(let y)):
                if y == 0 || (x == .min && y == -1) { throw .trap }
                return .int(x / y)
            case (.double(let x), .double(let y)):
                if y == 0 { nonFinite = true }
                return double(x / y)
            default: fatalError("\(node) on \(a), \(b)")
            }
        case .remainder(let l, let r):
            guard case .int(let x) = try eval(l), case .int(let y) = try eval(r) else { fatalError("\(node)") }
            if y == 0 || (x == .min && y == -1) { throw .trap }
            return .int(x % y)
        case .negate(let w):
            switch try eval(w) {
            case .int(let x):
                if x == .min { throw .trap }
                return .int(-x)
            case .double(let x): return .double(-x)
            default: fatalError("\(node)")
            }
        case .conditional(let t, let a, let b):
            return try eval(t).bool! ? try eval(a) : try eval(b)
        case .coalesce(let l, let r):
            let a = try eval(l)
            return a == .none ? try eval(r) : a
        case .unwrap(let inner):
            let a = try eval(inner)
            if a == .none { throw .thrown }
            return a
        case .flatMap(let w, let t):
            let a = try eval(w)
            if a == .none { return .none }
            bound.append(a)
            defer { bound.removeLast() }
            return try eval(t)
        case .startsWith(let b, let p):
            guard case .string(let x) = try eval(b), case .string(let y) = try eval(p) else { fatalError("\(node)") }
            return .bool(Self.starts(x, with: y))
        case .contains(let b, let o):
            guard case .string(let x) = try eval(b), case .string(let y) = try eval(o) else { fatalError("\(node)") }
            return .bool(Self.contains(x, y))
        case .inRange(let e, let l, let u, let closed):
            let lower = try eval(l), upper = try eval(u)
            // `lower...upper` traps unless lower <= upper; `PredicateExpressions.Range` throws.
            if !Self.lessOrEqual(lower, upper) { throw closed ? .trap : .thrown }
            let x = try eval(e)
            return .bool(Self.lessOrEqual(lower, x) && (closed ? Self.lessOrEqual(x, upper) : Self.less(x, upper)))
        case .inCapturedRange(let e, let lower, let upper, let closed):
            let x = try eval(e)
            return .bool(Self.lessOrEqual(lower, x) && (closed ? Self.lessOrEqual(x, upper) : Self.less(x, upper)))
        case .inArray(let e, let members):
            let x = try eval(e)
            return .bool(members.contains(x))
        }
    }

    private mutating func double(_ x: Double) -> DiffValue {
        if x.isNaN { nonFinite = true }
        return .double(x)
    }

    static func less(_ a: DiffValue, _ b: DiffValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): x < y
        case (.double(let x), .double(let y)): x < y
        case (.string(let x), .string(let y)): x < y
        case (.date(let x), .date(let y)): x < y
        default: fatalError("\(a) < \(b)")
        }
    }

    static func lessOrEqual(_ a: DiffValue, _ b: DiffValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .int(let y)): x <= y
        case (.double(let x), .double(let y)): x <= y
        case (.string(let x), .string(let y)): x <= y
        case (.date(let x), .date(let y)): x <= y
        default: fatalError("\(a) <= \(b)")
        }
    }

    // Called generically, as Foundation's expressions call them (not Foundation's `StringProtocol.contains`).
    private static func starts<S: Sequence>(_ s: S, with prefix: S) -> Bool where S.Element: Equatable {
        s.starts(with: prefix)
    }

    private static func contains<C: Collection>(_ c: C, _ other: C) -> Bool where C.Element: Equatable {
        c.contains(other)
    }
}

// MARK: Generating trees

/// Random well-typed trees of height at most `height` (a leaf has height 0), the root always an operator.
fileprivate struct DiffTreeGenerator {
    var random: DiffRandom
    /// The types of the enclosing `flatMap`s' values, innermost last.
    var bound: [DiffType] = []

    init(seed: UInt64) {
        random = DiffRandom(seed: seed)
    }

    mutating func predicate(height: Int) -> DiffNode {
        operation(.bool, height: height)
    }

    mutating func node(_ t: DiffType, height: Int) -> DiffNode {
        if height == 0 || random.chance(25) { return leaf(t) }
        return operation(t, height: height)
    }

    mutating func value(_ t: DiffType) -> DiffValue {
        if t.isOptional && random.chance(20) { return .none }
        switch t.wrapped {
        case .bool: return .bool(random.chance(50))
        case .int: return .int(random.intValue())
        case .double: return .double(random.doubleValue())
        case .string: return .string(random.pick(DiffPools.strings))
        default: return .date(random.pick(DiffPools.dates))
        }
    }

    mutating func leaf(_ t: DiffType) -> DiffNode {
        if bound.last == t, random.chance(70) { return .it(t) }
        let fields = DiffField.allCases.filter { $0.type == t }
        if !fields.isEmpty, random.chance(60) { return .key(random.pick(fields)) }
        if t.isOptional, random.chance(30) { return .nilLiteral(t) }
        return .value(value(t), t)
    }

    mutating func operation(_ t: DiffType, height: Int) -> DiffNode {
        let h = height - 1
        switch t {
        case .bool:
            switch random.int(15) {
            case 0: return .and(node(.bool, height: h), node(.bool, height: h))
            case 1: return .or(node(.bool, height: h), node(.bool, height: h))
            case 2: return .not(node(.bool, height: h))
            case 3, 4:
                let operand = random.pick(DiffType.allCases)
                let l = node(operand, height: h), r = node(operand, height: h)
                return random.chance(50) ? .equal(l, r) : .notEqual(l, r)
            case 5, 6:
                let operand = random.pick(DiffType.comparable)
                let op = random.pick([PE.ComparisonOperator.lessThan, .lessThanOrEqual, .greaterThan, .greaterThanOrEqual])
                return .compare(node(operand, height: h), op, node(operand, height: h))
            case 7: return .conditional(node(.bool, height: h), node(.bool, height: h), node(.bool, height: h))
            case 8: return .startsWith(node(.string, height: h), node(.string, height: h))
            case 9: return .contains(node(.string, height: h), node(.string, height: h))
            case 10:
                let operand = random.pick(DiffType.comparable)
                return .inRange(node(operand, height: h), node(operand, height: h), node(operand, height: h),
                                closed: random.chance(50))
            case 11:
                let operand = random.pick(DiffType.comparable)
                var bounds = [value(operand), value(operand)]
                if DiffMirror.less(bounds[1], bounds[0]) { bounds.reverse() }
                return .inCapturedRange(node(operand, height: h), bounds[0], bounds[1], closed: random.chance(50))
            case 12:
                let operand = random.pick(DiffType.allCases)
                return .inArray(node(operand, height: h), (0..<random.int(5)).map { _ in value(operand) })
            case 13: return .coalesce(node(.optBool, height: h), node(.bool, height: h))
            default: return .unwrap(node(.optBool, height: h))
            }
        case .int, .double:
            switch random.int(8) {
            case 0, 1:
                let op = random.pick([PE.ArithmeticOperator.add, .subtract, .multiply])
                return .arithmetic(node(t, height: h), op, node(t, height: h))
            case 2:
                return t == .int && random.chance(40) ? .remainder(node(t, height: h), node(t, height: h))
                    : .divide(node(t, height: h), node(t, height: h))
            case 3: return .negate(node(t, height: h))
            case 4: return .coalesce(node(t.optional, height: h), node(t, height: h))
            case 5: return .unwrap(node(t.optional, height: h))
            default: return .conditional(node(.bool, height: h), node(t, height: h), node(t, height: h))
            }
        case .string, .date:
            switch random.int(5) {
            case 0, 1: return .coalesce(node(t.optional, height: h), node(t, height: h))
            case 2: return .unwrap(node(t.optional, height: h))
            default: return .conditional(node(.bool, height: h), node(t, height: h), node(t, height: h))
            }
        case .optBool, .optInt, .optDouble, .optString, .optDate:
            if random.chance(25) {
                return .conditional(node(.bool, height: h), node(t, height: h), node(t, height: h))
            }
            let wrappedType = random.pick([DiffType.optInt, .optDouble, .optString, .optBool, .optDate])
            let wrapped = node(wrappedType, height: h)
            bound.append(wrappedType.wrapped)
            defer { bound.removeLast() }
            return .flatMap(wrapped, node(random.chance(65) ? t.wrapped : t, height: h))
        }
    }
}

// MARK: The test

@Suite("SwiftPredicate differential against Foundation")
struct SwiftPredicateDifferentialTests {
    /// The seed of the trees; SIFT_DIFFERENTIAL_SEED runs another.
    static let seed: UInt64 = ProcessInfo.processInfo.environment["SIFT_DIFFERENTIAL_SEED"].flatMap { UInt64($0) }
        ?? 0x5EED_0050

    /// How many random predicates run: each on every row, three ways.
    static let predicateCount = 600

    /// How many failures are recorded as issues (all are counted); SIFT_DIFFERENTIAL_ISSUES records more.
    static let reportedFailures = ProcessInfo.processInfo.environment["SIFT_DIFFERENTIAL_ISSUES"].flatMap { Int($0) } ?? 25

    /// The tallest tree (a leaf has height 0; the root is always an operator).
    static let height = 4

    static let model = try! DataModel([Entity("DiffRow", attributes: [
        Attribute("id", .integer64), Attribute("rank", .integer64), Attribute("score", .integer64, optional: true),
        Attribute("weight", .double), Attribute("ratio", .double, optional: true), Attribute("title", .string),
        Attribute("name", .string, optional: true), Attribute("nickname", .string, optional: true),
        Attribute("active", .boolean), Attribute("flag", .boolean, optional: true),
        Attribute("when", .date, optional: true),
    ])])

    /// An in-memory SQLite store holding the rows, and a new context on it (nothing unsaved: every fetch is SQL).
    fileprivate static func sqlite() throws -> (store: SQLiteStore, context: ObjectContext) {
        let store = try SQLiteStore(inMemoryWith: model)
        let writer = ObjectContext(store: store)
        for row in DiffRows.all { try writer.insert(row, into: "DiffRow") }
        try writer.save()
        return (store, ObjectContext(store: store))
    }

    /// What the run met, for the checks that it compared something.
    struct Tally: CustomStringConvertible {
        var predicates = 0
        /// Row answers compared with Foundation's (Swift defines one, and it is the format language's).
        var compared = 0
        /// Rows where Foundation throws, where Swift traps, where Swift's answer rests on a NaN or a division by 0.0
        /// (and of those, how many Sift answers otherwise).
        var thrown = 0, trapped = 0, nonFinite = 0, nonFiniteOtherwise = 0
        /// Row evaluations in memory, and fetches on SQLite, that stopped with an error.
        var memoryErrors = 0, sqliteErrors = 0
        /// Predicates that select some rows and not others, by Foundation's answers.
        var mixed = 0
        var failures = 0

        var description: String {
            "\(predicates) predicates, \(compared) row answers compared with Foundation; rows where Foundation throws: "
                + "\(thrown), where Swift traps: \(trapped), on a NaN or division by 0.0: \(nonFinite) (Sift answering "
                + "otherwise on \(nonFiniteOtherwise)); \(mixed) predicates select some rows and not others; errors: "
                + "\(memoryErrors) in memory, \(sqliteErrors) on SQLite"
        }
    }

    @Test("random PredicateExpressions trees: Foundation, Sift in memory and Sift on SQLite give the same answers")
    func differential() throws {
        let rows = DiffRows.all
        let (store, context) = try Self.sqlite()
        // The store holds the rows as they are.
        let stored = try context.fetch(DiffRow.self, FetchRequest(entityName: "DiffRow", sortDescriptors: [FetchSortDescriptor("id")]))
        #expect(stored == rows)

        var generator = DiffTreeGenerator(seed: Self.seed)
        var tally = Tally()
        for index in 0..<Self.predicateCount {
            let node = generator.predicate(height: Self.height)
            tally.predicates += 1
            let predicate = Predicate<DiffRow> { DiffBuilder(row: $0).build(node, as: Bool.self) }
            let label = "seed \(Self.seed), case \(index): #Predicate<DiffRow> { \(node) }"
            func fail(_ message: String, _ location: SourceLocation = #_sourceLocation) {
                tally.failures += 1
                if tally.failures <= Self.reportedFailures { Issue.record("\(label)\n\(message)", sourceLocation: location) }
            }

            // 1. Every tree converts.
            let sift: FormatPredicate
            do {
                sift = try FormatPredicate(predicate)
            } catch {
                fail("does not convert: \(error)")
                continue
            }
            let converted = "converted: \(sift.format)  (with its arguments: \(sift))"
            let onSQLite: Result<Set<Int>, StoreError>
            do {
                onSQLite = .success(Set(try context.fetch(DiffRow.self, entityName: "DiffRow", where: predicate).map(\.id)))
            } catch {
                onSQLite = .failure(error)
                tally.sqliteErrors += 1
            }

            var selected = 0, answered = 0, memoryFailed = false
            for row in rows {
                var mirror = DiffMirror(row: row)
                let swift = mirror.evaluate(node)
                let memory: Result<Bool, PredicateEvaluationError>
                do {
                    memory = .success(try sift.evaluate(with: row))
                } catch {
                    memory = .failure(error)
                    memoryFailed = true
                    tally.memoryErrors += 1
                }
                let sqlite = onSQLite.map { $0.contains(row.id) }
                let answers = "row \(row.id) \(row)\nmemory: \(memory)\nSQLite: \(sqlite)\n\(converted)"

                switch swift {
                case .success(let expected):
                    // Foundation answers (the mirror said it does not trap): its answer is the mirror's.
                    let foundation = Result { try predicate.evaluate(row) }
                    guard case .success(expected) = foundation else {
                        fail("the mirror says \(expected), Foundation \(foundation): the test's mirror is wrong\n\(answers)")
                        continue
                    }
                    answered += 1
                    if expected { selected += 1 }
                    if mirror.nonFinite {
                        // 4. Swift's answer rests on a NaN or a division by 0.0: Sift's is its own, the same twice.
                        tally.nonFinite += 1
                        if case .success(let answer) = memory, answer != expected { tally.nonFiniteOtherwise += 1 }
                        if !Self.agree(memory, sqlite) { fail("memory and SQLite disagree\n\(answers)") }
                        continue
                    }
                    // 2. Swift answers: so do both of Sift's evaluations, the same.
                    tally.compared += 1
                    if case .success(expected) = memory, case .success(expected) = sqlite { continue }
                    fail("Foundation: \(expected)\n\(answers)")
                case .failure(let stop):
                    // 3. Swift has no answer: Foundation throws (checked), or would trap (not asked).
                    if stop == .thrown {
                        tally.thrown += 1
                        if case .success(let answer) = Result(catching: { try predicate.evaluate(row) }) {
                            fail("the mirror says Foundation throws, Foundation answers \(answer)\n\(answers)")
                        }
                    } else {
                        tally.trapped += 1
                    }
                    if !Self.agree(memory, sqlite) { fail("Swift has no answer (\(stop)); memory and SQLite disagree\n\(answers)") }
                }
            }
            // SQLite stops with an error only where memory does.
            if case .failure(let error) = onSQLite, !memoryFailed { fail("SQLite fails, memory answers: \(error)\n\(converted)") }
            if selected > 0 && selected < answered { tally.mixed += 1 }
        }
        withExtendedLifetime(store) {}

        // The run compared what it claims: 600 predicates over 40 rows, most rows answered by Swift, and enough
        // predicates that split the rows that an answer wrong for all rows alike could not pass.
        #expect(tally.predicates == Self.predicateCount, "\(tally)")
        #expect(tally.compared >= 12_000, "\(tally)")
        #expect(tally.mixed >= Self.predicateCount / 3, "\(tally)")
        #expect(tally.thrown > 0 && tally.trapped > 0 && tally.nonFinite > 0, "\(tally)")
        #expect(tally.failures == 0, "\(tally.failures) failures; \(tally)")
        print("SwiftPredicate differential: \(tally)")
    }

    /// Sift's law where Swift gives no answer: memory and SQLite give the same one, or both stop with an error.
    static func agree(_ memory: Result<Bool, PredicateEvaluationError>, _ sqlite: Result<Bool, StoreError>) -> Bool {
        switch (memory, sqlite) {
        case (.success(let a), .success(let b)): a == b
        case (.failure, .failure): true
        default: false
        }
    }
}
