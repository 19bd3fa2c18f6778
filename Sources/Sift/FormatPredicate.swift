// The library: predicates evaluated against plain Swift values, with no
// model — what `NSPredicate(format:)` is used for most, on Linux too.
//
// The format string goes through the same parser, diagnostics and optimizer
// as a model's predicates; the binder resolves nothing ahead of time (every
// key is looked up when the predicate runs), and the memory lowering
// compiles the result once into closures over `DynamicItem`s. Types meet
// only at run time: where Apple's operators raise, evaluation throws a
// `PredicateEvaluationError` naming both types and the place in the text
// (Grammar/README.md, "Values without a model").

import Foundation
import SiftChecking
import SiftMemory
import SiftOptimizer
import SiftSyntax
import SiftTree
import SiftValues

/// A predicate compiled from a format string, evaluated against plain
/// values: strings, numbers, dates, arrays, dictionaries (as
/// `JSONSerialization` gives them), `Encodable` values and `KeyValueRecord`s.
/// `SELF` is the value itself; a key path looks its keys up in
/// dictionaries, maps them over arrays, and reads records.
///
/// ```swift
/// // NSPredicate(format: "SELF MATCHES %@", pattern).evaluate(with: email)
/// let isEmail = try FormatPredicate(format: "SELF MATCHES %@", "[^@ ]+@[^@ ]+\\.[a-z]{2,}")
/// try isEmail.evaluate(with: "ann@example.com")               // true
///
/// // (people as NSArray).filtered(using: NSPredicate(format: "age >= %d", 18))
/// let adults = try FormatPredicate(format: "age >= %d", 18).filter(people)
/// ```
///
/// A predicate is compiled once; evaluating it is a call of closures, safe
/// from any thread.
public struct FormatPredicate: @unchecked Sendable, CustomStringConvertible {
    /// The format string it was compiled from.
    public let format: String
    /// The `$variables` each evaluation must give values for
    /// (`evaluate(with:substitutionVariables:)`).
    public let variables: Set<String>
    /// The bound, optimized predicate.
    public let predicate: BoundPredicate
    /// What the format says that Apple's Foundation accepts, and so does Sift,
    /// but that is almost always a mistake: an unknown escape in a string
    /// (`'\d+'` reads as `d+`), comparison options on a number. Each has its
    /// place in ``format``; `warning.rendered(in: format)` shows it.
    public let warnings: [PredicateWarning]
    let compiled: MemoryPredicate<DynamicDomain>
    /// The same predicate for value trees alone: no wrapping per value.
    let compiledForValues: MemoryPredicate<ValueTreeDomain>
    let arguments: [PredicateValue]
    /// The values of `$variables` given so far (`init(variables:)`,
    /// `withSubstitutionVariables`).
    package let substitutions: [String: PredicateValue]
    let functions: FunctionRegistry?
    /// Where each expression is in `format`, for errors.
    let locations: [BoundExpression: Range<Int>]

    /// The optimizer of predicates bound without a model: every rule but
    /// term ordering, so terms run in the order written, as Apple runs them
    /// (an error a later term would raise is not raised when an earlier one
    /// decides).
    static let optimizer = Optimizer(rules: Optimizer.standard.rules.filter { $0.name != "term-ordering" })

    /// Compiles `format`, filling its format specifiers (`%@`, `%K`, `%d`, …)
    /// from `arguments` in order. `$variables` without a value wait for each
    /// evaluation's.
    ///
    /// Replaces `NSPredicate(format: format, arguments…)`.
    ///
    /// - Parameters:
    ///   - format: The format string, in `NSPredicate`'s syntax.
    ///   - arguments: The values of its format specifiers, in order.
    /// - Throws: `PredicateCompileError`: `.syntax` when `format` or its arguments do not parse, `.validation`
    ///   when the predicate parses but cannot be bound (an unknown function, a wrong number of arguments, …).
    public init(format: String, _ arguments: any PredicateValueConvertible...) throws(PredicateCompileError) {
        try self.init(format: format, argumentArray: arguments.map(\.predicateValue))
    }

