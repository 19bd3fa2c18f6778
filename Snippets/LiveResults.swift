// A fetched results controller: sections kept current as contexts save,
// with each change reported.
import Foundation
import Sift
import SiftStore

let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let store = try SQLiteStore(inMemoryWith: dataSet.model)
try store.importDataSet(dataSet)

// snippet.main
final class ListView: FetchedResultsControllerDelegate {
    func controller(_ controller: FetchedResultsController, didChange difference: FetchedResultsDifference) {
        for change in difference.sectionChanges { print(change) }
        for change in difference.objectChanges { print(change) }
    }
}

let context = ObjectContext(store: store)
var request = FetchRequest(entityName: "Employee", predicate: "age >= 60")
request.sortDescriptors = [FetchSortDescriptor("age"), FetchSortDescriptor("name")]
let controller = try FetchedResultsController(fetchRequest: request, context: context, sectionNameKeyPath: "age")
try controller.performFetch()
print(controller.sections.map { "\($0.name): \($0.numberOfObjects)" })   // ["60: 1", "61: 1", "62: 1", "63: 2"]

let view = ListView()
controller.delegate = view
let youngest = controller.sections[0].objects[0]
try youngest.setValue(99, forKey: "age")           // to the end, in a section of its own
try context.save()                                  // the delegate prints:
                                                    // delete section 0 '60'
                                                    // insert section 3 '99'
                                                    // move 1/117 from [0, 0] to [3, 0]
// snippet.end
