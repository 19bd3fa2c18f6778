import Foundation
import OrderedCollections
import Sift
import SiftStore
import Testing

/// One dictionary fetch of the table in `dictionary-fetches.json`, with
/// the rows an independent reference computed from the company data set.
struct DictionaryFetchCase: Decodable, CustomTestStringConvertible, Sendable {
    var name: String
    var predicate: String?
    var properties: [String]
    var groupBy: [String]?
    var having: String?
    var distinct: Bool?
    var sort: [String]?
    var limit: Int?
    var offset: Int?
    var expected: [[PredicateValue]]?
    var error: String?

    var testDescription: String { name }

    var request: FetchRequest {
        var request = FetchRequest(entityName: "Employee", predicate: predicate,
                                   sortDescriptors: (sort ?? []).map { FetchSortDescriptor(parsing: $0) ?? FetchSortDescriptor("unreadable sort \($0)") },
                                   fetchLimit: limit, fetchOffset: offset ?? 0)
        request.propertiesToFetch = properties.map(ExpressionDescription.init(parsing:))
        request.propertiesToGroupBy = groupBy ?? []
        request.havingPredicate = having.map { .format($0, []) }
        request.returnsDistinctResults = distinct ?? false
        return request
    }

    static let table: (cases: [DictionaryFetchCase], errors: [DictionaryFetchCase]) = {
        struct Table: Decodable { var cases: [DictionaryFetchCase]; var errors: [DictionaryFetchCase] }
        guard let data = try? Fixtures.data("dictionary-fetches.json"),
              let table = try? JSONDecoder().decode(Table.self, from: data) else { return ([], []) }
        return (table.cases, table.errors)
    }()
}

/// Whether two results agree: doubles to rounding (the order a database
/// adds in is its own), everything else exactly.
func sameResults(_ a: [[PredicateValue]], _ b: [[PredicateValue]]) -> Bool {
    guard a.count == b.count else { return false }
    for (x, y) in zip(a, b) {
        guard x.count == y.count else { return false }
        for (u, v) in zip(x, y) where u != v {
            switch (u, v) {
            case (.double(let p), .double(let q)) where abs(p - q) <= 1e-9 * max(abs(p), abs(q), 1): continue
            case (.double(let p), .int(let q)) where p == Double(q): continue
            case (.int(let p), .double(let q)) where Double(p) == q: continue
            default: return false
            }
        }
    }
    return true
}

@Suite("Dictionary fetches: properties, aggregates, group by, having, distinct")
struct DictionaryFetchTests {
    @Test("The table of cases is read whole")
    func tableIsRead() {
        #expect(DictionaryFetchCase.table.cases.count >= 12)
        #expect(DictionaryFetchCase.table.errors.count >= 6)
    }

    @Test("Each case gives the reference's rows on every store", arguments: DictionaryFetchCase.table.cases)
    func cases(_ fetch: DictionaryFetchCase) throws {
        for kind in StoreKind.allCases {
            let store = try kind.make()
            // SQLite runs the whole fetch as one statement, unless its predicate needs memory.
            if let sqlite = store.store as? SQLiteStore, fetch.predicate?.contains("MATCHES") != true {
                #expect(try sqlite.resultQuery(for: fetch.request) != nil)
            }
            let rows = try store.context().fetchDictionaries(fetch.request)
            let values = rows.map { Array($0.values) }
            #expect(sameResults(values, fetch.expected ?? []), "\(kind): \(values) vs \(fetch.expected ?? [])")
            // Keys come back named, in the order asked for.
            for row in rows { #expect(Array(row.keys) == fetch.request.propertiesToFetch.map(\.name)) }
        }
    }

    @Test("Each invalid fetch is a typed error that says why", arguments: DictionaryFetchCase.table.errors)
    func errors(_ fetch: DictionaryFetchCase) throws {
        let store = try StoreKind.sqlite.make()
        do {
            _ = try store.context().fetchDictionaries(fetch.request)
            Issue.record("\(fetch.name) ran")
        } catch {
            #expect("\(error)".contains(fetch.error ?? "?"), "\(error)")
        }
    }

    @Test("SQL runs a grouped fetch as one SELECT … GROUP BY … HAVING")
    func groupedSQL() throws {
        let store = try SQLiteStore(inMemoryWith: Company.dataSet.model)
        try store.importDataSet(Company.dataSet)
        var request = FetchRequest(entityName: "Employee", predicate: "age > 30")
        request.propertiesToFetch = ["department.name", ExpressionDescription(name: "payroll", expression: "sum(salary)")]
        request.propertiesToGroupBy = ["department.name"]
        request.havingPredicate = .format("payroll > %@", [500_000])
        let query = try #require(try store.resultQuery(for: request))
        #expect(query.sql.contains("GROUP BY"))
        #expect(query.sql.contains("HAVING"))
        #expect(query.sql.contains("SUM("))
        #expect(!query.sql.contains("500000"), "constants are bound")
        let before = store.statementCount
        let rows = try ObjectContext(store: store).fetchDictionaries(request)
        #expect(store.statementCount - before == 1)
        #expect(!rows.isEmpty)
        // Memory (the atomic store) gives the same rows.
        let atomic = try StoreKind.atomic.make()
        #expect(sameResults(rows.map { Array($0.values) }, try atomic.context().fetchDictionaries(request).map { Array($0.values) }))
    }
}
