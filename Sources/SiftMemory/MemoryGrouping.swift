// Stage 6a (memory lowering): dictionary fetches over objects in memory — the same
// answers as the SQL lowering's SELECT … GROUP BY … HAVING …, for the
// atomic store, for fetches whose predicate needs memory, and for tests.
//
// Rows are grouped by their keys' values (nil is one group, strings by
// their bytes, as SQL groups them); aggregates skip nil; a sum of integers
// is an integer (beyond 64 bits an error, as in SQL), of doubles a double,
// 0 when every value is nil; an average is a double, nil when every value
// is; MIN and MAX order values as SQL does. Results are sorted by the sort
// keys, then (for groups and distinct results) by every column, so the
// order is total and every backend agrees.

import SiftModel
import SiftTree
import SiftValues

/// A dictionary fetch compiled for objects of one domain.
public struct MemoryDictionaryFetch<Domain: EvaluationDomain> {
    private enum Column {
        case row(MemoryExpression<Domain>)
        case aggregate(AggregateOperator, MemoryExpression<Domain>?, integer: Bool)
    }

    /// The fetch compiled.
    public let fetch: BoundDictionaryFetch
    private let keys: [MemoryExpression<Domain>]
    private let columns: [Column]
    private let having: MemoryPredicate<KeyValueDomain>?
    /// The columns built from constants alone, compiled for no object: the
    /// values of the one group of no rows (SQL returns them too).
    private let constants: [Int: MemoryExpression<KeyValueDomain>]

    /// Compiles `fetch` for objects of `domain`.
    ///
    /// - Parameters:
    ///   - fetch: The bound dictionary fetch: its columns, grouping and
    ///     `having` predicate.
    ///   - domain: How to read the objects the fetch runs over.
    public init(_ fetch: BoundDictionaryFetch, domain: Domain) {
        self.fetch = fetch
        keys = fetch.groupBy.map { MemoryExpression($0, domain: domain) }
        columns = fetch.columns.map { column in
            switch column.value {
            case .row(let e): .row(MemoryExpression(e, domain: domain))
            case .aggregate(let op, let e): .aggregate(op, e.map { MemoryExpression($0, domain: domain) },
                                                        integer: column.type == .integer)
            }
        }
        having = fetch.having.map { MemoryPredicate($0, domain: KeyValueDomain()) }
        var constants: [Int: MemoryExpression<KeyValueDomain>] = [:]
        if fetch.groupBy.isEmpty {
            for (index, column) in fetch.columns.enumerated() {
                if case .row(let e) = column.value { constants[index] = MemoryExpression(e, domain: KeyValueDomain()) }
            }
        }
        self.constants = constants
    }

    /// The results for `objects` (in the order they came), as rows of
    /// values in column order: grouped, filtered by `having`, made
    /// distinct, sorted, then offset and limited.
    ///
    /// - Parameters:
    ///   - objects: The objects the fetch matched, in the order they came.
    ///   - sort: The keys to sort the rows by (columns by index), before
    ///     offset and limit.
    ///   - offset: How many rows to skip after sorting.
    ///   - limit: The most rows to return; nil (or a negative value) for all.
    /// - Returns: The result rows, each holding one value per column of the
    ///   fetch, in column order.
    /// - Throws: `EvaluationError` when evaluating a column, a grouping key or
    ///   the `having` predicate fails (as `MemoryExpression.evaluate(_:)`
    ///   throws, such as a `MATCHES` or `LIKE` pattern that runs out of
    ///   budget, on one value or over all of them: `EvaluationBudget`), or
    ///   `EvaluationError.integerOverflow` when an integer sum passes 64 bits.
    @_specialize(exported: true, where Domain == RowNodeDomain)
    public func results(_ objects: [Domain.Object], sortedBy sort: [ResultSortKey] = [], offset: Int = 0,
                        limit: Int? = nil) throws(EvaluationError) -> [[PredicateValue]] {
        // One fetch: its patterns share one budget over every object (the
        // budget of the fetch it runs in, if any).
        try EvaluationBudget.joining(orRunning: PredicateLimits.standard.regularExpressionStepsPerFetch) {
            () throws(EvaluationError) in
            try budgetedResults(objects, sortedBy: sort, offset: offset, limit: limit)
        }
    }

