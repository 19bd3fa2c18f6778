// Sift: the pipeline in one call — parse, bind, and compile for memory.

import Foundation
import SiftChecking
import SiftMemory
import SiftModel
import SiftOptimizer
import SiftSyntax
import SiftTree
import SiftValues

/// An error in a predicate: in its text, or in how it fits the model.
///
/// ```swift
/// let compiler = PredicateCompiler(model: model)
/// let text = "agee > 40"
/// do {
///     _ = try compiler.bind(text, entity: "Employee")
/// } catch {
///     print(error.kind)                  // validation
///     print(error.message)               // 'Employee' has no attribute or relationship named 'agee' (did you mean 'age'?)
///     print(error.rendered(in: text))    // the message, the line of `text` with carets under `agee`, the hint
/// }
/// ```
public enum PredicateCompileError: PredicateTextError, Hashable, Sendable {
    /// The text or its arguments cannot be parsed.
    case syntax(PredicateSyntaxError)
    /// The predicate parses but does not fit the model.
    case validation(PredicateValidationError)

    /// "syntax" or "validation".
    public var kind: String {
        switch self {
        case .syntax: "syntax"
        case .validation: "validation"
        }
    }

    /// The message, in one line.
    public var message: String {
        switch self {
        case .syntax(let e): e.message
        case .validation(let e): e.message + (e.hint.map { " (\($0))" } ?? "")
        }
    }

    /// Where the problem is.
    public var range: SourceRange {
        switch self {
        case .syntax(let e): e.range
        case .validation(let e): e.range
        }
    }

    /// The error shown under the line of `text` it is about.
    ///
    /// - Parameters:
    ///   - text: The predicate's text, the one that was compiled, for a validation error's line (a syntax
    ///     error shows the line it kept).
    ///   - sourceName: The name the diagnostic gives the text.
    /// - Returns: The error as a diagnostic: the message, then the line of `text` with a caret under the place.
    public func rendered(in text: String, sourceName: String) -> String {
        switch self {
        case .syntax(let e): e.rendered(sourceName: sourceName)
        case .validation(let e): e.rendered(in: text, sourceName: sourceName)
        }
    }

    public var description: String {
        switch self {
        case .syntax(let e): e.description
        case .validation(let e): e.description
        }
    }
}

/// Parses, binds and compiles predicates for one model.
///
/// ```swift
/// let compiler = PredicateCompiler(model: dataSet.model)
/// let filter = try compiler.memoryPredicate("age > %@ AND department.name == %@",
///                                           arguments: [40, "Sales"], entity: "Employee",
///                                           domain: RowNodeDomain(cache: cache))
/// let matches = try filter.filter(cache.snapshot().nodes(entity: 1))
/// ```
public struct PredicateCompiler: Sendable {
    /// The model predicates are checked against.
    public let model: DataModel
    /// The rewrites applied after binding (`nil`: none).
    public var optimizer: Optimizer?
    /// Functions the application registered.
    public var functions: FunctionRegistry?
    /// Whether every attribute a predicate names must be stored (a store's
    /// fetches: see `Binder.requiresStoredAttributes`).
    public var requiresStoredAttributes = false

    /// A compiler for `model`, optimizing with `optimizer` (the standard
    /// rules unless told otherwise), with the application's functions.
    ///
    /// - Parameters:
    ///   - model: The model predicates are checked against.
    ///   - optimizer: The rewrites to apply after binding; nil for none.
    ///   - functions: The application's functions predicates may call; nil for the built-in ones alone.
    public init(model: DataModel, optimizer: Optimizer? = .standard, functions: FunctionRegistry? = nil) {
        self.model = model
        self.optimizer = optimizer
        self.functions = functions
    }

    /// Parses `text` with its format arguments and binds it to `entity`,
    /// giving `$variables` the values in `variables`, then optimizes it.
    ///
    /// - Parameters:
    ///   - text: The predicate's format string.
    ///   - arguments: The values of its format specifiers, in order.
    ///   - entity: The name of the entity whose objects the predicate tests.
    ///   - variables: The values of its `$variables`, by name without the `$`.
    /// - Returns: The bound predicate, optimized with `optimizer` when there is one.
    /// - Throws: `PredicateCompileError`: `.syntax` when `text` or its arguments do not parse, `.validation`
    ///   when the predicate does not fit the model (an unknown entity or key, types an operator cannot compare,
    ///   …).
    public func bind(_ text: String, arguments: [PredicateValue] = [], entity: String,
                     variables: [String: PredicateValue] = [:]) throws(PredicateCompileError) -> BoundPredicate {
        var warnings: [PredicateWarning] = []
        return try bind(text, arguments: arguments, entity: entity, variables: variables, warnings: &warnings)
    }

