// `sift batch --backend memory` against GNUstep's NSPredicate interpreter,
// as `../shared/gnustep-oracle/README.md` says to compare them: the eight
// typical predicates, 25 times, over 100 000 employees; each tool's
// evaluation time is its time on the repeated corpus less its time on one
// case (so loading the data does not count).
//
// GNUstep is not built with the package: set SIFT_GNUSTEP_ORACLE to a
// writable copy of the oracle's folder in which `build.sh` has made
// `bin/oracle` (and `gen_large.py` can run).

import Foundation

func gnustepBenchmark() {
    let sift = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sift")
    guard let folder = ProcessInfo.processInfo.environment["SIFT_GNUSTEP_ORACLE"].map(URL.init(fileURLWithPath:)),
          FileManager.default.isExecutableFile(atPath: folder.appendingPathComponent("bin/oracle").path),
          FileManager.default.isExecutableFile(atPath: sift.path) else {
        report("== GNUstep: skipped (build `sift` beside the benchmarks, and set SIFT_GNUSTEP_ORACLE to a copy of",
               "../shared/gnustep-oracle where build.sh has made bin/oracle)")
        return
    }
    let employees = 100_000
    let siftData = folder.appendingPathComponent("sift-\(employees).json")
    let oracleData = folder.appendingPathComponent("oracle-\(employees).json")
    func run(_ executable: URL, _ arguments: [String]) -> (Double, Int32) {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = folder
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        let elapsed = ContinuousClock().measure {
            guard (try? process.run()) != nil else { return }
            process.waitUntilExit()
        }
        return (seconds(elapsed), process.isRunning ? -1 : process.terminationStatus)
    }
    if !FileManager.default.fileExists(atPath: oracleData.path) {
        let (_, status) = run(URL(fileURLWithPath: "/usr/bin/env"),
                              ["python3", "gen_large.py", "\(employees)", siftData.path, oracleData.path])
        guard status == 0 else {
            report("== GNUstep: skipped (`python3 gen_large.py` failed in \(folder.path))")
            return
        }
    }
    guard let typical = try? String(contentsOf: folder.appendingPathComponent("typical-predicates.jsonl"), encoding: .utf8) else {
        report("== GNUstep: skipped (no typical-predicates.jsonl in \(folder.path))")
        return
    }
    let cases = typical.split(separator: "\n").compactMap {
        try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
    }
    func corpus(_ cases: [[String: Any]]) -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-gnustep-\(cases.count).jsonl")
        let lines = cases.map { String(decoding: try! JSONSerialization.data(withJSONObject: $0, options: .sortedKeys), as: UTF8.self) }
        try! lines.joined(separator: "\n").write(to: url, atomically: true, encoding: .utf8)
        return url
    }
    let one = corpus(Array(cases.prefix(1)))
    let repeated = corpus((1...25).flatMap { round in
        cases.map { entry in entry.merging(["id": "\(entry["id"] ?? "case")-\(round)"]) { $1 } }
    })
    defer { for url in [one, repeated] { try? FileManager.default.removeItem(at: url) } }
    let oracle = folder.appendingPathComponent("bin/oracle")
    func best(_ times: Int, _ executable: URL, _ arguments: [String]) -> Double {
        (0..<times).map { _ in run(executable, arguments).0 }.min() ?? .infinity
    }
    let siftArguments = { (corpus: URL) in ["batch", "--data", siftData.path, "--corpus", corpus.path, "--backend", "memory"] }
    let siftEvaluation = best(5, sift, siftArguments(repeated)) - best(5, sift, siftArguments(one))
    let oracleEvaluation = best(2, oracle, ["--no-roundtrip", oracleData.path, repeated.path])
        - best(2, oracle, ["--no-roundtrip", oracleData.path, one.path])
    report("== GNUstep's NSPredicate: the eight typical predicates x 25 over \(employees) employees, evaluation time (loading excluded)")
    report("sift batch --backend memory \(formatted(siftEvaluation * 1000)) ms",
           "GNUstep's evaluateWithObject: \(formatted(oracleEvaluation * 1000)) ms",
           "= \(formatted(oracleEvaluation / siftEvaluation)) times faster (target ≥ 50x)")
}
