// Stage 6a (memory lowering): row batches, where row-cache nodes keep their
// values.
//
// The rows of one fetch (of one entity) are stored together, by column:
// each attribute's values in a typed buffer (integers, doubles, dates as
// seconds, booleans, strings), nils in a bit mask, to-one keys as integers.
// A node (`RowNode`) is a batch and a row index, so a fetched row costs
// its values and no allocation of its own. A node made alone is a batch of
// one row, kept as the arrays it was made from.

import Foundation
import SiftModel
import SiftValues

/// Rows of one entity delivered together (one fetch, or one node made
/// alone), their values laid out by column. Immutable.
///
/// A batch is what ``RowNode`` views: ``node(at:)`` gives row `row`'s node.
/// The columns are buffers the batch owns and frees; reading a value is a
/// load from its column, with no reference counting.
public final class RowBatch: @unchecked Sendable {
    // @unchecked: the buffers are written once, before `init` returns, and
    // only read afterwards.
    @usableFromInline let entityIndex: Int32
    @usableFromInline let rootIndex: Int32
    /// The index of the rows' entity in the model.
    @inlinable public var entity: Int { Int(entityIndex) }
    /// The index of the entity's root entity: whose table holds the rows.
    @inlinable public var root: Int { Int(rootIndex) }
    /// When the rows were fetched, in seconds since 2001-01-01.
    public let fetchTimestamp: Double
    /// How many rows the batch holds.
    public let count: Int
    /// How many attribute slots each row has.
    public let attributeCount: Int
    /// How many to-one slots each row has.
    public let toOneCount: Int
    /// How many to-many slots each row has.
    public let toManyCount: Int

    /// A batch of one row keeps the key, version and arrays it was made
    /// from (and no columns): one allocation, as a node on its own.
    @usableFromInline let isSingle: Bool
    @usableFromInline let singleKey: Int64
    @usableFromInline let singleVersion: Int64
    @usableFromInline let singleValues: [PredicateValue]
    @usableFromInline let singleToOne: [Int64?]
    @usableFromInline let singleToMany: [[Int64]?]
    /// Primary keys and versions by row (columns only).
    @usableFromInline let keys: UnsafeMutablePointer<Int64>?
    @usableFromInline let versions: UnsafeMutablePointer<Int64>?
    /// Attribute columns by slot, then to-one key columns by slot.
    @usableFromInline let columns: UnsafeMutablePointer<RawColumn>?

    /// A batch of one row.
    init(id: ObjectID, version: Int64, fetchTimestamp: Double, values: [PredicateValue], toOne: [Int64?], toMany: [[Int64]?]) {
        entityIndex = Int32(clamping: id.entity)
        rootIndex = Int32(clamping: id.root)
        self.fetchTimestamp = fetchTimestamp
        count = 1
        attributeCount = values.count
        toOneCount = toOne.count
        toManyCount = toMany.count
        isSingle = true
        singleKey = id.primaryKey
        singleVersion = version
        singleValues = values
        singleToOne = toOne
        singleToMany = toMany
        keys = nil
        versions = nil
        columns = nil
    }

    /// A batch of rows laid out by column: it takes the buffers over.
    init(entity: Int32, root: Int32, fetchTimestamp: Double, count: Int, keys: UnsafeMutablePointer<Int64>,
         versions: UnsafeMutablePointer<Int64>, columns: UnsafeMutablePointer<RawColumn>,
         attributeCount: Int, toOneCount: Int, toManyCount: Int) {
        entityIndex = entity
        rootIndex = root
        self.fetchTimestamp = fetchTimestamp
        self.count = count
        self.attributeCount = attributeCount
        self.toOneCount = toOneCount
        self.toManyCount = toManyCount
        isSingle = false
        singleKey = 0
        singleVersion = 0
        singleValues = []
        singleToOne = []
        singleToMany = []
        self.keys = keys
        self.versions = versions
        self.columns = columns
    }

    deinit {
        guard let columns else { return }
        for index in 0..<(attributeCount + toOneCount) { columns[index].free(count: count) }
        columns.deallocate()
        keys?.deallocate()
        versions?.deallocate()
    }

    /// The node of a row.
    ///
    /// - Parameter row: The row's index, below ``count``.
    /// - Returns: The node that views the row.
    public func node(at row: Int) -> RowNode { RowNode(batch: self, row: row) }

    /// The primary key of a row.
    ///
    /// - Parameter row: The row's index, below ``count``.
    /// - Returns: The row's primary key.
    @inlinable
    public func primaryKey(at row: Int) -> Int64 {
        isSingle ? singleKey : keys![row]
    }

