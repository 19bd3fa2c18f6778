// Stage 2 (schema): reading models from JSON and from Xcode data models.
//
// JSON is the form of `conformance/company.json`'s "model" member:
//   {"entities": [{"name": "Employee",
//                  "attributes": [{"name": "age", "type": "integer64", "optional": true, "default": 0}],
//                  "relationships": [{"name": "department", "destination": "Department",
//                                     "toMany": false, "optional": true, "inverse": "employees",
//                                     "deleteRule": "nullify"}]}]}
// An Xcode model is the XML that Xcode writes in `Foo.xcdatamodel/contents`.

import Foundation
import SiftValues
#if canImport(FoundationXML)
import FoundationXML
#endif

extension DataModel {
    private struct JSONForm: Decodable {
        struct EntityForm: Decodable {
            var name: String
            var attributes: [AttributeForm]?
            var relationships: [RelationshipForm]?
        }
        struct AttributeForm: Decodable {
            var name: String
            var type: String
            var optional: Bool?
            var `default`: PredicateValue?
            var indexed: Bool?
            var canonical: Bool?
        }
        struct RelationshipForm: Decodable {
            var name: String
            var destination: String
            var toMany: Bool?
            var optional: Bool?
            var inverse: String?
            var deleteRule: DeleteRule?
        }
        var entities: [EntityForm]
    }

    /// Reads a model from its JSON form.
    public init(json data: Data) throws(ModelError) {
        let form: JSONForm
        do {
            form = try JSONDecoder().decode(JSONForm.self, from: data)
        } catch {
            throw ModelError.unreadable(path: "JSON", reason: Self.describe(error))
        }
        var entities: [Entity] = []
        for entity in form.entities {
            var attributes: [Attribute] = []
            for a in entity.attributes ?? [] {
                guard let type = AttributeType(rawValue: a.type) else {
                    throw ModelError.unknownAttributeType(entity: entity.name, attribute: a.name, type: a.type)
                }
                attributes.append(Attribute(a.name, type, optional: a.optional ?? false, defaultValue: a.default,
                                            indexed: a.indexed ?? false, canonical: a.canonical ?? false))
            }
            let relationships = (entity.relationships ?? []).map {
                Relationship($0.name, to: $0.destination, toMany: $0.toMany ?? false, optional: $0.optional ?? true,
                             inverse: $0.inverse, deleteRule: $0.deleteRule ?? .nullify)
            }
            entities.append(Entity(entity.name, attributes: attributes, relationships: relationships))
        }
        try self.init(entities)
    }