    /// Compiles `format` with its arguments given as an array, and the
    /// application's functions.
    ///
    /// Replaces `NSPredicate(format: format, argumentArray: arguments)`.
    ///
    /// - Parameters:
    ///   - format: The format string, in `NSPredicate`'s syntax.
    ///   - arguments: The values of its format specifiers (`%@`, `%K`, `%d`, …), in order.
    ///   - functions: The application's functions the predicate may call; nil for the built-in ones alone.
    ///   - values: Values of `$variables` known now; the variables not given wait for each evaluation's values.
    /// - Throws: `PredicateCompileError`: `.syntax` when `format` or its arguments do not parse, `.validation`
    ///   when the predicate parses but cannot be bound (an unknown function, a wrong number of arguments, …).
    public init(format: String, argumentArray arguments: [PredicateValue], functions: FunctionRegistry? = nil,
                variables values: [String: PredicateValue] = [:]) throws(PredicateCompileError) {
        let syntax: PredicateSyntax
        var warnings: [PredicateWarning] = []
        do {
            syntax = try PredicateParser.parse(format, arguments: arguments, warnings: &warnings)
        } catch {
            throw .syntax(error)
        }
        let bound: BoundPredicate
        let ranges: [BoundExpression: SourceRange]
        do {
            (bound, ranges) = try Binder.withoutModel(variables: values, functions: functions, allowsParameters: true)
                .bindWithoutModel(syntax, warnings: &warnings)
        } catch {
            throw .validation(error)
        }
        self.warnings = warnings
        self.format = format
        self.arguments = arguments
        self.substitutions = values
        self.functions = functions
        self.variables = syntax.variables.subtracting(values.keys)
        self.predicate = Self.optimizer.optimize(bound)
        let locations = ranges.mapValues { $0.lowerBound..<$0.upperBound }
        self.locations = locations
        self.compiled = MemoryPredicate(predicate, domain: DynamicDomain(), locations: locations)
        self.compiledForValues = MemoryPredicate(predicate, domain: ValueTreeDomain(), locations: locations)
    }

    /// The predicate with its `$variables` replaced by values, compiled
    /// again (constants fold).
    ///
    /// Replaces `predicate.withSubstitutionVariables(variables)`.
    ///
    /// - Parameter values: The values of `$variables`, by name without the `$`.
    /// - Returns: A new predicate compiled again from `format` with only these values: variables not in
    ///   `values`, including any given before (to `init` or an earlier call), wait for each evaluation's values.
    /// - Throws: `PredicateCompileError` when the format, compiled again with these values, does not bind.
    public func withSubstitutionVariables(_ values: [String: PredicateValue]) throws(PredicateCompileError) -> FormatPredicate {
        try FormatPredicate(format: format, argumentArray: arguments, functions: functions, variables: values)
    }

    /// Whether `value` satisfies the predicate.
    ///
    /// Replaces `predicate.evaluate(with: value)`.
    ///
    /// - Parameter value: The value `SELF` stands for: a string, number, date, array, `[String: Any]`
    ///   dictionary, `Encodable` value or `KeyValueRecord`.
    /// - Returns: `true` when `value` satisfies the predicate.
    /// - Throws: `PredicateEvaluationError`: `.unsupportedValue` when `value` is of a type predicates do not
    ///   read, `.unboundVariable` when a `$variable` has no value, `.evaluation` when an operator meets types
    ///   it cannot work on or a budget runs out.
    public func evaluate(with value: Any?) throws(PredicateEvaluationError) -> Bool {
        try evaluate(DynamicItem.plain(value), parameters: [:])
    }

    /// Whether `value` satisfies the predicate with its `$variables` set to
    /// `variables`.
    ///
    /// Replaces `predicate.evaluate(with: value, substitutionVariables: variables)`.
    ///
    /// - Parameters:
    ///   - value: The value `SELF` stands for: a string, number, date, array, `[String: Any]` dictionary,
    ///     `Encodable` value or `KeyValueRecord`.
    ///   - variables: The values of the predicate's `$variables`, by name without the `$`.
    /// - Returns: `true` when `value` satisfies the predicate.
    /// - Throws: `PredicateEvaluationError`: `.unsupportedValue` when `value` is of a type predicates do not
    ///   read, `.unboundVariable` when a `$variable` is not in `variables`, `.evaluation` when an operator
    ///   meets types it cannot work on or a budget runs out.
    public func evaluate(with value: Any?, substitutionVariables variables: [String: PredicateValue])
        throws(PredicateEvaluationError) -> Bool
    {
        try evaluate(DynamicItem.plain(value), parameters: variables)
    }

