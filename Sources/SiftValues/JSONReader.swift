// Stage 0 (values): JSON text read straight into values.
//
// Data sets, atomic stores and `sift eval --data` read JSON documents of
// many megabytes. Foundation's readers build a Foundation object (or run a
// Decodable initializer that probes each value's type by failing) for every
// value first; this reader goes from UTF-8 bytes to `PredicateValue`s in one
// pass, with Sift's JSON conventions: `{"date": seconds}` (or ISO 8601 text) is a date,
// `{"object": {"entity": …, "id": …}}` an object reference. It reads RFC 8259
// JSON and nothing else (no comments, no trailing commas, no NaN), validates
// UTF-8, and bounds nesting; every failure is a `JSONReadError` with the
// line and column where the text went wrong.

import Foundation

/// Why a JSON text could not be read, and where.
public struct JSONReadError: Error, CustomStringConvertible, Sendable, Equatable {
    /// What is wrong.
    public var message: String
    /// The 1-based line and column (in characters) where reading stopped.
    public var line: Int
    /// The 1-based column, counted in characters, where reading stopped.
    public var column: Int

    public var description: String { "line \(line), column \(column): \(message)" }
}

/// Reads JSON text into `PredicateValue`s.
public enum JSONReader {
    /// The deepest nesting of arrays and objects read.
    public static let maximumDepth = 512

    /// Reads a whole JSON text: one value, with only white space around it.
    ///
    /// - Parameter data: The JSON text, as UTF-8 bytes.
    /// - Returns: The value, with Sift's conventions applied (`{"date": seconds}`
    ///   a date, `{"object": {"entity": …, "id": …}}` an object reference).
    /// - Throws: `JSONReadError`, with the line and column, when the text is not
    ///   valid JSON (or not valid UTF-8), nests deeper than `maximumDepth`, or
    ///   has anything but white space after the value.
    public static func value(from data: Data) throws(JSONReadError) -> PredicateValue {
        let bytes = [UInt8](data)
        return try bytes.withUnsafeBufferPointer { buffer throws(JSONReadError) in
            var reader = Reader(buffer)
            let value = try reader.document()
            return value
        }
    }

    /// Reads a JSON text whose value is an object, member by member: each
    /// member's value and the bytes it was read from (for a member that
    /// another reader takes, such as a data set's model).
    ///
    /// - Parameter data: The JSON text, as UTF-8 bytes.
    /// - Returns: Each member of the object, in the order written: its key, its
    ///   value, and the byte offsets of the value's text in `data`.
    /// - Throws: `JSONReadError`, with the line and column, when the text is not
    ///   a valid JSON object, nests deeper than `maximumDepth`, or has anything
    ///   but white space after it.
    public static func members(from data: Data) throws(JSONReadError) -> [(key: String, value: PredicateValue, range: Range<Int>)] {
        let bytes = [UInt8](data)
        return try bytes.withUnsafeBufferPointer { buffer throws(JSONReadError) in
            var reader = Reader(buffer)
            return try reader.topLevelMembers()
        }
    }
}

