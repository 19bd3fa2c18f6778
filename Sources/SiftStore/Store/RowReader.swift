// Store stage: reading a row statement's columns into a row-cache node, as
// the schema's row layout says — the attributes and to-one keys of the
// entity the row is (one of several when the fetched entity has subentities).
// Every SQL backend reads its rows through it: SQLite from its statement,
// PostgreSQL from the values a row came back with.

import Foundation
import Sift

/// One row of a result, as a SQL backend reads it: columns by index.
package protocol StoreRow {
    /// Column `index` as a value of an attribute of `type`.
    func value(_ index: Int, as type: AttributeType) -> PredicateValue
    /// Column `index` as an integer (0 when NULL).
    func integer(_ index: Int) -> Int64
    /// Whether column `index` is NULL.
    func isNull(_ index: Int) -> Bool
    /// Adds column `index`, as a value of an attribute of `type`, to a
    /// batch's column: the value `value(_:as:)` gives.
    func append(_ index: Int, as type: AttributeType, to column: ColumnBuilder)
    /// Column `index` as a key: nil when NULL, else the integer.
    func key(_ index: Int) -> Int64?
}

extension StoreRow {
    /// Adds the value `value(_:as:)` gives.
    package func append(_ index: Int, as type: AttributeType, to column: ColumnBuilder) {
        column.append(value(index, as: type))
    }

    /// `integer(_:)`, or nil when `isNull(_:)`.
    package func key(_ index: Int) -> Int64? { isNull(index) ? nil : integer(index) }
}

/// A row of values, as a network database gives them.
package struct ValueRow: StoreRow {
    package let columns: [SQLValue]

    package init(_ columns: [SQLValue]) { self.columns = columns }

    package func value(_ index: Int, as type: AttributeType) -> PredicateValue {
        index < columns.count ? PredicateValue(sqlValue: columns[index], type: type) : .null
    }

    package func integer(_ index: Int) -> Int64 {
        guard index < columns.count else { return 0 }
        switch columns[index] {
        case .integer(let i): return i
        case .real(let d): return Int64(exactly: d.rounded(.towardZero)) ?? 0
        default: return 0
        }
    }

    package func isNull(_ index: Int) -> Bool {
        index >= columns.count || columns[index] == .null
    }
}

extension SQLiteStatement: StoreRow {}

