// Long OR chains of one shape (issue 29, "long chains on SQLite"): lowered as
// one EXISTS over a bound table of their constants, they answer as memory
// does — nil logic, mixed shapes and terms that cannot be tabled included —
// and an OR of 20 000 terms runs as one statement.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Long OR chains as tables of values (SQLite)")
struct ValueTableTests {
    /// `count` terms `(age == k AND nickname != "xk")`, some of them naming
    /// real nicknames, so `!=` meets nil and equal values.
    static func chain(_ count: Int, extra: [String] = []) -> String {
        let nicknames = ["Doc", "Ace", "Bee", "x3"]
        let terms = (0..<count).map { k in "(age == \(k % 70) AND nickname != \"\(nicknames[k % nicknames.count])\")" }
        return (terms + extra).joined(separator: " OR ")
    }

    @Test(arguments: [
        chain(300),
        chain(64),
        chain(63),
        // Other shapes between them: a second shape of its own, terms that cannot be tabled (nil, options).
        chain(200, extra: (0..<80).map { "salary > \(Double($0) * 1000.5)" }),
        chain(100, extra: ["nickname == nil", "name ==[c] 'alice anderson'", "ANY reports.age > 60"]),
        (0..<500).map { "(name != \"Alice Anderson\" AND age >= \($0 % 60) AND startDate < CAST(\($0 * 1_000_000), 'NSDate'))" }
            .joined(separator: " OR "),
    ])
    func sameAnswersAsMemory(_ predicate: String) throws {
        let compiler = PredicateCompiler(model: Company.model)
        let bound = try compiler.bind(predicate, entity: "Employee")
        let context = ObjectContext(store: CompanyStore.store)
        var request = FetchRequest(entityName: "Employee")
        request.predicate = .bound(bound)
        let ids = try context.fetchObjectIDs(request).map(\.primaryKey).sorted()
        let memory = try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey)
        #expect(ids == memory)
        #expect(!ids.isEmpty)
    }

    @Test func aLongChainIsOneTableOfValues() throws {
        let bound = try PredicateCompiler(model: Company.model).bind(Self.chain(300), entity: "Employee")
        let query = try SQLLowering(schema: SQLSchema(model: Company.model)).select("Employee", where: bound)
        #expect(query.sql.contains("json_each("))
        #expect(query.sql.components(separatedBy: "json_extract").count - 1 == 2, "\(query.sql.prefix(400))")
        // One binding holds every term's constants.
        #expect(query.bindings.count < 10)
        // Below the threshold, the terms stay as they are.
        let short = try PredicateCompiler(model: Company.model).bind(Self.chain(63), entity: "Employee")
        #expect(try !SQLLowering(schema: SQLSchema(model: Company.model)).select("Employee", where: short).sql.contains("json_each"))
    }

    /// The size that took SQLite more than 20 s term by term.
    @Test func twentyThousandTermsRunAsOneStatement() throws {
        let predicate = Self.chain(20_000)
        let context = ObjectContext(store: CompanyStore.store)
        let ids = try context.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: predicate)).map(\.primaryKey)
        let bound = try PredicateCompiler(model: Company.model).bind(predicate, entity: "Employee")
        #expect(ids.sorted() == (try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey)))
    }
}
