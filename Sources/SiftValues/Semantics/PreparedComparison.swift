// Stage 0 (values): one comparison operator applied to a left value, with its
// right operand prepared once (folded, compiled to a regular expression or a
// LIKE pattern) when it is a constant.

import Foundation

/// A comparison with its right operand ready: `test(left)` answers it. The
/// memory lowering tests every object with it; the optimizer folds constant
/// comparisons with it.
public struct PreparedComparison {
    let op: ComparisonOperator
    let options: ComparisonOptions
    let right: PredicateValue
    /// The right operand folded by the options, when it is a string.
    let foldedRight: String?
    /// The LIKE pattern's scalars.
    let likePattern: [Unicode.Scalar]
    /// The MATCHES pattern, compiled.
    let regex: MatchesPattern?
    /// The most steps a MATCHES or LIKE pattern may take on one value.
    let patternSteps: Int
    /// The folded members of an IN list of strings.
    let foldedMembers: [PredicateValue]?
    /// The members of an IN list of numbers, for a hashed lookup.
    let numericMembers: Set<Double>?
    /// With `[c]` or `[d]` and a constant string that folds to ASCII: its
    /// folded bytes, which an ASCII value is compared with as it is read,
    /// without being folded into a new string first.
    let asciiRight: [UInt8]?

    /// Prepares a comparison against a right operand: folds a string by the
    /// options, compiles a `MATCHES` or `LIKE` pattern, and sets up a hashed
    /// lookup for a long `IN` list of numbers.
    ///
    /// - Parameters:
    ///   - op: The comparison operator.
    ///   - options: The comparison options, such as `[cd]`.
    ///   - right: The right operand.
    public init(_ op: ComparisonOperator, _ options: ComparisonOptions, right: PredicateValue) {
        self.op = op
        self.options = options
        self.right = right
        if case .string(let s) = right {
            let folded = StringFolding.fold(s, options)
            foldedRight = folded
            likePattern = op == .like ? Array(folded.unicodeScalars) : []
            regex = op == .matches ? StringMatching.regex(s, options) : nil
        } else {
            foldedRight = nil
            likePattern = []
            regex = nil
        }
        patternSteps = regex == nil && op != .like ? 0 : PredicateLimits.standard.regularExpressionSteps
        if case .array(let members) = right, members.count > 8,
           members.allSatisfy({ if case .int(let i) = $0 { i.magnitude < 1 << 53 } else if case .double = $0 { true } else { false } }) {
            numericMembers = Set(members.compactMap(ValueComparison.number))
        } else {
            numericMembers = nil
        }
        if let foldedRight, options.foldingFlags != 0, foldedRight.utf8.allSatisfy({ $0 < 0x80 }),
           [.equalTo, .notEqualTo, .beginsWith, .endsWith, .contains].contains(op) {
            asciiRight = Array(foldedRight.utf8)
        } else {
            asciiRight = nil
        }
        if case .array(let members) = right, !options.isEmpty {
            foldedMembers = members.map {
                if case .string(let s) = $0 { return .string(StringFolding.fold(s, options)) }
                return $0
            }
        } else {
            foldedMembers = nil
        }
    }

    /// The left value folded by the options, when it is a string.
    @inline(__always)
    func fold(_ value: PredicateValue) -> String? {
        guard case .string(let s) = value else { return nil }
        return options.isEmpty ? s : StringFolding.fold(s, options)
    }

    func equal(_ left: PredicateValue) -> Bool {
        if let folded = foldedRight, let l = fold(left) { return ValueComparison.compareUTF8(l, folded) == 0 }
        return options.isEmpty ? ValueComparison.equal(left, right) : ValueComparison.equal(left, right, options)
    }

    func order(_ left: PredicateValue, _ right: PredicateValue) -> Int? {
        ValueComparison.order(left, right, options)
    }

