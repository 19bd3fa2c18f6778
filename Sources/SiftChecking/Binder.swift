// Stage 4 (checking): the binder.
//
// Turns a syntax tree into a bound tree for one entity of a model: resolves
// key paths to attributes and relationships (through to-one and to-many
// relationships, SELF and SUBQUERY variables), gives every node a type,
// converts constants, and rejects what does not fit with a typed error that
// points at the construct and says how to fix it.
//
// Inside a SUBQUERY, only the variable names the member being tested: bare
// keys and SELF still refer to the object the whole predicate is evaluated
// with, as in Apple's SUBQUERY.

import Foundation
import SiftModel
import SiftSyntax
import SiftTree
import SiftValues

/// Binds predicates to a model.
///
/// ```swift
/// let binder = Binder(model: model)
/// let bound = try binder.bind(PredicateParser.parse("ANY reports.age > 60"), entity: "Employee")
/// ```
public struct Binder: Sendable {
    /// The model key paths are resolved against.
    public let model: DataModel
    /// Values for `$variables`.
    public var variables: [String: PredicateValue]
    /// Functions the application registered, callable by name.
    public var functions: FunctionRegistry?
    /// Whether `$variables` without a value become parameters of a template
    /// (filled when it runs) rather than errors.
    public var allowsParameters: Bool
    /// Whether every attribute a predicate names must be one the store holds:
    /// set for predicates that stores run, where a transient attribute has
    /// no value to compare.
    public var requiresStoredAttributes = false
    /// The types of parameters known before their values (a compiled fetch's
    /// argument slots): such a parameter is bound with its type, not `any`,
    /// so it is checked as a constant of that type would be.
    package var parameterTypes: [String: ValueType] = [:]

    /// Creates a binder for `model`, with values for `$variables` and the
    /// application's functions.
    ///
    /// - Parameters:
    ///   - model: The model key paths are resolved against.
    ///   - variables: The values of `$variables`, by name without the `$`
    ///     (none by default).
    ///   - functions: The functions the application registered, callable by
    ///     name; nil (the default) when it registered none.
    ///   - allowsParameters: Whether a `$variable` without a value becomes a
    ///     parameter of a template rather than an error (false by default).
    public init(model: DataModel, variables: [String: PredicateValue] = [:], functions: FunctionRegistry? = nil,
                allowsParameters: Bool = false) {
        self.model = model
        self.variables = variables
        self.functions = functions
        self.allowsParameters = allowsParameters
    }

    /// A binder for predicates evaluated against plain values, with no model:
    /// `SELF` is the value, and every key of a key path is looked up when the
    /// predicate runs (`BoundExpression.Kind.key`).
    ///
    /// - Parameters:
    ///   - variables: The values of `$variables`, by name without the `$`
    ///     (none by default).
    ///   - functions: The functions the application registered, callable by
    ///     name; nil (the default) when it registered none.
    ///   - allowsParameters: Whether a `$variable` without a value becomes a
    ///     parameter of a template rather than an error (false by default).
    /// - Returns: A binder over `DataModel.empty`.
    public static func withoutModel(variables: [String: PredicateValue] = [:], functions: FunctionRegistry? = nil,
                                    allowsParameters: Bool = false) -> Binder {
        Binder(model: .empty, variables: variables, functions: functions, allowsParameters: allowsParameters)
    }

    /// Binds a predicate evaluated against plain values (see
    /// `withoutModel`), with where in the text each bound expression came
    /// from.
    ///
    /// - Parameter predicate: The parsed predicate.
    /// - Returns: The bound predicate, whose evaluated object has type `any`,
    ///   and the range in the text of each bound expression.
    /// - Throws: `PredicateValidationError` when the predicate does not bind:
    ///   an operator given operands it never takes, a `$variable` without a
    ///   value (unless `allowsParameters`), an unknown function, and the like.
    public func bindWithoutModel(_ predicate: PredicateSyntax) throws(PredicateValidationError)
        -> (BoundPredicate, [BoundExpression: SourceRange])
    {
        var warnings: [PredicateWarning] = []
        return try bindWithoutModel(predicate, warnings: &warnings)
    }

    /// Binds a predicate evaluated against plain values, as
    /// ``bindWithoutModel(_:)`` does, and adds its warnings to `warnings`
    /// (comparison options on a number, which change nothing).
    ///
    /// - Parameters:
    ///   - predicate: The parsed predicate.
    ///   - warnings: Where the predicate's warnings are added, in the order met.
    /// - Returns: The bound predicate, whose evaluated object has type `any`,
    ///   and the range in the text of each bound expression.
    /// - Throws: `PredicateValidationError` when the predicate does not bind,
    ///   as ``bindWithoutModel(_:)`` throws.
    public func bindWithoutModel(_ predicate: PredicateSyntax, warnings: inout [PredicateWarning])
        throws(PredicateValidationError) -> (BoundPredicate, [BoundExpression: SourceRange])
    {
        var state = makeState()
        state.isDynamic = true
        let bound = try state.predicate(predicate, self: BoundExpression(.evaluatedObject, type: .any))
        warnings += state.warnings
        return (bound, state.ranges)
    }

    /// Binds a predicate whose evaluated objects are of `entity`.
    ///
    /// - Parameters:
    ///   - predicate: The parsed predicate.
    ///   - entity: The name of the entity of the evaluated objects.
    /// - Returns: The bound predicate.
    /// - Throws: `PredicateValidationError` when the model has no such entity
    ///   or the predicate does not fit it: an unknown key, types that cannot be
    ///   compared, a to-many key path without a quantifier, and so on.
    public func bind(_ predicate: PredicateSyntax, entity: String) throws(PredicateValidationError) -> BoundPredicate {
        var warnings: [PredicateWarning] = []
        return try bind(predicate, entity: entity, warnings: &warnings)
    }

