// Small-fetch benchmark: one employee by an indexed attribute (a different
// name each time) and about ten by a range, fetched again and again as an
// application looks records up, next to a prepared sqlite3 statement bound
// and stepped by hand into records, in the same run. Each request shape is
// compiled once and cached by the store (the name, or the bounds, are
// parameters of it); the run also times compiling the request without the
// cache (parse, bind, optimize and lower its predicate: what every fetch
// paid before the cache) and taking it from the cache.

import CSQLite
import Foundation
import Sift
import SiftStore

func smallFetchBenchmark() {
    let employees = 200_000
    let store = try! benchmarkStore(employees: employees)
    var db: OpaquePointer?
    sqlite3_open_v2(store.url!.path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
    defer { sqlite3_close_v2(db) }

    // 2 000 names, spread over the table, in name order.
    var names: [String] = []
    var statement: OpaquePointer?
    sqlite3_prepare_v2(db, #"SELECT "ZNAME" FROM "ZEMPLOYEE" WHERE "Z_PK" % 100 = 7 ORDER BY "ZNAME" LIMIT 2000"#, -1,
                       &statement, nil)
    while sqlite3_step(statement) == SQLITE_ROW { names.append(String(cString: sqlite3_column_text(statement, 0))) }
    sqlite3_finalize(statement)
    let lookups = names.count
    let attributes = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
    let context = ObjectContext(store: store)
    report("== Small fetches: \(lookups) lookups on \(employees) employees, one core")

    /// A prepared statement bound, stepped and read into records for each
    /// value.
    func prepared(_ sql: String, _ bind: @escaping (OpaquePointer, Int) -> Void) -> () -> Void {
        {
            var statement: OpaquePointer?
            sqlite3_prepare_v2(db, EmployeeRecord.columns + sql, -1, &statement, nil)
            defer { sqlite3_finalize(statement) }
            for i in 0..<lookups {
                sqlite3_reset(statement)
                bind(statement!, i)
                var rows: [EmployeeRecord] = []
                while sqlite3_step(statement) == SQLITE_ROW { rows.append(EmployeeRecord(statement!)) }
                blackHole(rows)
            }
        }
    }
    /// Sift's fetch for each value, every attribute of each object read.
    func fetched(_ predicate: String, _ arguments: @escaping (Int) -> [PredicateValue]) -> () -> Void {
        {
            for i in 0..<lookups {
                let objects = try! context.fetch(FetchRequest(entityName: "Employee", predicate: predicate,
                                                              arguments: arguments(i)))
                for object in objects { for name in attributes { blackHole(object[name]) } }
            }
        }
    }
    let text: (OpaquePointer, Int32, String) -> Void = { sqlite3_bind_text($0, $1, $2, -1, SQLITE_TRANSIENT) }
    let cases: [(String, String, (OpaquePointer, Int) -> Void, String, (Int) -> [PredicateValue])] = [
        ("one by name", #" WHERE "ZNAME" = ?1"#, { text($0, 1, names[$1]) },
         "name == %@", { [.string(names[$0])] }),
        ("about ten by a range", #" WHERE "ZNAME" >= ?1 AND "ZNAME" < ?2 ORDER BY "Z_PK""#,
         { text($0, 1, names[$1]); text($0, 2, names[$1] + "1") },
         "name >= %@ AND name < %@", { [.string(names[$0]), .string(names[$0] + "1")] }),
    ]
    let compiler = PredicateCompiler(model: store.model)
    let lowering = SQLLowering(schema: SQLSchema(model: store.model))
    for (name, sql, bind, predicate, arguments) in cases {
        let (raw, sift) = Measurement.compare(operations: lookups, rounds: 5, baseline: prepared(sql, bind),
                                              candidate: fetched(predicate, arguments))
        let compile = Measurement.run("compile", operations: lookups, rounds: 5) {
            for i in 0..<lookups {
                let bound = try! compiler.bind(predicate, arguments: arguments(i), entity: "Employee")
                blackHole(try? lowering.select("Employee", where: bound))
            }
        }
        let cached = Measurement.run("cached", operations: lookups, rounds: 5) {
            for i in 0..<lookups {
                blackHole(try! store.compile(FetchRequest(entityName: "Employee", predicate: predicate, arguments: arguments(i))))
            }
        }
        report(name.padding(toLength: 22, withPad: " ", startingAt: 0),
               "prepared statement \(formatted(raw.nanosecondsPerOperation / 1000, digits: 1)) µs",
               "Sift \(formatted(sift.nanosecondsPerOperation / 1000, digits: 1)) µs",
               "= \(formatted(sift.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x",
               "(target ≤ 2x; compiling without the cache \(formatted(compile.nanosecondsPerOperation / 1000, digits: 1)) µs, "
                   + "from the cache \(formatted(cached.nanosecondsPerOperation / 1000, digits: 1)) µs)")
    }
}
