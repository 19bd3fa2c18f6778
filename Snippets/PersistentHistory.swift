// Persistent history: a store that keeps it records each save as a
// transaction with its changes and author; a reader follows it by token,
// and deletes what it has read.
import Foundation
import Sift
import SiftStore

// snippet.hide
let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-history-\(UUID().uuidString).sqlite")
try SQLiteStore(url: url, model: dataSet.model).importDataSet(dataSet)
// snippet.show

// snippet.main
let store = try SQLiteStore(url: url, historyTracking: .on)       // adds history to a store without it
let read = try store.currentPersistentHistoryToken()             // where a reader stopped (nil: at the start)
let context = ObjectContext(store: store)
context.transactionAuthor = "importer"
let tag = try context.insert("Tag")
try tag.setValue("mentor", forKey: "name")
try context.save()                                               // one transaction: its changes, its author
for transaction in try store.persistentHistory(after: read) {
    print(transaction.transactionNumber, transaction.author ?? "", transaction.changes.count, "changes")   // 1 importer 1 changes
}
if let last = try store.currentPersistentHistoryToken() { try store.deleteHistory(before: last) }
// snippet.end

// snippet.hide
for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) }
