// Stage 6b (SQL lowering): statement trees to text and bindings, in a
// dialect. The one place SQL text is written.
//
// AND and OR chains of any length are written as balanced trees of short
// chains, so the text's nesting grows with the logarithm of the length
// (SQLite refuses expression trees deeper than 1 000). A constant bound
// twice shares its placeholder (compared by bits and bytes: 0.0 and -0.0,
// or two spellings of "é", keep their own), so a long predicate stays within
// the database's limit on parameters.

import Foundation
import SiftValues

/// SQL text with its bound parameters.
///
/// ```swift
/// let template = try Binder(model: model, allowsParameters: true)
///     .bind(PredicateParser.parse("age > $minimum"), entity: "Employee")
/// let query = try SQLLowering(schema: SQLSchema(model: model)).select("Employee", where: template, columns: .identifiers)
/// print(query.sql)                       // SELECT t0."Z_PK" FROM "ZEMPLOYEE" AS t0 WHERE t0."ZAGE" > ?1 ORDER BY t0."Z_PK"
/// print(query.parameters.map(\.name))    // ["minimum"]: ?1 waits for its value
/// if let ready = query.binding(["minimum": 40], dialect: .sqlite) {   // nil when a variable has no value
///     print(ready.bindings == [.integer(40)])   // true
/// }
/// ```
public struct SQLQuery: Hashable, Sendable, CustomStringConvertible {
    /// The statement's text.
    public var sql: String
    /// The value of each parameter, in order.
    public var bindings: [SQLValue]
    /// The bindings that a template's `$variables` fill at each execution.
    public var parameters: [SQLParameter]

    /// Creates a query from its text and bindings.
    ///
    /// - Parameters:
    ///   - sql: The statement's text.
    ///   - bindings: The value of each parameter, in order; none by default.
    ///   - parameters: The bindings that a template's `$variables` fill at
    ///     each execution; none by default.
    public init(sql: String, bindings: [SQLValue] = [], parameters: [SQLParameter] = []) {
        self.sql = sql
        self.bindings = bindings
        self.parameters = parameters
    }

    /// The query with its parameters bound to `values`; nil when a value is
    /// missing, or is a collection with no array form in `dialect`.
    ///
    /// - Parameters:
    ///   - values: The value of each variable, by name without `$`.
    ///   - dialect: The dialect the query was rendered in, whose array form a
    ///     collection bound for `IN` takes (JSON text in SQLite, an array in
    ///     PostgreSQL).
    /// - Returns: A copy of the query with every parameter bound and none left
    ///   to fill, or nil when a variable has no value or a collection has no
    ///   array form in `dialect`.
    package func binding(_ values: [String: PredicateValue], dialect: any SQLDialect) -> SQLQuery? {
        var query = self
        for parameter in parameters {
            guard let value = values[parameter.name] else { return nil }
            if parameter.asJSON {
                guard let array = SQLLowering.arrayValue(value, dialect: dialect) else { return nil }
                query.bindings[parameter.index] = array
            } else {
                query.bindings[parameter.index] = SQLLowering.sqlValue(value)
            }
        }
        query.parameters = []
        return query
    }

    public var description: String {
        sql + (bindings.isEmpty ? "" : "\n-- bindings: " + bindings.enumerated().map { "?\($0 + 1) = \($1)" }
            .joined(separator: ", "))
    }
}

/// A value bound to a parameter.
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    /// SQL NULL.
    case null
    /// A 64-bit signed integer.
    case integer(Int64)
    /// A double-precision floating-point number.
    case real(Double)
    /// A string.
    case text(String)
    /// Binary data.
    case blob(Data)
    /// An array bound as one parameter, where the dialect binds arrays so
    /// (PostgreSQL): members of one type, none nil.
    case array([SQLValue])

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .text(let s): PredicateValue.string(s).description
        case .blob(let d): "x'" + d.map { String(format: "%02x", $0) }.joined() + "'"
        case .array(let members): "ARRAY[" + members.map(\.description).joined(separator: ", ") + "]"
        }
    }
}

/// A binding a template's `$variable` fills: which one, and whether the value
/// goes in as an array (for `IN`).
public struct SQLParameter: Hashable, Sendable {
    /// The index of the binding it fills.
    public var index: Int
    /// The variable's name, without `$`.
    public var name: String
    /// Whether the value goes in as an array (for `IN`).
    public var asJSON: Bool

    /// Creates a parameter.
    ///
    /// - Parameters:
    ///   - index: The index of the binding it fills.
    ///   - name: The variable's name, without `$`.
    ///   - asJSON: Whether the value goes in as an array (for `IN`).
    public init(index: Int, name: String, asJSON: Bool) {
        self.index = index
        self.name = name
        self.asJSON = asJSON
    }
}