    /// Binds a predicate whose evaluated objects are of `entity`, as
    /// `bind(_:entity:)` does, and adds its warnings to `warnings`
    /// (comparison options on values that are not strings, which change
    /// nothing).
    ///
    /// - Parameters:
    ///   - predicate: The parsed predicate.
    ///   - entity: The name of the entity of the evaluated objects.
    ///   - warnings: Where the predicate's warnings are added, in the order met.
    /// - Returns: The bound predicate.
    /// - Throws: `PredicateValidationError` when the model has no such entity
    ///   or the predicate does not fit it, as `bind(_:entity:)` throws.
    public func bind(_ predicate: PredicateSyntax, entity: String, warnings: inout [PredicateWarning])
        throws(PredicateValidationError) -> BoundPredicate
    {
        guard model.entity(named: entity) != nil else {
            throw PredicateValidationError(.unknownEntity(entity), range: predicate.range)
        }
        var state = makeState()
        let bound = try state.predicate(predicate, self: BoundExpression(.evaluatedObject, type: .object(entity)))
        warnings += state.warnings
        return bound
    }

    func makeState() -> BindingState {
        var state = BindingState(model: model, values: variables)
        state.functions = functions
        state.allowsParameters = allowsParameters
        state.parameterTypes = parameterTypes
        state.requiresStoredAttributes = requiresStoredAttributes
        return state
    }

    /// Binds a predicate and returns, with the bound tree, where in the text
    /// each bound expression came from: later stages' errors (a construct SQL
    /// cannot express) use it to point at the source.
    ///
    /// - Parameters:
    ///   - predicate: The parsed predicate.
    ///   - entity: The name of the entity of the evaluated objects.
    /// - Returns: The bound predicate, and the range in the text of each bound
    ///   expression.
    /// - Throws: `PredicateValidationError` when the model has no such entity
    ///   or the predicate does not fit it, as `bind(_:entity:)` throws.
    public func bindWithSourceMap(_ predicate: PredicateSyntax, entity: String) throws(PredicateValidationError)
        -> (BoundPredicate, [BoundExpression: SourceRange])
    {
        guard model.entity(named: entity) != nil else {
            throw PredicateValidationError(.unknownEntity(entity), range: predicate.range)
        }
        var state = makeState()
        let bound = try state.predicate(predicate, self: BoundExpression(.evaluatedObject, type: .object(entity)))
        return (bound, state.ranges)
    }

    /// Binds an expression whose evaluated object is of `entity`, such as the
    /// key of a sort descriptor.
    ///
    /// - Parameters:
    ///   - expression: The parsed expression.
    ///   - entity: The name of the entity of the evaluated object.
    /// - Returns: The bound expression.
    /// - Throws: `PredicateValidationError` when the model has no such entity
    ///   or the expression does not fit it.
    public func bind(_ expression: ExpressionSyntax, entity: String) throws(PredicateValidationError) -> BoundExpression {
        guard model.entity(named: entity) != nil else {
            throw PredicateValidationError(.unknownEntity(entity), range: expression.range)
        }
        var state = makeState()
        return try state.expression(expression, self: BoundExpression(.evaluatedObject, type: .object(entity)))
    }
}

/// The functions a predicate may call by name, with what they take.
enum FunctionSignature {
    /// Takes one collection, or several values made into one.
    case collection
    /// Takes numbers.
    case numbers(Int)
    /// Takes integers.
    case integers(Int)
    /// Takes strings.
    case strings(Int)
    /// Takes nothing.
    case none

    static let byName: [String: (BuiltinFunction, FunctionSignature)] = [
        "sum": (.sum, .collection), "count": (.count, .collection), "min": (.min, .collection),
        "max": (.max, .collection), "average": (.average, .collection), "median": (.median, .collection),
        "mode": (.mode, .collection), "stddev": (.stddev, .collection),
        "sqrt": (.sqrt, .numbers(1)), "log": (.log, .numbers(1)), "ln": (.ln, .numbers(1)), "exp": (.exp, .numbers(1)),
        "floor": (.floor, .numbers(1)), "ceiling": (.ceiling, .numbers(1)), "abs": (.abs, .numbers(1)),
        "trunc": (.trunc, .numbers(1)), "modulus": (.modulus, .numbers(2)),
        "bitwiseAnd": (.bitwiseAnd, .integers(2)), "bitwiseOr": (.bitwiseOr, .integers(2)),
        "bitwiseXor": (.bitwiseXor, .integers(2)), "leftshift": (.leftshift, .integers(2)),
        "rightshift": (.rightshift, .integers(2)), "onesComplement": (.onesComplement, .integers(1)),
        "uppercase": (.uppercase, .strings(1)), "lowercase": (.lowercase, .strings(1)),
        "random": (.random, .none), "randomn": (.randomn, .integers(1)), "now": (.now, .none),
    ]
}

struct BindingState {
    let model: DataModel
    let values: [String: PredicateValue]
    /// SUBQUERY variables in scope, and the entity of the objects they hold.
    var scope: [String: String] = [:]
    /// Numbers the variables the binder makes for `map`.
    var nextVariable = 0
    /// Where each bound expression came from (the first place, when several
    /// are equal).
    var ranges: [BoundExpression: SourceRange] = [:]
    var functions: FunctionRegistry?
    var allowsParameters = false
    var parameterTypes: [String: ValueType] = [:]
    /// Whether attributes the store does not hold are errors.
    var requiresStoredAttributes = false
    /// Whether the predicate is bound without a model: keys are looked up
    /// when it runs.
    var isDynamic = false
    /// SUBQUERY variables in scope that hold plain values (bound without a model).
    var valueScope: Set<String> = []
    /// What the predicate says that Apple accepts but is almost always a
    /// mistake (options on numbers), in the order met.
    var warnings: [PredicateWarning] = []

    init(model: DataModel, values: [String: PredicateValue]) {
        self.model = model
        self.values = values
    }

    typealias Failure = PredicateValidationError

    // MARK: Predicates

    mutating func predicate(_ p: PredicateSyntax, self selfExpression: BoundExpression) throws(Failure) -> BoundPredicate {
        switch p.kind {
        case .constant(let value):
            return .constant(value)
        case .not(let operand):
            return .not(try predicate(operand, self: selfExpression))
        case .and(let operands):
            var bound: [BoundPredicate] = []
            for operand in operands { bound.append(try predicate(operand, self: selfExpression)) }
            return .and(bound)
        case .or(let operands):
            var bound: [BoundPredicate] = []
            for operand in operands { bound.append(try predicate(operand, self: selfExpression)) }
            return .or(bound)
        case .comparison(let c):
            return try comparison(c, range: p.range, self: selfExpression)
        }
    }

