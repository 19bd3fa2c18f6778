// The page's paging (`sift-benchmarks page`): a StoreServer on 200 000
// employees, asked over 127.0.0.1 for a page of 50 sorted by name, as the
// page at `/` asks: page 1, then page 1 001 by the keyset cursor the server
// gives, and by offset. The cursor's page should cost what page 1 costs.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Dispatch
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import SiftDemo
import SiftHTTPAPI
import SiftServer
import SiftStore

func pageBenchmark() {
    let employees = 200_000
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-page-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let store = try! SQLiteStore(url: folder.appendingPathComponent("company.sqlite"), model: CompanyGenerator.model)
    try! store.importNodes(CompanyGenerator.nodes(employees: employees))
    var configuration = ServerConfiguration()
    configuration.port = 0
    let server = try! StoreServer(store: store, configuration: configuration)
    let url = try! BlockingBridge.run { try await server.start() }.appendingPathComponent("v1/fetch")

    func fetch(_ body: [String: Any]) -> [String: Any] {
        var request = URLRequest(url: url)
        request.httpMethod = "POST"
        request.httpBody = try! JSONSerialization.data(withJSONObject: body)
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var answer = Data()
        URLSession.shared.dataTask(with: request) { data, _, _ in
            answer = data ?? Data()
            done.signal()
        }.resume()
        done.wait()
        let fields = (try? JSONSerialization.jsonObject(with: answer)) as? [String: Any] ?? [:]
        precondition((fields["objects"] as? [Any])?.count == 50, "a page of 50: \(String(decoding: answer.prefix(300), as: UTF8.self))")
        return fields
    }
    report("== Page: \(employees) employees served over 127.0.0.1, pages of 50 (one request each)")
    for (name, sort) in [("by name", [["keyPath": "name"]]), ("by salary, descending", [["keyPath": "salary", "ascending": false]]),
                         ("in key order", [[String: Any]]())] {
        let base: [String: Any] = ["entity": "Employee", "sort": sort as [[String: Any]], "limit": 50]
        // The cursor after page 1 000, as walking there would leave it (the offset fetch's own).
        let cursor = fetch(base.merging(["offset": 49_950]) { $1 })["next"] as! String
        let first = Measurement.compare(operations: 1, rounds: 20, baseline: { blackHole(fetch(base)) },
                                        candidate: { blackHole(fetch(base.merging(["after": cursor]) { $1 })) })
        let offset = Measurement.compare(operations: 1, rounds: 20, baseline: { blackHole(fetch(base)) },
                                         candidate: { blackHole(fetch(base.merging(["offset": 50_000]) { $1 })) })
        report("\(name): page 1 \(formatted(first.baseline.nanosecondsPerOperation / 1e6, digits: 2)) ms",
               "page 1 001 by cursor \(formatted(first.candidate.nanosecondsPerOperation / 1e6, digits: 2)) ms",
               "(\(formatted(first.candidate.nanosecondsPerOperation / first.baseline.nanosecondsPerOperation, digits: 2))x page 1)",
               "by offset \(formatted(offset.candidate.nanosecondsPerOperation / 1e6, digits: 2)) ms",
               "(\(formatted(offset.candidate.nanosecondsPerOperation / offset.baseline.nanosecondsPerOperation, digits: 2))x page 1)")
    }
    try? BlockingBridge.run { await server.stop() }
}
#else
func pageBenchmark() {
    report("== Page: built without the HTTP trait")
}
#endif
