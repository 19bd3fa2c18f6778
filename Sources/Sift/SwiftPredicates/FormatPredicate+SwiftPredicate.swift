// The library: a Swift `#Predicate` as a `FormatPredicate`, as Apple's
// `NSPredicate(_:)` converts one, evaluated by Sift on plain values.

import Foundation
import SiftValues

extension FormatPredicate {
    /// The format predicate a Swift predicate converts to, as Apple's
    /// `NSPredicate(_:)` converts one: each key path by its stored property's
    /// name, each captured value a `%@` argument.
    ///
    /// ```swift
    /// struct Person: Codable { var name: String; var age: Int? }
    /// let limit = 40
    /// let older = try FormatPredicate(#Predicate<Person> { ($0.age ?? 0) > limit })
    /// print(older.format)                                        // TERNARY(age != nil, age, %@) > %@
    /// try older.evaluate(with: Person(name: "Ann", age: 41))     // true, by Sift's evaluator
    /// ```
    ///
    /// - Parameter predicate: A predicate on one input, whose key paths are stored properties.
    /// - Throws: `PredicateConversionError`: `.unsupportedExpression` naming an expression type with no Sift form
    ///   and what to write instead, `.unnamedKeyPath` for a computed property, `.unsupportedValue` for a captured
    ///   value predicates do not hold, `.compile` when the converted text does not compile.
    public init<Root>(_ predicate: Predicate<Root>) throws(PredicateConversionError) {
        try self.init(predicate, naming: SwiftPredicateConverter.propertyName(of:))
    }

    /// The format predicate a Swift predicate converts to, with key paths named by `naming`.
    ///
    /// - Parameters:
    ///   - predicate: A predicate on one input.
    ///   - naming: The attribute or relationship each key path names (a record's coding key, say); nil for
    ///     one that names none.
    /// - Throws: `PredicateConversionError`, as ``init(_:)`` does.
    public init<Root>(_ predicate: Predicate<Root>, naming: @escaping (AnyKeyPath) -> String?)
        throws(PredicateConversionError)
    {
        let (format, arguments) = try SwiftPredicateConverter.convert(predicate, naming: naming)
        do {
            try self.init(format: format, argumentArray: arguments)
        } catch {
            throw PredicateConversionError(.compile("\(error)"))
        }
    }

    /// The format text and arguments a Swift predicate converts to, for a fetch or a template.
    ///
    /// - Parameters:
    ///   - predicate: A predicate on one input.
    ///   - naming: The attribute or relationship each key path names; nil for one that names none.
    /// - Returns: The predicate's text in the format language and the values of its `%@`s, in order.
    /// - Throws: `PredicateConversionError` when an expression has no Sift form, a key path names nothing or a
    ///   captured value is of a type predicates do not hold.
    public static func formatText<Root>(of predicate: Predicate<Root>, naming: @escaping (AnyKeyPath) -> String?)
        throws(PredicateConversionError) -> (format: String, arguments: [PredicateValue])
    {
        try SwiftPredicateConverter.convert(predicate, naming: naming)
    }

    /// The format text and arguments a Swift predicate converts to, taken from `cache` when a predicate of the
    /// same shape was converted before.
    package static func formatText<Root>(of predicate: Predicate<Root>, naming: @escaping (AnyKeyPath) -> String?,
                                         cache: SwiftPredicateShapeCache)
        throws(PredicateConversionError) -> (format: String, arguments: [PredicateValue])
    {
        try SwiftPredicateConverter.convert(predicate, naming: naming, cache: cache)
    }
}
