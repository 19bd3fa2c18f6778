// The conformance corpus through the memory backend: every case gives the
// expected ids, or the expected kind of error.

import Foundation
import Sift
import Testing

@Suite("Conformance corpus (memory)")
struct MemoryCorpusTests {
    @Test("Memory backend", arguments: CorpusCase.all)
    func memory(_ testCase: CorpusCase) throws {
        let compiler = PredicateCompiler(model: Company.model)
        let bound: BoundPredicate
        do {
            bound = try compiler.bind(testCase.predicate, arguments: testCase.args ?? [], entity: testCase.entity)
        } catch {
            #expect(testCase.expect == .error(error.kind), "\(testCase.predicate): \(error.message)")
            return
        }
        let ids = try Company.cache.nodes(of: testCase.entity, matching: bound).map(\.id.primaryKey)
        #expect(testCase.expect == .matches(ids), "\(testCase.predicate)")
        // The cache evaluates by columns; node by node gives the same.
        let domain = RowNodeDomain(cache: Company.cache)
        let index = Company.model.entity(named: testCase.entity)!.index
        let nodeByNode = try MemoryPredicate(bound, domain: domain).filter(domain.snapshot.nodes(entity: index))
        #expect(nodeByNode.map(\.id.primaryKey) == ids, "\(testCase.predicate): node by node")
    }
}