    /// The results, under the fetch's budget.
    func budgetedResults(_ objects: [Domain.Object], sortedBy sort: [ResultSortKey], offset: Int,
                         limit: Int?) throws(EvaluationError) -> [[PredicateValue]] {
        var rows: [[PredicateValue]] = []
        if fetch.isGrouped {
            rows = try groupedRows(objects)
        } else {
            for object in objects {
                var row: [PredicateValue] = []
                for column in columns {
                    if case .row(let e) = column { row.append(try e.evaluate(object)) }
                }
                rows.append(row)
            }
        }
        if let having {
            let names = fetch.columns.map(\.name)
            var kept: [[PredicateValue]] = []
            for row in rows {
                let record = Dictionary(uniqueKeysWithValues: zip(names, row))
                if try having.evaluate(record) { kept.append(row) }
            }
            rows = kept
        }
        if fetch.distinct {
            var seen: Set<[PredicateValue]> = []
            rows = rows.filter { seen.insert($0).inserted }
        }
        rows = Self.sorted(rows, by: sort, total: fetch.isGrouped || fetch.distinct)
        if offset > 0 { rows = Array(rows.dropFirst(offset)) }
        if let limit, limit >= 0 { rows = Array(rows.prefix(limit)) }
        return rows
    }

    /// The rows of a grouped fetch, one per group in the order groups first
    /// appear: each row visited once, its aggregates folded into its
    /// group's accumulators as it goes.
    @_specialize(where Domain == RowNodeDomain)
    private func groupedRows(_ objects: [Domain.Object]) throws(EvaluationError) -> [[PredicateValue]] {
        // The aggregates with an argument, in arrays the loop indexes.
        var expressions: [MemoryExpression<Domain>] = []
        var operators: [AggregateOperator] = []
        var integers: [Bool] = []
        for column in columns {
            if case .aggregate(let op, let e?, let integer) = column {
                expressions.append(e)
                operators.append(op)
                integers.append(integer)
            }
        }
        let width = expressions.count
        // Each group's first row, by its place in `objects`.
        var firsts: [Int] = []
        var counts: [Int64] = []
        var states: [GroupAccumulator] = []
        var single: [PredicateValue: Int] = [:]
        var composite: [[PredicateValue]: Int] = [:]
        for position in objects.indices {
            let object = objects[position]
            let index: Int
            if keys.count == 1 {
                // One key: no array per row.
                let key = try keys[0].evaluate(object)
                if let found = single[key] {
                    index = found
                } else {
                    index = firsts.count
                    single[key] = index
                }
            } else {
                var key: [PredicateValue] = []
                key.reserveCapacity(keys.count)
                for expression in keys { key.append(try expression.evaluate(object)) }
                if let found = composite[key] {
                    index = found
                } else {
                    index = firsts.count
                    composite[key] = index
                }
            }
            if index == firsts.count {
                firsts.append(position)
                counts.append(0)
                states.append(contentsOf: repeatElement(GroupAccumulator(), count: width))
            }
            counts[index] += 1
            for i in 0..<width {
                let value = try expressions[i].evaluate(object)
                if value != .null { try states[index * width + i].add(value, operators[i], integer: integers[i]) }
            }
        }
        // With nothing to group by there is one group, of every row, even none.
        let none = keys.isEmpty && firsts.isEmpty
        var rows: [[PredicateValue]] = []
        rows.reserveCapacity(none ? 1 : firsts.count)
        for index in 0..<(none ? 1 : firsts.count) {
            var row: [PredicateValue] = []
            row.reserveCapacity(columns.count)
            var aggregate = 0
            for (column, kind) in columns.enumerated() {
                switch kind {
                case .row(let e):
                    // Built from the keys (or constants): the same for every member.
                    if none {
                        row.append(try constants[column]?.evaluate([String: PredicateValue]()) ?? .null)
                    } else {
                        row.append(try e.evaluate(objects[firsts[index]]))
                    }
                case .aggregate(_, nil, _):
                    row.append(.int(none ? 0 : counts[index]))
                case .aggregate(let op, _, let integer):
                    let state = none ? GroupAccumulator() : states[index * width + aggregate]
                    row.append(state.result(op, integer: integer))
                    aggregate += 1
                }
            }
            rows.append(row)
        }
        return rows
    }

