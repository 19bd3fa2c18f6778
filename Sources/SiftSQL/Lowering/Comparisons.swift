// Stage 6b (SQL lowering): predicates and comparisons — connectives,
// quantifiers, equality and order under two-valued nil logic, BETWEEN, and
// the dispatch to strings (Strings.swift) and membership (Collections.swift).

import SiftModel
import SiftValues
import SiftTree

extension SQLWriter {
    mutating func predicate(_ p: BoundPredicate, _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch p {
        case .constant(let value):
            return value ? .true : .false
        case .not(let operand):
            return .not(try predicate(operand, c))
        case .and(let operands):
            var parts: [SQLExpression] = []
            parts.reserveCapacity(operands.count)
            for operand in operands { parts.append(try predicate(operand, c)) }
            return .and(parts)
        case .or(let operands):
            return try disjunction(operands, c)
        case .comparison(let comparison):
            return try self.comparison(comparison, c)
        case .exists(let collection):
            return try source(collection, c).exists()
        }
    }

    mutating func comparison(_ comparison: BoundComparison, _ c: SQLContext) throws(Failure) -> SQLExpression {
        let op = comparison.operator
        // `collection CONTAINS x`: some member equals x.
        if comparison.quantifier == .direct, op == .contains, comparison.left.type.isCollection {
            let members = try source(comparison.left, c)
            let test = try compare(.equalTo, comparison.options, element(members), comparison.left.type.elementType,
                                   comparison.right, members.context)
            return members.exists(test)
        }
        if comparison.quantifier != .direct {
            let members = try source(comparison.left, c)
            let test = try compare(op, comparison.options, element(members), comparison.left.type.elementType,
                                   comparison.right, members.context)
            switch comparison.quantifier {
            case .any: return members.exists(test)
            case .none: return .not(members.exists(test))
            default: return .not(members.exists(.not(test)))
            }
        }
        let left = try value(comparison.left, c)
        return try compare(op, comparison.options, left, comparison.left.type, comparison.right, c,
                           folded: try companion(comparison.left, comparison.options, c))
    }

    /// `left op right` under two-valued logic. `folded` is `left` already
    /// folded as the options say (a companion column), when there is one.
    mutating func compare(_ op: ComparisonOperator, _ options: ComparisonOptions, _ left: SQLExpression,
                          _ leftType: ValueType, _ right: BoundExpression,
                          _ c: SQLContext, folded: SQLExpression? = nil) throws(Failure) -> SQLExpression {
        let flags = options.foldingFlags
        let l = folded ?? (flags != 0 ? .fold(left, flags: flags) : left)
        switch op {
        case .equalTo, .notEqualTo:
            if case .constant(.null) = right.kind { return op == .equalTo ? .isNull(left) : .isNotNull(left) }
            let r = try operand(right, options, c)
            if r.isNull { return op == .equalTo ? .isNull(left) : .isNotNull(left) }
            return op == .equalTo ? .equal(l, r) : .notEqual(l, r)
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            let comparison: SQLComparison = switch op {
            case .lessThan: .less
            case .lessThanOrEqualTo: .lessOrEqual
            case .greaterThan: .greater
            default: .greaterOrEqual
            }
            return .compare(comparison, l, try operand(right, options, c))
        case .between:
            let bounds: [SQLExpression]
            switch right.kind {
            case .list(let elements) where elements.count == 2:
                bounds = [try operand(elements[0], options, c), try operand(elements[1], options, c)]
            case .constant(.array(let values)) where values.count == 2:
                bounds = values.map { folding($0, options) }
            default:
                throw Failure("BETWEEN with bounds that are not a list of two", expression: right)
            }
            return .between(l, bounds[0], bounds[1])
        case .in:
            return try membership(left, in: right, options, c, folded: folded)
        case .contains, .beginsWith, .endsWith, .like, .matches:
            return try text(op, options, left: left, folded: l, right, c)
        case .conformsTo, .utiEquals:
            throw Failure(op.rawValue)
        }
    }

    /// The right side of a comparison, folded as the options say: a constant
    /// string folded here (once), anything else folded in SQL.
    mutating func operand(_ e: BoundExpression, _ options: ComparisonOptions, _ c: SQLContext) throws(Failure)
        -> SQLExpression
    {
        if case .constant(let value) = e.kind, case .array = value {
            throw Failure("a collection where one value is needed", expression: e)
        }
        if case .constant(let value) = e.kind { return folding(value, options) }
        let v = try value(e, c)
        return options.foldingFlags != 0 ? .fold(v, flags: options.foldingFlags) : v
    }

    /// A constant, a string folded as the options say.
    func folding(_ value: PredicateValue, _ options: ComparisonOptions) -> SQLExpression {
        if options.foldingFlags != 0, case .string(let s) = value { return .value(.text(StringFolding.fold(s, options))) }
        return constant(value)
    }
}