/// Renders statement trees in a dialect.
///
/// ```swift
/// let nickname = SQLExpression.column("t0", "ZNICKNAME", nullable: true)
/// let statement = SQLStatement.select(SQLSelect([.aggregate(.count)], from: .table("ZEMPLOYEE", alias: "t0"),
///                                               where: [.notEqual(nickname, .value(.text("Ace")))]))
/// print(SQLRenderer.render(statement, in: .sqlite).sql)
/// // SELECT COUNT(*) FROM "ZEMPLOYEE" AS t0 WHERE t0."ZNICKNAME" IS NOT ?1
/// print(SQLRenderer.render(statement, in: .postgreSQL).sql)
/// // SELECT COUNT(*) FROM "ZEMPLOYEE" AS t0 WHERE t0."ZNICKNAME" IS DISTINCT FROM $1
/// ```
public struct SQLRenderer {
    /// The dialect the text is written in.
    let dialect: any SQLDialect
    private var bindings: [SQLValue] = []
    private var parameters: [SQLParameter] = []
    private var bound: [BindingKey: Int] = [:]
    private var slots = 0

    /// Creates a renderer that writes SQL in a dialect, with no bindings yet.
    init(dialect: any SQLDialect) {
        self.dialect = dialect
    }

    /// A statement's text and bindings.
    ///
    /// - Parameters:
    ///   - statement: The statement.
    ///   - dialect: The dialect the text is written in.
    /// - Returns: The text, with a binding per distinct constant and the
    ///   template parameters to fill; for a statement of positional slots, a
    ///   NULL binding per slot, to be replaced at each run.
    package static func render(_ statement: SQLStatement, in dialect: any SQLDialect) -> SQLQuery {
        var renderer = SQLRenderer(dialect: dialect)
        let text = renderer.statement(statement)
        // A statement of slots (run many times, bound by position) has no
        // constants of its own: its builders give it none.
        if renderer.slots > 0 { return SQLQuery(sql: text, bindings: Array(repeating: .null, count: renderer.slots)) }
        return SQLQuery(sql: text, bindings: renderer.bindings, parameters: renderer.parameters)
    }

    /// A bound value, compared by its bits and bytes.
    enum BindingKey: Hashable {
        case integer(Int64), real(UInt64), text([UInt8]), blob(Data)

        init?(_ value: SQLValue) {
            switch value {
            case .null: return nil
            case .integer(let i): self = .integer(i)
            case .real(let d): self = .real(d.bitPattern)
            case .text(let s): self = .text(Array(s.utf8))
            case .blob(let d): self = .blob(d)
            case .array: return nil
            }
        }
    }

    /// The text written so far.
    private var out = ""

    /// The placeholder of a bound value: one per distinct value.
    private mutating func bind(_ value: SQLValue) -> String {
        let key = BindingKey(value)
        if let key, let index = bound[key] { return dialect.placeholder(index) }
        bindings.append(value)
        if let key { bound[key] = bindings.count }
        return dialect.placeholder(bindings.count)
    }

    /// `e` rendered on its own, for a dialect method that takes its operands as text.
    private mutating func text(_ e: SQLExpression) -> String {
        let saved = out
        out = ""
        expression(e)
        let result = out
        out = saved
        return result
    }

    private mutating func list<T>(_ items: [T], _ separator: String, _ body: (inout SQLRenderer, T) -> Void) {
        for (index, item) in items.enumerated() {
            if index > 0 { out += separator }
            body(&self, item)
        }
    }

    private mutating func names(_ names: [String]) {
        list(names, ", ") { $0.dialect.appendQuoted($1, to: &$0.out) }
    }

    // MARK: Statements

