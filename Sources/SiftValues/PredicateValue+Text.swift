// Stage 0 (values): values as predicate text writes them.
//
// Every stage shows values in its messages the way a predicate would write
// them, and the printer writes literals the same way: strings in double
// quotes with the escapes the lexer reads (Grammar/README.md), numbers and
// booleans as their literals, and values without a literal form as the
// `CAST` or aggregate that means them.

import Foundation

extension PredicateValue: CustomStringConvertible {
    /// The value as it would be written in a predicate: `"text"`, `42`,
    /// `CAST(700000000.0, "NSDate")`, `{1, 2}`.
    public var description: String {
        if let literal { return literal }
        switch self {
        case .double(let d): return d.description
        case .date(let date): return "CAST(\(date.timeIntervalSinceReferenceDate), \"NSDate\")"
        case .array(let values): return "{" + values.map(\.description).joined(separator: ", ") + "}"
        case .uuid(let uuid): return "CAST(\(Self.quoted(uuid.uuidString)), \"NSUUID\")"
        case .data(let data): return "CAST(\(Self.quoted(data.base64EncodedString())), \"NSData\")"
        case .object(let reference): return "<\(reference.entity) \(reference.id)>"
        case .dictionary(let d):
            return "{" + d.sorted { $0.key < $1.key }.map { "\(Self.quoted($0.key)): \($0.value.description)" }
                .joined(separator: ", ") + "}"
        default: return "%@"
        }
    }

    /// The literal text of a value that has one: nil, booleans, integers,
    /// finite doubles and strings.
    package var literal: String? {
        switch self {
        case .null: return "nil"
        case .bool(let b): return b ? "TRUE" : "FALSE"
        case .int(let i): return String(i)
        case .double(let d): return d.isFinite ? d.description : nil
        case .string(let s): return Self.quoted(s)
        default: return nil
        }
    }

    /// A string literal in double quotes with the escapes the lexer reads.
    package static func quoted(_ string: String) -> String {
        var result = "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\t": result += "\\t"
            case "\r": result += "\\r"
            case _ where scalar.value < 0x20 || scalar.value == 0x7F:
                let hex = String(scalar.value, radix: 16)
                result += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
