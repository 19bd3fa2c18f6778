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
    typedArraysBenchmark(snapshot: snapshot, model: model)
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

/// The company's employees in plain typed arrays, as a program written for
/// speed would hold them: the physical limit for filtering.
struct TypedCompany {
    var count = 0
    var names: [String] = []
    var nicknames: [String] = []
    var nicknameValid: [UInt64] = []
    var ages: [Int64] = []
    var salaries: [Double] = []
    var ratings: [Double] = []
    var ratingValid: [UInt64] = []
    var isManager: [Bool] = []
    /// Each employee's department row, -1 for none.
    var department: [Int32] = []
    var departmentNames: [String] = []
    var departmentBudgets: [Double] = []
    /// Each employee's manager row, -1 for none.
    var manager: [Int32] = []
    /// Employee `i`'s reports are `reportRows[reportOffsets[i] ..< reportOffsets[i + 1]]`.
    var reportOffsets: [Int32] = []
    var reportRows: [Int32] = []
    var tagOffsets: [Int32] = []
    var tagRows: [Int32] = []
    var tagNames: [String] = []

    /// Extracted from the snapshot's tables (rows in Sift's table order).
    init(_ snapshot: RowSnapshot) {
        let employees = snapshot.table(entity: 1).nodes
        let departments = snapshot.table(entity: 0).nodes
        let tags = snapshot.table(entity: 2).nodes
        func rows(_ nodes: [RowNode]) -> [Int64: Int32] {
            Dictionary(uniqueKeysWithValues: nodes.enumerated().map { ($1.id.primaryKey, Int32($0)) })
        }
        let (employeeRow, departmentRow, tagRow) = (rows(employees), rows(departments), rows(tags))
        func string(_ v: PredicateValue) -> String { if case .string(let s) = v { s } else { fatalError("\(v)") } }
        count = employees.count
        let words = (count + 63) / 64
        nicknameValid = Array(repeating: 0, count: words)
        ratingValid = Array(repeating: 0, count: words)
        departmentNames = departments.map { string($0.value(at: 0)) }
        departmentBudgets = departments.map { if case .double(let d) = $0.value(at: 1) { d } else { fatalError() } }
        tagNames = tags.map { string($0.value(at: 0)) }
        reportOffsets = [0]
        tagOffsets = [0]
        for (i, node) in employees.enumerated() {
            names.append(string(node.value(at: 0)))
            if case .string(let s) = node.value(at: 1) {
                nicknames.append(s)
                nicknameValid[i >> 6] |= 1 << UInt64(i & 63)
            } else {
                nicknames.append("")
            }
            guard case .int(let age) = node.value(at: 2), case .double(let salary) = node.value(at: 3),
                  case .bool(let m) = node.value(at: 5) else { fatalError() }
            ages.append(age)
            salaries.append(salary)
            isManager.append(m)
            if case .double(let r) = node.value(at: 4) {
                ratings.append(r)
                ratingValid[i >> 6] |= 1 << UInt64(i & 63)
            } else {
                ratings.append(0)
            }
            department.append(node.toOneKey(at: 0).flatMap { departmentRow[$0] } ?? -1)
            manager.append(node.toOneKey(at: 1).flatMap { employeeRow[$0] } ?? -1)
            reportRows += (node.toManyKeys(at: 0) ?? []).compactMap { employeeRow[$0] }
            reportOffsets.append(Int32(reportRows.count))
            tagRows += (node.toManyKeys(at: 1) ?? []).compactMap { tagRow[$0] }
            tagOffsets.append(Int32(tagRows.count))
        }
    }
}

/// The rows `0 ..< count` for which `holds` is true, in order (written
/// unconditionally, counted when it holds: no branch to mispredict).
@inline(__always)
func matching(_ count: Int, _ holds: (Int) -> Bool) -> [Int] {
    [Int](unsafeUninitializedCapacity: count) { buffer, initialized in
        var k = 0
        for i in 0..<count {
            buffer[k] = i
            k &+= holds(i) ? 1 : 0
        }
        initialized = k
    }
}

