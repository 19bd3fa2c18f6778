// Data-set benchmark: loading a JSON data set (the `sift batch` and atomic
// store input) at n and 4n employees in the same run. Linear loading gives
// a ratio near 4; the baseline is Foundation's JSONSerialization reading the
// same bytes into Foundation objects (the least any loader does).

import Foundation
import Sift
import SiftDemo
import SiftStore

/// The JSON data set of the demo company with `employees` employees, written once to a temporary file.
func demoDataSetFile(employees: Int) -> URL {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("sift-dataset-\(employees)-\(CompanyGenerator.model.versionHash).json")
    if !FileManager.default.fileExists(atPath: url.path) {
        let store = try! AtomicStore(url: url, model: CompanyGenerator.model)
        try! store.importDataSet(DataSet(model: CompanyGenerator.model, nodes: CompanyGenerator.nodes(employees: employees)))
    }
    return url
}

func dataSetBenchmark() {
    report("== Data sets: loading the demo company's JSON at n and 4n employees, one core")
    let clock = ContinuousClock()
    var perEmployee: [Int: Double] = [:]
    let sizes = ProcessInfo.processInfo.environment["SIFT_BENCH_EMPLOYEES"].flatMap(Int.init).map { [$0] } ?? [25_000, 100_000]
    for employees in sizes {
        let data = try! Data(contentsOf: demoDataSetFile(employees: employees))
        var bestLoad = Double.infinity
        var bestParse = Double.infinity
        for _ in 0..<3 {
            bestParse = min(bestParse, seconds(clock.measure { blackHole(try! JSONSerialization.jsonObject(with: data)) }))
            bestLoad = min(bestLoad, seconds(clock.measure { blackHole(try! DataSet(json: data)) }))
        }
        perEmployee[employees] = bestLoad
        report("\(employees) employees (\(formatted(Double(data.count) / 1e6)) MB)",
               "JSONSerialization \(formatted(bestParse * 1000)) ms",
               "DataSet(json:) \(formatted(bestLoad * 1000)) ms = \(formatted(bestLoad / bestParse, digits: 2))x",
               employees == 100_000 ? "(target ≤ 1 000 ms)" : "")
    }
    guard let small = perEmployee[25_000], let large = perEmployee[100_000] else { return }
    let growth = large / small
    report("4x the employees: \(formatted(growth, digits: 2))x the time (linear ≈ 4; bounded at 6)")
}
