// Stage 5 (SQL lowering): batch updates — one UPDATE that sets each
// assigned column to its expression of the row's current values and
// increments the row's version, for the rows of an entity a predicate
// selects; it returns each changed row's key, entity number and new values
// (what the store checks, and announces). The predicate and the values are
// lowered as a fetch's are, so they mean the same as in memory. When they
// follow to-one key paths (LEFT JOINs, which an UPDATE cannot have), each
// value becomes a subquery over the joined row, and the predicate an EXISTS.

import SiftModel
import SiftTree
import SiftValues

extension SQLLowering {
    /// The alias of the updated table when values are read through joins.
    static let updatedAlias = "u"

    /// One UPDATE setting `assignments` on the objects of `entityName`
    /// that satisfy `predicate`, and incrementing their version. It returns,
    /// for each changed row: its primary key, its entity number, then the
    /// new value of each assigned column in order.
    public func updateRows(_ entityName: String, setting assignments: [BoundAssignment],
                           where predicate: BoundPredicate?) throws(SQLLoweringError) -> SQLQuery {
        var writer = SQLWriter(schema: schema, usesCompanionColumns: usesCompanionColumns)
        let e = try writer.entity(entityName)
        let root = writer.newScope(e)
        let context = SQLContext(scope: root, selfRow: ObjectRow(alias: root.alias, entity: e, nullable: false), variables: [:])
        var conditions = [schema.entityFilter(e, alias: root.alias)].compactMap { $0 }
        if let predicate {
            let sql = try writer.predicate(predicate, context)
            try checkDialect(sql)
            if sql.constantTruth != true { conditions.append(sql) }
        }
        var columns: [String] = []
        var values: [SQLExpression] = []
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
            columns.append(schema.column(attribute, of: e))
            values.append(value)
        }
        let key = schema.primaryKey(e)
        let version = schema.version(e)
        let returning = [SQLExpression.column("", key, nullable: false), .column("", schema.entityColumn(e), nullable: false)]
            + columns.map { SQLExpression.column("", $0, nullable: true) }
        let joins = root.joins
        guard !joins.isEmpty else {
            let bump = SQLExpression.arithmetic(.add, .column(root.alias, version, nullable: false), .literal(1))
            return schema.render(.update(SQLUpdate(
                table: schema.table(e), alias: root.alias, assignments: Array(zip(columns, values)) + [(version, bump)],
                conditions: conditions, returning: returning)))
        }
        // Through joins: each value, and the predicate, read the row again
        // in a subquery that can join.
        let updated = Self.updatedAlias
        let same = SQLExpression.compare(.equal, .column(root.alias, key, nullable: false), .column(updated, key, nullable: false))
        func subquery(_ columns: [SQLExpression], _ extra: [SQLExpression]) -> SQLSelect {
            SQLSelect(columns, from: root.source, joins: joins, where: [same] + extra).prunedJoins()
        }
        let assigned = zip(columns, values).map { column, value in
            (column, SQLExpression.scalar(subquery([value], []), nullable: true))
        }
        let bump = SQLExpression.arithmetic(.add, .column(updated, version, nullable: false), .literal(1))
        return schema.render(.update(SQLUpdate(
            table: schema.table(e), alias: updated, assignments: assigned + [(version, bump)],
            conditions: conditions.isEmpty ? [] : [.exists(subquery([.literal(1)], conditions))], returning: returning)))
    }
}