    /// The version of a row.
    ///
    /// - Parameter row: The row's index, below ``count``.
    /// - Returns: The row's version.
    public func version(at row: Int) -> Int64 {
        isSingle ? singleVersion : versions![row]
    }

    /// The value of an attribute slot of a row; `.null` for a slot the rows do not have.
    ///
    /// - Parameters:
    ///   - slot: The attribute's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The value.
    @inlinable
    public func value(slot: Int, row: Int) -> PredicateValue {
        guard slot >= 0, slot < attributeCount else { return .null }
        if isSingle { return singleValues[slot] }
        return columns![slot].value(row)
    }

    /// The destination's key of a to-one slot of a row; nil when there is none.
    ///
    /// - Parameters:
    ///   - slot: The to-one relationship's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The destination's primary key, or nil.
    @inlinable
    public func toOneKey(slot: Int, row: Int) -> Int64? {
        guard slot >= 0, slot < toOneCount else { return nil }
        if isSingle { return singleToOne[slot] }
        return columns![attributeCount &+ slot].key(row)
    }

    /// The members' keys of a to-many slot of a row; nil when they are not loaded.
    ///
    /// - Parameters:
    ///   - slot: The to-many relationship's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The members' primary keys, or nil.
    public func toManyKeys(slot: Int, row: Int) -> [Int64]? {
        guard slot >= 0, slot < toManyCount, isSingle else { return nil }
        return singleToMany[slot]
    }

    /// Every attribute value of a row, by slot.
    func values(_ row: Int) -> [PredicateValue] {
        if isSingle { return singleValues }
        return (0..<attributeCount).map { columns![$0].value(row) }
    }
}

/// How a column's values are stored.
@usableFromInline
enum ColumnKind: UInt8, Sendable {
    /// No buffer: every row holds nil.
    case nulls
    case integers, doubles
    /// Dates as seconds since 2001-01-01.
    case dates
    case booleans
    /// `String?`, nil for nil.
    case strings
    /// `PredicateValue`: values of several types, or of a type without a buffer of its own.
    case values
}

/// One column of a batch: its kind, its buffer and its nil bits (one a row;
/// none when no row holds nil). Plain pointers: reading one counts no
/// references. The batch frees them.
@usableFromInline
struct RawColumn {
    @usableFromInline let kind: ColumnKind
    @usableFromInline let data: UnsafeMutableRawPointer?
    @usableFromInline let nulls: UnsafeMutablePointer<UInt64>?

    /// Whether row `row` holds nil.
    @inlinable @inline(__always)
    func isNull(_ row: Int) -> Bool {
        guard let nulls else { return false }
        return nulls[row &>> 6] & (1 &<< UInt64(row & 63)) != 0
    }

    /// The value of row `row`.
    @inlinable @inline(__always)
    func value(_ row: Int) -> PredicateValue {
        switch kind {
        case .nulls: return .null
        case .integers: return isNull(row) ? .null : .int(data!.assumingMemoryBound(to: Int64.self)[row])
        case .doubles: return isNull(row) ? .null : .double(data!.assumingMemoryBound(to: Double.self)[row])
        case .dates:
            return isNull(row) ? .null : .date(Date(timeIntervalSinceReferenceDate: data!.assumingMemoryBound(to: Double.self)[row]))
        case .booleans: return isNull(row) ? .null : .bool(data!.assumingMemoryBound(to: Bool.self)[row])
        case .strings: return data!.assumingMemoryBound(to: String?.self)[row].map(PredicateValue.string) ?? .null
        case .values: return data!.assumingMemoryBound(to: PredicateValue.self)[row]
        }
    }

    /// Row `row` of a key column (integers), or nil.
    @inlinable @inline(__always)
    func key(_ row: Int) -> Int64? {
        kind == .integers && !isNull(row) ? data!.assumingMemoryBound(to: Int64.self)[row] : nil
    }

    /// A column of `values` (copied), with `nulls` as its nil bits.
    static func make<T>(_ kind: ColumnKind, _ values: [T], nulls: [UInt64]) -> RawColumn {
        let data = UnsafeMutablePointer<T>.allocate(capacity: max(values.count, 1))
        data.initialize(from: values, count: values.count)
        var bits: UnsafeMutablePointer<UInt64>?
        if nulls.contains(where: { $0 != 0 }) {
            let words = (values.count + 63) / 64
            bits = UnsafeMutablePointer<UInt64>.allocate(capacity: max(words, 1))
            bits!.initialize(repeating: 0, count: max(words, 1))
            for (index, word) in nulls.prefix(words).enumerated() { bits![index] = word }
        }
        return RawColumn(kind: kind, data: UnsafeMutableRawPointer(data), nulls: bits)
    }

