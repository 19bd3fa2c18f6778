// Stage 5 (SQL lowering): bound trees to SQLite SQL.
//
// The rules this file keeps:
// - Every constant is a bound parameter (`?N`); identifiers are quoted by
//   `SQLSchema.quote`. No value is ever spliced into SQL text.
// - Two-valued nil logic, as in memory: a comparison with NULL is false. An
//   SQL condition here is TRUE, FALSE or NULL, and NULL means false; AND and
//   OR keep that reading, so only NOT needs care: over a condition that may be
//   NULL it becomes `(p) IS NOT 1`. Equality with nil is `IS NULL`, and `!=`
//   on a column that may be NULL is `IS NOT`. Where the model says a column
//   cannot be NULL, plain `=`, `<>` and `NOT` are kept, so indexes apply.
// - To-one key paths are LEFT JOINs, one alias per path, shared by all terms.
//   To-many key paths are correlated subqueries: `EXISTS` for ANY, `NOT
//   EXISTS` for ALL and NONE, `COUNT`/`SUM`/`AVG`/`MIN`/`MAX` for aggregates.
// - String options fold through `sift_fold`, regular expressions run through
//   `sift_matches`, and functions SQLite does not share with Sift's memory
//   semantics through `sift_call`: the store registers all three with the
//   same Swift code the memory lowering runs.
// - What SQL cannot express is a typed `SQLLoweringError` naming the construct.

import Foundation
import SiftModel
import SiftTree
import SiftValues

/// A value bound to a parameter.
public enum SQLValue: Hashable, Sendable, CustomStringConvertible {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    public var description: String {
        switch self {
        case .null: "NULL"
        case .integer(let i): String(i)
        case .real(let d): String(d)
        case .text(let s): PredicateValue.string(s).description
        case .blob(let d): "x'" + d.map { String(format: "%02x", $0) }.joined() + "'"
        }
    }
}

/// SQL text with its bound parameters (`?1`, `?2`, … in the text).
public struct SQLQuery: Hashable, Sendable, CustomStringConvertible {
    public var sql: String
    public var bindings: [SQLValue]
    /// The bindings that a template's `$variables` fill at each execution.
    public var parameters: [SQLParameter]

    public init(sql: String, bindings: [SQLValue] = [], parameters: [SQLParameter] = []) {
        self.sql = sql
        self.bindings = bindings
        self.parameters = parameters
    }

