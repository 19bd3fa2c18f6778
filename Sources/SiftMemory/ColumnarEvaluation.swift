// Stage 6a (memory lowering): a predicate evaluated over a table's columns
// rather than node by node.
//
// Each comparison of an attribute with a constant runs as one tight loop
// over the attribute's typed column, for the whole table; through a to-one
// relationship, over the destination's column, read back by row; through a
// to-many relationship (`ANY`, `ALL`, `NONE`, `@count`), over the members'
// rows. AND narrows the rows still to test, OR tests only the rows not yet
// selected, and anything else (functions, arithmetic, SUBQUERY, …) is
// compiled as before and run on the rows still in question. Every answer is
// the node-by-node evaluator's: a nil row gets what the comparison gives
// nil, a value of another type goes through the same prepared comparison.

import Foundation
import SiftModel
import SiftTree
import SiftValues

extension MemoryPredicate where Domain == RowNodeDomain {
    /// The nodes of `table` that satisfy the predicate, in the table's order,
    /// evaluated column by column (the columns read are kept with the table
    /// for the next predicate).
    ///
    /// A predicate with `MATCHES` or `LIKE` is evaluated node by node, so
    /// that its pattern budget is spent in the same order as
    /// ``filter(_:)->[Domain.Object]``.
    ///
    /// - Parameter table: The nodes to test, from the snapshot of the
    ///   predicate's domain (`RowSnapshot.table(entity:)`).
    /// - Returns: The nodes that satisfy the predicate, in the table's order.
    /// - Throws: `EvaluationError` as ``filter(_:)->[Domain.Object]`` throws it.
    public func filter(_ table: RowTable) throws(EvaluationError) -> [RowNode] {
        try matchingRows(in: table).map { table.nodes[$0] }
    }

    /// The rows of `table` that satisfy the predicate, in increasing order,
    /// evaluated column by column.
    ///
    /// - Parameter table: The nodes to test, from the snapshot of the
    ///   predicate's domain.
    /// - Returns: The indices in `table.nodes` of the nodes that satisfy the predicate.
    /// - Throws: `EvaluationError` as ``filter(_:)->[Domain.Object]`` throws it.
    public func matchingRows(in table: RowTable) throws(EvaluationError) -> [Int] {
        guard !mayFail else { return try matchingIndices(count: table.count) { table.nodes[$0] } }
        let evaluator = ColumnarEvaluator(domain: domain, table: table)
        return evaluator.evaluate(source, RowSet(all: table.count)).rows
    }
}

/// A set of a table's rows, one bit a row.
struct RowSet {
    var words: [UInt64]
    let count: Int

    /// Every row of a table of `count` rows, or none of them.
    init(all count: Int, included: Bool = true) {
        self.count = count
        words = Array(repeating: included ? ~0 : 0, count: (count + 63) / 64)
        if included, count % 64 != 0 { words[words.count - 1] = (1 << UInt64(count % 64)) - 1 }
    }

    /// The rows for which `holds` is true, asked row by row in order.
    @inline(__always)
    init(count: Int, _ holds: (Int) -> Bool) {
        self.count = count
        words = [UInt64](unsafeUninitializedCapacity: (count + 63) / 64) { buffer, initialized in
            var row = 0
            for index in 0..<buffer.count {
                var word: UInt64 = 0
                let end = min(row + 64, count)
                var bit: UInt64 = 0
                while row < end {
                    word |= (holds(row) ? 1 : 0) << bit
                    bit += 1
                    row += 1
                }
                buffer[index] = word
            }
            initialized = buffer.count
        }
    }

    subscript(row: Int) -> Bool { words[row >> 6] & (1 << UInt64(row & 63)) != 0 }

    var isEmpty: Bool { !words.contains { $0 != 0 } }

    mutating func formIntersection(_ other: RowSet) {
        for index in words.indices { words[index] &= other.words[index] }
    }

    mutating func formUnion(_ other: RowSet) {
        for index in words.indices { words[index] |= other.words[index] }
    }

    mutating func subtract(_ other: RowSet) {
        for index in words.indices { words[index] &= ~other.words[index] }
    }

    /// The rows in the set, in increasing order.
    var rows: [Int] {
        var rows: [Int] = []
        forEach { rows.append($0) }
        return rows
    }

    /// Calls `body` with each row in the set, in increasing order.
    @inline(__always)
    func forEach(_ body: (Int) -> Void) {
        for (index, var word) in words.enumerated() {
            while word != 0 {
                body(index << 6 | word.trailingZeroBitCount)
                word &= word - 1
            }
        }
    }
}

