// Scaling benchmark: how each stage's time grows with a predicate's size.
//
// Each shape is measured at n and at 4n in the same run (the OR chain at 5 000
// and 20 000 terms), through every stage and the whole count on SQLite; the
// ratio of the two times is the figure. Linear work gives about 4, n log n a little more,
// quadratic work 16. Hostile input must not find a shape that grows faster
// than n log n below the limits of PredicateLimits.

import Foundation
import Sift
import SiftStore

func scalingBenchmark() {
    // The shapes at 4n pass the default size limits on purpose: the limits
    // are not what is measured.
    let saved = PredicateLimits.standard
    PredicateLimits.standard = PredicateLimits(maximumLength: 1 << 24, maximumNodes: 1 << 22)
    defer { PredicateLimits.standard = saved }
    let dataSet = try! DataSet(contentsOf: repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/company.json"))
    let model = dataSet.model
    let lowering = SQLLowering(schema: SQLSchema(model: model))
    let domain = RowNodeDomain(cache: dataSet.makeRowCache())
    // The whole fetch on SQLite too: its planner, not only Sift's stages, must grow linearly.
    let storeURL = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-scaling-\(getpid()).sqlite")
    defer { try? FileManager.default.removeItem(at: storeURL) }
    let store = try! SQLiteStore(url: storeURL, model: model)
    try! store.importDataSet(dataSet)
    let context = ObjectContext(store: store)

    struct Shape {
        var name: String
        var n: Int
        var make: (Int) -> String
    }
    let shapes = [
        Shape(name: "OR of (age == k AND name != \"xk\")", n: 5_000) { n in
            (0..<n).map { "(age == \($0 % 70) AND name != \"x\($0)\")" }.joined(separator: " OR ")
        },
        Shape(name: "AND of name != \"yk\" OR nickname != \"zk\"", n: 5_000) { n in
            (0..<n).map { "(name != \"y\($0)\" OR nickname != \"z\($0)\")" }.joined(separator: " AND ")
        },
        Shape(name: "IN list of k numbers", n: 25_000) { n in
            "age IN {" + (0..<n).map(String.init).joined(separator: ", ") + "}"
        },
        Shape(name: "arithmetic chain age + 1 + 1 …", n: 250) { n in
            "age" + String(repeating: " + 1", count: n - 1) + " > 3"
        },
        Shape(name: "key path a.b.b.b … (parse only)", n: 25_000) { n in
            (["department"] + Array(repeating: "employees", count: n - 1)).joined(separator: ".") + " == nil"
        },
        Shape(name: "string literal of k bytes", n: 250_000) { n in
            "name == '" + String(repeating: "x", count: n) + "'"
        },
        Shape(name: "nested NOT/AND/OR, 45 deep, k copies", n: 400) { n in
            let one = (1...45).reduce("age > 0") { inner, level in
                level % 3 == 0 ? "NOT (\(inner))" : "(age > \(level) \(level % 2 == 0 ? "AND" : "OR") \(inner))"
            }
            return Array(repeating: "(\(one))", count: n).joined(separator: " OR ")
        },
    ]

    report("== Scaling: time at 4n over time at n (linear = 4, quadratic = 16), one core")
    report("shape".padding(toLength: 44, withPad: " ", startingAt: 0), "n", "stage   ", "time at n", "ratio 4n/n")
    for shape in shapes {
        let texts = (shape.make(shape.n), shape.make(shape.n * 4))
        let parseOnly = shape.name.contains("parse only")
        // Each stage is timed on the output of the stages before it.
        let syntax = (try! PredicateParser.parse(texts.0), try! PredicateParser.parse(texts.1))
        var stages: [(String, (Int) -> Void)] = [
            ("parse", { i in blackHole(try? PredicateParser.parse(i == 0 ? texts.0 : texts.1)) }),
        ]
        if !parseOnly {
            let binder = Binder(model: model)
            let bound = (try! binder.bind(syntax.0, entity: "Employee"), try! binder.bind(syntax.1, entity: "Employee"))
            let optimized = (Optimizer.standard.optimize(bound.0), Optimizer.standard.optimize(bound.1))
            stages += [
                ("bind", { i in blackHole(try? binder.bind(i == 0 ? syntax.0 : syntax.1, entity: "Employee")) }),
                ("optimize", { i in blackHole(Optimizer.standard.optimize(i == 0 ? bound.0 : bound.1)) }),
                ("memory", { i in blackHole(MemoryPredicate(i == 0 ? optimized.0 : optimized.1, domain: domain)) }),
                ("sql", { i in blackHole(try? lowering.select("Employee", where: i == 0 ? optimized.0 : optimized.1)) }),
                ("sqlite", { i in
                    blackHole(try? context.count(for: FetchRequest(entityName: "Employee", predicate: i == 0 ? texts.0 : texts.1)))
                }),
            ]
        }
        for (stage, body) in stages {
            let (a, b) = Measurement.compare(operations: 1, rounds: 5, baseline: { body(0) }, candidate: { body(1) })
            report(shape.name.padding(toLength: 44, withPad: " ", startingAt: 0), "\(shape.n)",
                   stage.padding(toLength: 8, withPad: " ", startingAt: 0),
                   "\(formatted(a.nanosecondsPerOperation / 1e6, digits: 3)) ms",
                   formatted(b.nanosecondsPerOperation / a.nanosecondsPerOperation, digits: 2))
        }
    }
}
