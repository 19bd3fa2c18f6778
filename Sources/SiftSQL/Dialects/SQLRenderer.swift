// Stage 5 (SQL lowering): statement trees to text and bindings, in a
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
public struct SQLQuery: Hashable, Sendable, CustomStringConvertible {
    /// The statement's text.
    public var sql: String
    /// The value of each parameter, in order.
    public var bindings: [SQLValue]
    /// The bindings that a template's `$variables` fill at each execution.
    public var parameters: [SQLParameter]

    public init(sql: String, bindings: [SQLValue] = [], parameters: [SQLParameter] = []) {
        self.sql = sql
        self.bindings = bindings
        self.parameters = parameters
    }

    /// The query with its parameters bound to `values`; nil when a value is
    /// missing, or is a collection with no array form in `dialect`.
    public func binding(_ values: [String: PredicateValue], dialect: any SQLDialect = .sqlite) -> SQLQuery? {
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

/// A binding a template's `$variable` fills: which one, and whether the value
/// goes in as an array (for `IN`).
public struct SQLParameter: Hashable, Sendable {
    /// The index of the binding it fills.
    public var index: Int
    /// The variable's name, without `$`.
    public var name: String
    /// Whether the value goes in as an array (for `IN`).
    public var asJSON: Bool
}

/// Renders statement trees in a dialect.
public struct SQLRenderer {
    /// The dialect the text is written in.
    public let dialect: any SQLDialect
    private var bindings: [SQLValue] = []
    private var parameters: [SQLParameter] = []
    private var bound: [BindingKey: Int] = [:]
    private var slots = 0

    public init(dialect: any SQLDialect) {
        self.dialect = dialect
    }

    /// A statement's text and bindings.
    public static func render(_ statement: SQLStatement, in dialect: any SQLDialect) -> SQLQuery {
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
            }
        }
    }

    private mutating func bind(_ value: SQLValue) -> String {
        let key = BindingKey(value)
        if let key, let index = bound[key] { return placeholder(index) }
        bindings.append(value)
        if let key { bound[key] = bindings.count }
        return placeholder(bindings.count)
    }

    private func placeholder(_ binding: Int) -> String { dialect.placeholder(binding) }

    private var q: (String) -> String { dialect.quote }

    // MARK: Statements

    mutating func statement(_ statement: SQLStatement) -> String {
        let text: String
        switch statement {
        case .select(let select): text = self.select(select)
        case .insert(let insert):
            text = "INSERT" + (insert.ignoringDuplicates ? " OR IGNORE" : "") + " INTO \(q(insert.table)) ("
                + insert.columns.map(q).joined(separator: ", ") + ") VALUES ("
                + insert.values.map { expression($0) }.joined(separator: ", ") + ")"
        case .update(let update):
            let assignments = update.assignments.map { "\(q($0.column)) = \(expression($0.value))" }
            text = "UPDATE \(q(update.table)) SET \(assignments.joined(separator: ", "))" + whereClause(update.conditions)
        case .delete(let delete):
            text = "DELETE FROM \(q(delete.table))" + whereClause(delete.conditions)
        case .createTable(let table):
            var columns = table.columns.map { column -> String in
                var text = "\(q(column.name)) \(dialect.columnType(column.type))"
                if column.isPrimaryKey { text += " PRIMARY KEY" }
                if !column.isNullable { text += " NOT NULL" }
                if let value = column.defaultValue { text += " DEFAULT \(dialect.literal(value))" }
                return text
            }
            if !table.compositeKey.isEmpty {
                columns.append("PRIMARY KEY (\(table.compositeKey.map(q).joined(separator: ", ")))")
            }
            text = "CREATE TABLE \(q(table.name)) (\(columns.joined(separator: ", ")))"
                + (table.compositeKey.isEmpty ? "" : dialect.compositeKeyTableOptions())
        case .createIndex(let index):
            text = "CREATE INDEX \(q(index.name)) ON \(q(index.table)) (\(index.columns.map(q).joined(separator: ", ")))"
        }
        return text
    }

    private mutating func whereClause(_ conditions: [SQLExpression]) -> String {
        conditions.isEmpty ? "" : " WHERE " + conditions.map { expression($0) }.joined(separator: " AND ")
    }

    mutating func select(_ select: SQLSelect) -> String {
        var text = "SELECT " + select.columns.map { expression($0) }.joined(separator: ", ") + " FROM " + source(select.from)
        for join in select.joins {
            text += (join.kind == .left ? " LEFT JOIN " : " JOIN ") + source(join.source)
            if let on = join.on { text += " ON " + expression(on) }
        }
        text += whereClause(select.conditions)
        if !select.orderBy.isEmpty {
            text += " ORDER BY " + select.orderBy.map { expression($0.expression) + ($0.descending ? " DESC" : "") }
                .joined(separator: ", ")
        }
        if let limit = select.limit { text += " LIMIT " + expression(limit) }
        if let offset = select.offset { text += " OFFSET " + expression(offset) }
        return text
    }