/// Evaluates a predicate (without patterns: it cannot fail) over the rows
/// of one table.
struct ColumnarEvaluator {
    let domain: RowNodeDomain
    let table: RowTable

    /// Which of `candidates` satisfy `predicate` (a subset of them).
    func evaluate(_ predicate: BoundPredicate, _ candidates: RowSet) -> RowSet {
        switch predicate {
        case .constant(let holds):
            return holds ? candidates : RowSet(all: candidates.count, included: false)
        case .and(let operands):
            var remaining = candidates
            for operand in operands {
                remaining = evaluate(operand, remaining)
                if remaining.isEmpty { break }
            }
            return remaining
        case .or(let operands):
            var selected = RowSet(all: candidates.count, included: false)
            var remaining = candidates
            for operand in operands {
                let holds = evaluate(operand, remaining)
                selected.formUnion(holds)
                remaining.subtract(holds)
                if remaining.isEmpty { break }
            }
            return selected
        case .not(let operand):
            var selected = candidates
            selected.subtract(evaluate(operand, candidates))
            return selected
        case .comparison(let comparison):
            if let holds = columns(comparison, candidates) {
                var selected = candidates
                selected.formIntersection(holds)
                return selected
            }
            return nodeByNode(predicate, candidates)
        case .exists:
            return nodeByNode(predicate, candidates)
        }
    }

    /// The node-by-node evaluator, on the candidate rows.
    func nodeByNode(_ predicate: BoundPredicate, _ candidates: RowSet) -> RowSet {
        let compiled = MemoryPredicate(predicate, domain: domain)
        var scope = EvaluationScope<RowNode>(slots: Array(repeating: nil, count: compiled.slotCount))
        var selected = RowSet(all: candidates.count, included: false)
        let nodes = table.nodes
        candidates.forEach { row in
            if compiled.test(nodes[row], &scope) { selected.words[row >> 6] |= 1 << UInt64(row & 63) }
        }
        return selected
    }

    /// The root table a relationship leads to.
    func destination(_ relationship: RelationshipReference) -> RowTable {
        let index = domain.handle(for: relationship).destination
        return domain.snapshot.rootTable(domain.snapshot.roots[index])
    }

