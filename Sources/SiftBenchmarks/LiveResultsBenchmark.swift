// Live results on the demo store (200 000 employees): a fetched results
// controller over about 100 000 of them, brought up to date after another
// context saves one changed employee and the change is merged, next to
// fetching the same request again. The merge is also timed in a context
// with no controller, so the controller's own share shows.

import Foundation
import Sift
import SiftDemo
import SiftStore
import Synchronization

func liveResultsBenchmark() {
    report("== Live results: a fetched results controller over about half of 200 000 employees, one core")
    // A copy: the edits stay out of the shared benchmark store.
    let source = try! benchmarkStore(employees: 200_000)
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-live-\(UUID().uuidString).sqlite")
    try! FileManager.default.copyItem(at: source.url!, to: url)
    defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
    let store = try! SQLiteStore(url: url, model: CompanyGenerator.model)
    let ages = try! store.withConnection { try $0.query(#"SELECT "ZAGE" FROM "ZEMPLOYEE" ORDER BY "ZAGE" LIMIT 1 OFFSET 100000"#) }
    guard case .integer(let median)? = ages.first?.first else { fatalError("no median age") }
    var request = FetchRequest(entityName: "Employee", predicate: "age >= %@", arguments: [.int(median)])
    request.sortDescriptors = [SortDescriptor("salary", ascending: false), SortDescriptor("name")]

    let watcher = ObjectContext(store: store)
    let controller = try! FetchedResultsController(fetchRequest: request, context: watcher)
    let clock = ContinuousClock()
    let fetchTime = clock.measure { try! controller.performFetch() }
    let results = controller.fetchedObjectIDs
    let bystander = ObjectContext(store: store)
    _ = try! bystander.fetch(request)
    let editor = ObjectContext(store: store)
    let heard = Mutex<[StoreChanges]>([])
    let observation = store.addObserver { changes in heard.withLock { $0.append(changes) } }
    defer { observation.cancel() }

    var generator = SystemRandomNumberGenerator()
    var best = (update: Double.infinity, merge: Double.infinity, refetch: Double.infinity)
    for _ in 0..<15 {
        // Another context moves one of the results to a new place in the sort.
        let employee = editor.object(for: results.randomElement(using: &generator)!)
        try! employee.setValue(.double(Double(Int.random(in: 20_000...200_000, using: &generator))), forKey: "salary")
        try! editor.save()
        let changes = heard.withLock { list in defer { list.removeAll() }; return list }
        let update = clock.measure { for change in changes { try! watcher.mergeChanges(from: change) } }
        let merge = clock.measure { for change in changes { try! bystander.mergeChanges(from: change) } }
        let refetch = clock.measure { blackHole(try! watcher.fetch(request)) }
        best = (min(best.update, seconds(update)), min(best.merge, seconds(merge)), min(best.refetch, seconds(refetch)))
    }
    let fresh = try! watcher.fetch(request).map(\.objectID)
    guard fresh == controller.fetchedObjectIDs, controller.refetchCount == 0 else { fatalError("the controller's results are not a fresh fetch's") }
    report("first fetch of \(results.count) results, sorted and keyed", "\(formatted(seconds(fetchTime) * 1e3)) ms")
    report("one changed employee: merge and controller update", "\(formatted(best.update * 1e6)) µs",
           "(the merge alone \(formatted(best.merge * 1e6)) µs)")
    report("the same request fetched again", "\(formatted(best.refetch * 1e3)) ms",
           "update \(formatted(best.update / best.refetch * 100, digits: 3)) % of a refetch (target ≤ 1 %)")
}