/// Reads the rows of one entity from a row statement. A class: a row's
/// reader is picked per row, and copying a struct of this many arrays
/// cost a dozen reference-count operations a row.
package final class RowReader {
    package let member: RowLayout.Member
    /// Columns before the row's own (a link query's owner key).
    let base: Int
    /// Shared by every node read: to-many relationships not loaded.
    let unloaded: [[Int64]?]
    /// Where the files of external binary data are.
    let externalData: URL?
    /// The registered value transformers of transformable attributes, by slot.
    let transformers: [(slot: Int, transformer: AttributeValueTransformer)]
    /// Whether a row's columns go straight into the batch's columns: every
    /// attribute stored, in slot order, none external or transformed.
    let readsByColumn: Bool

    // The columns, slots and types of the row are the layout's arrays
    // (`RowLayout.Member`), made once with it: a fetch makes a reader, not
    // its arrays; the reader adds its base where it reads a column.

    package init(_ member: RowLayout.Member, base: Int, externalData: URL?, transformers: ValueTransformerRegistry) {
        self.member = member
        self.base = base
        self.externalData = externalData
        self.transformers = !member.hasTransformers ? [] : member.attributes.compactMap { attribute in
            attribute.transformer.flatMap(transformers.transformer(named:)).map { (attribute.slot, $0) }
        }
        unloaded = Array(repeating: nil, count: member.toManyCount)
        readsByColumn = member.everyAttributeInOrder && !member.hasExternal && self.transformers.isEmpty
        collector = RowCollector(entity: member.entity, root: member.root, attributeCount: member.attributeCount,
                                 toOneCount: member.toOneCount, toManyCount: member.toManyCount)
    }

    /// Reads the values and to-one keys of the current row, by slot, into
    /// `values` and `toOne` (arrays reused from row to row).
    @inline(__always)
    private func read<Row: StoreRow>(_ row: Row, into values: inout [PredicateValue], _ toOne: inout [Int64?]) {
        let (columns, types) = (member.attributeColumns, member.attributeTypes)
        if member.everyAttributeInOrder {
            values.removeAll(keepingCapacity: true)
            for i in types.indices { values.append(row.value(base &+ Int(columns[i]), as: types[i])) }
        } else {
            values.removeAll(keepingCapacity: true)
            values.append(contentsOf: member.initialValues)
            for i in types.indices { values[Int(member.attributeSlots[i])] = row.value(base &+ Int(columns[i]), as: types[i]) }
        }
        if member.hasExternal {
            for attribute in member.attributes where attribute.external {
                guard case .data(let column) = values[attribute.slot] else { continue }
                values[attribute.slot] = SQLSchema.externalStorageValue(column, in: externalData).map(PredicateValue.data) ?? .null
            }
        }
        for (slot, transformer) in transformers {
            // Bytes the transformer cannot read stay bytes: nothing is lost.
            guard case .data(let bytes) = values[slot], let value = try? transformer.transformedValue(bytes) else { continue }
            values[slot] = value
        }
        toOne.removeAll(keepingCapacity: true)
        toOne.append(contentsOf: repeatElement(nil, count: member.toOneCount))
        for (column, slot) in member.toOne {
            toOne[slot] = row.key(base + column)
        }
    }

    /// The node of the current row: a batch of its own.
    package func node<Row: StoreRow>(_ row: Row, primaryKey: Int64, version: Int64, now: Double) -> RowNode {
        var values: [PredicateValue] = []
        var toOne: [Int64?] = []
        values.reserveCapacity(member.attributeCount)
        read(row, into: &values, &toOne)
        return RowNode(id: ObjectID(entity: member.entity, root: member.root, primaryKey: primaryKey), version: version,
                       fetchTimestamp: now, values: values, toOne: toOne, toMany: unloaded)
    }

    /// The rows read so far. (Not lazy: a lazy property is mutated by a
    /// copy and a write back, which copied every column at every row.)
    /// (A reader reads one statement on one thread: these skip the
    /// runtime's exclusivity bookkeeping, a check per row.)
    @exclusivity(unchecked) private var collector: RowCollector
    /// The current row's values and to-one keys, reused from row to row.
    @exclusivity(unchecked) private var rowValues: [PredicateValue] = []
    @exclusivity(unchecked) private var rowToOne: [Int64?] = []

    /// Adds the current row to what is being read; returns its row.
    func add<Row: StoreRow>(_ row: Row, primaryKey: Int64, version: Int64, now: Double) -> Int {
        if readsByColumn, let builder = collector.beginColumnarRow(key: primaryKey, version: version, now: now) {
            return builder._withUnsafeGuaranteedRef { builder in
                // (The layout's arrays read through buffers: no bounds check per cell.)
                member.attributeColumns.withUnsafeBufferPointer { columns in
                    member.attributeTypes.withUnsafeBufferPointer { types in
                        for i in 0..<min(columns.count, types.count) {
                            builder.column(i)._withUnsafeGuaranteedRef { row.append(base &+ Int(columns[i]), as: types[i], to: $0) }
                        }
                    }
                }
                for slot in member.toOneColumns.indices {
                    let column = member.toOneColumns[slot]
                    builder.appendToOne(slot, column < 0 ? nil : row.key(base &+ column))
                }
                return builder.count &- 1
            }
        }
        read(row, into: &rowValues, &rowToOne)
        return collector.append(key: primaryKey, version: version, values: rowValues, toOne: rowToOne, now: now)
    }

    /// The nodes of the rows added, by row, and a fresh start.
    func takeNodes(now: Double) -> [RowNode] { collector.take(now: now) }

    /// The batches of the rows added, in order, and a fresh start; nil
    /// (nothing taken) when they are a few nodes of their own.
    func takeBatches(now: Double) -> [RowBatch]? { collector.takeBatches(now: now) }
}