    /// Whether a key-value record satisfies the predicate: read key by key,
    /// with no conversion.
    ///
    /// - Parameter record: The record `SELF` stands for.
    /// - Returns: `true` when `record` satisfies the predicate.
    /// - Throws: `PredicateEvaluationError`: `.unboundVariable` when the predicate has a `$variable` with no
    ///   value, `.evaluation` when an operator meets types it cannot work on or a budget runs out.
    public func evaluate(with record: some KeyValueRecord) throws(PredicateEvaluationError) -> Bool {
        try evaluate(.record(record), parameters: [:])
    }

    /// Whether a value tree satisfies the predicate.
    ///
    /// - Parameter value: The value tree `SELF` stands for.
    /// - Returns: `true` when `value` satisfies the predicate.
    /// - Throws: `PredicateEvaluationError`: `.unboundVariable` when the predicate has a `$variable` with no
    ///   value, `.evaluation` when an operator meets types it cannot work on or a budget runs out.
    public func evaluate(with value: PredicateValue) throws(PredicateEvaluationError) -> Bool {
        guard variables.isEmpty else { return try evaluate(.value(value), parameters: [:]) }
        do {
            return try compiledForValues.evaluate(value)
        } catch {
            throw PredicateEvaluationError(error, format: format)
        }
    }

    /// The elements of `values` that satisfy the predicate, in order.
    ///
    /// Replaces `(values as NSArray).filtered(using: predicate)`.
    ///
    /// - Parameter values: The values to test, each read as `evaluate(with:)` reads a value.
    /// - Returns: The elements that satisfy the predicate, in their order in `values`.
    /// - Throws: `PredicateEvaluationError`: `.unsupportedValue` when an element is of a type predicates do not
    ///   read, `.unboundVariable` when the predicate has a `$variable` (none can be given here), `.evaluation`
    ///   when an operator meets types it cannot work on or a budget runs out.
    public func filter<Values: Sequence>(_ values: Values) throws(PredicateEvaluationError) -> [Values.Element] {
        let elements = Array(values)
        var items: [DynamicItem] = []
        items.reserveCapacity(elements.count)
        for element in elements { items.append(try DynamicItem.plain(element)) }
        try checkVariables(given: [:])
        do {
            // One evaluation scope for all of them.
            return try compiled.matchingIndices(count: items.count) { items[$0] }.map { elements[$0] }
        } catch {
            throw PredicateEvaluationError(error, format: format)
        }
    }

    /// The elements of `values` that satisfy the predicate, in order: the
    /// predicate is compiled for their layout, so each key is read from its
    /// column rather than looked up in every value.
    ///
    /// ```swift
    /// let people = try ValueColumns(decodedPeople)    // converted once
    /// let adults = try FormatPredicate(format: "age >= 18").filter(people)
    /// ```
    ///
    /// - Parameter values: The converted values to test.
    /// - Returns: The elements that satisfy the predicate, in their order in `values`.
    /// - Throws: `PredicateEvaluationError`: `.unboundVariable` when the predicate has a `$variable` (none can
    ///   be given here), `.evaluation` when an operator meets types it cannot work on or a budget runs out.
    @inlinable
    public func filter<Element>(_ values: ValueColumns<Element>) throws(PredicateEvaluationError) -> [Element] {
        // Inlinable: the elements are copied by code specialized for their type.
        try matchingIndices(values).map { values.elements[$0] }
    }

    /// The positions in `values` of the elements that satisfy the predicate.
    ///
    /// - Parameter values: The converted values to test.
    /// - Returns: The positions of the matching elements, in ascending order.
    /// - Throws: `PredicateEvaluationError`: `.unboundVariable` when the predicate has a `$variable` (none can
    ///   be given here), `.evaluation` when an operator meets types it cannot work on or a budget runs out.
    public func matchingIndices<Element>(_ values: ValueColumns<Element>) throws(PredicateEvaluationError) -> [Int] {
        try checkVariables(given: [:])
        do {
            switch values.storage {
            case .columns(let table):
                let compiled = MemoryPredicate(predicate, domain: ColumnDomain(table: table), locations: locations)
                return try compiled.matchingIndices(count: table.count) { .row($0) }
            case .values(let trees):
                return try compiledForValues.matchingIndices(count: trees.count) { trees[$0] }
            }
        } catch {
            throw PredicateEvaluationError(error, format: format)
        }
    }

