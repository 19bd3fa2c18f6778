// Stage 6b (SQL lowering): scopes and joins — the SELECT an expression lands
// in, the rows SELF and variables stand for, and to-one key paths as LEFT
// JOINs shared by every term of a scope.

import SiftModel
import SiftValues
import SiftTree

/// One SELECT being written: what its FROM starts with, and the joins key
/// paths have added to it.
final class SQLScope {
    let alias: String
    let source: SQLSource
    var joins: [SQLJoin] = []
    /// The alias of each to-one path joined so far, by "alias.relationship".
    var joinAliases: [String: String] = [:]

    init(alias: String, source: SQLSource) {
        self.alias = alias
        self.source = source
    }

    /// Whether the scope reads an array's or a list's members rather than a table.
    var isArray: Bool {
        switch source {
        case .array, .values: true
        case .table: false
        }
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
    var scope: SQLScope
    var selfRow: ObjectRow
    var variables: [String: ObjectRow]
}

/// A collection as SQL: the FROM of a correlated subquery, its conditions,
/// and what each member contributes.
struct SQLCollection {
    enum Element {
        case object(ObjectRow)
        case value(SQLExpression)
    }

    var scope: SQLScope
    var conditions: [SQLExpression]
    var element: Element
    var context: SQLContext

    /// A subquery over the collection's members.
    func select(_ columns: [SQLExpression], where extra: [SQLExpression] = []) -> SQLSelect {
        SQLSelect(columns, from: scope.source, joins: scope.joins, where: conditions + extra)
    }

    /// Whether some member satisfies `test`.
    func exists(_ test: SQLExpression? = nil) -> SQLExpression {
        .exists(select([.literal(1)], where: test.map { [$0] } ?? []))
    }
}

/// Lowers bound trees within one statement: hands out aliases, and turns
/// predicates and expressions into SQL trees.
struct SQLWriter {
    typealias Failure = SQLLoweringError

    let schema: SQLSchema
    let usesCompanionColumns: Bool
    /// Whether long OR chains of one shape may become a table of values.
    var usesValueTables = true
    var aliasCount = 0

    mutating func newAlias() -> String {
        aliasCount += 1
        return "t\(aliasCount - 1)"
    }

    mutating func newScope(_ entity: Entity) -> SQLScope {
        let alias = newAlias()
        return SQLScope(alias: alias, source: .table(schema.table(entity), alias: alias))
    }

    func entity(_ name: String) throws(Failure) -> Entity {
        guard let entity = schema.model.entity(named: name) else { throw Failure("the unknown entity '\(name)'") }
        return entity
    }

    /// The primary key of an object's row.
    func key(_ row: ObjectRow) -> SQLExpression {
        .column(row.alias, schema.primaryKey(row.entity), nullable: row.nullable)
    }

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
            let path = from.alias + "." + relationship.name
            let destination = try entity(relationship.destination)
            if let alias = c.scope.joinAliases[path] {
                return ObjectRow(alias: alias, entity: destination, nullable: true)
            }
            let alias = newAlias()
            c.scope.joinAliases[path] = alias
            let joined = ObjectRow(alias: alias, entity: destination, nullable: true)
            c.scope.joins.append(SQLJoin(.left, .table(schema.table(destination), alias: alias), on: .compare(
                .equal, .column(alias, schema.primaryKey(destination), nullable: false),
                .column(from.alias, schema.foreignKey(relationship), nullable: true))))
            return joined
        default:
            throw Failure("a key path from this expression", expression: e)
        }
    }

    /// The folded companion column of a canonical attribute, for `[c]` and
    /// `[cd]`: the same text the fold function would give, already in an index.
    mutating func companion(_ e: BoundExpression, _ options: ComparisonOptions, _ c: SQLContext) throws(Failure)
        -> SQLExpression?
    {
        let flags = options.foldingFlags
        guard usesCompanionColumns, SQLSchema.companionFlags.contains(flags),
              case .attribute(let base, let attribute) = e.kind, attribute.isCanonical else { return nil }
        let r = try row(base, c)
        return .column(r.alias, schema.companionColumn(attribute, flags: flags), nullable: attribute.isOptional || r.nullable)
    }

    /// The SQL of a constant: NULL, or a bound value.
    func constant(_ value: PredicateValue) -> SQLExpression {
        .value(SQLLowering.sqlValue(value))
    }
}
