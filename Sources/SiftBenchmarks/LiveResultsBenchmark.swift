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
    request.sortDescriptors = [FetchSortDescriptor("salary", ascending: false), FetchSortDescriptor("name")]

    let watcher = ObjectContext(store: store)
    let controller = try! FetchedResultsController(fetchRequest: request, context: watcher)
    let clock = ContinuousClock()
    let fetchTime = clock.measure { try! controller.performFetch() }
    let results = controller.fetchedObjectIDs
    let bystander = ObjectContext(store: store)
    _ = try! bystander.fetch(request)
    let editor = ObjectContext(store: store)
    let heard = LockedState<[StoreChanges]>([])
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

/// Migrating the demo store (200 000 employees) to a next version of its
/// model — an attribute renamed, one added with a default, one removed —
/// next to SQLite rewriting the same file with `VACUUM INTO`, the least a
/// migration that writes a new file can cost.
func migrationBenchmark() {
    report("== Migration: the demo store, 200 000 employees, to a next version of its model, one core")
    let source = try! benchmarkStore(employees: 200_000)
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-migrate-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    var entities = CompanyGenerator.model.entities.map { entity -> Entity in
        guard entity.name == "Employee" else {
            return Entity(entity.name, attributes: entity.attributes, relationships: entity.relationships)
        }
        var attributes = entity.attributes.filter { $0.name != "rating" }
        if let index = attributes.firstIndex(where: { $0.name == "nickname" }) {
            attributes[index].name = "alias"
            attributes[index].renamingIdentifier = "nickname"
        }
        attributes.append(Attribute("level", .integer32, defaultValue: .int(1)))
        return Entity(entity.name, attributes: attributes, relationships: entity.relationships)
    }
    entities.sort { $0.name < $1.name }
    let next = try! DataModel(entities)
    var best = (vacuum: Double.infinity, migration: Double.infinity)
    let clock = ContinuousClock()
    for round in 0..<3 {
        let copy = folder.appendingPathComponent("demo-\(round).sqlite")
        try! FileManager.default.copyItem(at: source.url!, to: copy)
        let vacuumed = folder.appendingPathComponent("vacuum-\(round).sqlite")
        let vacuum = clock.measure {
            try! source.withConnection { try $0.execute("VACUUM INTO '\(vacuumed.path)'") }
        }
        var objects = 0
        let migration = clock.measure {
            let report = try! StoreMigration(storeAt: copy, to: next).run()
            objects = report.objects.values.reduce(0, +)
        }
        best = (min(best.vacuum, seconds(vacuum)), min(best.migration, seconds(migration)))
        if round == 2 { report("objects migrated", "\(objects)") }
    }
    // The largest Core Data fixtures a model bundle describes, when ../shared is beside the checkout.
    let fixtures = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).deletingLastPathComponent()
        .appendingPathComponent("shared/coredata-stores")
    for (name, store, bundle, version) in [("coredataplus-samplemodel-v2", "SampleModel_V2.sqlite", "SampleModel.xcdatamodeld", "SampleModel3"),
                                           ("bsk-bookmarks-v5", "Bookmarks_V5.sqlite", "BookmarksModel.xcdatamodeld", nil)] {
        let folder = fixtures.appendingPathComponent(name)
        guard FileManager.default.fileExists(atPath: folder.path) else { continue }
        var fastest = Double.infinity
        var objects = 0
        for round in 0..<5 {
            let copy = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-fixture-\(round)-\(UUID().uuidString)")
            try! FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: copy) }
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: folder.appendingPathComponent(store + suffix).path) {
                try! FileManager.default.copyItem(at: folder.appendingPathComponent(store + suffix), to: copy.appendingPathComponent(store + suffix))
            }
            let target = copy.appendingPathComponent(store)
            let modelBundle = try! ModelBundle(contentsOf: folder.appendingPathComponent(bundle))
            let time = clock.measure {
                objects = try! StoreMigration(storeAt: target, bundle: modelBundle, version: version).run().objects.values.reduce(0, +)
            }
            fastest = min(fastest, seconds(time))
        }
        report("fixture \(name) (\(objects) objects) to \(version ?? "its newest version")", "\(formatted(fastest * 1e3, digits: 2)) ms")
    }
    report("VACUUM INTO a new file (every row rewritten once)", "\(formatted(best.vacuum * 1e3)) ms")
    report("sift migration (read, map, write, check, rename)", "\(formatted(best.migration * 1e3)) ms",
           "\(formatted(best.migration / best.vacuum, digits: 2))x VACUUM INTO")
}
