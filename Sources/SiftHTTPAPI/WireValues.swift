// The store API's JSON forms of Sift's values (openapi.yaml, "Values").
//
// An attribute's value (a row's, a save's, a tombstone's) is plain JSON, read
// by the attribute's type in the model: an integer as a JSON integer (all 64
// bits), a double, float or decimal as a JSON number (a whole one may have no
// fraction: the model says it is a double), a date as ISO 8601 text in UTC
// whose digits are exactly the stored seconds (so it reads back to the bit),
// a UUID as its text, bytes in Base64, a string or URI as itself, a boolean
// as true or false. A value JSON or its attribute's type cannot tell apart —
// a double that is not finite, a date outside the years 1 to 9999, a value
// of a type the model does not fix (an undefined attribute), a value a store
// holds in a column of another type — is in the typed form.
//
// Where no attribute says what a value is — format arguments, a dictionary
// fetch's results, a cursor — values are in the typed form: JSON's own kinds
// as themselves (an integer stays an integer, a number with a fraction is a
// double), and one-member objects for the rest: `{"date": "2024-05-01T10:00:00Z"}`,
// `{"double": 3}` (a double with no fraction, or "nan", "inf", "-inf"),
// `{"uuid": …}`, `{"data": base64}`, `{"object": {"entity": E, "id": key}}`,
// `{"dictionary": {…}}`. Where a plain form is read, the typed forms are read
// too (a client that writes them, as this API's first version did
// everywhere, still works), and a typed date may be seconds since 2001.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
internal import Foundation
package import OpenAPIRuntime
import Sift

/// A value the API's JSON cannot be read as.
package struct WireError: Error, CustomStringConvertible, Sendable {
    package var description: String
    package init(_ description: String) { self.description = description }
}