    /// Rows sorted as SQL sorts them: nil first when ascending, `[c]` keys
    /// folded; then, when `total`, by every column ascending; else in the
    /// order they came.
    static func sorted(_ rows: [[PredicateValue]], by keys: [ResultSortKey], total: Bool) -> [[PredicateValue]] {
        var keys = keys
        if total, let width = rows.first?.count { keys += (0..<width).map { ResultSortKey(column: $0) } }
        guard !keys.isEmpty else { return rows }
        func folded(_ value: PredicateValue, _ fold: Bool) -> PredicateValue {
            if fold, case .string(let s) = value { return .string(StringFolding.fold(s, .caseInsensitive)) }
            return value
        }
        return rows.enumerated().sorted { a, b in
            for key in keys {
                let x = folded(a.element[key.column], key.caseInsensitive)
                let y = folded(b.element[key.column], key.caseInsensitive)
                if x == .null && y == .null { continue }
                if x == .null { return key.ascending }
                if y == .null { return !key.ascending }
                guard let order = ValueComparison.order(x, y), order != 0 else { continue }
                return key.ascending ? order < 0 : order > 0
            }
            return a.offset < b.offset
        }.map(\.element)
    }
}

/// What an aggregate has seen of one group so far (its non-nil values,
/// in the order the rows came): a sum of integers that passes 64 bits is
/// an error, as in SQL; an average is the sum over the count.
fileprivate struct GroupAccumulator {
    var count: Int64 = 0
    var integerTotal: Int64 = 0
    var doubleTotal: Double = 0
    var best: PredicateValue?

    mutating func add(_ value: PredicateValue, _ op: AggregateOperator, integer: Bool) throws(EvaluationError) {
        count += 1
        switch op {
        case .count:
            break
        case .sum where integer:
            let (sum, overflow) = integerTotal.addingReportingOverflow(GroupAccumulator.integer(value))
            if overflow { throw .integerOverflow(operation: "the sum") }
            integerTotal = sum
        case .sum, .avg:
            doubleTotal += GroupAccumulator.double(value)
        case .min, .max:
            guard let current = best else {
                best = value
                return
            }
            if let order = ValueComparison.order(value, current), op == .min ? order < 0 : order > 0 { best = value }
        }
    }

    func result(_ op: AggregateOperator, integer: Bool) -> PredicateValue {
        switch op {
        case .count: .int(count)
        case .sum where integer: .int(integerTotal)
        case .sum: .double(doubleTotal)
        case .avg: count == 0 ? .null : .double(doubleTotal / Double(count))
        case .min, .max: best ?? .null
        }
    }

    static func integer(_ value: PredicateValue) -> Int64 {
        switch value {
        case .int(let i): i
        case .bool(let b): b ? 1 : 0
        case .double(let d): Int64(exactly: d.rounded(.towardZero)) ?? 0
        default: 0
        }
    }

    static func double(_ value: PredicateValue) -> Double {
        switch value {
        case .int(let i): Double(i)
        case .bool(let b): b ? 1 : 0
        case .double(let d): d
        case .date(let d): d.timeIntervalSinceReferenceDate
        default: 0
        }
    }
}
