// Rule: OR of equalities on one key becomes IN; IN lists merge and lose

import SiftTree
import SiftValues

/// Turns an `OR` of equalities on one key into an `IN` test, merging `IN`
/// lists and dropping their duplicates.
///
/// ```
/// age == 1 OR age == 2 OR age == 3     =>  age IN {1, 2, 3}
/// age IN {1, 2} OR age == 2 OR age == 5 =>  age IN {1, 2, 5}
/// name ==[c] 'a' OR name ==[c] 'b'     =>  name IN[c] {'a', 'b'}
/// ```
///
/// `x IN list` holds when `x` equals some member, which is what the `OR`
/// says; a nil member matches a nil key in both forms (nil == nil).
public struct EqualitiesToIn: OptimizerRule {
    public let name = "equalities-to-in"
    /// Creates the rule.
    public init() {}

    struct Key: Hashable {
        var expression: BoundExpression
        var options: ComparisonOptions
    }

    public func rewrite(_ predicate: BoundPredicate) -> BoundPredicate? {
        guard case .or(let ps) = predicate else { return nil }
        var members: [Key: (first: Int, values: [BoundExpression], terms: Int)] = [:]
        var order: [Key] = []
        for (i, p) in ps.enumerated() {
            guard case .comparison(let c) = p, c.quantifier == .direct, !c.left.type.isCollection else { continue }
            let key = Key(expression: c.left, options: c.options)
            let values: [BoundExpression]
            switch (c.operator, c.right.kind) {
            case (.equalTo, .constant(let v)) where !v.isCollection:
                values = [c.right]
            case (.in, .list(let elements)) where elements.allSatisfy({ $0.constantValue != nil && !$0.type.isCollection }):
                values = elements
            case (.in, .constant(.array(let vs))):
                values = vs.map { BoundExpression(.constant($0), type: c.left.type) }
            default:
                continue
            }
            if members[key] == nil {
                order.append(key)
                members[key] = (i, [], 0)
            }
            members[key]!.values += values
            members[key]!.terms += 1
        }
        let merged = order.filter { members[$0]!.terms > 1 || Self.hasDuplicates(members[$0]!.values) }
        guard !merged.isEmpty else { return nil }
        var replaced: [Int: BoundPredicate] = [:]
        var drop = Set<Int>()
        for key in merged {
            let entry = members[key]!
            var unique: [BoundExpression] = []
            for v in entry.values where !unique.contains(v) { unique.append(v) }
            let list = BoundExpression(.list(unique), type: .collection(key.expression.type))
            replaced[entry.first] = .comparison(BoundComparison(key.expression, .in, options: key.options, list))
            for (i, p) in ps.enumerated() where i != entry.first {
                guard case .comparison(let c) = p, c.quantifier == .direct, c.left == key.expression,
                      c.options == key.options, c.operator == .equalTo || c.operator == .in else { continue }
                switch c.right.kind {
                case .constant(let v) where c.operator == .equalTo && !v.isCollection: drop.insert(i)
                case .list(let elements) where c.operator == .in && elements.allSatisfy({ $0.constantValue != nil }): drop.insert(i)
                case .constant(.array) where c.operator == .in: drop.insert(i)
                default: break
                }
            }
        }
        let result = ps.enumerated().compactMap { i, p -> BoundPredicate? in
            if drop.contains(i) { return nil }
            return replaced[i] ?? p
        }
        return result.count == 1 ? result[0] : .or(result)
    }

    static func hasDuplicates(_ values: [BoundExpression]) -> Bool {
        Set(values).count != values.count
    }
}
