// The store API's compact form of rows (`application/vnd.sift.rows`,
// openapi.yaml's `CompactRows`): the answer of a fetch of objects, of objects
// by key and of destinations, in binary, for a client that asks for it in
// `Accept` (the remote store does; JSON stays the default). Each entity is
// declared once (its attributes' names and column types, its to-one
// relationships' names); each row then gives its key, version and values in
// that order, every value in its column's type (an integer as 8 bytes, a date
// as its seconds' 8 bytes, a string as its UTF-8 bytes), so the server writes
// them from its row cache's values without JSON, and the client reads them
// straight into the row cache's batches (`RowCollector`), with no row by name,
// no JSON container and no per-value conversion between. A value its column's
// type does not carry (a store holding a string in an integer column, an
// undefined attribute's) is a typed value, read by its kind. Measured against
// the JSON form on the benchmarks' `remote` section: the JSON answer's
// encoding and decoding through the generated code's containers were
// nine tenths of a large fetch's time through the server.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
internal import Foundation
import Sift
import SiftStore

/// The compact form of rows: its content type and its codes.
package enum CompactRows {
    /// The content type a client asks for in `Accept`.
    package static let contentType = "application/vnd.sift.rows"
    /// What `Accept` says for an answer in the compact form, or else in JSON.
    package static let accept = "\(contentType), application/json;q=0.5"
    /// The first bytes of a body: `SIFT` and the format's version.
    package static let magic: [UInt8] = [0x53, 0x49, 0x46, 0x54, 1]
    /// Values nest at most this deep (arrays, dictionaries).
    static let depthLimit = 64

    /// A record's tag: rows' (an answer's), a change set's, a save answer's.
    package enum Record: UInt8 {
        case end = 0, entity = 1, object = 2, related = 3, links = 4, page = 5
        case insert = 6, update = 7, delete = 8, linkChange = 9, kept = 10, identity = 11
        case versions = 12, keys = 13, token = 14
    }

    /// A column's type, and a typed value's kind.
    package enum Kind: UInt8 {
        case none = 0, integer = 1, double = 2, boolean = 3, string = 4, date = 5, bytes = 6, uuid = 7
        case object = 8, array = 9, dictionary = 10

        /// The column type of an attribute of `type`.
        package init(_ type: AttributeType) {
            switch type {
            case .integer16, .integer32, .integer64: self = .integer
            case .double, .float, .decimal: self = .double
            case .boolean: self = .boolean
            case .string, .uri: self = .string
            case .date: self = .date
            case .binary, .transformable: self = .bytes
            case .uuid: self = .uuid
            default: self = .none
            }
        }
    }

    /// Whether a content type (a response's `Content-Type`) names the compact form.
    package static func isCompact(_ contentType: String?) -> Bool {
        guard let contentType else { return false }
        return contentType.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == Self.contentType
    }

    /// Whether an `Accept` header's content types include the compact form.
    package static func accepts(_ contentTypes: [String]) -> Bool {
        contentTypes.contains { $0.lowercased() == contentType }
    }
}

// MARK: Writing

