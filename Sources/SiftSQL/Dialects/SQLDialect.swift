// Stage 6b (SQL lowering): what a dialect decides. The renderer
// (`SQLRenderer`) walks a statement tree and asks its dialect for every
// piece whose spelling differs between databases: placeholders, identifier
// quoting, literals, null-safe comparison, string primitives, arrays bound as
// one parameter, Sift's registered functions, and column types. Each method
// gets its operands already rendered.

import Foundation

/// How one database spells SQL.
package protocol SQLDialect: Sendable {
    /// The placeholder of the `index`th bound parameter (1-based).
    ///
    /// - Parameter index: The parameter's position among the statement's
    ///   bindings, from 1.
    /// - Returns: The placeholder's text, such as `?1` (SQLite) or `$1`
    ///   (PostgreSQL).
    func placeholder(_ index: Int) -> String
    /// An identifier, quoted.
    ///
    /// - Parameter identifier: The identifier (a table, column or alias name),
    ///   unquoted.
    /// - Returns: The identifier as SQL text.
    func quote(_ identifier: String) -> String
    /// Appends an identifier, quoted, to `text`.
    ///
    /// - Parameters:
    ///   - identifier: The identifier (a table, column or alias name),
    ///     unquoted.
    ///   - text: The SQL text being written, which the quoted identifier is
    ///     appended to.
    func appendQuoted(_ identifier: String, to text: inout String)
    /// A literal the lowering itself writes.
    ///
    /// - Parameter literal: The constant.
    /// - Returns: The constant's SQL text.
    func literal(_ literal: SQLLiteral) -> String
    /// A condition that may be NULL, true only when it is TRUE.
    ///
    /// - Parameter condition: The condition, rendered; it may be NULL.
    /// - Returns: A condition, never NULL, that holds where `condition` is
    ///   FALSE or NULL: its negation under two-valued logic.
    func isNotTrue(_ condition: String) -> String
    /// Null-safe equality (`negated`: inequality).
    ///
    /// - Parameters:
    ///   - left: The left operand, rendered.
    ///   - right: The right operand, rendered.
    ///   - negated: Whether to test inequality instead.
    /// - Returns: A condition, never NULL, that holds where the operands are
    ///   equal (two NULLs are equal), or with `negated` where they differ.
    func nullSafeEqual(_ left: String, _ right: String, negated: Bool) -> String
    /// Whether `pattern` occurs in `text`.
    ///
    /// - Parameters:
    ///   - text: The text searched, rendered.
    ///   - pattern: The text looked for, rendered.
    /// - Returns: The condition.
    func contains(_ text: String, _ pattern: String) -> String
    /// Whether `text` holds U+0000.
    ///
    /// - Parameter text: The text tested, rendered.
    /// - Returns: The condition.
    func containsNUL(_ text: String) -> String
    /// The length of `text` in bytes.
    ///
    /// - Parameter text: The text measured, rendered.
    /// - Returns: An integer expression.
    func byteLength(_ text: String) -> String
    /// Whether `text` starts (or, with `suffix`, ends) with `part`, as bytes.
    ///
    /// - Parameters:
    ///   - text: The text tested, rendered.
    ///   - part: The prefix or suffix looked for, rendered.
    ///   - suffix: Whether `part` must end `text` rather than start it.
    /// - Returns: The condition.
    func hasAffix(_ text: String, _ part: String, suffix: Bool) -> String
    /// A constant LIKE pattern (`*`, `?`) as this dialect's wildcard pattern.
    ///
    /// - Parameter pattern: The pattern's text (not SQL), with `*` and `?` as
    ///   its wildcards.
    /// - Returns: The pattern `wildcardMatch(_:_:converted:)` reads when
    ///   `converted` is true, to be bound as a value.
    func wildcardPattern(_ pattern: String) -> String
    /// `text` matched against a pattern: `converted` when the pattern is a
    /// constant already made by `wildcardPattern`, else a LIKE pattern to
    /// convert in SQL.
    ///
    /// - Parameters:
    ///   - text: The text matched, rendered.
    ///   - pattern: The pattern, rendered.
    ///   - converted: Whether `pattern` was made by `wildcardPattern(_:)`;
    ///     when false, it has `*` and `?` wildcards and is converted in SQL.
    /// - Returns: The condition.
    func wildcardMatch(_ text: String, _ pattern: String, converted: Bool) -> String
    /// `element` is a member of the array `array` (a bound parameter or an array expression).
    ///
    /// - Parameters:
    ///   - element: The value looked for, rendered.
    ///   - array: The array, rendered: a bound parameter or an array
    ///     expression.
    /// - Returns: The condition.
    func inArray(_ element: String, _ array: String) -> String
    /// A FROM item listing an array's members in the column `value`.
    ///
    /// - Parameters:
    ///   - array: The array, rendered.
    ///   - alias: The name the FROM item goes by.
    /// - Returns: The FROM item's text.
    func arrayTable(_ array: String, alias: String) -> String
    /// An array of the values.
    ///
    /// - Parameter members: The members, rendered.
    /// - Returns: An array expression.
    func array(_ members: [String]) -> String
    /// A value bound as one array parameter.
    ///
    /// - Parameter members: The values the array holds.
    /// - Returns: One value that binds them as an array, or nil when a member
    ///   has no form in this dialect's arrays.
    func arrayValue(_ members: [SQLValue]) -> SQLValue?
    /// The name of one of Sift's registered functions.
    ///
    /// - Parameter function: The function.
    /// - Returns: Its name in SQL.
    func functionName(_ function: SQLSiftFunction) -> String
    /// A column type.
    ///
    /// - Parameter type: The column's type.
    /// - Returns: The type's name in a `CREATE TABLE`.
    func columnType(_ type: SQLColumnType) -> String
    /// The clause after a table with a composite primary key, if any.
    ///
    /// - Returns: The text written after the closing parenthesis of the
    ///   `CREATE TABLE`; empty for none.
    func compositeKeyTableOptions() -> String
    /// A query listing the database's tables and other schema objects:
    /// rows of (type, name), the type `table` for tables.
    var catalogQuery: String { get }
    /// Whether the connection has Sift's functions (`functionName(_:)`,
    /// `sift_call` for built-in functions): a term that needs them is not
    /// expressible in SQL where it has not, and runs in memory.
    var hasSiftFunctions: Bool { get }
    /// The name of the 8-byte floating-point type, for casts.
    var realType: String { get }
    /// The type a CAST makes 64-bit integers of.
    var integerType: String { get }
    /// Whether text may hold U+0000 (a term comparing with such text is not
    /// expressible where it may not: no stored text holds it, memory decides).
    var textHoldsNUL: Bool { get }
    /// `left / right` as floating point; nil when `right` is 0.
    ///
    /// - Parameters:
    ///   - left: The dividend, rendered.
    ///   - right: The divisor, rendered.
    /// - Returns: A floating-point expression of the quotient.
    func divide(_ left: String, _ right: String) -> String
    /// Division of two integers, truncated toward zero, NULL when `right` is 0.
    ///
    /// - Parameters:
    ///   - left: The dividend, rendered.
    ///   - right: The divisor, rendered.
    /// - Returns: The quotient.
    func integerDivide(_ left: String, _ right: String) -> String
    /// The value a LIMIT takes for "no limit".
    var unlimited: SQLValue { get }
    /// `INSERT` that skips rows whose key is already there: the words
    /// before `INTO`, and after the values.
    ///
    /// - Returns: `prefix`, written between `INSERT` and `INTO`, and `suffix`,
    ///   written after the values; either may be empty.
    func insertIgnoringDuplicates() -> (prefix: String, suffix: String)
    /// The operator matching text against the database's own regular
    /// expressions, when MATCHES patterns in the subset both read alike
    /// run there (nil: MATCHES runs through Sift's function, or in memory).
    var regularExpressionOperator: String? { get }
    /// Whether NULL sorts before every value (ascending) by itself; where it
    /// does not, orderings on nullable values say `NULLS FIRST`/`LAST`.
    var sortsNullsFirst: Bool { get }
}

