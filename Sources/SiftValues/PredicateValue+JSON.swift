// Stage 0 (values): the JSON form of values, as the conformance corpus and the
// `--arg` option of the command line write them.
//
// A JSON number, string, boolean, null or array is that value; an integer stays
// an integer. Two objects have a meaning of their own:
// `{"date": 700000000}` is a date (seconds since 2001-01-01T00:00:00Z) and
// `{"object": {"entity": "Employee", "id": 101}}` is an object reference. Any
// other object is a dictionary.

import Foundation

extension PredicateValue: Codable {
    private enum SpecialKey: String, CodingKey {
        case date, object
    }

    private struct ReferenceForm: Codable {
        var entity: String
        var id: Int64
    }

    private struct AnyKey: CodingKey {
        var stringValue: String
        var intValue: Int? { nil }
        init(stringValue: String) { self.stringValue = stringValue }
        init?(intValue: Int) { nil }
    }

    /// Decodes a value from its JSON form: a number, string, boolean, null or
    /// array is that value (an integer stays an integer); `{"date": seconds}`
    /// is a date (seconds since 2001-01-01T00:00:00Z);
    /// `{"object": {"entity": "Employee", "id": 101}}` is an object
    /// reference; any other object is a dictionary.
    ///
    /// - Parameter decoder: The decoder to read from.
    /// - Throws: `DecodingError` when the data is none of the value's forms.
    public init(from decoder: any Decoder) throws {
        if let container = try? decoder.container(keyedBy: AnyKey.self) {
            let keys = container.allKeys.map(\.stringValue)
            if keys == ["date"] {
                if let text = try? container.decode(String.self, forKey: AnyKey(stringValue: "date")),
                   let date = PredicateValue.iso8601Date(text) {
                    self = .date(date)
                    return
                }
                let seconds = try container.decode(Double.self, forKey: AnyKey(stringValue: "date"))
                self = .date(Date(timeIntervalSinceReferenceDate: seconds))
                return
            }
            if keys == ["object"] {
                let reference = try container.decode(ReferenceForm.self, forKey: AnyKey(stringValue: "object"))
                self = .object(ObjectReference(entity: reference.entity, id: reference.id))
                return
            }
            var dictionary: [String: PredicateValue] = [:]
            for key in container.allKeys {
                dictionary[key.stringValue] = try container.decode(PredicateValue.self, forKey: key)
            }
            self = .dictionary(dictionary)
            return
        }
        if var container = try? decoder.unkeyedContainer() {
            var values: [PredicateValue] = []
            while !container.isAtEnd { values.append(try container.decode(PredicateValue.self)) }
            self = .array(values)
            return
        }
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let int = try? container.decode(Int64.self) {
            self = .int(int)
        } else if let double = try? container.decode(Double.self) {
            self = .double(double)
        } else {
            self = .string(try container.decode(String.self))
        }
    }

    /// Encodes the value in the JSON form `init(from:)` reads; a UUID as its
    /// string, data as base64 text (both read back as strings).
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: What the encoder throws (`EncodingError` for a non-finite
    ///   double in JSON).
    public func encode(to encoder: any Encoder) throws {
        switch self {
        case .null:
            var container = encoder.singleValueContainer()
            try container.encodeNil()
        case .bool(let b):
            var container = encoder.singleValueContainer()
            try container.encode(b)
        case .int(let i):
            var container = encoder.singleValueContainer()
            try container.encode(i)
        case .double(let d):
            var container = encoder.singleValueContainer()
            try container.encode(d)
        case .string(let s):
            var container = encoder.singleValueContainer()
            try container.encode(s)
        case .uuid(let u):
            var container = encoder.singleValueContainer()
            try container.encode(u.uuidString)
        case .data(let d):
            var container = encoder.singleValueContainer()
            try container.encode(d.base64EncodedString())
        case .date(let date):
            var container = encoder.container(keyedBy: SpecialKey.self)
            try container.encode(date.timeIntervalSinceReferenceDate, forKey: .date)
        case .object(let reference):
            var container = encoder.container(keyedBy: SpecialKey.self)
            try container.encode(ReferenceForm(entity: reference.entity, id: reference.id), forKey: .object)
        case .array(let values):
            var container = encoder.unkeyedContainer()
            for value in values { try container.encode(value) }
        case .dictionary(let dictionary):
            var container = encoder.container(keyedBy: AnyKey.self)
            for (key, value) in dictionary { try container.encode(value, forKey: AnyKey(stringValue: key)) }
        }
    }

    /// Reads a value from its JSON text, or returns `nil` when `json` is not
    /// valid JSON.
    ///
    /// ```swift
    /// PredicateValue(json: "30")                 // .int(30)
    /// PredicateValue(json: "[1, 2.5]")           // .array([.int(1), .double(2.5)])
    /// PredicateValue(json: #"{"date": 0}"#)      // .date(2001-01-01 00:00:00 +0000)
    /// ```
    ///
    /// - Parameter json: The JSON text, with Sift's conventions for dates and
    ///   object references.
    public init?(json: String) {
        guard let value = try? JSONDecoder().decode(PredicateValue.self, from: Data(json.utf8)) else { return nil }
        self = value
    }

    /// Reads a command-line argument: its JSON value when it is valid JSON,
    /// and the plain string otherwise (`Sales`, `department.name`).
    ///
    /// - Parameter text: The argument as typed.
    public init(commandLineArgument text: String) {
        self = PredicateValue(json: text) ?? .string(text)
    }
}