/// Bytes of the compact form, appended to one buffer.
package struct CompactWriter {
    package var bytes: [UInt8] = []

    /// A writer of a body: the magic, with room for `capacity` bytes.
    package init(capacity: Int = 1 << 16) {
        // (Grown by appending, which doubles: a `reserveCapacity` per row would copy the whole body each time.)
        bytes.reserveCapacity(capacity)
        bytes.append(contentsOf: CompactRows.magic)
    }

    @inline(__always) package mutating func u8(_ value: UInt8) { bytes.append(value) }
    @inline(__always) package mutating func u32(_ value: UInt32) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) package mutating func i64(_ value: Int64) { withUnsafeBytes(of: value.littleEndian) { bytes.append(contentsOf: $0) } }
    @inline(__always) package mutating func f64(_ value: Double) { i64(Int64(bitPattern: value.bitPattern)) }
    /// A count (the body limits keep every count far below 2^32).
    @inline(__always) package mutating func count(_ value: Int) { u32(UInt32(clamping: value)) }
    /// A record's tag.
    @inline(__always) package mutating func record(_ record: CompactRows.Record) { u8(record.rawValue) }

    package mutating func string(_ value: String) {
        var value = value
        value.withUTF8 { utf8 in
            count(utf8.count)
            bytes.append(contentsOf: utf8)
        }
    }

    mutating func data(_ value: Data) {
        count(value.count)
        bytes.append(contentsOf: value)
    }

    mutating func uuid(_ value: UUID) {
        withUnsafeBytes(of: value.uuid) { bytes.append(contentsOf: $0) }
    }

    /// A value in its column's type, when it is of that type (true), else nothing (false).
    mutating func plain(_ value: PredicateValue, _ kind: CompactRows.Kind) -> Bool {
        switch (kind, value) {
        case (.integer, .int(let i)): i64(i)
        case (.double, .double(let d)): f64(d)
        case (.boolean, .bool(let b)): u8(b ? 1 : 0)
        case (.string, .string(let s)): string(s)
        case (.date, .date(let date)): f64(date.timeIntervalSinceReferenceDate)
        case (.bytes, .data(let d)): data(d)
        case (.uuid, .uuid(let u)): uuid(u)
        default: return false
        }
        return true
    }

    /// A typed value: its kind, then the value.
    mutating func typed(_ value: PredicateValue) {
        switch value {
        case .null: u8(CompactRows.Kind.none.rawValue)
        case .int: u8(CompactRows.Kind.integer.rawValue); _ = plain(value, .integer)
        case .double: u8(CompactRows.Kind.double.rawValue); _ = plain(value, .double)
        case .bool: u8(CompactRows.Kind.boolean.rawValue); _ = plain(value, .boolean)
        case .string: u8(CompactRows.Kind.string.rawValue); _ = plain(value, .string)
        case .date: u8(CompactRows.Kind.date.rawValue); _ = plain(value, .date)
        case .data: u8(CompactRows.Kind.bytes.rawValue); _ = plain(value, .bytes)
        case .uuid: u8(CompactRows.Kind.uuid.rawValue); _ = plain(value, .uuid)
        case .object(let reference):
            u8(CompactRows.Kind.object.rawValue)
            string(reference.entity)
            i64(reference.id)
        case .array(let values):
            u8(CompactRows.Kind.array.rawValue)
            count(values.count)
            for element in values { typed(element) }
        case .dictionary(let members):
            u8(CompactRows.Kind.dictionary.rawValue)
            count(members.count)
            for (key, member) in members.sorted(by: { $0.key < $1.key }) {
                string(key)
                typed(member)
            }
        }
    }

    /// A cell read straight from a typed column: nil, or the value in its column's type.
    @inline(__always) mutating func cell<Value>(_ value: Value?, _ write: (inout CompactWriter, Value) -> Void) {
        guard let value else { return u8(0) }
        u8(1)
        write(&self, value)
    }

    /// A cell: nil, a value in its column's type, or a typed value.
    package mutating func cell(_ value: PredicateValue, _ kind: CompactRows.Kind) {
        if value == .null { return u8(0) }
        let mark = bytes.count
        u8(1)
        if plain(value, kind) { return }
        bytes[mark] = 2
        typed(value)
    }
}

/// The entities a body declares: each one's number and column types, declared before its first use.
package struct CompactDeclarations {
    /// Each declared entity's number, by its index in the model.
    private var numbers: [Int: UInt32] = [:]
    /// Each declared entity's column types, by its number.
    package private(set) var kinds: [[CompactRows.Kind]] = []
    /// Each declared entity's count of to-one relationships, by its number.
    package private(set) var toOneCounts: [Int] = []

    package init() {}

    /// The number of the entity at `index` in `model`, declared in `writer` the first time (the entity read
    /// from the model only then: a copy of it per row cost a tenth of a large fetch's time on the server).
    package mutating func number(ofEntityAt index: Int, in model: DataModel, writer: inout CompactWriter) -> UInt32 {
        if let number = numbers[index] { return number }
        return number(of: model.entities[index], in: &writer)
    }

    /// The number of `entity`, declared in `writer` (its attributes' names and column types, its to-one
    /// relationships' names) the first time.
    package mutating func number(of entity: Entity, in writer: inout CompactWriter) -> UInt32 {
        if let number = numbers[entity.index] { return number }
        let number = UInt32(clamping: kinds.count)
        numbers[entity.index] = number
        let columns = entity.attributes.map { CompactRows.Kind($0.type) }
        kinds.append(columns)
        toOneCounts.append(entity.toOneCount)
        writer.record(.entity)
        writer.u32(number)
        writer.string(entity.name)
        writer.count(entity.attributes.count)
        for (attribute, kind) in zip(entity.attributes, columns) {
            writer.string(attribute.name)
            writer.u8(kind.rawValue)
        }
        let toOne = entity.relationships.filter { !$0.isToMany }
        writer.count(toOne.count)
        for relationship in toOne { writer.string(relationship.name) }
        return number
    }
}