    mutating func statement(_ statement: SQLStatement) -> String {
        out = ""
        switch statement {
        case .select(let select): self.select(select)
        case .insert(let insert):
            let ignoring = insert.ignoringDuplicates ? dialect.insertIgnoringDuplicates() : (prefix: "", suffix: "")
            out += "INSERT" + ignoring.prefix + " INTO " + dialect.quote(insert.table) + " ("
            names(insert.columns)
            out += ") VALUES ("
            list(insert.values, ", ") { $0.expression($1) }
            out += ")" + ignoring.suffix
        case .update(let update):
            if let source = update.source {
                out += "WITH " + dialect.quote(source.name) + " AS MATERIALIZED ("
                select(source.select)
                out += ") "
            }
            out += "UPDATE " + dialect.quote(update.table) + (update.alias.map { " AS " + $0 } ?? "") + " SET "
            list(update.assignments, ", ") { r, assignment in
                r.out += r.dialect.quote(assignment.column) + " = "
                r.expression(assignment.value)
            }
            if let source = update.source { out += " FROM " + dialect.quote(source.name) }
            whereClause(update.conditions)
            if !update.returning.isEmpty {
                out += " RETURNING "
                list(update.returning, ", ") { $0.expression($1) }
            }
        case .delete(let delete):
            out += "DELETE FROM " + dialect.quote(delete.table)
            whereClause(delete.conditions)
            if !delete.returning.isEmpty {
                out += " RETURNING "
                list(delete.returning, ", ") { $0.expression($1) }
            }
        case .createTable(let table):
            out += "CREATE TABLE " + dialect.quote(table.name) + " ("
            list(table.columns, ", ") { r, column in
                r.out += r.dialect.quote(column.name) + " " + r.dialect.columnType(column.type)
                if column.isPrimaryKey { r.out += " PRIMARY KEY" }
                if !column.isNullable { r.out += " NOT NULL" }
                if let value = column.defaultValue { r.out += " DEFAULT " + r.dialect.literal(value) }
            }
            if !table.compositeKey.isEmpty {
                out += ", PRIMARY KEY ("
                names(table.compositeKey)
                out += ")"
            }
            out += ")" + (table.compositeKey.isEmpty ? "" : dialect.compositeKeyTableOptions())
        case .createIndex(let index):
            out += "CREATE INDEX " + dialect.quote(index.name) + " ON " + dialect.quote(index.table) + " ("
            names(index.columns)
            out += ")"
        }
        return out
    }

    private mutating func whereClause(_ conditions: [SQLExpression]) {
        guard !conditions.isEmpty else { return }
        out += " WHERE "
        list(conditions, " AND ") { $0.expression($1) }
    }

    private mutating func select(_ select: SQLSelect) {
        out += select.distinct ? "SELECT DISTINCT " : "SELECT "
        if select.columnNames.count == select.columns.count {
            list(Array(zip(select.columns, select.columnNames)), ", ") { r, column in
                r.expression(column.0)
                r.out += " AS "
                r.dialect.appendQuoted(column.1, to: &r.out)
            }
        } else {
            list(select.columns, ", ") { $0.expression($1) }
        }
        out += " FROM "
        source(select.from)
        for join in select.joins {
            out += join.kind == .left ? " LEFT JOIN " : " JOIN "
            source(join.source)
            // A join whose condition is in the WHERE clause still says ON:
            // PostgreSQL refuses a JOIN without one.
            out += " ON "
            expression(join.on ?? .true)
        }
        whereClause(select.conditions)
        if !select.groupBy.isEmpty {
            out += " GROUP BY "
            list(select.groupBy, ", ") { $0.expression($1) }
        }
        if !select.having.isEmpty {
            out += " HAVING "
            list(select.having, " AND ") { $0.expression($1) }
        }
        if !select.orderBy.isEmpty {
            out += " ORDER BY "
            list(select.orderBy, ", ") { r, ordering in
                r.expression(ordering.expression)
                if ordering.descending { r.out += " DESC" }
                // Nil sorts before every value, as in memory.
                if ordering.expression.isNullable, !r.dialect.sortsNullsFirst {
                    r.out += ordering.descending ? " NULLS LAST" : " NULLS FIRST"
                }
            }
        }
        if let limit = select.limit {
            out += " LIMIT "
            expression(limit)
        }
        if let offset = select.offset {
            out += " OFFSET "
            expression(offset)
        }
    }

    private mutating func source(_ source: SQLSource) {
        switch source {
        case .table(let name, let alias): out += dialect.quote(name) + " AS " + alias
        case .array(let array, let alias): out += dialect.arrayTable(text(array), alias: alias)
        case .values(let members, let alias):
            // `(SELECT a AS value UNION ALL VALUES (b), (c), …) AS alias`: each
            // member keeps its own value, with no JSON between (which would cut
            // text at U+0000 and round doubles); the first row names the column
            // (SQLite's own names for VALUES columns fail when a row reads the
            // outer query), and the rest are one VALUES, which SQLite does not
            // count against its limit of compound SELECTs.
            out += "("
            if let first = members.first {
                out += "SELECT "
                expression(first)
                out += " AS value"
                if members.count > 1 {
                    out += " UNION ALL VALUES "
                    list(Array(members.dropFirst()), ", ") { r, member in
                        r.out += "("
                        r.expression(member)
                        r.out += ")"
                    }
                }
            } else {
                out += "SELECT NULL AS value WHERE 1 = 0"
            }
            out += ") AS " + alias
        }
    }

    // MARK: Expressions

