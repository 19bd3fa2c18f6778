// Swift's own predicates: a `#Predicate` fetched from a store, as format text is.
import Foundation
import Sift
import SiftStore

// snippet.hide
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("sift-snippet-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: directory) }
let url = directory.appendingPathComponent("company.sqlite")
let dataSet = try DataSet(json: Data("""
    {"model": {"entities": [
       {"name": "Department", "attributes": [{"name": "name", "type": "string"}],
        "relationships": [{"name": "employees", "destination": "Employee", "toMany": true, "inverse": "department"}]},
       {"name": "Employee", "attributes": [{"name": "name", "type": "string"}, {"name": "age", "type": "integer64"},
                                           {"name": "isManager", "type": "boolean"}],
        "relationships": [{"name": "department", "destination": "Department", "optional": true, "inverse": "employees"}]}]},
     "objects": {"Department": [{"id": 1, "name": "Sales"}, {"id": 2, "name": "Legal"}],
                 "Employee": [{"id": 1, "name": "Ann", "age": 41, "isManager": true, "department": 1},
                              {"id": 2, "name": "Bob", "age": 29, "isManager": false, "department": 1},
                              {"id": 3, "name": "Cy", "age": 52, "isManager": false, "department": 2}]}}
    """.utf8))
try SQLiteStore(url: url, model: dataSet.model).importDataSet(dataSet)
// snippet.show

// snippet.views
final class Employee: ManagedObjectView {
    static let entityName = "Employee"
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
    @Managed("age") var age: Int?
    @Managed("isManager") var isManager: Bool?
    var department: Department? { ((try? object.object(forKey: "department")) ?? nil).map(Department.init) }
}

final class Department: ManagedObjectView {
    static let entityName = "Department"
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
    var employees: [Employee] { ((try? object.objects(forKey: "employees")) ?? []).map(Employee.init) }
}
// snippet.end

// snippet.fetch
let context = ObjectContext(store: try SQLiteStore(url: url))      // the model is read from the store
let limit = 40
let older = try context.fetch(Employee.self, where: #Predicate { ($0.age ?? 0) > limit },
                              sortBy: [SortDescriptor(\Employee.name)])
print(older.map { $0.name ?? "" })                                 // ["Ann", "Cy"]
let sales = try context.count(of: Employee.self, where: #Predicate { $0.department?.name == "Sales" })
print(sales)                                                       // 2
let teams = try context.fetch(Department.self, where: #Predicate { $0.employees.contains { $0.isManager == true } })
print(teams.map { $0.name ?? "" })                                 // ["Sales"]
// snippet.end

// snippet.text
let predicate = #Predicate<Employee> { ($0.age ?? 0) > limit && ($0.name?.starts(with: "A") ?? false) }
let request = try FetchRequest(Employee.self, where: predicate)
if case .format(let text, let arguments)? = request.predicate {
    print(text)      // (TERNARY(age != nil, age, %@) > %@ AND (name != nil AND (%@ == '' OR name BEGINSWITH %@)))
    print(arguments) // [0, 40, "A", "A"]
}
// snippet.end

// snippet.refused
do {
    let bonus = ["Ann": 3]
    _ = try context.fetch(Employee.self, where: #Predicate { bonus[$0.name ?? ""] != nil })
} catch {
    print(error)     // …DictionaryKeySubscript<…> has no Sift form: a model's objects hold no dictionaries…
}
// snippet.end

// snippet.batch
let raise = try BatchUpdateRequest(Employee.self, where: #Predicate { $0.isManager == true }, setting: ["age": "age + 1"])
print(try context.execute(raise).count)                       // 1
let controller = try FetchedResultsController(Employee.self, sortBy: [SortDescriptor(\Employee.age, order: .reverse)],
                                              context: context)
try controller.performFetch()
print(controller.fetchedObjects.map { $0["name", as: String.self] ?? "" })   // ["Cy", "Ann", "Bob"]
// snippet.end
