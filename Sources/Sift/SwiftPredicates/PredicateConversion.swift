// The library: Foundation's `#Predicate` (a `Predicate<Root>`, a tree of
// `PredicateExpressions` values) converted to the format language, so that it
// goes through the same parser, binder, optimizer and lowerings as text.
//
// Each expression type Sift understands conforms to
// `SwiftPredicateExpression` (PredicateExpressions+Conversion.swift),
// conditionally on its operands, so a tree whose every node converts is
// found by one dynamic cast of its root and walked with static dispatch
// below it. Captured values become format arguments (`%@`), so a predicate's
// text is the same for every value it captures: its shape, which the store
// compiles once. What does not convert is a `PredicateConversionError`
// naming the innermost expression type and what to write instead.

import Foundation
import SiftValues

/// Why a Swift `Predicate` could not be converted to a Sift predicate.
///
/// ```swift
/// do {
///     _ = try FormatPredicate(#Predicate<Person> { $0.name is String })
/// } catch {
///     print(error)   // the expression TypeCheck<…> has no Sift form: …
/// }
/// ```
public struct PredicateConversionError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Hashable, Sendable {
        /// An expression type Sift does not convert, with what to write instead.
        case unsupportedExpression(type: String, instead: String)
        /// A key path that names no attribute or relationship (a computed property, say).
        case unnamedKeyPath(String)
        /// A captured value of a type predicates do not hold.
        case unsupportedValue(type: String)
        /// A construct used where the format language cannot take it.
        case unsupportedUse(String)
        /// The converted predicate does not compile (the model refuses a name, say).
        case compile(String)
    }

    /// What went wrong.
    public let reason: Reason

    /// An error for `reason`.
    ///
    /// - Parameter reason: What went wrong.
    public init(_ reason: Reason) {
        self.reason = reason
    }

    /// The error as a sentence.
    public var description: String {
        switch reason {
        case .unsupportedExpression(let type, let instead):
            "the expression \(type) has no Sift form: \(instead)"
        case .unnamedKeyPath(let keyPath):
            "the key path \(keyPath) names no attribute or relationship: use a stored property, an @Managed property "
                + "or a property whose name is the model's"
        case .unsupportedValue(let type):
            "a captured value of type \(type) cannot be a predicate's value: capture a string, number, date, UUID, "
                + "data, Boolean, or an array or optional of them"
        case .unsupportedUse(let message):
            message
        case .compile(let message):
            "the converted predicate does not compile: \(message)"
        }
    }
}

/// A `PredicateExpressions` type Sift converts to its format language.
///
/// Foundation's expression types conform when their operands do; you need not
/// conform types of your own, and the requirement is not meant to be called
/// directly: convert a whole predicate with ``FormatPredicate/init(_:)``.
public protocol SwiftPredicateExpression {
    /// The expression in Sift's format language.
    ///
    /// - Parameter converter: The conversion under way: its variables, format arguments and key path names.
    /// - Returns: The converted term.
    /// - Throws: `PredicateConversionError` when the expression, or one below it, has no Sift form.
    func siftTerm(_ converter: inout SwiftPredicateConverter) throws(PredicateConversionError) -> SwiftPredicateTerm

    /// Collects what the expression's conversion depends on, and its captured values, so that a predicate of
    /// the same shape is converted once.
    ///
    /// - Parameter shape: The shape walked so far.
    func siftShape(_ shape: inout SwiftPredicateShape)
}

extension SwiftPredicateExpression {
    /// An expression with no shape of its own: a predicate holding it converts anew each time.
    ///
    /// - Parameter shape: The shape walked so far.
    public func siftShape(_ shape: inout SwiftPredicateShape) {
        shape.refuse()
    }
}

/// A converted expression: its text in the format language and what kind of
/// term it is (produced by ``SwiftPredicateExpression/siftTerm(_:)``).
public struct SwiftPredicateTerm: Sendable {
    package enum Kind: Sendable {
        /// A key path: `SELF`, `name`, `department.name`, `$v1.age`.
        case keyPath
        /// A value expression, parenthesized where it needs to be.
        case expression
        /// A condition.
        case predicate
        /// A condition over an optional: true only where `guardText` is not nil.
        case optionalPredicate(guardText: String)
        /// A captured value, not yet written as an argument.
        case constant(PredicateValue)
        /// `caseInsensitiveCompare` of two value texts, waiting for its `== .orderedSame`.
        case caseInsensitiveComparison(String, String)
        /// A range from two value texts.
        case range(lower: String, upper: String, closed: Bool)
        /// A captured range.
        case constantRange(lower: PredicateValue, upper: PredicateValue, closed: Bool)
        /// A captured `ComparisonResult`.
        case comparisonResult(Int)
    }

