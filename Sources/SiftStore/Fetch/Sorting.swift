// Store stage: sorting in memory as SQL sorts — for the atomic store, plan
// residuals, templates that run in memory, and unsaved changes in fetches.

import Foundation
import Sift

/// Sorts objects by sort keys evaluated in memory over `domain`, as SQL
/// orders them: nil first when ascending, `[c]` keys folded; ties broken by
/// `tieBreak`.
func sortedInMemory<Domain: EvaluationDomain>(
    _ objects: [Domain.Object], by keys: [SQLSortKey], domain: Domain,
    tieBreak: (Domain.Object, Domain.Object) -> Bool
) throws(StoreError) -> [Domain.Object] {
    let sort = InMemorySort(keys, domain: domain)
    var decorated: [(Domain.Object, [PredicateValue])] = []
    decorated.reserveCapacity(objects.count)
    for object in objects { decorated.append((object, try sort.values(of: object))) }
    return decorated.sorted { a, b in
        let order = sort.compare(a.1, b.1)
        return order != 0 ? order < 0 : tieBreak(a.0, b.0)
    }.map(\.0)
}

/// Sort keys compiled for memory: each object's values, and their order as
/// SQL orders them (nil first when ascending, `[c]` keys folded).
struct InMemorySort<Domain: EvaluationDomain> {
    private let expressions: [(expression: MemoryExpression<Domain>, ascending: Bool, fold: Bool)]

    init(_ keys: [SQLSortKey], domain: Domain) {
        expressions = keys.map { (MemoryExpression($0.expression, domain: domain), $0.ascending, $0.caseInsensitive) }
    }

    /// The values `object` is sorted by, folded where the key says.
    func values(of object: Domain.Object) throws(StoreError) -> [PredicateValue] {
        var values: [PredicateValue] = []
        values.reserveCapacity(expressions.count)
        for key in expressions {
            let value = try StoreError.evaluating { () throws(EvaluationError) in try key.expression.evaluate(object) }
            if key.fold, case .string(let s) = value {
                values.append(.string(StringFolding.fold(s, .caseInsensitive)))
            } else {
                values.append(value)
            }
        }
        return values
    }

    /// Negative when values `a` sort before `b`, positive when after, zero
    /// when the keys do not tell them apart.
    func compare(_ a: [PredicateValue], _ b: [PredicateValue]) -> Int {
        for (i, key) in expressions.enumerated() {
            let (x, y) = (a[i], b[i])
            if x == .null && y == .null { continue }
            if x == .null { return key.ascending ? -1 : 1 }
            if y == .null { return key.ascending ? 1 : -1 }
            guard let order = ValueComparison.order(x, y), order != 0 else { continue }
            return key.ascending == (order < 0) ? -1 : 1
        }
        return 0
    }
}
