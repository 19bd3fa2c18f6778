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

/// The shape of a Swift predicate: what its conversion's text depends on, with
/// the captured values that become its arguments collected beside it.
///
/// You need not use this type: ``SwiftPredicateExpression`` conformances fill
/// it in through ``SwiftPredicateExpression/siftShape(_:)``.
public struct SwiftPredicateShape {
    /// One part of a shape that the text depends on.
    package enum Atom: Hashable {
        case keyPath(AnyKeyPath)
        case variable(Int)
        case symbol(Int)
        case value
        case exact(PredicateValue)
    }

    /// The parts the text depends on, in walk order.
    package var atoms: [Atom] = []
    /// The captured values, in walk order: one array each (two for a range's bounds).
    package var values: [[PredicateValue]] = []
    /// The number each variable has in the shape, in order of declaration.
    package var variables: [PredicateExpressions.VariableID: Int] = [:]
    /// Whether the walk met something it cannot describe (the predicate then converts without the cache).
    package var isComplete = true
    /// How many index operands the walk is inside: a value there is written into the text.
    package var exactDepth = 0
    /// How deep the walk is.
    package var depth = 0

    package init() {}

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
        let number = variables.count
        variables[id] = number
        atoms.append(.variable(number))
    }

    /// Records a use of a variable.
    package mutating func use(_ id: PredicateExpressions.VariableID) {
        atoms.append(.variable(variables[id] ?? -1))
    }

    /// Records an operator or other symbol the text depends on.
    package mutating func symbol(_ number: Int) {
        atoms.append(.symbol(number))
    }

    /// Records a key path.
    package mutating func keyPath(_ keyPath: AnyKeyPath) {
        atoms.append(.keyPath(keyPath))
    }

    /// Records a captured value: `parts` its argument values, `exact` when its value is part of the shape.
    package mutating func value(_ parts: [PredicateValue], exact: Bool) {
        values.append(parts)
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
    package struct Key: Hashable {
        let root: ObjectIdentifier
        let atoms: [SwiftPredicateShape.Atom]
    }

    package struct Entry: Sendable {
        let format: String
        let sources: [SwiftPredicateArgumentSource]
    }

    /// The most shapes kept; past it the cache starts again.
    package static let capacity = 1024

    private let entries = LockedState<[Key: Entry]>([:])

    /// How many conversions were taken from the cache (for tests).
    package let hits = LockedState(0)

    /// Conversions from the cache that differed from a fresh one (when `verifies`).
    package let mismatches = LockedState<[String]>([])

    /// Whether a conversion taken from the cache is checked against a fresh one (tests turn it on).
    package let verification = LockedState(false)

    /// Whether a conversion taken from the cache is checked against a fresh one.
    package var verifies: Bool { verification.withLock { $0 } }

    /// An empty cache.
    package init() {}

    /// A conversion kept for `key`, with its arguments taken from `values`; nil when none is kept.
    func conversion(_ key: Key, values: [[PredicateValue]]) -> (format: String, arguments: [PredicateValue])? {
        guard let entry = entries.withLock({ $0[key] }) else { return nil }
        var arguments: [PredicateValue] = []
        arguments.reserveCapacity(entry.sources.count)
        for source in entry.sources {
            guard source.value < values.count, source.part < values[source.value].count else { return nil }
            arguments.append(values[source.value][source.part])
        }
        hits.withLock { $0 += 1 }
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