/// Rows written in the compact form (the server's side): each entity
/// declared before its first row, then the rows in the order given.
package struct CompactRowEncoder {
    private let model: DataModel
    private var writer = CompactWriter()
    private var declarations = CompactDeclarations()

    /// An encoder of rows of `model`'s entities.
    package init(model: DataModel) {
        self.model = model
    }

    /// Adds a row: an object the request selects, or (`related`) one a prefetched key path reaches.
    package mutating func add(_ node: RowNode, related: Bool = false) {
        let number = declarations.number(ofEntityAt: node.id.entity, in: model, writer: &writer)
        writer.record(related ? .related : .object)
        writer.u32(number)
        writer.i64(node.id.primaryKey)
        writer.i64(node.version)
        // Each cell from its column of the node's batch: a typed read where the column stores the column
        // type's values (no value built), the value otherwise.
        let (batch, row) = (node.batch, node.row)
        for (slot, kind) in declarations.kinds[Int(number)].enumerated() {
            switch kind {
            case .integer: if let read = batch.value(slot: slot, row: row, as: Int64.self) { writer.cell(read) { $0.i64($1) }; continue }
            case .double: if let read = batch.value(slot: slot, row: row, as: Double.self) { writer.cell(read) { $0.f64($1) }; continue }
            case .boolean:
                if let read = batch.value(slot: slot, row: row, as: Bool.self) { writer.cell(read) { $0.u8($1 ? 1 : 0) }; continue }
            case .string: if let read = batch.value(slot: slot, row: row, as: String.self) { writer.cell(read) { $0.string($1) }; continue }
            case .date:
                if let read = batch.value(slot: slot, row: row, as: Date.self) {
                    writer.cell(read) { $0.f64($1.timeIntervalSinceReferenceDate) }
                    continue
                }
            default: break
            }
            writer.cell(batch.value(slot: slot, row: row), kind)
        }
        for slot in 0..<declarations.toOneCounts[Int(number)] {
            if let key = node.toOneKey(at: slot) {
                writer.u8(1)
                writer.i64(key)
            } else {
                writer.u8(0)
            }
        }
    }

    /// Adds a to-many relationship's members for one owner.
    package mutating func addLinks(entity: String, relationship: String, owner: Int64, members: [Int64]) {
        writer.u8(CompactRows.Record.links.rawValue)
        writer.string(entity)
        writer.string(relationship)
        writer.i64(owner)
        writer.count(members.count)
        for member in members { writer.i64(member) }
    }

    /// Adds what a page of a fetch says: whether it is complete, and the cursor of the next one.
    package mutating func addPage(complete: Bool, next: String?) {
        writer.u8(CompactRows.Record.page.rawValue)
        writer.u8(complete ? 1 : 0)
        if let next {
            writer.u8(1)
            writer.string(next)
        } else {
            writer.u8(0)
        }
    }

    /// The body: the records added, then the end.
    package mutating func finish() -> [UInt8] {
        writer.u8(CompactRows.Record.end.rawValue)
        return writer.bytes
    }
}

// MARK: Reading

