// The same store on a PostgreSQL server: set SIFT_POSTGRES_URL
// (postgres://user@localhost:5432/postgres) to run it.
import Foundation
import Sift
import SiftPostgres
import SiftStore

guard let url = ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"] else {
    print("set SIFT_POSTGRES_URL to a server to run this example")
    exit(0)
}
let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))

// snippet.main
let store = try PostgresStore(url: url, model: dataSet.model, schemaName: "sift_example", maximumConnections: 2)
defer { try? store.destroy() }                    // drops the example's schema; your own stores keep theirs
try store.importDataSet(dataSet)                  // into the new, empty schema (made by the first open)
let context = ObjectContext(store: store)
let engineers = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
                                               arguments: ["Engineering"]))
print(engineers.count)
let observation = store.addObserver { changes in  // this store's saves, and other processes' too
    print("saved elsewhere: \(changes.updated.count) updated")
}
defer { observation.cancel() }
// snippet.end
