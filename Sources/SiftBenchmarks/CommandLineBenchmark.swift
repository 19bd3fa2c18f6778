// Command-line benchmark: `sift parse --file` and `sift batch` as a user
// runs them (a separate process, start-up included), next to the library
// doing the same work in this process. The command line should add only
// reading and printing: the ratios stay near 1.

import Foundation
import Sift
import SiftDemo
import SiftStore

func commandLineBenchmark() {
    let sift = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sift")
    guard FileManager.default.isExecutableFile(atPath: sift.path) else {
        report("== Command line: skipped (build `sift` beside the benchmarks: swift build -c release --product sift)")
        return
    }
    report("== Command line: whole processes vs the library in this process, one core")
    let clock = ContinuousClock()
    func run(_ arguments: [String]) -> Double {
        let process = Process()
        process.executableURL = sift
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        return seconds(clock.measure {
            try! process.run()
            process.waitUntilExit()
        })
    }

    // 1. `sift parse --file` on 100 000 predicates.
    let predicates = corpusPredicates().filter { $0.1.isEmpty }.map(\.0)
    let lines = (0..<100_000).map { predicates[$0 % predicates.count] }
    let file = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-predicates.txt")
    try! (lines.joined(separator: "\n") + "\n").write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    var bestProcess = Double.infinity, bestLibrary = Double.infinity
    for _ in 0..<3 {
        bestProcess = min(bestProcess, run(["parse", "--file", file.path]))
        bestLibrary = min(bestLibrary, seconds(clock.measure {
            let text = try! String(contentsOf: file, encoding: .utf8)
            for line in text.split(separator: "\n") { blackHole(try? PredicateParser.parse(String(line))) }
        }))
    }
    report("sift parse --file, \(lines.count) predicates", "process \(formatted(bestProcess * 1e6 / Double(lines.count), digits: 2)) us/predicate",
           "library \(formatted(bestLibrary * 1e6 / Double(lines.count), digits: 2)) us/predicate",
           "= \(formatted(bestProcess / bestLibrary, digits: 2))x")

    // 2. `sift batch --backend memory`: 200 cases over 100 000 employees.
    let data = demoDataSetFile(employees: 100_000)
    let cases = (0..<200).map { i -> String in
        let predicate = ["age > \(20 + i % 40)", "salary > \(50_000 + i * 500) AND isManager == NO",
                         "name BEGINSWITH 'Zo' OR age == \(i % 60)", "department.name == 'Sales' AND rating > 4"][i % 4]
        let line: [String: String] = ["id": "c\(i)", "entity": "Employee", "predicate": predicate]
        return String(decoding: try! JSONEncoder().encode(line), as: UTF8.self)
    }
    let corpus = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-batch.jsonl")
    try! cases.joined(separator: "\n").write(to: corpus, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: corpus) }
    bestProcess = .infinity
    bestLibrary = .infinity
    for _ in 0..<3 {
        bestProcess = min(bestProcess, run(["batch", "--data", data.path, "--corpus", corpus.path]))
        bestLibrary = min(bestLibrary, seconds(clock.measure {
            let dataSet = try! DataSet(contentsOf: data)
            let cache = dataSet.makeRowCache()
            let domain = RowNodeDomain(cache: cache)
            let employees = domain.snapshot.table(entity: dataSet.model.entity(named: "Employee")!.index)
            let compiler = PredicateCompiler(model: dataSet.model)
            for line in cases {
                let object = try! JSONSerialization.jsonObject(with: Data(line.utf8)) as! [String: String]
                let bound = try! compiler.bind(object["predicate"]!, entity: "Employee")
                blackHole(try! MemoryPredicate(bound, domain: domain).filter(employees).map(\.id.primaryKey))
            }
        }))
    }
    report("sift batch, \(cases.count) cases over 100000 employees", "process \(formatted(bestProcess * 1000)) ms",
           "library \(formatted(bestLibrary * 1000)) ms", "= \(formatted(bestProcess / bestLibrary, digits: 2))x")
}