    private mutating func expression(_ e: SQLExpression) {
        switch e.node {
        case .column(let table, let name):
            if !table.isEmpty {
                out.append(table)
                out.append(".")
            }
            dialect.appendQuoted(name, to: &out)
        case .value(let value): out += bind(value)
        case .parameter(let name, let asArray):
            bindings.append(.null)
            parameters.append(SQLParameter(index: bindings.count - 1, name: name, asJSON: asArray))
            out += dialect.placeholder(bindings.count)
        case .slot(let index):
            slots = max(slots, index + 1)
            out += dialect.placeholder(index + 1)
        case .literal(let literal): out += dialect.literal(literal)
        case .and(let terms): balanced(terms[...], " AND ")
        case .or(let terms): balanced(terms[...], " OR ")
        case .not(let a):
            out += "(NOT ("
            expression(a)
            out += "))"
        case .isNotTrue(let a): out += dialect.isNotTrue(text(a))
        case .compare(let op, let a, let b):
            expression(a)
            out += " " + op.rawValue + " "
            expression(b)
        case .isNull(let a, let negated):
            expression(a)
            out += negated ? " IS NOT NULL" : " IS NULL"
        case .isDistinct(let a, let b, let negated): out += dialect.nullSafeEqual(text(a), text(b), negated: negated)
        case .between(let a, let low, let high):
            expression(a)
            out += " BETWEEN "
            expression(low)
            out += " AND "
            expression(high)
        case .inList(let a, let members):
            expression(a)
            out += " IN ("
            list(members, ", ") { $0.expression($1) }
            out += ")"
        case .inArray(let a, let array): out += dialect.inArray(text(a), text(array))
        case .exists(let s, let negated):
            out += negated ? "NOT EXISTS (" : "EXISTS ("
            select(s)
            out += ")"
        case .scalar(let s):
            out += "("
            select(s)
            out += ")"
        case .arithmetic(let op, let a, let b):
            out += "("
            expression(a)
            out += " " + op.rawValue + " "
            expression(b)
            out += ")"
        case .divide(let a, let b):
            out += dialect.divide(text(a), text(b))
        case .integerDivide(let a, let b):
            out += dialect.integerDivide(text(a), text(b))
        case .negate(let a):
            out += "(-"
            expression(a)
            out += ")"
        case .castToReal(let a):
            out += "CAST("
            expression(a)
            out += " AS " + dialect.realType + ")"
        case .castToInteger(let a):
            out += "CAST("
            expression(a)
            out += " AS " + dialect.integerType + ")"
        case .caseWhen(let p, let a, let b):
            out += "(CASE WHEN "
            expression(p)
            out += " THEN "
            expression(a)
            out += " ELSE "
            expression(b)
            out += " END)"
        case .aggregate(let function, let argument):
            out += function.rawValue + "("
            if let argument { expression(argument) } else { out += "*" }
            out += ")"
        case .coalesce(let a, let b):
            out += "COALESCE("
            expression(a)
            out += ", "
            expression(b)
            out += ")"
        case .contains(let text, let pattern): out += dialect.contains(self.text(text), self.text(pattern))
        case .containsNUL(let text): out += dialect.containsNUL(self.text(text))
        case .byteLength(let text): out += dialect.byteLength(self.text(text))
        case .hasPrefix(let text, let part): out += dialect.hasAffix(self.text(text), self.text(part), suffix: false)
        case .hasSuffix(let text, let part): out += dialect.hasAffix(self.text(text), self.text(part), suffix: true)
        case .wildcardMatch(let text, let pattern):
            if case .value(.text(let constant)) = pattern.node {
                out += dialect.wildcardMatch(self.text(text), bind(.text(dialect.wildcardPattern(constant))), converted: true)
            } else {
                out += dialect.wildcardMatch(self.text(text), self.text(pattern), converted: false)
            }
        case .regularExpressionMatch(let text, let pattern):
            out += "(" + self.text(text) + " " + (dialect.regularExpressionOperator ?? "REGEXP") + " " + self.text(pattern) + ")"
        case .sift(let function, let arguments):
            out += dialect.functionName(function) + "("
            list(arguments, ", ") { $0.expression($1) }
            out += ")"
        case .builtin(let name, let arguments):
            out += dialect.functionName(.call) + "('" + name + "'"
            for argument in arguments {
                out += ", "
                expression(argument)
            }
            out += ")"
        case .custom(let name, let arguments):
            out += dialect.quote(name) + "("
            list(arguments, ", ") { $0.expression($1) }
            out += ")"
        case .jsonArray(let members):
            var parts: [String] = []
            for member in members { parts.append(text(member)) }
            out += dialect.array(parts)
        }
    }

    /// Terms joined by AND or OR as a balanced tree of chains of at most 8:
    /// 20 000 terms nest 12 deep.
    private mutating func balanced(_ terms: ArraySlice<SQLExpression>, _ word: String) {
        out += "("
        if terms.count > 8 {
            let middle = terms.startIndex + terms.count / 2
            balanced(terms[..<middle], word)
            out += word
            balanced(terms[middle...], word)
        } else {
            for (index, term) in terms.enumerated() {
                if index > 0 { out += word }
                expression(term)
            }
        }
        out += ")"
    }
}
