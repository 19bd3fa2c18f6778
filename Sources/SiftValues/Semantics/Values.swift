// Stage 0 (values): the meaning of comparisons, written once.
//
// These functions are the reference semantics of Sift (Grammar/README.md,
// "Meaning"): two-valued nil logic, numbers compared by value across integer
// and floating types, strings compared by Unicode scalars unless options fold
// them, empty patterns that never match, LIKE wildcards over scalars, MATCHES
// over the whole string. The SQL lowering registers the same folding with
// SQLite, so both backends agree.

import Foundation

/// Comparisons of values under two-valued logic.
public enum ValueComparison {
    /// The order of two values, or nil when they do not compare (either is
    /// nil, or their kinds differ). Numbers compare by value; booleans are 0
    /// and 1; strings compare by their UTF-8 bytes (Unicode scalar order).
    ///
    /// - Parameters:
    ///   - a: The left value.
    ///   - b: The right value.
    /// - Returns: -1 when `a` comes first, 0 when they are equal, 1 when `b`
    ///   comes first; nil when they do not compare.
    @inlinable
    public static func order(_ a: PredicateValue, _ b: PredicateValue) -> Int? {
        switch (a, b) {
        case (.int(let x), .int(let y)): return x < y ? -1 : (x > y ? 1 : 0)
        case (.double(let x), .double(let y)): return x < y ? -1 : (x > y ? 1 : (x == y ? 0 : nil))
        case (.string(let x), .string(let y)): return compareUTF8(x, y)
        case (.date(let x), .date(let y)):
            let (s, t) = (x.timeIntervalSinceReferenceDate, y.timeIntervalSinceReferenceDate)
            return s < t ? -1 : (s > t ? 1 : 0)
        case (.int(let x), .double(let y)): return exactOrder(x, y)
        case (.double(let x), .int(let y)): return exactOrder(y, x).map { -$0 }
        default:
            if let x = number(a), let y = number(b) { return x < y ? -1 : (x > y ? 1 : (x == y ? 0 : nil)) }
            switch (a, b) {
            case (.uuid(let x), .uuid(let y)): return x == y ? 0 : compareUTF8(x.uuidString, y.uuidString)
            case (.uuid(let x), .string(let y)): return compareUTF8(x.uuidString, y.uppercased())
            case (.string(let x), .uuid(let y)): return compareUTF8(x.uppercased(), y.uuidString)
            case (.data(let x), .data(let y)): return x == y ? 0 : (x.lexicographicallyPrecedes(y) ? -1 : 1)
            case (.object(let x), .object(let y)): return x == y ? 0 : nil
            // Collections are equal when their members are (numbers by value).
            case (.array(let x), .array(let y)):
                return x.count == y.count && zip(x, y).allSatisfy({ equal($0, $1) }) ? 0 : nil
            case (.dictionary(let x), .dictionary(let y)):
                return x.count == y.count && x.allSatisfy({ key, value in y[key].map { equal(value, $0) } ?? false })
                    ? 0 : nil
            default: return nil
            }
        }
    }

    /// The order of an integer and a floating-point number by their exact
    /// values, as SQLite compares them: 9223372036854775807 is less than
    /// 9223372036854775808.0, though converting it to a double would make
    /// them equal.
    ///
    /// - Parameters:
    ///   - x: The integer.
    ///   - y: The floating-point number.
    /// - Returns: -1 when `x` is less, 0 when they are equal, 1 when `x` is
    ///   greater; nil when `y` is not a number.
    @inlinable
    public static func exactOrder(_ x: Int64, _ y: Double) -> Int? {
        if y.isNaN { return nil }
        // 2^63 and beyond, or below -2^63: past every integer.
        if y >= 9_223_372_036_854_775_808.0 { return -1 }
        if y < -9_223_372_036_854_775_808.0 { return 1 }
        let whole = Int64(y.rounded(.towardZero))
        if x != whole { return x < whole ? -1 : 1 }
        let fraction = y - Double(whole)
        return fraction > 0 ? -1 : (fraction < 0 ? 1 : 0)
    }

    /// The value as a number, if it is one (booleans are 0 and 1).
    ///
    /// - Parameter value: The value to read.
    /// - Returns: The number as a double, or nil for a value that is not a
    ///   number or a boolean.
    @inlinable
    public static func number(_ value: PredicateValue) -> Double? {
        switch value {
        case .int(let i): Double(i)
        case .double(let d): d
        case .bool(let b): b ? 1 : 0
        default: nil
        }
    }