    package var text: String
    package var kind: Kind
    /// The captured value a constant term is, by its number in walk order (for the shape cache).
    package var source: Int?

    package init(_ text: String, _ kind: Kind, source: Int? = nil) {
        self.text = text
        self.kind = kind
        self.source = source
    }
}

/// A conversion under way: the variables in scope, the format arguments
/// collected so far, and how key paths are named.
public struct SwiftPredicateConverter {
    /// The format arguments, in the order of their `%@`s.
    package var arguments: [PredicateValue] = []
    /// Which captured value each argument is (nil: one the shape cache cannot find again).
    package var argumentSources: [SwiftPredicateArgumentSource?] = []
    /// How many captured values the conversion has met, in walk order.
    package var capturedValues = 0
    /// The text each variable stands for.
    package var variables: [PredicateExpressions.VariableID: SwiftPredicateTerm] = [:]
    /// How many `$v` variables SUBQUERYs have declared.
    package var subqueryVariables = 0
    /// The attribute or relationship a key path names; nil when it names none.
    package let naming: (AnyKeyPath) -> String?
    /// How deep the conversion is, so a hostile tree cannot exhaust the stack.
    package var depth = 0

    package init(naming: @escaping (AnyKeyPath) -> String?) {
        self.naming = naming
    }

    /// The deepest tree converted.
    package static let maximumDepth = 200

    // MARK: Walking

    /// The term of an operand, found statically.
    package mutating func term(_ expression: some SwiftPredicateExpression) throws(PredicateConversionError)
        -> SwiftPredicateTerm
    {
        depth += 1
        defer { depth -= 1 }
        guard depth <= Self.maximumDepth else {
            throw PredicateConversionError(.unsupportedUse("the predicate nests deeper than \(Self.maximumDepth) expressions"))
        }
        return try expression.siftTerm(&self)
    }

    /// The term of an operand found by a dynamic cast (a predicate's root).
    package mutating func term(anyExpression expression: Any) throws(PredicateConversionError) -> SwiftPredicateTerm {
        guard let convertible = expression as? any SwiftPredicateExpression else {
            throw Self.refusal(of: expression)
        }
        return try term(convertible)
    }

    /// A new SUBQUERY variable, standing for the elements of a collection.
    package mutating func declareVariable(_ id: PredicateExpressions.VariableID) -> String {
        subqueryVariables += 1
        let name = "$v\(subqueryVariables)"
        variables[id] = SwiftPredicateTerm(name, .keyPath)
        return name
    }

    // MARK: Writing terms

    /// A placeholder for a captured value: `%@` once the text is done, with the value its argument. (A term's
    /// text may be written twice, `TERNARY(x != nil, x, 0)`: each placeholder then takes its value twice.)
    ///
    /// - Parameters:
    ///   - value: The argument.
    ///   - source: The captured value it is, and which part of it.
    package mutating func placeholder(_ value: PredicateValue, source: SwiftPredicateArgumentSource? = nil) -> String {
        arguments.append(value)
        argumentSources.append(source)
        return "\u{0}\(arguments.count - 1)\u{0}"
    }

    /// The number of the next captured value met.
    package mutating func nextCapturedValue() -> Int {
        capturedValues += 1
        return capturedValues - 1
    }

    /// `text` with its placeholders written as `%@`, and their values in the order they appear.
    package func finished(_ text: String) -> (format: String, arguments: [PredicateValue]) {
        let (format, arguments, _) = finishedWithSources(text)
        return (format, arguments)
    }

    /// `text` with its placeholders written as `%@`, their values and sources in the order they appear.
    package func finishedWithSources(_ text: String)
        -> (format: String, arguments: [PredicateValue], sources: [SwiftPredicateArgumentSource?])
    {
        var format = "", ordered: [PredicateValue] = [], sources: [SwiftPredicateArgumentSource?] = []
        var index: Int?
        for character in text {
            if character == "\u{0}" {
                if let position = index {
                    ordered.append(arguments[position])
                    sources.append(argumentSources[position])
                    format += "%@"
                    index = nil
                } else {
                    index = 0
                }
            } else if let position = index, let digit = character.wholeNumberValue {
                index = position * 10 + digit
            } else {
                format.append(character)
            }
        }
        return (format, ordered, sources)
    }

