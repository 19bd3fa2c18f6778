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

    /// Constants whose text a JSON reader could read back as another double.
    @Test func doublesKeepTheirValueThroughTheTable() throws {
        let constants = ["0.30000000000000004", "5e-324", "9007199254740993.0", "1.7976931348623157e308", "-0.0", "2.5"]
        let predicate = (0..<120).map { "salary > \(constants[$0 % constants.count]) AND age != \($0)" }
            .joined(separator: " OR ")
        try sameAnswersAsMemory(predicate)
        let bound = try PredicateCompiler(model: Company.model).bind(predicate, entity: "Employee")
        #expect(try SQLLowering(schema: SQLSchema(model: Company.model)).select("Employee", where: bound).sql.contains("json_each"))
    }

    /// A dictionary fetch's having is lowered over result columns and then
    /// rewritten column by column: a long OR there stays terms, as they are.
    @Test func aLongHavingStaysTerms() throws {
        var request = FetchRequest(entityName: "Employee")
        request.propertiesToFetch = ["department.name", ExpressionDescription(name: "salary", expression: "max:(salary)")]
        request.propertiesToGroupBy = ["department.name"]
        request.havingPredicate = .format((1...70).map { "salary == \($0)" }.joined(separator: " OR ") + " OR salary > 150000", [])
        let store = CompanyStore.store
        let (fetch, sort) = try store.bindDictionaryFetch(request)
        let query = try #require(try store.resultQuery(fetch, of: try store.compileObjects(of: request), sort: sort))
        #expect(!query.sql.contains("json_each"))
        let sql = try store.results(fetch, of: try store.compileObjects(of: request), sort: sort)
        #expect(sql.count > 0)
        #expect(sql.map { $0.map(\.description) } == (try store.resultsInMemory(fetch, of: try store.compileObjects(of: request), sort: sort)).map { $0.map(\.description) })
    }

    /// A list written out with more members than SQLite's compound SELECTs
    /// may have (500): one VALUES of rows.
    @Test func aLongListIsOneValues() throws {
        let members = (0..<700).map { String($0 % 80) }.joined(separator: ", ")
        try sameAnswersAsMemory("ANY {\(members)} == age")
        try sameAnswersAsMemory("{\(members), age}.@count == 701 AND {age, \(members)}.@max == 79")
    }

    /// Not-a-number is nil whatever computes it, in memory as in SQLite.
    @Test(arguments: [
        "modulus(salary * 1e308 * 10, 2) == nil",
        "{salary * 1e308 * 10, salary * -1e308 * 10}.@avg == nil",
        "(-salary) ** 0.5 == nil",
        "sqrt(-salary) == nil",
    ])
    func notANumberIsNil(_ predicate: String) throws {
        try sameAnswersAsMemory(predicate)
        let bound = try PredicateCompiler(model: Company.model).bind(predicate, entity: "Employee")
        #expect(try Company.cache.nodes(of: "Employee", matching: bound).count == 60)
    }

    /// The size that took SQLite more than 20 s term by term.
    @Test func twentyThousandTermsRunAsOneStatement() throws {
        let predicate = Self.chain(20_000)
        let context = ObjectContext(store: CompanyStore.store)
        var request = FetchRequest(entityName: "Employee", predicate: predicate)
        // (What is tested is one statement, not its speed: a debug build on a
        // busy machine took longer than the default 5 s limit.)
        request.timeLimit = .seconds(120)
        let ids = try context.fetchObjectIDs(request).map(\.primaryKey)
        let bound = try PredicateCompiler(model: Company.model).bind(predicate, entity: "Employee")
        #expect(ids.sorted() == (try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey)))
    }
}
