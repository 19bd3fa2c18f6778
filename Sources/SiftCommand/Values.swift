// Values given on the command line (`--arg`, `--var`, `eval --value`): a
// value that starts as JSON does is JSON, and must be valid; anything
// else is a plain string.

import Foundation
import Sift

/// A value given on the command line with `option`: JSON when it starts as
/// JSON does (`{`, `[`, `"`, a digit, `-`, or is `true`, `false` or
/// `null`), and then it must parse (else a failure with where it stops
/// parsing); a plain string otherwise (`Legal`, `department.name`).
func commandLineValue(_ text: String, option: String) throws -> PredicateValue {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let first = trimmed.first,
          "{[\"-0123456789".contains(first) || ["true", "false", "null"].contains(trimmed) else {
        return .string(text)
    }
    if let (offset, problem) = JSONSyntax.firstError(in: Array(trimmed.utf8)) {
        let before = String(decoding: Array(trimmed.utf8).prefix(offset), as: UTF8.self)
        let line = before.filter { $0 == "\n" }.count + 1
        let column = (before.split(separator: "\n", omittingEmptySubsequences: false).last?.count ?? 0) + 1
        throw CommandFailure(.invalidData, "\(option) '\(text)' starts as JSON but is not valid JSON: \(problem) at line \(line), "
                             + "column \(column) (give a string as JSON, in double quotes, to keep it as text)")
    }
    do {
        return try JSONDecoder().decode(PredicateValue.self, from: Data(trimmed.utf8))
    } catch {
        throw CommandFailure(.invalidData, "\(option) '\(text)' is not a value: \(jsonProblem(error, in: trimmed))")
    }
}

/// What is wrong with `text` as JSON, in the decoder's words.
func jsonProblem(_ error: any Error, in text: String) -> String {
    var messages: [String] = []
    var next: (any Error)? = error
    while let current = next {
        next = nil
        switch current {
        case DecodingError.dataCorrupted(let context):
            messages.append(context.debugDescription)
            next = context.underlyingError
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.keyNotFound(_, let context):
            messages.append(context.debugDescription)
            next = context.underlyingError
        default:
            let nsError = current as NSError
            messages.append(nsError.userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(current)")
            next = nsError.userInfo[NSUnderlyingErrorKey] as? any Error
        }
    }
    if let (offset, problem) = JSONSyntax.firstError(in: Array(text.utf8)) {
        return "\(problem) at offset \(offset)"
    }
    var sentence = (messages.last { $0 != "The given data was not valid JSON." } ?? messages.first ?? "not JSON")
        .trimmingCharacters(in: .whitespaces)
    if sentence.hasSuffix(".") { sentence.removeLast() }
    return sentence.prefix(1).lowercased() + sentence.dropFirst()
}

/// JSON's grammar (RFC 8259), checked for where text first breaks it, so
/// that an error can say where: the decoders say only that it is not JSON.
enum JSONSyntax {
    /// The UTF-8 offset of the first error in `bytes` and what was expected
    /// there; nil when `bytes` is one valid JSON value.
    static func firstError(in bytes: [UInt8]) -> (offset: Int, problem: String)? {
        var index = 0
        do {
            try value(bytes, &index, depth: 0)
            skipSpace(bytes, &index)
            if index < bytes.count { return (index, "unexpected text after the value") }
            return nil
        } catch {
            return (error.offset, error.problem)
        }
    }

    struct Failure: Error {
        var offset: Int
        var problem: String
    }

    private static func skipSpace(_ bytes: [UInt8], _ index: inout Int) {
        while index < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[index]) { index += 1 }
    }

    private static func expect(_ byte: UInt8, _ bytes: [UInt8], _ index: inout Int, _ what: String) throws(Failure) {
        skipSpace(bytes, &index)
        guard index < bytes.count else { throw Failure(offset: index, problem: "the text ends where \(what) was expected") }
        guard bytes[index] == byte else { throw Failure(offset: index, problem: "\(what) expected") }
        index += 1
    }

    private static func value(_ bytes: [UInt8], _ index: inout Int, depth: Int) throws(Failure) {
        skipSpace(bytes, &index)
        guard index < bytes.count else { throw Failure(offset: index, problem: "the text ends where a value was expected") }
        guard depth < 512 else { throw Failure(offset: index, problem: "values nested too deeply") }
        switch bytes[index] {
        case UInt8(ascii: "{"):
            index += 1
            skipSpace(bytes, &index)
            if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
                index += 1
                return
            }
            while true {
                skipSpace(bytes, &index)
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw Failure(offset: index, problem: index < bytes.count ? "a key in double quotes expected"
                                  : "the text ends where a key was expected")
                }
                try string(bytes, &index)
                try expect(UInt8(ascii: ":"), bytes, &index, "':'")
                try value(bytes, &index, depth: depth + 1)
                skipSpace(bytes, &index)
                guard index < bytes.count else { throw Failure(offset: index, problem: "the text ends where ',' or '}' was expected") }
                if bytes[index] == UInt8(ascii: "}") {
                    index += 1
                    return
                }
                try expect(UInt8(ascii: ","), bytes, &index, "',' or '}'")
            }
        case UInt8(ascii: "["):
            index += 1
            skipSpace(bytes, &index)
            if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
                index += 1
                return
            }
            while true {
                try value(bytes, &index, depth: depth + 1)
                skipSpace(bytes, &index)
                guard index < bytes.count else { throw Failure(offset: index, problem: "the text ends where ',' or ']' was expected") }
                if bytes[index] == UInt8(ascii: "]") {
                    index += 1
                    return
                }
                try expect(UInt8(ascii: ","), bytes, &index, "',' or ']'")
            }
        case UInt8(ascii: "\""):
            try string(bytes, &index)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            try number(bytes, &index)
        default:
            for word in ["true", "false", "null"] where bytes[index...].starts(with: word.utf8) {
                index += word.utf8.count
                return
            }
            throw Failure(offset: index, problem: "a value expected")
        }
    }

    private static func string(_ bytes: [UInt8], _ index: inout Int) throws(Failure) {
        let start = index
        index += 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\""):
                index += 1
                return
            case UInt8(ascii: "\\"):
                index += 2
            case 0..<0x20:
                throw Failure(offset: index, problem: "a control character in a string (escape it)")
            default:
                index += 1
            }
        }
        throw Failure(offset: start, problem: "a string without its closing quote")
    }

    private static func number(_ bytes: [UInt8], _ index: inout Int) throws(Failure) {
        func digits() -> Int {
            let start = index
            while index < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[index]) { index += 1 }
            return index - start
        }
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        let start = index
        let count = digits()
        guard count > 0 else { throw Failure(offset: index, problem: "a digit expected") }
        if count > 1, bytes[start] == UInt8(ascii: "0") { throw Failure(offset: start, problem: "a number with a leading zero") }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { throw Failure(offset: index, problem: "a digit expected after '.'") }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") { index += 1 }
            guard digits() > 0 else { throw Failure(offset: index, problem: "a digit expected in the exponent") }
        }
    }
}
