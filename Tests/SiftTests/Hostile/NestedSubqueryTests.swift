// Hostile input: nested subqueries (issue 49, item 3). `SUBQUERY(reports,
// $a0, SUBQUERY(reports, $a1, … TRUEPREDICATE …).@count > 0).@count > 0`
// 10 deep ran for more than a minute on the company's 60 employees, in
// memory and on SQLite: each inner subquery reads `reports` of the evaluated
// object, not of the outer variable, yet ran once per outer member. The
// optimizer now hoists what a loop does not need out of it
// (`LoopInvariantHoisting`), and every fetch has a time budget
// (FetchBudgetTests).

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Hostile input: nested subqueries")
struct NestedSubqueryTests {
    /// `SUBQUERY(reports, $a0, SUBQUERY(reports, $a1, … TRUEPREDICATE …).@count > 0).@count > 0`.
    static func nested(_ depth: Int, innermost: String = "TRUEPREDICATE") -> String {
        (0..<depth).reversed().reduce(innermost) { inner, level in "SUBQUERY(reports, $a\(level), \(inner)).@count > 0" }
    }

    static let model = Company.dataSet.model
    static let compiler = PredicateCompiler(model: model)
    static let unoptimized = PredicateCompiler(model: model, optimizer: nil)

    /// Whether a subquery is left anywhere in the tree.
    static func hasSubquery(_ p: BoundPredicate) -> Bool {
        switch p {
        case .constant: false
        case .not(let q): hasSubquery(q)
        case .and(let qs), .or(let qs): qs.contains(where: hasSubquery)
        case .exists(let e): hasSubquery(e)
        case .comparison(let c): hasSubquery(c.left) || hasSubquery(c.right)
        }
    }

    static func hasSubquery(_ e: BoundExpression) -> Bool {
        switch e.kind {
        case .subquery: true
        case .constant, .evaluatedObject, .variable, .parameter: false
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .key(let b, _), .aggregate(_, let b), .negate(let b),
             .size(let b):
            hasSubquery(b)
        case .map(let a, _, let b), .arithmetic(_, let a, let b), .index(let a, let b): hasSubquery(a) || hasSubquery(b)
        case .list(let es), .function(_, let es), .custom(_, let es): es.contains(where: hasSubquery)
        case .ternary(let p, let a, let b): hasSubquery(p) || hasSubquery(a) || hasSubquery(b)
        }
    }

    @Test("The rule hoists an inner subquery that does not read the outer variable, level by level")
    func hoists() throws {
        for depth in [2, 10, 20] {
            let bound = try Self.unoptimized.bind(Self.nested(depth), entity: "Employee")
            #expect(Self.hasSubquery(bound))
            let optimized = Optimizer.standard.optimize(bound)
            // Every level reads the evaluated object's reports only: no loop is left.
            #expect(!Self.hasSubquery(optimized), "\(depth): \(optimized)")
            #expect(optimized == (try Self.compiler.bind("reports.@count > 0", entity: "Employee")))
        }
        // The rule on its own, on a term beside one that reads the variable.
        let rule = LoopInvariantHoisting()
        let mixed = try Self.unoptimized.bind("SUBQUERY(reports, $r, $r.age < 30 AND name == 'x').@count > 0", entity: "Employee")
        let hoisted = try #require(rule.rewrite(mixed))
        guard case .and(let terms) = hoisted else { Issue.record("\(hoisted)"); return }
        #expect(terms.contains(try Self.unoptimized.bind("name == 'x'", entity: "Employee")))
        #expect(terms.contains(try Self.unoptimized.bind("SUBQUERY(reports, $r, $r.age < 30).@count > 0", entity: "Employee")))
        // A count compared with a constant 0 satisfies: NOT hoisted OR count.
        let fewer = try Self.unoptimized.bind("SUBQUERY(reports, $r, $r.age < 30 AND name == 'x').@count < 2", entity: "Employee")
        guard case .or = try #require(rule.rewrite(fewer)) else { Issue.record("not an OR"); return }
    }