package enum WireValue {
    private typealias Object = [String: (any Sendable)?]

    /// A value in the typed form, as the generated code's containers hold
    /// JSON: `Bool`, `Int`, `Double`, `String`, arrays and dictionaries of
    /// those, or nil.
    package static func encode(_ value: PredicateValue) -> (any Sendable)? {
        switch value {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d):
            if !d.isFinite { return ["double": nonFinite(d)] as Object }
            return d.rounded() == d ? ["double": d] as Object : d
        case .string(let s): return s
        case .date(let date): return ["date": dateMember(date)] as Object
        case .data(let data): return ["data": data.base64EncodedString()] as Object
        case .uuid(let uuid): return ["uuid": uuid.uuidString] as Object
        case .object(let reference):
            return ["object": ["entity": reference.entity, "id": Int(reference.id)] as Object] as Object
        case .array(let values): return values.map(encode) as [(any Sendable)?]
        case .dictionary(let members):
            return ["dictionary": members.mapValues(encode) as Object] as Object
        }
    }

    /// A value of an attribute of `type` in its plain form: JSON's own kind
    /// where the type says how to read it back, the typed form otherwise.
    package static func encode(_ value: PredicateValue, as type: AttributeType) -> (any Sendable)? {
        switch (type, value) {
        case (.integer16, .int(let i)), (.integer32, .int(let i)), (.integer64, .int(let i)): return Int(i)
        case (.boolean, .bool(let b)): return b
        case (.double, .double(let d)) where d.isFinite: return d
        case (.float, .double(let d)) where d.isFinite: return d
        case (.decimal, .double(let d)) where d.isFinite: return d
        case (.string, .string(let s)), (.uri, .string(let s)): return s
        case (.date, .date(let date)): return PredicateValue.exactISO8601Text(date) ?? encode(value)
        case (.uuid, .uuid(let uuid)): return uuid.uuidString
        case (.binary, .data(let data)), (.transformable, .data(let data)): return data.base64EncodedString()
        default: return encode(value)
        }
    }

    /// A date's member of `{"date": …}`: its ISO 8601 text (exact), or its
    /// seconds since 2001 outside the years 1 to 9999.
    private static func dateMember(_ date: Date) -> any Sendable {
        if let text = PredicateValue.exactISO8601Text(date) { return text }
        let seconds = date.timeIntervalSinceReferenceDate
        return seconds.isFinite ? seconds : nonFinite(seconds)
    }

    private static func nonFinite(_ d: Double) -> String { d.isNaN ? "nan" : d > 0 ? "inf" : "-inf" }

    /// The value a JSON form holds, read in the typed form.
    package static func decode(_ json: (any Sendable)?, depth: Int = 0) throws(WireError) -> PredicateValue {
        guard depth < 64 else { throw WireError("a value is nested more than 64 deep") }
        switch json {
        case nil: return .null
        case let b as Bool: return .bool(b)
        case let i as Int: return .int(Int64(i))
        case let d as Double: return .double(d)
        case let s as String: return .string(s)
        case let array as [(any Sendable)?]:
            var values: [PredicateValue] = []
            values.reserveCapacity(array.count)
            for element in array { values.append(try decode(element, depth: depth + 1)) }
            return .array(values)
        case let object as Object:
            guard object.count == 1, let (tag, member) = object.first else {
                throw WireError("an object value must have one member (date, double, uuid, data, object or dictionary)")
            }
            return try tagged(tag, member ?? nil, depth: depth)
        default:
            throw WireError("a value of a kind JSON does not have")
        }
    }

    /// The value of an attribute of `type` a JSON form holds: its plain form
    /// (a JSON integer for a double is that double, text for a date is ISO
    /// 8601, for a UUID its text, for bytes Base64), or the typed form.
    package static func decode(_ json: (any Sendable)?, as type: AttributeType) throws(WireError) -> PredicateValue {
        let value = try decode(json)
        switch (type, value) {
        case (.double, .int(let i)), (.float, .int(let i)), (.decimal, .int(let i)): return .double(Double(i))
        case (.date, .string(let text)):
            guard let date = PredicateValue.iso8601Date(text) else { throw WireError("'\(text.prefix(64))' is not an ISO 8601 date") }
            return .date(date)
        case (.uuid, .string(let text)):
            guard let uuid = UUID(uuidString: text) else { throw WireError("'\(text.prefix(64))' is not a UUID") }
            return .uuid(uuid)
        case (.binary, .string(let text)), (.transformable, .string(let text)):
            guard let data = Data(base64Encoded: text) else { throw WireError("bytes are Base64 text, and this is not") }
            return .data(data)
        default: return value
        }
    }

    private static func tagged(_ tag: String, _ member: (any Sendable)?, depth: Int) throws(WireError) -> PredicateValue {
        switch (tag, member) {
        case ("date", let seconds as Int): return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        case ("date", let seconds as Double): return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case ("date", "nan" as String): return .date(Date(timeIntervalSinceReferenceDate: .nan))
        case ("date", "inf" as String): return .date(Date(timeIntervalSinceReferenceDate: .infinity))
        case ("date", "-inf" as String): return .date(Date(timeIntervalSinceReferenceDate: -.infinity))
        case ("date", let text as String):
            guard let date = PredicateValue.iso8601Date(text) else { throw WireError("'\(text.prefix(64))' is not an ISO 8601 date") }
            return .date(date)
        case ("double", let i as Int): return .double(Double(i))
        case ("double", let d as Double): return .double(d)
        case ("double", "nan" as String): return .double(.nan)
        case ("double", "inf" as String): return .double(.infinity)
        case ("double", "-inf" as String): return .double(-.infinity)
        case ("uuid", let text as String):
            guard let uuid = UUID(uuidString: text) else { throw WireError("'\(text.prefix(64))' is not a UUID") }
            return .uuid(uuid)
        case ("data", let text as String):
            guard let data = Data(base64Encoded: text) else { throw WireError("the data value is not base64") }
            return .data(data)
        case ("object", let reference as Object):
            guard reference.count == 2, case let entity as String = reference["entity"] ?? nil, case let id as Int = reference["id"] ?? nil else {
                throw WireError("an object reference is {\"entity\": name, \"id\": key}")
            }
            return .object(ObjectReference(entity: entity, id: Int64(id)))
        case ("dictionary", let members as Object):
            var dictionary: [String: PredicateValue] = [:]
            for (key, member) in members { dictionary[key] = try decode(member, depth: depth + 1) }
            return .dictionary(dictionary)
        default:
            throw WireError("'\(tag.prefix(64))' with that member is not a value's form (date, double, uuid, data, object, dictionary)")
        }
    }

    /// A JSON form in the generated code's container.
    package static func container(json: (any Sendable)?) -> OpenAPIValueContainer {
        // encode(_:) gives only the kinds a container holds; nil (JSON null) otherwise.
        if let container = try? OpenAPIValueContainer(unvalidatedValue: json) { return container }
        return OpenAPIValueContainer(nilLiteral: ())
    }

    /// A value in the typed form, in the generated code's container.
    package static func container(_ value: PredicateValue) -> OpenAPIValueContainer {
        container(json: encode(value))
    }

    /// The value a container holds, in the typed form.
    package static func value(_ container: OpenAPIValueContainer?) throws(WireError) -> PredicateValue {
        try decode(container?.value)
    }

    /// Values by name in the typed form, as the API's `Values` holds them
    /// (for an entity the model does not have).
    package static func values(_ named: [String: PredicateValue]) -> Components.Schemas.Values {
        Components.Schemas.Values(additionalProperties: named.mapValues { container($0) })
    }

    /// A dictionary fetch's row: values by name in the typed form.
    package static func dictionary(_ named: [String: PredicateValue]) -> Components.Schemas.DictionaryRow {
        Components.Schemas.DictionaryRow(additionalProperties: named.mapValues { container($0) })
    }

    /// The values a dictionary fetch's row holds, by name.
    package static func dictionary(_ wire: Components.Schemas.DictionaryRow) throws(WireError) -> [String: PredicateValue] {
        var named: [String: PredicateValue] = [:]
        for (name, container) in wire.additionalProperties { named[name] = try value(container) }
        return named
    }

    /// An entity's attribute values by name, each in its plain form (a name
    /// that is not an attribute's, in the typed form), as `Values` holds them.
    package static func values(_ named: [String: PredicateValue], of entity: Entity) -> Components.Schemas.Values {
        var wire: [String: Components.Schemas.AttributeValue?] = [:]
        wire.reserveCapacity(named.count)
        for (name, value) in named {
            wire[name] = container(json: entity.attribute(named: name).map { encode(value, as: $0.type) } ?? encode(value))
        }
        return Components.Schemas.Values(additionalProperties: wire)
    }

    /// The values a `Values` holds, by name, in the typed form.
    package static func values(_ wire: Components.Schemas.Values?) throws(WireError) -> [String: PredicateValue] {
        var named: [String: PredicateValue] = [:]
        for (name, container) in wire?.additionalProperties ?? [:] { named[name] = try value(container) }
        return named
    }

    /// An entity's attribute values a `Values` holds, by name: each read by
    /// its attribute's type (a name that is not an attribute's, in the typed form).
    package static func values(_ wire: Components.Schemas.Values?, of entity: Entity) throws(WireError) -> [String: PredicateValue] {
        var named: [String: PredicateValue] = [:]
        for (name, container) in wire?.additionalProperties ?? [:] {
            guard let attribute = entity.attribute(named: name) else {
                named[name] = try value(container)
                continue
            }
            do {
                named[name] = try decode(container?.value, as: attribute.type)
            } catch {
                throw WireError("\(entity.name).\(name): \(error.description)")
            }
        }
        return named
    }

    /// Format arguments as the API sends them (the typed form).
    package static func arguments(_ values: [PredicateValue]) -> [OpenAPIValueContainer] {
        values.map(container)
    }

    /// The format arguments a request carries.
    package static func arguments(_ wire: [OpenAPIValueContainer]?) throws(WireError) -> [PredicateValue] {
        var values: [PredicateValue] = []
        for container in wire ?? [] { values.append(try value(container)) }
        return values
    }
}
#endif
