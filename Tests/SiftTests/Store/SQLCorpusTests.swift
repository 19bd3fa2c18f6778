// The conformance corpus through the SQL lowering and the SQLite store: every
// case gives the expected ids, the same ids as the memory backend.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Conformance corpus (SQLite)")
struct SQLCorpusTests {
    @Test("SQLite backend agrees with the corpus and with memory", arguments: CorpusCase.all)
    func sqlite(_ testCase: CorpusCase) throws {
        try Self.check(testCase, store: CompanyStore.store, cache: Company.cache)
    }

    /// Runs a corpus case through a SQLite store holding the company and
    /// in memory over a row cache holding it: the expected answer from both.
    static func check(_ testCase: CorpusCase, store: SQLiteStore, cache: RowCache) throws {
        try check(testCase, context: ObjectContext(store: store), cache: cache)
    }

    /// A corpus case through a context on any store: its expected ids (or
    /// error), and memory's answer.
    static func check(_ testCase: CorpusCase, context: ObjectContext, cache: RowCache) throws {
        let compiler = PredicateCompiler(model: context.model)
        let bound: BoundPredicate
        do {
            bound = try compiler.bind(testCase.predicate, arguments: testCase.args ?? [], entity: testCase.entity)
        } catch {
            #expect(testCase.expect == .error(error.kind), "\(testCase.predicate): \(error)")
            return
        }
        var request = FetchRequest(entityName: testCase.entity)
        request.predicate = .bound(bound)
        let ids = try context.fetchObjectIDs(request).map(\.primaryKey).sorted()
        #expect(testCase.expect == .matches(ids), "\(testCase.predicate)")
        let memory = try cache.nodes(of: testCase.entity, matching: bound).map(\.id.primaryKey)
        #expect(ids == memory, "SQL and memory disagree on \(testCase.predicate)")
    }
}
