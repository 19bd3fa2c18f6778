// Values instead of objects (Core Data's dictionary result type), and
// changes to many objects without loading them (batch update and delete).
// Run from the package's folder: it reads the conformance data set of the tests.
import Foundation
import Sift
import SiftStore

let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let store = try SQLiteStore(inMemoryWith: dataSet.model)
try store.importDataSet(dataSet)
let context = ObjectContext(store: store)

// snippet.dictionaries
var totals = FetchRequest(entityName: "Employee", predicate: "age > 30",
                          sortDescriptors: [FetchSortDescriptor("payroll", ascending: false)])
totals.propertiesToFetch = ["department.name", ExpressionDescription(name: "payroll", expression: "sum(salary)"),
                            ExpressionDescription(parsing: "@count as staff")]
totals.propertiesToGroupBy = ["department.name"]
totals.havingPredicate = FetchPredicate("staff >= %@", 5)          // by result name
let rows = try context.fetchDictionaries(totals)
print(rows.count)                                                  // 6 — departments with five or more staff over 30
// snippet.end

// snippet.batches
let raise = BatchUpdateRequest(entityName: "Employee", predicate: FetchPredicate("department.name == %@", "Sales"),
                               setting: ["salary": "salary * 1.1"])   // each value from the row as it was
let raised = try context.execute(raise)
print(raised.count)                                                // 5
let gone = try context.execute(BatchDeleteRequest(entityName: "Employee", predicate: "age > 62"))
print(gone.changes.deleted.count)                                  // 2 — those selected, and those cascade rules reached
// snippet.end
