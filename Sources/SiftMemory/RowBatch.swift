// Stage 6a (memory lowering): row batches, where row-cache nodes keep their
// values.
//
// The rows of one fetch (of one entity, up to 4 096 to a batch) are stored
// together, by column: each attribute's values in a typed buffer (integers,
// doubles, dates as seconds, booleans, strings), nils in a bit mask, to-one
// keys as integers.
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
    /// The key of a batch of one row, or of the first row of a batch
    /// whose keys count up by one (no `keys` buffer); the version of a
    /// batch of one row, or of every row of one with no `versions` buffer.
    @usableFromInline let singleKey: Int64
    @usableFromInline let singleVersion: Int64
    @usableFromInline let singleValues: [PredicateValue]
    @usableFromInline let singleToOne: [Int64?]
    /// To-many keys by row, then slot (`row * toManyCount + slot`): one
    /// row's for a batch of one row, every row's for a batch whose rows
    /// were given with theirs (a data set's); empty when not loaded.
    @usableFromInline let toManyLists: [[Int64]?]
    /// Primary keys and versions by row (columns only, and only when they
    /// differ from `singleKey + row` and `singleVersion`).
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
        toManyLists = toMany
        keys = nil
        versions = nil
        columns = nil
    }

    /// A batch of rows laid out by column: it takes the buffers over. No
    /// key buffer: the keys count up by one from `firstKey`; no version
    /// buffer: every row's version is `version`. `toMany`: every row's
    /// to-many keys (`toManyLists`), or empty when not loaded.
    init(entity: Int32, root: Int32, fetchTimestamp: Double, count: Int, keys: UnsafeMutablePointer<Int64>?,
         firstKey: Int64, versions: UnsafeMutablePointer<Int64>?, version: Int64, columns: UnsafeMutablePointer<RawColumn>,
         attributeCount: Int, toOneCount: Int, toManyCount: Int, toMany: [[Int64]?]) {
        entityIndex = entity
        rootIndex = root
        self.fetchTimestamp = fetchTimestamp
        self.count = count
        self.attributeCount = attributeCount
        self.toOneCount = toOneCount
        self.toManyCount = toManyCount
        isSingle = false
        singleKey = firstKey
        singleVersion = version
        singleValues = []
        singleToOne = []
        toManyLists = toMany
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
        if let keys { return keys[row] }
        return singleKey &+ Int64(truncatingIfNeeded: row)
    }

    /// Whether the rows' keys increase from row to row (always, when they
    /// count up by one from the first).
    package func keysIncrease() -> Bool {
        guard let keys, count > 1 else { return true }
        for row in 1..<count where keys[row] <= keys[row &- 1] { return false }
        return true
    }

    /// The version of a row.
    ///
    /// - Parameter row: The row's index, below ``count``.
    /// - Returns: The row's version.
    public func version(at row: Int) -> Int64 {
        if let versions { return versions[row] }
        return singleVersion
    }

    /// The value of an attribute slot of a row; `.null` for a slot the rows do not have.
    ///
    /// - Parameters:
    ///   - slot: The attribute's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The value.
    @inlinable @inline(__always)
    public func value(slot: Int, row: Int) -> PredicateValue {
        guard slot >= 0, slot < attributeCount else { return .null }
        if isSingle { return singleValues[slot] }
        return columns![slot].value(row)
    }

    /// The value of an attribute slot of a row as `Value`, read straight
    /// from its column when the column stores exactly that type: an
    /// integer column as `Int64` (or `Int`), a double column as `Double`, a
    /// Boolean column as `Bool`, a date column as `Date`, a string column
    /// as `String`. Nothing is built on the way, so such a read costs a load.
    ///
    /// - Parameters:
    ///   - slot: The attribute's slot.
    ///   - row: The row's index, below ``count``.
    ///   - type: The type to read the value as.
    /// - Returns: `.some(nil)` when the row holds nil, `.some(value)` for a
    ///   value; `.none` when the column does not store `Value` (or the rows
    ///   have no such slot, or the batch is of one row): then read ``value(slot:row:)``
    ///   and convert it.
    @inlinable @inline(__always)
    public func value<Value>(slot: Int, row: Int, as type: Value.Type) -> Value?? {
        guard slot >= 0, slot < attributeCount, !isSingle else { return .none }
        return columns.unsafelyUnwrapped[slot].value(row, as: type)
    }

    /// The destination's key of a to-one slot of a row; nil when there is none.
    ///
    /// - Parameters:
    ///   - slot: The to-one relationship's slot.
    ///   - row: The row's index, below ``count``.
    /// - Returns: The destination's primary key, or nil.
    @inlinable @inline(__always)
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
        guard slot >= 0, slot < toManyCount, !toManyLists.isEmpty else { return nil }
        return toManyLists[row &* toManyCount &+ slot]
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

    /// Row `row` as `Value` when the column stores exactly that type (see
    /// `RowBatch.value(slot:row:as:)`); `.none` when it does not.
    /// (`Value.self == T.self` is decided when the read is specialized, so
    /// the branches for other types are not compiled into it.)
    @inlinable @inline(__always)
    func value<Value>(_ row: Int, as type: Value.Type) -> Value?? {
        switch kind {
        case .integers:
            if Value.self == Int64.self || (Value.self == Int.self && MemoryLayout<Int>.size == 8) {
                if isNull(row) { return .some(nil) }
                return .some(unsafeBitCast(data.unsafelyUnwrapped.assumingMemoryBound(to: Int64.self)[row], to: Value.self))
            }
        case .doubles:
            if Value.self == Double.self {
                if isNull(row) { return .some(nil) }
                return .some(unsafeBitCast(data.unsafelyUnwrapped.assumingMemoryBound(to: Double.self)[row], to: Value.self))
            }
        case .dates:
            if Value.self == Date.self {
                if isNull(row) { return .some(nil) }
                let date = Date(timeIntervalSinceReferenceDate: data.unsafelyUnwrapped.assumingMemoryBound(to: Double.self)[row])
                return .some(unsafeBitCast(date, to: Value.self))
            }
        case .booleans:
            if Value.self == Bool.self {
                if isNull(row) { return .some(nil) }
                return .some(unsafeBitCast(data.unsafelyUnwrapped.assumingMemoryBound(to: Bool.self)[row], to: Value.self))
            }
        case .strings:
            if Value.self == String.self {
                guard let string = data.unsafelyUnwrapped.assumingMemoryBound(to: String?.self)[row] else { return .some(nil) }
                return .some(unsafeBitCast(string, to: Value.self))
            }
        case .nulls:
            return .some(nil)
        case .values:
            break
        }
        return .none
    }

    /// Row `row` of a key column (integers), or nil.
    @inlinable @inline(__always)
    func key(_ row: Int) -> Int64? {
        kind == .integers && !isNull(row) ? data!.assumingMemoryBound(to: Int64.self)[row] : nil
    }

    /// Frees the buffers of a column of `count` rows.
    func free(count: Int) {
        switch kind {
        case .strings:
            // Each value moved out and dropped, a release of its own type:
            // `deinitialize(count:)`, even of one, is the runtime's array
            // destroy, which looks the type up and calls a value witness per
            // element (a third of dropping a fetch's objects).
            guard let strings = data?.assumingMemoryBound(to: String?.self) else { break }
            for row in 0..<count { _ = (strings + row).move() }
        case .values:
            guard let values = data?.assumingMemoryBound(to: PredicateValue.self) else { break }
            for row in 0..<count { _ = (values + row).move() }
        default: break
        }
        data?.deallocate()
        nulls?.deallocate()
    }
}

