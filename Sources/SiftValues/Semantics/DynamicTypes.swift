// Stage 0 (values): what happens when types meet only at run time — a
// predicate bound without a model, evaluated against whatever values come.
// Grammar/README.md ("Values without a model") is the table this follows.

/// The run-time type rules of predicates bound without a model.
public enum DynamicTypes {
    /// A value's type, as messages name it ("a number", "a string").
    ///
    /// - Parameter value: The value.
    /// - Returns: The name of its kind, as messages give it
    ///   (`PredicateValue.kindDescription`).
    public static func name(of value: PredicateValue) -> String { value.kindDescription }

    /// The two types' names when `op` cannot work on `left` and `right`
    /// (Apple's operators raise); nil when it can. nil works with anything:
    /// a comparison with it is false (or, for `!=`, true).
    ///
    /// - Parameters:
    ///   - op: The comparison operator.
    ///   - left: The left operand's value.
    ///   - right: The right operand's value.
    /// - Returns: The names of the two types that conflict (for `BETWEEN`, the
    ///   left value's and the offending bound's), or nil when the operator can
    ///   work on the values.
    public static func conflict(_ op: ComparisonOperator, _ left: PredicateValue, _ right: PredicateValue)
        -> (left: String, right: String)?
    {
        if case .null = left { return nil }
        if case .null = right { return nil }
        switch op {
        case .equalTo, .notEqualTo:
            // Values of different types are unequal, as `isEqual:` says.
            return nil
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            return orderable(left, right) ? nil : (name(of: left), name(of: right))
        case .between:
            guard case .array(let bounds) = right, bounds.count == 2 else { return (name(of: left), name(of: right)) }
            for bound in bounds where bound != .null && !orderable(left, bound) { return (name(of: left), name(of: bound)) }
            return nil
        case .contains:
            if case .array = left { return nil }  // membership
            return isString(left) && isString(right) ? nil : (name(of: left), name(of: right))
        case .beginsWith, .endsWith, .like, .matches:
            return isString(left) && isString(right) ? nil : (name(of: left), name(of: right))
        case .in:
            switch right {
            case .array, .dictionary: return nil
            case .string: return isString(left) ? nil : (name(of: left), name(of: right))
            default: return (name(of: left), name(of: right))
            }
        case .conformsTo, .utiEquals:
            return nil
        }
    }

    static func isString(_ value: PredicateValue) -> Bool {
        if case .string = value { return true }
        return false
    }

    /// Whether two values order against each other: numbers (booleans
    /// among them) with numbers, strings with strings, dates with dates.
    static func orderable(_ a: PredicateValue, _ b: PredicateValue) -> Bool {
        switch (a, b) {
        case (.int, .int), (.int, .double), (.int, .bool), (.double, .int), (.double, .double), (.double, .bool),
             (.bool, .int), (.bool, .double), (.bool, .bool), (.string, .string), (.date, .date):
            true
        default:
            false
        }
    }
}
