// Stage 6a (memory lowering): the nodes of one entity in a snapshot, laid out
// by column as predicates read them.
//
// A table is the snapshot's nodes of an entity in primary-key order. Each
// column is made the first time a predicate reads it and kept with the
// table: an attribute's values in a typed buffer (integers, doubles,
// booleans, strings as one byte buffer with offsets) and a null mask; a
// string column folded by `[c]`, `[d]` or `[cd]` (each stored string folded
// once, as the SQL store's companion columns hold them); a to-one
// relationship as the destination's row in its root's table; a to-many
// relationship as its members' rows. The snapshot keeps its tables, and a
// row cache hands out the same snapshot (and so the same columns) until its
// nodes change.

import Foundation
import SiftModel
import SiftValues

/// The nodes of one entity (and its subentities) in a snapshot, in
/// primary-key order, with their values laid out by column for
/// ``MemoryPredicate/filter(_:)->[RowNode]``.
///
/// ```swift
/// let snapshot = cache.snapshot()
/// let employees = snapshot.table(entity: employee.index)   // made once per snapshot, columns as they are read
/// let adults = try MemoryPredicate(bound, domain: RowNodeDomain(snapshot: snapshot)).filter(employees)
/// ```
public final class RowTable: @unchecked Sendable {
    /// The table's nodes, in primary-key order.
    public let nodes: [RowNode]
    /// The index in the model of the entity whose nodes the table holds.
    public let entity: Int

    private let lock = NSLock()
    private var valueColumns: [Int: ValueColumn] = [:]
    private var foldedColumns: [Int: StringColumn] = [:]
    private var rowOfKey: [Int64: Int32]?
    private var toOneColumns: [Int: [Int32]] = [:]
    private var toManyColumns: [Int: LinkColumn] = [:]
    private var toManyCountColumns: [Int: [Int64]] = [:]

    init(entity: Int, nodes: [RowNode]) {
        self.entity = entity
        self.nodes = nodes
    }

    /// How many rows the table has.
    public var count: Int { nodes.count }

    /// Reads a cached column, or makes it outside the lock (making one may
    /// read another table, or this one) and keeps the first one made.
    private func cached<Key: Hashable, Column>(_ key: Key, _ columns: ReferenceWritableKeyPath<RowTable, [Key: Column]>,
                                               make: () -> Column) -> Column {
        lock.lock()
        if let column = self[keyPath: columns][key] {
            lock.unlock()
            return column
        }
        lock.unlock()
        let made = make()
        lock.lock()
        defer { lock.unlock() }
        if let column = self[keyPath: columns][key] { return column }
        self[keyPath: columns][key] = made
        return made
    }

    /// The values of the attribute in `slot`, typed when every value that is
    /// not nil has one type (a node without the slot reads as nil).
    func values(slot: Int) -> ValueColumn {
        cached(slot, \.valueColumns) { ValueColumn(nodes, slot: slot) }
    }

    /// The strings of the attribute in `slot` folded by `options` (`[c]`,
    /// `[d]`), or nil when some value is neither a string nor nil.
    func folded(slot: Int, options: ComparisonOptions) -> StringColumn? {
        let flags = options.foldingFlags
        if flags == 0 {
            if case .strings(let column) = values(slot: slot) { return column }
            return nil
        }
        guard case .strings = values(slot: slot) else { return nil }
        return cached(slot &* 4 &+ flags, \.foldedColumns) {
            StringColumn(nodes.map { node -> String? in
                guard case .string(let s) = node.value(at: slot) else { return nil }
                return StringFolding.fold(s, options)
            })
        }
    }

    /// The row of each primary key.
    func row(ofKey key: Int64) -> Int32? {
        lock.lock()
        if let rowOfKey {
            lock.unlock()
            return rowOfKey[key]
        }
        lock.unlock()
        var made: [Int64: Int32] = [:]
        made.reserveCapacity(nodes.count)
        for (row, node) in nodes.enumerated() { made[node.id.primaryKey] = Int32(truncatingIfNeeded: row) }
        lock.lock()
        defer { lock.unlock() }
        if rowOfKey == nil { rowOfKey = made }
        return rowOfKey?[key]
    }

