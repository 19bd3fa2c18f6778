// Stage 6a (memory lowering): a predicate evaluated over a table's columns
// rather than node by node.
//
// Each comparison of an attribute with a constant runs as one tight loop
// over the attribute's typed column, 64 rows to a word of bits, skipping
// the words with no row still in question; through a to-one
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

    /// The rows whose bits are set in `words` (`(count + 63) / 64` of them,
    /// none past the last row).
    init(words: [UInt64], count: Int) {
        self.words = words
        self.count = count
    }

    var isEmpty: Bool { !words.contains { $0 != 0 } }

    mutating func formUnion(_ other: RowSet) {
        for index in words.indices { words[index] |= other.words[index] }
    }

    mutating func subtract(_ other: RowSet) {
        for index in words.indices { words[index] &= ~other.words[index] }
    }

    /// The rows in the set, in increasing order.
    var rows: [Int] {
        words.withUnsafeBufferPointer { words in
            var total = 0
            for word in words { total &+= word.nonzeroBitCount }
            return [Int](unsafeUninitializedCapacity: total) { buffer, initialized in
                var next = 0
                for index in 0..<words.count {
                    var word = words[index]
                    let base = index << 6
                    while word != 0 {
                        buffer[next] = base | word.trailingZeroBitCount
                        next &+= 1
                        word &= word &- 1
                    }
                }
                initialized = next
            }
        }
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

    /// The candidates for which `word(index, row, rows)` sets a bit: it
    /// gives the bits of rows `row ..< row + rows` (`rows` is 64 but in the
    /// last word), and is asked only for words with a candidate.
    @inline(__always)
    func select(_ word: (_ index: Int, _ row: Int, _ rows: Int) -> UInt64) -> RowSet {
        let count = count
        let selected = words.withUnsafeBufferPointer { candidates in
            [UInt64](unsafeUninitializedCapacity: candidates.count) { buffer, initialized in
                for index in 0..<candidates.count {
                    let candidate = candidates[index]
                    let row = index << 6
                    buffer[index] = candidate == 0 ? 0 : candidate & word(index, row, min(64, count &- row))
                }
                initialized = candidates.count
            }
        }
        return RowSet(words: selected, count: count)
    }

    /// The candidates for which `holds(row)` is true, asked only of the
    /// candidates (for tests that cost more than a few instructions).
    @inline(__always)
    func sparseSelect(_ holds: (Int) -> Bool) -> RowSet {
        select { index, row, _ in
            var candidates = words[index]
            var word: UInt64 = 0
            while candidates != 0 {
                let bit = candidates.trailingZeroBitCount
                if holds(row | bit) { word |= 1 << UInt64(bit) }
                candidates &= candidates &- 1
            }
            return word
        }
    }
}