    /// The query with its parameters bound to `values`; nil when a value is missing.
    public func binding(_ values: [String: PredicateValue]) -> SQLQuery? {
        var query = self
        for parameter in parameters {
            guard let value = values[parameter.name] else { return nil }
            if parameter.asJSON {
                // A value with no JSON form SQLite reads back whole: memory runs it.
                guard let json = SQLLowering.jsonArray(value) else { return nil }
                query.bindings[parameter.index] = .text(json)
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
/// goes in as a JSON array (for `IN`).
public struct SQLParameter: Hashable, Sendable {
    public var index: Int
    public var name: String
    public var asJSON: Bool
}

/// The names of the SQL functions the store registers for the lowering.
public enum SQLFunction {
    /// `sift_fold(text, flags)`: `StringFolding.fold` with `[c]` = 1, `[d]` = 2.
    public static let fold = "sift_fold"
    /// `sift_matches(text, pattern, flags)`: MATCHES over the whole string.
    public static let matches = "sift_matches"
    /// `sift_call(name, arguments…)`: a built-in function, as memory computes it.
    public static let call = "sift_call"
    /// `sift_like(text, pattern)`: LIKE as memory computes it, for text that
    /// holds U+0000 (SQLite's GLOB stops at it) and for patterns GLOB would
    /// match slowly.
    public static let like = "sift_like"
    /// `sift_contains(text, pattern)`: CONTAINS in linear time, for long
    /// patterns (SQLite's `instr` compares at every position).
    public static let contains = "sift_contains"
}

/// A construct the SQL lowering cannot express.
public struct SQLLoweringError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The construct, as a person would name it: "MATCHES on a key path".
    public var construct: String
    /// The bound expression at fault, if there is one: its source range is in
    /// the binder's source map.
    public var expression: BoundExpression?

    public init(_ construct: String, expression: BoundExpression? = nil) {
        self.construct = construct
        self.expression = expression
    }

    public var description: String { "SQL cannot express \(construct)" }
}

/// A sort key: an expression, its direction, and whether strings compare
/// case-insensitively.
public struct SQLSortKey: Hashable, Sendable {
    public var expression: BoundExpression
    public var ascending: Bool
    public var caseInsensitive: Bool

    public init(_ expression: BoundExpression, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.expression = expression
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

/// What a SELECT returns.
public enum SQLColumns: Hashable, Sendable {
    /// `Z_PK`, `Z_OPT`, every attribute in slot order, every to-one key in slot order.
    case rows
    /// `Z_PK` only.
    case identifiers
    /// `COUNT(*)`.
    case count
}

/// Lowers bound predicates to SQL for a schema.
public struct SQLLowering: Sendable {
    public let schema: SQLSchema
    /// Whether `[c]` and `[cd]` comparisons on canonical attributes read their
    /// folded companion columns (index-usable) rather than folding each row.
    public var usesCompanionColumns: Bool

    public init(schema: SQLSchema, usesCompanionColumns: Bool = true) {
        self.schema = schema
        self.usesCompanionColumns = usesCompanionColumns
    }

    /// The longest LIKE pattern, in UTF-8 bytes, handed to SQLite's GLOB
    /// (which refuses patterns past 50 000 bytes, and '[' is written as
    /// three); longer ones run through `sift_like`.
    public static let longestGlobPattern = 16_000

    /// The longest run of a LIKE pattern between two `*`s that GLOB is given:
    /// GLOB's work is the text's length times that run, so a longer one
    /// runs through `sift_like`, which has a step budget.
    public static let longestGlobRun = 64

    /// The longest CONTAINS pattern, in UTF-8 bytes, handed to `instr`, whose
    /// work is the text's length times the pattern's; longer ones run
    /// through `sift_contains` (linear).
    public static let longestInstrPattern = 256

    /// Whether GLOB matches `pattern` (a LIKE pattern, folded) as fast as
    /// `sift_like` would, and means the same.
    static func globIsSafe(_ pattern: String) -> Bool {
        guard !pattern.utf8.contains(0), pattern.utf8.count <= longestGlobPattern else { return false }
        var run = 0
        for scalar in pattern.unicodeScalars {
            run = scalar == "*" ? 0 : run + 1
            if run > longestGlobRun { return false }
        }
        return true
    }

    /// A SELECT of `entity`'s rows that satisfy `predicate`, sorted, limited
    /// and offset. LIMIT and OFFSET are bound parameters too.
    public func select(
        _ entity: String, where predicate: BoundPredicate?, sortedBy sort: [SQLSortKey] = [],
        limit: Int? = nil, offset: Int? = nil, columns: SQLColumns = .rows
    ) throws(SQLLoweringError) -> SQLQuery {
        guard let e = schema.model.entity(named: entity) else { throw SQLLoweringError("the unknown entity '\(entity)'") }
        var writer = SQLWriter(schema: schema)
        writer.usesCompanionColumns = usesCompanionColumns
        let query = writer.newQuery(e)
        let root = ObjectRow(alias: query.alias, entity: e, nullable: false)
        let context = SQLContext(query: query, selfRow: root, variables: [:])
        var condition = ""
        if let predicate {
            let lowered = try writer.predicate(predicate, context)
            if lowered.sql != "1" { condition = lowered.sql }
        }
        var order: [String] = []
        for key in sort {
            var value = try writer.value(key.expression, context)
            if key.caseInsensitive, key.expression.type == .string {
                value.sql = "\(SQLFunction.fold)(\(value.sql), 1)"
            }
            order.append(value.sql + (key.ascending ? "" : " DESC"))
        }
        let q = SQLSchema.quote
        let selected: String
        switch columns {
        case .count: selected = "COUNT(*)"
        case .identifiers: selected = "\(query.alias).\(q(SQLSchema.primaryKey))"
        case .rows:
            var names = [SQLSchema.primaryKey, SQLSchema.version] + e.attributes.map(schema.column)
            names += e.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }.map(\.name)
            selected = names.map { "\(query.alias).\(q($0))" }.joined(separator: ", ")
        }
        var sql = "SELECT \(selected) FROM \(query.from)"
        if !condition.isEmpty { sql += " WHERE \(condition)" }
        if columns != .count {
            // The primary key last, so the order is total and both backends agree.
            order.append("\(query.alias).\(q(SQLSchema.primaryKey))")
            sql += " ORDER BY " + order.joined(separator: ", ")
            if limit != nil || offset != nil {
                sql += " LIMIT \(writer.bind(.integer(Int64(limit ?? -1))))"
                if let offset { sql += " OFFSET \(writer.bind(.integer(Int64(offset))))" }
            }
        }
        return SQLQuery(sql: sql, bindings: writer.bindings, parameters: writer.parameters)
    }

    /// The SQL value of a bound constant (dates as seconds since 2001,
    /// booleans as 0 and 1, objects as their primary keys).
    public static func sqlValue(_ value: PredicateValue) -> SQLValue {
        switch value {
        case .null: .null
        case .bool(let b): .integer(b ? 1 : 0)
        case .int(let i): .integer(i)
        case .double(let d): .real(d)
        case .string(let s): .text(s)
        case .date(let d): .real(d.timeIntervalSinceReferenceDate)
        case .data(let d): .blob(d)
        case .uuid(let u): .text(u.uuidString)
        case .object(let reference): .integer(reference.id)
        case .array, .dictionary: .text(jsonArray(value) ?? "[]")
        }
    }

    /// A JSON array of the values, for `json_each`; nil when a value has no
    /// JSON form (binary data, nested collections) or none SQLite reads back
    /// whole (SQLite 3.40's JSON stops a string at `\u0000`).
    static func jsonArray(_ value: PredicateValue) -> String? {
        guard case .array(let members) = value else { return nil }
        var parts: [String] = []
        for member in members {
            switch sqlValue(member) {
            case .null: parts.append("null")
            case .integer(let i): parts.append(String(i))
            case .real(let d):
                guard d.isFinite else { return nil }
                parts.append(d == d.rounded() && abs(d) < 1e15 ? String(format: "%.1f", d) : "\(d)")
            case .text(let s):
                if case .array = member { return nil }
                if s.utf8.contains(0) { return nil }
                guard let data = try? JSONEncoder().encode(s) else { return nil }
                parts.append(String(decoding: data, as: UTF8.self))
            case .blob: return nil
            }
        }
        return "[" + parts.joined(separator: ",") + "]"
    }
}

// MARK: - Writer

/// One SELECT being written: its main table, and the LEFT JOINs key paths
/// through to-one relationships have added to it.
class SQLQueryScope {
    let alias: String
    let table: String
    var joins: [String] = []
    var joinAliases: [String: String] = [:]

    init(alias: String, table: String) {
        self.alias = alias
        self.table = table
    }

    var from: String {
        ([SQLSchema.quote(table) + " AS " + alias] + joins).joined(separator: " ")
    }
}

/// An object's row in a FROM clause.
struct ObjectRow {
    let alias: String
    let entity: Entity
    /// Whether the row may be missing (reached through a LEFT JOIN).
    let nullable: Bool
}

/// Where an expression is lowered: the SELECT it lands in, the object SELF
/// is, and the rows variables stand for.
struct SQLContext {
    var query: SQLQueryScope
    var selfRow: ObjectRow
    var variables: [String: ObjectRow]
}

/// SQL for a value or a condition, and whether it may be NULL.
struct SQLExpression {
    var sql: String
    var nullable: Bool
}

/// A collection as SQL: the FROM clause of a correlated subquery, its
/// conditions, and what each row contributes.
struct SQLSource {
    enum Element {
        case object(ObjectRow)
        case value(SQLExpression)
    }

    var query: SQLQueryScope
    var conditions: [String]
    var element: Element
    var context: SQLContext

    func select(_ columns: String, extra: [String] = []) -> String {
        let conditions = self.conditions + extra
        return "SELECT \(columns) FROM \(query.from)" + (conditions.isEmpty ? "" : " WHERE " + conditions.joined(separator: " AND "))
    }
}

struct SQLWriter {
    let schema: SQLSchema
    var usesCompanionColumns = true
    var bindings: [SQLValue] = []
    var parameters: [SQLParameter] = []
    var aliasCount = 0
    /// The placeholder already bound to each value: a constant that comes
    /// back is bound once, so a long predicate stays within SQLite's limit on
    /// variables.
    var bound: [BindingKey: Int] = [:]

    /// A bound value, compared by its bits and bytes: 0.0 and -0.0, or two
    /// spellings of "é", must keep their own placeholders.
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

    /// A placeholder a template's `$variable` fills when it runs.
    mutating func parameter(_ name: String, asJSON: Bool) -> String {
        bindings.append(.null)
        parameters.append(SQLParameter(index: bindings.count - 1, name: name, asJSON: asJSON))
        return "?\(bindings.count)"
    }

    init(schema: SQLSchema) {
        self.schema = schema
    }

    typealias Failure = SQLLoweringError

    mutating func bind(_ value: SQLValue) -> String {
        let key = BindingKey(value)
        if let key, let index = bound[key] { return "?\(index)" }
        bindings.append(value)
        if let key { bound[key] = bindings.count }
        return "?\(bindings.count)"
    }

    mutating func bindConstant(_ value: PredicateValue) -> SQLExpression {
        if value == .null { return SQLExpression(sql: "NULL", nullable: true) }
        return SQLExpression(sql: bind(SQLLowering.sqlValue(value)), nullable: false)
    }

    mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount - 1)"
    }

    mutating func newQuery(_ entity: Entity) -> SQLQueryScope {
        SQLQueryScope(alias: newAlias(), table: schema.table(entity))
    }

    func entity(_ name: String) -> Entity { schema.model.entity(named: name)! }

    var q: (String) -> String { SQLSchema.quote }

    // MARK: Predicates

    mutating func predicate(_ p: BoundPredicate, _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch p {
        case .constant(let value):
            return SQLExpression(sql: value ? "1" : "0", nullable: false)
        case .not(let operand):
            return not(try predicate(operand, c))
        case .and(let operands), .or(let operands):
            var parts: [SQLExpression] = []
            for operand in operands { parts.append(try predicate(operand, c)) }
            let word: String
            if case .and = p { word = " AND " } else { word = " OR " }
            return SQLExpression(sql: Self.balanced(parts.map(\.sql)[...], word),
                                 nullable: parts.contains { $0.nullable })
        case .comparison(let comparison):
            return try self.comparison(comparison, c)
        case .exists(let collection):
            let source = try self.source(collection, c)
            return SQLExpression(sql: "EXISTS (\(source.select("1")))", nullable: false)
        }
    }

    /// Terms joined by AND or OR. SQLite parses a chain as a left-leaning
    /// tree as deep as it is long and refuses trees deeper than 1 000, so a
    /// long chain is written as a balanced tree of short ones: 20 000 terms
    /// nest 12 deep.
    static func balanced(_ terms: ArraySlice<String>, _ word: String) -> String {
        guard terms.count > 8 else { return "(" + terms.joined(separator: word) + ")" }
        let middle = terms.startIndex + terms.count / 2
        return "(" + balanced(terms[..<middle], word) + word + balanced(terms[middle...], word) + ")"
    }

    func not(_ p: SQLExpression) -> SQLExpression {
        SQLExpression(sql: p.nullable ? "((\(p.sql)) IS NOT 1)" : "(NOT (\(p.sql)))", nullable: false)
    }

    mutating func comparison(_ comparison: BoundComparison, _ c: SQLContext) throws(Failure) -> SQLExpression {
        let op = comparison.operator
        // `collection CONTAINS x`: some member equals x.
        if comparison.quantifier == .direct, op == .contains, comparison.left.type.isCollection {
            let source = try self.source(comparison.left, c)
            let member = element(source)
            let test = try compare(.equalTo, comparison.options, member, comparison.left.type.elementType,
                                   comparison.right, source.context)
            return SQLExpression(sql: "EXISTS (\(source.select("1", extra: [test.sql])))", nullable: false)
        }
        if comparison.quantifier != .direct {
            let source = try self.source(comparison.left, c)
            let member = element(source)
            let test = try compare(op, comparison.options, member, comparison.left.type.elementType,
                                   comparison.right, source.context)
            switch comparison.quantifier {
            case .any:
                return SQLExpression(sql: "EXISTS (\(source.select("1", extra: [test.sql])))", nullable: false)
            case .none:
                return SQLExpression(sql: "NOT EXISTS (\(source.select("1", extra: [test.sql])))", nullable: false)
            default:
                return SQLExpression(sql: "NOT EXISTS (\(source.select("1", extra: [not(test).sql])))", nullable: false)
            }
        }
        let left = try value(comparison.left, c)
        return try compare(op, comparison.options, left, comparison.left.type, comparison.right, c,
                           folded: try companion(comparison.left, comparison.options, c))
    }

    /// The folded companion column of a canonical attribute, for `[c]` and
    /// `[cd]`: the same text `sift_fold` would give, already in an index.
    mutating func companion(_ e: BoundExpression, _ options: ComparisonOptions, _ c: SQLContext) throws(Failure)
        -> SQLExpression?
    {
        let flags = options.foldingFlags
        guard usesCompanionColumns, SQLSchema.companionFlags.contains(flags),
              case .attribute(let base, let attribute) = e.kind, attribute.isCanonical else { return nil }
        let r = try row(base, c)
        let column = SQLSchema.companionColumn(attribute.name, flags: flags)
        return SQLExpression(sql: "\(r.alias).\(q(column))", nullable: attribute.isOptional || r.nullable)
    }

    /// What each member of a source contributes to a comparison.
    func element(_ source: SQLSource) -> SQLExpression {
        switch source.element {
        case .object(let row): SQLExpression(sql: "\(row.alias).\(q(SQLSchema.primaryKey))", nullable: false)
        case .value(let value): value
        }
    }

    /// `left op right` under two-valued logic.
    mutating func compare(_ op: ComparisonOperator, _ options: ComparisonOptions, _ left: SQLExpression,
                          _ leftType: ValueType, _ rightExpression: BoundExpression,
                          _ c: SQLContext, folded: SQLExpression? = nil) throws(Failure) -> SQLExpression {
        let folds = options.foldingFlags != 0
        let constant: PredicateValue?
        if case .constant(let k) = rightExpression.kind { constant = k } else { constant = nil }

        func fold(_ e: SQLExpression) -> SQLExpression {
            if let folded, e.sql == left.sql { return folded }
            return folds ? SQLExpression(sql: "\(SQLFunction.fold)(\(e.sql), \(options.foldingFlags))", nullable: e.nullable) : e
        }
        /// A constant string folded here, a non-constant one folded in SQL.
        func foldedRight() throws(Failure) -> (SQLExpression, String?) {
            if case .string(let s)? = constant {
                let folded = StringFolding.fold(s, options)
                return (SQLExpression(sql: bind(.text(folded)), nullable: false), folded)
            }
            return (fold(try value(rightExpression, c)), nil)
        }

        switch op {
        case .equalTo, .notEqualTo:
            let l = fold(left)
            let r: SQLExpression
            if constant == .null {
                return SQLExpression(sql: "\(left.sql) IS \(op == .equalTo ? "" : "NOT ")NULL", nullable: false)
            } else if folds {
                r = try foldedRight().0
            } else {
                r = try value(rightExpression, c)
            }
            if r.sql == "NULL" {
                return SQLExpression(sql: "\(left.sql) IS \(op == .equalTo ? "" : "NOT ")NULL", nullable: false)
            }
            if l.nullable && r.nullable {
                return SQLExpression(sql: "\(l.sql) IS \(op == .equalTo ? "" : "NOT ")\(r.sql)", nullable: false)
            }
            if op == .equalTo { return SQLExpression(sql: "\(l.sql) = \(r.sql)", nullable: l.nullable || r.nullable) }
            if l.nullable || r.nullable { return SQLExpression(sql: "\(l.sql) IS NOT \(r.sql)", nullable: false) }
            return SQLExpression(sql: "\(l.sql) <> \(r.sql)", nullable: false)
        case .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo:
            let l = fold(left)
            let r = folds ? try foldedRight().0 : try value(rightExpression, c)
            return SQLExpression(sql: "\(l.sql) \(op.rawValue) \(r.sql)", nullable: l.nullable || r.nullable)
        case .between:
            let bounds: [SQLExpression]
            switch rightExpression.kind {
            case .list(let elements) where elements.count == 2:
                var parts: [SQLExpression] = []
                for e in elements { parts.append(folds ? fold(try value(e, c)) : try value(e, c)) }
                bounds = parts
            case .constant(.array(let values)) where values.count == 2:
                bounds = values.map { v in
                    if folds, case .string(let s) = v { return bindConstant(.string(StringFolding.fold(s, options))) }
                    return bindConstant(v)
                }
            default:
                throw Failure("BETWEEN with bounds that are not a list of two", expression: rightExpression)
            }
            let l = fold(left)
            return SQLExpression(sql: "\(l.sql) BETWEEN \(bounds[0].sql) AND \(bounds[1].sql)",
                                 nullable: l.nullable || bounds.contains { $0.nullable })
        case .in:
            return try membership(left, leftType, in: rightExpression, options, c, folded: folded)
        case .contains, .beginsWith, .endsWith, .like:
            if case .string(let s)? = constant, op != .like, StringFolding.fold(s, options).isEmpty {
                return SQLExpression(sql: "0", nullable: false)  // an empty pattern never matches
            }
            // Text may hold U+0000. SQLite's `=`, `<`, `instr` and BLOB
            // functions compare bytes with their lengths, but `length`,
            // `substr` on text and GLOB stop at U+0000: prefixes and
            // suffixes are compared as BLOBs (UTF-8 bytes; UTF-8 is
            // self-synchronizing, so a byte match is a match of scalars),
            // emptiness as `<> ''`, and LIKE falls back to `sift_like` for
            // text that holds U+0000.
            let l = fold(left)
            if op == .like, case .string(let s)? = constant {
                // LIKE: * and ? are GLOB's wildcards; the only other GLOB
                // metacharacter, '[', is made literal.
                let folded = StringFolding.fold(s, options)
                if !SQLLowering.globIsSafe(folded) {
                    return SQLExpression(sql: "\(SQLFunction.like)(\(l.sql), \(bind(.text(folded))))", nullable: true)
                }
                let pattern = folded.replacingOccurrences(of: "[", with: "[[]")
                return SQLExpression(sql: "(CASE WHEN instr(\(l.sql), char(0)) > 0 THEN \(SQLFunction.like)(\(l.sql), "
                                        + "\(bind(.text(folded)))) ELSE \(l.sql) GLOB \(bind(.text(pattern))) END)",
                                     nullable: true)
            }
            let (r, folded) = try foldedRight()
            let nonEmpty = folded == nil ? "\(r.sql) <> '' AND " : ""
            func blob(_ e: SQLExpression) -> String { "CAST(\(e.sql) AS BLOB)" }
            switch op {
            case .contains:
                if let folded, folded.utf8.count > SQLLowering.longestInstrPattern {
                    return SQLExpression(sql: "\(SQLFunction.contains)(\(l.sql), \(r.sql))", nullable: true)
                }
                if folded == nil {
                    // A pattern known only when the query runs: `instr` while it is short.
                    return SQLExpression(sql: "(CASE WHEN length(CAST(\(r.sql) AS BLOB)) > \(SQLLowering.longestInstrPattern) "
                                            + "THEN \(SQLFunction.contains)(\(l.sql), \(r.sql)) "
                                            + "ELSE (\(nonEmpty)instr(\(l.sql), \(r.sql)) > 0) END)", nullable: true)
                }
                return SQLExpression(sql: "(\(nonEmpty)instr(\(l.sql), \(r.sql)) > 0)", nullable: true)
            case .beginsWith:
                if let folded, let upper = Self.successor(of: folded) {
                    // An index-usable range: prefix <= s < successor(prefix).
                    let u = bind(.text(upper))
                    return SQLExpression(sql: "(\(l.sql) >= \(r.sql) AND \(l.sql) < \(u))", nullable: true)
                }
                return SQLExpression(sql: "(\(nonEmpty)substr(\(blob(l)), 1, length(\(blob(r)))) = \(blob(r)))",
                                     nullable: true)
            case .endsWith:
                return SQLExpression(sql: "(\(nonEmpty)substr(\(blob(l)), -length(\(blob(r)))) = \(blob(r)))",
                                     nullable: true)
            default:
                return SQLExpression(sql: "(CASE WHEN instr(\(l.sql), char(0)) > 0 OR instr(\(r.sql), char(0)) > 0 "
                                        + "OR length(CAST(\(r.sql) AS BLOB)) > \(SQLLowering.longestGlobRun) "
                                        + "THEN \(SQLFunction.like)(\(l.sql), \(r.sql)) "
                                        + "ELSE \(l.sql) GLOB replace(\(r.sql), '[', '[[]') END)", nullable: true)
            }
        case .matches:
            let pattern: SQLExpression
            if case .string(let s)? = constant {
                pattern = SQLExpression(sql: bind(.text(s)), nullable: false)
            } else {
                pattern = try value(rightExpression, c)
            }
            return SQLExpression(sql: "\(SQLFunction.matches)(\(left.sql), \(pattern.sql), \(options.foldingFlags))",
                                 nullable: false)
        case .conformsTo, .utiEquals:
            throw Failure(op.rawValue)
        }
    }

    /// The smallest string greater than every string that starts with `prefix`:
    /// `prefix` with its last scalar incremented (nil when it cannot be).
    static func successor(of prefix: String) -> String? {
        var scalars = Array(prefix.unicodeScalars)
        guard let last = scalars.popLast() else { return nil }
        var next = last.value + 1
        if (0xD800...0xDFFF).contains(next) { next = 0xE000 }
        guard let scalar = Unicode.Scalar(next) else { return nil }
        scalars.append(scalar)
        var result = String.UnicodeScalarView()
        result.append(contentsOf: scalars)
        return String(result)
    }

    /// `left IN right`: membership in a collection, or a substring of a string.
    mutating func membership(_ left: SQLExpression, _ leftType: ValueType, in right: BoundExpression,
                             _ options: ComparisonOptions, _ c: SQLContext,
                             folded: SQLExpression? = nil) throws(Failure) -> SQLExpression {
        let folds = options.foldingFlags != 0
        let l = folded ?? (folds ? SQLExpression(sql: "\(SQLFunction.fold)(\(left.sql), \(options.foldingFlags))",
                                                 nullable: left.nullable) : left)
        switch right.kind {
        case .constant(.array(let values)):
            let members = folds ? values.map { v -> PredicateValue in
                if case .string(let s) = v { return .string(StringFolding.fold(s, options)) }
                return v
            } : values
            guard let json = SQLLowering.jsonArray(.array(members)) else {
                throw Failure("IN with members that have no SQL form", expression: right)
            }
            let list = "\(l.sql) IN (SELECT value FROM json_each(\(bind(.text(json)))))"
            if members.contains(.null) {
                return SQLExpression(sql: "(\(list) OR \(left.sql) IS NULL)", nullable: true)
            }
            return SQLExpression(sql: list, nullable: true)
        case .constant(.string(let s)):
            let folded = StringFolding.fold(s, options)
            if folded.utf8.count > SQLLowering.longestInstrPattern {
                return SQLExpression(sql: "\(SQLFunction.contains)(\(bind(.text(folded))), \(l.sql))", nullable: true)
            }
            return SQLExpression(sql: "(\(l.sql) <> '' AND instr(\(bind(.text(folded))), \(l.sql)) > 0)", nullable: true)
        case .constant(.null):
            return SQLExpression(sql: "0", nullable: false)
        case .parameter(let name) where !folds:
            return SQLExpression(sql: "\(l.sql) IN (SELECT value FROM json_each(\(parameter(name, asJSON: true))))",
                                 nullable: true)
        case .list(let elements) where !elements.contains(where: { $0.type.isCollection }):
            var parts: [SQLExpression] = []
            for element in elements {
                if folds, case .constant(.string(let s)) = element.kind {
                    // A constant is folded here, once.
                    parts.append(bindConstant(.string(StringFolding.fold(s, options))))
                    continue
                }
                let v = try value(element, c)
                parts.append(folds ? SQLExpression(sql: "\(SQLFunction.fold)(\(v.sql), \(options.foldingFlags))",
                                                   nullable: v.nullable) : v)
            }
            guard !parts.isEmpty else { return SQLExpression(sql: "0", nullable: false) }
            let list = "\(l.sql) IN (\(parts.map(\.sql).joined(separator: ", ")))"
            let nullable = parts.filter(\.nullable)
            if left.nullable, !nullable.isEmpty {
                // nil IN {…, nil} holds under two-valued logic.
                let anyNil = nullable.map { "\($0.sql) IS NULL" }.joined(separator: " OR ")
                return SQLExpression(sql: "(\(list) OR (\(left.sql) IS NULL AND (\(anyNil))))", nullable: true)
            }
            return SQLExpression(sql: list, nullable: true)
        default:
            if right.type == .string {
                let r = try value(right, c)
                let rf = folds ? "\(SQLFunction.fold)(\(r.sql), \(options.foldingFlags))" : r.sql
                return SQLExpression(sql: "(\(l.sql) <> '' AND instr(\(rf), \(l.sql)) > 0)", nullable: true)
            }
            let source = try self.source(right, c)
            var member = element(source)
            if folds { member.sql = "\(SQLFunction.fold)(\(member.sql), \(options.foldingFlags))" }
            let test = l.nullable && member.nullable ? "\(member.sql) IS \(l.sql)" : "\(member.sql) = \(l.sql)"
            return SQLExpression(sql: "EXISTS (\(source.select("1", extra: [test])))", nullable: false)
        }
    }

    // MARK: Objects

    /// The row of an object-valued expression, joining tables as needed.
    mutating func row(_ e: BoundExpression, _ c: SQLContext) throws(Failure) -> ObjectRow {
        switch e.kind {
        case .evaluatedObject:
            return c.selfRow
        case .variable(let name):
            guard let row = c.variables[name] else { throw Failure("the variable $\(name) here", expression: e) }
            return row
        case .toOne(let base, let relationship):
            let from = try row(base, c)
            let key = from.alias + "." + relationship.name
            let destination = entity(relationship.destination)
            if let alias = c.query.joinAliases[key] {
                return ObjectRow(alias: alias, entity: destination, nullable: true)
            }
            let alias = newAlias()
            c.query.joinAliases[key] = alias
            c.query.joins.append("LEFT JOIN \(q(schema.table(destination))) AS \(alias) ON \(alias).\(q(SQLSchema.primaryKey)) = \(from.alias).\(q(relationship.name))")
            return ObjectRow(alias: alias, entity: destination, nullable: true)
        default:
            throw Failure("a key path from this expression", expression: e)
        }
    }

    // MARK: Values

    mutating func value(_ e: BoundExpression, _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch e.kind {
        case .constant(let v):
            if case .array = v { throw Failure("a collection where one value is needed", expression: e) }
            return bindConstant(v)
        case .evaluatedObject, .variable:
            let r = try row(e, c)
            return SQLExpression(sql: "\(r.alias).\(q(SQLSchema.primaryKey))", nullable: r.nullable)
        case .toOne(let base, let relationship):
            // An object's identity: its key, read from the foreign key without a join.
            let from = try row(base, c)
            return SQLExpression(sql: "\(from.alias).\(q(relationship.name))", nullable: true)
        case .attribute(let base, let attribute):
            let r = try row(base, c)
            return SQLExpression(sql: "\(r.alias).\(q(attribute.name))", nullable: attribute.isOptional || r.nullable)
        case .aggregate(let op, let collection):
            let source = try self.source(collection, c)
            switch op {
            case .count:
                return SQLExpression(sql: "(\(source.select("COUNT(*)")))", nullable: false)
            case .sum:
                let member = element(source)
                let zero = e.type == .integer ? "0" : "0.0"
                return SQLExpression(sql: "(\(source.select("COALESCE(SUM(\(member.sql)), \(zero))")))", nullable: false)
            case .avg, .min, .max:
                let member = element(source)
                let function = op == .avg ? "AVG" : op == .min ? "MIN" : "MAX"
                return SQLExpression(sql: "(\(source.select("\(function)(\(member.sql))")))", nullable: true)
            }
        case .arithmetic(let op, let l, let r):
            let a = try value(l, c)
            let b = try value(r, c)
            switch op {
            case .add, .subtract, .multiply:
                return SQLExpression(sql: "(\(a.sql) \(op.rawValue) \(b.sql))", nullable: a.nullable || b.nullable)
            case .divide:
                return SQLExpression(sql: "(CAST(\(a.sql) AS REAL) / \(b.sql))", nullable: true)
            case .power:
                return SQLExpression(sql: "\(SQLFunction.call)('power', \(a.sql), \(b.sql))", nullable: true)
            case .union, .intersect, .minus:
                throw Failure("\(op.rawValue) of collections", expression: e)
            }
        case .negate(let operand):
            let a = try value(operand, c)
            return SQLExpression(sql: "(-\(a.sql))", nullable: a.nullable)
        case .function(let function, let arguments):
            return try self.function(function, arguments, e, c)
        case .ternary(let condition, let then, let otherwise):
            let p = try predicate(condition, c)
            let a = try value(then, c)
            let b = try value(otherwise, c)
            return SQLExpression(sql: "(CASE WHEN \(p.sql) THEN \(a.sql) ELSE \(b.sql) END)", nullable: a.nullable || b.nullable)
        case .index, .size:
            throw Failure("indexing a collection ([FIRST], [LAST], [SIZE], [n])", expression: e)
        case .custom(let function, let arguments):
            var parts: [String] = []
            for argument in arguments { parts.append(try value(argument, c).sql) }
            return SQLExpression(sql: "\(q(function.sqlName))(\(parts.joined(separator: ", ")))", nullable: true)
        case .parameter(let name):
            return SQLExpression(sql: parameter(name, asJSON: false), nullable: true)
        case .toMany, .map, .subquery, .list:
            throw Failure("a collection where one value is needed", expression: e)
        }
    }

    mutating func function(_ function: BuiltinFunction, _ arguments: [BoundExpression], _ e: BoundExpression,
                           _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch function {
        case .sum, .count, .min, .max, .average:
            let source = try self.source(arguments[0], c)
            let member = element(source)
            let sql: String = switch function {
            case .sum: "COALESCE(SUM(\(member.sql)), \(e.type == .integer ? "0" : "0.0"))"
            case .count: "COUNT(*)"
            case .min: "MIN(\(member.sql))"
            case .max: "MAX(\(member.sql))"
            default: "AVG(\(member.sql))"
            }
            return SQLExpression(sql: "(\(source.select(sql)))", nullable: function != .sum && function != .count)
        case .median, .mode, .stddev, .distinct, .union, .intersect, .minus:
            throw Failure("the function \(function.rawValue)", expression: e)
        case .castToDate:
            let a = try value(arguments[0], c)
            return SQLExpression(sql: "CAST(\(a.sql) AS REAL)", nullable: a.nullable)
        default:
            var parts: [String] = ["'\(function.rawValue)'"]
            for argument in arguments { parts.append(try value(argument, c).sql) }
            return SQLExpression(sql: "\(SQLFunction.call)(\(parts.joined(separator: ", ")))", nullable: true)
        }
    }

    // MARK: Collections

    /// A collection as a correlated subquery's FROM and WHERE.
    mutating func source(_ e: BoundExpression, _ c: SQLContext) throws(Failure) -> SQLSource {
        switch e.kind {
        case .toMany(let base, let relationship):
            let from = try row(base, c)
            let destination = entity(relationship.destination)
            let inner = newQuery(destination)
            let member = ObjectRow(alias: inner.alias, entity: destination, nullable: false)
            let innerContext = SQLContext(query: inner, selfRow: c.selfRow, variables: c.variables)
            let owner = from.entity
            let model = owner.relationship(named: relationship.name)!
            switch schema.storage(of: model, in: owner) {
            case .inverseForeignKey(_, let column):
                return SQLSource(query: inner, conditions: ["\(inner.alias).\(q(column)) = \(from.alias).\(q(SQLSchema.primaryKey))"],
                                 element: .object(member), context: innerContext)
            case .joinTable(let table, let sourceColumn, let targetColumn):
                let link = newAlias()
                inner.joins.append("JOIN \(q(table)) AS \(link) ON \(link).\(q(targetColumn)) = \(inner.alias).\(q(SQLSchema.primaryKey))")
                return SQLSource(query: inner, conditions: ["\(link).\(q(sourceColumn)) = \(from.alias).\(q(SQLSchema.primaryKey))"],
                                 element: .object(member), context: innerContext)
            case .foreignKey:
                throw Failure("a to-one relationship used as a collection", expression: e)
            }
        case .map(let collection, let variable, let each):
            var source = try self.source(collection, c)
            guard case .object(let member) = source.element else {
                throw Failure("a key path from members that are not objects", expression: e)
            }
            var context = source.context
            context.variables[variable] = member
            source.context = context
            if each.type.isCollection {
                // Flatten: the inner collection's tables join this source,
                // and its correlation becomes part of this source's WHERE.
                let inner = try self.source(each, context)
                guard !(inner.query is JSONQueryScope) else {
                    throw Failure("a list inside a collection", expression: each)
                }
                source.query.joins.append("JOIN \(q(inner.query.table)) AS \(inner.query.alias)")
                source.query.joins += inner.query.joins
                source.conditions += inner.conditions
                source.element = inner.element
                source.context = inner.context
                source.context.query = source.query
                return source
            }
            if case .object = each.type {
                source.element = .object(try row(each, context))
            } else {
                source.element = .value(try value(each, context))
            }
            return source
        case .subquery(let collection, let variable, let predicate):
            var source = try self.source(collection, c)
            guard case .object(let member) = source.element else {
                throw Failure("SUBQUERY over members that are not objects", expression: e)
            }
            var context = source.context
            context.variables[variable] = member
            let condition = try self.predicate(predicate, context)
            source.conditions.append(condition.sql)
            return source
        case .constant(.array):
            guard case .constant(let v) = e.kind, let json = SQLLowering.jsonArray(v) else {
                throw Failure("a collection whose members have no SQL form", expression: e)
            }
            return jsonSource(bind(.text(json)), c)
        case .constant(.null):
            return jsonSource("'[]'", c)
        case .list(let elements):
            var parts: [String] = []
            for element in elements {
                if element.type.isCollection { throw Failure("a list inside a list", expression: element) }
                parts.append(try value(element, c).sql)
            }
            return jsonSource("json_array(\(parts.joined(separator: ", ")))", c)
        default:
            throw Failure("this collection", expression: e)
        }
    }

    /// `json_each` over a JSON array, as a source.
    mutating func jsonSource(_ json: String, _ c: SQLContext) -> SQLSource {
        let alias = newAlias()
        let query = JSONQueryScope(alias: alias, json: json)
        return SQLSource(query: query, conditions: [], element: .value(SQLExpression(sql: "\(alias).value", nullable: true)),
                         context: SQLContext(query: query, selfRow: c.selfRow, variables: c.variables))
    }
}

/// A `json_each(…)` table in a FROM clause.
final class JSONQueryScope: SQLQueryScope {
    let json: String

    init(alias: String, json: String) {
        self.json = json
        super.init(alias: alias, table: "")
    }

    override var from: String {
        (["json_each(\(json)) AS \(alias)"] + joins).joined(separator: " ")
    }
}