    /// For each row, the row in `destination` (its root's table) of the
    /// to-one relationship in `slot`; -1 when it is empty or its node is
    /// not in the snapshot.
    func toOneRows(slot: Int, destination: RowTable) -> [Int32] {
        cached(slot, \.toOneColumns) {
            nodes.map { node in
                guard let key = node.toOneKey(at: slot) else { return -1 }
                return destination.row(ofKey: key) ?? -1
            }
        }
    }

    /// For each row, the rows in `destination` (its root's table) of the
    /// to-many relationship in `slot` that the snapshot holds, in the
    /// relationship's order (none when the relationship is not loaded).
    func toManyRows(slot: Int, destination: RowTable) -> LinkColumn {
        cached(slot, \.toManyColumns) {
            var offsets: [Int] = [0]
            offsets.reserveCapacity(nodes.count + 1)
            var rows: [Int32] = []
            for node in nodes {
                if let keys = node.toManyKeys(at: slot) {
                    for key in keys { if let row = destination.row(ofKey: key) { rows.append(row) } }
                }
                offsets.append(rows.count)
            }
            return LinkColumn(offsets: offsets, rows: rows)
        }
    }

    /// For each row, how many members of the to-many relationship in `slot`
    /// the snapshot holds.
    func toManyCounts(slot: Int, destination: RowTable) -> [Int64] {
        cached(slot, \.toManyCountColumns) {
            let offsets = toManyRows(slot: slot, destination: destination).offsets
            return (0..<nodes.count).map { Int64(offsets[$0 + 1] - offsets[$0]) }
        }
    }
}

/// The rows of a table as bits, 64 rows a word (row `i` is bit `i % 64`
/// of word `i / 64`).
enum RowBits {
    /// The words for `count` rows, none set.
    static func none(_ count: Int) -> [UInt64] { Array(repeating: 0, count: (count + 63) / 64) }

    /// Sets row `row`'s bit.
    @inline(__always)
    static func set(_ words: inout [UInt64], _ row: Int) { words[row >> 6] |= 1 << UInt64(row & 63) }
}

/// The members of a to-many relationship of each row: rows `offsets[i]
/// ..< offsets[i + 1]` of `rows` are row `i`'s.
struct LinkColumn {
    let offsets: [Int]
    let rows: [Int32]
}

/// One attribute's values over a table's rows; which rows are nil as
/// `RowBits` (a nil row's value is zero or false).
enum ValueColumn {
    /// Integers, and which rows are nil.
    case integers([Int64], nulls: [UInt64])
    /// Doubles, which rows are nil, and whether some value is NaN.
    case doubles([Double], nulls: [UInt64], nans: Bool)
    /// Booleans as `RowBits` of the true rows, and which rows are nil.
    case booleans(trues: [UInt64], nulls: [UInt64])
    /// Strings (nil rows among them).
    case strings(StringColumn)
    /// Values of several types: read from the nodes.
    case mixed

    /// Which rows are nil, for a typed column.
    var nulls: [UInt64]? {
        switch self {
        case .integers(_, let nulls), .doubles(_, let nulls, _), .booleans(_, let nulls): nulls
        case .strings(let column): column.nulls
        case .mixed: nil
        }
    }

    /// A value of the column's type (what every value of it is, compared with nil).
    var sample: PredicateValue? {
        switch self {
        case .integers: .int(0)
        case .doubles: .double(0)
        case .booleans: .bool(false)
        case .strings: .string("")
        case .mixed: nil
        }
    }