    /// Parses, binds and optimizes a predicate as
    /// `bind(_:arguments:entity:variables:)` does, and adds
    /// to `warnings` what it says that Apple accepts but is almost always a
    /// mistake: an unknown escape in a string (`'\d'` reads as `d`), options
    /// on values that are not strings (`age ==[c] 41`).
    ///
    /// - Parameters:
    ///   - text: The predicate's format string.
    ///   - arguments: The values of its format specifiers, in order.
    ///   - entity: The name of the entity whose objects the predicate tests.
    ///   - variables: The values of its `$variables`, by name without the `$`.
    ///   - warnings: Where the predicate's warnings are added, in the order met.
    /// - Returns: The bound predicate, optimized with `optimizer` when there is one.
    /// - Throws: `PredicateCompileError`: `.syntax` when `text` or its arguments do not parse, `.validation`
    ///   when the predicate does not fit the model.
    public func bind(_ text: String, arguments: [PredicateValue] = [], entity: String,
                     variables: [String: PredicateValue] = [:],
                     warnings: inout [PredicateWarning]) throws(PredicateCompileError) -> BoundPredicate {
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(text, arguments: arguments, warnings: &warnings)
        } catch {
            throw .syntax(error)
        }
        return try bind(syntax, entity: entity, variables: variables, warnings: &warnings)
    }

    /// Binds a parsed predicate to `entity`, giving `$variables` the values
    /// in `variables`, then optimizes it.
    ///
    /// - Parameters:
    ///   - syntax: The parsed predicate.
    ///   - entity: The name of the entity whose objects the predicate tests.
    ///   - variables: The values of its `$variables`, by name without the `$`.
    /// - Returns: The bound predicate, optimized with `optimizer` when there is one.
    /// - Throws: `PredicateCompileError.validation` when the predicate does not fit the model (an unknown
    ///   entity or key, types an operator cannot compare, …).
    public func bind(_ syntax: PredicateSyntax, entity: String,
                     variables: [String: PredicateValue] = [:]) throws(PredicateCompileError) -> BoundPredicate {
        var warnings: [PredicateWarning] = []
        return try bind(syntax, entity: entity, variables: variables, warnings: &warnings)
    }

    /// Binds a parsed predicate as
    /// `bind(_:entity:variables:)` does, and adds its
    /// warnings to `warnings` (options on values that are not strings).
    ///
    /// - Parameters:
    ///   - syntax: The parsed predicate.
    ///   - entity: The name of the entity whose objects the predicate tests.
    ///   - variables: The values of its `$variables`, by name without the `$`.
    ///   - warnings: Where the predicate's warnings are added, in the order met.
    /// - Returns: The bound predicate, optimized with `optimizer` when there is one.
    /// - Throws: `PredicateCompileError.validation` when the predicate does not fit the model.
    public func bind(_ syntax: PredicateSyntax, entity: String, variables: [String: PredicateValue] = [:],
                     warnings: inout [PredicateWarning]) throws(PredicateCompileError) -> BoundPredicate {
        let bound: BoundPredicate
        do {
            var binder = Binder(model: model, variables: variables, functions: functions)
            binder.requiresStoredAttributes = requiresStoredAttributes
            bound = try binder.bind(syntax, entity: entity, warnings: &warnings)
        } catch {
            throw .validation(error)
        }
        return optimizer?.optimize(bound) ?? bound
    }

    /// Parses, binds and compiles a predicate for evaluation in memory: the
    /// same as `FormatPredicate(format: text, argumentArray: arguments)`
    /// compiled with ``FormatPredicate/compiled(for:entity:domain:)``.
    ///
    /// - Parameters:
    ///   - text: The predicate's format string.
    ///   - arguments: The values of its format specifiers, in order.
    ///   - entity: The name of the entity whose objects the predicate tests.
    ///   - variables: The values of its `$variables`, by name without the `$`.
    ///   - domain: The evaluation domain whose items the predicate will test.
    /// - Returns: The bound, optimized predicate, compiled for `domain`.
    /// - Throws: `PredicateCompileError`: `.syntax` when `text` or its arguments do not parse, `.validation`
    ///   when the predicate does not fit the model.
    @inlinable
    public func memoryPredicate<Domain: EvaluationDomain>(
        _ text: String, arguments: [PredicateValue] = [], entity: String,
        variables: [String: PredicateValue] = [:], domain: Domain
    ) throws(PredicateCompileError) -> MemoryPredicate<Domain> {
        MemoryPredicate(try bind(text, arguments: arguments, entity: entity, variables: variables), domain: domain)
    }
}

extension PredicateCompileError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