/// Which rows of a column hold nil, as it is built: one bit a row.
@usableFromInline
struct NullMask {
    @usableFromInline var words: [UInt64] = []

    @usableFromInline init() {}

    @usableFromInline
    mutating func insert(_ row: Int) {
        let word = row >> 6
        if word >= words.count { words.append(contentsOf: repeatElement(0, count: word - words.count + 1)) }
        words[word] |= 1 << UInt64(row & 63)
    }

    /// The bits in a buffer for a batch; nil when no row holds nil.
    func buffer(rows: Int) -> UnsafeMutablePointer<UInt64>? {
        guard words.contains(where: { $0 != 0 }) else { return nil }
        let count = max((rows + 63) / 64, 1)
        let bits = UnsafeMutablePointer<UInt64>.allocate(capacity: count)
        bits.initialize(repeating: 0, count: count)
        for (index, word) in words.prefix(count).enumerated() { bits[index] = word }
        return bits
    }
}

/// Lays rows out by column as a store reads them, one row at a time, then
/// makes the batch. A row is added whole (`append(key:version:values:toOne:)`),
/// or by column: `beginRow`, then one value for every attribute column in
/// slot order (`column(_:)`), then every to-one key (`appendToOne`).
@usableFromInline
package final class RowBatchBuilder {
    let entity: Int32
    let root: Int32
    @usableFromInline let attributeCount: Int
    let toOneCount: Int
    let toManyCount: Int
    // (A builder is filled by one reader on one thread: its state skips the
    // runtime's exclusivity bookkeeping, which cost a check per value.)
    /// The rows' keys, which count up by one from the first while they
    /// can (a fetch in key order), and their versions, all the same while
    /// they can: one number each, and no array appended to per row.
    @usableFromInline @exclusivity(unchecked) var keys = NumberRun(step: 1)
    @usableFromInline @exclusivity(unchecked) var versions = NumberRun(step: 0)
    /// How many rows have been added.
    @usableFromInline @exclusivity(unchecked) var rowCount = 0
    /// The attribute columns by slot, then the to-one key columns by slot.
    private let columns: ContiguousArray<ColumnBuilder>
    /// The same columns unretained, for the loop over a row's values:
    /// `columns` keeps them alive, and a reference taken from here costs
    /// no retain and release per value.
    @usableFromInline let columnReferences: UnsafeMutablePointer<Unmanaged<ColumnBuilder>>

    /// Whether rows come with their to-many keys, which the batch keeps.
    let storesToMany: Bool
    /// The rows' to-many keys, by row then slot (when `storesToMany`).
    private var toManyLists: [[Int64]?] = []

    /// A builder for rows of the entity at `entity` (its root at `root`);
    /// with `storesToMany`, rows come with their to-many keys.
    package init(entity: Int, root: Int, attributeCount: Int, toOneCount: Int, toManyCount: Int, storesToMany: Bool = false) {
        self.entity = Int32(clamping: entity)
        self.root = Int32(clamping: root)
        self.attributeCount = attributeCount
        self.toOneCount = toOneCount
        self.toManyCount = toManyCount
        self.storesToMany = storesToMany && toManyCount > 0
        columns = ContiguousArray((0..<(attributeCount + toOneCount)).map { _ in ColumnBuilder() })
        columnReferences = .allocate(capacity: max(columns.count, 1))
        for (slot, column) in columns.enumerated() { (columnReferences + slot).initialize(to: .passUnretained(column)) }
    }

    deinit {
        columnReferences.deallocate()
        keys.free()
        versions.free()
    }

    /// How many rows have been added.
    @inlinable
    package var count: Int { rowCount }

    /// Adds a row: its key, version, attribute values by slot and to-one keys by slot.
    package func append(key: Int64, version: Int64, values: [PredicateValue], toOne keys: [Int64?], toMany: [[Int64]?] = []) {
        beginRow(key: key, version: version)
        for slot in 0..<attributeCount {
            let value = slot < values.count ? values[slot] : .null
            columnReferences[slot]._withUnsafeGuaranteedRef { $0.append(value) }
        }
        for slot in 0..<toOneCount { appendToOne(slot, slot < keys.count ? keys[slot] : nil) }
        if storesToMany {
            for slot in 0..<toManyCount { toManyLists.append(slot < toMany.count ? toMany[slot] : nil) }
        }
    }

    /// Starts a row added by column.
    @inlinable @inline(__always)
    package func beginRow(key: Int64, version: Int64) {
        keys.append(key, row: rowCount)
        versions.append(version, row: rowCount)
        rowCount &+= 1
    }

    /// The column of an attribute slot, to add the current row's value to.
    /// (Unretained: use it through `_withUnsafeGuaranteedRef` while the builder lives.)
    @inlinable @inline(__always)
    package func column(_ slot: Int) -> Unmanaged<ColumnBuilder> { columnReferences[slot] }

    /// Adds the current row's key of a to-one slot (nil: none).
    @inlinable @inline(__always)
    package func appendToOne(_ slot: Int, _ key: Int64?) {
        columnReferences[attributeCount &+ slot]._withUnsafeGuaranteedRef { column in
            if let key { column.appendInteger(key) } else { column.appendNull() }
        }
    }

    /// The batch of the rows added, fetched at `fetchTimestamp`. Keys that
    /// count up by one from the first, and versions all the same, are kept
    /// as one number each. The builder is empty afterwards.
    package func batch(fetchTimestamp: Double) -> RowBatch {
        let count = rowCount
        let (first, keyBuffer) = keys.take(count: count)
        let (version, versionBuffer) = versions.take(count: count)
        rowCount = 0
        let raw = UnsafeMutablePointer<RawColumn>.allocate(capacity: max(columns.count, 1))
        for (slot, column) in columns.enumerated() { (raw + slot).initialize(to: column.take()) }
        defer { toManyLists = [] }
        return RowBatch(entity: entity, root: root, fetchTimestamp: fetchTimestamp, count: count, keys: keyBuffer,
                        firstKey: first, versions: versionBuffer, version: version, columns: raw,
                        attributeCount: attributeCount, toOneCount: toOneCount, toManyCount: toManyCount,
                        toMany: toManyLists.count == count &* toManyCount ? toManyLists : [])
    }

}

