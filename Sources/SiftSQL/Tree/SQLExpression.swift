// Stage 6b (SQL lowering): SQL expressions as a tree.
//
// The lowering builds these; a dialect renders them (`SQLRenderer`). An
// expression knows whether it may be NULL, and its smart constructors
// normalize as they build (an AND with a FALSE term is FALSE, equality with
// NULL is IS NULL, NOT over a condition that may be NULL is IS NOT TRUE), so
// no decision anywhere reads SQL text. Constants are `SQLValue`s that render
// as bound parameters; the few literals are the lowering's own (`0`, `''`).

import Foundation
import SiftValues


/// A constant the lowering writes into SQL text itself: never a user's value.
package enum SQLLiteral: Hashable, Sendable {
    /// The NULL literal.
    case null
    /// TRUE or FALSE (written `1` and `0` in SQLite).
    case boolean(Bool)
    /// An integer.
    case integer(Int)
    /// A double-precision floating-point number.
    case real(Double)
    /// The empty string.
    case emptyText
    /// An empty JSON array.
    case emptyArray
}

/// A comparison operator of SQL.
package enum SQLComparison: String, Hashable, Sendable {
    /// Equal (`=`).
    case equal = "="
    /// Not equal (`<>`).
    case notEqual = "<>"
    /// Less than (`<`).
    case less = "<"
    /// Less than or equal (`<=`).
    case lessOrEqual = "<="
    /// Greater than (`>`).
    case greater = ">"
    /// Greater than or equal (`>=`).
    case greaterOrEqual = ">="
}

/// An arithmetic operator that keeps its operands' type.
package enum SQLArithmetic: String, Hashable, Sendable {
    /// Addition (`+`).
    case add = "+"
    /// Subtraction (`-`).
    case subtract = "-"
    /// Multiplication (`*`).
    case multiply = "*"
}

/// An aggregate function.
package enum SQLAggregate: String, Hashable, Sendable {
    /// `COUNT`: the number of rows (with no argument), or of non-NULL values.
    case count = "COUNT"
    /// `SUM`: the total of the non-NULL values (NULL when there are none).
    case sum = "SUM"
    /// `AVG`: the mean of the non-NULL values (NULL when there are none).
    case average = "AVG"
    /// `MIN`: the smallest non-NULL value (NULL when there are none).
    case minimum = "MIN"
    /// `MAX`: the largest non-NULL value (NULL when there are none).
    case maximum = "MAX"
}

/// A function Sift registers with the database, running Sift's own code.
package enum SQLSiftFunction: Hashable, Sendable {
    /// `fold(text, flags)`: `StringFolding.fold` with `[c]` = 1, `[d]` = 2.
    case fold
    /// `matches(text, pattern, flags)`: MATCHES over the whole string.
    case matches
    /// `like(text, pattern)`: LIKE as memory computes it.
    case like
    /// `contains(text, pattern)`: CONTAINS in linear time.
    case contains
    /// `call(name, arguments…)`: a built-in function, as memory computes it.
    case call
}