    mutating func comparison(_ c: ComparisonSyntax, range: SourceRange, self selfExpression: BoundExpression) throws(Failure)
        -> BoundPredicate
    {
        let op = c.operator
        if op == .conformsTo || op == .utiEquals {
            throw Failure(.unsupported("\(op.rawValue) (there are no uniform type identifiers on Linux)"), range: range)
        }
        var left = try expression(c.left, self: selfExpression)
        var rightSyntax = c.right
        if !isDynamic, op == .in, case .constant(.dictionary(let dictionary)) = c.right.kind {
            // `x IN %@` with a dictionary tests its values (as Apple's IN does), in the order of their keys.
            rightSyntax.kind = .constant(.array(dictionary.sorted { $0.key < $1.key }.map(\.value)))
        }
        var right = try expression(rightSyntax, self: selfExpression)

        // Collections compare as collections: `{1, 2} == %@` element by
        // element, as Apple's `isEqual:` compares arrays.
        let equality = c.quantifier == .direct && (op == .equalTo || op == .notEqualTo)
        if equality, let leftMembers = Self.members(left), let rightMembers = Self.members(right) {
            let equal = try elementwiseEqual(leftMembers, rightMembers, options: c.options, range: range)
            return op == .equalTo ? equal : .not(equal)
        }
        // Without a model, a value that is an array when it runs may equal one, and one that is not an
        // array is simply unequal to one (Apple's `isEqual:` across types: `{}[LAST] == {3}` on nil is
        // false, not an error).
        let comparesArrays = equality && isDynamic
            && (!left.type.isCollection && Self.members(right) != nil || !right.type.isCollection && Self.members(left) != nil)

        // Collections: a quantifier needs one on the left; without one, only
        // membership tests (x IN collection, collection CONTAINS x) and
        // BETWEEN's bounds may be collections.
        let leftIsMembership = c.quantifier == .direct && (op == .contains || comparesArrays) && left.type.isCollection
        if c.quantifier != .direct {
            guard left.type.isCollection || left.type == .any else {
                throw Failure(.quantifierNeedsCollection(c.quantifier), range: c.left.range)
            }
        } else if left.type.isCollection && !leftIsMembership {
            throw Failure(.collectionNeedsQuantifier(c.left.description), range: c.left.range)
        }
        if right.type.isCollection && op != .in && op != .between && !comparesArrays {
            throw Failure(.collectionNeedsQuantifier(c.right.description), range: c.right.range)
        }
        if comparesArrays {
            return .comparison(BoundComparison(left, op, options: c.options, right, quantifier: .direct))
        }

        let leftType = c.quantifier != .direct || leftIsMembership ? left.type.elementType : left.type
        switch op {
        case .between:
            let bounds: Int? = switch right.kind {
            case .list(let elements): elements.count
            case .constant(.array(let values)): values.count
            default: right.type == .any ? 2 : nil
            }
            guard bounds == 2 else { throw Failure(.betweenNeedsTwoBounds(found: bounds), range: c.right.range) }
            try checkComparable(leftType, op, right.type.elementType, range: range)
            right = convert(right, toMatch: leftType)
        case .in:
            if right.type.isCollection || right.type == .any {
                try checkComparable(leftType, .equalTo, right.type.elementType, range: range)
                right = convert(right, toMatch: leftType)
            } else {
                try checkStrings(op, leftType, right.type, range: range)
            }
        case .contains where leftIsMembership:
            try checkComparable(leftType, .equalTo, right.type, range: range)
            right = convert(right, toMatch: leftType)
        case .contains where isDynamic && leftType == .any && c.quantifier == .direct && !Self.isConstant(left):
            // An array on the left is membership, of a value of any type; a
            // string, a string search. Each value decides when it runs.
            break
        case .contains, .beginsWith, .endsWith, .like, .matches:
            try checkStrings(op, leftType, right.type, range: range)
            if op == .matches, case .constant(.string(let pattern)) = right.kind {
                do {
                    _ = try NSRegularExpression(pattern: pattern)
                } catch {
                    throw Failure(.invalidRegularExpression(pattern: pattern, reason: Self.regexReason(error)),
                                  range: c.right.range)
                }
            }
        default:
            try checkComparable(leftType, op, right.type, range: range)
            right = convert(right, toMatch: leftType)
            left = convert(left, toMatch: right.type)
        }
        var options = c.options
        if !options.isEmpty, op != .matches, !warnIfOptionsIgnored(options, leftType, right.type.elementType, range: range) {
            options = []
        }
        if c.quantifier == .direct, let exact = Self.exactComparison(left, op, right) { return exact }
        return .comparison(BoundComparison(left, op, options: options, right, quantifier: c.quantifier))
    }

    /// Apple ignores comparison options on values that are not strings; so
    /// does Sift, with a warning, when a type says they change nothing.
    ///
    /// - Returns: Whether the options may still change the comparison (a
    ///   string, or a value whose type is known only when it runs).
    mutating func warnIfOptionsIgnored(_ options: ComparisonOptions, _ leftType: ValueType, _ rightType: ValueType,
                                       range: SourceRange) -> Bool {
        let notString: ValueType? = Self.takesOptions(leftType) ? (Self.takesOptions(rightType) ? nil : rightType) : leftType
        guard let type = notString else { return true }
        warnings.append(PredicateWarning(.optionsIgnored(options: options.description, type: PredicateValidationError.article(type)),
                                         range: range))
        return leftType == .any || rightType == .any
    }

    /// Whether comparison options may change a comparison of values of this
    /// type: strings, and values whose type is known only when they run.
    static func takesOptions(_ type: ValueType) -> Bool {
        type == .string || type == .null || type == .any
    }