    /// Throws for the first `$variable` with no value in `parameters`.
    func checkVariables(given parameters: [String: PredicateValue]) throws(PredicateEvaluationError) {
        for name in variables.sorted() where parameters[name] == nil {
            throw PredicateEvaluationError(.unboundVariable(name), range: nil, format: format)
        }
    }

    func evaluate(_ item: DynamicItem, parameters: [String: PredicateValue]) throws(PredicateEvaluationError) -> Bool {
        try checkVariables(given: parameters)
        do {
            return try compiled.evaluate(item, parameters: parameters)
        } catch {
            throw PredicateEvaluationError(error, format: format)
        }
    }

    /// The predicate in its canonical form.
    public var description: String {
        guard let syntax = try? PredicateParser.parse(format, arguments: arguments) else { return format }
        return (substitutions.isEmpty ? syntax : syntax.substituting(substitutions)).description
    }
}

/// Why evaluating a `FormatPredicate` stopped, and where in its text.
///
/// ```swift
/// let person: [String: Any] = ["name": "Ann", "age": "forty"]
/// do {
///     _ = try FormatPredicate(format: "age > 3").evaluate(with: person)
/// } catch let error as PredicateEvaluationError {
///     print(error.message)        // > cannot compare a string with a number
///     print(error)                // the message, then the format's line with carets under the place
/// }
/// let older = try FormatPredicate(format: "age > $minimum")
/// do { _ = try older.evaluate(with: person) } catch { print(error.reason) }   // unboundVariable("minimum")
/// ```
public struct PredicateEvaluationError: Error, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Hashable {
        /// Types the predicate's operators cannot work on, a key of a value
        /// that has none, or a budget run out.
        case evaluation(EvaluationError)
        /// A value of a type predicates do not read.
        case unsupportedValue(String)
        /// A `$variable` the evaluation gave no value for.
        case unboundVariable(String)
    }

    /// What went wrong.
    public var reason: Reason
    /// Where in the format string, when known.
    public var range: SourceRange?
    /// The format string.
    public var format: String

    /// Creates an evaluation error.
    ///
    /// - Parameters:
    ///   - reason: What went wrong.
    ///   - range: Where in the format string, as UTF-8 byte offsets; nil
    ///     when not known.
    ///   - format: The format string of the predicate being evaluated.
    public init(_ reason: Reason, range: SourceRange?, format: String) {
        self.reason = reason
        self.range = range
        self.format = format
    }

    /// An evaluation's error, at its place in `format`.
    init(_ error: EvaluationError, format: String) {
        self.init(.evaluation(error), range: error.location.map { SourceRange($0.lowerBound, $0.upperBound) }, format: format)
    }

    /// The message alone.
    public var message: String {
        switch reason {
        case .evaluation(let error): "\(error)"
        case .unsupportedValue(let type): "a value of type \(type) is not one predicates read"
        case .unboundVariable(let name): "$\(name) has no value: give it in substitutionVariables"
        }
    }

    /// The message, with the predicate's line and a caret under the place
    /// when it is known.
    ///
    /// - Parameter sourceName: The name the diagnostic gives the format string.
    /// - Returns: The diagnostic, with the format's line and a caret under the place; `error:` and the message
    ///   alone when the place is not known.
    public func rendered(sourceName: String = "predicate") -> String {
        guard let range, !format.isEmpty else { return "error: " + message }
        return SourceDiagnostic(message: message, range: range, in: format).rendered(sourceName: sourceName)
    }

    public var description: String { rendered() }
}

extension PredicateEvaluationError: PredicateTextError {
    /// The error under the line of the format it was raised in (or of
    /// `text`, when the error has no format).
    ///
    /// - Parameters:
    ///   - text: The predicate's text, used when the error did not keep its format.
    ///   - sourceName: The name shown for the source.
    /// - Returns: The diagnostic, as ``rendered(sourceName:)`` gives it.
    public func rendered(in text: String, sourceName: String) -> String {
        guard format.isEmpty, let range else { return rendered(sourceName: sourceName) }
        return SourceDiagnostic(message: message, range: range, in: text).rendered(sourceName: sourceName)
    }
}

extension PredicateEvaluationError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
