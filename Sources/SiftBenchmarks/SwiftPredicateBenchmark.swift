// Swift predicates benchmark: the small fetches of SmallFetchBenchmark, one
// employee by name and about ten by a range of names, written as `#Predicate`s
// over a view class, next to the same fetches written as format text, in the
// same run; both sides fetch views and read each one's name the same way. A
// `#Predicate` with new captured values each time is converted once per shape
// (its captured values become arguments), so the target is at most 1.2x the
// format-string fetch. The run also times building a `#Predicate` and
// converting it from the shape cache, alone.

import CSQLite
import Foundation
import Sift
import SiftStore

/// An employee of the benchmark store, as a view class.
final class BenchmarkEmployee: ManagedObjectView {
    static var entityName: String { "Employee" }
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
    @Managed("age") var age: Int?
    @Managed("salary") var salary: Double?
}

func swiftPredicateBenchmark() {
    let employees = 200_000
    let store = try! benchmarkStore(employees: employees)
    let context = ObjectContext(store: store)
    // 2 000 names spread over the table, as SmallFetchBenchmark takes them.
    var names: [String] = []
    var db: OpaquePointer?, statement: OpaquePointer?
    sqlite3_open_v2(store.url!.path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
    sqlite3_prepare_v2(db, #"SELECT "ZNAME" FROM "ZEMPLOYEE" WHERE "Z_PK" % 100 = 7 ORDER BY "ZNAME" LIMIT 2000"#, -1,
                       &statement, nil)
    while sqlite3_step(statement) == SQLITE_ROW { names.append(String(cString: sqlite3_column_text(statement, 0))) }
    sqlite3_finalize(statement)
    sqlite3_close_v2(db)
    let lookups = names.count
    report("== Swift predicates: \(lookups) small fetches on \(employees) employees, #Predicate against format text, one core")

    let cases: [(String, (Int) -> Predicate<BenchmarkEmployee>, String, (Int) -> [PredicateValue])] = [
        ("one by name", { i in let name = names[i]; return #Predicate { $0.name == name } },
         "name == %@", { [.string(names[$0])] }),
        ("about ten by a range", { i in
            let low = names[i], high = names[i] + "1"
            return #Predicate { $0.name! >= low && $0.name! < high }
        }, "name >= %@ AND name < %@", { [.string(names[$0]), .string(names[$0] + "1")] }),
        ("age and salary", { i in
            let age = 20 + i % 40, salary = Double(1000 * (i % 90))
            let name = names[i]
            return #Predicate { $0.name == name && ($0.age ?? 0) != age && ($0.salary ?? 0) > salary }
        }, "name == %@ AND TERNARY(age != nil, age, %@) != %@ AND TERNARY(salary != nil, salary, %@) > %@",
         { [.string(names[$0]), .int(0), .int(Int64(20 + $0 % 40)), .double(0), .double(Double(1000 * ($0 % 90)))] }),
    ]
    for (name, predicate, format, arguments) in cases {
        let (text, swift) = Measurement.compare(operations: lookups, rounds: 3, baseline: {
            for i in 0..<lookups {
                let request = FetchRequest(entityName: "Employee", predicate: format, arguments: arguments(i))
                blackHole(try! context.fetch(BenchmarkEmployee.self, request).map { $0.name })
            }
        }, candidate: {
            for i in 0..<lookups {
                blackHole(try! context.fetch(BenchmarkEmployee.self, where: predicate(i)).map { $0.name })
            }
        })
        let build = Measurement.run("build", operations: lookups, rounds: 3) {
            for i in 0..<lookups { blackHole(predicate(i)) }
        }
        let built = (0..<lookups).map(predicate)
        let convert = Measurement.run("convert", operations: lookups, rounds: 3) {
            for i in 0..<lookups { blackHole(try! FetchPredicate(built[i])) }
        }
        if case .format(let converted, _) = try! FetchPredicate(built[0]) { report("  (converted: \(converted))") }
        report(name.padding(toLength: 22, withPad: " ", startingAt: 0),
               "format text \(formatted(text.nanosecondsPerOperation / 1000, digits: 1)) µs",
               "#Predicate \(formatted(swift.nanosecondsPerOperation / 1000, digits: 1)) µs",
               "= \(formatted(swift.nanosecondsPerOperation / text.nanosecondsPerOperation, digits: 2))x",
               "(target 1.2x; of which building the #Predicate \(formatted(build.nanosecondsPerOperation / 1000, digits: 2)) µs,",
               "converting it \(formatted(convert.nanosecondsPerOperation / 1000, digits: 2)) µs)")
    }
}

/// Converting one `#Predicate` again and again, alone: for profiling the shape cache
/// (`perf record sift-benchmarks swift-convert`).
func swiftPredicateConversionProfile() {
    let names = (0..<1000).map { "Employee \($0)" }
    let predicates = names.map { name in #Predicate<BenchmarkEmployee> { $0.name == name } }
    let convert = Measurement.run("convert", operations: 100 * predicates.count, rounds: 3) {
        for _ in 0..<100 { for predicate in predicates { blackHole(try! FetchPredicate(predicate)) } }
    }
    report("converting `$0.name == name` from the shape cache: \(formatted(convert.nanosecondsPerOperation)) ns")
}
