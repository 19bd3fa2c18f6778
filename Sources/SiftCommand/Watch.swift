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
            Prints the objects of --entity (without it, of every entity the predicate fits), in order (--sort, else \
            each entity's first attribute), one a line. Then, as saves change the results, prints one line per change: \
            insert (at its place), delete (from its place), move (from and to), or update (in place), with the object's \
            values. On a SQLite store, other processes' saves are seen within --interval seconds; a store that keeps \
            persistent history says which objects changed, one without it is fetched again.
            """)

    @OptionGroup var location: StoreLocation

    @Option(help: ArgumentHelp("The model of a store Core Data wrote (an .xcdatamodeld bundle: the version that made "
                               + "it); by default the store's own.", valueName: "path"))
    var model: String?

    @Option(help: ArgumentHelp("The entity to watch; without it, every entity the predicate fits.", valueName: "entity"))
    var entity: String?

    @Option(name: .customLong("sort"), help: ArgumentHelp(
        "A sort key path, then :asc or :desc and :ci (repeat for more keys).", valueName: "key"))
    var sort: [String] = []

    @Option(parsing: .unconditional, help: ArgumentHelp("How often, in seconds, to look for other processes' saves (0.01 to 10).", valueName: "seconds"))
    var interval = 0.1

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate (TRUEPREDICATE when omitted).")
    var predicateText: String?

    func validate() throws {
        guard interval.isFinite, interval >= 0.01, interval <= 10 else {
            throw ValidationError("--interval must be between 0.01 and 10 seconds")
        }
    }

    func run() throws {
        let store = try location.open(model: model)
        if let entity { try checkEntity(entity, in: store.model) }
        let sorts = try sort.map { text in
            guard let descriptor = FetchSortDescriptor(parsing: text) else {
                throw CommandFailure(.usage, "--sort takes a key path, then :asc or :desc and :ci (name:desc:ci), not '\(text)'")
            }
            return descriptor
        }
        // The entity given, or every root entity (a fetch of one includes its subentities).
        let entities = entity.flatMap { store.model.entity(named: $0) }.map { [$0] }
            ?? store.model.entities.filter { $0.superentity == nil }
        if let sqlite = store as? SQLiteStore { sqlite.otherProcessesPollingInterval = interval }
        let context = ObjectContext(store: store)
        // Listen before the first fetch: a save committed between that fetch and the first look at the
        // file would otherwise never be announced. (One committed before the fetch and announced after it
        // is merged again, which changes nothing the controllers show.)
        context.automaticallyMergesChangesFromStore = true
        let printer = WatchPrinter()
        let requests = try entities.map { watched in
            var request = FetchRequest(entityName: watched.name, predicate: predicateText ?? "TRUEPREDICATE",
                                       arguments: try predicateArguments.values)
            request.sortDescriptors = sorts
            if sorts.isEmpty, let first = watched.attributes.first(where: { $0.isStored && $0.composite == nil }) {
                request.sortDescriptors = [FetchSortDescriptor(first.name)]
            }
            return request
        }
        // Fetch, print and start telling the printer on the context's queue, in one go: a merge waits its turn,
        // and comes after the list it changes.
        let (controllers, firstFailure) = context.performAndWait { context in
            var controllers: [FetchedResultsController] = []
            var firstFailure: (any Error)?
            for request in requests {
                do {
                    let controller = try FetchedResultsController(fetchRequest: request, context: context)
                    try controller.performFetch()
                    controllers.append(controller)
                } catch {
                    firstFailure = firstFailure ?? error
                }
            }
            // Without --entity, an entity the predicate or the sort does not fit is not watched.
            if firstFailure != nil, entity != nil || controllers.isEmpty { return ([], firstFailure) }
            var total = 0
            for controller in controllers {
                for (place, object) in controller.fetchedObjects.enumerated() { printer.print("\(place)  \(printer.describe(object))") }
                total += controller.fetchedObjects.count
                controller.delegate = printer
            }
            printer.print("watching (\(total) objects)")
            return (controllers, firstFailure)
        }
        if controllers.isEmpty, let firstFailure {
            let sources = (predicateText.map { [SourceText("predicate", given: $0)] } ?? [])
            try diagnosing(sources) { throw firstFailure }
        }
        // From here on the context merges on its queue, and the controllers tell the printer. The store, the
        // context and the controllers must live as long as the watch: the context listens to the store only
        // while it lives, and an optimized build may end a local's life at its last use.
        withExtendedLifetime((store, context, controllers, printer)) {
            while true { Thread.sleep(forTimeInterval: 3600) }
        }
    }
}

/// Prints each change of the watched results as a line, at once.
private final class WatchPrinter: FetchedResultsControllerDelegate {
    /// The attributes printed, by entity.
    private var names: [String: [String]] = [:]

    func print(_ line: String) {
        FileHandle.standardOutput.write(Data((line + "\n").utf8))
    }

    func describe(_ object: ManagedObject) -> String {
        let entity = object.entity
        if names[entity.name] == nil {
            names[entity.name] = entity.attributes.filter { $0.isStored && $0.composite == nil }.map(\.name)
        }
        let values = names[entity.name, default: []].map { name in "\(name)=\(object[name].map(Cell.text) ?? "nil")" }
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
