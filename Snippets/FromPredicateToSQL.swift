// What a fetch becomes: the bound, optimized predicate, the split between
// SQL and memory, the SQL text with its bound parameters, and SQLite's plan.
import Foundation
import Sift
import SiftStore

let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let store = try SQLiteStore(inMemoryWith: dataSet.model)
try store.importDataSet(dataSet)

// snippet.main
// `median` has no SQL form: that term stays for memory, the rest runs in SQLite.
let request = FetchRequest(entityName: "Employee",
                           predicate: "department.name == %@ AND age > 30 AND median(reports.age) > 30",
                           arguments: ["Engineering"], sortDescriptors: [FetchSortDescriptor("name")])
let plan = try store.plan(request)
print(plan)                                  // sql: — the SQL part's tree, then the memory part's, and why
let query = plan.query(for: request, columns: .rows)   // the statement for the SQL part
print(query.sql)                             // SELECT … FROM "ZEMPLOYEE" AS t0 LEFT JOIN "ZDEPARTMENT" AS t1 … WHERE …
print(query.bindings)                        // [30, "Engineering"] — the constants, never in the text
for line in try store.queryPlan(query) { print(line) }   // SCAN t0 — SQLite's EXPLAIN QUERY PLAN, a line per step
// snippet.end
