// The JSON reader: RFC 8259 text straight into values, with Sift's
// conventions ({"date": …}, {"object": …}); every malformed text a typed
// error with its line and column; the same values as the Decodable path
// it replaced (JSONDecoder) on random documents and on every fixture.

import Foundation
import PropertyBased
import Sift
import Testing

@Suite("JSON reader")
struct JSONReaderTests {
    static func read(_ text: String) throws(JSONReadError) -> PredicateValue {
        try JSONReader.value(from: Data(text.utf8))
    }

    @Test("Values and conventions", arguments: [
        ("null", PredicateValue.null), ("true", .bool(true)), ("false", .bool(false)), ("0", .int(0)), ("-0", .int(0)),
        ("42", .int(42)), ("-9223372036854775808", .int(Int64.min)), ("9223372036854775807", .int(Int64.max)),
        ("9223372036854775808", .double(9223372036854775808)), ("1.5", .double(1.5)), ("-2.5e3", .double(-2500)),
        ("1E2", .double(100)), (#""a\"b\\c\/d\b\f\n\r\t""#, .string("a\"b\\c/d\u{8}\u{C}\n\r\t")),
        (#""\u00e9\u20AC\ud83d\ude00""#, .string("é€😀")), (#""é€😀""#, .string("é€😀")), ("[]", .array([])),
        (" [1, \"a\", [true]] ", .array([1, "a", .array([true])])), ("{}", .dictionary([:])),
        (#"{"a": 1, "b": {"c": null}}"#, .dictionary(["a": 1, "b": .dictionary(["c": .null])])),
        (#"{"date": 700000000}"#, .date(Date(timeIntervalSinceReferenceDate: 700_000_000))),
        (#"{"date": 1.5}"#, .date(Date(timeIntervalSinceReferenceDate: 1.5))),
        (#"{"date": "2001-01-01T00:00:10Z"}"#, .date(Date(timeIntervalSinceReferenceDate: 10))),
        (#"{"date": "2001-01-02"}"#, .date(Date(timeIntervalSinceReferenceDate: 86_400))),
        (#"{"object": {"entity": "Employee", "id": 101}}"#, .object(ObjectReference(entity: "Employee", id: 101))),
        (#"{"date": 1, "other": 2}"#, .dictionary(["date": 1, "other": 2])), (#"{"a": 1, "a": 2}"#, .dictionary(["a": 2])),
        ("\u{FEFF}[1]", .array([1])), (#""abc\#u{e9}""#, .string("abc\u{e9}")), (#""\u0041\#u{e9}""#, .string("A\u{e9}")),
        (#"{"a": {"b": 1, "b": 2}, "a": {"c": {"d": [1, {"e": 2, "f": {}}]}, "g": 3}, "h": [{"i": 1}, {"i": 2}]}"#,
         .dictionary(["a": .dictionary(["c": .dictionary(["d": .array([1, .dictionary(["e": 2, "f": .dictionary([:])])])]), "g": 3]),
                      "h": .array([.dictionary(["i": 1]), .dictionary(["i": 2])])])),
    ])
    func values(_ text: String, _ expected: PredicateValue) throws {
        #expect(try Self.read(text) == expected)
    }

    @Test("Malformed text is a typed error with its place", arguments: [
        ("", 1, 1, "expected a value"), ("[1,]", 1, 4, "expected a value"), ("{\"a\" 1}", 1, 6, "expected ':'"),
        ("[1 2]", 1, 4, "expected ',' or ']'"), ("01", 1, 2, "leading zero"), ("1.", 1, 3, "after '.'"), ("1e", 1, 3, "exponent"),
        ("-", 1, 2, "expected a digit"), ("tru", 1, 1, "expected a value"), ("\"abc", 1, 1, "not closed"),
        ("\"a\u{1}\"", 1, 3, "control character"), (#""\x""#, 1, 3, "not an escape"), (#""\ud800""#, 1, 8, "lone surrogate"),
        (#""\udc00""#, 1, 8, "lone surrogate"), (#""\u12""#, 1, 4, "four hexadecimal digits"), ("[1] x", 1, 5, "end of the text"),
        ("NaN", 1, 1, "expected a value"), ("1e999", 1, 1, "out of range"), ("[\n  1,\n  ]", 3, 3, "expected a value"),
        (#"{"date": "x"}"#, 1, 1, "number of seconds"), (#"{"object": 3}"#, 1, 1, "{\"entity\""), ("{1: 2}", 1, 2, "member name"),
    ])
    func malformed(_ text: String, _ line: Int, _ column: Int, _ message: String) {
        do {
            _ = try Self.read(text)
            Issue.record("'\(text)' was read")
        } catch {
            #expect(error.message.contains(message), "\(text): \(error)")
            #expect((error.line, error.column) == (line, column), "\(text): \(error)")
        }
    }

    @Test func invalidUTF8AndDepthAreErrors() {
        #expect(throws: JSONReadError.self) { try JSONReader.value(from: Data([0x22, 0xFF, 0x22])) }
        #expect(throws: JSONReadError.self) { try JSONReader.value(from: Data([0x22, 0x5C, 0x6E, 0xC3, 0x22])) }
        let deep = String(repeating: "[", count: JSONReader.maximumDepth + 1) + String(repeating: "]", count: JSONReader.maximumDepth + 1)
        #expect(throws: JSONReadError.self) { try Self.read(deep) }
        let fine = String(repeating: "[", count: JSONReader.maximumDepth) + String(repeating: "]", count: JSONReader.maximumDepth)
        #expect(throws: Never.self) { try Self.read(fine) }
    }

    /// Numbers compare by value: the reader keeps `3.0` a double, where the
    /// Decodable path it replaced made it an integer.
    static func same(_ a: PredicateValue, _ b: PredicateValue) -> Bool {
        switch (a, b) {
        case (.int(let x), .double(let y)), (.double(let y), .int(let x)): return Double(x) == y
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy(same)
        case (.dictionary(let x), .dictionary(let y)):
            return x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        default: return a == b
        }
    }

    /// A random JSON text: nesting, escapes, non-ASCII, numbers of every form.
    static func document(_ seed: UInt64) -> String {
        var generator = SplitMix64(seed: seed)
        func pick(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
        func string() -> String {
            let pieces = ["a", "é", "😀", "\\n", "\\\"", "\\\\", "\\u00e9", "\\ud83d\\ude00", " ", "\\t", "z", "\\/", "€"]
            return "\"" + (0..<pick(6)).map { _ in pieces[pick(pieces.count)] }.joined() + "\""
        }
        func number() -> String {
            ["0", "-1", "42", "3.25", "-0.5", "1e3", "2.5E-2", "9223372036854775807", "-9223372036854775808",
             "18446744073709551616", "123456789012", "0.1"][pick(12)]
        }
        func value(_ depth: Int) -> String {
            switch depth > 3 ? pick(4) : pick(7) {
            case 0: return ["null", "true", "false"][pick(3)]
            case 1: return number()
            case 2, 3: return string()
            case 4: return "[" + (0..<pick(4)).map { _ in value(depth + 1) }.joined(separator: ", ") + "]"
            case 5: return "{\"date\": \(number())}"
            default:
                return "{" + (0..<pick(4)).map { i in "\"k\(i)\": \(value(depth + 1))" }.joined(separator: ",\n ") + "}"
            }
        }
        return value(0)
    }

    @Test("Random documents read as JSONDecoder read them")
    func agreesWithJSONDecoder() async {
        await propertyCheck(count: 500, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            let text = Self.document(seed)
            let decoded = try? JSONDecoder().decode(PredicateValue.self, from: Data(text.utf8))
            let read = try? Self.read(text)
            #expect(decoded != nil && read != nil, "\(text)")
            if let decoded, let read { #expect(Self.same(decoded, read), "\(text)") }
        }
    }

    @Test("Every JSON fixture reads as JSONDecoder read it")
    func fixtures() throws {
        for name in ["company.json"] {
            let data = try Fixtures.data(name)
            let decoded = try JSONDecoder().decode(PredicateValue.self, from: data)
            #expect(Self.same(decoded, try JSONReader.value(from: data)))
        }
        let corpus = try Fixtures.data("corpus.jsonl")
        for line in String(decoding: corpus, as: UTF8.self).split(separator: "\n") {
            let decoded = try JSONDecoder().decode(PredicateValue.self, from: Data(line.utf8))
            #expect(Self.same(decoded, try Self.read(String(line))))
        }
    }
}

/// A small, repeatable generator for the random documents.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