    /// Byte-wise order of two strings' UTF-8, which is the order of their
    /// Unicode scalars and SQLite's BINARY collation.
    ///
    /// - Parameters:
    ///   - x: The left string.
    ///   - y: The right string.
    /// - Returns: -1 when `x` comes first, 0 when the strings have the same
    ///   bytes, 1 when `y` comes first.
    @inlinable
    public static func compareUTF8(_ x: String, _ y: String) -> Int {
        var a = x
        var b = y
        return a.withUTF8 { p in
            b.withUTF8 { q in
                let n = min(p.count, q.count)
                if n > 0 {
                    let c = memcmp(p.baseAddress!, q.baseAddress!, n)
                    if c != 0 { return c < 0 ? -1 : 1 }
                }
                return p.count < q.count ? -1 : (p.count > q.count ? 1 : 0)
            }
        }
    }

    /// `a == b` under two-valued logic: nil equals only nil.
    ///
    /// - Parameters:
    ///   - a: The left value.
    ///   - b: The right value.
    /// - Returns: True when both are nil, or when they are the same value
    ///   (numbers by value, strings by their bytes).
    @inlinable
    public static func equal(_ a: PredicateValue, _ b: PredicateValue) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.null, _), (_, .null): return false
        case (.int(let x), .int(let y)): return x == y
        case (.string(let x), .string(let y)): return x.utf8.count == y.utf8.count && compareUTF8(x, y) == 0
        default: return order(a, b) == 0
        }
    }

    /// `a == b` with comparison options applied to strings.
    ///
    /// - Parameters:
    ///   - a: The left value.
    ///   - b: The right value.
    ///   - options: The comparison options, such as `[cd]`.
    /// - Returns: True when the values are equal, two strings once folded by
    ///   `options`.
    public static func equal(_ a: PredicateValue, _ b: PredicateValue, _ options: ComparisonOptions) -> Bool {
        if case .string(let x) = a, case .string(let y) = b, !options.isEmpty {
            return compareUTF8(StringFolding.fold(x, options), StringFolding.fold(y, options)) == 0
        }
        // Arrays member by member, under the same options (`SELF ==[c] {'A'}`).
        if !options.isEmpty, case .array(let x) = a, case .array(let y) = b {
            return x.count == y.count && zip(x, y).allSatisfy { equal($0, $1, options) }
        }
        return equal(a, b)
    }

    /// The order of `a` and `b` with comparison options applied to strings.
    ///
    /// - Parameters:
    ///   - a: The left value.
    ///   - b: The right value.
    ///   - options: The comparison options, such as `[cd]`.
    /// - Returns: -1, 0 or 1 as `order(_:_:)` gives it, two strings compared
    ///   once folded by `options`; nil when the values do not compare.
    public static func order(_ a: PredicateValue, _ b: PredicateValue, _ options: ComparisonOptions) -> Int? {
        if case .string(let x) = a, case .string(let y) = b, !options.isEmpty {
            return compareUTF8(StringFolding.fold(x, options), StringFolding.fold(y, options))
        }
        return order(a, b)
    }
}

/// The string operators, on strings already folded.
public enum StringMatching {
    /// `BEGINSWITH`: never true for an empty pattern.
    ///
    /// - Parameters:
    ///   - text: The string tested.
    ///   - pattern: The prefix looked for.
    /// - Returns: True when `text` starts with the bytes of a non-empty
    ///   `pattern`.
    public static func hasPrefix(_ text: String, _ pattern: String) -> Bool {
        !pattern.isEmpty && text.utf8.starts(with: pattern.utf8)
    }

    /// `ENDSWITH`: never true for an empty pattern.
    ///
    /// - Parameters:
    ///   - text: The string tested.
    ///   - pattern: The suffix looked for.
    /// - Returns: True when `text` ends with the bytes of a non-empty
    ///   `pattern`.
    public static func hasSuffix(_ text: String, _ pattern: String) -> Bool {
        let t = text.utf8
        let p = pattern.utf8
        guard !p.isEmpty, p.count <= t.count else { return false }
        return t.dropFirst(t.count - p.count).elementsEqual(p)
    }

    /// `CONTAINS` (and `IN` with a string on the right): never true for an
    /// empty pattern. UTF-8 is self-synchronizing, so a byte match is a
    /// match of whole scalars.
    ///
    /// - Parameters:
    ///   - text: The string tested.
    ///   - pattern: The substring looked for.
    /// - Returns: True when `text` holds the bytes of a non-empty `pattern`.
    public static func contains(_ text: String, _ pattern: String) -> Bool {
        !pattern.isEmpty && text.utf8.firstRange(of: pattern.utf8) != nil
    }