/// The bits of 64 rows (fewer in the last word) for which `holds(row)` is
/// true, in a loop the compiler can unroll and vectorize.
@inline(__always)
func bits(_ row: Int, _ rows: Int, _ holds: (Int) -> Bool) -> UInt64 {
    var word: UInt64 = 0
    if rows == 64 {
        for bit in 0..<64 { word |= (holds(row &+ bit) ? 1 : 0) << UInt64(bit) }
    } else {
        for bit in 0..<rows { word |= (holds(row &+ bit) ? 1 : 0) << UInt64(bit) }
    }
    return word
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
            return columns(comparison, candidates) ?? nodeByNode(predicate, candidates)
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

    /// Which of `candidates` satisfy the comparison, as the shapes below
    /// allow; nil for the others.
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
                return rows.withUnsafeBufferPointer { rows in
                    candidates.select { _, row, count in bits(row, count) { (rows[$0] < 0) == wantNil } }
                }
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
            let counts = table.toManyCounts(slot: relationship.slot, destination: destination(relationship))
            let prepared = PreparedComparison(c.operator, c.options, right: constant)
            if case .int(let k) = constant, c.options.isEmpty,
               let selected = Kernels.integers(counts, nil, whenNil: false, c.operator, k, candidates) {
                return selected
            }
            let test = prepared.makeTest()
            return counts.withUnsafeBufferPointer { counts in candidates.sparseSelect { test(.int(counts[$0])) } }
        }
        guard case .attribute(let base, let attribute) = c.left.mappedAttribute ?? c.left.kind else { return nil }
        switch (c.quantifier, base.kind) {
        case (.direct, .evaluatedObject):
            return Self.compare(table, slot: attribute.slot, c, constant, candidates: candidates)
        case (.direct, .toOne(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let target = destination(relationship)
            let rows = table.toOneRows(slot: relationship.slot, destination: target)
            var holds = Self.compare(target, slot: attribute.slot, c, constant, candidates: RowSet(all: target.count)).words
            // A word to read for an empty destination (no row points into it).
            if holds.isEmpty { holds = [0] }
            let whenNil: UInt64 = PreparedComparison(c.operator, c.options, right: constant).test(.null) ? 1 : 0
            return rows.withUnsafeBufferPointer { rows in
                holds.withUnsafeBufferPointer { holds in
                    candidates.select { _, row, count in
                        bits(row, count) { row in
                            let destination = rows[row]
                            let at = Int(max(destination, 0))
                            let bit = holds[at >> 6] >> UInt64(at & 63) & 1
                            return (destination < 0 ? whenNil : bit) != 0
                        }
                    }
                }
            }
        case (.any, .toMany(let root, let relationship)), (.none, .toMany(let root, let relationship)),
             (.all, .toMany(let root, let relationship)):
            guard case .evaluatedObject = root.kind else { return nil }
            let target = destination(relationship)
            let links = table.toManyRows(slot: relationship.slot, destination: target)
            var holds = Self.compare(target, slot: attribute.slot, c, constant, candidates: RowSet(all: target.count)).words
            // ALL: no member fails; NONE: no member holds; ANY: some member holds.
            if c.quantifier == .all { for index in holds.indices { holds[index] = ~holds[index] } }
            let found = c.quantifier == .any
            return links.offsets.withUnsafeBufferPointer { offsets in
                links.rows.withUnsafeBufferPointer { members in
                    holds.withUnsafeBufferPointer { holds in
                        candidates.sparseSelect { row in
                            var k = offsets[row]
                            let end = offsets[row &+ 1]
                            while k < end {
                                let member = Int(members[k])
                                if holds[member >> 6] & (1 << UInt64(member & 63)) != 0 { return found }
                                k &+= 1
                            }
                            return !found
                        }
                    }
                }
            }
        default:
            return nil
        }
    }

    /// Which of `candidates` satisfy `attribute op constant` in `table`.
    static func compare(_ table: RowTable, slot: Int, _ c: BoundComparison, _ constant: PredicateValue,
                        candidates: RowSet) -> RowSet {
        let (op, options) = (c.operator, c.options)
        let prepared = PreparedComparison(op, options, right: constant)
        let whenNil = prepared.test(.null)
        let column = table.values(slot: slot)
        // `== nil`, `!= nil`: every value of a typed column answers as one of its type does.
        if constant == .null, op == .equalTo || op == .notEqualTo, let nulls = column.nulls, let sample = column.sample {
            let (ifNil, ifNotNil): (UInt64, UInt64) = (whenNil ? ~0 : 0, prepared.test(sample) ? ~0 : 0)
            return nulls.withUnsafeBufferPointer { nulls in
                candidates.select { index, _, _ in nulls[index] & ifNil | ~nulls[index] & ifNotNil }
            }
        }
        switch (column, constant) {
        case (.integers(let values, let nulls), .array(let bounds)) where options.isEmpty && op == .between:
            guard bounds.count == 2, case .int(let low) = bounds[0], case .int(let high) = bounds[1] else { break }
            return Kernels.integers(values, nulls, whenNil: whenNil, candidates) { $0 >= low && $0 <= high }
        case (.doubles(let values, let nulls, let nans), .array(let bounds)) where options.isEmpty && op == .between:
            guard bounds.count == 2, case .double(let low) = bounds[0], case .double(let high) = bounds[1],
                  !low.isNaN, !high.isNaN else { break }
            return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 >= low && $0 <= high }
        case (.integers(let values, let nulls), .int(let k)) where options.isEmpty:
            if let selected = Kernels.integers(values, nulls, whenNil: whenNil, op, k, candidates) { return selected }
        case (.doubles(let values, let nulls, let nans), .double(let k)) where options.isEmpty && !k.isNaN:
            switch op {
            case .equalTo: return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 == k }
            case .notEqualTo: return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 != k }
            case .lessThan: return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 < k }
            case .lessThanOrEqualTo: return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 <= k }
            case .greaterThan: return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 > k }
            case .greaterThanOrEqualTo:
                return Kernels.doubles(values, nulls, nans: nans, whenNil: whenNil, prepared, candidates) { $0 >= k }
            default: break
            }
        case (.booleans(let trues, let nulls), .bool(let k)) where options.isEmpty:
            if op == .equalTo || op == .notEqualTo {
                // Rows whose value is `k`, or is not.
                let flip: UInt64 = (k == (op == .equalTo)) ? 0 : ~0
                let ifNil: UInt64 = whenNil ? ~0 : 0
                return trues.withUnsafeBufferPointer { trues in
                    nulls.withUnsafeBufferPointer { nulls in
                        candidates.select { index, _, _ in
                            nulls[index] & ifNil | ~nulls[index] & (trues[index] ^ flip)
                        }
                    }
                }
            }
        case (.strings, .string(let k)):
            if let column = table.folded(slot: slot, options: options),
               let selected = Kernels.strings(column, op, Array(StringFolding.fold(k, options).utf8), whenNil: whenNil,
                                              candidates) {
                return selected
            }
        default:
            break
        }
        // Another shape: the prepared comparison, value by value.
        let test = prepared.makeTest()
        let nodes = table.nodes
        return candidates.sparseSelect { row in
            let values = nodes[row].values
            return test(slot < values.count ? values[slot] : .null)
        }
    }
}

