// Hostile input: a bound on the pattern matching of a whole fetch (issue 29,
// item 5). `sift count 'name MATCHES "(.*)*x"'` on 200 000 rows ran for
// minutes: each value stayed under the per-value step budget, and nothing
// bounded the fetch. Now every fetch, count, dictionary fetch and batch
// change runs its MATCHES and LIKE tests under one budget of steps for all
// its rows (`EvaluationBudget`), on every backend: memory, SQLite's
// functions, the atomic store, PostgreSQL's residual. Budgets are counted
// in the engine's steps, never time: every outcome here is deterministic.

import Foundation
import Sift
import SiftStore
import SiftPostgres
import Testing

@Suite("Hostile input: a budget per fetch")
struct FetchBudgetTests {
    /// A quantified group: backtracks (Fibonacci in the length of a run of
    /// `a`s), and stays in memory on PostgreSQL.
    static let pathological = "(a|aa)+b"
    /// A quantified group too (no shape bound, so the engine reports its
    /// steps), but linear: no value costs a report.
    static let honest = "(ab)+"
    /// The budget the tests give a fetch: far below what the pathological
    /// pattern costs over the rows, far above one value's cost.
    static let budget = 2_000_000
    static let rows = 2_000

    static let model = try! DataModel([
        Entity("Note", attributes: [Attribute("text", .string, optional: true), Attribute("n", .integer64, optional: true)]),
    ])

    /// Runs of `a` (22 to 25 long), every tenth note `abab…`.
    static let dataSet: DataSet = {
        let notes: [[String: PredicateValue]] = (1...rows).map { id in
            let text = id % 10 == 0 ? String(repeating: "ab", count: 12) : String(repeating: "a", count: 22 + id % 4)
            return ["id": .int(Int64(id)), "text": .string(text), "n": .int(0)]
        }
        return try! DataSet(model: model, objects: ["Note": notes])
    }()

    static func isFetchTooCostly(_ error: any Error, term: String) -> Bool {
        let evaluation: EvaluationError
        switch error {
        case StoreError.evaluation(let e): evaluation = e
        case let e as EvaluationError: evaluation = e
        case let e as PredicateEvaluationError:
            guard case .evaluation(let e) = e.reason else { return false }
            evaluation = e
        default: return false
        }
        // The message names the pattern (its first 80 characters).
        return evaluation == .fetchTooCostly(term: term, steps: budget) && "\(evaluation)".contains(term.prefix(80))
    }

    @Test("One value of the pathological pattern stays under the per-value budget, and costs many reported steps")
    func oneValueIsWithinItsBudget() throws {
        let regex = try #require(StringMatching.regex(Self.pathological, []))
        var cheapest = Int.max
        for length in 22...25 {
            let steps = EvaluationBudget.run(steps: .max) { () -> Int in
                #expect(!StringMatching.matches(String(repeating: "a", count: length), regex))
                return EvaluationBudget.usedSteps ?? 0
            }
            #expect(EvaluationFailure.take() == nil)
            #expect(steps >= 10_000 && steps < PredicateLimits.standard.regularExpressionSteps, "\(length): \(steps)")
            cheapest = min(cheapest, steps)
            // Whatever ran before comes back: outside a fetch, no budget.
            #expect(EvaluationBudget.usedSteps == nil)
        }
        // The rows together pass the test's budget many times over.
        #expect(Self.rows * cheapest > 10 * Self.budget)
    }

