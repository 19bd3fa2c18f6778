// A store served over HTTP, and a context on it from elsewhere: `StoreServer`
// (what `sift serve` runs) on a scratch store, a `RemoteStore` with a disk
// cache, a fetch whose whole predicate runs on the server, a save with
// optimistic locking, and a read from the disk cache once the server is gone,
// and a save kept there until it comes back.
import Foundation
import Sift
import SiftRemote
import SiftServer
import SiftStore

let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-remote-\(UUID().uuidString)")
try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)

// snippet.serve
let model = try DataModel([Entity("Book", attributes: [Attribute("title", .string), Attribute("pages", .integer64)])])
let served = try SQLiteStore(url: folder.appendingPathComponent("books.sqlite"), model: model)
var configuration = ServerConfiguration()                  // 127.0.0.1, read-only, no token: the defaults
configuration.port = 0                                     // a free port
configuration.isWritable = true
let server = try StoreServer(store: served, configuration: configuration)
let url = try await server.start()                         // http://127.0.0.1:PORT, as `sift serve` prints it
// snippet.end

// snippet.client
var options = RemoteStoreConfiguration()
options.cacheURL = folder.appendingPathComponent("cache.sqlite")   // a disk cache: reads go on offline
let store = try RemoteStore(url: url, configuration: options)      // the model is the server's
let context = ObjectContext(store: store)
for (title, pages) in [("Dune", 412), ("Emma", 320)] {
    let book = try context.insert("Book")
    try book.setValue(title, forKey: "title")
    try book.setValue(pages, forKey: "pages")
}
try context.save()                                         // one change set, one transaction on the server
let request = FetchRequest(entityName: "Book", predicate: "pages > %@", arguments: [.int(400)])
let long = try context.fetch(request)
print(long.map { $0["title", as: String.self] ?? "" })     // ["Dune"]
print(try store.plan(request).memory == nil)               // true — the server runs the whole predicate

await server.stop()                                        // the server goes away…
print(try ObjectContext(store: store).fetch(request).count)   // 1 — answered from the disk cache
print(store.backend.status == .online)                     // false
try long[0].setValue(413, forKey: "pages")
try context.save()                                         // kept in the disk cache until the server answers again
print(store.backend.status.waitingSaves)                   // 1
print(try ObjectContext(store: store).count(for: FetchRequest(entityName: "Book", predicate: "pages == 413")))   // 1 — seen by its fetches
// snippet.end

// snippet.refused
var queued = RemoteStoreConfiguration()
queued.cacheURL = folder.appendingPathComponent("cache.sqlite")
queued.offlineSaveRefused = { refused in                   // a save made offline that the server did not apply
    if case .conflicts(let conflicts) = refused.error {    // its context's merge policy was .error
        for conflict in conflicts { print(conflict.contextValues, conflict.storeValues ?? [:]) }
    }
}
// snippet.end
_ = queued
try? FileManager.default.removeItem(at: folder)