    /// `LIKE`: `*` matches any run of scalars, `?` exactly one; a backslash
    /// makes the scalar after it literal (`\*`, `\?`, `\\`), as Apple's
    /// LIKE reads it, and a backslash that ends the pattern is itself;
    /// everything else is literal.
    ///
    /// The pattern is cut at its `*`s: the first piece must match at the
    /// start, the last at the end, and each one between at its leftmost place
    /// after the one before (which is the only choice that matters). A piece
    /// without `?` is found in linear time; one with `?` is looked for at
    /// each place, and past `stepLimit` comparisons the match stops,
    /// ``EvaluationError/likeTooCostly(pattern:steps:)`` is recorded for the
    /// evaluation to throw, and the answer is false. Inside a fetch
    /// (``EvaluationBudget``), the comparisons are charged to its budget too,
    /// and past what is left of it the match stops the same way, with
    /// ``EvaluationError/fetchTooCostly(term:steps:)``.
    ///
    /// - Parameters:
    ///   - text: The string tested.
    ///   - pattern: The `LIKE` pattern, as Unicode scalars.
    ///   - stepLimit: The most comparisons the search for long pieces with `?`
    ///     may take (the standard limits' `regularExpressionSteps` by
    ///     default).
    /// - Returns: True when the whole of `text` matches the pattern; false when
    ///   it does not, or when the budget ran out.
    public static func like(_ text: String, _ pattern: [Unicode.Scalar],
                            stepLimit: Int = PredicateLimits.standard.regularExpressionSteps) -> Bool {
        let t = text.unicodeScalars.map(\.value)
        let pieces = likePieces(pattern)
        guard pieces.count > 1 else { return t.count == pieces[0].count && matches(pieces[0][...], t, at: 0) }
        let first = pieces[0]
        let last = pieces[pieces.count - 1]
        guard t.count >= first.count + last.count, matches(first[...], t, at: 0),
              matches(last[...], t, at: t.count - last.count) else { return false }
        var position = first.count
        let end = t.count - last.count
        var steps = 0
        // The fetch's budget, looked up when the first step is charged.
        var budget: EvaluationBudget.Budget?
        var fetchLimit = Int.max
        defer { budget?.used += steps }
        for piece in pieces.dropFirst().dropLast() where !piece.isEmpty {
            guard position + piece.count <= end else { return false }
            let found: Int?
            if !piece.contains(anyScalar) {
                found = t[position..<end].firstRange(of: piece)?.lowerBound
            } else {
                // A short piece costs at most its length a place, as GLOB's
                // does; only long ones are charged to the budget.
                var place: Int?
                var start = position
                while place == nil, start + piece.count <= end {
                    if piece.count > shortPiece {
                        if steps == 0, budget == nil, let current = EvaluationBudget.current {
                            budget = current
                            fetchLimit = current.remaining
                        }
                        steps &+= piece.count
                    }
                    if steps > stepLimit || steps > fetchLimit {
                        var shown = String.UnicodeScalarView()
                        shown.append(contentsOf: pattern)
                        if steps > stepLimit {
                            EvaluationFailure.record(.likeTooCostly(pattern: String(shown), steps: stepLimit))
                        } else {
                            EvaluationFailure.record(.fetchTooCostly(term: "LIKE '\(String(shown))'", steps: budget?.limit ?? 0))
                        }
                        return false
                    }
                    if matches(piece[...], t, at: start) { place = start }
                    start += 1
                }
                found = place
            }
            guard let found else { return false }
            position = found + piece.count
        }
        return true
    }

    /// What a `?` of a LIKE pattern stands for in its pieces: a value no
    /// Unicode scalar has.
    static let anyScalar = UInt32.max

    /// A LIKE pattern cut at its unescaped `*`s, each piece's scalars as
    /// their values, an unescaped `?` as ``anyScalar``, escapes resolved.
    static func likePieces(_ pattern: [Unicode.Scalar]) -> [[UInt32]] {
        var pieces: [[UInt32]] = [[]]
        var i = 0
        while i < pattern.count {
            let scalar = pattern[i]
            i += 1
            switch scalar {
            case "*": pieces.append([])
            case "?": pieces[pieces.count - 1].append(anyScalar)
            case "\\" where i < pattern.count:
                pieces[pieces.count - 1].append(pattern[i].value)
                i += 1
            default: pieces[pieces.count - 1].append(scalar.value)
            }
        }
        return pieces
    }

    /// The longest piece of a LIKE pattern searched without a budget: its
    /// work is linear in the text (the SQL lowering hands such patterns to
    /// GLOB, whose work is the same).
    static let shortPiece = 64