/// Numbers added one a row (a batch's keys or versions) that follow a
/// pattern while they can, `first + step * row`, and are then listed: a
/// fetch in key order keeps one key and one version for its batch, and
/// adding a row to it is a comparison.
@usableFromInline
struct NumberRun {
    /// The first row's number.
    @usableFromInline var first: Int64 = 0
    /// What each row adds to the number of the row before, in the pattern.
    @usableFromInline let step: Int64
    /// Every row's number, once one broke the pattern (nil while none has),
    /// in a buffer of `capacity`.
    @usableFromInline var listed: UnsafeMutablePointer<Int64>?
    @usableFromInline var capacity = 0

    @usableFromInline init(step: Int64) { self.step = step }

    /// Adds the number of row `row` (the rows are added in order, from 0).
    @inlinable @inline(__always)
    mutating func append(_ number: Int64, row: Int) {
        if row == 0 {
            first = number
            return
        }
        if listed == nil, number == first &+ step &* Int64(row) { return }
        list(number, row: row)
    }

    /// Adds a number to the list, starting it (with the pattern's numbers
    /// of the rows before) when it breaks the pattern.
    @usableFromInline
    mutating func list(_ number: Int64, row: Int) {
        // (No list yet means no capacity either: the first number listed grows it.)
        if row >= capacity {
            let grownCapacity = max(16, capacity &* 2, row &+ 1)
            let grown = UnsafeMutablePointer<Int64>.allocate(capacity: grownCapacity)
            if let listed {
                grown.moveInitialize(from: listed, count: row)
                listed.deallocate()
            } else {
                for before in 0..<row { (grown + before).initialize(to: first &+ step &* Int64(before)) }
            }
            listed = grown
            capacity = grownCapacity
        }
        listed.unsafelyUnwrapped[row] = number
    }

