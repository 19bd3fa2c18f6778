// Memory lowering benchmark: compiled filters over one million row-cache
// nodes, next to hand-written Swift closures doing the same checks on the
// same nodes in the same run.

import Foundation
import Sift
import SiftStore
import SiftDemo
import CMalloc

/// The heap bytes this process has allocated and not freed (glibc's
/// count). Not resident memory: pages freed by an earlier section stay
/// resident, and reusing them would read as no cost.
func heapBytes() -> Int { Int(mallinfo2().uordblks) }

/// The generated company, all in a row cache.
func makeCompanyCache(employees: Int) -> (RowCache, DataModel) {
    let cache = RowCache(model: CompanyGenerator.model)
    cache.store(CompanyGenerator.nodes(employees: employees))
    return (cache, CompanyGenerator.model)
}

func memoryBenchmark() {
    let count = 1_000_000
    let before = heapBytes()
    let (cache, model) = makeCompanyCache(employees: count)
    let after = heapBytes()
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
            guard case .int(let a) = node.value(at: age) else { return false }
            return a >= 30 && a < 40
        }),
        ("name BEGINSWITH[c] 'al'", { node in
            guard let s = string(node.value(at: name)) else { return false }
            return StringMatching.hasPrefix(StringFolding.fold(s, .caseInsensitive), "al")
        }),
        ("department.name == 'Sales'", { node in
            guard let d = node.toOneKey(at: departmentSlot), let department = snapshot.node(entity: 0, primaryKey: d),
                  let s = string(department.value(at: 0)) else { return false }
            return s == "Sales"
        }),
        ("ANY tags.name == 'remote'", { node in
            for t in node.toManyKeys(at: tagsSlot) ?? [] {
                if let tag = snapshot.node(entity: 2, primaryKey: t), string(tag.value(at: 0)) == "remote" { return true }
            }
            return false
        }),
        ("age > 30 AND salary < 100000 AND isManager == NO AND rating > 2.5", { node in
            guard case .int(let a) = node.value(at: age), a > 30 else { return false }
            guard let s = number(node.value(at: salary)), s < 100_000 else { return false }
            guard case .bool(let m) = node.value(at: isManager), !m else { return false }
            guard let r = number(node.value(at: rating)) else { return false }
            return r > 2.5
        }),
    ]

    report("== Memory evaluation: \(count) Employee nodes, one core")
    report("heap bytes per cached node (node, slots, relationship keys, cache index): \((after - before) / count)",
           "(a PredicateValue is \(MemoryLayout<PredicateValue>.stride) bytes)")
    let table = snapshot.table(entity: 1)
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
        var columnar = 0
        let (baseline, sift) = Measurement.compare(operations: employees.count, rounds: 9, baseline: {
            expected = employees.reduce(0) { $0 + (handWritten($1) ? 1 : 0) }
        }, candidate: {
            actual = employees.reduce(0) { $0 + ((try? filter.evaluate($1)) == true ? 1 : 0) }
        })
        // The first evaluation over the same nodes with no columns made yet.
        let fresh = RowNodeDomain(snapshot: snapshot.withoutColumns)
        let freshFilter = try! compiler.memoryPredicate(text, entity: "Employee", domain: fresh)
        let firstStart = ContinuousClock.now
        blackHole(try! freshFilter.filter(fresh.snapshot.table(entity: 1)))
        let first = seconds(ContinuousClock.now - firstStart) * 1e9 / Double(employees.count)
        let columns = Measurement.run("columns", operations: employees.count, rounds: 9) {
            columnar = try! filter.matchingRows(in: table).count
        }
        precondition(actual == expected && columnar == expected, "\(text): sift found \(actual) (\(columnar) by columns), hand-written \(expected)")
        report(text.padding(toLength: 66, withPad: " ", startingAt: 0),
               "node by node \(formatted(sift.nanosecondsPerOperation)) ns/node,",
               "by columns \(formatted(columns.nanosecondsPerOperation, digits: 2)) ns/node (\(formatted(first)) with the columns made),",
               "vs hand-written over the nodes \(formatted(baseline.nanosecondsPerOperation))",
               "= \(formatted(columns.nanosecondsPerOperation / baseline.nanosecondsPerOperation, digits: 3))x",
               "compile \(formatted(Double(compile.components.attoseconds) / 1e12, digits: 1)) us",
               "(\(actual) matches)")
    }
    typicalPredicatesBenchmark()
}

