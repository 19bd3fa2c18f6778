// Stage 6b (SQL lowering): dictionary fetches — one SELECT of named result
// columns, GROUP BY the group keys, HAVING the predicate over the results
// (written over result names, lowered, then each result column replaced
// by the expression or aggregate it is), DISTINCT, ORDER BY result names
// and then every column (or the primary key, for one result per object),
// so that the order is total and agrees with memory's.
//
// Aggregates keep memory's meaning: a sum is 0 when every value is nil
// (and an integer for integers, a 64-bit overflow being an error), an
// average is a double.

import SiftModel
import SiftTree
import SiftValues

extension SQLLowering {
    /// The name of result column `index` in the statement (results are
    /// read back by position; the names let ORDER BY use them).
    static func resultColumnName(_ index: Int) -> String { "c\(index)" }

    /// One SELECT returning `fetch`'s results for the objects of its entity
    /// that satisfy `predicate`, sorted by result columns, offset and limited.
    ///
    /// - Parameters:
    ///   - fetch: The dictionary fetch: its entity, result columns, grouping,
    ///     `having` predicate and distinctness.
    ///   - predicate: The predicate the objects read must satisfy, or nil for
    ///     every object.
    ///   - sort: The sort keys on result columns, in order; none by default.
    ///     Results with equal keys come in the order of every column (for
    ///     groups and distinct results) or of the objects' primary keys.
    ///   - limit: The most results returned, or nil (the default) for no
    ///     limit; a negative limit is no limit, as in memory.
    ///   - offset: How many results are skipped first, or nil (the default)
    ///     for none; a negative offset counts as 0.
    /// - Returns: The SELECT's text and bindings; its columns are the result
    ///   columns, in order.
    /// - Throws: `SQLLoweringError` when the model has no entity named as the
    ///   fetch's; SQL (in the schema's dialect) cannot express the predicate,
    ///   a result column, a group key or the `having` predicate; an aggregate
    ///   other than a count has no argument; a sort key's column is past the
    ///   results; or a sort key compares strings case-insensitively.
    package func selectResults(
        _ fetch: BoundDictionaryFetch, where predicate: BoundPredicate?, sortedBy sort: [ResultSortKey] = [],
        limit: Int? = nil, offset: Int? = nil
    ) throws(SQLLoweringError) -> SQLQuery {
        var (writer, e, root, context, conditions) = try objects(of: fetch.entity, where: predicate)
        var columns: [SQLExpression] = []
        for column in fetch.columns {
            let sql: SQLExpression
            switch column.value {
            case .row(let value):
                sql = try writer.value(value, context)
            case .aggregate(.count, nil):
                sql = .aggregate(.count)
            case .aggregate(let op, let argument?):
                let value = try writer.value(argument, context)
                switch op {
                case .count: sql = .aggregate(.count, value)
                case .sum where column.type == .integer: sql = .coalesce(.castToInteger(.aggregate(.sum, value)), .literal(0))
                case .sum: sql = .coalesce(.castToReal(.aggregate(.sum, value)), .literal(0.0))
                case .avg: sql = .castToReal(.aggregate(.average, value))
                case .min: sql = .aggregate(.minimum, value)
                case .max: sql = .aggregate(.maximum, value)
                }
            case .aggregate(_, nil):
                throw SQLLoweringError("an aggregate with nothing to aggregate")
            }
            try checkDialect(sql)
            columns.append(sql)
        }
        var select = SQLSelect(columns, from: root.source, joins: [], where: conditions.isEmpty ? [] : [.and(conditions)])
        select.columnNames = columns.indices.map(Self.resultColumnName)
        select.distinct = fetch.distinct
        for key in fetch.groupBy {
            let sql = try writer.value(key, context)
            try checkDialect(sql)
            select.groupBy.append(sql)
        }
        if let having = fetch.having {
            select.having = [try resultCondition(having, fetch: fetch, columns: columns)]
        }
        // After the condition's joins, every to-one key path's join is known.
        select.joins = root.joins
        for key in sort {
            guard fetch.columns.indices.contains(key.column) else { throw SQLLoweringError("a sort key past the results") }
            if key.caseInsensitive, fetch.columns[key.column].type == .string {
                throw SQLLoweringError("a case-insensitive sort of results")
            }
            select.orderBy.append(SQLOrdering(.column("", Self.resultColumnName(key.column), nullable: true),
                                              descending: !key.ascending))
        }
        if fetch.isGrouped || fetch.distinct {
            select.orderBy += columns.indices.map { SQLOrdering(.column("", Self.resultColumnName($0), nullable: true)) }
        } else {
            select.orderBy.append(SQLOrdering(.column(root.alias, schema.primaryKey(e), nullable: false)))
        }
        if limit != nil || offset != nil {
            select.limit = .value(limit.flatMap { $0 < 0 ? nil : .integer(Int64($0)) } ?? schema.dialect.unlimited)
            if let offset { select.offset = .value(.integer(Int64(max(offset, 0)))) }
        }
        return schema.render(.select(select.prunedJoins()))
    }

    /// `having`, bound over the results, as a condition on the groups: each
    /// result column it reads replaced by the column's SQL.
    private func resultCondition(_ having: BoundPredicate, fetch: BoundDictionaryFetch,
                                 columns: [SQLExpression]) throws(SQLLoweringError) -> SQLExpression {
        let resultSchema = SQLSchema(model: fetch.resultModel, dialect: schema.dialect)
        // The result columns are replaced below, outside subqueries only: no
        // table of values (an EXISTS) may hold one.
        var lowering = SQLLowering(schema: resultSchema, usesCompanionColumns: false)
        lowering.usesValueTables = false
        let lowered = try lowering.lower(BoundDictionaryFetch.resultEntityName, where: having, splitting: false)
        guard let term = lowered.terms.first else { return .true }
        guard let sql = term.sql else { throw term.error ?? SQLLoweringError("this having predicate") }
        guard let entity = fetch.resultModel.entity(named: BoundDictionaryFetch.resultEntityName) else {
            throw SQLLoweringError("the results' entity")
        }
        var byColumn: [String: SQLExpression] = [:]
        for attribute in entity.attributes where attribute.slot < columns.count {
            byColumn[resultSchema.column(attribute, of: entity)] = columns[attribute.slot]
        }
        return sql.replacingColumns { _, name in byColumn[name] }
    }
}
