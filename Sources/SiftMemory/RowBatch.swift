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
public final class RowBatch: Sendable {
    private let entityIndex: Int32
    private let rootIndex: Int32
    /// The index of the rows' entity in the model.
    public var entity: Int { Int(entityIndex) }
    /// The index of the entity's root entity: whose table holds the rows.
    public var root: Int { Int(rootIndex) }
    /// When the rows were fetched, in seconds since 2001-01-01.
    public let fetchTimestamp: Double
    /// How many rows the batch holds.
    public let count: Int
    /// How many attribute slots, to-one slots and to-many slots each row has.
    public let attributeCount: Int, toOneCount: Int, toManyCount: Int
    private let storage: Storage

    private enum Storage: Sendable {
        /// One row, as the arrays it was made from.
        case row(key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?], toMany: [[Int64]?])
        /// Rows by column.
        case columns(BatchColumns)
    }

    /// A batch of one row.
    init(id: ObjectID, version: Int64, fetchTimestamp: Double, values: [PredicateValue], toOne: [Int64?], toMany: [[Int64]?]) {
        entityIndex = Int32(clamping: id.entity)
        rootIndex = Int32(clamping: id.root)
        self.fetchTimestamp = fetchTimestamp
        count = 1
        attributeCount = values.count
        toOneCount = toOne.count
        toManyCount = toMany.count
        storage = .row(key: id.primaryKey, version: version, values: values, toOne: toOne, toMany: toMany)
    }

    /// A batch of rows laid out by column.
    init(entity: Int32, root: Int32, fetchTimestamp: Double, columns: BatchColumns, toManyCount: Int) {
        entityIndex = entity
        rootIndex = root
        self.fetchTimestamp = fetchTimestamp
        count = columns.keys.count
        attributeCount = columns.values.count
        toOneCount = columns.toOne.count
        self.toManyCount = toManyCount
        storage = .columns(columns)
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
    public func primaryKey(at row: Int) -> Int64 {
        switch storage {
        case .row(let key, _, _, _, _): return key
        case .columns(let columns): return columns.keys[row]
        }
    }

    /// The version of a row.
    ///
    /// - Parameter row: The row's index, below ``count``.
    /// - Returns: The row's version.
    public func version(at row: Int) -> Int64 {
        switch storage {
        case .row(_, let version, _, _, _): return version
        case .columns(let columns): return columns.versions[row]
        }
    }

    /// The value of an attribute slot of a row; `.null` for a slot the rows do not have.
    ///
    /// - Parameters:
    ///   - slot: The attribute's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The value.
    public func value(slot: Int, row: Int) -> PredicateValue {
        guard slot >= 0, slot < attributeCount else { return .null }
        switch storage {
        case .row(_, _, let values, _, _): return values[slot]
        case .columns(let columns): return columns.values[slot].value(row)
        }
    }

    /// The destination's key of a to-one slot of a row; nil when there is none.
    ///
    /// - Parameters:
    ///   - slot: The to-one relationship's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The destination's primary key, or nil.
    public func toOneKey(slot: Int, row: Int) -> Int64? {
        guard slot >= 0, slot < toOneCount else { return nil }
        switch storage {
        case .row(_, _, _, let toOne, _): return toOne[slot]
        case .columns(let columns): return columns.toOne[slot].key(row)
        }
    }

    /// The members' keys of a to-many slot of a row; nil when they are not loaded.
    ///
    /// - Parameters:
    ///   - slot: The to-many relationship's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The members' primary keys, or nil.
    public func toManyKeys(slot: Int, row: Int) -> [Int64]? {
        guard slot >= 0, slot < toManyCount else { return nil }
        switch storage {
        case .row(_, _, _, _, let toMany): return toMany[slot]
        case .columns: return nil
        }
    }

    /// Every attribute value of a row, by slot.
    func values(_ row: Int) -> [PredicateValue] {
        switch storage {
        case .row(_, _, let values, _, _): return values
        case .columns(let columns): return columns.values.map { $0.value(row) }
        }
    }

    /// The typed column of an attribute slot, when the rows are laid out by column.
    package func column(_ slot: Int) -> BatchColumn? {
        guard case .columns(let columns) = storage, slot >= 0, slot < columns.values.count else { return nil }
        return columns.values[slot]
    }
}