private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    var index = 0
    var depth = 0
    /// Member lists to reuse, one per object being read, so that an object's
    /// dictionary is made once at its size rather than grown member by member.
    var spareMembers: [[(String, PredicateValue)]] = []

    init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    // MARK: Errors

    func failure(_ message: String) -> JSONReadError {
        // Line and column of `index`, counted only when reading failed.
        var line = 1
        var lineStart = 0
        let end = min(index, bytes.count)
        for i in 0..<end where bytes[i] == 0x0A {
            line += 1
            lineStart = i + 1
        }
        let column = String(decoding: UnsafeBufferPointer(rebasing: bytes[lineStart..<end]), as: UTF8.self).count + 1
        return JSONReadError(message: message, line: line, column: column)
    }

    func describeCurrent() -> String {
        guard index < bytes.count else { return "the end of the text" }
        let byte = bytes[index]
        if byte >= 0x20 && byte < 0x7F { return "'\(Character(Unicode.Scalar(byte)))'" }
        return "the byte 0x" + String(byte, radix: 16, uppercase: true)
    }

    // MARK: Structure

    mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x0A, 0x0D, 0x09: index += 1
            default: return
            }
        }
    }

    /// Skips a UTF-8 byte order mark (allowed before the text) and white space.
    mutating func begin() {
        if bytes.count >= 3, bytes[0] == 0xEF, bytes[1] == 0xBB, bytes[2] == 0xBF { index = 3 }
        skipWhitespace()
    }

    /// Requires nothing but white space after the value.
    mutating func end() throws(JSONReadError) {
        skipWhitespace()
        guard index == bytes.count else { throw failure("expected the end of the text, found \(describeCurrent())") }
    }

    mutating func document() throws(JSONReadError) -> PredicateValue {
        begin()
        let value = try value()
        try end()
        return value
    }

    mutating func topLevelMembers() throws(JSONReadError) -> [(key: String, value: PredicateValue, range: Range<Int>)] {
        begin()
        guard index < bytes.count, bytes[index] == UInt8(ascii: "{") else {
            throw failure("expected an object, found \(describeCurrent())")
        }
        var list: [(key: String, value: PredicateValue, range: Range<Int>)] = []
        try members { list.append(($0, $1, $2)) }
        try end()
        return list
    }

    mutating func value() throws(JSONReadError) -> PredicateValue {
        guard index < bytes.count else { throw failure("expected a value, found the end of the text") }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try object()
        case UInt8(ascii: "["): return try array()
        case UInt8(ascii: "\""): return .string(try string())
        case UInt8(ascii: "t"): return try literal("true", .bool(true))
        case UInt8(ascii: "f"): return try literal("false", .bool(false))
        case UInt8(ascii: "n"): return try literal("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
        default: throw failure("expected a value, found \(describeCurrent())")
        }
    }

    mutating func literal(_ word: StaticString, _ value: PredicateValue) throws(JSONReadError) -> PredicateValue {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw failure("expected a value, found \(describeCurrent())") }
        let expected = UnsafeBufferPointer(start: word.utf8Start, count: count)
        for i in 0..<count where bytes[index + i] != expected[i] {
            throw failure("expected a value, found \(describeCurrent())")
        }
        index += count
        return value
    }

    mutating func enter() throws(JSONReadError) {
        depth += 1
        guard depth <= JSONReader.maximumDepth else {
            throw failure("arrays and objects nest deeper than \(JSONReader.maximumDepth)")
        }
    }

    mutating func array() throws(JSONReadError) -> PredicateValue {
        try enter()
        defer { depth -= 1 }
        index += 1
        var members: [PredicateValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(members)
        }
        while true {
            skipWhitespace()
            members.append(try value())
            skipWhitespace()
            guard index < bytes.count else { throw failure("expected ',' or ']' in an array, found the end of the text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "]") else { throw failure("expected ',' or ']' in an array, found \(describeCurrent())") }
            index += 1
            return .array(members)
        }
    }

    mutating func memberKey() throws(JSONReadError) -> String {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
            throw failure("expected a member name in quotes, found \(describeCurrent())")
        }
        let key = try string()
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else {
            throw failure("expected ':' after a member name, found \(describeCurrent())")
        }
        index += 1
        return key
    }

    /// The members of the object at `index` (its '{'), each handed to
    /// `body` with the bytes its value was read from, in order.
    mutating func members(_ body: (String, PredicateValue, Range<Int>) -> Void) throws(JSONReadError) {
        try enter()
        defer { depth -= 1 }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return
        }
        while true {
            skipWhitespace()
            let key = try memberKey()
            skipWhitespace()
            let start = index
            let value = try value()
            body(key, value, start..<index)
            skipWhitespace()
            guard index < bytes.count else { throw failure("expected ',' or '}' in an object, found the end of the text") }
            if bytes[index] == UInt8(ascii: ",") {
                index += 1
                continue
            }
            guard bytes[index] == UInt8(ascii: "}") else { throw failure("expected ',' or '}' in an object, found \(describeCurrent())") }
            index += 1
            return
        }
    }

    mutating func object() throws(JSONReadError) -> PredicateValue {
        let start = index
        var list = spareMembers.popLast() ?? []
        list.removeAll(keepingCapacity: true)
        try self.members { key, value, _ in list.append((key, value)) }
        var members = [String: PredicateValue](minimumCapacity: list.count)
        // A repeated name: the last value, as Foundation's readers keep.
        for (key, value) in list { members[key] = value }
        list.removeAll(keepingCapacity: true)
        spareMembers.append(list)
        // Sift's conventions for values JSON has no type for.
        if members.count == 1 {
            if let date = members["date"] {
                switch date {
                case .int(let seconds): return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
                case .double(let seconds): return .date(Date(timeIntervalSinceReferenceDate: seconds))
                case .string(let text) where text.utf8.count <= 64:
                    if let parsed = PredicateValue.iso8601Date(text) { return .date(parsed) }
                    index = start
                    throw failure("{\"date\": …} must hold a number of seconds since 2001 or ISO 8601 text (\"2024-05-01T09:30:00Z\")")
                default:
                    index = start
                    throw failure("{\"date\": …} must hold a number of seconds since 2001 or ISO 8601 text (\"2024-05-01T09:30:00Z\")")
                }
            }
            if let reference = members["object"] {
                guard case .dictionary(let fields) = reference, case .string(let entity)? = fields["entity"],
                      case .int(let id)? = fields["id"] else {
                    index = start
                    throw failure("{\"object\": …} must hold {\"entity\": name, \"id\": integer}")
                }
                return .object(ObjectReference(entity: entity, id: id))
            }
        }
        return .dictionary(members)
    }

    // MARK: Strings

    mutating func string() throws(JSONReadError) -> String {
        index += 1
        let start = index
        // Every byte or'ed together: below 0x80, the text is ASCII, valid as it is.
        var bits: UInt8 = 0
        // The common case: no escapes, so the text is the bytes themselves.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let text: String
                if bits < 0x80 {
                    text = String(decoding: slice, as: UTF8.self)
                } else {
                    guard let valid = String(validating: slice, as: UTF8.self) else {
                        throw failure("a string holds bytes that are not UTF-8")
                    }
                    text = valid
                }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw failure("a string holds an unescaped control character (0x\(String(byte, radix: 16)))") }
            bits |= byte
            index += 1
        }
        guard index < bytes.count else {
            index = start - 1
            throw failure("a string is not closed")
        }
        // With escapes: collect the bytes, then validate them once.
        var collected = [UInt8](UnsafeBufferPointer(rebasing: bytes[start..<index]))
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                index += 1
                guard let text = String(validating: collected, as: UTF8.self) else {
                    throw failure("a string holds bytes that are not UTF-8")
                }
                return text
            case UInt8(ascii: "\\"):
                index += 1
                guard index < bytes.count else { break }
                let escape = bytes[index]
                index += 1
                switch escape {
                case UInt8(ascii: "\""): collected.append(0x22)
                case UInt8(ascii: "\\"): collected.append(0x5C)
                case UInt8(ascii: "/"): collected.append(0x2F)
                case UInt8(ascii: "b"): collected.append(0x08)
                case UInt8(ascii: "f"): collected.append(0x0C)
                case UInt8(ascii: "n"): collected.append(0x0A)
                case UInt8(ascii: "r"): collected.append(0x0D)
                case UInt8(ascii: "t"): collected.append(0x09)
                case UInt8(ascii: "u"):
                    var scalar = try hex4()
                    if (0xD800...0xDBFF).contains(scalar) {
                        // A high surrogate must be followed by an escaped low one.
                        guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u") else {
                            throw failure("a \\u escape holds a lone surrogate")
                        }
                        index += 2
                        let low = try hex4()
                        guard (0xDC00...0xDFFF).contains(low) else { throw failure("a \\u escape holds a lone surrogate") }
                        scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                    } else if (0xDC00...0xDFFF).contains(scalar) {
                        throw failure("a \\u escape holds a lone surrogate")
                    }
                    collected.append(contentsOf: String(Character(Unicode.Scalar(scalar)!)).utf8)
                default:
                    index -= 1
                    throw failure("'\\\(Character(Unicode.Scalar(escape)))' is not an escape of JSON")
                }
            default:
                guard byte >= 0x20 else { throw failure("a string holds an unescaped control character (0x\(String(byte, radix: 16)))") }
                collected.append(byte)
                index += 1
            }
        }
        index = start - 1
        throw failure("a string is not closed")
    }

    mutating func hex4() throws(JSONReadError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw failure("a \\u escape needs four hexadecimal digits") }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt32
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
            default: throw failure("a \\u escape needs four hexadecimal digits")
            }
            value = value << 4 | digit
            index += 1
        }
        return value
    }

    // MARK: Numbers

    /// An integer when written as one and within Int64; a double otherwise.
    mutating func number() throws(JSONReadError) -> PredicateValue {
        let start = index
        var negative = false
        if bytes[index] == UInt8(ascii: "-") {
            negative = true
            index += 1
        }
        guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
            throw failure("expected a digit, found \(describeCurrent())")
        }
        var magnitude: UInt64 = 0
        var overflow = false
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
            if index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                throw failure("a number has a leading zero")
            }
        } else {
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) {
                let (times, o1) = magnitude.multipliedReportingOverflow(by: 10)
                let (plus, o2) = times.addingReportingOverflow(UInt64(bytes[index] - UInt8(ascii: "0")))
                overflow = overflow || o1 || o2
                magnitude = plus
                index += 1
            }
        }
        var integral = true
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            integral = false
            index += 1
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                throw failure("a number needs a digit after '.'")
            }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            integral = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) else {
                throw failure("a number needs a digit in its exponent")
            }
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
        }
        if integral && !overflow {
            if negative {
                if magnitude <= UInt64(Int64.max) { return .int(-Int64(magnitude)) }
                if magnitude == UInt64(Int64.max) + 1 { return .int(Int64.min) }
            } else if magnitude <= UInt64(Int64.max) {
                return .int(Int64(magnitude))
            }
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        guard let double = Double(text), double.isFinite else {
            index = start
            throw failure("the number \(text) is out of range")
        }
        return .double(double)
    }
}

extension JSONReadError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