/// Whether all hold, every one evaluated (no branch to mispredict).
@inline(__always)
func all(_ a: Bool, _ b: Bool, _ c: Bool = true, _ d: Bool = true, _ e: Bool = true) -> Bool {
    (a ? 1 as UInt8 : 0) & (b ? 1 : 0) & (c ? 1 : 0) & (d ? 1 : 0) & (e ? 1 : 0) != 0
}

/// Whether any holds, every one evaluated.
@inline(__always)
func any(_ a: Bool, _ b: Bool, _ c: Bool = false) -> Bool {
    (a ? 1 as UInt8 : 0) | (b ? 1 : 0) | (c ? 1 : 0) != 0
}

/// Whether the bytes of `u` start with `p` (`lower` folds each byte of `u` first).
@inline(__always)
func startsWith(_ u: UnsafeBufferPointer<UInt8>, _ p: [UInt8], _ lower: (UInt8) -> UInt8) -> Bool {
    guard u.count >= p.count else { return false }
    for j in 0..<p.count where lower(u[j]) != p[j] { return false }
    return true
}

/// Whether `p` (not empty) occurs in the bytes of `u` (`lower` folds each byte of `u` first).
@inline(__always)
func occurs(_ p: [UInt8], in u: UnsafeBufferPointer<UInt8>, _ lower: (UInt8) -> UInt8) -> Bool {
    let m = p.count
    guard u.count >= m else { return false }
    let first = p[0]
    var i = 0
    while i <= u.count - m {
        if lower(u[i]) == first {
            var j = 1
            while j < m, lower(u[i + j]) == p[j] { j += 1 }
            if j == m { return true }
        }
        i += 1
    }
    return false
}

@inline(__always)
func isSet(_ words: UnsafeBufferPointer<UInt64>, _ i: Int) -> Bool { words[i >> 6] & (1 << UInt64(i & 63)) != 0 }

/// Case-insensitive (and with `diacritics`, diacritic-insensitive) string
/// tests: ASCII text folded byte by byte; other text folded as Sift folds it.
struct FoldedMatcher {
    let pattern: [UInt8]  // already folded
    let options: ComparisonOptions

    @inline(__always)
    static func lower(_ b: UInt8) -> UInt8 { b &- 65 < 26 ? b | 0x20 : b }

    @inline(__always)
    func hasPrefix(_ s: String) -> Bool {
        s.utf8.withContiguousStorageIfAvailable { u -> Bool in
            var high: UInt8 = 0
            for b in u { high |= b }
            guard high < 0x80 else { return slow(s) { $0.starts(with: pattern) } }
            return startsWith(u, pattern, Self.lower)
        } ?? slow(s) { $0.starts(with: pattern) }
    }

    @inline(__always)
    func contains(_ s: String) -> Bool {
        s.utf8.withContiguousStorageIfAvailable { u -> Bool in
            var high: UInt8 = 0
            for b in u { high |= b }
            guard high < 0x80 else { return slow(s) { $0.firstRange(of: pattern) != nil } }
            return occurs(pattern, in: u, Self.lower)
        } ?? slow(s) { $0.firstRange(of: pattern) != nil }
    }

    func slow(_ s: String, _ test: ([UInt8]) -> Bool) -> Bool {
        test(Array(StringFolding.fold(s, options).utf8))
    }
}