/// Which rows of a column hold nil: one bit a row, no words when none does.
package struct NullMask: Sendable {
    var words: [UInt64] = []

    /// Whether row `row` holds nil.
    @inline(__always)
    package func contains(_ row: Int) -> Bool {
        let word = row >> 6
        return word < words.count && words[word] & (1 << UInt64(row & 63)) != 0
    }

    mutating func insert(_ row: Int) {
        let word = row >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(row & 63)
    }
}

/// One attribute's values for the rows of a batch, in a buffer of their type.
package enum BatchColumn: Sendable {
    /// Every row holds nil.
    case nulls
    case integers([Int64], NullMask)
    case doubles([Double], NullMask)
    /// Dates as seconds since 2001-01-01.
    case dates([Double], NullMask)
    case booleans([Bool], NullMask)
    case strings([String?])
    /// Values of several types, or of a type without a buffer of its own.
    case values([PredicateValue])

    /// The value of row `row`.
    @inline(__always)
    package func value(_ row: Int) -> PredicateValue {
        switch self {
        case .nulls: return .null
        case .integers(let values, let nulls): return nulls.contains(row) ? .null : .int(values[row])
        case .doubles(let values, let nulls): return nulls.contains(row) ? .null : .double(values[row])
        case .dates(let values, let nulls):
            return nulls.contains(row) ? .null : .date(Date(timeIntervalSinceReferenceDate: values[row]))
        case .booleans(let values, let nulls): return nulls.contains(row) ? .null : .bool(values[row])
        case .strings(let values): return values[row].map(PredicateValue.string) ?? .null
        case .values(let values): return values[row]
        }
    }
}

/// A to-one relationship's destination keys for the rows of a batch.
package struct KeyColumn: Sendable {
    var keys: [Int64] = []
    var nulls = NullMask()

    /// The key of row `row`, or nil.
    @inline(__always)
    func key(_ row: Int) -> Int64? { nulls.contains(row) ? nil : keys[row] }
}

/// The columns of a batch's rows.
package struct BatchColumns: Sendable {
    var keys: [Int64] = []
    var versions: [Int64] = []
    var values: [BatchColumn] = []
    var toOne: [KeyColumn] = []
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
    private var toOne: [KeyColumn]

    /// A builder for rows of the entity at `entity` (its root at `root`).
    package init(entity: Int, root: Int, attributeCount: Int, toOneCount: Int, toManyCount: Int) {
        self.entity = Int32(clamping: entity)
        self.root = Int32(clamping: root)
        self.toManyCount = toManyCount
        columns = Array(repeating: ColumnBuilder(), count: attributeCount)
        toOne = Array(repeating: KeyColumn(), count: toOneCount)
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
        RowBatch(entity: entity, root: root, fetchTimestamp: fetchTimestamp,
                 columns: BatchColumns(keys: keys, versions: versions, values: columns.map { $0.column() }, toOne: toOne),
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
            plain = (0..<count).map(column().value)
            numbers = []; reals = []; flags = []; texts = []; nulls = NullMask()
            kind = .values
            plain.append(value)
        }
        count += 1
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

    func column() -> BatchColumn {
        switch kind {
        case .empty: return .nulls
        case .integers: return .integers(numbers, nulls)
        case .doubles: return .doubles(reals, nulls)
        case .dates: return .dates(reals, nulls)
        case .booleans: return .booleans(flags, nulls)
        case .strings: return .strings(texts)
        case .values: return .values(plain)
        }
    }
}