    /// The first number and, when the numbers broke the pattern, a buffer
    /// of exactly `count` of them (the caller's to free); empty afterwards.
    mutating func take(count: Int) -> (first: Int64, listed: UnsafeMutablePointer<Int64>?) {
        defer { free() }
        guard let listed else { return (first, nil) }
        let exact = UnsafeMutablePointer<Int64>.allocate(capacity: max(count, 1))
        exact.moveInitialize(from: listed, count: count)
        return (first, exact)
    }

    /// Frees the list.
    mutating func free() {
        listed?.deallocate()
        listed = nil
        capacity = 0
        first = 0
    }
}

/// One column as it is read, in a buffer the batch takes over: typed by
/// its first value that is not nil, and kept as plain values once a value
/// of another type comes. A store that knows a column's type adds values
/// of it directly (`appendInteger`, `appendString`, ...): no `PredicateValue`
/// is made for them.
@usableFromInline
package final class ColumnBuilder {
    // (Filled by one reader on one thread: no exclusivity bookkeeping.)
    // (Its appends are inlined into the stores' row readers: a cell costs
    // no call. That takes the type's `@usableFromInline`, as on the
    // builder and the collector: the `@inlinable` members of a `package`
    // type without it are not serialized, and other modules call them.)
    @usableFromInline @exclusivity(unchecked) var kind = ColumnKind.nulls
    /// Rows added.
    @usableFromInline @exclusivity(unchecked) var count = 0
    /// The values (none while every row is nil), `capacity` of them.
    @usableFromInline @exclusivity(unchecked) var data: UnsafeMutableRawPointer?
    @usableFromInline @exclusivity(unchecked) var capacity = 0
    @usableFromInline @exclusivity(unchecked) var nulls = NullMask()
    /// The first buffer's size: the rows of the batch made before (a
    /// fetch's batches are alike), or 16.
    @exclusivity(unchecked) private var firstCapacity = 16

    init() {}

    deinit { free() }

    /// Frees the buffer (values not taken by a batch).
    private func free() {
        guard let data else { return }
        // (Moved out one by one, as `RawColumn.free(count:)` does.)
        switch kind {
        case .strings:
            let strings = data.assumingMemoryBound(to: String?.self)
            for row in 0..<count { _ = (strings + row).move() }
        case .values:
            let values = data.assumingMemoryBound(to: PredicateValue.self)
            for row in 0..<count { _ = (values + row).move() }
        default: break
        }
        data.deallocate()
        self.data = nil
        capacity = 0
    }

    /// Adds a value of the column's element type (the buffer grows by doubling).
    @inlinable @inline(__always)
    func push<T>(_ value: T) {
        if count == capacity { grow(T.self, to: max(16, capacity &* 2)) }
        (data.unsafelyUnwrapped.assumingMemoryBound(to: T.self) + count).initialize(to: value)
        count &+= 1
    }

    /// Moves the values to a buffer of `newCapacity`.
    @usableFromInline
    func grow<T>(_ type: T.Type, to newCapacity: Int) {
        let moved = UnsafeMutablePointer<T>.allocate(capacity: newCapacity)
        if let data { moved.moveInitialize(from: data.assumingMemoryBound(to: T.self), count: count) }
        data?.deallocate()
        data = UnsafeMutableRawPointer(moved)
        capacity = newCapacity
    }

    /// Adds an integer.
    @inlinable @inline(__always)
    package func appendInteger(_ value: Int64) {
        if kind == .integers { push(value) } else { append(.int(value)) }
    }

    /// Adds a double.
    @inlinable @inline(__always)
    package func appendDouble(_ value: Double) {
        if kind == .doubles { push(value) } else { append(.double(value)) }
    }

    /// Adds a date, as seconds since 2001-01-01.
    @inlinable @inline(__always)
    package func appendDate(secondsSinceReferenceDate seconds: Double) {
        if kind == .dates { push(seconds) } else { append(.date(Date(timeIntervalSinceReferenceDate: seconds))) }
    }

    /// Adds a boolean.
    @inlinable @inline(__always)
    package func appendBool(_ value: Bool) {
        if kind == .booleans { push(value) } else { append(.bool(value)) }
    }

    /// Adds a string.
    @inlinable @inline(__always)
    package func appendString(_ value: String) {
        if kind == .strings { push(Optional(value)) } else { append(.string(value)) }
    }

    /// Adds nil.
    @inlinable
    package func appendNull() {
        switch kind {
        case .nulls: count &+= 1
        case .integers: push(Int64(0)); nulls.insert(count &- 1)
        case .doubles, .dates: push(0.0); nulls.insert(count &- 1)
        case .booleans: push(false); nulls.insert(count &- 1)
        case .strings: push(String?.none)
        case .values: push(PredicateValue.null)
        }
    }

    /// Adds any value.
    @usableFromInline
    package func append(_ value: PredicateValue) {
        switch (kind, value) {
        case (_, .null): appendNull()
        case (.integers, .int(let v)): push(v)
        case (.doubles, .double(let v)): push(v)
        case (.dates, .date(let v)): push(v.timeIntervalSinceReferenceDate)
        case (.booleans, .bool(let v)): push(v)
        case (.strings, .string(let v)): push(Optional(v))
        case (.values, _): push(value)
        case (.nulls, _):
            start(Self.kind(of: value))
            append(value)
        default:
            demote()
            push(value)
        }
    }

    /// The kind of column a first value that is not nil makes.
    private static func kind(of value: PredicateValue) -> ColumnKind {
        switch value {
        case .int: return .integers
        case .double: return .doubles
        case .date: return .dates
        case .bool: return .booleans
        case .string: return .strings
        default: return .values
        }
    }

    /// Makes the buffer for `kind`, holding nil for the rows added so far.
    private func start(_ kind: ColumnKind) {
        let leading = count
        count = 0
        self.kind = kind
        for _ in 0..<leading { appendNull() }
        if leading == 0 { reserve(for: kind) }
    }

    /// A first buffer, for a column whose first row is not nil.
    private func reserve(for kind: ColumnKind) {
        switch kind {
        case .integers: grow(Int64.self, to: firstCapacity)
        case .doubles, .dates: grow(Double.self, to: firstCapacity)
        case .booleans: grow(Bool.self, to: firstCapacity)
        case .strings: grow(String?.self, to: firstCapacity)
        case .values: grow(PredicateValue.self, to: firstCapacity)
        case .nulls: break
        }
    }

    /// The value of a row added (for a column turning into plain values).
    private func value(_ row: Int) -> PredicateValue {
        let column = RawColumn(kind: kind, data: data, nulls: nil)
        let word = row >> 6
        if word < nulls.words.count, nulls.words[word] & (1 << UInt64(row & 63)) != 0 { return .null }
        return column.value(row)
    }

    /// Turns the column into plain values.
    private func demote() {
        let values = (0..<count).map(value)
        free()
        kind = .values
        nulls = NullMask()
        count = 0
        grow(PredicateValue.self, to: max(16, values.count * 2))
        for value in values { push(value) }
    }

    /// The column for a batch, in a buffer of exactly its rows; the builder
    /// gives the buffer up and is empty afterwards.
    func take() -> RawColumn {
        firstCapacity = max(16, count)
        if capacity != count {
            shrink()
        }
        let column = RawColumn(kind: kind, data: data, nulls: nulls.buffer(rows: count))
        data = nil
        capacity = 0
        count = 0
        kind = .nulls
        nulls = NullMask()
        return column
    }

    /// Moves the values to a buffer of exactly their count.
    private func shrink() {
        switch kind {
        case .integers: grow(Int64.self, to: max(count, 1))
        case .doubles, .dates: grow(Double.self, to: max(count, 1))
        case .booleans: grow(Bool.self, to: max(count, 1))
        case .strings: grow(String?.self, to: max(count, 1))
        case .values: grow(PredicateValue.self, to: max(count, 1))
        case .nulls: break
        }
    }
}

