// Sift benchmarks: `swift run -c release sift-benchmarks`.
//
// Each section measures Sift next to a baseline run in the same process and
// prints the ratio.

import Foundation
import Sift

/// The repository's top folder, from this file's path.
let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

struct CorpusLine: Decodable {
    var predicate: String
    var args: [PredicateValue]?
}

/// The conformance corpus predicates that parse: a realistic mix.
func corpusPredicates() -> [(String, [PredicateValue])] {
    let url = repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/corpus.jsonl")
    guard let text = try? String(contentsOf: url, encoding: .utf8) else {
        fatalError("cannot read \(url.path)")
    }
    return text.split(separator: "\n").compactMap { line in
        guard let entry = try? JSONDecoder().decode(CorpusLine.self, from: Data(line.utf8)) else { return nil }
        guard (try? PredicateParser.parse(entry.predicate, arguments: entry.args ?? [])) != nil else { return nil }
        return (entry.predicate, entry.args ?? [])
    }
}

func parseBenchmark() {
    let predicates = corpusPredicates()
    let bytes = predicates.reduce(0) { $0 + $1.0.utf8.count }
    let repetitions = 2000
    let operations = predicates.count * repetitions

    let tokenize = Measurement.run("tokenize", operations: operations) {
        for _ in 0..<repetitions {
            for (text, _) in predicates { blackHole(try? PredicateTokenizer.tokenRanges(in: text)) }
        }
    }
    let parse = Measurement.run("parse", operations: operations) {
        for _ in 0..<repetitions {
            for (text, arguments) in predicates { blackHole(try? PredicateParser.parse(text, arguments: arguments)) }
        }
    }
    let print = Measurement.run("print", operations: operations) {
        let trees = predicates.map { try! PredicateParser.parse($0.0, arguments: $0.1) }
        for _ in 0..<repetitions {
            for tree in trees { blackHole(tree.canonicalFormat) }
        }
    }

    let averageBytes = Double(bytes) / Double(predicates.count)
    report("== Parsing: \(predicates.count) corpus predicates, \(formatted(averageBytes)) bytes on average, one core")
    for m in [tokenize, parse, print] {
        let perSecond = 1e9 / m.nanosecondsPerOperation
        let megabytes = averageBytes * perSecond / 1e6
        report(m.name.padding(toLength: 9, withPad: " ", startingAt: 0),
               "\(formatted(m.nanosecondsPerOperation)) ns/predicate",
               "\(formatted(perSecond / 1e6, digits: 2)) M predicates/s",
               "\(formatted(megabytes)) MB/s",
               "\(formatted(m.nanosecondsPerOperation / tokenize.nanosecondsPerOperation, digits: 2))x tokenize")
    }
}

let sections: [String: () -> Void] = ["parse": parseBenchmark, "compile": compileBenchmark, "values": valuesBenchmark, "memory": memoryBenchmark, "memory-limit": typedArraysSection, "store": storeBenchmark, "optimizer": optimizerBenchmark,
                                         "write": writeBenchmark, "scaling": scalingBenchmark, "postgres": postgresBenchmark, "dataset": dataSetBenchmark, "cli": commandLineBenchmark, "expressions": expressionBenchmark, "live": liveResultsBenchmark, "migrate": migrationBenchmark, "small": smallFetchBenchmark, "remote": remoteBenchmark, "gnustep": gnustepBenchmark, "history": historyBenchmark, "page": pageBenchmark, "swift": swiftPredicateBenchmark, "swift-convert": swiftPredicateConversionProfile, "serve-load": serveLoadBenchmark]
let chosen = CommandLine.arguments.dropFirst()
for name in sections.keys.sorted() where chosen.isEmpty || chosen.contains(name) {
    sections[name]!()
}