/// Reads the compact form from a buffer; every read is bounded by what is left.
package struct CompactReader {
    let base: UnsafeRawBufferPointer
    package private(set) var offset = 0

    /// A reader of `base`, at its start (before the magic: see ``magic()``).
    package init(_ base: UnsafeRawBufferPointer) { self.base = base }

    /// How many bytes are left.
    package var remaining: Int { base.count &- offset }

    /// Reads the magic and the format's version.
    package mutating func magic() throws(WireError) {
        for byte in CompactRows.magic {
            guard try u8() == byte else { throw WireError("the body is not of the compact rows' form (version 1)") }
        }
    }

    /// A record's tag.
    package mutating func record() throws(WireError) -> CompactRows.Record {
        let raw = try u8()
        guard let record = CompactRows.Record(rawValue: raw) else { throw WireError("\(raw) is not a record of the compact rows") }
        return record
    }

    @inline(__always) mutating func need(_ count: Int) throws(WireError) {
        guard count >= 0, count <= remaining else { throw WireError("the compact rows end in the middle of a value (at byte \(offset))") }
    }

    @inline(__always) package mutating func u8() throws(WireError) -> UInt8 {
        try need(1)
        defer { offset &+= 1 }
        return base[offset]
    }

    @inline(__always) package mutating func u32() throws(WireError) -> UInt32 {
        try need(4)
        defer { offset &+= 4 }
        return UInt32(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always) package mutating func i64() throws(WireError) -> Int64 {
        try need(8)
        defer { offset &+= 8 }
        return Int64(littleEndian: base.loadUnaligned(fromByteOffset: offset, as: Int64.self))
    }

    @inline(__always) mutating func f64() throws(WireError) -> Double {
        Double(bitPattern: UInt64(bitPattern: try i64()))
    }

    /// A count of things each at least `size` bytes long: never more than the bytes left could hold.
    package mutating func count(of size: Int) throws(WireError) -> Int {
        let count = Int(try u32())
        guard count <= remaining / max(size, 1) else { throw WireError("the compact rows count \(count) things past their end") }
        return count
    }

    mutating func bytes() throws(WireError) -> UnsafeRawBufferPointer {
        let count = Int(try u32())
        try need(count)
        defer { offset &+= count }
        return UnsafeRawBufferPointer(rebasing: base[offset..<(offset &+ count)])
    }

    package mutating func string() throws(WireError) -> String {
        String(decoding: try bytes(), as: UTF8.self)
    }

    mutating func data() throws(WireError) -> Data { Data(try bytes()) }

    mutating func uuid() throws(WireError) -> UUID {
        try need(16)
        defer { offset &+= 16 }
        var bytes: uuid_t = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &bytes) { $0.copyMemory(from: UnsafeRawBufferPointer(rebasing: base[offset..<(offset &+ 16)])) }
        return UUID(uuid: bytes)
    }

    package mutating func bool() throws(WireError) -> Bool {
        switch try u8() {
        case 0: return false
        case 1: return true
        case let other: throw WireError("a boolean is 0 or 1 in the compact rows, not \(other)")
        }
    }

    package mutating func kind() throws(WireError) -> CompactRows.Kind {
        let raw = try u8()
        guard let kind = CompactRows.Kind(rawValue: raw) else { throw WireError("\(raw) is not a kind of value in the compact rows") }
        return kind
    }

    /// A value in a column's type.
    package mutating func plain(_ kind: CompactRows.Kind) throws(WireError) -> PredicateValue {
        switch kind {
        case .integer: return .int(try i64())
        case .double: return .double(try f64())
        case .boolean: return .bool(try bool())
        case .string: return .string(try string())
        case .date: return .date(Date(timeIntervalSinceReferenceDate: try f64()))
        case .bytes: return .data(try data())
        case .uuid: return .uuid(try uuid())
        case .none, .object, .array, .dictionary: throw WireError("a column of the compact rows has no type to read a plain value by")
        }
    }

    /// A typed value: its kind, then the value.
    package mutating func typed(depth: Int = 0) throws(WireError) -> PredicateValue {
        guard depth < CompactRows.depthLimit else { throw WireError("a value is nested more than \(CompactRows.depthLimit) deep") }
        let kind = try kind()
        switch kind {
        case .none: return .null
        case .object:
            let entity = try string()
            return .object(ObjectReference(entity: entity, id: try i64()))
        case .array:
            let count = try count(of: 1)
            var values: [PredicateValue] = []
            values.reserveCapacity(count)
            for _ in 0..<count { values.append(try typed(depth: depth + 1)) }
            return .array(values)
        case .dictionary:
            let count = try count(of: 5)
            var members: [String: PredicateValue] = [:]
            for _ in 0..<count {
                let key = try string()
                members[key] = try typed(depth: depth + 1)
            }
            return .dictionary(members)
        default:
            return try plain(kind)
        }
    }
}