    /// Whether the comparison holds for a left value.
    ///
    /// A `MATCHES` or `LIKE` pattern that runs past its step budget records an
    /// `EvaluationError` for the evaluation to throw, and the answer is false.
    ///
    /// - Parameter left: The left operand.
    /// - Returns: True when `left` compares with the right operand as the
    ///   operator asks; false otherwise, including when the values do not
    ///   compare or a `MATCHES` pattern is not a valid regular expression.
    public func test(_ left: PredicateValue) -> Bool {
        if let asciiRight, case .string(let s) = left, let holds = asciiTest(s, asciiRight) { return holds }
        switch op {
        case .equalTo:
            return equal(left)
        case .notEqualTo:
            return !equal(left)
        case .lessThan:
            if let folded = foldedRight, let l = fold(left) { return ValueComparison.compareUTF8(l, folded) < 0 }
            return (ValueComparison.order(left, right) ?? 0) < 0
        case .lessThanOrEqualTo:
            if let folded = foldedRight, let l = fold(left) { return ValueComparison.compareUTF8(l, folded) <= 0 }
            return ValueComparison.order(left, right).map { $0 <= 0 } ?? false
        case .greaterThan:
            if let folded = foldedRight, let l = fold(left) { return ValueComparison.compareUTF8(l, folded) > 0 }
            return (ValueComparison.order(left, right) ?? 0) > 0
        case .greaterThanOrEqualTo:
            if let folded = foldedRight, let l = fold(left) { return ValueComparison.compareUTF8(l, folded) >= 0 }
            return ValueComparison.order(left, right).map { $0 >= 0 } ?? false
        case .between:
            guard case .array(let bounds) = right, bounds.count == 2,
                  let low = order(left, bounds[0]), let high = order(left, bounds[1]) else { return false }
            return low >= 0 && high <= 0
        case .in:
            switch right {
            case .array(let members):
                if let numericMembers {
                    // An integer past 2^53 has no exact double: compared one by one.
                    if case .int(let i) = left, i.magnitude >= 1 << 53 {
                        return members.contains { ValueComparison.equal(left, $0) }
                    }
                    guard let n = ValueComparison.number(left) else { return false }
                    return numericMembers.contains(n)
                }
                if let foldedMembers, let l = fold(left) {
                    return foldedMembers.contains { ValueComparison.equal(.string(l), $0) }
                }
                return members.contains { ValueComparison.equal(left, $0) }
            case .string:
                guard let folded = foldedRight, let l = fold(left) else { return false }
                return StringMatching.contains(folded, l)
            case .dictionary(let d):
                return d.values.contains { ValueComparison.equal(left, $0, options) }
            case .null:
                return false
            default:
                return equal(left)
            }
        case .contains:
            if case .array(let members) = left {
                return members.contains { ValueComparison.equal($0, right, options) }
            }
            guard let folded = foldedRight, let l = fold(left) else { return false }
            return StringMatching.contains(l, folded)
        case .beginsWith:
            guard let folded = foldedRight, let l = fold(left) else { return false }
            return StringMatching.hasPrefix(l, folded)
        case .endsWith:
            guard let folded = foldedRight, let l = fold(left) else { return false }
            return StringMatching.hasSuffix(l, folded)
        case .like:
            guard foldedRight != nil, let l = fold(left) else { return false }
            return StringMatching.like(l, likePattern, stepLimit: patternSteps)
        case .matches:
            guard let regex, case .string(let s) = left else { return false }
            let subject = options.contains(.diacriticInsensitive)
                ? StringFolding.fold(s, options.subtracting(.caseInsensitive)) : s
            return StringMatching.matches(subject, regex, stepLimit: patternSteps)
        case .conformsTo, .utiEquals:
            return false
        }
    }

    /// `==`, `!=`, `BEGINSWITH`, `ENDSWITH` or `CONTAINS` with `[c]`/`[d]`
    /// between an ASCII value and the folded ASCII constant: the value's
    /// bytes folded as they are compared (an ASCII string folds to its
    /// lower case with `[c]`, to itself with `[d]`). Nil when the value is
    /// not ASCII (folding may then change it more: the general path).
    @inline(__always)
    func asciiTest(_ value: String, _ pattern: [UInt8]) -> Bool? {
        let lowers = options.contains(.caseInsensitive)
        let op = op
        return value.utf8.withContiguousStorageIfAvailable { text -> Bool? in
            for byte in text where byte >= 0x80 { return nil }
            @inline(__always) func folded(_ byte: UInt8) -> UInt8 {
                lowers && byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
            }
            func matches(at start: Int) -> Bool {
                for index in pattern.indices where folded(text[start + index]) != pattern[index] { return false }
                return true
            }
            let (n, m) = (text.count, pattern.count)
            switch op {
            case .equalTo: return n == m && matches(at: 0)
            case .notEqualTo: return !(n == m && matches(at: 0))
            case .beginsWith: return m > 0 && n >= m && matches(at: 0)
            case .endsWith: return m > 0 && n >= m && matches(at: n - m)
            default:
                guard m > 0, n >= m else { return false }
                for start in 0...(n - m) where matches(at: start) { return true }
                return false
            }
        } ?? nil
    }

    /// A test for a constant right operand, with fast paths for the common
    /// cases: numbers compared with a number, strings with a string.
    ///
    /// - Returns: A closure that gives what `test(_:)` gives for a left operand.
    public func makeTest() -> (PredicateValue) -> Bool {
        guard options.isEmpty else { return test }
        switch (op, right) {
        case (.equalTo, .int(let k)):
            return { if case .int(let x) = $0 { return x == k }; return ValueComparison.equal($0, .int(k)) }
        case (.greaterThan, .int(let k)):
            return { if case .int(let x) = $0 { return x > k }; return (ValueComparison.order($0, .int(k)) ?? 0) > 0 }
        case (.lessThan, .int(let k)):
            return { if case .int(let x) = $0 { return x < k }; return (ValueComparison.order($0, .int(k)) ?? 0) < 0 }
        case (.greaterThanOrEqualTo, .int(let k)):
            return { if case .int(let x) = $0 { return x >= k }; return ValueComparison.order($0, .int(k)).map { $0 >= 0 } ?? false }
        case (.lessThanOrEqualTo, .int(let k)):
            return { if case .int(let x) = $0 { return x <= k }; return ValueComparison.order($0, .int(k)).map { $0 <= 0 } ?? false }
        case (.greaterThan, .double(let k)):
            return { if case .double(let x) = $0 { return x > k }; return (ValueComparison.order($0, .double(k)) ?? 0) > 0 }
        case (.lessThan, .double(let k)):
            return { if case .double(let x) = $0 { return x < k }; return (ValueComparison.order($0, .double(k)) ?? 0) < 0 }
        case (.equalTo, .string(let k)):
            return { if case .string(let x) = $0 { return ValueComparison.compareUTF8(x, k) == 0 }; return false }
        case (.beginsWith, .string(let k)):
            return { if case .string(let x) = $0 { return StringMatching.hasPrefix(x, k) }; return false }
        default:
            return test
        }
    }
}
