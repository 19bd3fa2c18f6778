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

let context = ObjectContext(store: store)
let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
                                           arguments: ["Sales"], sortDescriptors: [SortDescriptor("age")]))
print(try sales.map { try $0.value(forKey: "name") })       // ["Bob", "Ann"] as predicate values

let hire = try context.insert("Employee")
try hire.setValue(.string("Dee"), forKey: "name")
try hire.setValue(.int(35), forKey: "age")
try hire.setObject(sales[0].object(forKey: "department"), forKey: "department")
try context.save()
print(try context.count(for: FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'")))   // 3
// snippet.end