/// A compact answer read into the row cache's form.
package struct CompactAnswer {
    /// The objects the request selected, in its order.
    package var objects: [RowNode] = []
    /// The rows prefetched key paths and destinations reached.
    package var related: [RowNode] = []
    /// To-many relationships' members: owner's entity, relationship, owner, members.
    package var links: [(entity: String, relationship: String, owner: Int64, members: [Int64])] = []
    /// Whether the page is complete (nil when the answer does not say).
    package var complete: Bool?
    /// The next page's cursor.
    package var next: String?

    /// Reads a body of the compact form, its rows checked against `model` (the server's): each value
    /// must be one its attribute holds, each key positive.
    ///
    /// - Throws: `WireError` for a body that is not of the compact form or does not fit the model.
    package init(_ body: UnsafeRawBufferPointer, model: DataModel) throws(WireError) {
        var reader = CompactReader(body)
        try reader.magic()
        let now = Date().timeIntervalSinceReferenceDate
        var layouts: [CompactLayout] = []
        var objects = CompactCollection(), related = CompactCollection()
        reading: while true {
            let record = try reader.record()
            switch record {
            case .end:
                break reading
            case .entity:
                let number = try reader.u32()
                guard number == layouts.count else { throw WireError("the compact rows number their entities 0, 1, … in order") }
                layouts.append(try CompactLayout(&reader, model: model))
            case .object, .related:
                let number = Int(try reader.u32())
                guard number < layouts.count else { throw WireError("a row of the compact rows names an entity not declared before it") }
                if record == .object {
                    try objects.add(&reader, layouts[number], now: now)
                } else {
                    try related.add(&reader, layouts[number], now: now)
                }
            case .links:
                let entity = try reader.string()
                let relationship = try reader.string()
                let owner = try reader.i64()
                let count = try reader.count(of: 8)
                var members: [Int64] = []
                members.reserveCapacity(count)
                for _ in 0..<count { members.append(try reader.i64()) }
                links.append((entity, relationship, owner, members))
            case .page:
                complete = try reader.bool()
                next = try reader.bool() ? try reader.string() : nil
            default:
                throw WireError("an answer of rows holds no record \(record.rawValue)")
            }
        }
        guard reader.remaining == 0 else { throw WireError("the compact rows go on after their end") }
        self.objects = objects.take(now: now)
        self.related = related.take(now: now)
    }
}

/// How the rows of one declared entity are read into the client's model (a class: each row passes it on, without copying the entity).
final class CompactLayout {
    let entity: Entity
    /// Each declared column: its type, and the slot and type of the attribute it fills (nil: none of the model's).
    let columns: [(kind: CompactRows.Kind, slot: Int?, type: AttributeType)]
    /// The to-one slot of each declared to-one relationship (nil: none of the model's).
    let toOne: [Int?]
    /// Whether the columns are the entity's attributes in slot order and the to-one relationships its own in
    /// slot order, each column of its attribute's type: the row then goes into the batch column by column.
    let inOrder: Bool

    init(_ reader: inout CompactReader, model: DataModel) throws(WireError) {
        let name = try reader.string()
        guard let entity = model.entity(named: name) else {
            throw WireError("the compact rows hold rows of '\(name.prefix(256))', which is not an entity of the model")
        }
        self.entity = entity
        var columns: [(kind: CompactRows.Kind, slot: Int?, type: AttributeType)] = []
        let count = try reader.count(of: 5)
        for _ in 0..<count {
            let attribute = entity.attribute(named: try reader.string())
            let kind = try reader.kind()
            guard kind.rawValue <= CompactRows.Kind.uuid.rawValue else { throw WireError("a column's type is \(kind.rawValue), not a column type") }
            columns.append((kind, attribute?.slot, attribute?.type ?? .undefined))
        }
        var toOne: [Int?] = []
        let toOneCount = try reader.count(of: 4)
        for _ in 0..<toOneCount {
            let relationship = entity.relationship(named: try reader.string())
            toOne.append(relationship.flatMap { $0.isToMany ? nil : $0.slot })
        }
        self.columns = columns
        self.toOne = toOne
        inOrder = columns.count == entity.attributes.count && toOne.count == entity.toOneCount
            && columns.enumerated().allSatisfy { index, column in column.slot == index && column.kind == CompactRows.Kind(column.type) }
            && toOne.enumerated().allSatisfy { $1 == $0 }
    }

    /// A cell, as its attribute holds it (nil for a column of no attribute).
    @inline(__always)
    func cell(_ reader: inout CompactReader, _ column: Int, key: Int64) throws(WireError) -> PredicateValue {
        let (kind, slot, type) = columns[column]
        switch try reader.u8() {
        case 0: return .null
        case 1:
            let value = try reader.plain(kind)
            if case .int(let i) = value, let range = type.integerRange, !range.contains(i) { throw mismatch(value, column, key: key) }
            guard slot != nil, kind == CompactRows.Kind(type) else { return try converted(value, column, key: key) }
            return value
        case 2: return try converted(try reader.typed(), column, key: key)
        case let other: throw WireError("a cell of the compact rows starts with 0, 1 or 2, not \(other)")
        }
    }