    private mutating func source(_ source: SQLSource) -> String {
        switch source {
        case .table(let name, let alias): "\(q(name)) AS \(alias)"
        case .array(let array, let alias): dialect.arrayTable(expression(array), alias: alias)
        }
    }

    // MARK: Expressions

    mutating func expression(_ e: SQLExpression) -> String {
        switch e.node {
        case .column(let table, let name): return table.isEmpty ? q(name) : "\(table).\(q(name))"
        case .value(let value): return bind(value)
        case .parameter(let name, let asArray):
            bindings.append(.null)
            parameters.append(SQLParameter(index: bindings.count - 1, name: name, asJSON: asArray))
            return placeholder(bindings.count)
        case .slot(let index):
            slots = max(slots, index + 1)
            return dialect.placeholder(index + 1)
        case .literal(let literal): return dialect.literal(literal)
        case .and(let terms): return balanced(terms[...], " AND ")
        case .or(let terms): return balanced(terms[...], " OR ")
        case .not(let a): return "(NOT (\(expression(a))))"
        case .isNotTrue(let a): return dialect.isNotTrue(expression(a))
        case .compare(let op, let a, let b): return "\(expression(a)) \(op.rawValue) \(expression(b))"
        case .isNull(let a, let negated): return "\(expression(a)) IS \(negated ? "NOT " : "")NULL"
        case .isDistinct(let a, let b, let negated): return dialect.nullSafeEqual(expression(a), expression(b), negated: negated)
        case .between(let a, let low, let high):
            return "\(expression(a)) BETWEEN \(expression(low)) AND \(expression(high))"
        case .inList(let a, let members):
            return "\(expression(a)) IN (\(members.map { expression($0) }.joined(separator: ", ")))"
        case .inArray(let a, let array): return dialect.inArray(expression(a), expression(array))
        case .exists(let s, let negated): return (negated ? "NOT EXISTS (" : "EXISTS (") + select(s) + ")"
        case .scalar(let s): return "(" + select(s) + ")"
        case .arithmetic(let op, let a, let b): return "(\(expression(a)) \(op.rawValue) \(expression(b)))"
        case .divide(let a, let b): return "(CAST(\(expression(a)) AS REAL) / \(expression(b)))"
        case .negate(let a): return "(-\(expression(a)))"
        case .castToReal(let a): return "CAST(\(expression(a)) AS REAL)"
        case .caseWhen(let p, let a, let b):
            return "(CASE WHEN \(expression(p)) THEN \(expression(a)) ELSE \(expression(b)) END)"
        case .aggregate(let function, let argument):
            return "\(function.rawValue)(\(argument.map { expression($0) } ?? "*"))"
        case .coalesce(let a, let b): return "COALESCE(\(expression(a)), \(expression(b)))"
        case .contains(let text, let pattern): return dialect.contains(expression(text), expression(pattern))
        case .containsNUL(let text): return dialect.containsNUL(expression(text))
        case .byteLength(let text): return dialect.byteLength(expression(text))
        case .hasPrefix(let text, let part): return dialect.hasAffix(expression(text), expression(part), suffix: false)
        case .hasSuffix(let text, let part): return dialect.hasAffix(expression(text), expression(part), suffix: true)
        case .wildcardMatch(let text, let pattern):
            if case .value(.text(let constant)) = pattern.node {
                return dialect.wildcardMatch(expression(text), bind(.text(dialect.wildcardPattern(constant))), converted: true)
            }
            return dialect.wildcardMatch(expression(text), expression(pattern), converted: false)
        case .sift(let function, let arguments):
            return "\(dialect.functionName(function))(\(arguments.map { expression($0) }.joined(separator: ", ")))"
        case .builtin(let name, let arguments):
            let rest = arguments.map { expression($0) }
            return "\(dialect.functionName(.call))(\((["'\(name)'"] + rest).joined(separator: ", ")))"
        case .custom(let name, let arguments):
            return "\(q(name))(\(arguments.map { expression($0) }.joined(separator: ", ")))"
        case .jsonArray(let members): return dialect.array(members.map { expression($0) })
        }
    }

    /// Terms joined by AND or OR as a balanced tree of chains of at most 8:
    /// 20 000 terms nest 12 deep.
    private mutating func balanced(_ terms: ArraySlice<SQLExpression>, _ word: String) -> String {
        guard terms.count > 8 else { return "(" + terms.map { expression($0) }.joined(separator: word) + ")" }
        let middle = terms.startIndex + terms.count / 2
        return "(" + balanced(terms[..<middle], word) + word + balanced(terms[middle...], word) + ")"
    }
}