/// Sift's compiled filters over the row cache (columns kept) next to
/// hand-written loops over typed arrays, the physical limit.
func typedArraysBenchmark(snapshot: RowSnapshot, model: DataModel) {
    let c = TypedCompany(snapshot)
    let n = c.count
    let domain = RowNodeDomain(snapshot: snapshot)
    let table = snapshot.table(entity: 1)
    let compiler = PredicateCompiler(model: model)
    let ci = ComparisonOptions.caseInsensitive
    let cd: ComparisonOptions = [.caseInsensitive, .diacriticInsensitive]
    let nonASCII = c.names.count { !$0.utf8.allSatisfy { $0 < 0x80 } }
    // The names folded once (untimed), as Sift keeps its folded columns: the
    // loop over them is the limit when the folding is not counted.
    let foldedNames = [ci, cd].map { options in c.names.map { StringFolding.fold($0, options) } }
    let an = Array("an".utf8)
    let ann = Array("ann".utf8)
    let prefoldedLoops: [String: () -> [Int]] = [
        "name BEGINSWITH[c] 'an'": {
            foldedNames[0].withUnsafeBufferPointer { names in
                matching(n) { names[$0].utf8.withContiguousStorageIfAvailable { startsWith($0, an) { $0 } } ?? false }
            }
        },
        "name CONTAINS[c] 'ann'": {
            foldedNames[0].withUnsafeBufferPointer { names in
                matching(n) { names[$0].utf8.withContiguousStorageIfAvailable { occurs(ann, in: $0) { $0 } } ?? false }
            }
        },
        "name CONTAINS[cd] 'ann'": {
            foldedNames[1].withUnsafeBufferPointer { names in
                matching(n) { names[$0].utf8.withContiguousStorageIfAvailable { occurs(ann, in: $0) { $0 } } ?? false }
            }
        },
    ]
    // (predicate, through a relationship, the loop)
    let cases: [(String, Bool, () -> [Int])] = [
        ("age >= 30 AND age <= 40 AND salary > 50000", false, {
            c.ages.withUnsafeBufferPointer { ages in
                c.salaries.withUnsafeBufferPointer { salaries in
                    matching(n) { all(ages[$0] >= 30, ages[$0] <= 40, salaries[$0] > 50_000) }
                }
            }
        }),
        ("name BEGINSWITH[c] 'an'", false, {
            let m = FoldedMatcher(pattern: Array("an".utf8), options: ci)
            return c.names.withUnsafeBufferPointer { names in matching(n) { m.hasPrefix(names[$0]) } }
        }),
        ("department.budget > 1500000", true, {
            c.department.withUnsafeBufferPointer { department in
                c.departmentBudgets.withUnsafeBufferPointer { budgets in
                    matching(n) { all(department[$0] >= 0, budgets[Int(max(department[$0], 0))] > 1_500_000) }
                }
            }
        }),
        ("ANY reports.age > 60", true, {
            c.ages.withUnsafeBufferPointer { ages in
                c.reportOffsets.withUnsafeBufferPointer { offsets in
                    c.reportRows.withUnsafeBufferPointer { rows in
                        matching(n) { i in
                            for k in Int(offsets[i])..<Int(offsets[i + 1]) where ages[Int(rows[k])] > 60 { return true }
                            return false
                        }
                    }
                }
            }
        }),
        ("age > 30 AND isManager == NO AND rating >= 2.5 AND nickname != nil", false, {
            c.ages.withUnsafeBufferPointer { ages in
                c.isManager.withUnsafeBufferPointer { isManager in
                    c.ratings.withUnsafeBufferPointer { ratings in
                        c.ratingValid.withUnsafeBufferPointer { ratingValid in
                            c.nicknameValid.withUnsafeBufferPointer { nicknameValid in
                                matching(n) { i in
                                    all(ages[i] > 30, !isManager[i], isSet(ratingValid, i), ratings[i] >= 2.5, isSet(nicknameValid, i))
                                }
                            }
                        }
                    }
                }
            }
        }),
        ("name CONTAINS[c] 'ann'", false, {
            let m = FoldedMatcher(pattern: Array("ann".utf8), options: ci)
            return c.names.withUnsafeBufferPointer { names in matching(n) { m.contains(names[$0]) } }
        }),
        ("age < 25 OR salary > 140000 OR manager == nil", true, {
            c.ages.withUnsafeBufferPointer { ages in
                c.salaries.withUnsafeBufferPointer { salaries in
                    c.manager.withUnsafeBufferPointer { manager in
                        matching(n) { any(ages[$0] < 25, salaries[$0] > 140_000, manager[$0] < 0) }
                    }
                }
            }
        }),
        ("reports.@count > 2", true, {
            c.reportOffsets.withUnsafeBufferPointer { offsets in matching(n) { offsets[$0 + 1] - offsets[$0] > 2 } }
        }),
        ("name CONTAINS[cd] 'ann'", false, {
            let m = FoldedMatcher(pattern: Array("ann".utf8), options: cd)
            return c.names.withUnsafeBufferPointer { names in matching(n) { m.contains(names[$0]) } }
        }),
        ("department.name == 'Sales'", true, {
            let sales = c.departmentNames.map { $0 == "Sales" }
            return c.department.withUnsafeBufferPointer { department in
                sales.withUnsafeBufferPointer { sales in
                    matching(n) { all(department[$0] >= 0, sales[Int(max(department[$0], 0))]) }
                }
            }
        }),
        ("ANY tags.name == 'remote'", true, {
            let remote = c.tagNames.map { $0 == "remote" }
            return c.tagOffsets.withUnsafeBufferPointer { offsets in
                c.tagRows.withUnsafeBufferPointer { rows in
                    remote.withUnsafeBufferPointer { remote in
                        matching(n) { i in
                            for k in Int(offsets[i])..<Int(offsets[i + 1]) where remote[Int(rows[k])] { return true }
                            return false
                        }
                    }
                }
            }
        }),
    ]
    report("== Compiled filters vs hand-written Swift loops over typed arrays: \(n) employees (\(nonASCII) non-ASCII names),",
           "columns kept, one core")
    var worst = (attribute: 0.0, relationship: 0.0, prefolded: 0.0)
    // SIFT_MEMORY_ONLY=text: only the predicates holding the text (to profile one).
    let only = ProcessInfo.processInfo.environment["SIFT_MEMORY_ONLY"]
    for (text, throughRelationship, loop) in cases where only.map(text.contains) ?? true {
        let filter = try! compiler.memoryPredicate(text, entity: "Employee", domain: domain)
        var expected: [Int] = []
        var actual: [Int] = []
        // The loops that fold names as they read them take a microsecond a name: fewer rounds.
        let (baseline, sift) = Measurement.compare(operations: n, rounds: prefoldedLoops[text] == nil ? 9 : 3, baseline: {
            expected = loop()
        }, candidate: {
            actual = try! filter.matchingRows(in: table)
        })
        precondition(actual == expected, "\(text): sift found \(actual.count), the loop \(expected.count)")
        let ratio = sift.nanosecondsPerOperation / baseline.nanosecondsPerOperation
        let target = throughRelationship ? 3.0 : 2.0
        if throughRelationship { worst.relationship = max(worst.relationship, ratio) } else { worst.attribute = max(worst.attribute, ratio) }
        var stricter = ""
        if let loop = prefoldedLoops[text] {
            var folded: [Int] = []
            let (limit, again) = Measurement.compare(operations: n, rounds: 9, baseline: {
                folded = loop()
            }, candidate: {
                actual = try! filter.matchingRows(in: table)
            })
            precondition(folded == expected, "\(text): the loop over folded names found \(folded.count), not \(expected.count)")
            let strict = again.nanosecondsPerOperation / limit.nanosecondsPerOperation
            worst.prefolded = max(worst.prefolded, strict)
            stricter = "; over names folded beforehand \(formatted(limit.nanosecondsPerOperation, digits: 2)) ns/object"
                + " = \(formatted(strict, digits: 3))x"
        }
        report(text.padding(toLength: 66, withPad: " ", startingAt: 0),
               "sift \(formatted(sift.nanosecondsPerOperation, digits: 2)) ns/object,",
               "loop \(formatted(baseline.nanosecondsPerOperation, digits: 2)) ns/object",
               "= \(formatted(ratio, digits: 3))x (target ≤ \(formatted(target, digits: 0))x)\(stricter)", "(\(actual.count) matches)")
    }
    report("worst, attributes: \(formatted(worst.attribute, digits: 3))x the loop (target ≤ 2x);",
           "through relationships: \(formatted(worst.relationship, digits: 3))x (target ≤ 3x);",
           "strings against names folded beforehand: \(formatted(worst.prefolded, digits: 3))x")
}

/// The typed-arrays section alone, on its own company.
func typedArraysSection() {
    let (cache, model) = makeCompanyCache(employees: 1_000_000)
    typedArraysBenchmark(snapshot: cache.snapshot(), model: model)
}