    /// Reads a model from a file: a JSON model, a data set (JSON with a
    /// "model" member), an `.xcdatamodel` folder, its `contents` file, or an
    /// `.xcdatamodeld` folder (its current version).
    public init(contentsOf url: URL) throws(ModelError) {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ModelError.unreadable(path: path, reason: "no such file")
        }
        if isDirectory.boolValue {
            if url.pathExtension == "xcdatamodeld" {
                try self.init(xcdatamodel: try Self.currentVersion(in: url))
            } else {
                try self.init(xcdatamodel: url.appendingPathComponent("contents"))
            }
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelError.unreadable(path: path, reason: "cannot read the file")
        }
        if data.first(where: { !$0.isWhitespaceByte }) == UInt8(ascii: "<") {
            try self.init(xcdatamodelXML: data, path: path)
            return
        }
        guard data.contains(where: { !$0.isWhitespaceByte }) else {
            throw ModelError.unreadable(path: path, reason: "the file is empty")
        }
        let object: Any
        do {
            object = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw ModelError.unreadable(path: path, reason: "not valid JSON: \(Self.describe(error))")
        }
        // A data set wraps its model in {"model": …}.
        var modelData = data
        if let object = object as? [String: Any], let model = object["model"],
           let data = try? JSONSerialization.data(withJSONObject: model) {
            modelData = data
        }
        do {
            try self.init(json: modelData)
        } catch .unreadable(_, let reason) {
            throw ModelError.unreadable(path: path, reason: reason)
        }
    }

    /// Reads an Xcode model's `contents` file.
    public init(xcdatamodel url: URL) throws(ModelError) {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ModelError.unreadable(path: url.path, reason: "cannot read the file")
        }
        try self.init(xcdatamodelXML: data, path: url.path)
    }

    /// Reads the XML that Xcode writes for a data model.
    public init(xcdatamodelXML data: Data, path: String = "contents") throws(ModelError) {
        // Foundation's XML parser traps on a name that is not UTF-8, so the
        // bytes are checked first (Xcode writes its models in UTF-8).
        guard String(validating: data, as: UTF8.self) != nil else {
            var valid = 0
            var iterator = data.makeIterator()
            var decoder = UTF8()
            while case .scalarValue(let scalar) = decoder.decode(&iterator) { valid += UTF8.width(scalar) }
            throw ModelError.unreadable(path: path, reason: "it is not UTF-8 text (a bad byte at offset \(valid))")
        }
        // Foundation's XML parser also dereferences nil for a processing
        // instruction without data (`<?x?>`); an Xcode model has none but
        // the XML declaration, so any other is refused before parsing.
        if let offset = Self.processingInstruction(in: data) {
            throw ModelError.unreadable(path: path, reason: "it has a processing instruction ('<?') at offset \(offset), "
                                        + "which an Xcode model does not have")
        }
        let reader = XcodeModelReader()
        let parser = XMLParser(data: data)
        parser.delegate = reader
        guard parser.parse() else {
            if let error = reader.error { throw error }
            let reason = parser.parserError.map { "\($0.localizedDescription) at line \(parser.lineNumber)" }
                ?? "invalid XML at line \(parser.lineNumber)"
            throw ModelError.unreadable(path: path, reason: "not valid XML: " + reason)
        }
        if let error = reader.error { throw error }
        guard reader.root == "model" else {
            throw ModelError.unreadable(path: path, reason: reader.root.map { "its root element is <\($0)>, not <model>" }
                ?? "it has no XML elements")
        }
        // A parser may accept a document cut short; Xcode's ends with </model>.
        guard reader.finished else {
            throw ModelError.unreadable(path: path, reason: "the XML ends before </model>: the file is cut short")
        }
        for entity in reader.entities {
            if let parent = entity.parent { throw ModelError.inheritance(entity: entity.name, parent: parent) }
        }
        try self.init(reader.entities.map { Entity($0.name, attributes: $0.attributes, relationships: $0.relationships) })
    }

    /// The offset of the first `<?` that is not the XML declaration
    /// (`<?xml ` at the start, after white space), if there is one.
    static func processingInstruction(in data: Data) -> Int? {
        let bytes = [UInt8](data)
        var start = 0
        while start < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[start]) { start += 1 }
        let declaration = Array("<?xml ".utf8)
        var from = start
        if bytes.count >= start + declaration.count, Array(bytes[start..<start + declaration.count]) == declaration {
            from = start + declaration.count
        }
        var i = from
        while i + 1 < bytes.count {
            if bytes[i] == UInt8(ascii: "<"), bytes[i + 1] == UInt8(ascii: "?") { return i }
            i += 1
        }
        return nil
    }

    /// The current version of an `.xcdatamodeld` bundle: the one its
    /// `.xccurrentversion` names, or else the only (or last) version.
    static func currentVersion(in bundle: URL) throws(ModelError) -> URL {
        let marker = bundle.appendingPathComponent(".xccurrentversion")
        if let data = FileManager.default.contents(atPath: marker.path),
           let plist = try? PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any],
           let name = plist["_XCCurrentVersionName"] as? String {
            return bundle.appendingPathComponent(name).appendingPathComponent("contents")
        }
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: bundle.path)) ?? [])
            .filter { $0.hasSuffix(".xcdatamodel") }.sorted()
        guard let last = versions.last else {
            throw ModelError.unreadable(path: bundle.path, reason: "no .xcdatamodel inside")
        }
        return bundle.appendingPathComponent(last).appendingPathComponent("contents")
    }

    /// A readable message for a JSON decoding error: what is wrong, and where.
    public static func describe(_ error: any Error) -> String {
        switch error {
        case DecodingError.keyNotFound(let key, let context):
            return "missing '\(key.stringValue)' at \(path(context.codingPath))"
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context):
            return "\(context.debugDescription) at \(path(context.codingPath))"
        case DecodingError.dataCorrupted(let context):
            // "The given data was not valid JSON.", and why.
            return context.underlyingError.map { "\(context.debugDescription) \(describe($0))" } ?? context.debugDescription
        default:
            // Foundation's JSON errors keep what went wrong in their debug description.
            return ((error as NSError).userInfo[NSDebugDescriptionErrorKey] as? String) ?? "\(error)"
        }
    }

    private static func path(_ keys: [any CodingKey]) -> String {
        keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
    }
}

extension UInt8 {
    fileprivate var isWhitespaceByte: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}