    @Test("A term that reads the loop variable, or is not deterministic, stays in the loop")
    func keepsWhatTheLoopReads() throws {
        let rule = LoopInvariantHoisting()
        for text in [
            "SUBQUERY(reports, $a, SUBQUERY($a.reports, $b, $b.age > 30).@count > 0).@count > 0",
            "SUBQUERY(reports, $r, $r.age < 30).@count > 0",
            "SUBQUERY(reports, $r, $r.age < 30 AND $r.name == 'x').@count > 2",
            "SUBQUERY(reports, $r, random() < 0.5).@count > 0",
            // An inner subquery of the same name binds its own variable: the outer one is not read there.
            "SUBQUERY(reports, $r, SUBQUERY($r.reports, $r, $r.age > 3).@count > 0).@count > 0",
        ] {
            let bound = try Self.unoptimized.bind(text, entity: "Employee")
            #expect(rule.rewrite(bound) == nil, "\(text)")
            #expect(Self.hasSubquery(Optimizer.standard.optimize(bound)), "\(text)")
        }
    }

    @Test("Hoisting keeps every answer: memory, before and after the optimizer, over the company's employees")
    func keepsMeaning() throws {
        let cache = Company.dataSet.makeRowCache()
        let domain = RowNodeDomain(cache: cache)
        let entity = try #require(Self.model.entities.firstIndex { $0.name == "Employee" })
        let nodes = domain.snapshot.nodes(entity: entity)
        let shapes = [
            Self.nested(4),
            Self.nested(3, innermost: "age > 40"),
            Self.nested(3, innermost: "$a0.age > 40 AND salary > 100000"),
            "SUBQUERY(reports, $r, $r.age < 45 AND isManager == YES).@count > 0",
            "SUBQUERY(reports, $r, $r.age < 45 AND isManager == YES).@count < 2",
            "SUBQUERY(reports, $r, $r.age < 45 AND isManager == YES).@count == 1",
            "SUBQUERY(reports, $r, age > 50).@count != 0",
            "NOT (SUBQUERY(tags, $t, SUBQUERY(reports, $r, $r.age > 30).@count > 1 AND $t.name BEGINSWITH 'r').@count > 0)",
            "SUBQUERY(reports, $r, SUBQUERY(tags, $t, $t.name == 'remote').@count > 0 AND $r.salary > 90000).@count >= 1",
        ]
        for text in shapes {
            let plain = MemoryPredicate(try Self.unoptimized.bind(text, entity: "Employee"), domain: domain)
            let optimized = MemoryPredicate(try Self.compiler.bind(text, entity: "Employee"), domain: domain)
            let expected = try plain.filter(nodes).map(\.id.primaryKey)
            #expect(try optimized.filter(nodes).map(\.id.primaryKey) == expected, "\(text)")
        }
    }

    @Test("10 and 20 deep: quick, and the same count on every backend", arguments: StoreKind.local + (StoreKind.postgresURL == nil ? [] : [.postgres]))
    func stores(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let expected = try context.count(for: FetchRequest(entityName: "Employee", predicate: "reports.@count > 0"))
        #expect(expected > 0)
        for depth in [10, 20] {
            var request = FetchRequest(entityName: "Employee", predicate: Self.nested(depth))
            // Generous: a fetch that ran for a product of the levels would end with an error instead.
            request.timeLimit = .seconds(30)
            #expect(try context.count(for: request) == expected, "\(depth)")
            #expect(try context.fetch(request).count == expected, "\(depth)")
        }
        // A level that does read the outer variable still gives the same answer.
        let reading = FetchRequest(entityName: "Employee",
                                   predicate: "SUBQUERY(reports, $a, SUBQUERY($a.reports, $b, $b.age > 30).@count > 0 AND age > 40).@count > 0")
        let local = try StoreKind.sqlite.make()
        #expect(try context.count(for: reading) == (try local.context().count(for: reading)))
    }
}
