// Remote store benchmark: the same fetches and saves on a local SQLite store
// and through a RemoteStore on a StoreServer serving that very store, in the
// same process over 127.0.0.1 (`sift-benchmarks remote`): fetching 10 000
// employees and reading every attribute, a fetch of one by name, and a save
// of 1 000 new objects. The ratio is what HTTP, JSON and the server cost.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftDemo
import SiftHTTPAPI
import SiftRemote
import SiftServer
import SiftStore

func remoteBenchmark() {
    let employees = 10_000
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-remote-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let local = try! SQLiteStore(url: folder.appendingPathComponent("company.sqlite"), model: CompanyGenerator.model)
    try! local.importNodes(CompanyGenerator.nodes(employees: employees))
    var configuration = ServerConfiguration()
    configuration.port = 0
    configuration.isWritable = true
    let server = try! StoreServer(store: local, configuration: configuration)
    let url = try! BlockingBridge.run { try await server.start() }
    var options = RemoteStoreConfiguration()
    options.followsChanges = false
    let remote = try! RemoteStore(url: url, configuration: options)
    let attributes = CompanyGenerator.model.entity(named: "Employee")!.attributes.map(\.name)

    func readAll(_ store: any PersistentStore) {
        let context = ObjectContext(store: store)
        let objects = try! context.fetch(FetchRequest(entityName: "Employee"))
        precondition(objects.count == employees)
        for object in objects { for name in attributes { blackHole(object[name]) } }
    }
    let all = Measurement.compare(operations: employees, rounds: 5, baseline: { readAll(local) }, candidate: { readAll(remote) })

    func one(_ store: any PersistentStore) {
        let context = ObjectContext(store: store)
        for index in 0..<100 {
            blackHole(try! context.fetch(FetchRequest(entityName: "Employee", predicate: "name ENDSWITH %@",
                                                      arguments: [.string(" \(index * 97)")])))
        }
    }
    let byName = Measurement.compare(operations: 100, rounds: 5, baseline: { one(local) }, candidate: { one(remote) })
    // Round trips of a small fetch: the requests one fetch by name sends (target: one).
    let sentBefore = remote.backend.requestsSent
    one(remote)
    let roundTrips = Double(remote.backend.requestsSent - sentBefore) / 100

    var round = 0
    func save(_ store: any PersistentStore) {
        round += 1
        let context = ObjectContext(store: store)
        for index in 0..<1_000 {
            let tag = try! context.insert("Tag")
            try! tag.setValue(.string("tag \(round).\(index)"), forKey: "name")
        }
        try! context.save()
    }
    let saves = Measurement.compare(operations: 1_000, rounds: 5, baseline: { save(local) }, candidate: { save(remote) })

    report("== Remote store: \(employees) employees, a StoreServer and a RemoteStore in one process over 127.0.0.1")
    // Each figure beside its target (issue 51): a large fetch and a save at most 3x local, a small fetch one round trip.
    for (name, unit, pair, target) in [("fetch 10 000, read all", "object", all, "target ≤ 3x"),
                                       ("fetch by name, 100 times", "fetch", byName, "\(formatted(roundTrips, digits: 2)) round trips a fetch, target 1"),
                                       ("save 1 000 inserts", "object", saves, "target ≤ 3x")] {
        report(name.padding(toLength: 24, withPad: " ", startingAt: 0),
               "local \(formatted(pair.baseline.nanosecondsPerOperation / 1000)) µs/\(unit)",
               "remote \(formatted(pair.candidate.nanosecondsPerOperation / 1000)) µs/\(unit)",
               "\(formatted(pair.candidate.nanosecondsPerOperation / pair.baseline.nanosecondsPerOperation))x local", target)
    }
    remote.backend.stopFollowingChanges()
    try? BlockingBridge.run { await server.stop() }
}
#else
func remoteBenchmark() {
    report("== Remote store: built without the HTTP trait")
}
#endif
