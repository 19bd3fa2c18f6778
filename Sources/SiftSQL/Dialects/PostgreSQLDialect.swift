// Stage 6b (SQL lowering): PostgreSQL's spelling of SQL.
//
// `$n` placeholders; text columns `COLLATE "C"`, so text compares by code
// point as in memory, whatever the database's locale; two-valued nil logic
// through `IS [NOT] DISTINCT FROM` and `IS NOT TRUE`; LIKE with an explicit
// ESCAPE for Sift's `*` and `?`; arrays as `ARRAY[…]` read with `= ANY` and
// `unnest`; dates as seconds since 2001 in double precision, as everywhere.
// PostgreSQL has none of Sift's SQL functions: a term that needs one (a
// folded comparison without companion columns, MATCHES, a built-in or custom
// function) is not expressible here, and the planner runs it in memory.

import Foundation

/// PostgreSQL's dialect.
package struct PostgreSQLDialect: SQLDialect {
    /// Creates PostgreSQL's dialect.
    package init() {}

    package func placeholder(_ index: Int) -> String { "$\(index)" }

    package func literal(_ literal: SQLLiteral) -> String {
        switch literal {
        case .null: "NULL"
        case .boolean(let b): b ? "TRUE" : "FALSE"
        case .integer(let i): String(i)
        case .real(let d): d.isFinite ? "\(d)::double precision" : "'\(d > 0 ? "Infinity" : d < 0 ? "-Infinity" : "NaN")'::double precision"
        case .emptyText: "''"
        case .emptyArray: "ARRAY[]::bigint[]"
        }
    }

    package func isNotTrue(_ condition: String) -> String { "((\(condition)) IS NOT TRUE)" }

    package func nullSafeEqual(_ left: String, _ right: String, negated: Bool) -> String {
        "\(left) IS \(negated ? "" : "NOT ")DISTINCT FROM \(right)"
    }

    package func contains(_ text: String, _ pattern: String) -> String { "(strpos(\(text), \(pattern)) > 0)" }

    /// PostgreSQL's text cannot hold U+0000.
    ///
    /// - Parameter text: The text tested, rendered.
    /// - Returns: `FALSE`.
    package func containsNUL(_ text: String) -> String { "FALSE" }

    package func byteLength(_ text: String) -> String { "octet_length(\(text))" }

    package func hasAffix(_ text: String, _ part: String, suffix: Bool) -> String {
        suffix ? "(right(\(text), length(\(part))) = \(part))" : "starts_with(\(text), \(part))"
    }

    /// Sift's `*` and `?` as LIKE's `%` and `_`, LIKE's own metacharacters
    /// (and the escape character) escaped.
    ///
    /// - Parameter pattern: The pattern's text, with `*` and `?` as its
    ///   wildcards.
    /// - Returns: The LIKE pattern, read with a backslash as its escape
    ///   character.
    package func wildcardPattern(_ pattern: String) -> String {
        var result = ""
        var escaped = false
        for character in pattern.unicodeScalars {
            switch (escaped, character) {
            case (false, "\\"):
                escaped = true
                continue
            case (false, "*"): result += "%"
            case (false, "?"): result += "_"
            case (_, "%"), (_, "_"), (_, "\\"): result += "\\" + String(character)
            default: result.unicodeScalars.append(character)
            }
            escaped = false
        }
        if escaped { result += "\\\\" }
        return result
    }

    package func wildcardMatch(_ text: String, _ pattern: String, converted: Bool) -> String {
        if converted { return "(\(text) LIKE \(pattern) ESCAPE '\\')" }
        let escaped = "replace(replace(replace(\(pattern), '\\', '\\\\'), '%', '\\%'), '_', '\\_')"
        return "(\(text) LIKE replace(replace(\(escaped), '*', '%'), '?', '_') ESCAPE '\\')"
    }

    package func inArray(_ element: String, _ array: String) -> String { "(\(element) = ANY(\(array)))" }

    package func arrayTable(_ array: String, alias: String) -> String { "unnest(\(array)) AS \(alias)(value)" }

    package func array(_ members: [String]) -> String { "ARRAY[\(members.joined(separator: ", "))]" }

    /// One array parameter, its members of one type: integers, reals
    /// (integers among them made reals) or text. Nil for members PostgreSQL
    /// keeps in no such array (nil, data, text holding U+0000): memory runs those.
    ///
    /// - Parameter members: The values the array holds.
    /// - Returns: An `.array` of the members, or nil when they are not all
    ///   numbers or all text, or one is nil, data or text holding U+0000.
    package func arrayValue(_ members: [SQLValue]) -> SQLValue? {
        var integers = true, reals = true, texts = true
        for member in members {
            switch member {
            case .integer: texts = false
            case .real: integers = false; texts = false
            case .text(let s):
                if s.utf8.contains(0) { return nil }
                integers = false; reals = false
            case .null, .blob, .array: return nil
            }
        }
        if integers || texts { return .array(members) }
        guard reals else { return nil }
        return .array(members.map { if case .integer(let i) = $0 { .real(Double(i)) } else { $0 } })
    }

    package var hasSiftFunctions: Bool { false }
    /// POSIX-style matching (`~`), for the MATCHES patterns whose meaning
    /// is the same as ICU's (`RegularExpressionTranslation`).
    package var regularExpressionOperator: String? { "~" }
    /// NULL sorts after every value there.
    package var sortsNullsFirst: Bool { false }

    package var textHoldsNUL: Bool { false }

    package func columnType(_ type: SQLColumnType) -> String {
        switch type {
        case .integer: "BIGINT"
        case .real, .decimal, .timestamp: "DOUBLE PRECISION"
        case .text: "TEXT COLLATE \"C\""
        case .blob: "BYTEA"
        }
    }

    package func compositeKeyTableOptions() -> String { "" }

    package var realType: String { "DOUBLE PRECISION" }
    package var integerType: String { "BIGINT" }

    /// Division by zero is nil, as in memory (PostgreSQL would raise).
    ///
    /// - Parameters:
    ///   - left: The dividend, rendered.
    ///   - right: The divisor, rendered.
    /// - Returns: A double-precision expression of the quotient, NULL where
    ///   `right` is 0.
    package func divide(_ left: String, _ right: String) -> String {
        "(CAST(\(left) AS DOUBLE PRECISION) / NULLIF(\(right), 0))"
    }

    /// Integer division by zero is nil, as in memory (PostgreSQL would raise).
    ///
    /// - Parameters:
    ///   - left: The dividend, rendered.
    ///   - right: The divisor, rendered.
    /// - Returns: A bigint expression of the quotient, truncated toward zero,
    ///   NULL where `right` is 0.
    package func integerDivide(_ left: String, _ right: String) -> String {
        "(\(left) / NULLIF(\(right), 0))"
    }

    /// `LIMIT NULL` is no limit (a negative limit is an error).
    package var unlimited: SQLValue { .null }

    package func insertIgnoringDuplicates() -> (prefix: String, suffix: String) { ("", " ON CONFLICT DO NOTHING") }

    /// The statement that describes how PostgreSQL would run `sql`.
    ///
    /// - Parameter sql: The statement's text.
    /// - Returns: `EXPLAIN` followed by `sql`; it takes the same bindings.
    package func explain(_ sql: String) -> String { "EXPLAIN " + sql }

    package var catalogQuery: String {
        #"SELECT 'table', tablename FROM pg_catalog.pg_tables WHERE schemaname = current_schema()"#
    }
}

extension SQLDialect where Self == PostgreSQLDialect {
    /// PostgreSQL's dialect.
    package static var postgreSQL: PostgreSQLDialect { PostgreSQLDialect() }
}