    /// A comparison of an integer with a double as its exact values, for a
    /// constant no value of the other side's type equals exactly: a double
    /// expression against an integer past 2^53 (9223372036854775807 has no
    /// double), or an integer expression against a double past the 64-bit
    /// integers. The comparison is rewritten against the nearest value of the
    /// other side's type, which every backend compares exactly (PostgreSQL
    /// compares a bigint with a float8 as floats); nil when no rewrite is
    /// needed.
    static func exactComparison(_ left: BoundExpression, _ op: ComparisonOperator, _ right: BoundExpression)
        -> BoundPredicate?
    {
        let ordering: [ComparisonOperator] = [.lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo]
        guard op == .equalTo || op == .notEqualTo || ordering.contains(op) else { return nil }
        // The constant on the right: `x OP k`.
        if case .constant = left.kind, !Self.isConstant(right) {
            let mirrored: ComparisonOperator = switch op {
            case .lessThan: .greaterThan
            case .lessThanOrEqualTo: .greaterThanOrEqualTo
            case .greaterThan: .lessThan
            case .greaterThanOrEqualTo: .lessThanOrEqualTo
            default: op
            }
            return exactComparison(right, mirrored, left)
        }
        guard case .constant(let constant) = right.kind else { return nil }
        let isInteger = left.type == .integer || left.type == .boolean
        // The constant's place among the values of the left side's type:
        // `below` is the greatest one under it, `above` the least one over it.
        let below: PredicateValue, above: PredicateValue
        switch (left.type, constant) {
        case (.double, .int(let k)):
            let d = Double(k)
            guard ValueComparison.exactOrder(k, d) != 0 else { return nil }
            if ValueComparison.exactOrder(k, d) == -1 {  // k < d
                (below, above) = (.double(d.nextDown), .double(d))
            } else {
                (below, above) = (.double(d), .double(d.nextUp))
            }
        case (_, .double(let d)) where isInteger && Self.holdsIntegersOnly(left) && d.isFinite && Int64(exactly: d) == nil
                                        && abs(d) >= 0x1p63:
            // Past every integer: each one is on the same side of it.
            let holds = d > 0 ? [.lessThan, .lessThanOrEqualTo, .notEqualTo].contains(op)
                              : [.greaterThan, .greaterThanOrEqualTo, .notEqualTo].contains(op)
            guard holds else { return .constant(false) }
            // True for every integer; nil holds only `!=`.
            return op == .notEqualTo ? .constant(true)
                : .comparison(BoundComparison(left, .notEqualTo, BoundExpression.constant(.null, type: .null)))
        default:
            return nil
        }
        let type = left.type
        switch op {
        case .equalTo: return .constant(false)
        case .notEqualTo: return .constant(true)
        case .lessThan, .lessThanOrEqualTo:
            return .comparison(BoundComparison(left, .lessThanOrEqualTo, .constant(below, type: type)))
        default:
            return .comparison(BoundComparison(left, .greaterThanOrEqualTo, .constant(above, type: type)))
        }
    }

    /// Whether an integer-typed expression holds integers whatever the rows:
    /// an attribute or a count (arithmetic past 64 bits becomes a double).
    static func holdsIntegersOnly(_ e: BoundExpression) -> Bool {
        switch e.kind {
        case .attribute, .aggregate(.count, _), .size: true
        default: false
        }
    }

    /// The members of a collection of values written out (`{a, b}`) or given
    /// as an array argument; nil for any other expression.
    static func members(_ e: BoundExpression) -> [BoundExpression]? {
        switch e.kind {
        case .list(let elements): return elements
        case .constant(.array(let values)):
            let element = e.type.elementType
            return values.map { value in
                let type: ValueType = switch value {
                case .null: .null
                case .int: element == .double ? .double : .integer
                case .double: .double
                case .bool: .boolean
                default: element
                }
                return .constant(value, type: type)
            }
        default: return nil
        }
    }

    /// Two collections of values equal member by member: the same count, and
    /// each member equal to the one in its place (under the options).
    mutating func elementwiseEqual(_ left: [BoundExpression], _ right: [BoundExpression], options: ComparisonOptions,
                                   range: SourceRange) throws(Failure) -> BoundPredicate {
        guard left.count == right.count else { return .constant(false) }
        var terms: [BoundPredicate] = []
        var warned = options.isEmpty
        for (l, r) in zip(left, right) {
            try checkComparable(l.type, .equalTo, r.type, range: range)
            let stringOptions = l.type == .string || r.type == .string || l.type == .any || r.type == .any ? options : []
            if !warned, stringOptions.isEmpty, l.type != .null, r.type != .null {
                _ = warnIfOptionsIgnored(options, l.type, r.type, range: range)
                warned = true
            }
            terms.append(.comparison(BoundComparison(convert(l, toMatch: r.type), .equalTo, options: stringOptions,
                                                     convert(r, toMatch: l.type), quantifier: .direct)))
        }
        return terms.isEmpty ? .constant(true) : terms.count == 1 ? terms[0] : .and(terms)
    }

    /// Whether an expression is a constant (a `%@` argument or a given
    /// `$variable`), whose value is known at binding.
    static func isConstant(_ expression: BoundExpression) -> Bool {
        if case .constant = expression.kind { return true }
        return false
    }

    static func regexReason(_ error: any Error) -> String {
        let text = "\(error)"
        return text.isEmpty ? "the pattern does not compile" : "the pattern does not compile (\(text))"
    }

    /// Whether two entities are of one inheritance family (their objects
    /// are rows of one table, and may be the same object).
    func sameTable(_ a: String, _ b: String) -> Bool {
        guard let a = model.entity(named: a), let b = model.entity(named: b) else { return false }
        return a.rootIndex == b.rootIndex
    }

    /// Checks that values of the two types can be compared with `op`.
    func checkComparable(_ left: ValueType, _ op: ComparisonOperator, _ right: ValueType, range: SourceRange) throws(Failure) {
        let ordering = op != .equalTo && op != .notEqualTo
        func orderable(_ t: ValueType) -> Bool { t.isNumeric || t == .string || t == .date || t == .null || t == .any }
        let fits: Bool = switch (left, right) {
        case (.null, _), (_, .null), (.any, _), (_, .any): true
        case (let l, let r) where l.isNumeric && r.isNumeric: true
        case (.string, .string), (.date, .date), (.data, .data), (.uuid, .uuid), (.uuid, .string), (.string, .uuid): true
        case (.object(let l), .object(let r)): (l == r || sameTable(l, r)) && !ordering
        case (.collection, _), (_, .collection): false
        default: false
        }
        guard fits, !ordering || (orderable(left) && orderable(right)) else {
            throw Failure(.incomparableTypes(left, op, right), range: range)
        }
    }

