// Expressions in fetches and batch changes, on the demo store (200 000
// employees): a grouped aggregate next to the same query written by hand
// and run with raw sqlite3 calls; the same grouping in memory next to a
// hand-written Swift loop over the same row nodes; a batch update of about
// 100 000 rows next to the hand-written UPDATE, and next to updating the
// objects through a context.

import CSQLite
import Foundation
import Sift
import SiftDemo
import SiftStore

func expressionBenchmark() {
    let employees = 200_000
    let part = ProcessInfo.processInfo.environment["SIFT_BENCH_PART"]
    report("== Expressions in fetches and batch changes: the demo store, \(employees) employees, one core")

    // 1. Payroll per department, in SQL.
    var request = FetchRequest(entityName: "Employee")
    request.propertiesToFetch = ["department.name", ExpressionDescription(name: "payroll", expression: "sum(salary)"),
                                 ExpressionDescription(name: "people", expression: "@count"),
                                 ExpressionDescription(name: "age", expression: "average(age)")]
    request.propertiesToGroupBy = ["department.name"]
    if part == nil || part == "grouped" {
        let store = try! benchmarkStore(employees: employees)
        var db: OpaquePointer?
        sqlite3_open_v2(store.url!.path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
        defer { sqlite3_close_v2(db) }
        let rawSQL = #"SELECT d."ZNAME", SUM(e."ZSALARY"), COUNT(*), AVG(e."ZAGE") FROM "ZEMPLOYEE" AS e "#
            + #"LEFT JOIN "ZDEPARTMENT" AS d ON d."Z_PK" = e."ZDEPARTMENT" GROUP BY d."ZNAME""#
        struct Group { var name: String?, payroll: Double, people: Int64, age: Double? }
        let context = ObjectContext(store: store)
        var groups = 0
        let (raw, sift) = Measurement.compare(operations: 1, rounds: 9, baseline: {
            var statement: OpaquePointer?
            sqlite3_prepare_v2(db, rawSQL, -1, &statement, nil)
            var rows: [Group] = []
            while sqlite3_step(statement) == SQLITE_ROW {
                rows.append(Group(name: sqlite3_column_type(statement, 0) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(statement, 0)),
                                  payroll: sqlite3_column_double(statement, 1), people: sqlite3_column_int64(statement, 2),
                                  age: sqlite3_column_type(statement, 3) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 3)))
            }
            sqlite3_finalize(statement)
            groups = rows.count
            blackHole(rows)
        }, candidate: {
            blackHole(try! context.fetchDictionaries(request))
        })
        report("grouped aggregate in SQL (\(groups) groups)",
               "hand-written SQL \(formatted(raw.nanosecondsPerOperation / 1e6)) ms",
               "Sift \(formatted(sift.nanosecondsPerOperation / 1e6)) ms",
               "\(formatted(sift.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x (target ≤ 1.1x)")
    }

    // 2. The same grouping in memory, over row nodes already in a row cache.
    if part == nil || part == "memory" {
        let model = CompanyGenerator.model
        let cache = RowCache(model: model)
        cache.store(CompanyGenerator.nodes(employees: employees))
        let store = try! SQLiteStore(inMemoryWith: model)  // for binding only
        let (fetch, _) = try! store.bindDictionaryFetch(request)
        let domain = RowNodeDomain(cache: cache)
        let engine = MemoryDictionaryFetch(fetch, domain: domain)
        let entity = model.entity(named: "Employee")!
        let department = model.entity(named: "Department")!
        let nodes = domain.snapshot.nodes(entity: entity.index)
        let (salary, age) = (entity.attribute(named: "salary")!.slot, entity.attribute(named: "age")!.slot)
        let departmentSlot = entity.relationship(named: "department")!.slot
        let nameSlot = department.attribute(named: "name")!.slot
        let (loop, sift) = Measurement.compare(operations: 1, rounds: 9, baseline: {
            // By hand: the department's name through the cache, sums and counts per name.
            struct Totals { var payroll = 0.0, people: Int64 = 0, ages = 0.0, aged = 0 }
            var totals: [String?: Totals] = [:]
            let snapshot = domain.snapshot
            for node in nodes {
                let name: String? = node.toOneKey(at: departmentSlot).flatMap { key in
                    if case .string(let s)? = snapshot.node(entity: department.index, primaryKey: key)?.value(at: nameSlot) { s } else { nil }
                }
                var t = totals[name, default: Totals()]
                if case .double(let s) = node.value(at: salary) { t.payroll += s }
                t.people += 1
                if case .int(let a) = node.value(at: age) { t.ages += Double(a); t.aged += 1 }
                totals[name] = t
            }
            blackHole(totals.map { ($0.key, $0.value.payroll, $0.value.people, $0.value.aged == 0 ? nil : $0.value.ages / Double($0.value.aged)) })
        }, candidate: {
            blackHole(try! engine.results(nodes))
        })
        report("the same grouping in memory",
               "Swift loop \(formatted(loop.nanosecondsPerOperation / 1e6)) ms",
               "Sift \(formatted(sift.nanosecondsPerOperation / 1e6)) ms",
               "\(formatted(sift.nanosecondsPerOperation / loop.nanosecondsPerOperation, digits: 2))x (target ≤ 2x)")
    }

    // 3. A batch update of about half the employees, on a copy of the store.
    if part == nil || part == "update" {
        let source = try! benchmarkStore(employees: employees)
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-batch-\(UUID().uuidString).sqlite")
        try! FileManager.default.copyItem(at: source.url!, to: url)
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        let store = try! SQLiteStore(url: url, model: CompanyGenerator.model)
        // The median age: `age >= median` selects about half.
        let ages = try! store.withConnection { try $0.query(#"SELECT "ZAGE" FROM "ZEMPLOYEE" ORDER BY "ZAGE" LIMIT 1 OFFSET ?1"#,
                                                            [.integer(Int64(employees / 2))]) }
        guard case .integer(let median)? = ages.first?.first else { fatalError("no median age") }
        let plainSQL = #"UPDATE "ZEMPLOYEE" SET "ZSALARY" = "ZSALARY" * ?1, "Z_OPT" = "Z_OPT" + 1 WHERE "ZAGE" >= ?2"#
        // What Sift must also learn: which rows changed (for the row cache and the announcement).
        let returningSQL = plainSQL + #" RETURNING "Z_PK""#
        let batch = BatchUpdateRequest(entityName: "Employee", predicate: .format("age >= %@", [.int(median)]),
                                       propertiesToUpdate: [ExpressionDescription(name: "salary", expression: "salary * 1.0001")])
        let context = ObjectContext(store: store)
        var changed = 0
        // The hand-written statements run on the store's own connection, so
        // both sides share its page cache and its WAL checkpoints.
        func hand(_ sql: String) {
            try! store.withConnection { connection in
                try connection.execute("BEGIN IMMEDIATE")
                let rows = try connection.query(sql, [.real(1.0001), .integer(median)])
                changed = max(connection.changes, rows.count)
                try connection.execute("COMMIT")
            }
        }
        let (plain, sift) = Measurement.compare(operations: 1, rounds: 7, baseline: { hand(plainSQL) }, candidate: {
            blackHole(try! context.execute(batch))
        })
        let (returning, sift2) = Measurement.compare(operations: 1, rounds: 7, baseline: { hand(returningSQL) }, candidate: {
            blackHole(try! context.execute(batch))
        })
        let best = min(sift.nanosecondsPerOperation, sift2.nanosecondsPerOperation)
        report("batch update of \(changed) rows",
               "hand-written UPDATE \(formatted(plain.nanosecondsPerOperation / 1e6)) ms",
               "Sift \(formatted(sift.nanosecondsPerOperation / 1e6)) ms",
               "\(formatted(sift.nanosecondsPerOperation / plain.nanosecondsPerOperation, digits: 2))x (target ≤ 1.1x)")
        report("  next to the same UPDATE … RETURNING the keys",
               "\(formatted(returning.nanosecondsPerOperation / 1e6)) ms",
               "Sift \(formatted(sift2.nanosecondsPerOperation / 1e6)) ms",
               "\(formatted(sift2.nanosecondsPerOperation / returning.nanosecondsPerOperation, digits: 2))x")
        // The same change made to objects: fetched, set one by one, saved.
        let clock = ContinuousClock()
        let objects = clock.measure {
            let context = ObjectContext(store: store)
            var fetch = FetchRequest(entityName: "Employee", predicate: "age >= %@", arguments: [.int(median)])
            fetch.returnsObjectsAsFaults = false
            for object in try! context.fetch(fetch) {
                if case .double(let salary) = try! object.value(forKey: "salary") {
                    try! object.setValue(.double(salary * 1.0001), forKey: "salary")
                }
            }
            try! context.save()
        }
        report("the same change as objects",
               "\(formatted(seconds(objects) * 1e3)) ms",
               "\(formatted(seconds(objects) * 1e9 / best, digits: 1))x the batch update")
    }
}
