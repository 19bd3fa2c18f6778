// Stage 6b (SQL lowering): SQLite's spelling of SQL.
//
// `?N` placeholders; booleans as 1 and 0; `IS` / `IS NOT` for null-safe
// comparison; byte-wise string work through BLOB casts (SQLite's `length`,
// `substr` on text and GLOB stop at U+0000, its `=`, `<` and `instr` do
// not); LIKE as GLOB with '[' made literal; arrays as JSON text read by
// `json_each`; Sift's functions as `sift_*`.

import Foundation

/// SQLite's dialect.
package struct SQLiteDialect: SQLDialect {
    /// Creates SQLite's dialect (also available as `.sqlite`).
    package init() {}

    package func placeholder(_ index: Int) -> String { "?\(index)" }

    package func literal(_ literal: SQLLiteral) -> String {
        switch literal {
        case .null: "NULL"
        case .boolean(let b): b ? "1" : "0"
        case .integer(let i): String(i)
        case .real(let d): d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)"
        case .emptyText: "''"
        case .emptyArray: "'[]'"
        }
    }

    package func isNotTrue(_ condition: String) -> String { "((\(condition)) IS NOT 1)" }

    package func nullSafeEqual(_ left: String, _ right: String, negated: Bool) -> String {
        "\(left) IS \(negated ? "NOT " : "")\(right)"
    }

    package func contains(_ text: String, _ pattern: String) -> String { "(instr(\(text), \(pattern)) > 0)" }

    package func containsNUL(_ text: String) -> String { "instr(\(text), char(0)) > 0" }

    package func byteLength(_ text: String) -> String { "length(CAST(\(text) AS BLOB))" }

    package func hasAffix(_ text: String, _ part: String, suffix: Bool) -> String {
        let start = suffix ? "-length(CAST(\(part) AS BLOB))" : "1, length(CAST(\(part) AS BLOB))"
        return "(substr(CAST(\(text) AS BLOB), \(start)) = CAST(\(part) AS BLOB))"
    }

    /// GLOB's wildcards are LIKE's; its only other metacharacter, '[', is made
    /// literal, and so is each character a backslash escapes (`\*` is `[*]`).
    ///
    /// - Parameter pattern: The pattern's text, with `*` and `?` as its
    ///   wildcards and `\` making the character after it literal.
    /// - Returns: The GLOB pattern, each literal '[', `*` and `?` written in
    ///   brackets.
    package func wildcardPattern(_ pattern: String) -> String {
        var result = String.UnicodeScalarView()
        var escaped = false
        for scalar in pattern.unicodeScalars {
            switch (escaped, scalar) {
            case (false, "\\"):
                escaped = true
                continue
            case (true, "*"), (true, "?"), (_, "["):
                result.append("[")
                result.append(scalar)
                result.append("]")
            default:
                result.append(scalar)
            }
            escaped = false
        }
        if escaped { result.append("\\") }
        return String(result)
    }

    package func wildcardMatch(_ text: String, _ pattern: String, converted: Bool) -> String {
        converted ? "\(text) GLOB \(pattern)" : "\(text) GLOB replace(\(pattern), '[', '[[]')"
    }

    package func inArray(_ element: String, _ array: String) -> String {
        "\(element) IN (SELECT value FROM json_each(\(array)))"
    }

    package func arrayTable(_ array: String, alias: String) -> String { "json_each(\(array)) AS \(alias)" }

    package func array(_ members: [String]) -> String { "json_array(\(members.joined(separator: ", ")))" }

    /// A JSON array; nil when a member has no JSON form SQLite reads back
    /// whole (binary data, a non-finite number, text holding U+0000, where
    /// SQLite 3.40's JSON stops).
    ///
    /// - Parameter members: The values the array holds.
    /// - Returns: The JSON array as `.text`, or nil when a member has no JSON
    ///   form SQLite reads back whole.
    package func arrayValue(_ members: [SQLValue]) -> SQLValue? {
        var parts: [String] = []
        for member in members {
            switch member {
            case .null: parts.append("null")
            case .integer(let i): parts.append(String(i))
            case .real(let d):
                guard d.isFinite else { return nil }
                parts.append(literal(.real(d)))
            case .text(let s):
                if s.utf8.contains(0) { return nil }
                guard let data = try? JSONEncoder().encode(s) else { return nil }
                parts.append(String(decoding: data, as: UTF8.self))
            case .blob, .array: return nil
            }
        }
        return .text("[" + parts.joined(separator: ",") + "]")
    }

    package func columnType(_ type: SQLColumnType) -> String {
        switch type {
        // Core Data's names; SQLite's affinities follow from them.
        case .integer: "INTEGER"
        case .real: "FLOAT"
        case .text: "VARCHAR"
        case .blob: "BLOB"
        case .timestamp: "TIMESTAMP"
        case .decimal: "DECIMAL"
        }
    }

    package func compositeKeyTableOptions() -> String { " WITHOUT ROWID" }

    /// The statement that describes how SQLite would run `sql`: rows whose
    /// fourth column is a step of the plan.
    ///
    /// - Parameter sql: The statement's text.
    /// - Returns: `EXPLAIN QUERY PLAN` followed by `sql`; it takes the same
    ///   bindings.
    package func explainQueryPlan(_ sql: String) -> String { "EXPLAIN QUERY PLAN " + sql }

    package var catalogQuery: String { #"SELECT "type", "name" FROM "sqlite_master""# }
}

extension SQLDialect where Self == SQLiteDialect {
    /// SQLite's dialect.
    package static var sqlite: SQLiteDialect { SQLiteDialect() }
}
