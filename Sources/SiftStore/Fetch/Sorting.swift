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
    let expressions = keys.map { (MemoryExpression($0.expression, domain: domain), $0.ascending, $0.caseInsensitive) }
    var decorated: [(Domain.Object, [PredicateValue])] = []
    decorated.reserveCapacity(objects.count)
    for object in objects {
        var values: [PredicateValue] = []
        for (expression, _, fold) in expressions {
            let value = try StoreError.evaluating { () throws(EvaluationError) in try expression.evaluate(object) }
            if fold, case .string(let s) = value {
                values.append(.string(StringFolding.fold(s, .caseInsensitive)))
            } else {
                values.append(value)
            }
        }
        decorated.append((object, values))
    }
    return decorated.sorted { a, b in
        for (i, key) in expressions.enumerated() {
            let (x, y) = (a.1[i], b.1[i])
            if x == .null && y == .null { continue }
            if x == .null { return key.1 }
            if y == .null { return !key.1 }
            guard let order = ValueComparison.order(x, y), order != 0 else { continue }
            return key.1 ? order < 0 : order > 0
        }
        return tieBreak(a.0, b.0)
    }.map(\.0)
}
