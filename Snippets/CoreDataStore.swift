// An app's Core Data store on Linux: opened with its model bundle (migrated
// to the bundle's current version first when it is older), queried, and its
// persistent history read when it keeps one.
//
//     swift run CoreDataStore App.sqlite Model.xcdatamodeld
//
// Work on a copy: opening a store in WAL mode checkpoints its log, and a
// migration rewrites the file.
import Foundation
import Sift
import SiftStore

let arguments = CommandLine.arguments.dropFirst()
guard arguments.count == 2, let storePath = arguments.first, let bundlePath = arguments.last else {
    print("usage: CoreDataStore STORE.sqlite MODEL.xcdatamodeld")
    exit(0)
}
let storeURL = URL(fileURLWithPath: storePath)
let bundleURL = URL(fileURLWithPath: bundlePath)

// snippet.main
let bundle = try ModelBundle(contentsOf: bundleURL)
print("versions:", bundle.versionNames, "current:", bundle.currentVersionName)

// Look before anything is written: which version the store is in, and what would change.
let migration = try StoreMigration(storeAt: storeURL, bundle: bundle)
print("store version:", migration.sourceVersion)
if migration.isNeeded { print(migration.mapping.summary.joined(separator: "\n")) }

// Open with the current version; an older store is migrated first, safely (a new file, then a rename).
let store = try SQLiteStore(url: storeURL, bundle: bundle)
let context = ObjectContext(store: store)
for entity in store.model.entities where entity.superentity == nil {
    print(entity.name, try context.count(for: FetchRequest(entityName: entity.name)))
}
// snippet.end

// snippet.history
if store.tracksPersistentHistory {
    for transaction in try store.persistentHistory() {
        print(transaction.transactionNumber, transaction.timestamp, transaction.changes.count, "changes")
    }
}
// snippet.end
