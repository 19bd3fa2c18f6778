// Stage 5b (memory): dictionary fetches over objects in memory — the same
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
    public func results(_ objects: [Domain.Object], sortedBy sort: [ResultSortKey] = [], offset: Int = 0,
                        limit: Int? = nil) throws(EvaluationError) -> [[PredicateValue]] {
        var rows: [[PredicateValue]] = []
        if fetch.isGrouped {
            // Each group's first object (for the columns built from its keys) and its members.
            var groups: [[PredicateValue]: Int] = [:]
            var members: [[Domain.Object]] = []
            for object in objects {
                var key: [PredicateValue] = []
                key.reserveCapacity(keys.count)
                for expression in keys { key.append(try expression.evaluate(object)) }
                if let index = groups[key] {
                    members[index].append(object)
                } else {
                    groups[key] = members.count
                    members.append([object])
                }
            }
            // With nothing to group by there is one group, of every row, even none.
            if keys.isEmpty && members.isEmpty { members = [[]] }
            for group in members { rows.append(try values(of: group)) }
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

    /// One group's row.
    private func values(of group: [Domain.Object]) throws(EvaluationError) -> [PredicateValue] {
        var row: [PredicateValue] = []
        for (index, column) in columns.enumerated() {
            switch column {
            case .row(let e):
                // Built from the keys (or constants): the same for every member.
                if let first = group.first {
                    row.append(try e.evaluate(first))
                } else {
                    row.append(try constants[index]?.evaluate([String: PredicateValue]()) ?? .null)
                }
            case .aggregate(let op, let e, let integer):
                guard let e else {
                    row.append(.int(Int64(group.count)))
                    continue
                }
                var values: [PredicateValue] = []
                values.reserveCapacity(group.count)
                for object in group {
                    let value = try e.evaluate(object)
                    if value != .null { values.append(value) }
                }
                row.append(try Self.aggregate(op, values, integer: integer))
            }
        }
        return row
    }

    /// An aggregate of non-nil values, as SQL computes it.
    static func aggregate(_ op: AggregateOperator, _ values: [PredicateValue], integer: Bool) throws(EvaluationError) -> PredicateValue {
        switch op {
        case .count:
            return .int(Int64(values.count))
        case .sum where integer:
            var total: Int64 = 0
            for value in values {
                let (sum, overflow) = total.addingReportingOverflow(Self.integer(value))
                if overflow { throw .integerOverflow(operation: "the sum") }
                total = sum
            }
            return .int(total)
        case .sum:
            return .double(values.reduce(0) { $0 + Self.double($1) })
        case .avg:
            guard !values.isEmpty else { return .null }
            return .double(values.reduce(0) { $0 + Self.double($1) } / Double(values.count))
        case .min, .max:
            var best: PredicateValue?
            for value in values {
                guard let current = best else { best = value; continue }
                if let order = ValueComparison.order(value, current), op == .min ? order < 0 : order > 0 { best = value }
            }
            return best ?? .null
        }
    }

    private static func integer(_ value: PredicateValue) -> Int64 {
        switch value {
        case .int(let i): i
        case .bool(let b): b ? 1 : 0
        case .double(let d): Int64(exactly: d.rounded(.towardZero)) ?? 0
        default: 0
        }
    }

    private static func double(_ value: PredicateValue) -> Double {
        switch value {
        case .int(let i): Double(i)
        case .bool(let b): b ? 1 : 0
        case .double(let d): d
        case .date(let d): d.timeIntervalSinceReferenceDate
        default: 0
        }
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
