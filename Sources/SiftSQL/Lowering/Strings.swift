// Stage 6b (SQL lowering): the string operators — CONTAINS, BEGINSWITH,
// ENDSWITH, LIKE and MATCHES.
//
// Text may hold U+0000. Prefixes and suffixes are compared as bytes (UTF-8 is
// self-synchronizing, so a byte match is a match of scalars), emptiness as
// `<> ''`, and LIKE falls back to Sift's `like` function for text that holds
// U+0000, patterns the database's wildcard match would run slowly on, and
// patterns known only when the query runs that hold a backslash escape (a
// constant pattern's escapes are written into the database's own pattern).
// Patterns too long for `instr` run through Sift's linear `contains`. A
// database without Sift's functions (PostgreSQL, whose text never holds
// U+0000 and whose LIKE and `strpos` stay linear) gets the plain forms.

import SiftModel
import SiftValues
import SiftTree

extension SQLWriter {
    /// A string comparison: `left` as it is (MATCHES folds itself) and
    /// `folded` as the options fold it.
    mutating func text(_ op: ComparisonOperator, _ options: ComparisonOptions, left: SQLExpression, folded l: SQLExpression,
                       _ right: BoundExpression, _ c: SQLContext) throws(Failure) -> SQLExpression {
        var pattern: String?
        if case .constant(.string(let s)) = right.kind { pattern = StringFolding.fold(s, options) }
        if op == .matches {
            // The database's own regular expressions, for patterns they read as ICU does.
            if !schema.dialect.hasSiftFunctions, schema.dialect.regularExpressionOperator != nil, options.foldingFlags == 0,
               case .constant(.string(let s)) = right.kind, let translated = RegularExpressionTranslation.postgreSQL(s) {
                return .regularExpressionMatch(left, .value(.text(translated)))
            }
            let p: SQLExpression
            if case .constant(.string(let s)) = right.kind { p = .value(.text(s)) } else { p = try value(right, c) }
            return .sift(.matches, [left, p, .literal(options.foldingFlags)], nullable: false)
        }
        // An empty pattern never matches.
        if let pattern, op != .like, pattern.isEmpty { return .false }
        let plain = !schema.dialect.hasSiftFunctions
        if op == .like, let pattern {
            let p = SQLExpression.value(.text(pattern))
            if plain { return .wildcardMatch(l, p) }
            guard SQLLowering.globIsSafe(pattern) else { return .sift(.like, [l, p]) }
            return .caseWhen(.containsNUL(l), then: .sift(.like, [l, p]), else: .wildcardMatch(l, p))
        }
        let r = try operand(right, options, c)
        // A pattern known only when the query runs may be empty.
        let nonEmpty: [SQLExpression] = pattern == nil ? [.compare(.notEqual, r, .emptyText)] : []
        switch op {
        case .contains:
            if !plain, let pattern, pattern.utf8.count > SQLLowering.longestInstrPattern { return .sift(.contains, [l, r]) }
            let instr = SQLExpression.and(nonEmpty + [.contains(l, r)])
            guard pattern == nil, !plain else { return instr }
            // `instr` while the pattern is short.
            return .caseWhen(.compare(.greater, .byteLength(r), .literal(SQLLowering.longestInstrPattern)),
                             then: .sift(.contains, [l, r]), else: instr)
        case .beginsWith:
            if let pattern, let upper = SQLLowering.successor(of: pattern) {
                // An index-usable range: prefix <= s < successor(prefix).
                return .and([.compare(.greaterOrEqual, l, r), .compare(.less, l, .value(.text(upper)))])
            }
            return .and(nonEmpty + [.hasPrefix(l, r)])
        case .endsWith:
            return .and(nonEmpty + [.hasSuffix(l, r)])
        default:
            // A pattern known only when the query runs may hold backslash
            // escapes, which the database's wildcard match does not read:
            // Sift's `like` reads them (a database without it runs the term
            // in memory).
            if plain { return .sift(.like, [l, r]) }
            let slow = SQLExpression.or([.containsNUL(l), .containsNUL(r), .contains(r, .value(.text("\\"))),
                                         .compare(.greater, .byteLength(r), .literal(SQLLowering.longestGlobRun))])
            return .caseWhen(slow, then: .sift(.like, [l, r]), else: .wildcardMatch(l, r))
        }
    }
}
