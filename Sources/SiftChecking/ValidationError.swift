// Stage 4 (checking): the catalog of validation errors.
//
// A predicate that parses can still not fit the model. Each such error is
// typed, carries the source range of the construct at fault, and says how to
// fix the predicate. Every message is written here, once.

import Foundation
import SiftModel
import SiftSyntax
import SiftTree
import SiftValues

/// Why a predicate does not fit the model.
public enum ValidationErrorReason: Hashable, Sendable {
    /// The model has no entity with the name given: the entity a predicate,
    /// expression or batch update is bound for, or the entity of an object
    /// reference in a predicate.
    case unknownEntity(String)
    /// A key that names no attribute or relationship of the entity, with
    /// the nearest name when one is close enough to be a likely typo.
    case unknownKey(String, entity: String, suggestion: String?)
    /// A property only a subentity declares, on a fetch of its ancestor.
    case subentityKey(String, entity: String, subentity: String)
    /// A transient attribute in a predicate a store runs: the store holds no value of it.
    case transientAttribute(String, entity: String)
    /// A key path that goes on with `key` after an attribute (or after
    /// `@count`): only relationships can be followed with `.`.
    case keyPathContinuesPastAttribute(attribute: String, key: String)
    /// A collection (the key path given) compared as if it were one value:
    /// it needs `ANY`, `ALL` or `NONE`, an aggregate, or a `SUBQUERY`.
    case collectionNeedsQuantifier(String)
    /// A quantifier (`ANY`, `ALL`, `NONE`) whose left side is not a
    /// collection.
    case quantifierNeedsCollection(Quantifier)
    /// A comparison of values of two types that the operator cannot compare
    /// (left type, operator, right type), such as a date with a string.
    case incomparableTypes(ValueType, ComparisonOperator, ValueType)
    /// Comparison options (`[c]`, `[d]`, …), which apply to strings only, on
    /// a comparison of values of another type.
    ///
    /// No longer thrown: options on values that are not strings change
    /// nothing, as with Apple, and the checker reports a warning instead.
    case optionsNeedStrings(ComparisonOptions, found: ValueType)
    /// A string operator (such as `BEGINSWITH`, `LIKE` or `MATCHES`) with an
    /// operand that is not a string.
    case operatorNeedsStrings(ComparisonOperator, found: ValueType)
    /// A `MATCHES` pattern that is not a valid regular expression, with why.
    case invalidRegularExpression(pattern: String, reason: String)
    /// `BETWEEN` without exactly two bounds: `found` is how many were given,
    /// or nil when its right side is not a list of bounds.
    case betweenNeedsTwoBounds(found: Int?)
    /// An aggregate (the operator or function given, such as `@sum`) over
    /// values it cannot aggregate: sums and averages need numbers, minimums
    /// and maximums values with an order.
    case aggregateNeedsNumbers(String, found: ValueType)
    /// A collection operator (the one given, such as `@avg`) after something
    /// that is not a collection.
    case aggregateNeedsCollection(String)
    /// A collection operator (a key starting with `@`) that is not one
    /// Sift knows.
    case unknownCollectionOperator(String)
    /// A call of a function that is not built in or registered, with the
    /// nearest name when one is close enough to be a likely typo.
    case unknownFunction(String, suggestion: String?)
    /// A function called with the wrong number of arguments: `expected`
    /// says, in words, what it takes; `found` is how many were given.
    case wrongArgumentCount(function: String, expected: String, found: Int)
    /// A function, `CAST` or set operator given an argument of a type it
    /// does not take: `expected` says, in words, what it needs.
    case wrongArgumentType(function: String, expected: String, found: ValueType)
    /// An arithmetic operator whose operands (of the two types given) are
    /// not both numbers; a unary minus gives its operand's type twice.
    case arithmeticNeedsNumbers(BinaryOperator, ValueType, ValueType)
    /// A `$variable` (named without its `$`) that has no value.
    case unboundVariable(String)
    /// A `SUBQUERY` whose first argument is not a collection of objects.
    case subqueryNeedsObjects(found: ValueType)
    /// A `CAST` to a type other than `NSDate`, `NSNumber` or `NSString`
    /// (the type name given).
    case unsupportedCast(String)
    /// A construct that the format language has but Sift does not support,
    /// described in words (such as an assignment, `$x := …`).
    case unsupported(String)
    /// Values of two types that do not mix (a number and a string) where
    /// one type is needed: the members of `{…}`, TERNARY's results.
    case mixedTypes(ValueType, ValueType, context: String)
    /// A result column or group key that is a collection (one value per row is needed).
    case needsOneValue(String, context: String)
    /// A column of a grouped fetch that is neither grouped nor an aggregate.
    case ungroupedColumn(String)
    /// MIN or MAX of values that have no order.
    case aggregateNeedsOrderedValues(String, found: ValueType)
    /// Two result columns with one name.
    case duplicateResultName(String)
    /// A `having` predicate or a sort key naming something the fetch does not return.
    case notFetched(String, context: String, fetched: [String])
    /// A batch update setting a property it cannot set (a relationship, a
    /// derived or transient attribute), with why.
    case cannotAssign(String, reason: String)
    /// A batch update setting an attribute to values of another type.
    case assignmentType(String, holds: AttributeType, found: ValueType)
}