extension SQLDialect {
    /// Sift's functions as the store registers them: `sift_fold`, `sift_matches`, …
    ///
    /// - Parameter function: The function.
    /// - Returns: Its name, as the store registers it with the database.
    package func functionName(_ function: SQLSiftFunction) -> String {
        switch function {
        case .fold: "sift_fold"
        case .matches: "sift_matches"
        case .like: "sift_like"
        case .contains: "sift_contains"
        case .call: "sift_call"
        }
    }

    package var hasSiftFunctions: Bool { true }
    package var realType: String { "REAL" }
    package var integerType: String { "INTEGER" }
    package var textHoldsNUL: Bool { true }
    package func divide(_ left: String, _ right: String) -> String { "(CAST(\(left) AS \(realType)) / \(right))" }
    package func integerDivide(_ left: String, _ right: String) -> String { "(\(left) / \(right))" }
    package var unlimited: SQLValue { .integer(-1) }
    package func insertIgnoringDuplicates() -> (prefix: String, suffix: String) { (" OR IGNORE", "") }
    package var regularExpressionOperator: String? { nil }
    package var sortsNullsFirst: Bool { true }

    /// Double quotes, a double quote inside written twice (standard SQL).
    ///
    /// - Parameter identifier: The identifier, unquoted.
    /// - Returns: The identifier in double quotes.
    package func quote(_ identifier: String) -> String {
        var text = ""
        appendQuoted(identifier, to: &text)
        return text
    }

    package func appendQuoted(_ identifier: String, to text: inout String) {
        text.append("\"")
        if identifier.utf8.contains(UInt8(ascii: "\"")) {
            text.append(identifier.replacingOccurrences(of: "\"", with: "\"\""))
        } else {
            text.append(identifier)
        }
        text.append("\"")
    }
}
