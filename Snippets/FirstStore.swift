// A model, a store, a context: fetching and saving objects.
import Foundation
import Sift
import SiftStore

// snippet.main
let json = """
    {"model": {"entities": [
       {"name": "Department", "attributes": [{"name": "name", "type": "string"}],
        "relationships": [{"name": "employees", "destination": "Employee", "toMany": true, "inverse": "department"}]},
       {"name": "Employee", "attributes": [{"name": "name", "type": "string"}, {"name": "age", "type": "integer64"}],
        "relationships": [{"name": "department", "destination": "Department", "optional": true, "inverse": "employees"}]}]},
     "objects": {"Department": [{"id": 1, "name": "Sales"}, {"id": 2, "name": "Legal"}],
                 "Employee": [{"id": 1, "name": "Ann", "age": 41, "department": 1},
                              {"id": 2, "name": "Bob", "age": 29, "department": 1},
                              {"id": 3, "name": "Cy", "age": 52, "department": 2}]}}
    """
let dataSet = try DataSet(json: Data(json.utf8))
let store = try SQLiteStore(inMemoryWith: dataSet.model)     // or SQLiteStore(url:model:) for a file
try store.importDataSet(dataSet)

let context = ObjectContext(store: store)               // one context per actor or queue
let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
                                           arguments: ["Sales"], sortDescriptors: [FetchSortDescriptor("age")]))
print(try sales.map { try $0.value(forKey: "name", as: String.self) ?? "" })   // ["Bob", "Ann"]
print(sales[0]["age", as: Int.self] ?? 0)                  // 29

let hire = try context.insert("Employee")                  // a temporary ID until saved
try hire.setValue("Dee", forKey: "name")
try hire.setValue(35, forKey: "age")
try hire.setObject(sales[0].object(forKey: "department"), forKey: "department")   // the inverse kept in step
context.mergePolicy = .storeTrump                          // .error (the default), .objectTrump, .overwrite, .rollback
try context.save()                                         // one transaction, optimistic locking per row
print(try context.count(for: FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'")))   // 3

let observation = store.addObserver { changes in           // what each save inserted, updated, deleted
    print(changes.updated.count, "updated")                // 1 updated — hand `changes` to another context: other.mergeChanges(from: changes)
}
try sales[1].setValue(42, forKey: "age")
try context.save()
observation.cancel()
// snippet.end
