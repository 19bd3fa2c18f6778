// The optimizer: each rule against its fixtures, and the law every rule
// keeps — optimized and unoptimized trees select the same objects, in memory
// and in SQL, on random data.

import Foundation
import PropertyBased
import Sift
import SiftStore
import Testing

struct RuleFixture: Sendable, CustomTestStringConvertible {
    var rule: String
    var input: String
    var expected: String
    var testDescription: String { "\(rule): \(input)" }

    static let all: [RuleFixture] = {
        guard let text = try? String(decoding: Fixtures.data("Optimizer/rules.txt"), as: UTF8.self) else { return [] }
        var fixtures: [RuleFixture] = []
        var rule = ""
        for line in text.split(separator: "\n").map(String.init) {
            if line.hasPrefix("## ") { rule = String(line.dropFirst(3)); continue }
            if line.hasPrefix("#") || line.isEmpty { continue }
            let parts = line.components(separatedBy: "  =>  ")
            guard parts.count == 2 else { continue }
            fixtures.append(RuleFixture(rule: rule, input: parts[0], expected: parts[1]))
        }
        return fixtures
    }()
}

@Suite("Optimizer")
struct OptimizerTests {
    static let unoptimized = PredicateCompiler(model: Company.model, optimizer: nil)

    /// The expected side of a fixture, bound; "EXISTS c" and "NOT EXISTS c" too.
    static func expected(_ text: String) throws -> BoundPredicate {
        for (prefix, negated) in [("NOT EXISTS ", true), ("EXISTS ", false)] where text.hasPrefix(prefix) {
            let syntax = try PredicateParser.parseExpression(String(text.dropFirst(prefix.count)))
            let collection = try Binder(model: Company.model).bind(syntax, entity: "Employee")
            return negated ? .not(.exists(collection)) : .exists(collection)
        }
        return try unoptimized.bind(text, entity: "Employee")
    }

    @Test func everyRuleHasFixtures() {
        let covered = Set(RuleFixture.all.map(\.rule))
        for rule in Optimizer.standard.rules { #expect(covered.contains(rule.name), "\(rule.name) has no fixtures") }
    }

    @Test("Rule fixtures", arguments: RuleFixture.all)
    func fixture(_ fixture: RuleFixture) throws {
        let rule = try #require(Optimizer.rule(named: fixture.rule), "no rule \(fixture.rule)")
        let input = try Self.unoptimized.bind(fixture.input, entity: "Employee")
        let output = Optimizer(rules: [rule]).optimize(input)
        #expect(output == (try Self.expected(fixture.expected)), "got:\n\(output.outline)")
    }

    @Test func theStandardListRunsToAFixedPoint() throws {
        let input = try Self.unoptimized.bind(
            "NOT NOT (age >= 30 AND age <= 40) AND TRUEPREDICATE AND (age == 1 OR age == 2 OR age == 1) AND reports.@count == 0",
            entity: "Employee")
        let (optimized, trace) = Optimizer.standard.optimizeWithTrace(input)
        #expect(Optimizer.standard.optimize(optimized) == optimized)
        #expect(trace.contains("double-negation"))
        #expect(trace.contains("range-merging"))
        #expect(trace.contains("count-to-exists"))
        // age BETWEEN {30, 40} and age IN {1, 2} cannot both hold.
        #expect(optimized != input)
    }

    @Test("Optimized and unoptimized trees agree, in memory and in SQL")
    func equivalence() async throws {
        await propertyCheck(count: 80, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var (generator, store, cache) = try RandomWorld.make(seed: seed)
            let plain = PredicateCompiler(model: RandomWorld.model, optimizer: nil)
            var rewritten = 0
            for _ in 0..<25 {
                let text = generator.predicate(depth: 3)
                guard let bound = try? plain.bind(text, entity: "Thing") else { continue }
                let optimized = Optimizer.standard.optimize(bound)
                if optimized != bound { rewritten += 1 }
                let before = try cache.nodes(of: "Thing", matching: bound).map(\.id.primaryKey)
                let after = try cache.nodes(of: "Thing", matching: optimized).map(\.id.primaryKey)
                #expect(before == after, "memory: \(text)\n\(optimized.outline)")
                var request = FetchRequest(entityName: "Thing")
                request.predicate = .bound(optimized)
                let sql = try ObjectContext(store: store).fetchObjectIDs(request).map(\.primaryKey)
                #expect(sql == before, "SQL: \(text)")
            }
            #expect(rewritten > 0)
        }
    }
}

@Suite("Optimizer regressions")
struct OptimizerRegressionTests {
    /// Found by the equivalence property: "é" and "e\u{301}" were one term to
    /// the duplicate-terms rule, because values compared as Swift strings do
    /// (canonical equivalence) rather than as Sift does (scalars).
    @Test func canonicallyEquivalentStringsAreDifferentConstants() throws {
        let compiler = PredicateCompiler(model: Company.model)
        let bound = try compiler.bind("name == 'Renée Roux' OR name == 'Rene\\u0301e Roux'", entity: "Employee")
        #expect(try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey) == [119, 120])
        #expect(PredicateValue.string("é") != PredicateValue.string("e\u{301}"))
        #expect(Set([PredicateValue.string("é"), .string("e\u{301}")]).count == 2)
    }
}
