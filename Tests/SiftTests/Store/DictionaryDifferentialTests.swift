// The core promise for dictionary fetches: on random data, random grouped
// fetches (keys, aggregates, having, distinct, sort, offset and limit)
// give the same rows as one SQL statement and grouped in memory.

import Foundation
import PropertyBased
import Sift
@testable import SiftStore
import Testing

extension RandomWorld.Generator {
    /// A random dictionary fetch of `Thing`s.
    mutating func dictionaryFetch() -> FetchRequest {
        var request = FetchRequest(entityName: "Thing")
        if chance(60) { request.predicate = .format(predicate(depth: 2), []) }
        let keys = ["s", "b", "i", "t", "parent.s", "parent.i"]
        let aggregates = ["@count", "count(d)", "sum(i)", "sum(d)", "average(i)", "average(d)", "min(s)", "max(s)",
                          "min(t)", "max(i)", "min(b)", "@sum.d", "@max.parent.i", "sum(i * 2 + 1)"]
        var properties: [ExpressionDescription] = []
        if chance(75) {
            // Grouped: some keys, some aggregates.
            var grouped: [String] = []
            for _ in 0..<int(3) {
                let key = pick(keys)
                if !grouped.contains(key) { grouped.append(key) }
            }
            request.propertiesToGroupBy = grouped
            properties = grouped.map { ExpressionDescription(keyPath: $0) }
            for index in 0..<(1 + int(3)) { properties.append(ExpressionDescription(name: "a\(index)", expression: pick(aggregates))) }
            if chance(40) { request.havingPredicate = .format("a0 \(pick([">", "<", "==", "!="])) \(pick(["0", "1", "2", "nil"]))", []) }
        } else {
            let values = ["s", "i + 1", "d", "b", "parent.s", "children.@count", "labels.@count", "t"]
            for index in 0..<(1 + int(3)) { properties.append(ExpressionDescription(name: "v\(index)", expression: pick(values))) }
            request.returnsDistinctResults = chance(50)
        }
        request.propertiesToFetch = properties
        for _ in 0..<int(3) {
            request.sortDescriptors.append(FetchSortDescriptor(pick(properties).name, ascending: chance(50)))
        }
        if chance(30) { request.fetchLimit = int(5) - 1 }  // -1: no limit
        if chance(20) { request.fetchOffset = int(3) }
        return request
    }
}

@Suite("Dictionary fetches: SQL and memory agree")
struct DictionaryDifferentialTests {
    @Test("Random grouped fetches over random data")
    func randomGroupedFetches() async {
        await propertyCheck(count: 60, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var (generator, store, _) = try RandomWorld.make(seed: seed)
            var inSQL = 0
            var checked = 0
            defer {
                // Most fetches must bind, and most of those must run in SQL.
                #expect(checked >= 10)
                #expect(inSQL * 2 >= checked)
            }
            for _ in 0..<20 {
                let request = generator.dictionaryFetch()
                let fetch: BoundDictionaryFetch
                let sort: [ResultSortKey]
                do {
                    (fetch, sort) = try store.bindDictionaryFetch(request)
                } catch {
                    continue  // the generator may write a predicate that does not fit
                }
                let query = try store.resultQuery(fetch, of: try store.compileObjects(of: request), sort: sort)
                let memory: [[PredicateValue]]
                do {
                    memory = try store.resultsInMemory(fetch, of: try store.compileObjects(of: request), sort: sort)
                } catch {
                    // An overflow in memory is one in SQL too.
                    #expect(throws: StoreError.self) { try store.results(fetch, of: try store.compileObjects(of: request), sort: sort) }
                    continue
                }
                let sql = try store.results(fetch, of: try store.compileObjects(of: request), sort: sort)
                checked += 1
                if query != nil { inSQL += 1 }
                let detail = "\(request.propertiesToFetch) group \(request.propertiesToGroupBy) where \(String(describing: request.predicate)) "
                    + "having \(String(describing: request.havingPredicate)): \(query?.sql ?? "memory")\nSQL: \(sql)\nmemory: \(memory)"
                #expect(sameResults(sql, memory), "\(detail)")
            }
        }
    }
}