/// The eight typical predicates of the GNUstep comparison
/// (`../shared/gnustep-oracle/typical-predicates.jsonl`) over 100 000 cached
/// employees, by columns, next to hand-written loops over the same nodes.
func typicalPredicatesBenchmark() {
    let count = 100_000
    let (cache, model) = makeCompanyCache(employees: count)
    let snapshot = cache.snapshot()
    let employees = snapshot.nodes(entity: 1)
    let domain = RowNodeDomain(snapshot: snapshot)
    let table = snapshot.table(entity: 1)
    let compiler = PredicateCompiler(model: model)
    let (name, nickname, age, salary, rating, isManager) = (0, 1, 2, 3, 4, 5)
    let (department, manager, reports) = (0, 1, 0)
    func string(_ v: PredicateValue) -> String? { if case .string(let s) = v { s } else { nil } }
    func int(_ v: PredicateValue) -> Int64? { if case .int(let i) = v { i } else { nil } }
    func double(_ v: PredicateValue) -> Double? { if case .double(let d) = v { d } else { nil } }
    let cases: [(String, (RowNode) -> Bool)] = [
        ("age >= 30 AND age <= 40 AND salary > 50000", { node in
            guard let a = int(node.value(at: age)), a >= 30, a <= 40, let s = double(node.value(at: salary)) else { return false }
            return s > 50000
        }),
        ("name BEGINSWITH[c] 'an'", { node in
            string(node.value(at: name)).map { $0.lowercased().hasPrefix("an") } ?? false
        }),
        ("department.budget > 1500000", { node in
            guard let key = node.toOneKey(at: department), let d = snapshot.node(entity: 0, primaryKey: key),
                  let budget = double(d.value(at: 1)) else { return false }
            return budget > 1_500_000
        }),
        ("ANY reports.age > 60", { node in
            (node.toManyKeys(at: reports) ?? []).contains { key in
                snapshot.node(entity: 1, primaryKey: key).flatMap { int($0.value(at: age)) }.map { $0 > 60 } ?? false
            }
        }),
        ("age > 30 AND isManager == NO AND rating >= 2.5 AND nickname != nil", { node in
            guard let a = int(node.value(at: age)), a > 30, case .bool(false) = node.value(at: isManager),
                  let r = double(node.value(at: rating)), r >= 2.5 else { return false }
            return node.value(at: nickname) != .null
        }),
        ("name CONTAINS[c] 'ann'", { node in
            string(node.value(at: name)).map { $0.lowercased().contains("ann") } ?? false
        }),
        ("age < 25 OR salary > 140000 OR manager == nil", { node in
            if let a = int(node.value(at: age)), a < 25 { return true }
            if let s = double(node.value(at: salary)), s > 140_000 { return true }
            return node.toOneKey(at: manager).flatMap { snapshot.node(entity: 1, primaryKey: $0) } == nil
        }),
        ("reports.@count > 2", { node in
            (node.toManyKeys(at: reports) ?? []).count { snapshot.node(entity: 1, primaryKey: $0) != nil } > 2
        }),
    ]
    report("== The eight typical predicates (GNUstep's comparison): \(count) cached employees, by columns (columns kept), one core")
    var ratios: [Double] = []
    for (text, handWritten) in cases {
        let filter = try! compiler.memoryPredicate(text, entity: "Employee", domain: domain)
        var expected = 0
        var actual = 0
        let (baseline, columns) = Measurement.compare(operations: count, rounds: 9, baseline: {
            expected = employees.reduce(0) { $0 + (handWritten($1) ? 1 : 0) }
        }, candidate: {
            actual = try! filter.matchingRows(in: table).count
        })
        precondition(actual == expected, "\(text): sift found \(actual), hand-written \(expected)")
        let nodeByNode = try! filter.filter(employees).count
        precondition(nodeByNode == expected, "\(text): node by node \(nodeByNode), hand-written \(expected)")
        ratios.append(columns.nanosecondsPerOperation / baseline.nanosecondsPerOperation)
        report(text.padding(toLength: 66, withPad: " ", startingAt: 0),
               "\(formatted(columns.nanosecondsPerOperation, digits: 2)) ns/object vs hand-written \(formatted(baseline.nanosecondsPerOperation, digits: 2))",
               "= \(formatted(ratios.last!, digits: 3))x (target ≤ 2x)", "(\(actual) matches)")
    }
    report("worst: \(formatted(ratios.max() ?? 0, digits: 3))x a hand-written loop")
}
