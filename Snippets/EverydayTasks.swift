// Everyday tasks with a store of one's own: deleting an object, changing a
// model defined in code and migrating its store, and showing an error about a
// predicate under its line.
import Foundation
import Sift
import SiftStore

// snippet.hide
let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-everyday-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
defer { try? FileManager.default.removeItem(at: folder) }
// snippet.show

// snippet.delete
let version1 = try DataModel([
    Entity("Note", attributes: [Attribute("text", .string), Attribute("pinned", .boolean)]),
])
let url = folder.appendingPathComponent("notes.sqlite")
do {
    let context = ObjectContext(store: try SQLiteStore(url: url, model: version1))
    for text in ["milk", "bread", "call Ann"] {
        let note = try context.insert("Note")
        try note.setValue(text, forKey: "text")
        try note.setValue(text == "call Ann", forKey: "pinned")
    }
    try context.save()

    // Deleting an object: delete it in its context, then save (its relationships' delete rules apply).
    let bread = try context.fetch(FetchRequest(entityName: "Note", predicate: "text == %@", arguments: ["bread"]))
    for note in bread { try context.delete(note) }
    try context.save()
    print(try context.count(for: FetchRequest(entityName: "Note")))   // 2

    // Many at once, in the store, without loading them: a batch delete.
    let done = try context.execute(BatchDeleteRequest(entityName: "Note", predicate: "pinned == NO"))
    print(done.count)                                                  // 1
}   // the store's file is closed with its last context
// snippet.end

// snippet.migrate
// The model in code changes: a new optional attribute. The store keeps the model it was made with, so
// a migration to the new model is inferred from the two, then run (a new file renamed over the store:
// run it while nothing has the store open).
let version2 = try DataModel([
    Entity("Note", attributes: [Attribute("text", .string), Attribute("pinned", .boolean),
                                Attribute("due", .date, optional: true)]),
])
let migration = try StoreMigration(storeAt: url, to: version2)
if migration.isNeeded {
    print(migration.mapping.summary.joined(separator: "\n"))      // …due…
    let report = try migration.run()
    print(report.objects)                                          // ["Note": 1]
}
let migrated = ObjectContext(store: try SQLiteStore(url: url, model: version2))
print(try migrated.fetch(FetchRequest(entityName: "Note")).map { $0["due"] ?? .null })   // [nil]
// snippet.end

// snippet.errors
// A store's error about a predicate is shown under the predicate's line, as the parser's errors are.
let typo = "txt == 'milk'"
do {
        _ = try migrated.fetch(FetchRequest(entityName: "Note", predicate: typo))
    } catch {
        print(error.rendered(in: typo))                // prints:
                                                       // error: 'Note' has no attribute or relationship named 'txt'
                                                       //  --> predicate:1:1
                                                       // 1 | txt == 'milk'
                                                       //   | ^^^
                                                       //   = note: did you mean 'text'?
    }
    // snippet.end