/// An error in a predicate that parses but does not fit the model: an unknown
/// key, types that cannot be compared, a to-many key path without `ANY`, …
///
/// ```swift
/// let text = "department.nmae == 'Sales'"
/// let syntax = try PredicateParser.parse(text)             // it parses: the error comes from binding
/// do throws(PredicateValidationError) {
///     _ = try Binder(model: model).bind(syntax, entity: "Employee")
/// } catch {
///     print(error.message)             // 'Department' has no attribute or relationship named 'nmae'
///     print(error.hint ?? "")          // did you mean 'name'?
///     print(error.rendered(in: text))  // the message, the line of text, carets under "department.nmae", the hint
/// }
/// ```
public struct PredicateValidationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What is wrong.
    public var reason: ValidationErrorReason
    /// Where, in the predicate's text (empty for trees built in code).
    public var range: SourceRange

    /// Creates a validation error.
    ///
    /// - Parameters:
    ///   - reason: What is wrong.
    ///   - range: Where, in the predicate's text; empty for trees built in code.
    public init(_ reason: ValidationErrorReason, range: SourceRange) {
        self.reason = reason
        self.range = range
    }

    /// The message, in one line.
    public var message: String {
        switch reason {
        case .unknownEntity(let name):
            return "the model has no entity named '\(name)'"
        case .unknownKey(let key, let entity, _):
            return "'\(entity)' has no attribute or relationship named '\(key)'"
        case .transientAttribute(let key, let entity):
            return "'\(key)' is a transient attribute of '\(entity)': the store holds no value of it to compare"
        case .subentityKey(let key, let entity, let subentity):
            return "'\(key)' belongs to '\(subentity)', a subentity of '\(entity)': objects of '\(entity)' "
                + "that are not '\(subentity)' have no '\(key)'"
        case .keyPathContinuesPastAttribute(let attribute, let key):
            return "the key path continues with '\(key)' after the attribute '\(attribute)', which is not a relationship"
        case .collectionNeedsQuantifier(let path):
            return "'\(path)' is a collection, but the comparison needs one value"
        case .quantifierNeedsCollection(let quantifier):
            return "\(quantifier.rawValue) needs a collection on the left of the comparison"
        case .incomparableTypes(let left, let op, let right):
            return "cannot compare \(Self.article(left)) with \(Self.article(right)) using \(op.rawValue)"
        case .optionsNeedStrings(let options, let found):
            return "the options \(options) apply to strings, but the operands are \(Self.article(found))"
        case .operatorNeedsStrings(let op, let found):
            return "\(op.rawValue) compares strings, but an operand is \(Self.article(found))"
        case .invalidRegularExpression(let pattern, let reason):
            return "invalid regular expression '\(pattern)': \(reason)"
        case .betweenNeedsTwoBounds(let found):
            if let found { return "BETWEEN needs exactly two bounds, but \(found) \(found == 1 ? "was" : "were") given" }
            return "BETWEEN needs two bounds, as in {30, 40}"
        case .aggregateNeedsNumbers(let op, let found):
            return "\(op) needs numbers, but the values are \(Self.plural(found))"
        case .aggregateNeedsCollection(let op):
            return "\(op) needs a collection before it, such as a to-many relationship"
        case .unknownCollectionOperator(let op):
            return "unknown collection operator '\(op)'"
        case .unknownFunction(let name, _):
            return "unknown function '\(name)'"
        case .wrongArgumentCount(let function, let expected, let found):
            return "\(function) takes \(expected), but \(found) \(found == 1 ? "was" : "were") given"
        case .wrongArgumentType(let function, let expected, let found):
            return "\(function) needs \(expected), but its argument is \(Self.article(found))"
        case .arithmeticNeedsNumbers(let op, let left, let right):
            return "'\(op.rawValue)' needs numbers, but its operands are \(Self.article(left)) and \(Self.article(right))"
        case .unboundVariable(let name):
            return "the variable '$\(name)' has no value"
        case .subqueryNeedsObjects(let found):
            return "SUBQUERY needs a collection of objects, but its first argument is \(Self.article(found))"
        case .unsupportedCast(let type):
            return "CAST to '\(type)' is not supported: use \"NSDate\", \"NSNumber\" or \"NSString\""
        case .unsupported(let what):
            return "\(what) is not supported"
        case .mixedTypes(let a, let b, let context):
            return "values of different types in \(context): \(Self.article(a)) and \(Self.article(b)); use values of one type"
        case .needsOneValue(let path, let context):
            return "\(context) needs one value per object, but '\(path)' is a collection"
        case .ungroupedColumn(let name):
            return "'\(name)' is fetched in a grouped fetch, but it is neither grouped by nor an aggregate"
        case .aggregateNeedsOrderedValues(let op, let found):
            return "\(op) needs values with an order (numbers, strings, dates), but the values are \(Self.plural(found))"
        case .duplicateResultName(let name):
            return "two results are named '\(name)'"
        case .notFetched(let name, let context, let fetched):
            return "\(context) names '\(name)', which the fetch does not return (it returns \(fetched.map { "'\($0)'" }.joined(separator: ", ")))"
        case .cannotAssign(let name, let reason):
            return "a batch update cannot set '\(name)': \(reason)"
        case .assignmentType(let name, let holds, let found):
            return "'\(name)' holds \(Self.plural(ValueType(holds))) (\(holds)), but the expression gives \(Self.article(found))"
        }
    }

    /// How to fix the predicate, when there is advice to give.
    public var hint: String? {
        switch reason {
        case .unknownKey(_, _, let suggestion):
            return suggestion.map { "did you mean '\($0)'?" }
        case .transientAttribute:
            return "fetch the objects, then filter them in memory with FormatPredicate, or make the attribute stored"
        case .subentityKey(_, _, let subentity):
            return "fetch '\(subentity)' instead, or test each object's own properties"
        case .unknownFunction(_, let suggestion):
            return suggestion.map { "did you mean '\($0)'?" }
        case .collectionNeedsQuantifier(let path):
            return "write ANY \(path) (or ALL, NONE), \(path).@count, or a SUBQUERY"
        case .keyPathContinuesPastAttribute:
            return "only relationships can be followed with '.'"
        case .incomparableTypes(.date, _, .integer), .incomparableTypes(.date, _, .double),
             .incomparableTypes(.integer, _, .date), .incomparableTypes(.double, _, .date):
            return "to compare a date with a number of seconds since 2001, write CAST(seconds, \"NSDate\")"
        case .incomparableTypes(.string, _, .integer), .incomparableTypes(.string, _, .double),
             .incomparableTypes(.integer, _, .string), .incomparableTypes(.double, _, .string):
            return "quote the number to compare strings ('3'), or compare a number attribute"
        case .unboundVariable(let name):
            return "give it a value with substituting([\"\(name)\": value]) or --var \(name)=VALUE"
        case .quantifierNeedsCollection:
            return "remove the quantifier, or put a to-many key path on the left"
        case .needsOneValue(let path, _):
            return "aggregate it per object, as in \(path).@count, or fetch the other entity"
        case .ungroupedColumn:
            return "add it to the properties to group by, or aggregate it, as in max(…)"
        case .duplicateResultName:
            return "name one of them with 'as NAME'"
        case .assignmentType(_, .integer16, .double), .assignmentType(_, .integer32, .double),
             .assignmentType(_, .integer64, .double):
            return "an integer attribute takes integer expressions: Sift does not round a double for you"
        default:
            return nil
        }
    }

    public var description: String { "error: \(message)" + (hint.map { " (\($0))" } ?? "") }

    /// The error shown under the line of `text` it is about.
    ///
    /// - Parameters:
    ///   - text: The predicate's text the error's range is in.
    ///   - sourceName: The name shown for the source, such as a file's path
    ///     (`"predicate"` by default).
    ///   - firstLine: The line number of the text's first line in that source
    ///     (1 by default).
    /// - Returns: The diagnostic: the message, the line of `text` and carets
    ///   under the range, and the hint when there is one.
    public func rendered(in text: String, sourceName: String = "predicate", firstLine: Int = 1) -> String {
        SourceDiagnostic(message: message, range: range, in: text, note: hint)
            .rendered(sourceName: sourceName, firstLine: firstLine)
    }

    static func article(_ type: ValueType) -> String {
        switch type {
        case .null: "nil"
        case .integer: "an integer"
        case .object(let entity): "\(["A", "E", "I", "O", "U"].contains(entity.prefix(1)) ? "an" : "a") \(entity) object"
        case .any: "a value"
        case .collection: "a \(type)"
        default: "a \(type)"
        }
    }

    static func plural(_ type: ValueType) -> String {
        switch type {
        case .string: "strings"
        case .date: "dates"
        case .object(let entity): "\(entity) objects"
        default: "\(type) values"
        }
    }
}

extension PredicateValidationError: PredicateTextError {
    /// The error under the line of `text` it is about.
    ///
    /// - Parameters:
    ///   - text: The predicate's text the error's range is in.
    ///   - sourceName: The name shown for the source.
    /// - Returns: The diagnostic, as ``rendered(in:sourceName:firstLine:)`` gives it.
    public func rendered(in text: String, sourceName: String) -> String {
        rendered(in: text, sourceName: sourceName, firstLine: 1)
    }
}

extension PredicateValidationError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}

extension PredicateValidationError {
    /// The name among `candidates` nearest to `name`, when one is near enough
    /// to be a likely typo: the "did you mean" of the binder's diagnostics,
    /// for tools that check names of their own (an entity, a template).
    ///
    /// ```swift
    /// PredicateValidationError.suggestion(for: "Employe", among: ["Department", "Employee"])   // "Employee"
    /// ```
    ///
    /// - Parameters:
    ///   - name: The name given.
    ///   - candidates: The names it may have meant.
    /// - Returns: The nearest candidate by edit distance (ignoring case), or nil when none is near enough.
    public static func suggestion(for name: String, among candidates: [String]) -> String? {
        BindingState.closest(to: name, in: candidates)
    }
}
