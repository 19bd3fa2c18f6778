// Memory lowering benchmark: compiled filters over one million row-cache
// nodes, next to hand-written Swift closures doing the same checks on the
// same nodes in the same run.

import Foundation
import Sift
import SiftStore
import SiftDemo

/// Resident memory of this process, in bytes (Linux).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The generated company, all in a row cache.
func makeCompanyCache(employees: Int) -> (RowCache, DataModel) {
    let cache = RowCache(model: CompanyGenerator.model)
    cache.store(CompanyGenerator.nodes(employees: employees))
    return (cache, CompanyGenerator.model)
}

func memoryBenchmark() {
    let count = 1_000_000
    let before = residentBytes()
    let (cache, model) = makeCompanyCache(employees: count)
    let after = residentBytes()
    let snapshot = cache.snapshot()
    let employees = snapshot.nodes(entity: 1)
    let domain = RowNodeDomain(cache: cache)
    let compiler = PredicateCompiler(model: model)

    // Slots of the company model's Employee, for the hand-written closures.
    let (name, age, salary, rating, isManager) = (0, 2, 3, 4, 5)
    let departmentSlot = 0
    let tagsSlot = 1
    func string(_ v: PredicateValue) -> String? { if case .string(let s) = v { s } else { nil } }
    func number(_ v: PredicateValue) -> Double? { ValueComparison.number(v) }

    let cases: [(String, (RowNode) -> Bool)] = [
        ("age >= 30 AND age < 40", { node in
            guard case .int(let a) = node.values[age] else { return false }
            return a >= 30 && a < 40
        }),
        ("name BEGINSWITH[c] 'al'", { node in
            guard let s = string(node.values[name]) else { return false }
            return StringMatching.hasPrefix(StringFolding.fold(s, .caseInsensitive), "al")
        }),
        ("department.name == 'Sales'", { node in
            guard let d = node.toOne[departmentSlot], let department = snapshot.node(entity: 0, primaryKey: d),
                  let s = string(department.values[0]) else { return false }
            return s == "Sales"
        }),
        ("ANY tags.name == 'remote'", { node in
            for t in node.toMany[tagsSlot] ?? [] {
                if let tag = snapshot.node(entity: 2, primaryKey: t), string(tag.values[0]) == "remote" { return true }
            }
            return false
        }),
        ("age > 30 AND salary < 100000 AND isManager == NO AND rating > 2.5", { node in
            guard case .int(let a) = node.values[age], a > 30 else { return false }
            guard let s = number(node.values[salary]), s < 100_000 else { return false }
            guard case .bool(let m) = node.values[isManager], !m else { return false }
            guard let r = number(node.values[rating]) else { return false }
            return r > 2.5
        }),
    ]

    report("== Memory evaluation: \(count) Employee nodes, one core")
    report("resident bytes per cached node (node, slots, relationship keys, cache index): \((after - before) / count)",
           "(a PredicateValue is \(MemoryLayout<PredicateValue>.stride) bytes)")
    for (text, handWritten) in cases {
        let compileStart = ContinuousClock.now
        let compileRounds = 2000
        for _ in 0..<compileRounds {
            blackHole(try! compiler.memoryPredicate(text, entity: "Employee", domain: domain))
        }
        let compile = (ContinuousClock.now - compileStart) / compileRounds
        let filter = try! compiler.memoryPredicate(text, entity: "Employee", domain: domain)
        var expected = 0
        var actual = 0
        let (baseline, sift) = Measurement.compare(operations: employees.count, rounds: 9, baseline: {
            expected = employees.reduce(0) { $0 + (handWritten($1) ? 1 : 0) }
        }, candidate: {
            actual = employees.reduce(0) { $0 + ((try? filter.evaluate($1)) == true ? 1 : 0) }
        })
        precondition(actual == expected, "\(text): sift found \(actual), hand-written \(expected)")
        report(text.padding(toLength: 66, withPad: " ", startingAt: 0),
               "\(formatted(sift.nanosecondsPerOperation)) ns/node vs \(formatted(baseline.nanosecondsPerOperation))",
               "= \(formatted(sift.nanosecondsPerOperation / baseline.nanosecondsPerOperation, digits: 2))x",
               "compile \(formatted(Double(compile.components.attoseconds) / 1e12, digits: 1)) us",
               "(\(actual) matches)")
    }
}
