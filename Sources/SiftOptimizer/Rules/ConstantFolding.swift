// Rule: constant folding.

import SiftTree
import SiftValues

/// Computes arithmetic, comparisons and function calls whose operands are all
/// constants, so that they are not computed again for every object.
///
/// ```
/// age > 10 * 3 + 2          =>  age > 32
/// 3 > 2                     =>  TRUEPREDICATE
/// floor(2.5) == 2           =>  TRUEPREDICATE
/// age IN {}                 =>  FALSEPREDICATE
/// ```
///
/// Values are computed with the semantics both lowerings share (nil in, nil
/// out), so the answer cannot differ from evaluating the predicate as
/// written. `random()` and `now()` are left alone.
public struct ConstantFolding: OptimizerRule {
    public let name = "constant-folding"
    /// Creates the rule.
    public init() {}

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        guard case .comparison(var c) = predicate else { return nil }
        let foldable = Self.isFoldable(c.left) || Self.isFoldable(c.right)
        let constants = c.left.constantValue != nil && c.right.constantValue != nil
        let emptyIn: Bool = if case .list(let m) = c.right.kind, m.isEmpty, c.operator == .in { true } else { false }
        guard foldable || constants || emptyIn else { return nil }
        c.left = Self.fold(c.left)
        c.right = Self.fold(c.right)
        if c.quantifier == .direct, let left = Self.value(c.left), let right = Self.value(c.right) {
            // Both sides known: so is the comparison.
            if left.isCollection, c.operator == .contains, case .array(let members) = left {
                return .constant(members.contains { ValueComparison.equal($0, right, c.options) })
            }
            let answer = PreparedComparison(c.operator, c.options, right: right).test(left)
            // A pattern past its budget is left for evaluation to report.
            if EvaluationFailure.take() != nil { return nil }
            return .constant(answer)
        }
        if c.quantifier == .direct, c.operator == .in, case .list(let members) = c.right.kind, members.isEmpty {
            return .constant(false)
        }
        let rewritten = BoundPredicate.comparison(c)
        return rewritten == predicate ? nil : rewritten
    }

    /// Whether folding could change the expression.
    static func isFoldable(_ e: BoundExpression) -> Bool {
        switch e.kind {
        case .arithmetic, .negate, .function: return true
        case .list(let elements): return elements.contains(where: isFoldable)
        default: return false
        }
    }

    /// The expression with its constant parts computed.
    static func fold(_ e: BoundExpression) -> BoundExpression {
        var e = e
        switch e.kind {
        case .arithmetic(let op, let l, let r): e.kind = .arithmetic(op, fold(l), fold(r))
        case .negate(let a): e.kind = .negate(fold(a))
        case .function(let f, let arguments): e.kind = .function(f, arguments.map(fold))
        case .list(let elements): e.kind = .list(elements.map(fold))
        default: return e
        }
        if case .list = e.kind { return e }
        // The operands are folded already: a constant one is a `.constant`
        // node, so only they are looked at (a chain folds in linear time).
        guard let v = value(e, operand: foldedValue) else { return e }
        return BoundExpression(.constant(v), type: e.type)
    }

    /// The value of a folded operand: a constant, or a list of constants.
    static func foldedValue(_ e: BoundExpression) -> PredicateValue? {
        if let v = e.constantValue { return v }
        guard case .list(let elements) = e.kind else { return nil }
        var values: [PredicateValue] = []
        for element in elements {
            guard let v = element.constantValue else { return nil }
            values.append(v)
        }
        return .array(values)
    }

    /// The value of an expression made of constants only; nil otherwise.
    static func value(_ e: BoundExpression) -> PredicateValue? {
        value(e, operand: value)
    }

    /// The value of an expression whose operands have the values `operand`
    /// gives (nil: not a constant).
    static func value(_ e: BoundExpression, operand: (BoundExpression) -> PredicateValue?) -> PredicateValue? {
        let value = operand
        switch e.kind {
        case .constant(let v):
            return v
        case .list(let elements):
            var values: [PredicateValue] = []
            for element in elements {
                guard let v = value(element) else { return nil }
                values.append(v)
            }
            return .array(values)
        case .arithmetic(let op, let l, let r):
            guard op != .union, op != .intersect, op != .minus, let a = value(l), let b = value(r) else { return nil }
            return Arithmetic.apply(op, a, b)
        case .negate(let a):
            return value(a).map { Arithmetic.apply(.subtract, .int(0), $0) }
        case .function(let f, let arguments):
            switch f {
            case .random, .randomn, .now, .distinct, .union, .intersect, .minus, .castToDate, .castToNumber, .castToString:
                return nil
            case .sum, .count, .min, .max, .average, .median, .mode, .stddev:
                guard case .array(let members)? = arguments.first.flatMap(value) else { return nil }
                return Aggregates.function(f, members, integer: e.type == .integer)
            default:
                var values: [PredicateValue] = []
                for argument in arguments {
                    guard let v = value(argument) else { return nil }
                    values.append(v)
                }
                return Functions.apply(f, values)
            }
        default:
            return nil
        }
    }
}

extension PredicateValue {
    var isCollection: Bool {
        if case .array = self { return true }
        return false
    }
}
