// Stage 0 (values): a MATCHES pattern compiled once, with a bound on how
// much backtracking it can do.
//
// The regular expression engine backtracks, and a hostile pattern (`(a+)+b`)
// takes time exponential in the subject's length, so a match normally runs
// with a step budget (progress reports from the engine). The reports cost
// about a fifth of a short match. Most patterns cannot blow up: when no
// quantifier applies to a group and there are no back-references, the
// engine can try at most (n + 1) iteration counts per quantifier and one
// branch per alternation, so the steps on a subject of n UTF-16 units are
// bounded by a polynomial. When that bound is within the budget, the match
// runs without reports.

import Foundation

/// A MATCHES pattern: the compiled regular expression, and what bounds its
/// backtracking when the pattern's shape allows it.
public struct MatchesPattern: @unchecked Sendable {
    /// The expression compiled, as `StringMatching.regex` wraps it.
    public let regex: NSRegularExpression
    /// The pattern as written.
    public let pattern: String
    /// The number of quantifiers and `|`s, when backtracking is bounded by a
    /// polynomial in the subject's length; nil for a pattern that may blow up
    /// (a quantified group, a back-reference) or that this scan does not read.
    let shape: (quantifiers: Int, alternations: Int)?
    /// The compiled pattern's length in UTF-16 units.
    let patternLength: Int

    init(regex: NSRegularExpression, pattern: String) {
        self.regex = regex
        self.pattern = pattern
        // What the engine runs: the pattern as wrapped.
        shape = Self.shape(of: regex.pattern)
        patternLength = regex.pattern.utf16.count
    }

    /// Whether a match against a subject of `length` UTF-16 units surely ends
    /// within `stepLimit` steps, so it needs no budget.
    ///
    /// - Parameters:
    ///   - length: The subject's length, in UTF-16 units.
    ///   - stepLimit: The most steps the match may take.
    /// - Returns: True when the pattern's shape bounds its steps on such a
    ///   subject within `stepLimit`; false when it does not, or may not.
    public func isBounded(length: Int, stepLimit: Int) -> Bool {
        guard let shape, shape.alternations < 32, length < Int(Int32.max) else { return false }
        // Paths: (n + 1) choices per quantifier, two per `|` (a bound on the
        // product of the branch counts); each path costs at most the
        // pattern's and the subject's length, per quantifier.
        var bound = patternLength + length + 1
        func times(_ factor: Int) -> Bool {
            let (product, overflow) = bound.multipliedReportingOverflow(by: factor)
            bound = product
            return !overflow && product <= stepLimit
        }
        guard times(shape.quantifiers + 1), times(4), times(1 << shape.alternations) else { return false }
        for _ in 0..<shape.quantifiers where !times(length + 1) { return false }
        return true
    }

    /// Reads `pattern` as ICU's syntax: counts its quantifiers and
    /// alternations; nil when a quantifier applies to a group, on a
    /// back-reference, and on constructs it does not read (`\Q…\E`,
    /// comments, free-spacing mode).
    static func shape(of pattern: String) -> (quantifiers: Int, alternations: Int)? {
        let units = Array(pattern.utf8)
        var (index, quantifiers, alternations) = (0, 0, 0)
        /// Whether the last thing read was a group's `)`.
        var afterGroup = false
        func at(_ offset: Int) -> UInt8? { index + offset < units.count ? units[index + offset] : nil }
        while index < units.count {
            let unit = units[index]
            switch unit {
            case UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "?"), UInt8(ascii: "{"):
                if afterGroup { return nil }
                quantifiers += 1
                if unit == UInt8(ascii: "{") {
                    while index < units.count, units[index] != UInt8(ascii: "}") { index += 1 }
                }
                // A lazy or possessive suffix is part of the same quantifier.
                if let next = at(1), next == UInt8(ascii: "?") || next == UInt8(ascii: "+") { index += 1 }
                index += 1
                continue
            case UInt8(ascii: "\\"):
                guard let next = at(1) else { return nil }
                switch next {
                case UInt8(ascii: "1")...UInt8(ascii: "9"), UInt8(ascii: "k"), UInt8(ascii: "Q"): return nil
                default:
                    // `\p{…}`, `\x{…}`, `\N{…}`: one atom.
                    index += 2
                    if at(0) == UInt8(ascii: "{") {
                        while index < units.count, units[index] != UInt8(ascii: "}") { index += 1 }
                        index += 1
                    }
                }
            case UInt8(ascii: "["):
                // A set, nested sets and escapes inside; a `]` first is literal.
                var depth = 0
                index += 1
                if at(0) == UInt8(ascii: "^") { index += 1 }
                if at(0) == UInt8(ascii: "]") { index += 1 }
                while index < units.count {
                    let member = units[index]
                    if member == UInt8(ascii: "\\") {
                        if at(1) == UInt8(ascii: "Q") { return nil }
                        index += 2
                        continue
                    }
                    if member == UInt8(ascii: "[") { depth += 1 }
                    if member == UInt8(ascii: "]") {
                        if depth == 0 { break }
                        depth -= 1
                    }
                    index += 1
                }
                guard index < units.count else { return nil }
                index += 1
            case UInt8(ascii: "("):
                if at(1) == UInt8(ascii: "?") {
                    // Comments and free-spacing mode are not read; other
                    // flags, lookarounds and non-capturing groups are groups.
                    var flag = index + 2
                    if flag < units.count, units[flag] == UInt8(ascii: "#") { return nil }
                    while flag < units.count, units[flag] != UInt8(ascii: ":"), units[flag] != UInt8(ascii: ")") {
                        if units[flag] == UInt8(ascii: "x") { return nil }
                        flag += 1
                    }
                    index += 1  // the `?` is not a quantifier
                }
                index += 1
            case UInt8(ascii: ")"):
                index += 1
                afterGroup = true
                continue
            case UInt8(ascii: "|"):
                alternations += 1
                index += 1
            default:
                index += 1
            }
            afterGroup = false
        }
        return (quantifiers, alternations)
    }
}