    /// The comparison over every row (or, where it reads nodes one by one,
    /// over the candidates), as the shapes below allow; nil for the others.
    func columns(_ c: BoundComparison, _ candidates: RowSet) -> RowSet? {
        // `toOne == nil`, `nil != toOne`: whether the destination is there.
        if c.quantifier == .direct, c.operator == .equalTo || c.operator == .notEqualTo {
            for (objectSide, other) in [(c.left, c.right), (c.right, c.left)] {
                guard case .object = objectSide.type, case .constant(.null) = other.kind else { continue }
                guard case .toOne(let base, let relationship) = objectSide.kind, case .evaluatedObject = base.kind else {
                    return nil
                }
                let rows = table.toOneRows(slot: relationship.slot, destination: destination(relationship))
                let wantNil = c.operator == .equalTo
                return rows.withUnsafeBufferPointer { rows in RowSet(count: rows.count) { (rows[$0] < 0) == wantNil } }
            }
        }
        // A constant, or a list of constants (`BETWEEN {30, 40}`, `IN {…}`) as one array.
        let constant: PredicateValue
        switch c.right.kind {
        case .constant(let value): constant = value
        case .list(let elements) where elements.allSatisfy({ $0.constantValue != nil }):
            constant = .array(elements.compactMap(\.constantValue))
        default: return nil
        }
        // A collection on the left (`CONTAINS` as membership): node by node.
        if c.quantifier == .direct, c.left.type.isCollection { return nil }
        // `toMany.@count op constant`: the members each row has in the snapshot.
        if c.quantifier == .direct, case .aggregate(.count, let collection) = c.left.kind,
           case .collection(.object) = collection.type, case .toMany(let base, let relationship) = collection.kind,
           case .evaluatedObject = base.kind {
            let links = table.toManyRows(slot: relationship.slot, destination: destination(relationship))
            let test = PreparedComparison(c.operator, c.options, right: constant).makeTest()
            return RowSet(count: table.count) { test(.int(Int64(links.offsets[$0 + 1] - links.offsets[$0]))) }
        }
        guard case .attribute(let base, let attribute) = c.left.mappedAttribute ?? c.left.kind else { return nil }
        switch (c.quantifier, base.kind) {
        case (.direct, .evaluatedObject):
            return Self.compare(table, slot: attribute.slot, c, constant, candidates: candidates)
        case (.direct, .toOne(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let target = destination(relationship)
            let rows = table.toOneRows(slot: relationship.slot, destination: target)
            let holds = Self.compare(target, slot: attribute.slot, c, constant, candidates: nil)
            let whenNil = PreparedComparison(c.operator, c.options, right: constant).test(.null)
            return rows.withUnsafeBufferPointer { rows in
                RowSet(count: rows.count) { rows[$0] >= 0 ? holds[Int(rows[$0])] : whenNil }
            }
        case (.any, .toMany(let root, let relationship)), (.none, .toMany(let root, let relationship)),
             (.all, .toMany(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let target = destination(relationship)
            let links = table.toManyRows(slot: relationship.slot, destination: target)
            let holds = Self.compare(target, slot: attribute.slot, c, constant, candidates: nil)
            let quantifier = c.quantifier
            return RowSet(count: table.count) { row in
                let members = links.rows[links.offsets[row]..<links.offsets[row + 1]]
                switch quantifier {
                case .any: return members.contains { holds[Int($0)] }
                case .none: return !members.contains { holds[Int($0)] }
                default: return members.allSatisfy { holds[Int($0)] }
                }
            }
        default:
            return nil
        }
    }

    /// `attribute op constant` for each row of `table` (only the candidate
    /// rows, when given, where values are read node by node).
    static func compare(_ table: RowTable, slot: Int, _ c: BoundComparison, _ constant: PredicateValue,
                        candidates: RowSet?) -> RowSet {
        let (op, options) = (c.operator, c.options)
        let prepared = PreparedComparison(op, options, right: constant)
        let whenNil = prepared.test(.null)
        let column = table.values(slot: slot)
        // `== nil`, `!= nil`: every value of a typed column answers as one of its type does.
        if constant == .null, op == .equalTo || op == .notEqualTo, let nulls = column.nulls, let sample = column.sample {
            let whenNotNil = prepared.test(sample)
            return nulls.withUnsafeBufferPointer { nulls in RowSet(count: nulls.count) { nulls[$0] ? whenNil : whenNotNil } }
        }
        switch (column, constant) {
        case (.integers(let values, let nulls), .array(let bounds)) where options.isEmpty && op == .between:
            guard bounds.count == 2, case .int(let low) = bounds[0], case .int(let high) = bounds[1] else { break }
            return Kernels.integers(values, nulls, whenNil: whenNil) { $0 >= low && $0 <= high }
        case (.doubles(let values, let nulls), .array(let bounds)) where options.isEmpty && op == .between:
            guard bounds.count == 2, case .double(let low) = bounds[0], case .double(let high) = bounds[1],
                  !low.isNaN, !high.isNaN else { break }
            return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 >= low && $0 <= high }
        case (.integers(let values, let nulls), .int(let k)) where options.isEmpty:
            switch op {
            case .equalTo: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 == k }
            case .notEqualTo: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 != k }
            case .lessThan: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 < k }
            case .lessThanOrEqualTo: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 <= k }
            case .greaterThan: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 > k }
            case .greaterThanOrEqualTo: return Kernels.integers(values, nulls, whenNil: whenNil) { $0 >= k }
            default: break
            }
        case (.doubles(let values, let nulls), .double(let k)) where options.isEmpty && !k.isNaN:
            switch op {
            case .equalTo: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 == k }
            case .notEqualTo: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 != k }
            case .lessThan: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 < k }
            case .lessThanOrEqualTo: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 <= k }
            case .greaterThan: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 > k }
            case .greaterThanOrEqualTo: return Kernels.doubles(values, nulls, whenNil: whenNil, prepared) { $0 >= k }
            default: break
            }
        case (.booleans(let values, let nulls), .bool(let k)) where options.isEmpty:
            if op == .equalTo || op == .notEqualTo {
                let want = op == .equalTo
                return RowSet(count: values.count) { nulls[$0] ? whenNil : (values[$0] == k) == want }
            }
        case (.strings, .string(let k)):
            if Kernels.stringOperators.contains(op), let column = table.folded(slot: slot, options: options) {
                return Kernels.strings(column, op, Array(StringFolding.fold(k, options).utf8), whenNil: whenNil)
            }
        default:
            break
        }
        // Another shape: the prepared comparison, value by value.
        let test = prepared.makeTest()
        let nodes = table.nodes
        func holds(_ row: Int) -> Bool {
            let values = nodes[row].values
            return test(slot < values.count ? values[slot] : .null)
        }
        guard let candidates else { return RowSet(count: nodes.count, holds) }
        var selected = RowSet(all: nodes.count, included: false)
        candidates.forEach { row in if holds(row) { selected.words[row >> 6] |= 1 << UInt64(row & 63) } }
        return selected
    }
}