    private func converted(_ value: PredicateValue, _ column: Int, key: Int64) throws(WireError) -> PredicateValue {
        guard columns[column].slot != nil else { return value }
        guard let converted = columns[column].type.convert(value) else { throw mismatch(value, column, key: key) }
        return converted
    }

    private func mismatch(_ value: PredicateValue, _ column: Int, key: Int64) -> WireError {
        let attribute = entity.attributes[columns[column].slot ?? 0]
        return WireError("\(entity.name) \(key) has the value \(value) for '\(attribute.name)', \(attribute.type.mismatch(value))")
    }

    /// A to-one cell: a positive key or none.
    @inline(__always)
    func key(_ reader: inout CompactReader) throws(WireError) -> Int64? {
        switch try reader.u8() {
        case 0: return nil
        case 1:
            let key = try reader.i64()
            guard key > 0 else { throw WireError("a key in the compact rows is positive, not \(key)") }
            return key
        case let other: throw WireError("a to-one cell of the compact rows starts with 0 or 1, not \(other)")
        }
    }
}

/// Rows read in their order, each entity's into batches of its own (as the SQL stores read theirs).
struct CompactCollection {
    /// A collector for each entity met, and where each entity's is.
    private var collectors: [RowCollector] = []
    private var places: [Int: Int] = [:]
    /// Each row: its collector, and its index there.
    private var order: [(collector: Int, row: Int)] = []
    /// A row's values and to-one keys, when it is read by slot (reused from row to row).
    private var values: [PredicateValue] = []
    private var toOne: [Int64?] = []

    mutating func add(_ reader: inout CompactReader, _ layout: CompactLayout, now: Double) throws(WireError) {
        let key = try reader.i64()
        let version = try reader.i64()
        guard key > 0 else { throw WireError("a key in the compact rows is positive, not \(key)") }
        let entity = layout.entity
        let place: Int
        if let known = places[entity.index] {
            place = known
        } else {
            place = collectors.count
            places[entity.index] = place
            collectors.append(RowCollector(entity: entity.index, root: entity.rootIndex, attributeCount: entity.attributes.count,
                                           toOneCount: entity.toOneCount, toManyCount: entity.toManyCount))
        }
        if layout.inOrder, let unretained = collectors[place].beginColumnarRow(key: key, version: version, now: now) {
            // Straight into the batch's columns: no array of the row's values.
            let builder = unretained.takeUnretainedValue()
            for column in layout.columns.indices {
                let value = try layout.cell(&reader, column, key: key)
                builder.column(column)._withUnsafeGuaranteedRef { column in
                    switch value {
                    case .int(let i): column.appendInteger(i)
                    case .double(let d): column.appendDouble(d)
                    case .string(let s): column.appendString(s)
                    case .date(let date): column.appendDate(secondsSinceReferenceDate: date.timeIntervalSinceReferenceDate)
                    case .bool(let b): column.appendBool(b)
                    case .null: column.appendNull()
                    default: column.append(value)
                    }
                }
            }
            for slot in layout.toOne.indices { builder.appendToOne(slot, try layout.key(&reader)) }
            order.append((place, collectors[place].count &- 1))
            return
        }
        values.removeAll(keepingCapacity: true)
        values.append(contentsOf: repeatElement(.null, count: entity.attributes.count))
        toOne.removeAll(keepingCapacity: true)
        toOne.append(contentsOf: repeatElement(nil, count: entity.toOneCount))
        for column in layout.columns.indices {
            let value = try layout.cell(&reader, column, key: key)
            if let slot = layout.columns[column].slot { values[slot] = value }
        }
        for slot in layout.toOne {
            let key = try layout.key(&reader)
            if let slot { toOne[slot] = key }
        }
        order.append((place, collectors[place].append(key: key, version: version, values: values, toOne: toOne, now: now)))
    }

    /// The nodes, in the order the rows came.
    mutating func take(now: Double) -> [RowNode] {
        let made = collectors.indices.map { collectors[$0].take(now: now) }
        return order.map { made[$0.collector][$0.row] }
    }
}
#endif
