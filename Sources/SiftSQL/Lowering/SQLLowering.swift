// Stage 6b (SQL lowering): bound trees to SQL trees.
//
// The rules the lowering keeps (the files of this folder split it by concern:
// scopes and joins, comparisons, strings, collections):
// - Every constant is a bound parameter (`SQLExpression.value`); no value is
//   ever spliced into SQL text.
// - Two-valued nil logic, as in memory: a comparison with NULL is false. An
//   SQL condition here is TRUE, FALSE or NULL, and NULL means false; AND and
//   OR keep that reading, so only NOT needs care: over a condition that may be
//   NULL it becomes IS NOT TRUE. Equality with nil is IS NULL, and `!=` on a
//   column that may be NULL is null-safe. Where the model says a column
//   cannot be NULL, plain `=`, `<>` and `NOT` are kept, so indexes apply. The
//   smart constructors of `SQLExpression` make these choices.
// - To-one key paths are LEFT JOINs, one alias per path, shared by all terms.
//   To-many key paths are correlated subqueries: EXISTS for ANY, NOT EXISTS
//   for ALL and NONE, COUNT/SUM/AVG/MIN/MAX for aggregates.
// - String options fold through Sift's `fold` function (or a canonical
//   attribute's companion column), regular expressions run through
//   `matches`, and functions the database does not share with Sift's memory
//   semantics through `call`: the store registers them with the same Swift
//   code the memory lowering runs.
// - What SQL cannot express is a typed `SQLLoweringError` naming the
//   construct. A predicate is lowered term by term (its top-level AND), so
//   the planner learns in one pass which terms SQL runs.

import Foundation
import SiftModel
import SiftValues
import SiftTree

/// A construct the SQL lowering cannot express.
public struct SQLLoweringError: Error, Hashable, Sendable, CustomStringConvertible {
    /// The construct, as a person would name it: "MATCHES on a key path".
    public var construct: String
    /// The bound expression at fault, if there is one: its source range is in
    /// the binder's source map.
    public var expression: BoundExpression?

    /// Creates an error naming a construct SQL cannot express.
    ///
    /// - Parameters:
    ///   - construct: The construct, as a person would name it: "MATCHES on
    ///     a key path".
    ///   - expression: The bound expression at fault, or nil (the default)
    ///     when there is none.
    public init(_ construct: String, expression: BoundExpression? = nil) {
        self.construct = construct
        self.expression = expression
    }

    public var description: String { "SQL cannot express \(construct)" }
}

/// A sort key: an expression, its direction, and whether strings compare
/// case-insensitively.
public struct SQLSortKey: Hashable, Sendable {
    /// The value sorted by.
    public var expression: BoundExpression
    /// Whether smaller values come first (nil first, as in memory).
    public var ascending: Bool
    /// Whether strings compare as `[c]` folds them.
    public var caseInsensitive: Bool