/// The loops over typed columns. Each gives, for every candidate row, what
/// the prepared comparison gives its value (`whenNil` for a nil), 64 rows
/// a word.
enum Kernels {
    /// `value op k` over an integer column (no nil when `nulls` is nil);
    /// nil for an operator it does not answer.
    static func integers(_ values: [Int64], _ nulls: [UInt64]?, whenNil: Bool, _ op: ComparisonOperator, _ k: Int64,
                         _ candidates: RowSet) -> RowSet? {
        switch op {
        case .equalTo: integers(values, nulls, whenNil: whenNil, candidates) { $0 == k }
        case .notEqualTo: integers(values, nulls, whenNil: whenNil, candidates) { $0 != k }
        case .lessThan: integers(values, nulls, whenNil: whenNil, candidates) { $0 < k }
        case .lessThanOrEqualTo: integers(values, nulls, whenNil: whenNil, candidates) { $0 <= k }
        case .greaterThan: integers(values, nulls, whenNil: whenNil, candidates) { $0 > k }
        case .greaterThanOrEqualTo: integers(values, nulls, whenNil: whenNil, candidates) { $0 >= k }
        default: nil
        }
    }

    @inline(__always)
    static func integers(_ values: [Int64], _ nulls: [UInt64]?, whenNil: Bool, _ candidates: RowSet,
                         _ holds: (Int64) -> Bool) -> RowSet {
        let ifNil: UInt64 = whenNil ? ~0 : 0
        return values.withUnsafeBufferPointer { values in
            (nulls ?? []).withUnsafeBufferPointer { nulls in
                candidates.select { index, row, count in
                    let word = bits(row, count) { holds(values[$0]) }
                    guard !nulls.isEmpty else { return word }
                    return nulls[index] & ifNil | ~nulls[index] & word
                }
            }
        }
    }

    @inline(__always)
    static func doubles(_ values: [Double], _ nulls: [UInt64], nans: Bool, whenNil: Bool, _ test: PreparedComparison,
                        _ candidates: RowSet, _ holds: (Double) -> Bool) -> RowSet {
        let ifNil: UInt64 = whenNil ? ~0 : 0
        return values.withUnsafeBufferPointer { values in
            nulls.withUnsafeBufferPointer { nulls in
                candidates.select { index, row, count in
                    var word = bits(row, count) { holds(values[$0]) }
                    // NaN compares as the prepared comparison says.
                    var nanRows = nans ? bits(row, count) { values[$0].isNaN } & ~nulls[index] : 0
                    while nanRows != 0 {
                        let bit = nanRows.trailingZeroBitCount
                        let mask: UInt64 = 1 << UInt64(bit)
                        word = test.test(.double(values[row | bit])) ? word | mask : word & ~mask
                        nanRows &= nanRows &- 1
                    }
                    return nulls[index] & ifNil | ~nulls[index] & word
                }
            }
        }
    }

