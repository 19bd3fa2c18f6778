// Memory lowering benchmark: compiled filters over one million row-cache
// nodes, next to hand-written Swift closures doing the same checks on the
// same nodes in the same run.

import Foundation
import Sift

/// Resident memory of this process, in bytes (Linux).
func residentBytes() -> Int {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
    let fields = text.split(separator: " ")
    return fields.count > 1 ? (Int(fields[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE))) : 0
}

/// The company model with one million employees.
func makeCompanyCache(employees: Int) throws -> (RowCache, DataModel) {
    let model = try DataModel(contentsOf: repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/company.json"))
    let (departmentIndex, employeeIndex, tagIndex) = (0, 1, 2)
    let departments = ["Engineering", "Sales", "Marketing", "Research", "Opérations", "Legal", "People", "Empty"]
    let tags = ["remote", "lead", "café", "new", "senior", "part-time", "mentor", "oncall", "travel", "intern", "alumni"]
    let firstNames = ["Alice", "alan", "Bob", "Chloé", "Dmitri", "Eve", "Ana", "Zoë", "Émile", "Grace", "Hal", "Ivy"]
    var generator = SplitMix(seed: 42)
    var nodes: [RowNode] = []
    nodes.reserveCapacity(employees + 20)
    var departmentMembers = Array(repeating: [Int64](), count: departments.count)
    var tagMembers = Array(repeating: [Int64](), count: tags.count)
    for i in 1...employees {
        let id = Int64(i)
        let department = Int(generator.next() % 7)
        departmentMembers[department].append(id)
        // Employee i reports to i / 10; so i's reports are 10i ..< 10i + 10.
        let manager: Int64? = i > 10 ? Int64(i / 10) : nil
        let reports = i * 10 > employees ? [] : (i * 10..<min(i * 10 + 10, employees + 1)).filter { $0 > 10 }.map(Int64.init)
        var myTags: [Int64] = []
        for _ in 0..<Int(generator.next() % 4) {
            let t = Int(generator.next() % UInt64(tags.count))
            if !myTags.contains(Int64(t + 1)) {
                myTags.append(Int64(t + 1))
                tagMembers[t].append(id)
            }
        }
        let rating: PredicateValue = generator.next() % 5 == 0 ? .null : .double(Double(generator.next() % 50) / 10)
        let name = firstNames[Int(generator.next() % UInt64(firstNames.count))] + " \(i)"
        nodes.append(RowNode(
            id: ObjectID(entity: employeeIndex, primaryKey: id), version: 1, fetchTimestamp: 0,
            values: [.string(name), generator.next() % 3 == 0 ? .null : .string("n\(i % 100)"),
                     .int(Int64(20 + generator.next() % 45)), .double(Double(30_000 + generator.next() % 170_000)),
                     rating, .bool(generator.next() % 7 == 0),
                     .date(Date(timeIntervalSinceReferenceDate: Double(generator.next() % 800_000_000)))],
            toOne: [Int64(department + 1), manager], toMany: [reports, myTags]))
    }
    for (d, name) in departments.enumerated() {
        nodes.append(RowNode(id: ObjectID(entity: departmentIndex, primaryKey: Int64(d + 1)), version: 1, fetchTimestamp: 0,
                             values: [.string(name), .double(1_000_000)], toMany: [departmentMembers[d]]))
    }
    for (t, name) in tags.enumerated() {
        nodes.append(RowNode(id: ObjectID(entity: tagIndex, primaryKey: Int64(t + 1)), version: 1, fetchTimestamp: 0,
                             values: [.string(name)], toMany: [tagMembers[t]]))
    }
    let cache = RowCache(model: model)
    cache.store(nodes)
    return (cache, model)
}

struct SplitMix {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

func memoryBenchmark() {
    let count = 1_000_000
    let before = residentBytes()
    let (cache, model) = try! makeCompanyCache(employees: count)
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
            actual = employees.reduce(0) { $0 + (filter.evaluate($1) ? 1 : 0) }
        })
        precondition(actual == expected, "\(text): sift found \(actual), hand-written \(expected)")
        report(text.padding(toLength: 66, withPad: " ", startingAt: 0),
               "\(formatted(sift.nanosecondsPerOperation)) ns/node vs \(formatted(baseline.nanosecondsPerOperation))",
               "= \(formatted(sift.nanosecondsPerOperation / baseline.nanosecondsPerOperation, digits: 2))x",
               "compile \(formatted(Double(compile.components.attoseconds) / 1e12, digits: 1)) us",
               "(\(actual) matches)")
    }
}
