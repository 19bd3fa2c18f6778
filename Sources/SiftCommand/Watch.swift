// `sift watch`: the objects a predicate selects, then one line per change
// as saves (this process's or others') move objects in, out, around, or
// change them, until interrupted. A fetched results controller over a
// context that merges what the store announces; on a SQLite store, other
// processes' saves are found by polling the file.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Watch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects a predicate selects, then a line for each change other processes save, until interrupted.",
        discussion: """
            Prints the objects, in order (--sort, else the entity's first attribute), one a line. Then, as saves change \
            the results, prints one line per change: insert (at its place), delete (from its place), move (from and to), \
            or update (in place), with the object's values. On a SQLite store, other processes' saves are seen within \
            --interval seconds; a store that keeps persistent history says which objects changed, one without it is \
            fetched again.
            """)

    @OptionGroup var options: FetchOptions

    @Option(help: ArgumentHelp("How often, in seconds, to look for other processes' saves (0.01 to 10).", valueName: "seconds"))
    var interval = 0.1

    func validate() throws {
        guard interval.isFinite, interval >= 0.01, interval <= 10 else {
            throw ValidationError("--interval must be between 0.01 and 10 seconds")
        }
    }

    func run() throws {
        let store = try options.open()
        var request = try options.request(in: store.model)
        guard let entity = store.model.entity(named: request.entityName) else {
            throw CommandFailure(.invalidData, "no entity '\(request.entityName)' in the model")
        }
        if request.sortDescriptors.isEmpty, let first = entity.attributes.first(where: { $0.isStored && $0.composite == nil }) {
            request.sortDescriptors = [SortDescriptor(first.name)]
        }
        if let sqlite = store as? SQLiteStore { sqlite.otherProcessesPollingInterval = interval }
        let context = ObjectContext(store: store)
        let printer = WatchPrinter(names: entity.attributes.filter { $0.isStored && $0.composite == nil }.map(\.name))
        let controller = try diagnosing(options.sources) {
            try context.performAndWait { context throws(StoreError) -> FetchedResultsController in
                let controller = try FetchedResultsController(fetchRequest: request, context: context)
                try controller.performFetch()
                return controller
            }
        }
        context.performAndWait { _ in
            for (place, object) in controller.fetchedObjects.enumerated() { printer.print("\(place)  \(printer.describe(object))") }
            printer.print("watching (\(controller.fetchedObjects.count) objects)")
            controller.delegate = printer
        }
        // From here on the context merges on its queue, and the controller tells the printer.
        context.automaticallyMergesChangesFromStore = true
        while true { Thread.sleep(forTimeInterval: 3600) }
    }
}

/// Prints each change of the watched results as a line, at once.
private final class WatchPrinter: FetchedResultsControllerDelegate {
    let names: [String]

    init(names: [String]) { self.names = names }

    func print(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func describe(_ object: ManagedObject) -> String {
        let values = names.map { name in "\(name)=\(object[name].map(Cell.text) ?? "nil")" }
        return "\(object.entity.name) \(object.objectID.primaryKey)  " + values.joined(separator: " ")
    }

    func controller(_ controller: FetchedResultsController, didChange difference: FetchedResultsDifference) {
        for change in difference.objectChanges {
            let object = controller.context.object(for: change.objectID)
            let place = { (path: FetchedIndexPath?) in path.map { String($0.item) } ?? "?" }
            switch change.kind {
            case .insert: print("insert \(describe(object)) at \(place(change.newIndexPath))")
            case .delete: print("delete \(object.entity.name) \(change.objectID.primaryKey) from \(place(change.indexPath))")
            case .move: print("move \(describe(object)) from \(place(change.indexPath)) to \(place(change.newIndexPath))")
            case .update: print("update \(describe(object)) at \(place(change.newIndexPath ?? change.indexPath))")
            }
        }
    }

    func controller(_ controller: FetchedResultsController, didFailWith error: StoreError) {
        FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    }
}