    /// A string operator over folded strings and the folded constant, by
    /// their UTF-8 bytes (as `StringMatching` and `compareUTF8` compare
    /// them); nil for an operator it does not answer.
    static func strings(_ column: StringColumn, _ op: ComparisonOperator, _ pattern: [UInt8], whenNil: Bool,
                        _ candidates: RowSet) -> RowSet? {
        pattern.withUnsafeBufferPointer { pattern in
            let p = pattern.baseAddress ?? UnsafePointer(bitPattern: 1)!
            let m = pattern.count
            func order(_ s: UnsafePointer<UInt8>, _ n: Int) -> Int {
                let shorter = min(n, m)
                let order = shorter == 0 ? 0 : Int(memcmp(s, p, shorter))
                return order != 0 ? order : (n < m ? -1 : (n > m ? 1 : 0))
            }
            switch op {
            case .equalTo: return strings(column, whenNil: whenNil, candidates) { s, n in n == m && same(s, p, m) }
            case .notEqualTo: return strings(column, whenNil: whenNil, candidates) { s, n in !(n == m && same(s, p, m)) }
            case .lessThan: return strings(column, whenNil: whenNil, candidates) { order($0, $1) < 0 }
            case .lessThanOrEqualTo: return strings(column, whenNil: whenNil, candidates) { order($0, $1) <= 0 }
            case .greaterThan: return strings(column, whenNil: whenNil, candidates) { order($0, $1) > 0 }
            case .greaterThanOrEqualTo: return strings(column, whenNil: whenNil, candidates) { order($0, $1) >= 0 }
            case .beginsWith:
                return strings(column, whenNil: whenNil, candidates) { s, n in m > 0 && n >= m && same(s, p, m) }
            case .endsWith:
                return strings(column, whenNil: whenNil, candidates) { s, n in m > 0 && n >= m && same(s + (n - m), p, m) }
            case .contains: return strings(column, whenNil: whenNil, candidates) { s, n in m > 0 && occurs(p, m, in: s, n) }
            // `value IN "constant"`: the value is a substring of the constant.
            case .in: return strings(column, whenNil: whenNil, candidates) { s, n in n > 0 && occurs(s, n, in: p, m) }
            default: return nil
            }
        }
    }

    /// `holds(bytes, count)` for each candidate row's string.
    @inline(__always)
    static func strings(_ column: StringColumn, whenNil: Bool, _ candidates: RowSet,
                        _ holds: (UnsafePointer<UInt8>, Int) -> Bool) -> RowSet {
        let ifNil: UInt64 = whenNil ? ~0 : 0
        return column.bytes.withUnsafeBufferPointer { bytes in
            column.offsets.withUnsafeBufferPointer { offsets in
                column.nulls.withUnsafeBufferPointer { nulls in
                    let base = bytes.baseAddress ?? UnsafePointer(bitPattern: 1)!
                    return candidates.select { index, row, _ in
                        // The rows to read: candidates that are not nil.
                        var rows = candidates.words[index] & ~nulls[index]
                        var word: UInt64 = 0
                        while rows != 0 {
                            let bit = rows.trailingZeroBitCount
                            let start = offsets[row | bit]
                            if holds(base + start, offsets[row | bit &+ 1] &- start) { word |= 1 << UInt64(bit) }
                            rows &= rows &- 1
                        }
                        return nulls[index] & ifNil | word
                    }
                }
            }
        }
    }

    /// Whether the `m` bytes at `a` and at `b` are the same.
    @inline(__always)
    static func same(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ m: Int) -> Bool {
        var i = 0
        while i < m {
            if a[i] != b[i] { return false }
            i &+= 1
        }
        return true
    }

    /// Whether the `m` bytes at `needle` occur in the `n` bytes at `haystack` (`m > 0`).
    @inline(__always)
    static func occurs(_ needle: UnsafePointer<UInt8>, _ m: Int, in haystack: UnsafePointer<UInt8>, _ n: Int) -> Bool {
        guard m <= n else { return false }
        let first = needle[0]
        var i = 0
        let last = n &- m
        #if _endian(little)
        // Eight places at a time: the bytes equal to the needle's first are
        // found in one word (the zero-byte test can also flag a byte above a
        // real one: every flagged place is compared in full).
        let ones: UInt64 = 0x0101_0101_0101_0101
        let firsts = UInt64(first) &* ones
        while i &+ 8 <= last &+ 1 {
            let word = UnsafeRawPointer(haystack + i).loadUnaligned(as: UInt64.self) ^ firsts
            var places = (word &- ones) & ~word & (ones &<< 7)
            while places != 0 {
                if same(haystack + (i &+ places.trailingZeroBitCount &>> 3), needle, m) { return true }
                places &= places &- 1
            }
            i &+= 8
        }
        #endif
        while i <= last {
            if haystack[i] == first, same(haystack + i + 1, needle + 1, m &- 1) { return true }
            i &+= 1
        }
        return false
    }
}