/// Reads the rows of a fetch whose entity may have subentities: the row's
/// entity column says which member's reader takes it. The rows of each
/// entity go into one batch (`RowBatch`), laid out by column.
package final class RowReaders {
    let readers: [RowReader]
    /// The first reader (the fetch's own entity's) unretained, for the read
    /// of each row: `readers` keeps it alive, and a reader taken from here
    /// costs no retain and release per row.
    private let firstReader: Unmanaged<RowReader>?
    let entityColumn: Int?
    /// Columns before the row's own (a link query's owner key).
    package let base: Int
    /// Each row added: its reader and its row in that reader's batch (only
    /// when the fetch's entity has subentities).
    private var order: [(reader: Int32, row: Int32)] = []

    package init(_ layout: RowLayout, base: Int, externalData: URL?, transformers: ValueTransformerRegistry) {
        readers = layout.members.map { RowReader($0, base: base, externalData: externalData, transformers: transformers) }
        firstReader = readers.first.map(Unmanaged.passUnretained)
        entityColumn = layout.entityColumn.map { base + $0 }
        self.base = base
    }

    /// The reader of the current row; nil for a row of an entity the model
    /// does not know (not an object of this fetch).
    @inline(__always)
    private func reader<Row: StoreRow>(_ row: Row) -> Int? {
        guard let entityColumn else { return 0 }
        let number = row.integer(entityColumn)
        return readers.firstIndex(where: { $0.member.number == number })
    }

    /// The node of the current row, a batch of its own; nil for a row of an
    /// entity the model does not know.
    package func node<Row: StoreRow>(_ row: Row, now: Double) -> RowNode? {
        guard let which = reader(row) else { return nil }
        return readers[which].node(row, primaryKey: row.integer(base), version: row.integer(base + 1), now: now)
    }

    /// Adds the current row to its entity's batch; false for a row of an
    /// entity the model does not know (not an object of this fetch).
    @discardableResult
    package func add<Row: StoreRow>(_ row: Row, now: Double) -> Bool {
        guard let which = reader(row) else { return false }
        let (key, version) = (row.integer(base), row.integer(base &+ 1))
        let index = if which == 0, let firstReader {
            firstReader._withUnsafeGuaranteedRef { $0.add(row, primaryKey: key, version: version, now: now) }
        } else {
            readers[which].add(row, primaryKey: key, version: version, now: now)
        }
        if entityColumn != nil { order.append((Int32(which), Int32(index))) }
        return true
    }

    /// The nodes of the rows added, in the order they came, fetched at
    /// `now`; the readers start afresh.
    package func nodes(now: Double) -> [RowNode] {
        defer { order = [] }
        let nodes = readers.map { $0.takeNodes(now: now) }
        guard entityColumn != nil else { return nodes[0] }
        return order.map { nodes[Int($0.reader)][Int($0.row)] }
    }

    /// The batches of the rows added, in order, fetched at `now`, when the
    /// rows are of one entity (no entity column) and more than a few; nil
    /// otherwise, and nothing taken (`nodes(now:)` gives them).
    package func batches(now: Double) -> [RowBatch]? {
        guard entityColumn == nil, readers.count == 1 else { return nil }
        return readers[0].takeBatches(now: now)
    }
}

/// A fetch's rows as a store hands them to a context: the batches the
/// row cache keeps as they are (`RowCache.storeFetched(batches:count:)`),
/// or nodes.
package enum FetchedRows {
    /// Every row of each batch, in order, `count` in all, keys increasing:
    /// no node made per row.
    case batches([RowBatch], count: Int)
    case nodes([RowNode])
}

/// A store that hands a fetch's rows to a context as batches when it can
/// (`ObjectContext.fetchSaved`).
package protocol BatchFetchingStore: PersistentStore {
    /// The rows `fetch` selects, stored in the row cache, as
    /// `rows(for:)` gives them (the same rows, in the same order).
    func fetchedRows(for fetch: CompiledFetch) throws(StoreError) -> FetchedRows
}