    /// Whether `piece` (no `*`; ``anyScalar`` matches any one scalar) matches
    /// `text` at `offset`.
    static func matches(_ piece: ArraySlice<UInt32>, _ text: [UInt32], at offset: Int) -> Bool {
        guard offset >= 0, offset + piece.count <= text.count else { return false }
        var i = offset
        for p in piece {
            if p != anyScalar && p != text[i] { return false }
            i += 1
        }
        return true
    }

    /// `MATCHES`: the regular expression must match the whole string.
    ///
    /// Unless the pattern's shape bounds its work on `text` within
    /// `stepLimit` steps (`MatchesPattern`), the engine reports its progress
    /// every 10 000 steps; past `stepLimit` steps the match stops,
    /// ``EvaluationError/regularExpressionTooCostly(pattern:steps:)`` is
    /// recorded for the evaluation to throw (``EvaluationFailure``), and the
    /// answer is false. Inside a fetch (``EvaluationBudget``), the steps
    /// reported are charged to its budget too, and past what is left of it
    /// the match stops the same way, with
    /// ``EvaluationError/fetchTooCostly(term:steps:)``. (A pattern whose shape
    /// bounds its work runs without reports, and charges nothing.)
    ///
    /// - Parameters:
    ///   - text: The string tested.
    ///   - pattern: The compiled pattern, from `regex(_:_:)`.
    ///   - stepLimit: The most steps the engine may take (the standard limits'
    ///     `regularExpressionSteps` by default).
    /// - Returns: True when the pattern matches all of `text`; false when it
    ///   does not, or when the budget ran out.
    public static func matches(_ text: String, _ pattern: MatchesPattern,
                               stepLimit: Int = PredicateLimits.standard.regularExpressionSteps) -> Bool {
        let range = NSRange(text.startIndex..<text.endIndex, in: text)
        if pattern.isBounded(length: range.length, stepLimit: stepLimit) {
            return pattern.regex.firstMatch(in: text, options: .anchored, range: range)?.range == range
        }
        let reports = max(1, stepLimit / stepsPerReport)
        // The fetch's budget, shared by every value it tests: charged as
        // the engine reports its steps.
        let budget = EvaluationBudget.current
        let fetchReports = budget.map { $0.remaining / stepsPerReport } ?? Int.max
        var matched = false
        var reported = 0
        var exceeded = false
        var fetchExceeded = false
        pattern.regex.enumerateMatches(in: text, options: [.anchored, .reportProgress], range: range) { match, flags, stop in
            if let match {
                matched = match.range == range
                stop.pointee = true
            } else if flags.contains(.progress) {
                reported += 1
                if reported >= reports {
                    exceeded = true
                    stop.pointee = true
                } else if reported > fetchReports {
                    fetchExceeded = true
                    stop.pointee = true
                }
            }
        }
        budget?.used += reported * stepsPerReport
        if exceeded {
            EvaluationFailure.record(.regularExpressionTooCostly(pattern: pattern.pattern, steps: stepLimit))
            return false
        }
        if fetchExceeded, let budget {
            EvaluationFailure.record(.fetchTooCostly(term: "MATCHES '\(pattern.pattern)'", steps: budget.limit))
            return false
        }
        return matched
    }

    /// How many steps the regular expression engine takes between two
    /// progress reports (ICU's fixed interval).
    static let stepsPerReport = 10_000

    /// Compiles a MATCHES pattern, case-insensitive for `[c]`.
    ///
    /// The pattern is wrapped as `(?:pattern)\z`, so that the engine, which
    /// gives the first match it finds from the start, backtracks until the
    /// match ends where the string does: `'ab' MATCHES 'a|ab'` holds, as in
    /// ICU's `matches()`. A pattern the wrapping breaks (a `#` comment in
    /// `(?x)` mode) is compiled as written.
    ///
    /// - Parameters:
    ///   - pattern: The regular expression, in ICU's syntax.
    ///   - options: The comparison options: `[c]` makes the match
    ///     case-insensitive, `[d]` folds diacritics out of the pattern.
    /// - Returns: The compiled pattern, or nil when it is not a valid regular
    ///   expression.
    public static func regex(_ pattern: String, _ options: ComparisonOptions) -> MatchesPattern? {
        let folded = options.contains(.diacriticInsensitive)
            ? StringFolding.fold(pattern, options.subtracting(.caseInsensitive)) : pattern
        let flags: NSRegularExpression.Options = options.contains(.caseInsensitive) ? [.caseInsensitive] : []
        guard let regex = (try? NSRegularExpression(pattern: "(?:" + folded + ")\\z", options: flags))
            ?? (try? NSRegularExpression(pattern: folded, options: flags)) else { return nil }
        return MatchesPattern(regex: regex, pattern: pattern)
    }
}