/// Rows of one entity as a store delivers them, made into nodes: the first
/// few as nodes of their own (a batch's columns cost more than they save
/// for a few rows), and past that the rows by column, in batches of
/// `batchRows`.
@usableFromInline
package struct RowCollector {
    /// Up to this many rows are nodes of their own.
    @usableFromInline package static let fewRows = 8
    /// The rows of one batch, at most. A batch's columns are then made once
    /// at their size (no buffer grown and copied, none copied to its exact
    /// size at the end), and a column of 8-byte values (32 KB) or of
    /// strings (64 KB) is small enough for the allocator to hand memory
    /// freed by an earlier fetch back, with no new pages to fault in.
    @usableFromInline package static let batchRows = 4096
    private let entity: Int
    private let root: Int
    private let attributeCount: Int
    private let toOneCount: Int
    private let toManyCount: Int
    /// The first rows, as nodes of their own.
    @usableFromInline var few: [RowNode] = []
    /// The rows by column, once there are more than a few.
    @usableFromInline var builder: RowBatchBuilder?
    /// The batches made so far (each of `batchRows` rows), and their rows.
    private var made: [RowBatch] = []
    private var madeRows = 0
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
    package var count: Int { builder.map { madeRows &+ $0.count } ?? few.count }

    /// Adds a row (its to-many relationships not loaded); returns its index
    /// among the rows added.
    package mutating func append(key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?], now: Double) -> Int {
        if builder == nil {
            if few.count < Self.fewRows {
                few.append(RowNode(id: ObjectID(entity: entity, root: root, primaryKey: key), version: version,
                                   fetchTimestamp: now, values: values, toOne: toOne, toMany: unloaded))
                return few.count - 1
            }
            startColumns()
        }
        if builder.unsafelyUnwrapped.count == Self.batchRows { finishBatch(now: now) }
        let builder = self.builder.unsafelyUnwrapped
        let index = madeRows &+ builder.count
        builder.append(key: key, version: version, values: values, toOne: toOne)
        return index
    }

    /// Makes the rows by column so far a batch; the builder starts afresh.
    @usableFromInline
    mutating func finishBatch(now: Double) {
        let batch = builder.unsafelyUnwrapped.batch(fetchTimestamp: now)
        made.append(batch)
        madeRows &+= batch.count
    }

    /// Moves the few rows into columns: the rows from now on are laid out by column.
    @usableFromInline
    mutating func startColumns() {
        let made = RowBatchBuilder(entity: entity, root: root, attributeCount: attributeCount,
                                   toOneCount: toOneCount, toManyCount: toManyCount)
        for node in few { made.append(key: node.id.primaryKey, version: node.version, values: node.values, toOne: node.toOne) }
        few = []
        builder = made
    }

    /// Starts a row to be added by column (`RowBatchBuilder`), once the
    /// rows are past the few kept as nodes of their own; nil before, when
    /// the row is to be added whole (`append`). A full batch is made (as
    /// fetched at `now`) before the row starts. The builder is unretained
    /// (no retain and release per row): use it through
    /// `_withUnsafeGuaranteedRef`, before the collector's next call.
    @inlinable @inline(__always)
    package mutating func beginColumnarRow(key: Int64, version: Int64, now: Double) -> Unmanaged<RowBatchBuilder>? {
        if builder == nil {
            guard few.count >= Self.fewRows else { return nil }
            startColumns()
        }
        if builder.unsafelyUnwrapped.count == Self.batchRows { finishBatch(now: now) }
        let builder = Unmanaged.passUnretained(self.builder.unsafelyUnwrapped)
        builder._withUnsafeGuaranteedRef { $0.beginRow(key: key, version: version) }
        return builder
    }

    /// The nodes of the rows added, by index, fetched at `now`; the
    /// collector starts afresh.
    package mutating func take(now: Double) -> [RowNode] {
        guard let batches = takeBatches(now: now) else {
            defer { few = [] }
            return few
        }
        return RowNode.nodes(of: batches)
    }

    /// The batches of the rows added, in order, fetched at `now` (no node
    /// made per row); nil, and nothing taken, while the rows are the few
    /// kept as nodes of their own (`take`). The collector starts afresh.
    package mutating func takeBatches(now: Double) -> [RowBatch]? {
        guard let builder else { return nil }
        if builder.count > 0 { finishBatch(now: now) }
        defer { self.builder = nil; few = []; made = []; madeRows = 0 }
        return made
    }
}

extension RowNode {
    /// A node for every row of each of `batches`, in order.
    package static func nodes(of batches: [RowBatch]) -> [RowNode] {
        var nodes: [RowNode] = []
        nodes.reserveCapacity(batches.reduce(0) { $0 &+ $1.count })
        for batch in batches {
            for row in 0..<batch.count { nodes.append(RowNode(batch: batch, row: row)) }
        }
        return nodes
    }
}
