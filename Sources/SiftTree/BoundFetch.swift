// Stage 3 (tree): a bound dictionary fetch — what a fetch returns when it
// asks for values rather than objects (Core Data's dictionary result type):
// named result columns, each a per-row expression or an aggregate over the
// rows of a group, the grouping, and a `having` predicate over the results.
//
// Both lowerings read it: SQL writes one SELECT … GROUP BY … HAVING …, and
// memory groups row-cache nodes with the same answers.

import SiftModel
import SiftValues

/// What one result column holds.
public enum BoundResultValue: Hashable, Sendable {
    /// An expression evaluated on each fetched object (in a grouped fetch,
    /// one of the group's keys, or built from them).
    case row(BoundExpression)
    /// An aggregate over the rows of a group (of every fetched row when the
    /// fetch is not grouped): `sum(salary)`, `@avg.age`, `@count`. A nil
    /// argument counts rows.
    case aggregate(AggregateOperator, BoundExpression?)
}

/// A named result column and the type of its values.
public struct BoundResultColumn: Hashable, Sendable {
    /// The key of the value in each result.
    public var name: String
    /// What the column holds: a per-row expression or an aggregate.
    public var value: BoundResultValue
    /// The type of the column's values.
    public var type: ValueType

    /// Creates a result column.
    ///
    /// - Parameters:
    ///   - name: The key of the column's value in each result.
    ///   - value: The per-row expression or aggregate the column holds.
    ///   - type: The type of the column's values.
    public init(name: String, value: BoundResultValue, type: ValueType) {
        self.name = name
        self.value = value
        self.type = type
    }

    /// Whether the column aggregates rows.
    public var isAggregate: Bool {
        if case .aggregate = value { return true }
        return false
    }
}

/// A fetch of values: result columns, grouping, a predicate over the
/// results, distinctness.
public struct BoundDictionaryFetch: Hashable, Sendable {
    /// The entity whose objects are read.
    public var entity: String
    /// The result columns, in the order asked for.
    public var columns: [BoundResultColumn]
    /// The expressions rows are grouped by (empty: one group of every row
    /// when a column aggregates, else no grouping).
    public var groupBy: [BoundExpression]
    /// The predicate results must satisfy, bound against `resultEntity`
    /// (its attributes are the result columns, by slot).
    public var having: BoundPredicate?
    /// Whether equal results are returned once.
    public var distinct: Bool
    /// The entity that describes a result: one attribute per column, in
    /// column order, for binding `having` and sort keys by result name.
    public var resultModel: DataModel

    /// Creates a dictionary fetch.
    ///
    /// - Parameters:
    ///   - entity: The name of the entity whose objects are read.
    ///   - columns: The result columns, in the order asked for.
    ///   - groupBy: The expressions rows are grouped by; empty for no
    ///     explicit grouping.
    ///   - having: The predicate results must satisfy, bound against
    ///     `resultModel`, or nil for none.
    ///   - distinct: Whether equal results are returned once.
    ///   - resultModel: The model whose entity describes a result, one
    ///     attribute per column in column order.
    public init(entity: String, columns: [BoundResultColumn], groupBy: [BoundExpression], having: BoundPredicate?,
                distinct: Bool, resultModel: DataModel) {
        self.entity = entity
        self.columns = columns
        self.groupBy = groupBy
        self.having = having
        self.distinct = distinct
        self.resultModel = resultModel
    }

    /// Whether results are groups of rows (some column aggregates, or the
    /// fetch names what to group by) rather than one per object.
    public var isGrouped: Bool { !groupBy.isEmpty || columns.contains(where: \.isAggregate) }

    /// The name of the entity of `resultModel`.
    public static let resultEntityName = "Result"
}

/// A sort key of a dictionary fetch: a result column, by index.
public struct ResultSortKey: Hashable, Sendable {
    /// The index of the result column results are sorted by.
    public var column: Int
    /// Whether results are sorted in ascending order (descending when false).
    public var ascending: Bool
    /// Whether strings compare as `[c]` folds them.
    public var caseInsensitive: Bool

    /// Creates a sort key on a result column.
    ///
    /// - Parameters:
    ///   - column: The index of the result column to sort by.
    ///   - ascending: Whether to sort in ascending order; true by default.
    ///   - caseInsensitive: Whether strings compare case-insensitively, as
    ///     `[c]` folds them; false by default.
    public init(column: Int, ascending: Bool = true, caseInsensitive: Bool = false) {
        self.column = column
        self.ascending = ascending
        self.caseInsensitive = caseInsensitive
    }
}

extension ValueType {
    /// The attribute type that holds values of this type (a result column
    /// in the model of a fetch's results, a column read back from a store);
    /// nil for objects, collections and values of no single type.
    public var attributeType: AttributeType? {
        switch self {
        case .integer: .integer64
        case .double: .double
        case .boolean: .boolean
        case .string: .string
        case .date: .date
        case .data: .binary
        case .uuid: .uuid
        case .null, .object, .collection, .any: nil
        }
    }
}
