// Stage 6b (SQL lowering): batch updates — one UPDATE that sets each
// assigned column to its expression of the row's current values and
// increments the row's version, for the rows of an entity a predicate
// selects; it returns each changed row's key and entity number (what the
// store announces), and the new values of integer attributes (what it checks). The predicate and the values are
// lowered as a fetch's are, so they mean the same as in memory.
//
// Every value is computed from the rows as they were before the UPDATE, as
// memory computes them. A value or condition that reads only the updated
// row's own columns is written in place (`UPDATE t AS t0 SET c = … WHERE
// …`). One that reads other rows (a to-one key path's LEFT JOIN, a to-many
// aggregate's subquery) could see rows the statement already changed, as
// SQLite runs it; so the new values are computed first, whole, into a
// materialized common table expression, and the UPDATE copies them from
// it (`WITH n AS MATERIALIZED (SELECT …) UPDATE t AS u SET c = n.c0 FROM n
// WHERE u.key = n.k`).

import SiftModel
import SiftTree
import SiftValues

/// The statements of a batch update.
package struct SQLBatchUpdate: Hashable, Sendable {
    /// The UPDATE: it returns, for each changed row, its primary key, its
    /// entity number (when the entity has subentities, `returnsEntity`),
    /// then the new value of each assignment in `returned`.
    package var update: SQLQuery
    /// Whether the UPDATE returns each row's entity number.
    package var returnsEntity: Bool
    /// The assignments whose new values the UPDATE returns, by index: those
    /// of integer attributes, whose range is checked after (an integer past
    /// 64 bits comes back from SQLite as a real).
    package var returned: [Int]
    /// When a required attribute is set to a value that may be nil: the
    /// first rows that would get nil (key, entity number, every new value),
    /// since the database refuses NULL there, they are looked for first.
    package var nilCheck: SQLQuery?
}

extension SQLLowering {
    /// The name of the computed new values in a batch update's WITH clause.
    static let newValues = "n"

    /// The statements setting `assignments` on the objects of `entityName`
    /// that satisfy `predicate`, and incrementing their version.
    ///
    /// - Parameters:
    ///   - entityName: The name of the entity whose objects are updated.
    ///   - assignments: The attributes set, each with the expression of its
    ///     new value, computed from the row as it was before the update.
    ///   - predicate: The predicate the objects updated satisfy, or nil for
    ///     every object.
    /// - Returns: The UPDATE, which assignments' new values it returns, and
    ///   the query for rows a required attribute would make nil.
    /// - Throws: `SQLLoweringError` when the entity or an assigned attribute
    ///   is unknown; an assigned attribute is canonical, has external binary
    ///   storage or a value transformer; or SQL (in the schema's dialect)
    ///   cannot express the predicate or a new value.
    package func updateRows(_ entityName: String, setting assignments: [BoundAssignment],
                           where predicate: BoundPredicate?) throws(SQLLoweringError) -> SQLBatchUpdate {
        var (writer, e, root, context, conditions) = try objects(of: entityName, where: predicate)
        var columns: [String] = []
        var values: [SQLExpression] = []
        var required: [SQLExpression] = []
        for assignment in assignments {
            guard let attribute = e.attribute(named: assignment.attribute.name) else {
                throw SQLLoweringError("the unknown attribute '\(assignment.attribute.name)'")
            }
            // What the store writes beside the value (folded copies, a file,
            // transformed bytes) is Swift's to make: memory sets these.
            if !schema.companionColumns(attribute, of: e).isEmpty {
                throw SQLLoweringError("setting a canonical attribute (its folded companion columns are written by Sift)")
            }
            if attribute.allowsExternalStorage {
                throw SQLLoweringError("setting an attribute with external binary storage")
            }
            if attribute.type == .transformable && attribute.valueTransformerName != nil {
                throw SQLLoweringError("setting a transformable attribute with a value transformer")
            }
            var value = try writer.value(assignment.value, context)
            try checkDialect(value)
            // An integer set to a double attribute becomes a double, as in memory.
            if !attribute.type.isInteger, attribute.type.isNumeric, assignment.value.type == .integer {
                value = .castToReal(value)
            }
            if !attribute.isOptional, value.isNullable { required.append(value) }
            columns.append(schema.column(attribute, of: e))
            values.append(value)
        }
        let key = schema.primaryKey(e)
        let version = schema.version(e)
        let keyColumn = SQLExpression.column(root.alias, key, nullable: false)
        let entityColumn = SQLExpression.column(root.alias, schema.entityColumn(e), nullable: false)
        let returned = assignments.indices.filter { assignments[$0].attribute.type.integerRange != nil }
        let returnsEntity = !e.subentities.isEmpty
        let returning = [SQLExpression.column("", key, nullable: false)]
            + (returnsEntity ? [.column("", schema.entityColumn(e), nullable: false)] : [])
            + returned.map { SQLExpression.column("", columns[$0], nullable: true) }
        // Read after every value and the predicate are written: their joins are known.
        let joins = root.joins
        var nilCheck: SQLQuery?
        if !required.isEmpty {
            var check = SQLSelect([keyColumn, entityColumn] + values, from: root.source, joins: joins,
                                  where: conditions + [.or(required.map { .isNull($0) })], orderBy: [SQLOrdering(keyColumn)],
                                  limit: .literal(20))
            check = check.prunedJoins()
            nilCheck = schema.render(.select(check))
        }
        let readsOtherRows = !joins.isEmpty || (values + conditions).contains(where: \.hasSubquery)
        guard readsOtherRows else {
            let bump = SQLExpression.arithmetic(.add, .column(root.alias, version, nullable: false), .literal(1))
            let update = schema.render(.update(SQLUpdate(
                table: schema.table(e), alias: root.alias, assignments: Array(zip(columns, values)) + [(version, bump)],
                conditions: conditions, returning: returning)))
            return SQLBatchUpdate(update: update, returnsEntity: returnsEntity, returned: returned, nilCheck: nilCheck)
        }
        var computed = SQLSelect([keyColumn] + values, from: root.source, joins: joins,
                                 where: conditions.isEmpty ? [] : [.and(conditions)])
        computed.columnNames = ["k"] + values.indices.map(Self.resultColumnName)
        let updated = "u"
        let source = Self.newValues
        let bump = SQLExpression.arithmetic(.add, .column(updated, version, nullable: false), .literal(1))
        var statement = SQLUpdate(
            table: schema.table(e), alias: updated,
            assignments: columns.indices.map { (columns[$0], SQLExpression.column(source, Self.resultColumnName($0), nullable: true)) }
                + [(version, bump)],
            conditions: [.compare(.equal, .column(updated, key, nullable: false), .column(source, "k", nullable: false))],
            returning: returning)
        statement.source = (source, computed.prunedJoins())
        return SQLBatchUpdate(update: schema.render(.update(statement)), returnsEntity: returnsEntity, returned: returned, nilCheck: nilCheck)
    }
}

extension SQLExpression {
    /// Whether the expression holds a subquery (it reads other rows).
    var hasSubquery: Bool {
        var found = false
        visit { node in
            switch node.node {
            case .exists, .scalar: found = true
            default: break
            }
        }
        return found
    }
}