    /// Frees the buffers of a column of `count` rows.
    func free(count: Int) {
        switch kind {
        case .strings: data?.assumingMemoryBound(to: String?.self).deinitialize(count: count)
        case .values: data?.assumingMemoryBound(to: PredicateValue.self).deinitialize(count: count)
        default: break
        }
        data?.deallocate()
        nulls?.deallocate()
    }
}

/// Which rows of a column hold nil, as it is built: one bit a row.
struct NullMask {
    var words: [UInt64] = []

    mutating func insert(_ row: Int) {
        let word = row >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(row & 63)
    }
}

/// Lays rows out by column as a store reads them, one row at a time, then
/// makes the batch.
package struct RowBatchBuilder {
    let entity: Int32
    let root: Int32
    let toManyCount: Int
    private var keys: [Int64] = []
    private var versions: [Int64] = []
    private var columns: [ColumnBuilder]
    private var toOne: [(keys: [Int64], nulls: NullMask)]

    /// A builder for rows of the entity at `entity` (its root at `root`).
    package init(entity: Int, root: Int, attributeCount: Int, toOneCount: Int, toManyCount: Int) {
        self.entity = Int32(clamping: entity)
        self.root = Int32(clamping: root)
        self.toManyCount = toManyCount
        columns = Array(repeating: ColumnBuilder(), count: attributeCount)
        toOne = Array(repeating: ([], NullMask()), count: toOneCount)
    }

    /// How many rows have been added.
    package var count: Int { keys.count }

    /// Adds a row: its key, version, attribute values by slot and to-one keys by slot.
    package mutating func append(key: Int64, version: Int64, values: [PredicateValue], toOne keys: [Int64?]) {
        let row = self.keys.count
        self.keys.append(key)
        versions.append(version)
        for slot in columns.indices { columns[slot].append(slot < values.count ? values[slot] : .null) }
        for slot in toOne.indices {
            if slot < keys.count, let key = keys[slot] {
                toOne[slot].keys.append(key)
            } else {
                toOne[slot].keys.append(0)
                toOne[slot].nulls.insert(row)
            }
        }
    }

    /// The batch of the rows added, fetched at `fetchTimestamp`.
    package func batch(fetchTimestamp: Double) -> RowBatch {
        let count = keys.count
        let keyBuffer = UnsafeMutablePointer<Int64>.allocate(capacity: max(count, 1))
        keyBuffer.initialize(from: keys, count: count)
        let versionBuffer = UnsafeMutablePointer<Int64>.allocate(capacity: max(count, 1))
        versionBuffer.initialize(from: versions, count: count)
        let raw = UnsafeMutablePointer<RawColumn>.allocate(capacity: max(columns.count + toOne.count, 1))
        for (slot, column) in columns.enumerated() { (raw + slot).initialize(to: column.column()) }
        for (slot, keys) in toOne.enumerated() {
            (raw + columns.count + slot).initialize(to: .make(.integers, keys.keys, nulls: keys.nulls.words))
        }
        return RowBatch(entity: entity, root: root, fetchTimestamp: fetchTimestamp, count: count, keys: keyBuffer,
                        versions: versionBuffer, columns: raw, attributeCount: columns.count, toOneCount: toOne.count,
                        toManyCount: toManyCount)
    }
}

/// One column as it is read: typed by its first value that is not nil,
/// and kept as plain values once a value of another type comes.
private struct ColumnBuilder {
    private enum Kind { case empty, integers, doubles, dates, booleans, strings, values }
    private var kind = Kind.empty
    private var count = 0
    private var numbers: [Int64] = []
    private var reals: [Double] = []
    private var flags: [Bool] = []
    private var texts: [String?] = []
    private var plain: [PredicateValue] = []
    private var nulls = NullMask()

    mutating func append(_ value: PredicateValue) {
        switch (kind, value) {
        case (.integers, .int(let v)): numbers.append(v)
        case (.doubles, .double(let v)): reals.append(v)
        case (.dates, .date(let v)): reals.append(v.timeIntervalSinceReferenceDate)
        case (.booleans, .bool(let v)): flags.append(v)
        case (.strings, .string(let v)): texts.append(v)
        case (.values, _): plain.append(value)
        case (_, .null): appendNull()
        case (.empty, _): start(with: value)
        default:
            plain = (0..<count).map(self.value)
            numbers = []; reals = []; flags = []; texts = []; nulls = NullMask()
            kind = .values
            plain.append(value)
        }
        count += 1
    }