    /// Checks the operands of a string operator.
    func checkStrings(_ op: ComparisonOperator, _ left: ValueType, _ right: ValueType, range: SourceRange) throws(Failure) {
        for type in [left, right] where !(type == .string || type == .null || type == .any) {
            throw Failure(.operatorNeedsStrings(op, found: type), range: range)
        }
    }

    /// Converts a constant to the type of what it is compared with, where the
    /// conversion is lossless: a whole number compared with a double becomes
    /// a double (and a whole double compared with an integer an integer), a
    /// UUID written as a string a UUID. Both backends then compare like types.
    func convert(_ expression: BoundExpression, toMatch type: ValueType) -> BoundExpression {
        switch (expression.kind, type) {
        case (.constant(.int(let i)), .double) where i.magnitude < 1 << 53:
            return .constant(.double(Double(i)), type: .double)
        case (.constant(.double(let d)), .integer):
            if let i = Int64(exactly: d) { return .constant(.int(i), type: .integer) }
            return expression
        case (.constant(.array(let values)), .double)
            where values.allSatisfy({ if case .int(let i) = $0 { i.magnitude < 1 << 53 } else { false } }):
            return .constant(.array(values.map { if case .int(let i) = $0 { .double(Double(i)) } else { $0 } }),
                             type: .collection(.double))
        default:
            break
        }
        guard type == .uuid else { return expression }
        switch expression.kind {
        case .constant(.string(let s)):
            if let uuid = UUID(uuidString: s) { return .constant(.uuid(uuid), type: .uuid) }
        case .constant(.array(let values)):
            let converted = values.map { value -> PredicateValue in
                if case .string(let s) = value, let uuid = UUID(uuidString: s) { return .uuid(uuid) }
                return value
            }
            return .constant(.array(converted), type: .collection(.uuid))
        default: break
        }
        return expression
    }

    // MARK: Expressions

    mutating func expression(_ e: ExpressionSyntax, self selfExpression: BoundExpression) throws(Failure) -> BoundExpression {
        let bound = try boundExpression(e, self: selfExpression)
        if ranges[bound] == nil { ranges[bound] = e.range }
        return bound
    }

    mutating func boundExpression(_ e: ExpressionSyntax, self selfExpression: BoundExpression) throws(Failure)
        -> BoundExpression
    {
        switch e.kind {
        case .constant(let value):
            return try constant(value, range: e.range)
        case .keyPath(let path):
            return try keyPath(path, from: selfExpression, range: e.range)
        case .evaluatedObject:
            return selfExpression
        case .variable(let name):
            if valueScope.contains(name) { return BoundExpression(.variable(name), type: .any) }
            if let entity = scope[name] { return BoundExpression(.variable(name), type: .object(entity)) }
            if let value = values[name] { return try constant(value, range: e.range) }
            if let type = parameterTypes[name] { return BoundExpression(.parameter(name), type: type) }
            if allowsParameters { return BoundExpression(.parameter(name), type: .any) }
            throw Failure(.unboundVariable(name), range: e.range)
        case .assignment:
            throw Failure(.unsupported("assignment ($x := …)"), range: e.range)
        case .member(let base, let path):
            return try keyPath(path, from: try expression(base, self: selfExpression), range: e.range)
        case .index(let base, let index):
            return try self.index(try expression(base, self: selfExpression), index, range: e.range, self: selfExpression)
        case .aggregate(let elements):
            var bound: [BoundExpression] = []
            for element in elements { bound.append(try expression(element, self: selfExpression)) }
            return BoundExpression(.list(bound), type: .collection(try unified(bound.map(\.type), in: "a collection",
                                                                                   range: e.range)))
        case .negate(let operand):
            let bound = try expression(operand, self: selfExpression)
            guard bound.type.isNumeric || bound.type == .null || bound.type == .any else {
                throw Failure(.arithmeticNeedsNumbers(.subtract, bound.type, bound.type), range: e.range)
            }
            if case .constant(let value) = bound.kind, let negated = Self.negated(value) {
                return .constant(negated, type: bound.type)
            }
            return BoundExpression(.negate(bound), type: bound.type == .boolean ? .integer : bound.type)
        case .binary:
            // A chain `a + b + c + …` is a left-leaning tree as deep as it is
            // long: its left spine is walked in a loop, not by recursion.
            var spine: [ExpressionSyntax] = []
            var leftmost = e
            while case .binary(_, let l, _) = leftmost.kind {
                spine.append(leftmost)
                leftmost = l
            }
            // Only the whole chain's range is recorded (by `expression`):
            // recording each link would hash the growing chain each time.
            var bound = try expression(leftmost, self: selfExpression)
            for node in spine.reversed() {
                guard case .binary(let op, _, let r) = node.kind else { continue }
                bound = try binary(op, bound, try expression(r, self: selfExpression), range: node.range)
            }
            return bound
        case .function(let name, let arguments):
            var bound: [BoundExpression] = []
            for argument in arguments { bound.append(try expression(argument, self: selfExpression)) }
            return try function(name, bound, range: e.range)
        case .functionCall(let receiver, let selector, let arguments):
            // FUNCTION(receiver, 'name', args): the registered function `name`
            // with the receiver as its first argument.
            let name = selector.split(separator: ":").first.map(String.init) ?? selector
            guard let function = functions?.function(named: name) else {
                throw Failure(.unsupported("FUNCTION(…) calling '\(selector)', which is not a registered function"),
                              range: e.range)
            }
            var bound = [try expression(receiver, self: selfExpression)]
            for argument in arguments { bound.append(try expression(argument, self: selfExpression)) }
            return try custom(function, bound, range: e.range)
        case .subquery(let collection, let variable, let p):
            let boundCollection = try expression(collection, self: selfExpression)
            if isDynamic, boundCollection.type == .any || boundCollection.type.isCollection && !boundCollection.type.holdsObjects {
                // Members are whatever values the collection holds when it runs.
                let saved = (scope, valueScope)
                scope[variable] = nil
                valueScope.insert(variable)
                defer { (scope, valueScope) = saved }
                // A key not starting with the variable reads the evaluated
                // object, as Apple's SUBQUERY reads it.
                let bound = try predicate(p, self: selfExpression)
                return BoundExpression(.subquery(boundCollection, variable: variable, bound), type: .collection(.any))
            }
            guard case .collection(.object(let entity)) = boundCollection.type else {
                throw Failure(.subqueryNeedsObjects(found: boundCollection.type), range: collection.range)
            }
            let saved = scope
            scope[variable] = entity
            defer { scope = saved }
            let bound = try predicate(p, self: selfExpression)
            return BoundExpression(.subquery(boundCollection, variable: variable, bound), type: boundCollection.type)
        case .ternary(let condition, let then, let otherwise):
            let c = try predicate(condition, self: selfExpression)
            let a = try expression(then, self: selfExpression)
            let b = try expression(otherwise, self: selfExpression)
            return BoundExpression(.ternary(c, a, b), type: try unified([a.type, b.type], in: "TERNARY's results",
                                                                        range: e.range))
        case .cast(let value, let typeName):
            return try cast(try expression(value, self: selfExpression), to: typeName, range: e.range)
        }
    }

