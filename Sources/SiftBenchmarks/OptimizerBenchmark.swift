// Optimizer benchmark: each rule's effect where it matters, against the
// unoptimized plan in the same run; companion columns against folding each
// row and against a plain indexed BEGINSWITH; templates against parsing each
// time; optimizer time against parse time.

import Foundation
import Sift
import SiftDemo
import SiftStore

func optimizerBenchmark() {
    let store = try! benchmarkStore(employees: 1_000_000)
    report("== Optimizer: 1000000 employees, one core")
    let plain = PredicateCompiler(model: store.model, optimizer: nil)
    let optimized = PredicateCompiler(model: store.model)

    /// Runs a bound predicate through SQL and returns the row count.
    func sqlRun(_ bound: BoundPredicate, _ lowering: SQLLowering = store.lowering, entity: String = "Employee") -> Int {
        let query = try! lowering.select(entity, where: bound, columns: .identifiers)
        return try! store.withConnection { connection in
            var rows = 0
            try connection.forEachRow(query.sql, query.bindings) { _ in rows += 1; return true }
            return rows
        }
    }

    func compareSQL(_ label: String, _ before: BoundPredicate, _ after: BoundPredicate, entity: String = "Employee",
                    rounds: Int = 3) {
        var rowsBefore = 0
        var rowsAfter = 0
        let (a, b) = Measurement.compare(operations: 1, rounds: rounds, baseline: {
            rowsBefore = sqlRun(before, entity: entity)
        }, candidate: {
            rowsAfter = sqlRun(after, entity: entity)
        })
        precondition(rowsBefore == rowsAfter, "\(label): \(rowsBefore) vs \(rowsAfter)")
        report(label.padding(toLength: 54, withPad: " ", startingAt: 0),
               "unoptimized \(formatted(a.nanosecondsPerOperation / 1e6, digits: 1)) ms",
               "optimized \(formatted(b.nanosecondsPerOperation / 1e6, digits: 1)) ms",
               "= \(formatted(b.nanosecondsPerOperation / a.nanosecondsPerOperation, digits: 3))x  (\(rowsAfter) rows)")
    }

    // 1. An OR chain of equalities: IN, in SQL and in memory. (SQLite refuses
    //    the unoptimized chain of 1 000: its expression tree may be at most
    //    1 000 deep. The optimized IN has no such limit; 900 are compared.)
    let chain = (0..<900).map { "salary == \(30_000 + $0 * 97)" }.joined(separator: " OR ")
    let chainPlain = try! plain.bind(chain, entity: "Employee")
    let chainOptimized = try! optimized.bind(chain, entity: "Employee")
    let part = ProcessInfo.processInfo.environment["SIFT_BENCH_PART"]
    if part == nil { compareSQL("SQL: OR of 900 equalities -> IN", chainPlain, chainOptimized, rounds: 2) }
    let cache = RowCache(model: store.model)
    cache.store(CompanyGenerator.nodes(employees: 200_000))
    let nodes = cache.snapshot().nodes(entity: 1)
    let domain = RowNodeDomain(cache: cache)
    let memoryPlain = MemoryPredicate(chainPlain, domain: domain)
    let memoryOptimized = MemoryPredicate(chainOptimized, domain: domain)
    var countPlain = 0
    var countOptimized = 0
    let (mp, mo) = Measurement.compare(operations: nodes.count, rounds: 3, baseline: {
        countPlain = nodes.reduce(0) { $0 + ((try? memoryPlain.evaluate($1)) == true ? 1 : 0) }
    }, candidate: {
        countOptimized = nodes.reduce(0) { $0 + ((try? memoryOptimized.evaluate($1)) == true ? 1 : 0) }
    })
    precondition(countPlain == countOptimized)
    report("memory: OR of 900 equalities -> IN (200000 nodes)".padding(toLength: 54, withPad: " ", startingAt: 0),
           "unoptimized \(formatted(mp.nanosecondsPerOperation)) ns/node", "optimized \(formatted(mo.nanosecondsPerOperation)) ns/node",
           "= \(formatted(mo.nanosecondsPerOperation / mp.nanosecondsPerOperation, digits: 3))x")

    // 2. @count == 0 on a large to-many: NOT EXISTS.
    let empty = "employees.@count == 0"
    compareSQL("SQL: employees.@count == 0 -> NOT EXISTS", try! plain.bind(empty, entity: "Department"),
               try! optimized.bind(empty, entity: "Department"), entity: "Department")
    let some = "SUBQUERY(reports, $r, $r.rating == nil).@count > 0 AND age == 33"
    compareSQL("SQL: SUBQUERY(...).@count > 0 -> EXISTS", try! plain.bind(some, entity: "Employee"),
               try! optimized.bind(some, entity: "Employee"))

    // 3. BEGINSWITH[cd] with and without the companion column, next to a
    //    plain indexed BEGINSWITH.
    let folded = try! optimized.bind("name BEGINSWITH[cd] 'zoe'", entity: "Employee")
    let literal = try! optimized.bind("name BEGINSWITH 'Zo'", entity: "Employee")
    var withoutCompanion = store.lowering
    withoutCompanion.usesCompanionColumns = false
    var rows = (0, 0, 0)
    let (base, companion) = Measurement.compare(operations: 1, rounds: 5, baseline: {
        rows.0 = sqlRun(literal)
    }, candidate: {
        rows.1 = sqlRun(folded)
    })
    let noIndex = Measurement.run("fold each row", operations: 1, rounds: 2) { rows.2 = sqlRun(folded, withoutCompanion) }
    precondition(rows.1 == rows.2)
    report("BEGINSWITH[cd] 'zoe' with the companion column: \(formatted(companion.nanosecondsPerOperation / 1e6, digits: 1)) ms (\(rows.1) rows)",
           "vs plain indexed BEGINSWITH 'Zo': \(formatted(base.nanosecondsPerOperation / 1e6, digits: 1)) ms (\(rows.0) rows)",
           "= \(formatted(companion.nanosecondsPerOperation / base.nanosecondsPerOperation, digits: 2))x;",
           "without it (sift_fold per row): \(formatted(noIndex.nanosecondsPerOperation / 1e6, digits: 1)) ms",
           "= \(formatted(noIndex.nanosecondsPerOperation / companion.nanosecondsPerOperation, digits: 1))x slower")

    // 4. Templates: compile once, bind values per execution; against parsing,
    //    binding, optimizing and lowering each time.
    // An indexed lookup, so that the query itself is cheap and the cost of
    // compiling it shows.
    let text = "name == $name AND age > $age AND department.name == $department"
    let template = try! PredicateTemplate(store: store, entityName: "Employee", predicate: text)
    let values: [[String: PredicateValue]] = (0..<200).map {
        ["name": .string("Alice \($0 * 4999 + 1)"), "age": .int(20), "department": "Sales"]
    }
    var firstExecution = Duration.zero
    do {
        let start = ContinuousClock.now
        let fresh = try! PredicateTemplate(store: store, entityName: "Employee", predicate: text + " AND salary > 0")
        _ = try! fresh.fetchObjectIDs(values[0])
        firstExecution = ContinuousClock.now - start
    }
    let (everyTime, reused) = Measurement.compare(operations: values.count, rounds: 3, baseline: {
        for v in values {
            let request = FetchRequest(entityName: "Employee", predicate: "name == %@ AND age > %@ AND department.name == %@",
                                       arguments: [v["name"]!, v["age"]!, v["department"]!])
            blackHole(try! ObjectContext(store: store).fetchObjectIDs(request))
        }
    }, candidate: {
        for v in values { blackHole(try! template.fetchObjectIDs(v)) }
    })
    report("template: first execution (compile + run) \(formatted(Double(firstExecution.components.attoseconds) / 1e12, digits: 0)) us;",
           "re-execution \(formatted(reused.nanosecondsPerOperation / 1e3, digits: 1)) us vs parse+bind+optimize+lower each time",
           "\(formatted(everyTime.nanosecondsPerOperation / 1e3, digits: 1)) us = \(formatted(reused.nanosecondsPerOperation / everyTime.nanosecondsPerOperation, digits: 2))x")

    // 5. Optimizer time per predicate against parse time (the corpus).
    let corpus = corpusPredicates()
    let company = try! DataModel(contentsOf: repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/company.json"))
    let binder = Binder(model: company)
    let parsed: [(PredicateSyntax, String)] = corpus.compactMap { text, arguments in
        guard let syntax = try? PredicateParser.parse(text, arguments: arguments) else { return nil }
        for entity in ["Employee", "Department", "Tag"] where (try? binder.bind(syntax, entity: entity)) != nil {
            return (syntax, entity)
        }
        return nil
    }
    let bound = parsed.map { try! binder.bind($0.0, entity: $0.1) }
    let repetitions = 200
    let parse = Measurement.run("parse", operations: corpus.count * repetitions, rounds: 3) {
        for _ in 0..<repetitions { for (t, a) in corpus { blackHole(try? PredicateParser.parse(t, arguments: a)) } }
    }
    let optimize = Measurement.run("optimize", operations: bound.count * repetitions, rounds: 3) {
        for _ in 0..<repetitions { for b in bound { blackHole(Optimizer.standard.optimize(b)) } }
    }
    report("optimizer \(formatted(optimize.nanosecondsPerOperation / 1000, digits: 2)) us per predicate vs parse",
           "\(formatted(parse.nanosecondsPerOperation / 1000, digits: 2)) us = \(formatted(optimize.nanosecondsPerOperation / parse.nanosecondsPerOperation, digits: 1))x (\(bound.count) corpus predicates)")
}