    @Test("In memory: a filter runs under one budget, its own or the fetch's it is in")
    func memory() throws {
        let compiler = PredicateCompiler(model: Self.model)
        let cache = Self.dataSet.makeRowCache()
        let domain = RowNodeDomain(cache: cache)
        let nodes = domain.snapshot.nodes(entity: 0)
        let pathological = MemoryPredicate(try compiler.bind("text MATCHES %@", arguments: [.string(Self.pathological)],
                                                             entity: "Note"), domain: domain)
        let honest = MemoryPredicate(try compiler.bind("text MATCHES %@", arguments: [.string(Self.honest)], entity: "Note"),
                                     domain: domain)
        #expect {
            try EvaluationBudget.run(steps: Self.budget) { () throws(EvaluationError) in try pathological.filter(nodes) }
        } throws: { Self.isFetchTooCostly($0, term: "MATCHES '\(Self.pathological)'") }
        #expect(EvaluationFailure.take() == nil)
        let matching = try EvaluationBudget.run(steps: Self.budget) { () throws(EvaluationError) in try honest.filter(nodes) }
        #expect(matching.count == Self.rows / 10)
        // Values without a model, as NSPredicate filters them.
        let values: [[String: Any]] = (1...Self.rows).map { ["text": String(repeating: "a", count: 22 + $0 % 4)] }
        #expect {
            try EvaluationBudget.run(steps: Self.budget) {
                try FormatPredicate(format: "text MATCHES %@", Self.pathological).filter(values)
            }
        } throws: { Self.isFetchTooCostly($0, term: "MATCHES '\(Self.pathological)'") }
        // LIKE: a long piece with '?' is tried at each place, and charged.
        let longPiece = "*" + String(repeating: "a", count: 70) + "?b*"
        let long = (1...Self.rows).map { _ in ["text": String(repeating: "a", count: 300)] }
        #expect {
            try EvaluationBudget.run(steps: Self.budget) {
                try FormatPredicate(format: "text LIKE %@", longPiece).filter(long)
            }
        } throws: { Self.isFetchTooCostly($0, term: "LIKE '\(longPiece)'") }
        #expect(try FormatPredicate(format: "text LIKE %@", longPiece).filter(Array(long.prefix(10))).isEmpty)
    }

    @Test("Every store: fetches, counts, dictionary fetches and batch changes end with a typed error naming the pattern",
          arguments: StoreKind.allCases)
    func stores(_ kind: StoreKind) throws {
        let store = try kind.make(Self.dataSet)
        let context = store.context()
        let term = "MATCHES '\(Self.pathological)'"
        func request(_ pattern: String) -> FetchRequest {
            var request = FetchRequest(entityName: "Note", predicate: "text MATCHES %@", arguments: [.string(pattern)])
            request.regularExpressionStepLimit = Self.budget
            return request
        }
        if let sqlite = store.store as? SQLiteStore {
            // SQLite runs it, through sift_matches, one statement for the whole fetch.
            #expect(try sqlite.plan(request(Self.pathological)).residual == nil)
            #expect(try sqlite.sqlQuery(for: request(Self.pathological)).sql.contains("sift_matches("))
        }
        let bad = request(Self.pathological)
        #expect { try context.fetch(bad) } throws: { Self.isFetchTooCostly($0, term: term) }
        #expect { try context.count(for: bad) } throws: { Self.isFetchTooCostly($0, term: term) }
        #expect { try context.fetchObjectIDs(bad) } throws: { Self.isFetchTooCostly($0, term: term) }
        var dictionaries = bad
        dictionaries.propertiesToFetch = [ExpressionDescription(name: "n", expression: "n")]
        #expect { try context.fetchDictionaries(dictionaries) } throws: { Self.isFetchTooCostly($0, term: term) }
        var update = BatchUpdateRequest(entityName: "Note", predicate: bad.predicate, setting: ["n": "n + 1"])
        update.regularExpressionStepLimit = Self.budget
        #expect { try context.execute(update) } throws: { Self.isFetchTooCostly($0, term: term) }
        var delete = BatchDeleteRequest(entityName: "Note", predicate: bad.predicate)
        delete.regularExpressionStepLimit = Self.budget
        #expect { try context.execute(delete) } throws: { Self.isFetchTooCostly($0, term: term) }
        // Unsaved changes are tested in memory, under the same budget.
        let note = try context.insert("Note")
        try note.setValue(.string(String(repeating: "a", count: 25)), forKey: "text")
        #expect { try context.fetch(bad) } throws: { Self.isFetchTooCostly($0, term: term) }
        context.rollback()
        // Nothing was written, and an honest pattern passes under the same budget.
        let good = request(Self.honest)
        #expect(try context.count(for: good) == Self.rows / 10)
        #expect(try context.fetch(good).count == Self.rows / 10)
        var goodUpdate = BatchUpdateRequest(entityName: "Note", predicate: good.predicate, setting: ["n": "n + 1"])
        goodUpdate.regularExpressionStepLimit = Self.budget
        #expect(try context.execute(goodUpdate).count == Self.rows / 10)
        #expect(try context.count(for: FetchRequest(entityName: "Note", predicate: "n == 1")) == Self.rows / 10)
        #expect(try context.count(for: FetchRequest(entityName: "Note")) == Self.rows)
    }

    @Test("LIKE over the rows of a store: the same budget", arguments: StoreKind.local)
    func likeInStores(_ kind: StoreKind) throws {
        let notes: [[String: PredicateValue]] = (1...Self.rows).map { ["id": .int(Int64($0)), "text": .string(String(repeating: "a", count: 300))] }
        let store = try kind.make(try DataSet(model: Self.model, objects: ["Note": notes]))
        let pattern = "*" + String(repeating: "a", count: 70) + "?b*"
        var request = FetchRequest(entityName: "Note", predicate: "text LIKE %@", arguments: [.string(pattern)])
        request.regularExpressionStepLimit = Self.budget
        #expect { try store.context().count(for: request) } throws: { Self.isFetchTooCostly($0, term: "LIKE '\(pattern)'") }
        request.regularExpressionStepLimit = nil
        request.fetchLimit = 5
        #expect(try store.context().fetch(request).isEmpty)
    }

    // MARK: A budget of time for the whole fetch (issue 49, item 3)

    /// 60 nodes, each linked to every node (a many-to-many cross product).
    static let webModel = try! DataModel([
        Entity("Node", attributes: [Attribute("n", .integer64, optional: true)], relationships: [
            Relationship("links", to: "Node", toMany: true, inverse: "linkedFrom"),
            Relationship("linkedFrom", to: "Node", toMany: true, inverse: "links"),
        ]),
    ])

    static let web: DataSet = {
        let ids = (1...60).map { PredicateValue.int(Int64($0)) }
        let nodes: [[String: PredicateValue]] = (1...60).map { ["id": .int(Int64($0)), "n": .int(Int64($0)), "links": .array(ids)] }
        return try! DataSet(model: webModel, objects: ["Node": nodes])
    }()

    /// Subqueries `depth` deep, each over the links of the one outside it (so
    /// nothing can be hoisted), counted against more than any count: the
    /// work is 60^(depth + 1) per fetch, and nothing stops early.
    static func crossProduct(_ depth: Int) -> String {
        (0..<depth).reversed().reduce("$v\(depth - 1).n > 1000") { inner, level in
            "SUBQUERY(\(level == 0 ? "links" : "$v\(level - 1).links"), $v\(level), \(inner)).@count > 1000"
        }
    }

    static func isTimeOut(_ error: any Error) -> Bool {
        guard case StoreError.evaluation(.fetchTooCostly(let term, _)) = error else { return false }
        // The loop it was in (memory), or the SQL statement (SQLite, PostgreSQL).
        return term.contains("SUBQUERY(") || term.contains("SQL statement")
    }

    @Test("A hostile fetch (nested loops over a cross product) ends with fetchTooCostly within its time",
          arguments: StoreKind.local + (StoreKind.postgresURL == nil ? [] : [.postgres]))
    func hostileFetchEnds(_ kind: StoreKind) throws {
        let store = try kind.make(Self.web)
        let context = store.context()
        var request = FetchRequest(entityName: "Node", predicate: Self.crossProduct(6))
        request.timeLimit = .milliseconds(300)
        let started = ContinuousClock.now
        if kind == .postgres {
            // PostgreSQL may plan the nested counts with a cache of the inner results (Memoize) and answer in
            // time: then the answer must be right (no node has more than 60 links); else the limit stops it.
            do { #expect(try context.count(for: request) == 0) } catch { #expect(Self.isTimeOut(error), "\(error)") }
            do { #expect(try context.fetch(request).isEmpty) } catch { #expect(Self.isTimeOut(error), "\(error)") }
            #expect(ContinuousClock.now - started < .seconds(30))
            return
        }
        #expect { try context.count(for: request) } throws: { Self.isTimeOut($0) }
        #expect { try context.fetch(request) } throws: { Self.isTimeOut($0) }
        // A generous bound that the work stopped (it would run for hours).
        #expect(ContinuousClock.now - started < .seconds(30))
        // The message says what ran out, and how to go on.
        do {
            _ = try context.count(for: request)
        } catch {
            #expect("\(error)".contains("time limit"))
        }
    }

    @Test("The time limit: the store's, and the request's over it", arguments: StoreKind.local + (StoreKind.postgresURL == nil ? [] : [.postgres]))
    func timeLimitOverrides(_ kind: StoreKind) throws {
        let store = try kind.make(Self.web)
        let context = store.context()
        // 60^3 steps: a moment's work, but more than a budget of no time allows.
        let small = FetchRequest(entityName: "Node", predicate: Self.crossProduct(2))
        #expect(try context.count(for: small) == 0)
        setStoreLimit(store.store, .zero)
        #expect { try context.count(for: small) } throws: { Self.isTimeOut($0) }
        var generous = small
        generous.timeLimit = .seconds(60)
        #expect(try context.count(for: generous) == 0)
        // And a request's small limit over a store's generous one.
        setStoreLimit(store.store, .seconds(60))
        var hostile = FetchRequest(entityName: "Node", predicate: Self.crossProduct(6))
        hostile.timeLimit = .milliseconds(200)
        #expect { try context.count(for: hostile) } throws: { Self.isTimeOut($0) }
        setStoreLimit(store.store, nil)
        #expect(store.store.fetchTimeLimit == nil)
    }

    func setStoreLimit(_ store: any PersistentStore, _ limit: Duration?) {
        switch store {
        case let s as SQLiteStore: s.fetchTimeLimit = limit
        case let s as AtomicStore<DataSetFormat>: s.fetchTimeLimit = limit
        case let s as PostgresStore: s.fetchTimeLimit = limit
        default: Issue.record("no store limit for \(type(of: store))")
        }
    }

    @Test("In memory, outside a store: a filter's loops share the standard time budget, or the one it runs in")
    func memoryLoops() throws {
        let cache = Self.web.makeRowCache()
        let domain = RowNodeDomain(cache: cache)
        let nodes = domain.snapshot.nodes(entity: 0)
        let predicate = MemoryPredicate(try PredicateCompiler(model: Self.webModel).bind(Self.crossProduct(6), entity: "Node"),
                                        domain: domain)
        #expect {
            try EvaluationBudget.run(steps: Self.budget, timeLimit: .milliseconds(100)) { () throws(EvaluationError) in
                try predicate.filter(nodes)
            }
        } throws: { error in
            guard case EvaluationError.fetchTooCostly(let term, let steps) = error else { return false }
            return term.hasPrefix("SUBQUERY(") && steps > 0
        }
        #expect(EvaluationFailure.take() == nil)
        // Outside a fetch, nothing is charged and nothing remains.
        #expect(EvaluationBudget.remainingTime == nil)
        #expect(EvaluationBudget.chargeLoop(1_000_000, term: "x"))
    }
}
