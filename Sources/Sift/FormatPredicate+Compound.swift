// The library: predicates combined as `NSCompoundPredicate` combines them —
// AND, OR, NOT — and a predicate's canonical format string. A compound is
// a predicate of its own, compiled from its parts' texts in parentheses
// with their arguments in order, so it evaluates, prints, substitutes and
// goes to a fetch like any other.

import Foundation
import SiftValues

extension FormatPredicate {
    /// The predicate true when every one of `predicates` is
    /// (`NSCompoundPredicate(andPredicateWithSubpredicates:)`); true for none.
    ///
    /// ```swift
    /// let adults = try FormatPredicate(format: "age >= %@", 18)
    /// let named = try FormatPredicate(format: "name BEGINSWITH %@", "A")
    /// let both = try FormatPredicate.and([adults, named])   // (age >= 18) AND (name BEGINSWITH "A")
    /// ```
    ///
    /// - Parameter predicates: The parts, in order.
    /// - Returns: Their conjunction, compiled.
    /// - Throws: `PredicateCompileError` when the parts do not compile together (they each did alone, so
    ///   only past the limits on a predicate's length or depth).
    public static func and(_ predicates: [FormatPredicate]) throws(PredicateCompileError) -> FormatPredicate {
        try compound(predicates, joinedBy: "AND", empty: "TRUEPREDICATE")
    }

    /// The predicate true when one of `predicates` is
    /// (`NSCompoundPredicate(orPredicateWithSubpredicates:)`); false for none.
    ///
    /// - Parameter predicates: The parts, in order.
    /// - Returns: Their disjunction, compiled.
    /// - Throws: `PredicateCompileError` when the parts do not compile together (past the limits only).
    public static func or(_ predicates: [FormatPredicate]) throws(PredicateCompileError) -> FormatPredicate {
        try compound(predicates, joinedBy: "OR", empty: "FALSEPREDICATE")
    }

    /// The predicate true when `predicate` is not
    /// (`NSCompoundPredicate(notPredicateWithSubpredicate:)`).
    ///
    /// - Parameter predicate: The predicate negated.
    /// - Returns: Its negation, compiled.
    /// - Throws: `PredicateCompileError` when it does not compile negated (past the limits only).
    public static func not(_ predicate: FormatPredicate) throws(PredicateCompileError) -> FormatPredicate {
        try FormatPredicate(format: "NOT (\(predicate.format))", argumentArray: predicate.arguments,
                            functions: predicate.functions, variables: predicate.substitutions)
    }

    private static func compound(_ predicates: [FormatPredicate], joinedBy word: String,
                                 empty: String) throws(PredicateCompileError) -> FormatPredicate {
        guard !predicates.isEmpty else { return try FormatPredicate(format: empty, argumentArray: []) }
        return try FormatPredicate(format: predicates.map { "(\($0.format))" }.joined(separator: " \(word) "),
                                   argumentArray: predicates.flatMap(\.arguments),
                                   functions: predicates.lazy.compactMap(\.functions).first,
                                   variables: predicates.reduce(into: [:]) { $0.merge($1.substitutions) { _, new in new } })
    }

    /// The predicate's canonical text, its arguments written in place, as
    /// `NSPredicate.predicateFormat` gives it: what `description` prints,
    /// and what `FormatPredicate(format:)` reads back as the same predicate.
    public var predicateFormat: String { description }

    /// The values of the format's specifiers, in order.
    public var formatArguments: [PredicateValue] { arguments }
}