    func constant(_ value: PredicateValue, range: SourceRange) throws(Failure) -> BoundExpression {
        .constant(rootReferences(value), type: try type(of: value, range: range))
    }

    /// `value` with each object reference naming its entity's root entity:
    /// an object is one row of its root's table, whichever entity of the
    /// family a reference names it by (memory compares references so).
    func rootReferences(_ value: PredicateValue) -> PredicateValue {
        switch value {
        case .object(let reference):
            guard let entity = model.entity(named: reference.entity), entity.superentity != nil else { return value }
            return .object(ObjectReference(entity: model.root(of: entity).name, id: reference.id))
        case .array(let values) where values.contains(where: { if case .object = $0 { true } else { false } }):
            return .array(values.map(rootReferences))
        default:
            return value
        }
    }

    func type(of value: PredicateValue, range: SourceRange) throws(Failure) -> ValueType {
        switch value {
        case .null: return .null
        case .bool: return .boolean
        case .int: return .integer
        case .double: return .double
        case .string: return .string
        case .date: return .date
        case .data: return .data
        case .uuid: return .uuid
        case .dictionary where isDynamic: return .any
        case .dictionary:
            // No attribute holds a dictionary, and the backends would order it
            // against one differently: only IN reads one (its values).
            throw Failure(.unsupported("a dictionary value here (a model's attributes hold none; "
                                       + "'x IN %@' tests a dictionary's values)"), range: range)
        case .object where isDynamic:
            // Without a model an object reference is a value like any other.
            return .any
        case .object(let reference):
            guard model.entity(named: reference.entity) != nil else {
                throw Failure(.unknownEntity(reference.entity), range: range)
            }
            return .object(reference.entity)
        case .array(let values):
            var types: [ValueType] = []
            for v in values { types.append(try type(of: v, range: range)) }
            return .collection(try unified(types, in: "a collection argument", range: range))
        }
    }

    /// One type for values of several: the common one, or a number when
    /// numbers mix. Values of other different types (a number and a string,
    /// a date and a number, objects of two entities) are an error: memory and
    /// SQL would order and compare them differently, so Sift gives them no
    /// meaning (Grammar/README.md, "Types"). `nil` fits any type; a value of
    /// unknown type (`.any`) makes the whole `.any`.
    func unified(_ types: [ValueType], in context: String, range: SourceRange) throws(Failure) -> ValueType {
        // Without a model, values of several types meet only when the predicate runs.
        if isDynamic { return (try? strictlyUnified(types, in: context, range: range)) ?? .any }
        return try strictlyUnified(types, in: context, range: range)
    }

    func strictlyUnified(_ types: [ValueType], in context: String, range: SourceRange) throws(Failure) -> ValueType {
        let known = types.filter { $0 != .null && $0 != .any }
        guard let first = known.first else { return types.contains(.any) ? .any : .null }
        let unified: ValueType
        if known.allSatisfy({ $0 == first }) {
            unified = first
        } else if known.allSatisfy(\.isNumeric) {
            unified = known.contains(.double) ? .double : .integer
        } else {
            let other = known.first { $0 != first && !($0.isNumeric && first.isNumeric) } ?? first
            throw Failure(.mixedTypes(first, other, context: context), range: range)
        }
        // A value of unknown type (a template's `$variable`) keeps the whole unknown.
        return types.contains(.any) ? .any : unified
    }

    static func negated(_ value: PredicateValue) -> PredicateValue? {
        switch value {
        case .int(let i) where i != .min: .int(-i)
        case .double(let d): .double(-d)
        case .bool(let b): .int(b ? -1 : 0)
        case .null: .null
        default: nil
        }
    }

    // MARK: Key paths

    mutating func freshVariable() -> String {
        nextVariable += 1
        return "#\(nextVariable)"
    }

    /// Resolves `path` from `base`, one key at a time.
    mutating func keyPath(_ path: [String], from base: BoundExpression, range: SourceRange) throws(Failure) -> BoundExpression {
        var current = base
        var previousKey: String?
        var i = 0
        while i < path.count {
            let key = path[i]
            // The key `self` (written `#self`) is the value itself, as
            // key-value coding reads it: `g.@max.#self` is `g.@max`. Without a
            // model it is looked up when the predicate runs (a dictionary's
            // value for "self", as NSDictionary's valueForKey: reads it).
            if key == "self", !(isDynamic && (current.type == .any || current.type == .null || current.type.isCollection)) {
                i += 1
                continue
            }
            if key.hasPrefix("@") {
                return try collectionOperator(key, current, rest: Array(path[(i + 1)...]), range: range)
            }
            switch current.type {
            case .any where isDynamic, .null where isDynamic, .collection where isDynamic && !current.type.holdsObjects:
                // Looked up when the predicate runs (arrays map the key over their members).
                current = BoundExpression(.key(current, key), type: .any)
                i += 1
            case .object(let entityName):
                let entity = model.entity(named: entityName)!
                guard let property = entity.property(named: key) else {
                    if let subentity = model.descendants(of: entity).first(where: { $0.property(named: key) != nil }) {
                        throw Failure(.subentityKey(key, entity: entityName, subentity: subentity.name), range: range)
                    }
                    throw Failure(.unknownKey(key, entity: entityName,
                                              suggestion: Self.closest(to: key, in: entity.propertyNames)), range: range)
                }
                switch property {
                case .attribute(let a) where requiresStoredAttributes && a.isTransient:
                    throw Failure(.transientAttribute(key, entity: entityName), range: range)
                case .attribute(var a):
                    // A composite's element: `magnitude.richter` is the attribute of that name.
                    while a.type == .composite, i + 1 < path.count, !path[i + 1].hasPrefix("@") {
                        let name = a.name + "." + path[i + 1]
                        guard let element = entity.attribute(named: name) else {
                            throw Failure(.unknownKey(path[i + 1], entity: "\(entityName).\(a.name)",
                                                      suggestion: Self.closest(to: path[i + 1], in: a.elements.map(\.name))),
                                          range: range)
                        }
                        a = element
                        i += 1
                    }
                    // A transformable attribute with a value transformer holds what the transformer makes: any type.
                    let transformed = a.type == .transformable && a.valueTransformerName != nil
                    current = BoundExpression(.attribute(current, AttributeReference(entity: entityName, attribute: a)),
                                              type: transformed ? .any : ValueType(a.type))
                case .relationship(let r):
                    let reference = RelationshipReference(entity: entityName, relationship: r)
                    current = r.isToMany
                        ? BoundExpression(.toMany(current, reference), type: .collection(.object(r.destination)))
                        : BoundExpression(.toOne(current, reference), type: .object(r.destination))
                }
                i += 1
            case .collection(.object):
                // The keys up to the next collection operator apply to each member.
                var end = i
                while end < path.count, !path[end].hasPrefix("@") { end += 1 }
                current = try map(Array(path[i..<end]), over: current, range: range)
                i = end
            default:
                throw Failure(.keyPathContinuesPastAttribute(attribute: previousKey ?? "SELF", key: key), range: range)
            }
            previousKey = key
        }
        return current
    }

