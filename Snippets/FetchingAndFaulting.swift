// Faults, uniquing, batch faulting, prefetching and the row cache, with
// the statements each costs. Run from the package's folder: it reads the
// conformance data set of the tests.
import Foundation
import Sift
import SiftStore

let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let store = try SQLiteStore(inMemoryWith: dataSet.model)
try store.importDataSet(dataSet)

// snippet.main
let context = ObjectContext(store: store)
var before = store.statementCount
let employees = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 30"))
print("fetch: \(store.statementCount - before) statement")                 // fetch: 1 statement — the rows come with it
print(employees[0].isFault)                                               // true — values stay in the row cache until read
_ = try employees[0].value(forKey: "name")                                // fires from the row cache: no SQL

// One object per ID per context: every path to a row gives the same instance.
let first = employees[0]
let again = try context.fetch(FetchRequest(entityName: "Employee", predicate: "SELF == %@",
                                           arguments: [.object(first.reference)]))[0]
print(first === again)                                                    // true

// Relationships fault one by one unless prefetched: one statement per key path.
var request = FetchRequest(entityName: "Employee", predicate: "age > 30")
request.relationshipKeyPathsForPrefetching = ["department"]
let fresh = ObjectContext(store: store)
before = store.statementCount
let prefetched = try fresh.fetch(request)
for employee in prefetched { _ = try employee.object(forKey: "department")?.value(forKey: "name") }
print("fetch, prefetch, read every department: \(store.statementCount - before) statements")   // fetch, prefetch, read every department: 2 statements

// A batched fetch reads only IDs, then fires each batch of faults with one statement.
var batched = FetchRequest(entityName: "Employee")
batched.fetchBatchSize = 20
let lazy = ObjectContext(store: store)
let all = try lazy.fetch(batched)
print(all.count, all.filter(\.isFault).count)                            // 60 60 — every object, all faults
// snippet.end