    /// The value of a row added (for a column turning into plain values).
    private func value(_ row: Int) -> PredicateValue {
        let word = row >> 6
        if word < nulls.words.count, nulls.words[word] & (1 << UInt64(row & 63)) != 0 { return .null }
        switch kind {
        case .empty: return .null
        case .integers: return .int(numbers[row])
        case .doubles: return .double(reals[row])
        case .dates: return .date(Date(timeIntervalSinceReferenceDate: reals[row]))
        case .booleans: return .bool(flags[row])
        case .strings: return texts[row].map(PredicateValue.string) ?? .null
        case .values: return plain[row]
        }
    }

    private mutating func appendNull() {
        switch kind {
        case .empty: return
        case .integers: numbers.append(0)
        case .doubles, .dates: reals.append(0)
        case .booleans: flags.append(false)
        case .strings: texts.append(nil); return
        case .values: plain.append(.null); return
        }
        nulls.insert(count)
    }

    /// The first value that is not nil, after `count` nils.
    private mutating func start(with value: PredicateValue) {
        let leading = count
        switch value {
        case .int(let v): kind = .integers; numbers = Array(repeating: 0, count: leading); numbers.append(v)
        case .double(let v): kind = .doubles; reals = Array(repeating: 0, count: leading); reals.append(v)
        case .date(let v): kind = .dates; reals = Array(repeating: 0, count: leading); reals.append(v.timeIntervalSinceReferenceDate)
        case .bool(let v): kind = .booleans; flags = Array(repeating: false, count: leading); flags.append(v)
        case .string(let v): kind = .strings; texts = Array(repeating: nil, count: leading); texts.append(v); return
        default: kind = .values; plain = Array(repeating: .null, count: leading); plain.append(value); return
        }
        for row in 0..<leading { nulls.insert(row) }
    }

    /// The column's buffer, made for the batch.
    func column() -> RawColumn {
        switch kind {
        case .empty: return RawColumn(kind: .nulls, data: nil, nulls: nil)
        case .integers: return .make(.integers, numbers, nulls: nulls.words)
        case .doubles: return .make(.doubles, reals, nulls: nulls.words)
        case .dates: return .make(.dates, reals, nulls: nulls.words)
        case .booleans: return .make(.booleans, flags, nulls: nulls.words)
        case .strings: return .make(.strings, texts, nulls: [])
        case .values: return .make(.values, plain, nulls: [])
        }
    }
}

/// Rows of one entity as a store delivers them, made into nodes: the first
/// few as nodes of their own (a batch's columns cost more than they save
/// for a few rows), and past that every row by column in one batch.
package struct RowCollector {
    /// Up to this many rows are nodes of their own.
    package static let fewRows = 8
    private let entity: Int
    private let root: Int
    private let attributeCount: Int
    private let toOneCount: Int
    private let toManyCount: Int
    /// The first rows, as nodes of their own.
    private var few: [RowNode] = []
    /// The rows by column, once there are more than a few.
    private var builder: RowBatchBuilder?
    /// Shared by the nodes of their own: to-many relationships not loaded.
    private let unloaded: [[Int64]?]

    /// A collector of rows of the entity at `entity` (its root at `root`),
    /// with these numbers of slots.
    package init(entity: Int, root: Int, attributeCount: Int, toOneCount: Int, toManyCount: Int) {
        self.entity = entity
        self.root = root
        self.attributeCount = attributeCount
        self.toOneCount = toOneCount
        self.toManyCount = toManyCount
        unloaded = Array(repeating: nil, count: toManyCount)
    }

    /// How many rows have been added.
    package var count: Int { builder?.count ?? few.count }

    /// Adds a row (its to-many relationships not loaded); returns its index
    /// among the rows added.
    package mutating func append(key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?], now: Double) -> Int {
        if builder == nil {
            if few.count < Self.fewRows {
                few.append(RowNode(id: ObjectID(entity: entity, root: root, primaryKey: key), version: version,
                                   fetchTimestamp: now, values: values, toOne: toOne, toMany: unloaded))
                return few.count - 1
            }
            var made = RowBatchBuilder(entity: entity, root: root, attributeCount: attributeCount,
                                       toOneCount: toOneCount, toManyCount: toManyCount)
            for node in few { made.append(key: node.id.primaryKey, version: node.version, values: node.values, toOne: node.toOne) }
            few = []
            builder = made
        }
        let index = builder!.count
        builder!.append(key: key, version: version, values: values, toOne: toOne)
        return index
    }

    /// The nodes of the rows added, by index, fetched at `now`; the
    /// collector starts afresh.
    package mutating func take(now: Double) -> [RowNode] {
        defer { builder = nil; few = [] }
        guard let batch = builder?.batch(fetchTimestamp: now) else { return few }
        return (0..<batch.count).map { RowNode(batch: batch, row: $0) }
    }
}