    /// Creates a sort key.
    ///
    /// - Parameters:
    ///   - expression: The value sorted by.
    ///   - ascending: Whether smaller values come first (nil first, as in
    ///     memory); true by default.
    ///   - caseInsensitive: Whether strings compare as `[c]` folds them;
    ///     false by default.
    public init(_ expression: BoundExpression, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.expression = expression
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

/// What a SELECT returns.
public enum SQLColumns: Hashable, Sendable {
    /// The row's columns: primary key, version, every attribute in slot
    /// order, every to-one key in slot order.
    case rows
    /// The primary key, and the entity number when the entity has subentities.
    case identifiers
    /// The number of rows.
    case count
}

/// Lowers bound predicates to SQL for a schema.
///
/// ```swift
/// let lowering = SQLLowering(schema: SQLSchema(model: model))
/// let bound = try Binder(model: model).bind(PredicateParser.parse("department.name == %@", arguments: ["Sales"]),
///                                           entity: "Employee")
/// let query = try lowering.select("Employee", where: bound, limit: 10, columns: .identifiers)
/// print(query.sql)
/// // SELECT t0."Z_PK" FROM "ZEMPLOYEE" AS t0 LEFT JOIN "ZDEPARTMENT" AS t1 ON t1."Z_PK" = t0."ZDEPARTMENT"
/// //   WHERE t1."ZNAME" = ?1 ORDER BY t0."Z_PK" LIMIT ?2
/// print(query.bindings == [.text("Sales"), .integer(10)])   // true: no value is in the text
/// ```
public struct SQLLowering: Sendable {
    /// The mapping names come from, and the dialect queries are written in.
    public let schema: SQLSchema
    /// Whether `[c]` and `[cd]` comparisons on canonical attributes read their
    /// folded companion columns (index-usable) rather than folding each row.
    public var usesCompanionColumns: Bool
    /// Whether a long OR of terms of one shape may become one EXISTS over a
    /// table of their constants (`ValueTables.swift`); off where the lowered
    /// SQL is rewritten column by column afterwards (a dictionary fetch's
    /// having), which does not look into subqueries.
    var usesValueTables = true

    /// Creates a lowering for a schema.
    ///
    /// - Parameters:
    ///   - schema: The mapping names come from, and the dialect queries are
    ///     written in.
    ///   - usesCompanionColumns: Whether `[c]` and `[cd]` comparisons on
    ///     canonical attributes read their folded companion columns
    ///     (index-usable) rather than folding each row; true by default.
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
    ///
    /// - Parameters:
    ///   - entity: The name of the entity whose objects are fetched.
    ///   - predicate: The predicate rows must satisfy, or nil for every row.
    ///   - sort: The sort keys, in order; none by default. Rows with equal
    ///     keys come in primary-key order.
    ///   - limit: The most rows returned, or nil (the default) for no limit;
    ///     not used when `columns` is `.count`.
    ///   - offset: How many rows are skipped first, or nil (the default) for
    ///     none; not used when `columns` is `.count`.
    ///   - columns: What each row returns; the row's columns by default.
    /// - Returns: The statement's text and bindings.
    /// - Throws: `SQLLoweringError` when the model has no entity named
    ///   `entity`, or SQL (in the schema's dialect) cannot express the
    ///   predicate or a sort key.
    public func select(
        _ entity: String, where predicate: BoundPredicate?, sortedBy sort: [SQLSortKey] = [],
        limit: Int? = nil, offset: Int? = nil, columns: SQLColumns = .rows
    ) throws(SQLLoweringError) -> SQLQuery {
        let fetch = try lower(entity, where: predicate, splitting: false, sortedBy: sort)
        if let failure = fetch.terms.lazy.compactMap(\.error).first { throw failure }
        return fetch.query(terms: fetch.terms.indices, columns: columns, limit: limit, offset: offset)
    }

    /// Lowers a fetch of `entity`: the predicate term by term (each top-level
    /// AND operand when `splitting`, else the whole predicate as one term),
    /// each with its SQL or the reason SQL cannot run it, and the sort keys
    /// (which SQL must be able to run).
    ///
    /// - Parameters:
    ///   - entity: The name of the entity whose objects are fetched.
    ///   - predicate: The predicate, or nil for none (no terms).
    ///   - splitting: Whether each top-level AND operand is a term of its
    ///     own; true by default.
    ///   - sort: The sort keys, in order; none by default.
    /// - Returns: The lowered fetch, whose terms each hold their SQL or the
    ///   error that says why SQL cannot run them.
    /// - Throws: `SQLLoweringError` when the model has no entity named
    ///   `entity`, or SQL (in the schema's dialect) cannot express a sort key.
    ///   A term SQL cannot express is not thrown: its error is in
    ///   `SQLFetch.terms`.
    public func lower(_ entity: String, where predicate: BoundPredicate?, splitting: Bool = true,
                      sortedBy sort: [SQLSortKey] = []) throws(SQLLoweringError) -> SQLFetch {
        guard let e = schema.model.entity(named: entity) else { throw SQLLoweringError("the unknown entity '\(entity)'") }
        var writer = SQLWriter(schema: schema, usesCompanionColumns: usesCompanionColumns, usesValueTables: usesValueTables)
        let root = writer.newScope(e)
        let context = SQLContext(scope: root, selfRow: ObjectRow(alias: root.alias, entity: e, nullable: false), variables: [:])
        var terms: [SQLFetch.Term] = []
        if let predicate {
            let parts: [BoundPredicate]
            if splitting, case .and(let operands) = predicate { parts = operands } else { parts = [predicate] }
            for part in parts {
                // A term that fails leaves no joins behind.
                let (joins, aliases) = (root.joins, root.joinAliases)
                do throws(SQLLoweringError) {
                    let sql = try writer.predicate(part, context)
                    try checkDialect(sql)
                    terms.append(SQLFetch.Term(predicate: part, sql: sql, error: nil))
                } catch {
                    (root.joins, root.joinAliases) = (joins, aliases)
                    terms.append(SQLFetch.Term(predicate: part, sql: nil, error: error))
                }
            }
        }
        var ordering: [SQLOrdering] = []
        for key in sort {
            var value = try writer.value(key.expression, context)
            if key.caseInsensitive, key.expression.type == .string { value = .fold(value, flags: 1) }
            if !schema.dialect.hasSiftFunctions, value.usesSiftFunctions {
                throw SQLLoweringError("this sort key: it needs Sift's SQL functions, which this database does not have")
            }
            ordering.append(SQLOrdering(value, descending: !key.ascending))
        }
        return SQLFetch(entity: e, schema: schema, source: root.source, joins: root.joins, terms: terms, ordering: ordering)
    }

    /// The start of a statement over the objects of `entityName` that
    /// satisfy `predicate` (whole, not term by term): its writer, the
    /// entity, the scope of its table (alias `t0`), SELF's context, and the
    /// conditions (the subentity filter, then the predicate unless it is
    /// always true). The statement's values are lowered in the same writer
    /// and context, so their joins join the scope's.
    func objects(of entityName: String, where predicate: BoundPredicate?) throws(SQLLoweringError)
        -> (writer: SQLWriter, entity: Entity, root: SQLScope, context: SQLContext, conditions: [SQLExpression])
    {
        var writer = SQLWriter(schema: schema, usesCompanionColumns: usesCompanionColumns, usesValueTables: usesValueTables)
        let e = try writer.entity(entityName)
        let root = writer.newScope(e)
        let context = SQLContext(scope: root, selfRow: ObjectRow(alias: root.alias, entity: e, nullable: false), variables: [:])
        var conditions = [schema.entityFilter(e, alias: root.alias)].compactMap { $0 }
        if let predicate {
            let sql = try writer.predicate(predicate, context)
            try checkDialect(sql)
            if sql.constantTruth != true { conditions.append(sql) }
        }
        return (writer, e, root, context, conditions)
    }

    /// Throws when `sql` needs what the database lacks: Sift's functions,
    /// or text holding U+0000 where text cannot hold it.
    func checkDialect(_ sql: SQLExpression) throws(SQLLoweringError) {
        if !schema.dialect.hasSiftFunctions, let function = sql.siftFunctionUsed {
            switch function {
            case .matches:
                throw SQLLoweringError("this MATCHES here: its pattern (or its options) is outside what this "
                                       + "database's regular expressions read as ICU does")
            case .fold:
                throw SQLLoweringError("this folded comparison here: [c] and [d] fold as ICU does only through "
                                       + "a canonical attribute's companion column")
            default:
                throw SQLLoweringError("this term here: it needs Sift's SQL functions, which this database does not have")
            }
        }
        if !schema.dialect.textHoldsNUL, sql.hasTextWithNUL {
            throw SQLLoweringError("text holding U+0000 here: this database's text cannot hold it")
        }
    }

    /// The SQL value of a bound constant (dates as seconds since 2001,
    /// booleans as 0 and 1, objects as their primary keys, collections as
    /// SQLite's JSON arrays).
    ///
    /// - Parameter value: The constant.
    /// - Returns: Its SQL value; a collection SQLite's JSON cannot hold whole
    ///   (a dictionary; an array holding a collection, data, a UUID, a
    ///   non-finite number or text with U+0000) becomes the text `[]`.
    package static func sqlValue(_ value: PredicateValue) -> SQLValue {
        switch value {
        case .null: .null
        case .bool(let b): .integer(b ? 1 : 0)
        case .int(let i): .integer(i)
        case .double(let d): .real(d)
        case .string(let s): .text(s)
        case .date(let d): .real(d.timeIntervalSinceReferenceDate)
        case .data(let d): .blob(d)
        case .uuid(let u): .blob(PredicateValue.bytes(of: u))
        case .object(let reference): .integer(reference.id)
        case .array, .dictionary: arrayValue(value, dialect: .sqlite) ?? .text("[]")
        }
    }

    /// A collection as one bound array value of `dialect`; nil when it is not
    /// an array of plain values, or a member has no form the database reads
    /// back whole.
    ///
    /// - Parameters:
    ///   - value: The collection.
    ///   - dialect: The dialect whose array form it takes.
    /// - Returns: The array value, or nil when `value` is not an array, a
    ///   member is a collection, or `dialect` has no array form for a member.
    package static func arrayValue(_ value: PredicateValue, dialect: any SQLDialect) -> SQLValue? {
        guard case .array(let members) = value else { return nil }
        var values: [SQLValue] = []
        values.reserveCapacity(members.count)
        for member in members {
            switch member {
            case .array, .dictionary: return nil
            default: values.append(sqlValue(member))
            }
        }
        return dialect.arrayValue(values)
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
}

/// A fetch lowered once: each predicate term with its SQL (or why SQL cannot
/// run it), the sort, and the FROM clause they share. The planner picks the
/// terms SQL runs; `query` writes the statement for them.
///
/// ```swift
/// let lowering = SQLLowering(schema: SQLSchema(model: model))
/// let bound = try Binder(model: model).bind(PredicateParser.parse("age > 30 AND median(reports.age) > 30"),
///                                           entity: "Employee")
/// let fetch = try lowering.lower("Employee", where: bound)
/// print(fetch.terms.map { $0.sql != nil })   // [true, false]: SQL has no median
/// let inSQL = fetch.terms.indices.filter { fetch.terms[$0].sql != nil }
/// let query = fetch.query(terms: inSQL, columns: .identifiers)
/// print(query.sql)   // SELECT t0."Z_PK" FROM "ZEMPLOYEE" AS t0 WHERE t0."ZAGE" > ?1 ORDER BY t0."Z_PK"
/// // The term left out is for memory to test on the rows the query returns.
/// ```
public struct SQLFetch: Sendable {
    /// One top-level term of the predicate.
    public struct Term: Sendable {
        /// The term, bound and optimized.
        public var predicate: BoundPredicate
        /// Its SQL, when SQL can run it.
        package var sql: SQLExpression?
        /// Why SQL cannot run it.
        public var error: SQLLoweringError?
    }

    /// The entity fetched.
    public let entity: Entity
    let schema: SQLSchema
    let source: SQLSource
    let joins: [SQLJoin]
    /// The predicate's top-level terms (one, when it was not split).
    public let terms: [Term]
    let ordering: [SQLOrdering]
    /// The dialect its statements are written in.
    package var dialect: any SQLDialect { schema.dialect }

    init(entity: Entity, schema: SQLSchema, source: SQLSource, joins: [SQLJoin], terms: [Term], ordering: [SQLOrdering]) {
        self.entity = entity
        self.schema = schema
        self.source = source
        self.joins = joins
        self.terms = terms
        self.ordering = ordering
    }

    /// The SELECT of the rows that satisfy the chosen terms (each must have
    /// SQL), sorted, then by primary key so the order is total and every
    /// backend agrees; LIMIT and OFFSET bound.
    ///
    /// - Parameters:
    ///   - chosen: The indices, in `terms`, of the terms SQL runs (a term
    ///     without SQL is left out).
    ///   - columns: What each row returns.
    ///   - limit: The most rows returned, or nil (the default) for no limit;
    ///     not used when `columns` is `.count`.
    ///   - offset: How many rows are skipped first, or nil (the default) for
    ///     none; not used when `columns` is `.count`.
    /// - Returns: The SELECT, without the LEFT JOINs it does not read.
    package func statement(terms chosen: some Sequence<Int>, columns: SQLColumns, limit: Int? = nil,
                          offset: Int? = nil) -> SQLSelect {
        let alias = source.alias
        let key = SQLExpression.column(alias, schema.primaryKey(entity), nullable: false)
        let condition = SQLExpression.and([schema.entityFilter(entity, alias: alias)].compactMap { $0 }
                                          + chosen.compactMap { terms[$0].sql })
        var select = SQLSelect([], from: source, joins: joins,
                               where: condition.constantTruth == true ? [] : [condition])
        switch columns {
        case .count: select.columns = [.aggregate(.count)]
        case .identifiers:
            // With the entity number when the rows may be of several entities.
            select.columns = [key] + (schema.rowLayout(entity).entityColumn == nil ? []
                : [.column(alias, schema.entityColumn(entity), nullable: false)])
        case .rows: select.columns = schema.rowColumns(entity, alias: alias)
        }
        if columns != .count {
            select.orderBy = ordering + [SQLOrdering(key)]
            if limit != nil || offset != nil {
                select.limit = .value(limit.map { .integer(Int64($0)) } ?? schema.dialect.unlimited)
                if let offset { select.offset = .value(.integer(Int64(offset))) }
            }
        }
        return select.prunedJoins()
    }

    /// The sizes of the statement for the chosen terms, worked out without
    /// writing it: whether a database might refuse it for its size.
    ///
    /// - Parameter chosen: The indices, in `terms`, of the terms SQL would
    ///   run.
    /// - Returns: The statement's sizes.
    package func metrics(terms chosen: some Sequence<Int>) -> SQLMetrics {
        SQLMetrics(conditions: chosen.compactMap { terms[$0].sql }, joins: joins, orderBy: ordering)
    }

    /// `statement(terms:columns:limit:offset:)`, rendered.
    ///
    /// - Parameters:
    ///   - chosen: The indices, in `terms`, of the terms SQL runs (a term
    ///     without SQL is left out).
    ///   - columns: What each row returns.
    ///   - limit: The most rows returned, or nil (the default) for no limit;
    ///     not used when `columns` is `.count`.
    ///   - offset: How many rows are skipped first, or nil (the default) for
    ///     none; not used when `columns` is `.count`.
    /// - Returns: The statement's text and bindings, in the schema's dialect.
    public func query(terms chosen: some Sequence<Int>, columns: SQLColumns, limit: Int? = nil, offset: Int? = nil) -> SQLQuery {
        schema.render(.select(statement(terms: chosen, columns: columns, limit: limit, offset: offset)))
    }
}

extension SQLLoweringError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
