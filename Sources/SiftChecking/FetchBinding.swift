// Stage 4 (checking): binding a dictionary fetch — result columns (per-row
// expressions and aggregates over groups), group keys, a `having`
// predicate and sort keys over the results — with the rules Core Data
// keeps: in a grouped fetch a column is grouped by or aggregated; `having`
// and sort keys name what the fetch returns.

import SiftModel
import SiftSyntax
import SiftTree
import SiftValues

extension Binder {
    /// The aggregate a fetched expression asks for over the rows of a group,
    /// if it is one: `sum(x)`, `count(x)`, `min(x)`, `max(x)`, `average(x)`
    /// of a per-row value, or the key path forms `@sum.x`, `@count`.
    private static func groupAggregate(_ syntax: ExpressionSyntax) -> (AggregateOperator, ExpressionSyntax?)? {
        switch syntax.kind {
        case .function(let name, let arguments) where arguments.count == 1:
            let functions: [String: AggregateOperator] = ["sum": .sum, "count": .count, "min": .min, "max": .max,
                                                          "average": .avg]
            return functions[name].map { ($0, arguments[0]) }
        case .keyPath(let path) where path.first?.hasPrefix("@") == true:
            guard let op = AggregateOperator(rawValue: String(path[0].dropFirst())) else { return nil }
            if path.count == 1 { return op == .count ? (.count, nil) : nil }
            return (op, ExpressionSyntax(.keyPath(Array(path.dropFirst())), range: syntax.range))
        default:
            return nil
        }
    }

    /// Binds one result column of a fetch of `entity`'s objects.
    ///
    /// - Parameters:
    ///   - name: The column's name in the results.
    ///   - syntax: The column's expression: a per-object value, or an
    ///     aggregate (`sum(x)`, `@avg.x`, `@count`, …) over a group's rows.
    ///   - entity: The name of the entity of the fetched objects.
    /// - Returns: The bound column, with the type of its values.
    /// - Throws: `PredicateValidationError` when the expression does not bind,
    ///   is a collection, or is an aggregate of values it cannot aggregate.
    public func bindResultColumn(named name: String, _ syntax: ExpressionSyntax,
                                 entity: String) throws(PredicateValidationError) -> BoundResultColumn {
        if let (op, argument) = Self.groupAggregate(syntax) {
            guard let argument else {
                return BoundResultColumn(name: name, value: .aggregate(.count, nil), type: .integer)
            }
            let value = try bind(argument, entity: entity)
            // `count(reports)` of a to-many is a value per object, not an aggregate.
            if !value.type.isCollection {
                return BoundResultColumn(name: name, value: .aggregate(op, value),
                                         type: try Self.aggregateType(op, value.type, range: syntax.range))
            }
        }
        let value = try bind(syntax, entity: entity)
        if value.type.isCollection {
            throw PredicateValidationError(.needsOneValue(syntax.description, context: "a fetched property"), range: syntax.range)
        }
        return BoundResultColumn(name: name, value: .row(value), type: value.type)
    }

    /// The type of an aggregate of values of `type`.
    private static func aggregateType(_ op: AggregateOperator, _ type: ValueType,
                                      range: SourceRange) throws(PredicateValidationError) -> ValueType {
        switch op {
        case .count:
            return .integer
        case .sum, .avg:
            guard type.isNumeric || type == .null else {
                throw PredicateValidationError(.aggregateNeedsNumbers(op == .sum ? "sum" : "average", found: type), range: range)
            }
            return op == .avg || type == .double ? .double : .integer
        case .min, .max:
            switch type {
            case .integer, .double, .boolean, .string, .date, .null: return type
            default: throw PredicateValidationError(.aggregateNeedsOrderedValues(op.rawValue, found: type), range: range)
            }
        }
    }

    /// Binds a key rows are grouped by: one value per object.
    ///
    /// - Parameters:
    ///   - syntax: The key's expression.
    ///   - entity: The name of the entity of the fetched objects.
    /// - Returns: The bound key.
    /// - Throws: `PredicateValidationError` when the expression does not bind
    ///   or is a collection.
    public func bindGroupKey(_ syntax: ExpressionSyntax, entity: String) throws(PredicateValidationError) -> BoundExpression {
        let value = try bind(syntax, entity: entity)
        if value.type.isCollection {
            throw PredicateValidationError(.needsOneValue(syntax.description, context: "grouping"), range: syntax.range)
        }
        return value
    }