/// Collects entities from the XML of an Xcode data model.
private final class XcodeModelReader: NSObject, XMLParserDelegate {
    struct EntityForm {
        var name: String
        var parent: String?
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
    }

    var entities: [EntityForm] = []
    var error: ModelError?
    /// The document's root element, and whether it was closed.
    var root: String?
    var finished = false
    private var depth = 0

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        depth -= 1
        if depth == 0 { finished = true }
    }

    /// Xcode's attribute type names.
    static let types: [String: AttributeType] = [
        "Integer 16": .integer16, "Integer 32": .integer32, "Integer 64": .integer64, "Decimal": .decimal,
        "Double": .double, "Float": .float, "String": .string, "Boolean": .boolean, "Date": .date,
        "Binary": .binary, "UUID": .uuid, "URI": .string,
    ]

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        if depth == 0 { root = root ?? element }
        depth += 1
        switch element {
        case "entity":
            entities.append(EntityForm(name: attributes["name"] ?? "", parent: attributes["parentEntity"]))
        case "attribute" where !entities.isEmpty:
            let name = attributes["name"] ?? ""
            let typeName = attributes["attributeType"] ?? ""
            guard let type = Self.types[typeName] else {
                error = error ?? .unknownAttributeType(entity: entities[entities.count - 1].name, attribute: name, type: typeName)
                return
            }
            let defaultValue = attributes["defaultValueString"].map { Self.defaultValue($0, type) }
            entities[entities.count - 1].attributes.append(
                Attribute(name, type, optional: attributes["optional"] == "YES", defaultValue: defaultValue,
                          indexed: attributes["indexed"] == "YES"))
        case "fetchIndexElement" where !entities.isEmpty:
            // <fetchIndex><fetchIndexElement property="name" type="Binary" order="ascending"/></fetchIndex>
            let last = entities.count - 1
            if let property = attributes["property"],
               let i = entities[last].attributes.firstIndex(where: { $0.name == property }) {
                entities[last].attributes[i].isIndexed = true
            }
        case "relationship" where !entities.isEmpty:
            let rule: DeleteRule = switch attributes["deletionRule"] {
            case "Cascade": .cascade
            case "Deny": .deny
            case "No Action": .noAction
            default: .nullify
            }
            entities[entities.count - 1].relationships.append(Relationship(
                attributes["name"] ?? "", to: attributes["destinationEntity"] ?? "",
                toMany: attributes["toMany"] == "YES", optional: attributes["optional"] == "YES",
                inverse: attributes["inverseName"], deleteRule: rule))
        default:
            break
        }
    }

    static func defaultValue(_ text: String, _ type: AttributeType) -> PredicateValue {
        switch type {
        case .integer16, .integer32, .integer64: Int64(text).map(PredicateValue.int) ?? .string(text)
        case .decimal, .double, .float: Double(text).map(PredicateValue.double) ?? .string(text)
        case .boolean: .bool(text == "YES" || text == "1" || text.lowercased() == "true")
        case .date: Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .string(text)
        default: .string(text)
        }
    }
}

extension DataModel {
    /// The model in its JSON form (the form `init(json:)` reads), with keys
    /// sorted: the same model always gives the same bytes.
    public var jsonData: Data {
        var entities: [[String: Any]] = []
        for entity in self.entities {
            let attributes: [[String: Any]] = entity.attributes.map { a in
                var object: [String: Any] = ["name": a.name, "type": a.type.rawValue]
                if a.isOptional { object["optional"] = true }
                if a.isIndexed { object["indexed"] = true }
                if a.isCanonical { object["canonical"] = true }
                if let value = a.defaultValue,
                   let data = try? JSONEncoder().encode(value),
                   let json = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) {
                    object["default"] = json
                }
                return object
            }
            let relationships: [[String: Any]] = entity.relationships.map { r in
                var object: [String: Any] = ["name": r.name, "destination": r.destination, "toMany": r.isToMany,
                                             "optional": r.isOptional, "deleteRule": r.deleteRule.rawValue]
                if let inverse = r.inverse { object["inverse"] = inverse }
                return object
            }
            entities.append(["name": entity.name, "attributes": attributes, "relationships": relationships])
        }
        return (try? JSONSerialization.data(withJSONObject: ["entities": entities], options: [.sortedKeys])) ?? Data()
    }

    /// A hash of the model's layout (FNV-1a of its JSON form), to tell whether
    /// a store was made for this model.
    public var versionHash: String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in jsonData {
            hash ^= UInt64(byte)
            hash = hash &* 0x100_0000_01b3
        }
        return String(hash, radix: 16)
    }
}