    /// `collection.a.b`: the path applied to each member, flattened.
    mutating func map(_ path: [String], over collection: BoundExpression, range: SourceRange) throws(Failure) -> BoundExpression {
        guard case .collection(.object(let entity)) = collection.type else { return collection }
        let variable = freshVariable()
        let member = BoundExpression(.variable(variable), type: .object(entity))
        let each = try keyPath(path, from: member, range: range)
        return BoundExpression(.map(collection, variable: variable, each), type: .collection(each.type.elementType))
    }

    /// `@count`, `@sum.salary`, `@distinctUnionOfObjects.name`, …
    mutating func collectionOperator(_ key: String, _ collection: BoundExpression, rest: [String],
                                     range: SourceRange) throws(Failure) -> BoundExpression {
        let name = String(key.dropFirst())
        let values: BoundExpression
        if rest.isEmpty {
            values = collection
        } else if isDynamic, !collection.type.holdsObjects {
            // `@sum.price` over plain values: the key is looked up in each member when it runs.
            values = try keyPath(rest, from: collection, range: range)
        } else {
            values = try map(rest, over: collection, range: range)
        }
        guard collection.type.isCollection || collection.type == .any else {
            throw Failure(.aggregateNeedsCollection(key), range: range)
        }
        if rest.contains(where: { $0.hasPrefix("@") }) {
            throw Failure(.unsupported("a collection operator after \(key)"), range: range)
        }
        let element = values.type.elementType
        switch name {
        case "count":
            guard rest.isEmpty else { throw Failure(.keyPathContinuesPastAttribute(attribute: key, key: rest[0]), range: range) }
            return BoundExpression(.aggregate(.count, collection), type: .integer)
        case "sum", "avg":
            guard element.isNumeric || element == .null || element == .any else {
                throw Failure(.aggregateNeedsNumbers(key, found: element), range: range)
            }
            let type: ValueType = name == "sum" && (element == .integer || element == .boolean) ? .integer : .double
            return BoundExpression(.aggregate(name == "sum" ? .sum : .avg, values), type: type)
        case "min", "max":
            guard element.isNumeric || element == .string || element == .date || element == .null || element == .any else {
                throw Failure(.aggregateNeedsNumbers(key, found: element), range: range)
            }
            return BoundExpression(.aggregate(name == "min" ? .min : .max, values), type: element == .boolean ? .integer : element)
        case "distinctUnionOfObjects", "distinctUnionOfArrays", "distinctUnionOfSets":
            return BoundExpression(.function(.distinct, [values]), type: values.type)
        case "unionOfObjects", "unionOfArrays", "unionOfSets":
            return values
        default:
            throw Failure(.unknownCollectionOperator(key), range: range)
        }
    }

    /// The name nearest to `name` by edit distance, if it is near enough to be
    /// a likely typo.
    static func closest(to name: String, in candidates: [String]) -> String? {
        let target = Array(name.lowercased())
        var best: (String, Int)?
        for candidate in candidates {
            let distance = editDistance(target, Array(candidate.lowercased()))
            if distance <= max(2, target.count / 3), distance < (best?.1 ?? .max) { best = (candidate, distance) }
        }
        return best?.0
    }