    /// Checks that a column of a grouped fetch is an aggregate, or built from
    /// the group keys (and constants) alone.
    ///
    /// - Parameters:
    ///   - column: The bound result column.
    ///   - groupBy: The fetch's bound group keys.
    ///   - range: Where the column is in the text, for the error.
    /// - Throws: `PredicateValidationError` (`ValidationErrorReason.ungroupedColumn`)
    ///   when the column is a per-row value not built from the keys.
    public static func checkGrouping(_ column: BoundResultColumn, groupBy: [BoundExpression],
                                     range: SourceRange) throws(PredicateValidationError) {
        guard case .row(let value) = column.value, !isBuilt(value, from: groupBy) else { return }
        throw PredicateValidationError(.ungroupedColumn(column.name), range: range)
    }

    private static func isBuilt(_ e: BoundExpression, from keys: [BoundExpression]) -> Bool {
        if keys.contains(e) { return true }
        switch e.kind {
        case .constant, .parameter: return true
        case .arithmetic(_, let a, let b): return isBuilt(a, from: keys) && isBuilt(b, from: keys)
        case .negate(let a): return isBuilt(a, from: keys)
        case .function(_, let arguments), .custom(_, let arguments), .list(let arguments):
            return !arguments.isEmpty && arguments.allSatisfy { isBuilt($0, from: keys) }
        default: return false
        }
    }

    /// The model of a fetch's results: one entity, `Result`, whose
    /// attributes are the columns in order (what `having` binds to).
    /// A name the model cannot hold (empty, or not a key) is an error.
    ///
    /// - Parameter columns: The fetch's bound result columns, in order.
    /// - Returns: A model with one entity, `BoundDictionaryFetch.resultEntityName`,
    ///   with an optional attribute per column (named `_` and its index when
    ///   the column's name is not a plain key).
    /// - Throws: `PredicateValidationError` (`ValidationErrorReason.unsupported`)
    ///   when the columns' names do not make a valid model.
    public static func resultModel(_ columns: [BoundResultColumn]) throws(PredicateValidationError) -> DataModel {
        let attributes = columns.enumerated().map { index, column in
            let type = column.type.attributeType ?? .objectID
            // A name a key path cannot spell (`department.name`) cannot be
            // named in `having` either: name the property with `as` to use it there.
            let plain = column.name.first.map { $0.isLetter || $0 == "_" } == true
                && column.name.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" }
            return Attribute(plain ? column.name : "_\(index)", type, optional: true)
        }
        do {
            return try DataModel([Entity(BoundDictionaryFetch.resultEntityName, attributes: attributes)])
        } catch {
            throw PredicateValidationError(.unsupported("a result named as these are (\(error))"), range: .at(0))
        }
    }

    /// Binds a `having` predicate against the results of a fetch.
    ///
    /// - Parameters:
    ///   - syntax: The parsed `having` predicate.
    ///   - resultModel: The model of the fetch's results, from `resultModel(_:)`.
    /// - Returns: The predicate, bound to the results' entity.
    /// - Throws: `PredicateValidationError` when the predicate does not bind;
    ///   `ValidationErrorReason.notFetched` when it names a key the fetch does
    ///   not return.
    public func bindHaving(_ syntax: PredicateSyntax, resultModel: DataModel) throws(PredicateValidationError) -> BoundPredicate {
        let binder = Binder(model: resultModel, variables: variables, functions: functions)
        do {
            return try binder.bind(syntax, entity: BoundDictionaryFetch.resultEntityName)
        } catch {
            if case .unknownKey(let key, _, _) = error.reason {
                let fetched = resultModel.entities.first?.attributes.map(\.name).filter { !$0.hasPrefix("_") } ?? []
                throw PredicateValidationError(.notFetched(key, context: "the having predicate", fetched: fetched), range: error.range)
            }
            throw error
        }
    }

    /// Checks result names: each given, each once.
    ///
    /// - Parameters:
    ///   - columns: The fetch's bound result columns.
    ///   - ranges: Where each column is in the text, in the same order.
    /// - Throws: `PredicateValidationError` (`ValidationErrorReason.duplicateResultName`)
    ///   at the second column of a name already used.
    public static func checkNames(_ columns: [BoundResultColumn], ranges: [SourceRange]) throws(PredicateValidationError) {
        var seen: Set<String> = []
        for (column, range) in zip(columns, ranges) where !seen.insert(column.name).inserted {
            throw PredicateValidationError(.duplicateResultName(column.name), range: range)
        }
    }
}
