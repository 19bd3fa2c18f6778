// The store API's JSON forms of Sift's values (openapi.yaml, "Values"): JSON's
// own kinds as themselves (an integer stays an integer), and one-member
// objects for what JSON has no form of — dates, doubles with no fraction or
// not finite, UUIDs, bytes, object references, dictionaries — so that every
// value crosses the wire and comes back the same.

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
    /// A value as the generated code's containers hold JSON: `Bool`, `Int`,
    /// `Double`, `String`, arrays and dictionaries of those, or nil.
    package static func encode(_ value: PredicateValue) -> (any Sendable)? {
        switch value {
        case .null: return nil
        case .bool(let b): return b
        case .int(let i): return Int(i)
        case .double(let d):
            if !d.isFinite { return ["double": d.isNaN ? "nan" : d > 0 ? "inf" : "-inf"] as [String: (any Sendable)?] }
            return d.rounded() == d ? ["double": d] as [String: (any Sendable)?] : d
        case .string(let s): return s
        case .date(let date): return ["date": date.timeIntervalSinceReferenceDate] as [String: (any Sendable)?]
        case .data(let data): return ["data": data.base64EncodedString()] as [String: (any Sendable)?]
        case .uuid(let uuid): return ["uuid": uuid.uuidString] as [String: (any Sendable)?]
        case .object(let reference):
            return ["object": ["entity": reference.entity, "id": Int(reference.id)] as [String: (any Sendable)?]]
                as [String: (any Sendable)?]
        case .array(let values): return values.map(encode) as [(any Sendable)?]
        case .dictionary(let members):
            return ["dictionary": members.mapValues(encode) as [String: (any Sendable)?]] as [String: (any Sendable)?]
        }
    }

    /// The value a JSON form holds.
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
        case let object as [String: (any Sendable)?]:
            guard object.count == 1, let (tag, member) = object.first else {
                throw WireError("an object value must have one member (date, double, uuid, data, object or dictionary)")
            }
            return try tagged(tag, member ?? nil, depth: depth)
        default:
            throw WireError("a value of a kind JSON does not have")
        }
    }

    private static func tagged(_ tag: String, _ member: (any Sendable)?, depth: Int) throws(WireError) -> PredicateValue {
        switch (tag, member) {
        case ("date", let seconds as Int): return .date(Date(timeIntervalSinceReferenceDate: Double(seconds)))
        case ("date", let seconds as Double): return .date(Date(timeIntervalSinceReferenceDate: seconds))
        case ("date", let text as String):
            guard let date = PredicateValue.iso8601Date(text) else { throw WireError("'\(text)' is not an ISO 8601 date") }
            return .date(date)
        case ("double", let i as Int): return .double(Double(i))
        case ("double", let d as Double): return .double(d)
        case ("double", "nan" as String): return .double(.nan)
        case ("double", "inf" as String): return .double(.infinity)
        case ("double", "-inf" as String): return .double(-.infinity)
        case ("uuid", let text as String):
            guard let uuid = UUID(uuidString: text) else { throw WireError("'\(text)' is not a UUID") }
            return .uuid(uuid)
        case ("data", let text as String):
            guard let data = Data(base64Encoded: text) else { throw WireError("the data value is not base64") }
            return .data(data)
        case ("object", let reference as [String: (any Sendable)?]):
            guard case let entity as String = reference["entity"] ?? nil, case let id as Int = reference["id"] ?? nil else {
                throw WireError("an object reference is {\"entity\": name, \"id\": key}")
            }
            return .object(ObjectReference(entity: entity, id: Int64(id)))
        case ("dictionary", let members as [String: (any Sendable)?]):
            var dictionary: [String: PredicateValue] = [:]
            for (key, member) in members { dictionary[key] = try decode(member, depth: depth + 1) }
            return .dictionary(dictionary)
        default:
            throw WireError("'\(tag)' with that member is not a value's form (date, double, uuid, data, object, dictionary)")
        }
    }

    /// A value in the generated code's container.
    package static func container(_ value: PredicateValue) -> OpenAPIValueContainer {
        // encode(_:) gives only the kinds a container holds; nil (JSON null) otherwise.
        if let container = try? OpenAPIValueContainer(unvalidatedValue: encode(value)) { return container }
        return OpenAPIValueContainer(nilLiteral: ())
    }

    /// The value a container holds.
    package static func value(_ container: OpenAPIValueContainer?) throws(WireError) -> PredicateValue {
        try decode(container?.value)
    }

    /// Values by name, as the API's `Values` holds them.
    package static func values(_ named: [String: PredicateValue]) -> Components.Schemas.Values {
        Components.Schemas.Values(additionalProperties: named.mapValues { container($0) })
    }

    /// The values a `Values` holds, by name.
    package static func values(_ wire: Components.Schemas.Values?) throws(WireError) -> [String: PredicateValue] {
        var named: [String: PredicateValue] = [:]
        for (name, container) in wire?.additionalProperties ?? [:] { named[name] = try value(container) }
        return named
    }

    /// Format arguments as the API sends them.
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