    /// A term's text where a value goes.
    package mutating func value(_ term: SwiftPredicateTerm) throws(PredicateConversionError) -> String {
        switch term.kind {
        case .keyPath, .expression:
            return term.text
        case .constant(let value):
            if case .null = value { return "nil" }
            return placeholder(value, source: term.source.map { SwiftPredicateArgumentSource(value: $0, part: 0) })
        case .predicate:
            return "TERNARY(\(term.text), YES, NO)"
        case .optionalPredicate(let guardText):
            return "TERNARY(\(guardText) != nil, TERNARY(\(term.text), YES, NO), nil)"
        case .comparisonResult(let raw):
            return placeholder(.int(Int64(raw)), source: term.source.map { SwiftPredicateArgumentSource(value: $0, part: 0) })
        case .caseInsensitiveComparison:
            throw PredicateConversionError(.unsupportedUse(
                "caseInsensitiveCompare(_:) converts only when compared with == or != to a ComparisonResult"))
        case .range, .constantRange:
            throw PredicateConversionError(.unsupportedUse("a range converts only as the range of contains(_:) or ~="))
        }
    }

    /// A captured range's bound where a value goes.
    ///
    /// - Parameters:
    ///   - value: The bound.
    ///   - source: The captured range's number.
    ///   - part: 0 for the lower bound, 1 for the upper.
    package mutating func bound(_ value: PredicateValue, of source: Int?, part: Int) -> String {
        if case .null = value { return "nil" }
        return placeholder(value, source: source.map { SwiftPredicateArgumentSource(value: $0, part: part) })
    }

    /// A term's text where a condition goes.
    package mutating func predicate(_ term: SwiftPredicateTerm) throws(PredicateConversionError) -> String {
        switch term.kind {
        case .predicate:
            return term.text
        case .optionalPredicate(let guardText):
            return "(\(guardText) != nil AND \(term.text))"
        case .constant(.bool(let truth)):
            return truth ? "TRUEPREDICATE" : "FALSEPREDICATE"
        default:
            return "\(try value(term)) == YES"
        }
    }

    /// A key path term extended by the attribute or relationship `keyPath` names.
    package func extend(_ root: SwiftPredicateTerm, by keyPath: AnyKeyPath) throws(PredicateConversionError) -> SwiftPredicateTerm {
        guard case .keyPath = root.kind else {
            throw PredicateConversionError(.unsupportedUse(
                "the key path \(keyPath) is read from a computed value; the format language reads key paths only from "
                    + "the predicate's input or a collection's element"))
        }
        guard let name = naming(keyPath) else { throw PredicateConversionError(.unnamedKeyPath("\(keyPath)")) }
        let escaped = Self.escaped(name)
        return SwiftPredicateTerm(root.text == "SELF" ? escaped : root.text + "." + escaped, .keyPath)
    }

    /// A name as the format language must write it: with `#` when it is a reserved word.
    static func escaped(_ name: String) -> String {
        reservedNames.contains(name.uppercased()) ? "#" + name : name
    }

    /// The format language's reserved words (SiftSyntax's `Keyword`).
    static let reservedNames: Set<String> = [
        "AND", "OR", "NOT", "ANY", "ALL", "SOME", "NONE", "IN", "LIKE", "MATCHES", "BEGINSWITH", "ENDSWITH", "CONTAINS",
        "BETWEEN", "NULL", "NIL", "SELF", "TRUE", "FALSE", "YES", "NO", "TRUEPREDICATE", "FALSEPREDICATE",
        "UTI-CONFORMS-TO", "UTI-EQUALS",
    ]

    // MARK: Refusals

    /// The error for an expression that does not convert: names its innermost
    /// refused expression (a node whose operands all convert, or a leaf).
    package static func refusal(of expression: Any) -> PredicateConversionError {
        var refused: Any = expression
        // An expression refused because an operand is: look for that operand.
        search: while true {
            for child in Mirror(reflecting: refused).children where isExpression(child.value) {
                if !(child.value is any SwiftPredicateExpression) {
                    refused = child.value
                    continue search
                }
            }
            break
        }
        let type = String(describing: Swift.type(of: refused))
        return PredicateConversionError(.unsupportedExpression(type: type, instead: advice(for: type)))
    }

    /// Whether `value` is an expression of a predicate.
    static func isExpression(_ value: Any) -> Bool {
        value is any PredicateExpression
    }

