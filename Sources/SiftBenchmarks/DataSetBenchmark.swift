// Data-set benchmark: loading a JSON data set (the `sift batch` and atomic
// store input) at n and 4n employees in the same run. Linear loading gives
// a ratio near 4. The baselines read the same file: Python's `json.load`
// (in a python3 process, timed there; the target is at most 2x it) and
// Foundation's JSONSerialization into Foundation objects.

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

/// The best of three `json.load(open(path))` in python3, in seconds, or nil
/// when python3 cannot be run (or prints no time).
func pythonJSONLoad(_ url: URL) -> Double? {
    let script = """
        import json, sys, time
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            with open(sys.argv[1]) as f:
                json.load(f)
            best = min(best, time.perf_counter() - start)
        print(best)
        """
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
    process.arguments = ["python3", "-c", script, url.path]
    let output = Pipe()
    process.standardOutput = output
    process.standardError = FileHandle.nullDevice
    guard (try? process.run()) != nil else { return nil }
    let printed = output.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    guard process.terminationStatus == 0 else { return nil }
    return Double(String(decoding: printed, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))
}

func dataSetBenchmark() {
    report("== Data sets: loading the demo company's JSON at n and 4n employees, one core")
    let clock = ContinuousClock()
    var perEmployee: [Int: Double] = [:]
    var skippedPython = false
    let sizes = ProcessInfo.processInfo.environment["SIFT_BENCH_EMPLOYEES"].flatMap(Int.init).map { [$0] } ?? [25_000, 100_000]
    for employees in sizes {
        let url = demoDataSetFile(employees: employees)
        let data = try! Data(contentsOf: url)
        let python = pythonJSONLoad(url)
        if python == nil && !skippedPython {
            report("python3 json.load: skipped (python3 did not run)")
            skippedPython = true
        }
        var bestLoad = Double.infinity
        var bestParse = Double.infinity
        for _ in 0..<3 {
            bestParse = min(bestParse, seconds(clock.measure { blackHole(try! JSONSerialization.jsonObject(with: data)) }))
            bestLoad = min(bestLoad, seconds(clock.measure { blackHole(try! DataSet(json: data)) }))
        }
        perEmployee[employees] = bestLoad
        report("\(employees) employees (\(formatted(Double(data.count) / 1e6)) MB)",
               python.map { "json.load \(formatted($0 * 1000)) ms" } ?? "json.load -",
               "JSONSerialization \(formatted(bestParse * 1000)) ms",
               "DataSet(json:) \(formatted(bestLoad * 1000)) ms",
               python.map { "= \(formatted(bestLoad / $0, digits: 2))x json.load (target ≤ 2x)" } ?? "",
               "\(formatted(bestLoad / bestParse, digits: 2))x JSONSerialization")
    }
    guard let small = perEmployee[25_000], let large = perEmployee[100_000] else { return }
    let growth = large / small
    report("4x the employees: \(formatted(growth, digits: 2))x the time (linear ≈ 4; bounded at 6)")
}