/// The loops over typed columns. Each gives, for every row, what the
/// prepared comparison gives its value (`whenNil` for a nil).
enum Kernels {
    @inline(__always)
    static func integers(_ values: [Int64], _ nulls: [Bool], whenNil: Bool, _ holds: (Int64) -> Bool) -> RowSet {
        values.withUnsafeBufferPointer { values in
            nulls.withUnsafeBufferPointer { nulls in
                RowSet(count: values.count) { nulls[$0] ? whenNil : holds(values[$0]) }
            }
        }
    }

    @inline(__always)
    static func doubles(_ values: [Double], _ nulls: [Bool], whenNil: Bool, _ test: PreparedComparison,
                        _ holds: (Double) -> Bool) -> RowSet {
        values.withUnsafeBufferPointer { values in
            nulls.withUnsafeBufferPointer { nulls in
                RowSet(count: values.count) { row in
                    let x = values[row]
                    // NaN compares as the prepared comparison says.
                    return nulls[row] ? whenNil : (x.isNaN ? test.test(.double(x)) : holds(x))
                }
            }
        }
    }

    /// The operators a folded string column answers with bytes.
    static let stringOperators: Set<ComparisonOperator> = [
        .equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo,
        .beginsWith, .endsWith, .contains, .in,
    ]

    /// A string operator over folded strings and the folded constant, by
    /// their UTF-8 bytes (as `StringMatching` and `compareUTF8` compare them).
    static func strings(_ column: StringColumn, _ op: ComparisonOperator, _ pattern: [UInt8], whenNil: Bool) -> RowSet {
        column.bytes.withUnsafeBufferPointer { bytes in
            pattern.withUnsafeBufferPointer { pattern in
                column.offsets.withUnsafeBufferPointer { offsets in
                    column.nulls.withUnsafeBufferPointer { nulls in
                        let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
                        let p = pattern.baseAddress ?? UnsafePointer(bitPattern: 1)!
                        let m = pattern.count
                        func order(_ s: UnsafePointer<UInt8>, _ n: Int) -> Int {
                            let shorter = min(n, m)
                            let order = shorter == 0 ? 0 : Int(memcmp(s, p, shorter))
                            return order != 0 ? order : (n < m ? -1 : (n > m ? 1 : 0))
                        }
                        return RowSet(count: nulls.count) { row in
                            if nulls[row] { return whenNil }
                            let start = offsets[row]
                            let n = offsets[row + 1] - start
                            let s = base + start
                            switch op {
                            case .equalTo: return n == m && (m == 0 || memcmp(s, p, m) == 0)
                            case .notEqualTo: return !(n == m && (m == 0 || memcmp(s, p, m) == 0))
                            case .lessThan: return order(s, n) < 0
                            case .lessThanOrEqualTo: return order(s, n) <= 0
                            case .greaterThan: return order(s, n) > 0
                            case .greaterThanOrEqualTo: return order(s, n) >= 0
                            case .beginsWith: return m > 0 && n >= m && memcmp(s, p, m) == 0
                            case .endsWith: return m > 0 && n >= m && memcmp(s + (n - m), p, m) == 0
                            case .contains: return m > 0 && occurs(p, m, in: s, n)
                            // `value IN "constant"`: the value is a substring of the constant.
                            default: return n > 0 && occurs(s, n, in: p, m)
                            }
                        }
                    }
                }
            }
        }
    }

    /// Whether the `m` bytes at `needle` occur in the `n` bytes at `haystack` (`m > 0`).
    @inline(__always)
    static func occurs(_ needle: UnsafePointer<UInt8>, _ m: Int, in haystack: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        guard m <= n else { return false }
        let first = needle[0]
        var i = 0
        while i <= n - m {
            if haystack[i] == first, memcmp(haystack + i, needle, m) == 0 { return true }
            i += 1
        }
        return false
    }
}