    /// What to write instead of an expression type Sift does not convert.
    static func advice(for type: String) -> String {
        let name = type.split(separator: "<").first.map(String.init) ?? type
        switch name {
        case "ConditionalCast", "ForceCast", "TypeCheck":
            return "casts and type checks have no form in a model's predicate; compare the property itself, "
                + "or fetch the subentity by its own entity"
        case "PredicateEvaluate", "ExpressionEvaluate":
            return "a predicate or expression evaluated inside another cannot be converted (on Linux Foundation "
                + "cannot build one either); combine format predicates with FormatPredicate.and(_:) or .or(_:)"
        case "StringContainsRegex":
            return "write the pattern as a format string: FormatPredicate(format: \"name MATCHES %@\", pattern)"
        case "DictionaryKeySubscript", "DictionaryKeyDefaultValueSubscript":
            return "a model's objects hold no dictionaries; write a format string with a key path instead"
        case "CollectionRangeSubscript":
            return "slices of a collection have no form; use count, contains(where:) or filter(_:)"
        case "SequenceContainsWhere", "SequenceAllSatisfy", "Filter":
            return "the collection must be a to-many key path or an array of values"
        default:
            return "write the predicate as a format string with FormatPredicate(format:) instead"
        }
    }
}

// MARK: Converting a whole predicate

extension SwiftPredicateConverter {
    /// The format text and arguments of `predicate`.
    ///
    /// - Parameters:
    ///   - predicate: A Swift predicate on one input.
    ///   - naming: The attribute or relationship each key path names; nil for one that names none.
    /// - Returns: The predicate in the format language, with its captured values as `%@` arguments in order.
    /// - Throws: `PredicateConversionError` when an expression has no Sift form or a key path names nothing.
    package static func convert<Root>(_ predicate: Predicate<Root>, naming: @escaping (AnyKeyPath) -> String?,
                                      cache: SwiftPredicateShapeCache? = nil)
        throws(PredicateConversionError) -> (format: String, arguments: [PredicateValue])
    {
        let input: PredicateExpressions.Variable<Root> = predicate.variable
        guard let cache, let expression = predicate.expression as? any SwiftPredicateExpression else {
            return try convert(predicate.expression, input: input.key, naming: naming).conversion
        }
        // The shape: found by a walk that only collects, so a predicate built again with new captured values
        // takes its text and argument recipe from the first conversion of its shape.
        var shape = SwiftPredicateShape()
        shape.declare(input.key)
        shape.walk(expression)
        let key = shape.isComplete ? SwiftPredicateShapeCache.Key(root: ObjectIdentifier(type(of: expression)),
                                                                   atoms: shape.atoms) : nil
        if let key, let cached = cache.conversion(key, shape: shape) {
            if cache.verifies {
                let fresh = try convert(predicate.expression, input: input.key, naming: naming).conversion
                if fresh.format != cached.format || fresh.arguments != cached.arguments {
                    cache.mismatches.withLock { $0.append("cached \(cached), converted \(fresh)") }
                    return fresh
                }
            }
            return cached
        }
        let (conversion, sources, met) = try convert(predicate.expression, input: input.key, naming: naming)
        // Cached only when every argument is a captured value of the walk's, and the conversion met the same
        // captured values in the same order as the walk.
        if let key, met == shape.valueCount {
            let found = sources.compactMap { $0 }
            if found.count == sources.count,
               zip(found, conversion.arguments).allSatisfy({ source, argument in shape.part(source) == argument })
            {
                cache.keep(key, format: conversion.format, sources: found)
            }
        }
        return conversion
    }

    /// The conversion of an expression whose input is the variable `input`, with each argument's source and the
    /// number of captured values met.
    private static func convert(_ expression: Any, input: PredicateExpressions.VariableID,
                                naming: @escaping (AnyKeyPath) -> String?)
        throws(PredicateConversionError)
        -> (conversion: (format: String, arguments: [PredicateValue]), sources: [SwiftPredicateArgumentSource?], met: Int)
    {
        var converter = SwiftPredicateConverter(naming: naming)
        converter.variables[input] = SwiftPredicateTerm("SELF", .keyPath)
        let root = try converter.term(anyExpression: expression)
        let (format, arguments, sources) = converter.finishedWithSources(try converter.predicate(root))
        return ((format, arguments), sources, converter.capturedValues)
    }

    /// The name a key path of a stored property has: its property's, as the
    /// key path prints it (`\Person.age` names `age`); nil for a computed
    /// property, or a path of several properties.
    ///
    /// - Parameter keyPath: A key path of one property.
    /// - Returns: The property's name, or nil.
    package static func propertyName(of keyPath: AnyKeyPath) -> String? {
        let text = "\(keyPath)"
        let root = "\\" + String(describing: Swift.type(of: keyPath).rootType) + "."
        guard text.hasPrefix(root) else { return nil }
        let name = text.dropFirst(root.count)
        guard let first = name.first, first.isLetter || first == "_",
              name.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "_" }) else { return nil }
        return String(name)
    }
}
