// The library: a Swift predicate's shape, and the conversions cached by it.
//
// A `#Predicate` built again with new captured values has the same shape:
// the same expression types (its root's type says them all), the same key
// paths, operators and variables, and captured values of the same kinds. Its
// conversion differs only in the values of its `%@` arguments. So a shape
// walk, which only collects, finds the conversion of an earlier predicate of
// the same shape, and its arguments are taken from this predicate's captured
// values by the recipe that conversion left: for each `%@`, which captured
// value (and which bound of a captured range) it is.
//
// What must not be shared is in the shape itself: a captured nil, Boolean or
// `ComparisonResult`, and a collection's index, may be written into the text
// (`nil`, `TRUEPREDICATE`, `==[c]`, `[2]`), so their values are part of the
// shape. A conversion whose every `%@` has no recipe is not cached.

import Foundation
import SiftValues
import Synchronization

/// The shape of a Swift predicate: what its conversion's text depends on, with
/// the captured values that become its arguments collected beside it.
///
/// You need not use this type: ``SwiftPredicateExpression`` conformances fill
/// it in through ``SwiftPredicateExpression/siftShape(_:)``.
public struct SwiftPredicateShape {
    /// One part of a shape that the text depends on.
    package enum Atom: Hashable {
        case keyPath(KeyPathIdentity)
        case variable(Int)
        case symbol(Int)
        case value
        case exact(PredicateValue)
    }

    /// The parts the text depends on, in walk order.
    package var atoms: [Atom] = []
    /// The captured values' parts, in walk order (one each, two for a range's bounds).
    package var parts: [PredicateValue] = []
    /// Where each captured value's parts start in `parts`.
    package var starts: [Int] = []
    /// The variables, in order of declaration: each one's number is its place (a predicate has few).
    package var variables: [PredicateExpressions.VariableID] = []
    /// Whether the walk met something it cannot describe (the predicate then converts without the cache).
    package var isComplete = true
    /// How many index operands the walk is inside: a value there is written into the text.
    package var exactDepth = 0
    /// How deep the walk is.
    package var depth = 0

    package init() {
        atoms.reserveCapacity(16)
        parts.reserveCapacity(8)
        starts.reserveCapacity(8)
        variables.reserveCapacity(2)
    }

    /// How many captured values the walk met.
    package var valueCount: Int { starts.count }

    /// A part of a captured value; nil when there is no such part.
    package func part(_ source: SwiftPredicateArgumentSource) -> PredicateValue? {
        guard source.value >= 0, source.value < starts.count, source.part >= 0 else { return nil }
        let end = source.value + 1 < starts.count ? starts[source.value + 1] : parts.count
        let index = starts[source.value] + source.part
        return index < end ? parts[index] : nil
    }

    /// Walks an operand.
    ///
    /// - Parameter expression: The operand.
    package mutating func walk(_ expression: some SwiftPredicateExpression) {
        guard isComplete else { return }
        depth += 1
        defer { depth -= 1 }
        guard depth <= SwiftPredicateConverter.maximumDepth else {
            isComplete = false
            return
        }
        expression.siftShape(&self)
    }

    /// Walks an operand whose values are written into the text (a collection's index).
    package mutating func walkExactly(_ expression: some SwiftPredicateExpression) {
        exactDepth += 1
        defer { exactDepth -= 1 }
        walk(expression)
    }

    /// Gives a variable its number in the shape.
    package mutating func declare(_ id: PredicateExpressions.VariableID) {
        atoms.append(.variable(variables.count))
        variables.append(id)
    }

    /// Records a use of a variable.
    package mutating func use(_ id: PredicateExpressions.VariableID) {
        atoms.append(.variable(variables.lastIndex(of: id) ?? -1))
    }

    /// Records an operator or other symbol the text depends on.
    package mutating func symbol(_ number: Int) {
        atoms.append(.symbol(number))
    }

    /// Records a key path.
    package mutating func keyPath(_ keyPath: AnyKeyPath) {
        atoms.append(.keyPath(KeyPathIdentity(keyPath)))
    }