    init(_ nodes: [RowNode], slot: Int) {
        func value(_ node: RowNode) -> PredicateValue { node.value(at: slot) }
        guard let first = nodes.lazy.map(value).first(where: { $0 != .null }) else {
            self = .integers(Array(repeating: 0, count: nodes.count), nulls: RowSet(all: nodes.count).words)
            return
        }
        /// The values as `T` (nil rows as `zero`) and which rows are nil; nil when a value is of another type.
        func typed<T>(_ zero: T, _ cast: (PredicateValue) -> T?) -> (values: [T], nulls: [UInt64])? {
            var column = [T](repeating: zero, count: nodes.count)
            var nulls = RowBits.none(nodes.count)
            for (row, node) in nodes.enumerated() {
                let element = value(node)
                if case .null = element {
                    RowBits.set(&nulls, row)
                } else if let x = cast(element) {
                    column[row] = x
                } else {
                    return nil
                }
            }
            return (column, nulls)
        }
        switch first {
        case .int:
            self = typed(Int64(0)) { if case .int(let x) = $0 { x } else { nil } }.map { .integers($0, nulls: $1) } ?? .mixed
        case .double:
            self = typed(Double(0)) { if case .double(let x) = $0 { x } else { nil } }.map { .doubles($0, nulls: $1, nans: $0.contains { $0.isNaN }) } ?? .mixed
        case .bool:
            self = typed(false) { if case .bool(let x) = $0 { x } else { nil } }.map { values, nulls in
                var trues = RowBits.none(values.count)
                for (row, value) in values.enumerated() where value { RowBits.set(&trues, row) }
                return .booleans(trues: trues, nulls: nulls)
            } ?? .mixed
        case .string:
            self = typed("") { if case .string(let x) = $0 { x } else { nil } }
                .map { strings, nulls in
                    .strings(StringColumn((0..<strings.count).map { nulls[$0 >> 6] & (1 << UInt64($0 & 63)) != 0 ? nil : strings[$0] }))
                } ?? .mixed
        default:
            self = .mixed
        }
    }
}

/// Strings in one byte buffer: row `i`'s UTF-8 bytes are
/// `bytes[offsets[i] ..< offsets[i + 1]]`, unless row `i` is set in
/// `nulls` (`RowBits`).
struct StringColumn {
    let bytes: [UInt8]
    let offsets: [Int]
    let nulls: [UInt64]

    init(_ strings: [String?]) {
        var bytes: [UInt8] = []
        var offsets: [Int] = [0]
        offsets.reserveCapacity(strings.count + 1)
        var nulls = RowBits.none(strings.count)
        for (row, string) in strings.enumerated() {
            if let string { bytes.append(contentsOf: string.utf8) } else { RowBits.set(&nulls, row) }
            offsets.append(bytes.count)
        }
        self.bytes = bytes
        self.offsets = offsets
        self.nulls = nulls
    }
}

/// The tables of a snapshot, made as they are asked for.
package final class ColumnStore: @unchecked Sendable {
    private let lock = NSLock()
    /// The table of each entity's nodes (its subentities' too), by entity index.
    private var ofEntity: [Int: RowTable] = [:]
    /// The table of each root entity's table: every node in it, by root index.
    private var ofRoot: [Int: RowTable] = [:]

    package init() {}

    func table(_ key: Int, root: Bool, make: () -> RowTable) -> RowTable {
        lock.lock()
        if let table = root ? ofRoot[key] : ofEntity[key] {
            lock.unlock()
            return table
        }
        lock.unlock()
        let made = make()
        lock.lock()
        defer { lock.unlock() }
        if let table = root ? ofRoot[key] : ofEntity[key] { return table }
        if root { ofRoot[key] = made } else { ofEntity[key] = made }
        return made
    }
}

extension RowSnapshot {
    /// The same nodes with none of their columns made yet (what making
    /// them costs is measured on such a snapshot).
    package var withoutColumns: RowSnapshot { RowSnapshot(tables: tables, model: model, roots: roots) }

    /// The nodes of an entity and its subentities, in primary-key order, as
    /// a table whose columns predicates read (made once per snapshot).
    ///
    /// - Parameter entity: The index of the entity in the model.
    /// - Returns: The table of the entity's nodes.
    public func table(entity: Int) -> RowTable {
        let root = roots[entity]
        if root == entity, model.entities[entity].subentities.isEmpty { return rootTable(root) }
        return columnar.table(entity, root: false) { RowTable(entity: entity, nodes: nodes(entity: entity)) }
    }

    /// Every node of a root entity's table (whichever entity of the table
    /// each is), in primary-key order: where relationships to the root or
    /// its subentities lead.
    func rootTable(_ root: Int) -> RowTable {
        columnar.table(root, root: true) {
            RowTable(entity: root, nodes: tables[root].nodes)
        }
    }
}