/// An SQL expression: a value or a condition, and whether it may be NULL.
///
/// ```swift
/// let age = SQLExpression.column("t0", "ZAGE", nullable: false)
/// let nickname = SQLExpression.column("t0", "ZNICKNAME", nullable: true)
/// // `notEqual` with a side that may be NULL is null-safe: `IS NOT` in SQLite.
/// let condition = SQLExpression.and([.compare(.greater, age, .value(.integer(30))), .notEqual(nickname, .value(.text("Ace")))])
/// let statement = SQLStatement.select(SQLSelect([.column("t0", "Z_PK", nullable: false)],
///                                                from: .table("ZEMPLOYEE", alias: "t0"), where: [condition]))
/// print(SQLRenderer.render(statement, in: .sqlite).sql)
/// // SELECT t0."Z_PK" FROM "ZEMPLOYEE" AS t0 WHERE (t0."ZAGE" > ?1 AND t0."ZNICKNAME" IS NOT ?2)
/// ```
package struct SQLExpression: Hashable, Sendable {
    indirect enum Node: Hashable, Sendable {
        case column(table: String, name: String)
        case value(SQLValue)
        case parameter(name: String, asArray: Bool)
        case slot(Int)
        case literal(SQLLiteral)
        case and([SQLExpression])
        case or([SQLExpression])
        case not(SQLExpression)
        case isNotTrue(SQLExpression)
        case compare(SQLComparison, SQLExpression, SQLExpression)
        case isNull(SQLExpression, negated: Bool)
        case isDistinct(SQLExpression, SQLExpression, negated: Bool)
        case between(SQLExpression, SQLExpression, SQLExpression)
        case inList(SQLExpression, [SQLExpression])
        case inArray(SQLExpression, SQLExpression)
        case exists(SQLSelect, negated: Bool)
        case scalar(SQLSelect)
        case arithmetic(SQLArithmetic, SQLExpression, SQLExpression)
        case divide(SQLExpression, SQLExpression)
        case integerDivide(SQLExpression, SQLExpression)
        case negate(SQLExpression)
        case castToReal(SQLExpression)
        case castToInteger(SQLExpression)
        case caseWhen(SQLExpression, SQLExpression, SQLExpression)
        case aggregate(SQLAggregate, SQLExpression?)
        case coalesce(SQLExpression, SQLExpression)
        case contains(SQLExpression, SQLExpression)
        case containsNUL(SQLExpression)
        case byteLength(SQLExpression)
        case hasPrefix(SQLExpression, SQLExpression)
        case hasSuffix(SQLExpression, SQLExpression)
        case wildcardMatch(SQLExpression, SQLExpression)
        case regularExpressionMatch(SQLExpression, SQLExpression)
        case sift(SQLSiftFunction, [SQLExpression])
        case builtin(String, [SQLExpression])
        case custom(String, [SQLExpression])
        case jsonArray([SQLExpression])
    }

    let node: Node
    /// Whether the expression may be NULL.
    package let isNullable: Bool

    init(_ node: Node, nullable: Bool) {
        self.node = node
        self.isNullable = nullable
    }

    // MARK: Leaves

    /// A column of the table (or subquery) with alias `table`; an empty
    /// alias for the one table of an UPDATE or DELETE.
    ///
    /// - Parameters:
    ///   - table: The alias of the table or subquery the column belongs to;
    ///     empty for the one table of an UPDATE or DELETE.
    ///   - name: The column's name.
    ///   - nullable: Whether the column may hold NULL.
    /// - Returns: The column, NULL-able as `nullable` says.
    package static func column(_ table: String, _ name: String, nullable: Bool) -> SQLExpression {
        SQLExpression(.column(table: table, name: name), nullable: nullable)
    }

    /// A constant, always a bound parameter; `.null` is the NULL literal.
    ///
    /// - Parameter value: The constant.
    /// - Returns: A bound parameter holding `value`, never NULL; for `.null`, the
    ///   NULL literal.
    package static func value(_ value: SQLValue) -> SQLExpression {
        value == .null ? .null : SQLExpression(.value(value), nullable: false)
    }

    /// A template's `$variable`, bound each time the query runs; `asArray`
    /// for a collection (bound as one array parameter).
    ///
    /// - Parameters:
    ///   - name: The variable's name, without `$`.
    ///   - asArray: Whether the value is a collection bound as one array
    ///     parameter; false by default.
    /// - Returns: A parameter, which may be NULL, that
    ///   `SQLQuery.binding(_:dialect:)` fills.
    package static func parameter(_ name: String, asArray: Bool = false) -> SQLExpression {
        SQLExpression(.parameter(name: name, asArray: asArray), nullable: true)
    }

    /// The `index`th positional parameter of a statement run many times with
    /// different values (a row insert): never shared with another.
    ///
    /// - Parameter index: The slot's position among the statement's bindings,
    ///   from 0.
    /// - Returns: A positional parameter, which may be NULL.
    package static func slot(_ index: Int) -> SQLExpression {
        SQLExpression(.slot(index), nullable: true)
    }

    /// The NULL literal.
    package static let null = SQLExpression(.literal(.null), nullable: true)
    /// The TRUE literal.
    package static let `true` = SQLExpression(.literal(.boolean(true)), nullable: false)
    /// The FALSE literal.
    package static let `false` = SQLExpression(.literal(.boolean(false)), nullable: false)
    /// The empty string, as a literal.
    package static let emptyText = SQLExpression(.literal(.emptyText), nullable: false)

    /// An integer written into the SQL text (a flag, a zero): never a user's value.
    ///
    /// - Parameter value: The integer.
    /// - Returns: The integer as a literal, never NULL.
    package static func literal(_ value: Int) -> SQLExpression { SQLExpression(.literal(.integer(value)), nullable: false) }
    /// A real number written into the SQL text.
    ///
    /// - Parameter value: The real number.
    /// - Returns: The number as a literal, never NULL.
    package static func literal(_ value: Double) -> SQLExpression { SQLExpression(.literal(.real(value)), nullable: false) }

    /// Whether this is the NULL literal.
    package var isNull: Bool { node == .literal(.null) }
    /// Whether this is the constant TRUE or FALSE, and which.
    package var constantTruth: Bool? {
        if case .literal(.boolean(let b)) = node { return b }
        return nil
    }

    // MARK: Logic

    /// The terms joined by AND: nested ANDs flattened, TRUE dropped, FALSE absorbing.
    ///
    /// - Parameter terms: The conditions joined.
    /// - Returns: FALSE when a term is FALSE; TRUE when no term is left; the one
    ///   term left, alone; else their AND, which may be NULL when a term may be.
    package static func and(_ terms: [SQLExpression]) -> SQLExpression {
        connective(terms, and: true)
    }

    /// The terms joined by OR: nested ORs flattened, FALSE dropped, TRUE absorbing.
    ///
    /// - Parameter terms: The conditions joined.
    /// - Returns: TRUE when a term is TRUE; FALSE when no term is left; the one
    ///   term left, alone; else their OR, which may be NULL when a term may be.
    package static func or(_ terms: [SQLExpression]) -> SQLExpression {
        connective(terms, and: false)
    }

    private static func connective(_ terms: [SQLExpression], and: Bool) -> SQLExpression {
        var flat: [SQLExpression] = []
        flat.reserveCapacity(terms.count)
        for term in terms {
            if let truth = term.constantTruth {
                if truth != and { return and ? .false : .true }
                continue
            }
            switch term.node {
            case .and(let inner) where and: flat += inner
            case .or(let inner) where !and: flat += inner
            default: flat.append(term)
            }
        }
        if flat.isEmpty { return and ? .true : .false }
        if flat.count == 1 { return flat[0] }
        return SQLExpression(and ? .and(flat) : .or(flat), nullable: flat.contains { $0.isNullable })
    }

    /// The negation under two-valued logic: a condition that may be NULL
    /// (false) becomes IS NOT TRUE, so its negation is true.
    ///
    /// - Parameter condition: The condition negated.
    /// - Returns: A condition that is never NULL: the other constant for TRUE or
    ///   FALSE, NOT EXISTS for EXISTS (and EXISTS for NOT EXISTS), IS NOT TRUE
    ///   for a condition that may be NULL, else NOT.
    package static func not(_ condition: SQLExpression) -> SQLExpression {
        if let truth = condition.constantTruth { return truth ? .false : .true }
        if case .exists(let select, let negated) = condition.node {
            return SQLExpression(.exists(select, negated: !negated), nullable: false)
        }
        return SQLExpression(condition.isNullable ? .isNotTrue(condition) : .not(condition), nullable: false)
    }

    // MARK: Comparisons

    /// `left op right`; NULL when either is.
    ///
    /// - Parameters:
    ///   - op: The comparison operator.
    ///   - left: The left operand.
    ///   - right: The right operand.
    /// - Returns: The comparison, which may be NULL when either operand may be.
    package static func compare(_ op: SQLComparison, _ left: SQLExpression, _ right: SQLExpression) -> SQLExpression {
        SQLExpression(.compare(op, left, right), nullable: left.isNullable || right.isNullable)
    }

    /// Equality under two-valued logic: with NULL, IS NULL; between two
    /// values that may both be NULL, null-safe equality; else `=` (which an
    /// index can serve).
    ///
    /// - Parameters:
    ///   - left: The left operand.
    ///   - right: The right operand.
    /// - Returns: IS NULL when one side is the NULL literal; null-safe equality
    ///   (never NULL) when both sides may be NULL; else `left = right`, which
    ///   may be NULL when one side may be.
    package static func equal(_ left: SQLExpression, _ right: SQLExpression) -> SQLExpression {
        if right.isNull { return isNull(left) }
        if left.isNull { return isNull(right) }
        if left.isNullable && right.isNullable { return SQLExpression(.isDistinct(left, right, negated: false), nullable: false) }
        return compare(.equal, left, right)
    }

    /// Inequality under two-valued logic: true when exactly one side is NULL.
    ///
    /// - Parameters:
    ///   - left: The left operand.
    ///   - right: The right operand.
    /// - Returns: IS NOT NULL when one side is the NULL literal; null-safe
    ///   inequality when either side may be NULL; else `left <> right`. Never
    ///   NULL.
    package static func notEqual(_ left: SQLExpression, _ right: SQLExpression) -> SQLExpression {
        if right.isNull { return isNotNull(left) }
        if left.isNull { return isNotNull(right) }
        if left.isNullable || right.isNullable { return SQLExpression(.isDistinct(left, right, negated: true), nullable: false) }
        return compare(.notEqual, left, right)
    }

    /// Whether `e` is NULL: never NULL itself.
    ///
    /// - Parameter e: The expression tested.
    /// - Returns: `e IS NULL`.
    package static func isNull(_ e: SQLExpression) -> SQLExpression {
        SQLExpression(.isNull(e, negated: false), nullable: false)
    }

    /// Whether `e` is not NULL: never NULL itself.
    ///
    /// - Parameter e: The expression tested.
    /// - Returns: `e IS NOT NULL`.
    package static func isNotNull(_ e: SQLExpression) -> SQLExpression {
        SQLExpression(.isNull(e, negated: true), nullable: false)
    }

    /// `low <= e <= high`; NULL when any of them is.
    ///
    /// - Parameters:
    ///   - e: The value tested.
    ///   - low: The smallest value in the range.
    ///   - high: The largest value in the range.
    /// - Returns: `e BETWEEN low AND high`, which may be NULL when any of them
    ///   may be.
    package static func between(_ e: SQLExpression, _ low: SQLExpression, _ high: SQLExpression) -> SQLExpression {
        SQLExpression(.between(e, low, high), nullable: e.isNullable || low.isNullable || high.isNullable)
    }

    /// `e IN (members…)`; FALSE for no members.
    ///
    /// - Parameters:
    ///   - e: The value looked for.
    ///   - members: The members of the list.
    /// - Returns: FALSE when `members` is empty, else `e IN (members…)`, which
    ///   may be NULL.
    package static func `in`(_ e: SQLExpression, _ members: [SQLExpression]) -> SQLExpression {
        members.isEmpty ? .false : SQLExpression(.inList(e, members), nullable: true)
    }

    /// `e` is a member of an array bound as one parameter (a JSON array for
    /// SQLite).
    ///
    /// - Parameters:
    ///   - e: The value looked for.
    ///   - array: The array: a bound array parameter, or an expression of an
    ///     array.
    /// - Returns: The membership condition, as the dialect writes it
    ///   (`SQLDialect.inArray(_:_:)`); it may be NULL.
    package static func `in`(_ e: SQLExpression, array: SQLExpression) -> SQLExpression {
        SQLExpression(.inArray(e, array), nullable: true)
    }

    /// Whether the subquery returns a row.
    ///
    /// - Parameter select: The subquery.
    /// - Returns: `EXISTS (select)`, never NULL.
    package static func exists(_ select: SQLSelect) -> SQLExpression {
        SQLExpression(.exists(select, negated: false), nullable: false)
    }

    /// The subquery's one value.
    ///
    /// - Parameters:
    ///   - select: The subquery, which returns one column.
    ///   - nullable: Whether its value may be NULL.
    /// - Returns: The subquery as a value.
    package static func scalar(_ select: SQLSelect, nullable: Bool) -> SQLExpression {
        SQLExpression(.scalar(select), nullable: nullable)
    }

    // MARK: Values

    /// `a op b`; NULL when either is.
    ///
    /// - Parameters:
    ///   - op: The operator.
    ///   - a: The left operand.
    ///   - b: The right operand.
    /// - Returns: `a op b`, which may be NULL when either operand may be.
    package static func arithmetic(_ op: SQLArithmetic, _ a: SQLExpression, _ b: SQLExpression) -> SQLExpression {
        SQLExpression(.arithmetic(op, a, b), nullable: a.isNullable || b.isNullable)
    }

    /// Division in real numbers (NULL on division by zero).
    ///
    /// - Parameters:
    ///   - a: The dividend.
    ///   - b: The divisor.
    /// - Returns: The quotient as a real number, which may be NULL.
    package static func divide(_ a: SQLExpression, _ b: SQLExpression) -> SQLExpression {
        SQLExpression(.divide(a, b), nullable: true)
    }

    /// Division of two integers, truncated toward zero (NULL on division by
    /// zero), as Apple's NSExpression divides integers.
    ///
    /// - Parameters:
    ///   - a: The dividend, an integer.
    ///   - b: The divisor, an integer.
    /// - Returns: The quotient as an integer, which may be NULL.
    package static func integerDivide(_ a: SQLExpression, _ b: SQLExpression) -> SQLExpression {
        SQLExpression(.integerDivide(a, b), nullable: true)
    }

    /// `-a`.
    ///
    /// - Parameter a: The number negated.
    /// - Returns: `-a`, which may be NULL when `a` may be.
    package static func negate(_ a: SQLExpression) -> SQLExpression {
        SQLExpression(.negate(a), nullable: a.isNullable)
    }

    /// `a` as a real number.
    ///
    /// - Parameter a: The value converted.
    /// - Returns: `a` cast to the dialect's real type (`SQLDialect.realType`),
    ///   which may be NULL when `a` may be.
    package static func castToReal(_ a: SQLExpression) -> SQLExpression {
        SQLExpression(.castToReal(a), nullable: a.isNullable)
    }

    /// `CAST(a AS <64-bit integer>)`.
    ///
    /// - Parameter a: The value converted.
    /// - Returns: `a` cast to the dialect's integer type
    ///   (`SQLDialect.integerType`), which may be NULL when `a` may be.
    package static func castToInteger(_ a: SQLExpression) -> SQLExpression {
        SQLExpression(.castToInteger(a), nullable: a.isNullable)
    }

    /// `then` where `condition` is TRUE, else `otherwise`; a constant condition picks its branch here.
    ///
    /// - Parameters:
    ///   - condition: The condition; where it is FALSE or NULL, `otherwise` is
    ///     taken.
    ///   - then: The value where `condition` is TRUE.
    ///   - otherwise: The value elsewhere.
    /// - Returns: `then` or `otherwise` itself when `condition` is a constant,
    ///   else a CASE expression, which may be NULL when either branch may be.
    package static func caseWhen(_ condition: SQLExpression, then: SQLExpression, else otherwise: SQLExpression)
        -> SQLExpression
    {
        if let truth = condition.constantTruth { return truth ? then : otherwise }
        return SQLExpression(.caseWhen(condition, then, otherwise), nullable: then.isNullable || otherwise.isNullable)
    }

    /// An aggregate of `argument` (nil: `COUNT(*)`).
    ///
    /// - Parameters:
    ///   - function: The aggregate function.
    ///   - argument: The value aggregated, or nil (the default) for
    ///     `COUNT(*)`.
    /// - Returns: The aggregate, which may be NULL unless it is a count.
    package static func aggregate(_ function: SQLAggregate, _ argument: SQLExpression? = nil) -> SQLExpression {
        SQLExpression(.aggregate(function, argument), nullable: function != .count)
    }

    /// `a`, or `b` where `a` is NULL.
    ///
    /// - Parameters:
    ///   - a: The value taken where it is not NULL.
    ///   - b: The value taken where `a` is NULL.
    /// - Returns: `COALESCE(a, b)`, which may be NULL only when both may be.
    package static func coalesce(_ a: SQLExpression, _ b: SQLExpression) -> SQLExpression {
        SQLExpression(.coalesce(a, b), nullable: a.isNullable && b.isNullable)
    }

    // MARK: Strings

    /// Whether `pattern` occurs in `text` (byte-wise).
    ///
    /// - Parameters:
    ///   - text: The text searched.
    ///   - pattern: The text looked for.
    /// - Returns: The condition, as the dialect writes it; it may be NULL.
    package static func contains(_ text: SQLExpression, _ pattern: SQLExpression) -> SQLExpression {
        SQLExpression(.contains(text, pattern), nullable: true)
    }

    /// Whether `text` holds U+0000.
    ///
    /// - Parameter text: The text tested.
    /// - Returns: The condition, as the dialect writes it (FALSE where text
    ///   cannot hold U+0000); it may be NULL.
    package static func containsNUL(_ text: SQLExpression) -> SQLExpression {
        SQLExpression(.containsNUL(text), nullable: true)
    }

    /// The length of `text` in UTF-8 bytes.
    ///
    /// - Parameter text: The text measured.
    /// - Returns: An integer, which may be NULL when `text` may be.
    package static func byteLength(_ text: SQLExpression) -> SQLExpression {
        SQLExpression(.byteLength(text), nullable: text.isNullable)
    }

    /// Whether `text` starts with `prefix`, compared as bytes.
    ///
    /// - Parameters:
    ///   - text: The text tested.
    ///   - prefix: The text it must start with.
    /// - Returns: The condition, as the dialect writes it; it may be NULL.
    package static func hasPrefix(_ text: SQLExpression, _ prefix: SQLExpression) -> SQLExpression {
        SQLExpression(.hasPrefix(text, prefix), nullable: true)
    }

    /// Whether `text` ends with `suffix`, compared as bytes.
    ///
    /// - Parameters:
    ///   - text: The text tested.
    ///   - suffix: The text it must end with.
    /// - Returns: The condition, as the dialect writes it; it may be NULL.
    package static func hasSuffix(_ text: SQLExpression, _ suffix: SQLExpression) -> SQLExpression {
        SQLExpression(.hasSuffix(text, suffix), nullable: true)
    }

    /// Whether `text` matches `pattern`, written with LIKE's wildcards (`*`
    /// any run, `?` one character, nothing else special): the dialect makes
    /// its own pattern of it.
    ///
    /// - Parameters:
    ///   - text: The text matched.
    ///   - pattern: The pattern, with `*` and `?` as its only wildcards.
    /// - Returns: The condition, as the dialect writes it
    ///   (`SQLDialect.wildcardMatch(_:_:converted:)`); it may be NULL.
    package static func wildcardMatch(_ text: SQLExpression, _ pattern: SQLExpression) -> SQLExpression {
        SQLExpression(.wildcardMatch(text, pattern), nullable: true)
    }

    /// Whether `text` matches a regular expression in the database's own
    /// syntax (already anchored at both ends).
    ///
    /// - Parameters:
    ///   - text: The text matched.
    ///   - pattern: The regular expression, in the database's syntax and
    ///     anchored at both ends.
    /// - Returns: The condition, written with the dialect's
    ///   `regularExpressionOperator` (`REGEXP` when it has none); it may be
    ///   NULL.
    package static func regularExpressionMatch(_ text: SQLExpression, _ pattern: SQLExpression) -> SQLExpression {
        SQLExpression(.regularExpressionMatch(text, pattern), nullable: true)
    }

    // MARK: Functions

    /// A call of one of Sift's registered functions.
    ///
    /// - Parameters:
    ///   - function: The function called.
    ///   - arguments: Its arguments, in order.
    ///   - nullable: Whether the result may be NULL; true by default.
    /// - Returns: The call, under the name the dialect gives the function
    ///   (`SQLDialect.functionName(_:)`).
    package static func sift(_ function: SQLSiftFunction, _ arguments: [SQLExpression], nullable: Bool = true) -> SQLExpression {
        SQLExpression(.sift(function, arguments), nullable: nullable)
    }

    /// `text` folded as `[c]` (1), `[d]` (2) or `[cd]` (3) fold it.
    ///
    /// - Parameters:
    ///   - text: The text folded.
    ///   - flags: 1 for `[c]`, 2 for `[d]`, 3 for `[cd]`.
    /// - Returns: A call of Sift's `fold` function, which may be NULL when
    ///   `text` may be.
    package static func fold(_ text: SQLExpression, flags: Int) -> SQLExpression {
        sift(.fold, [text, .literal(flags)], nullable: text.isNullable)
    }

    /// A built-in function of the predicate language, computed by Sift.
    ///
    /// - Parameters:
    ///   - name: The function's name in the predicate language.
    ///   - arguments: Its arguments, in order.
    /// - Returns: A call of Sift's `call` function with the name and the
    ///   arguments; it may be NULL.
    package static func builtin(_ name: String, _ arguments: [SQLExpression]) -> SQLExpression {
        SQLExpression(.builtin(name, arguments), nullable: true)
    }

    /// An application's function, by its SQL name.
    ///
    /// - Parameters:
    ///   - sqlName: The name the database knows the function by
    ///     (`CustomFunction.sqlName`).
    ///   - arguments: Its arguments, in order.
    /// - Returns: The call, which may be NULL.
    package static func custom(_ sqlName: String, _ arguments: [SQLExpression]) -> SQLExpression {
        SQLExpression(.custom(sqlName, arguments), nullable: true)
    }

    /// A JSON array of the values (a source for `json_each`).
    ///
    /// - Parameter members: The array's members.
    /// - Returns: An array of the members, as the dialect writes one
    ///   (`SQLDialect.array(_:)`); never NULL.
    package static func jsonArray(_ members: [SQLExpression]) -> SQLExpression {
        SQLExpression(.jsonArray(members), nullable: false)
    }

    /// An empty array.
    package static let emptyArray = SQLExpression(.literal(.emptyArray), nullable: false)

    // MARK: Walking the tree

    /// How many nodes the tree has, subqueries included: what the planner
    /// weighs terms by.
    package var size: Int {
        var count = 0
        visit { _ in count += 1 }
        return count
    }

    /// Calls `body` on this node and every node below it, subqueries included.
    func visit(_ body: (SQLExpression) -> Void) {
        body(self)
        forEachChild { $0.visit(body) }
    }

    /// Calls `body` on each expression directly below this one, those of
    /// subqueries included.
    func forEachChild(_ body: (SQLExpression) -> Void) {
        switch node {
        case .column, .value, .parameter, .slot, .literal: return
        case .and(let es), .or(let es), .sift(_, let es), .builtin(_, let es), .custom(_, let es), .jsonArray(let es):
            es.forEach(body)
        case .not(let a), .isNotTrue(let a), .isNull(let a, _), .negate(let a), .castToReal(let a), .castToInteger(let a), .containsNUL(let a),
             .byteLength(let a):
            body(a)
        case .compare(_, let a, let b), .isDistinct(let a, let b, _), .inArray(let a, let b), .arithmetic(_, let a, let b),
             .divide(let a, let b), .integerDivide(let a, let b), .coalesce(let a, let b), .contains(let a, let b), .hasPrefix(let a, let b),
             .hasSuffix(let a, let b), .wildcardMatch(let a, let b), .regularExpressionMatch(let a, let b):
            body(a)
            body(b)
        case .between(let a, let b, let c), .caseWhen(let a, let b, let c):
            body(a)
            body(b)
            body(c)
        case .inList(let a, let es):
            body(a)
            es.forEach(body)
        case .exists(let s, _), .scalar(let s): s.forEachExpression(body)
        case .aggregate(_, let a): if let a { body(a) }
        }
    }

    /// The expression with each column `transform` gives a replacement for
    /// replaced (a `having` predicate written over result columns becomes
    /// one over the aggregates they are). Subqueries are kept as they are.
    ///
    /// - Parameter transform: Given a column's table alias and name, the
    ///   expression that replaces the column, or nil to keep it.
    /// - Returns: The expression with the columns replaced; whether it may be
    ///   NULL is unchanged.
    package func replacingColumns(_ transform: (_ table: String, _ name: String) -> SQLExpression?) -> SQLExpression {
        replacingLeaves { leaf in
            if case .column(let table, let name) = leaf.node { return transform(table, name) }
            return nil
        }
    }

    /// The expression with each parameter `transform` gives a replacement
    /// for replaced. Subqueries are kept as they are.
    ///
    /// - Parameter transform: Given a parameter's name, the expression that
    ///   replaces it, or nil to keep it.
    /// - Returns: The expression with the parameters replaced; whether it may
    ///   be NULL is unchanged.
    func replacingParameters(_ transform: (_ name: String) -> SQLExpression?) -> SQLExpression {
        replacingLeaves { leaf in
            if case .parameter(let name, _) = leaf.node { return transform(name) }
            return nil
        }
    }

    /// The expression with each column or parameter `transform` gives a
    /// replacement for replaced, outside subqueries.
    func replacingLeaves(_ transform: (SQLExpression) -> SQLExpression?) -> SQLExpression {
        func r(_ e: SQLExpression) -> SQLExpression { e.replacingLeaves(transform) }
        let node: Node
        switch self.node {
        case .column, .parameter: return transform(self) ?? self
        case .value, .slot, .literal, .exists, .scalar: return self
        case .and(let es): node = .and(es.map(r))
        case .or(let es): node = .or(es.map(r))
        case .sift(let f, let es): node = .sift(f, es.map(r))
        case .builtin(let n, let es): node = .builtin(n, es.map(r))
        case .custom(let n, let es): node = .custom(n, es.map(r))
        case .jsonArray(let es): node = .jsonArray(es.map(r))
        case .not(let a): node = .not(r(a))
        case .isNotTrue(let a): node = .isNotTrue(r(a))
        case .isNull(let a, let negated): node = .isNull(r(a), negated: negated)
        case .negate(let a): node = .negate(r(a))
        case .castToReal(let a): node = .castToReal(r(a))
        case .castToInteger(let a): node = .castToInteger(r(a))
        case .containsNUL(let a): node = .containsNUL(r(a))
        case .byteLength(let a): node = .byteLength(r(a))
        case .compare(let op, let a, let b): node = .compare(op, r(a), r(b))
        case .isDistinct(let a, let b, let negated): node = .isDistinct(r(a), r(b), negated: negated)
        case .inArray(let a, let b): node = .inArray(r(a), r(b))
        case .arithmetic(let op, let a, let b): node = .arithmetic(op, r(a), r(b))
        case .divide(let a, let b): node = .divide(r(a), r(b))
        case .integerDivide(let a, let b): node = .integerDivide(r(a), r(b))
        case .coalesce(let a, let b): node = .coalesce(r(a), r(b))
        case .contains(let a, let b): node = .contains(r(a), r(b))
        case .hasPrefix(let a, let b): node = .hasPrefix(r(a), r(b))
        case .hasSuffix(let a, let b): node = .hasSuffix(r(a), r(b))
        case .wildcardMatch(let a, let b): node = .wildcardMatch(r(a), r(b))
        case .regularExpressionMatch(let a, let b): node = .regularExpressionMatch(r(a), r(b))
        case .between(let a, let b, let c): node = .between(r(a), r(b), r(c))
        case .caseWhen(let a, let b, let c): node = .caseWhen(r(a), r(b), r(c))
        case .inList(let a, let es): node = .inList(r(a), es.map(r))
        case .aggregate(let f, let a): node = .aggregate(f, a.map(r))
        }
        return SQLExpression(node, nullable: isNullable)
    }

    /// Whether the expression calls one of Sift's registered functions
    /// (built-in functions go through `sift_call`).
    var usesSiftFunctions: Bool { siftFunctionUsed != nil }

    /// The first of Sift's functions the expression calls, if any (`.call`
    /// for a built-in or custom function).
    var siftFunctionUsed: SQLSiftFunction? {
        var found: SQLSiftFunction?
        visit { node in
            guard found == nil else { return }
            switch node.node {
            case .sift(let function, _): found = function
            case .builtin: found = .call
            default: break
            }
        }
        return found
    }

    /// Whether the expression holds a text value with U+0000.
    var hasTextWithNUL: Bool {
        var found = false
        visit { node in
            if case .value(.text(let text)) = node.node, text.utf8.contains(0) { found = true }
        }
        return found
    }

    /// Whether the expression reads a column of one of `aliases`.
    func reads(anyOf aliases: Set<String>) -> Bool {
        if case .column(let table, _) = node { return aliases.contains(table) }
        var found = false
        forEachChild { if !found, $0.reads(anyOf: aliases) { found = true } }
        return found
    }
}
