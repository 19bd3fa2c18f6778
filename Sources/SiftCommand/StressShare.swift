// `sift stress-share`: one of several processes saving to one company store
// at once, for the tests of other processes' saves (hidden). For a while it
// inserts tags under its own merge policy and adds 1 to the first
// department's budget (read, add, save; again on a conflict), with a
// context that merges what the store announces. Then it waits for the
// others (a file each beside the store) and prints, as one JSON line, what
// it did and whether its merged view equals a fresh fetch.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct StressShare: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stress-share",
        abstract: "Save to a company store shared with other processes, then compare the merged view with a fresh fetch.",
        shouldDisplay: false
    )

    @Option(help: "The store file.")
    var store: String

    @Option(help: "This process's name.")
    var name: String

    @Option(help: "How many processes share the store.")
    var processes = 2

    @Option(help: "How long to save, in seconds.")
    var seconds = 5.0

    @Option(help: "The merge policy of the context that inserts: error, storeTrump, objectTrump, overwrite or rollback.")
    var policy = "error"

    func run() throws {
        let sqlite = try openStore(store)
        sqlite.otherProcessesPollingInterval = 0.05
        let context = ObjectContext(store: sqlite)
        context.mergePolicy = switch policy {
        case "storeTrump": .storeTrump
        case "objectTrump": .objectTrump
        case "overwrite": .overwrite
        case "rollback": .rollback
        default: .error
        }
        context.automaticallyMergesChangesFromStore = true
        let (tags, department) = try context.performAndWait { context -> (FetchedResultsController, ObjectID) in
            let tags = try FetchedResultsController(fetchRequest: FetchRequest(entityName: "Tag", sortDescriptors: [FetchSortDescriptor("name")]),
                                                    context: context)
            try tags.performFetch()
            let department = try context.fetch(FetchRequest(entityName: "Department", sortDescriptors: [FetchSortDescriptor("name")]))[0]
            return (tags, department.objectID)
        }
        // The increments: a context of their own that refuses stale saves, so that none is lost.
        let counter = ObjectContext(store: sqlite)
        var increments = 0, inserted = 0, conflicts = 0
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let tag = "\(name)-\(inserted)"
            try context.performAndWait { context in
                try context.insert("Tag").setValue(.string(tag), forKey: "name")
                try context.save()
            }
            inserted += 1
            while true {
                let budget = counter.object(for: department)
                counter.refresh(budget)
                let value = (try budget.value(forKey: "budget")).doubleValue ?? 0
                try budget.setValue(.double(value + 1), forKey: "budget")
                do {
                    try counter.save()
                    increments += 1
                    break
                } catch {
                    guard case .conflicts = error else { throw error }
                    conflicts += 1
                    counter.rollback()
                }
            }
        }
        // Wait for the others, then for the last merges.
        FileManager.default.createFile(atPath: store + ".done-" + name, contents: nil)
        while (try? FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: store).deletingLastPathComponent().path))?
            .filter({ $0.hasPrefix(URL(fileURLWithPath: store).lastPathComponent + ".done-") }).count ?? 0 < processes {
            Thread.sleep(forTimeInterval: 0.05)
        }
        Thread.sleep(forTimeInterval: 1)
        let (seen, seenBudget) = context.performAndWait { context -> (Set<ObjectID>, Double) in
            (Set(tags.fetchedObjects.map(\.objectID)), context.object(for: department)["budget"]?.doubleValue ?? -1)
        }
        let fresh = ObjectContext(store: try openStore(store))
        let freshTags = Set(try fresh.fetchObjectIDs(FetchRequest(entityName: "Tag")))
        let freshBudget = fresh.object(for: department)["budget"]?.doubleValue ?? -2
        let report: PredicateValue = .dictionary([
            "name": .string(name), "increments": .int(Int64(increments)), "inserted": .int(Int64(inserted)),
            "conflicts": .int(Int64(conflicts)), "seenTags": .int(Int64(seen.count)), "freshTags": .int(Int64(freshTags.count)),
            "sameTags": .bool(seen == freshTags), "seenBudget": .double(seenBudget), "freshBudget": .double(freshBudget),
        ])
        FileHandle.standardOutput.write(Data((JSONText.compact(report) + "\n").utf8))
    }
}