    static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var previous = Array(0...b.count)
        for (i, ca) in a.enumerated() {
            var current = [i + 1]
            for (j, cb) in b.enumerated() {
                current.append(min(previous[j + 1] + 1, current[j] + 1, previous[j] + (ca == cb ? 0 : 1)))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: Operators, functions, casts, indexes

    func binary(_ op: BinaryOperator, _ l: BoundExpression, _ r: BoundExpression, range: SourceRange) throws(Failure)
        -> BoundExpression
    {
        switch op {
        case .union, .intersect, .minus:
            for side in [l, r] where !(side.type.isCollection || side.type == .any || side.type == .null) {
                throw Failure(.wrongArgumentType(function: op.rawValue, expected: "collections", found: side.type), range: range)
            }
            let function: BuiltinFunction = op == .union ? .union : op == .intersect ? .intersect : .minus
            return BoundExpression(.function(function, [l, r]),
                                   type: .collection(try unified([l.type.elementType, r.type.elementType],
                                                                 in: "the two sides of \(op.rawValue)", range: range)))
        default:
            func numeric(_ t: ValueType) -> Bool { t.isNumeric || t == .null || t == .any }
            guard numeric(l.type), numeric(r.type) else {
                throw Failure(.arithmeticNeedsNumbers(op, l.type, r.type), range: range)
            }
            let integers = [l.type, r.type].allSatisfy { $0 == .integer || $0 == .boolean }
            let type: ValueType = integers && op != .power ? .integer : .double
            return BoundExpression(.arithmetic(op, l, r), type: type)
        }
    }

    /// A call of a registered function, checked against its signature.
    func custom(_ function: CustomFunction, _ arguments: [BoundExpression], range: SourceRange) throws(Failure)
        -> BoundExpression
    {
        guard arguments.count == function.argumentTypes.count else {
            throw Failure(.wrongArgumentCount(function: function.name, expected: "\(function.argumentTypes.count) arguments",
                                              found: arguments.count), range: range)
        }
        for (argument, expected) in zip(arguments, function.argumentTypes) {
            let fits = expected == .any || argument.type == expected || argument.type == .null || argument.type == .any
                || (expected.isNumeric && argument.type.isNumeric)
            guard fits else {
                throw Failure(.wrongArgumentType(function: function.name, expected: PredicateValidationError.article(expected),
                                                 found: argument.type), range: range)
            }
        }
        return BoundExpression(.custom(function, arguments), type: function.resultType)
    }

    func function(_ name: String, _ arguments: [BoundExpression], range: SourceRange) throws(Failure) -> BoundExpression {
        guard let (function, signature) = FunctionSignature.byName[name] else {
            if let custom = functions?.function(named: name) {
                return try self.custom(custom, arguments, range: range)
            }
            let names = Array(FunctionSignature.byName.keys) + (functions?.all.map(\.name) ?? [])
            throw Failure(.unknownFunction(name, suggestion: Self.closest(to: name, in: names)), range: range)
        }
        func count(_ expected: Int) throws(Failure) {
            guard arguments.count == expected else {
                let words = expected == 0 ? "no arguments" : expected == 1 ? "one argument" : "\(expected) arguments"
                throw Failure(.wrongArgumentCount(function: name, expected: words, found: arguments.count), range: range)
            }
        }
        func each(_ test: (ValueType) -> Bool, _ expected: String) throws(Failure) {
            for a in arguments where !(test(a.type) || a.type == .null || a.type == .any) {
                throw Failure(.wrongArgumentType(function: name, expected: expected, found: a.type), range: range)
            }
        }
        switch signature {
        case .none:
            try count(0)
            return BoundExpression(.function(function, []), type: function == .now ? .date : .double)
        case .strings(let n):
            try count(n)
            try each({ $0 == .string }, "a string")
            return BoundExpression(.function(function, arguments), type: .string)
        case .integers(let n):
            try count(n)
            try each({ $0 == .integer || $0 == .boolean }, "integers")
            return BoundExpression(.function(function, arguments), type: .integer)
        case .numbers(let n):
            try count(n)
            try each({ $0.isNumeric }, "a number")
            let integer = arguments.allSatisfy { $0.type == .integer || $0.type == .boolean }
            let type: ValueType = (function == .abs || function == .modulus) && integer ? .integer : .double
            return BoundExpression(.function(function, arguments), type: type)
        case .collection:
            guard !arguments.isEmpty else {
                throw Failure(.wrongArgumentCount(function: name, expected: "a collection or some values", found: 0), range: range)
            }
            let collection = arguments.count == 1 && (arguments[0].type.isCollection || arguments[0].type == .any)
                ? arguments[0]
                : BoundExpression(.list(arguments), type: .collection(try unified(arguments.map(\.type),
                                                                                  in: "the arguments of \(name)",
                                                                                  range: range)))
            let element = collection.type.elementType
            let type: ValueType
            switch function {
            case .count:
                type = .integer
            case .min, .max, .mode:
                guard element.isNumeric || element == .string || element == .date || element == .null || element == .any else {
                    throw Failure(.aggregateNeedsNumbers(name, found: element), range: range)
                }
                type = element == .boolean ? .integer : element
            default:
                guard element.isNumeric || element == .null || element == .any else {
                    throw Failure(.aggregateNeedsNumbers(name, found: element), range: range)
                }
                type = function == .sum && (element == .integer || element == .boolean) ? .integer : .double
            }
            return BoundExpression(.function(function, [collection]), type: type)
        }
    }

    func cast(_ value: BoundExpression, to typeName: String, range: SourceRange) throws(Failure) -> BoundExpression {
        switch typeName {
        case "NSDate", "Date":
            guard value.type.isNumeric || value.type == .date || value.type == .null || value.type == .any else {
                throw Failure(.wrongArgumentType(function: "CAST to NSDate", expected: "a number of seconds", found: value.type),
                              range: range)
            }
            switch value.kind {
            case .constant(.int(let i)): return .constant(.date(Date(timeIntervalSinceReferenceDate: Double(i))), type: .date)
            case .constant(.double(let d)): return .constant(.date(Date(timeIntervalSinceReferenceDate: d)), type: .date)
            default: return BoundExpression(.function(.castToDate, [value]), type: .date)
            }
        case "NSNumber", "NSDecimalNumber":
            return BoundExpression(.function(.castToNumber, [value]), type: .double)
        case "NSString", "String":
            return BoundExpression(.function(.castToString, [value]), type: .string)
        default:
            throw Failure(.unsupportedCast(typeName), range: range)
        }
    }

    mutating func index(_ base: BoundExpression, _ index: IndexSyntax, range: SourceRange,
                        self selfExpression: BoundExpression) throws(Failure) -> BoundExpression {
        switch base.kind {
        case .toMany, .map, .subquery:
            throw Failure(.unsupported("indexing a to-many relationship (its members have no order)"), range: range)
        default:
            break
        }
        guard base.type.isCollection || base.type == .any || base.type == .null else {
            throw Failure(.unsupported("indexing \(PredicateValidationError.article(base.type))"), range: range)
        }
        let element = base.type == .any ? ValueType.any : base.type.elementType
        switch index {
        case .first: return BoundExpression(.index(base, .constant(.int(0), type: .integer)), type: element)
        case .last: return BoundExpression(.index(base, .constant(.int(-1), type: .integer)), type: element)
        case .size: return BoundExpression(.size(base), type: .integer)
        case .expression(let e):
            let position = try expression(e, self: selfExpression)
            return BoundExpression(.index(base, position), type: base.type == .any ? .any : element)
        }
    }
}

extension ValueType {
    /// Whether values of this type are objects of a model, or collections of them.
    var holdsObjects: Bool {
        switch self {
        case .object: true
        case .collection(let element): element.holdsObjects
        default: false
        }
    }
}