    /// A key path by identity: a key path literal is one object wherever it is evaluated, so comparing
    /// objects is enough (an equal key path written elsewhere is another shape, converted once more), and
    /// cheaper than comparing components. The object is held, so its address is not reused while a cache
    /// keeps it.
    package struct KeyPathIdentity: Hashable {
        let keyPath: AnyKeyPath

        init(_ keyPath: AnyKeyPath) {
            self.keyPath = keyPath
        }

        package static func == (a: Self, b: Self) -> Bool { a.keyPath === b.keyPath }

        package func hash(into hasher: inout Hasher) {
            hasher.combine(ObjectIdentifier(keyPath))
        }
    }

    /// Records a captured value of one part: `exact` when its value is part of the shape.
    package mutating func value(_ value: PredicateValue, exact: Bool) {
        starts.append(parts.count)
        parts.append(value)
        if exact || exactDepth > 0 { atoms.append(.exact(value)) }
        atoms.append(.value)
    }

    /// Records a captured value: `parts` its argument values, `exact` when its value is part of the shape.
    package mutating func value(_ parts: [PredicateValue], exact: Bool) {
        starts.append(self.parts.count)
        self.parts.append(contentsOf: parts)
        if exact || exactDepth > 0 {
            atoms.append(contentsOf: parts.map(Atom.exact))
            atoms.append(.value)
        } else {
            atoms.append(.value)
        }
    }

    /// Records a value of a type no predicate holds: this shape is not cached.
    package mutating func refuse() {
        isComplete = false
    }
}

/// Where an argument of a converted predicate comes from: a captured value, by
/// its number in walk order, and which of its parts (a range has two).
package struct SwiftPredicateArgumentSource: Hashable, Sendable {
    package var value: Int
    package var part: Int

    package init(value: Int, part: Int) {
        self.value = value
        self.part = part
    }
}

/// Conversions by shape: the format text of each shape seen, and for each of
/// its `%@`s, the captured value it takes.
package final class SwiftPredicateShapeCache: Sendable {
    /// A shape: its root expression's type (which says every expression type below it) and its atoms.
    /// (Sendable: its key paths are immutable objects, which the standard library does not mark.)
    package struct Key: Hashable, @unchecked Sendable {
        let root: ObjectIdentifier
        let atoms: [SwiftPredicateShape.Atom]
    }

    package struct Entry: Sendable {
        let format: String
        let sources: [SwiftPredicateArgumentSource]
    }

    /// The most shapes kept; past it the cache starts again.
    package static let capacity = 1024

    private let entries = Mutex<[Key: Entry]>([:])

    /// How many conversions were taken from the cache (for tests).
    package var hits: Int { hitCount.load(ordering: .relaxed) }
    private let hitCount = Atomic<Int>(0)

    /// Conversions from the cache that differed from a fresh one (when `verifies`).
    package let mismatches = LockedState<[String]>([])

    /// Whether a conversion taken from the cache is checked against a fresh one (tests turn it on).
    package var verifies: Bool {
        get { verification.load(ordering: .relaxed) }
        set { verification.store(newValue, ordering: .relaxed) }
    }
    private let verification = Atomic<Bool>(false)

    /// An empty cache.
    package init() {}

    /// A conversion kept for `key`, with its arguments taken from the shape's captured values; nil when none
    /// is kept.
    func conversion(_ key: Key, shape: SwiftPredicateShape) -> (format: String, arguments: [PredicateValue])? {
        guard let entry = entries.withLock({ $0[key] }) else { return nil }
        var arguments: [PredicateValue] = []
        arguments.reserveCapacity(entry.sources.count)
        for source in entry.sources {
            guard let value = shape.part(source) else { return nil }
            arguments.append(value)
        }
        hitCount.add(1, ordering: .relaxed)
        return (entry.format, arguments)
    }

    /// Keeps a conversion for `key`.
    func keep(_ key: Key, format: String, sources: [SwiftPredicateArgumentSource]) {
        entries.withLock {
            if $0.count >= Self.capacity { $0.removeAll(keepingCapacity: true) }
            $0[key] = Entry(format: format, sources: sources)
        }
    }
}
