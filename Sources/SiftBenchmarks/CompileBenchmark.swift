// Compile benchmark: a predicate's whole way to SQL (parse, bind, optimize,
// lower, render) for the conformance corpus mix, next to parsing alone in the
// same run.

import Foundation
import Sift
import SiftStore

func compileBenchmark() {
    let url = repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/company.json")
    guard let dataSet = try? DataSet(contentsOf: url) else { fatalError("cannot read \(url.path)") }
    let model = dataSet.model
    let compiler = PredicateCompiler(model: model)
    let lowering = SQLLowering(schema: SQLSchema(model: model))
    // The corpus predicates that bind to Employee and lower to SQL.
    let predicates = corpusPredicates().filter { text, arguments in
        guard let bound = try? compiler.bind(text, arguments: arguments, entity: "Employee") else { return false }
        return (try? lowering.select("Employee", where: bound)) != nil
    }
    let repetitions = 200
    let operations = predicates.count * repetitions
    let (parse, compile) = Measurement.compare(operations: operations, rounds: 5, baseline: {
        for _ in 0..<repetitions {
            for (text, arguments) in predicates { blackHole(try? PredicateParser.parse(text, arguments: arguments)) }
        }
    }, candidate: {
        for _ in 0..<repetitions {
            for (text, arguments) in predicates {
                guard let bound = try? compiler.bind(text, arguments: arguments, entity: "Employee") else { continue }
                blackHole(try? lowering.select("Employee", where: bound))
            }
        }
    })
    report("== Compile: \(predicates.count) corpus predicates to SQL (parse, bind, optimize, lower, render), one core")
    report("parse    \(formatted(parse.nanosecondsPerOperation / 1000, digits: 2)) us/predicate")
    report("compile  \(formatted(compile.nanosecondsPerOperation / 1000, digits: 2)) us/predicate",
           "\(formatted(compile.nanosecondsPerOperation / parse.nanosecondsPerOperation, digits: 2))x parse",
           "(target <= 10 us)")
}
