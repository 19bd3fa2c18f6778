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
    /// The JSON form of a model; every member but the names is optional.
    private struct JSONForm: Decodable {
        struct EntityForm: Decodable {
            var name: String
            var superentity: String?
            var abstract: Bool?
            var attributes: [AttributeForm]?
            var relationships: [RelationshipForm]?
            var uniquenessConstraints: [[String]]?
            var indexes: [IndexForm]?
            var fetchedProperties: [FetchedForm]?
            var renamingIdentifier: String?
            var versionHashModifier: String?
        }
        struct AttributeForm: Decodable {
            var name: String
            var type: String
            var optional: Bool?
            var `default`: PredicateValue?
            var indexed: Bool?
            var canonical: Bool?
            var transient: Bool?
            var derivation: String?
            var externalStorage: Bool?
            var valueTransformer: String?
            var elements: [AttributeForm]?
            var preservesValueInHistory: Bool?
            var minimum: String?
            var maximum: String?
            var renamingIdentifier: String?
            var versionHashModifier: String?
        }
        struct RelationshipForm: Decodable {
            var name: String
            var destination: String
            var toMany: Bool?
            var optional: Bool?
            var inverse: String?
            var deleteRule: DeleteRule?
            var ordered: Bool?
            var minCount: Int?
            var maxCount: Int?
            var transient: Bool?
            var renamingIdentifier: String?
            var versionHashModifier: String?
        }
        struct IndexForm: Decodable {
            var name: String
            var properties: [String]
        }
        struct FetchedForm: Decodable {
            var name: String
            var entity: String
            var predicate: String
        }
        struct TemplateForm: Decodable {
            var name: String
            var entity: String
            var predicate: String?
            var fetchLimit: Int?
            var includesSubentities: Bool?
        }
        var entities: [EntityForm]
        var fetchRequestTemplates: [TemplateForm]?
        var configurations: [String: [String]]?
    }

    private static func attribute(_ a: JSONForm.AttributeForm, in entity: String) throws(ModelError) -> Attribute {
        guard let type = AttributeType(rawValue: a.type) else {
            throw ModelError.unknownAttributeType(entity: entity, attribute: a.name, type: a.type)
        }
        // A default as the attribute's type holds it (JSON writes 0.0 as 0);
        // one that does not fit stays as written, for the model to report.
        let defaultValue = a.default.map { type.convert($0) ?? $0 }
        var attribute = Attribute(a.name, type, optional: a.optional ?? false, defaultValue: defaultValue,
                                  indexed: a.indexed ?? false, canonical: a.canonical ?? false,
                                  transient: a.transient ?? false)
        attribute.derivation = a.derivation
        attribute.allowsExternalStorage = a.externalStorage ?? false
        attribute.valueTransformerName = a.valueTransformer
        attribute.preservesValueInHistoryOnDeletion = a.preservesValueInHistory ?? false
        attribute.minimum = a.minimum
        attribute.maximum = a.maximum
        attribute.renamingIdentifier = a.renamingIdentifier
        attribute.versionHashModifier = a.versionHashModifier
        for element in a.elements ?? [] { attribute.elements.append(try Self.attribute(element, in: entity)) }
        return attribute
    }

    /// Reads a model from its JSON form.
    ///
    /// - Parameter data: The model's JSON text, as UTF-8 bytes.
    /// - Throws: `ModelError.unreadable` when the JSON does not decode as a
    ///   model, `ModelError.unknownAttributeType` for an attribute type it does
    ///   not know, or any `ModelError` from checking the model
    ///   (`init(_:fetchRequestTemplates:configurations:)`).
    public init(json data: Data) throws(ModelError) {
        let form: JSONForm
        do {
            form = try JSONDecoder().decode(JSONForm.self, from: data)
        } catch {
            throw ModelError.unreadable(path: "JSON", reason: Self.describe(error))
        }
        var entities: [Entity] = []
        for e in form.entities {
            var attributes: [Attribute] = []
            for a in e.attributes ?? [] { attributes.append(try Self.attribute(a, in: e.name)) }
            let relationships = (e.relationships ?? []).map {
                var r = Relationship($0.name, to: $0.destination, toMany: $0.toMany ?? false, optional: $0.optional ?? true,
                                     inverse: $0.inverse, deleteRule: $0.deleteRule ?? .nullify, ordered: $0.ordered ?? false)
                r.minimumCount = $0.minCount ?? 0
                r.maximumCount = $0.maxCount ?? ($0.toMany == true ? 0 : 1)
                r.isTransient = $0.transient ?? false
                r.renamingIdentifier = $0.renamingIdentifier
                r.versionHashModifier = $0.versionHashModifier
                return r
            }
            var entity = Entity(e.name, superentity: e.superentity, abstract: e.abstract ?? false, attributes: attributes,
                                relationships: relationships)
            entity.uniquenessConstraints = e.uniquenessConstraints ?? []
            entity.indexes = (e.indexes ?? []).map { FetchIndex($0.name, properties: $0.properties) }
            entity.fetchedProperties = (e.fetchedProperties ?? []).map {
                FetchedProperty($0.name, entityName: $0.entity, predicate: $0.predicate)
            }
            entity.renamingIdentifier = e.renamingIdentifier
            entity.versionHashModifier = e.versionHashModifier
            entities.append(entity)
        }
        let templates = (form.fetchRequestTemplates ?? []).map {
            FetchRequestTemplate($0.name, entityName: $0.entity, predicate: $0.predicate, fetchLimit: $0.fetchLimit ?? 0,
                                 includesSubentities: $0.includesSubentities ?? true)
        }
        try self.init(entities, fetchRequestTemplates: templates, configurations: form.configurations ?? [:])
    }

    /// Reads a model from a file: a JSON model, a data set (JSON with a
    /// "model" member), an `.xcdatamodel` folder (its `contents`, or Xcode
    /// 3's `elements`), its `contents` file, an `.xcdatamodeld` or `.momd`
    /// bundle (its current version; `ModelBundle` reads the others), or a
    /// compiled `.mom` file.
    ///
    /// - Parameter url: The file or folder to read.
    /// - Throws: `ModelError.unreadable` when there is no such file, it cannot
    ///   be read, is empty, or is in no format above; any `ModelError` from
    ///   reading that form or checking the model.
    public init(contentsOf url: URL) throws(ModelError) {
        let path = url.path
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw ModelError.unreadable(path: path, reason: "no such file")
        }
        if isDirectory.boolValue {
            switch url.pathExtension {
            case "xcdatamodeld", "momd":
                self = try ModelBundle(contentsOf: url).model()
            default:
                let contents = url.appendingPathComponent("contents")
                let elements = url.appendingPathComponent("elements")
                if !FileManager.default.fileExists(atPath: contents.path), FileManager.default.fileExists(atPath: elements.path) {
                    guard let data = FileManager.default.contents(atPath: elements.path) else {
                        throw ModelError.unreadable(path: elements.path, reason: "cannot read the file")
                    }
                    try self.init(xcode3Elements: data, path: elements.path)
                } else {
                    try self.init(xcdatamodel: contents)
                }
            }
            return
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ModelError.unreadable(path: path, reason: "cannot read the file")
        }
        if data.starts(with: Array("bplist00".utf8)) {
            // A compiled model (`.mom`) or Xcode 3's `elements`.
            if (try? DataModel(compiledModel: data, path: path)) == nil, let model = try? DataModel(xcode3Elements: data, path: path) {
                self = model
            } else {
                try self.init(compiledModel: data, path: path)
            }
            return
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
    ///
    /// - Parameter url: The `contents` file inside an `.xcdatamodel` folder.
    /// - Throws: `ModelError.unreadable` when the file cannot be read, or any
    ///   `ModelError` from `init(xcdatamodelXML:path:)`.
    public init(xcdatamodel url: URL) throws(ModelError) {
        guard let data = FileManager.default.contents(atPath: url.path) else {
            throw ModelError.unreadable(path: url.path, reason: "cannot read the file")
        }
        try self.init(xcdatamodelXML: data, path: url.path)
    }

    /// Reads the XML that Xcode writes for a data model.
    ///
    /// - Parameters:
    ///   - data: The XML, as bytes.
    ///   - path: What to call the file in errors (`"contents"` by default).
    /// - Throws: `ModelError.unreadable` when the bytes are not UTF-8, are not
    ///   valid XML, hold a processing instruction, have a root element other
    ///   than `<model>` or end before `</model>`; another `ModelError` when an
    ///   element of the model is wrong or the model is not valid.
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
        var entities: [Entity] = []
        for form in reader.entities { entities.append(try reader.resolvedEntity(form)) }
        try self.init(entities, fetchRequestTemplates: reader.templates, configurations: reader.configurations)
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

    /// A readable message for a JSON decoding error: what is wrong, and where.
    ///
    /// - Parameter error: The error from decoding JSON.
    /// - Returns: The message, with the coding path where there is one.
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

    /// Where in the document: `entities[0].attributes`, or "the top level" for the document itself.
    private static func path(_ keys: [any CodingKey]) -> String {
        let path = keys.map { $0.intValue.map { "[\($0)]" } ?? ".\($0.stringValue)" }.joined()
        return path.isEmpty ? "the top level" : String(path.drop { $0 == "." })
    }
}

extension UInt8 {
    fileprivate var isWhitespaceByte: Bool { self == 0x20 || self == 0x0A || self == 0x0D || self == 0x09 }
}

/// Collects entities, fetch request templates, configurations and
/// composites from the XML of an Xcode data model. Elements and attributes
/// Sift does not use (layout, user info, class names) are skipped.
private final class XcodeModelReader: NSObject, XMLParserDelegate {
    struct EntityForm {
        var name: String
        var parent: String?
        var isAbstract = false
        var attributes: [Attribute] = []
        var relationships: [Relationship] = []
        var uniquenessConstraints: [[String]] = []
        var indexes: [FetchIndex] = []
        var fetchedProperties: [FetchedProperty] = []
        var renamingIdentifier: String?
        var versionHashModifier: String?
        /// The composite type each composite attribute names.
        var compositeTypes: [String: String] = [:]

        var entity: Entity {
            var entity = Entity(name, superentity: parent, abstract: isAbstract, attributes: attributes,
                                relationships: relationships)
            entity.uniquenessConstraints = uniquenessConstraints
            entity.indexes = indexes
            entity.fetchedProperties = fetchedProperties
            entity.renamingIdentifier = renamingIdentifier
            entity.versionHashModifier = versionHashModifier
            return entity
        }
    }

    var entities: [EntityForm] = []
    var templates: [FetchRequestTemplate] = []
    var configurations: [String: [String]] = [:]
    /// Composite types (Xcode's `<composite>`), by name: their elements.
    var composites: [String: [Attribute]] = [:]
    /// The composite type of each composite element of a composite type.
    var compositeElementTypes: [String: [String: String]] = [:]
    var error: ModelError?
    /// The document's root element, and whether it was closed.
    var root: String?
    var finished = false
    /// The open elements, outermost first.
    private var open: [String] = []
    private var configuration: String?
    private var composite: String?
    private var fetchedProperty: String?
    private var constraint: [String]?
    private var index: FetchIndex?

    func parser(_ parser: XMLParser, didEndElement element: String, namespaceURI: String?, qualifiedName: String?) {
        open.removeLast()
        if open.isEmpty { finished = true }
        switch element {
        case "configuration": configuration = nil
        case "composite": composite = nil
        case "fetchedProperty": fetchedProperty = nil
        case "uniquenessConstraint":
            if let constraint, !constraint.isEmpty, !entities.isEmpty {
                entities[entities.count - 1].uniquenessConstraints.append(constraint)
            }
            constraint = nil
        case "fetchIndex", "compoundIndex":
            if var index, !index.properties.isEmpty, !entities.isEmpty {
                if index.name.isEmpty { index.name = index.properties.joined(separator: "_") }
                let last = entities.count - 1
                entities[last].indexes.append(index)
                // An index of one attribute: the attribute is indexed.
                if index.properties.count == 1,
                   let i = entities[last].attributes.firstIndex(where: { $0.name == index.properties[0] }) {
                    entities[last].attributes[i].isIndexed = true
                }
            }
            index = nil
        default:
            break
        }
    }

    func parser(_ parser: XMLParser, didStartElement element: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        if open.isEmpty { root = root ?? element }
        let parent = open.last
        open.append(element)
        switch (element, parent) {
        case ("entity", "model"?):
            entities.append(EntityForm(name: attributes["name"] ?? "", parent: attributes["parentEntity"],
                                       isAbstract: attributes["isAbstract"] == "YES",
                                       renamingIdentifier: attributes["elementID"] ?? attributes["renamingIdentifier"],
                                       versionHashModifier: attributes["versionHashModifier"]))
        case ("composite", "model"?):
            composite = attributes["name"] ?? ""
            composites[composite!] = composites[composite!] ?? []
        case ("attribute", "entity"?) where !entities.isEmpty:
            guard let attribute = attribute(attributes, in: entities[entities.count - 1].name) else { return }
            if attribute.type == .composite, let type = attributes["composite"] {
                entities[entities.count - 1].compositeTypes[attribute.name] = type
            }
            entities[entities.count - 1].attributes.append(attribute)
        case ("attribute", "composite"?):
            guard let composite, let attribute = attribute(attributes, in: composite) else { return }
            if attribute.type == .composite, let type = attributes["composite"] {
                compositeElementTypes[composite, default: [:]][attribute.name] = type
            }
            composites[composite, default: []].append(attribute)
        case ("fetchIndexElement", "fetchIndex"?) where !entities.isEmpty:
            // <fetchIndex name="byName"><fetchIndexElement property="name" type="Binary" order="ascending"/></fetchIndex>
            if let property = attributes["property"] { index?.properties.append(property) }
        case ("fetchIndex", "entity"?):
            index = FetchIndex(attributes["name"] ?? "", properties: [])
        case ("uniquenessConstraint", _):
            constraint = []
        case ("compoundIndex", "compoundIndexes"?):
            // The older form of a fetch index: <compoundIndex><index value="a"/>…</compoundIndex>.
            index = FetchIndex("", properties: [])
        case ("index", "compoundIndex"?):
            if let value = attributes["value"] { index?.properties.append(value) }
        case ("constraint", "uniquenessConstraint"?):
            if let value = attributes["value"] { constraint?.append(value) }
        case ("relationship", "entity"?) where !entities.isEmpty:
            let rule: DeleteRule = switch attributes["deletionRule"] {
            case "Cascade": .cascade
            case "Deny": .deny
            case "No Action": .noAction
            default: .nullify
            }
            let toMany = attributes["toMany"] == "YES"
            var relationship = Relationship(
                attributes["name"] ?? "", to: attributes["destinationEntity"] ?? "",
                toMany: toMany, optional: attributes["optional"] == "YES",
                inverse: attributes["inverseName"], deleteRule: rule, ordered: attributes["ordered"] == "YES")
            relationship.minimumCount = attributes["minCount"].flatMap { Int($0) } ?? 0
            relationship.maximumCount = attributes["maxCount"].flatMap { Int($0) } ?? (toMany ? 0 : 1)
            relationship.isTransient = attributes["transient"] == "YES"
            relationship.renamingIdentifier = attributes["elementID"] ?? attributes["renamingIdentifier"]
            relationship.versionHashModifier = attributes["versionHashModifier"]
            entities[entities.count - 1].relationships.append(relationship)
        case ("fetchedProperty", "entity"?):
            fetchedProperty = attributes["name"] ?? ""
        case ("fetchRequest", "fetchedProperty"?) where !entities.isEmpty:
            guard let fetchedProperty else { return }
            entities[entities.count - 1].fetchedProperties.append(
                FetchedProperty(fetchedProperty, entityName: attributes["entity"] ?? "",
                                predicate: attributes["predicateString"] ?? "TRUEPREDICATE"))
        case ("fetchRequest", "model"?):
            templates.append(FetchRequestTemplate(
                attributes["name"] ?? "", entityName: attributes["entity"] ?? "",
                predicate: attributes["predicateString"], fetchLimit: attributes["fetchLimit"].flatMap { Int($0) } ?? 0,
                includesSubentities: attributes["includeSubentities"] != "NO"))
        case ("configuration", "model"?):
            configuration = attributes["name"] ?? ""
            configurations[configuration!] = configurations[configuration!] ?? []
        case ("memberEntity", "configuration"?):
            if let configuration, let name = attributes["name"] { configurations[configuration, default: []].append(name) }
        default:
            break
        }
    }

    /// An `<attribute>` element: its type (none is undefined, which Xcode
    /// allows only for a transient attribute), flags and default.
    private func attribute(_ attributes: [String: String], in owner: String) -> Attribute? {
        let name = attributes["name"] ?? ""
        let typeName = attributes["attributeType"] ?? "Undefined"
        guard let type = AttributeType.xcodeNames[typeName] else {
            error = error ?? .unknownAttributeType(entity: owner, attribute: name, type: typeName)
            return nil
        }
        // A date's default is `defaultDateTimeInterval`; others are text. One
        // that does not fit the type is dropped, as Core Data drops it.
        let defaultValue = (type == .date ? attributes["defaultDateTimeInterval"] : nil)
            .flatMap { Double($0).map { PredicateValue.date(Date(timeIntervalSinceReferenceDate: $0)) } }
            ?? attributes["defaultValueString"].flatMap { Self.defaultValue($0, type) }.flatMap { type.convert($0) }
        var attribute = Attribute(name, type, optional: attributes["optional"] == "YES", defaultValue: defaultValue,
                                  indexed: attributes["indexed"] == "YES", transient: attributes["transient"] == "YES")
        if attributes["derived"] == "YES" { attribute.derivation = attributes["derivationExpression"] ?? "" }
        attribute.allowsExternalStorage = attributes["allowsExternalBinaryDataStorage"] == "YES"
        attribute.preservesValueInHistoryOnDeletion = attributes["preserveAfterDeletion"] == "YES"
        attribute.valueTransformerName = attributes["valueTransformerName"]
        attribute.minimum = attributes["minValueString"]
        attribute.maximum = attributes["maxValueString"]
        attribute.renamingIdentifier = attributes["elementID"] ?? attributes["renamingIdentifier"]
        attribute.versionHashModifier = attributes["versionHashModifier"]
        return attribute
    }

    /// An entity form with each composite attribute's elements filled in
    /// from its composite type, nested composites too.
    func resolvedEntity(_ form: EntityForm) throws(ModelError) -> Entity {
        var form = form
        for (i, attribute) in form.attributes.enumerated() where attribute.type == .composite {
            guard let typeName = form.compositeTypes[attribute.name] else {
                throw ModelError.unknownAttributeType(entity: form.name, attribute: attribute.name, type: "Composite (unnamed)")
            }
            form.attributes[i].elements = try elements(of: typeName, for: form.name, attribute.name, depth: 0)
        }
        return form.entity
    }

    /// A composite type's elements, its composite elements filled in.
    private func elements(of typeName: String, for entity: String, _ attribute: String, depth: Int) throws(ModelError) -> [Attribute] {
        guard depth < 16, var elements = composites[typeName] else {
            throw ModelError.unknownAttributeType(entity: entity, attribute: attribute, type: "Composite " + typeName)
        }
        for (i, element) in elements.enumerated() where element.type == .composite {
            guard let inner = compositeElementTypes[typeName]?[element.name] else {
                throw ModelError.unknownAttributeType(entity: entity, attribute: attribute + "." + element.name,
                                                      type: "Composite (unnamed)")
            }
            elements[i].elements = try self.elements(of: inner, for: entity, attribute + "." + element.name, depth: depth + 1)
        }
        return elements
    }

    /// A default value as Xcode writes it (nil for the types that have none):
    /// whole numbers written as reals (`0.0`) and YES/NO read as numbers.
    static func defaultValue(_ text: String, _ type: AttributeType) -> PredicateValue? {
        let flag: PredicateValue? = switch text.uppercased() {
        case "YES", "TRUE": .int(1)
        case "NO", "FALSE": .int(0)
        default: nil
        }
        switch type {
        case .integer16, .integer32, .integer64:
            return Int64(text).map(PredicateValue.int) ?? Double(text).flatMap(Int64.init(exactly:)).map(PredicateValue.int) ?? flag
        case .decimal, .double, .float: return Double(text).map(PredicateValue.double) ?? flag
        case .boolean: return flag ?? Int64(text).map(PredicateValue.int)
        case .date: return Double(text).map { .date(Date(timeIntervalSinceReferenceDate: $0)) }
        case .string, .uri, .uuid: return .string(text)
        default: return nil
        }
    }
}

extension DataModel {
    /// The model in its JSON form (the form `init(json:)` reads), with keys
    /// sorted: the same model always gives the same bytes. Each entity lists
    /// only what it declares; members at their defaults are left out.
    public var jsonData: Data {
        func attributeObject(_ a: Attribute) -> [String: Any] {
            var object: [String: Any] = ["name": a.name, "type": a.type.rawValue]
            if a.isOptional { object["optional"] = true }
            if a.isIndexed { object["indexed"] = true }
            if a.isCanonical { object["canonical"] = true }
            if a.isTransient, a.type != .undefined { object["transient"] = true }
            if let derivation = a.derivation { object["derivation"] = derivation }
            if a.allowsExternalStorage { object["externalStorage"] = true }
            if let name = a.valueTransformerName { object["valueTransformer"] = name }
            if !a.elements.isEmpty { object["elements"] = a.elements.map(attributeObject) }
            if a.preservesValueInHistoryOnDeletion { object["preservesValueInHistory"] = true }
            if let minimum = a.minimum { object["minimum"] = minimum }
            if let maximum = a.maximum { object["maximum"] = maximum }
            if let name = a.renamingIdentifier { object["renamingIdentifier"] = name }
            if let modifier = a.versionHashModifier { object["versionHashModifier"] = modifier }
            if let value = a.defaultValue,
               let data = try? JSONEncoder().encode(value),
               let json = try? JSONSerialization.jsonObject(with: data, options: .fragmentsAllowed) {
                object["default"] = json
            }
            return object
        }
        var entities: [[String: Any]] = []
        for entity in self.entities {
            let attributes = entity.declaredAttributes.filter { $0.composite == nil }.map(attributeObject)
            let relationships: [[String: Any]] = entity.declaredRelationships.map { r in
                var object: [String: Any] = ["name": r.name, "destination": r.destination, "toMany": r.isToMany,
                                             "optional": r.isOptional, "deleteRule": r.deleteRule.rawValue]
                if let inverse = r.inverse { object["inverse"] = inverse }
                if r.isOrdered { object["ordered"] = true }
                if r.minimumCount != 0 { object["minCount"] = r.minimumCount }
                if r.maximumCount != (r.isToMany ? 0 : 1) { object["maxCount"] = r.maximumCount }
                if r.isTransient { object["transient"] = true }
                if let name = r.renamingIdentifier { object["renamingIdentifier"] = name }
                if let modifier = r.versionHashModifier { object["versionHashModifier"] = modifier }
                return object
            }
            var object: [String: Any] = ["name": entity.name, "attributes": attributes, "relationships": relationships]
            if let superentity = entity.superentity { object["superentity"] = superentity }
            if entity.isAbstract { object["abstract"] = true }
            if let name = entity.renamingIdentifier { object["renamingIdentifier"] = name }
            if let modifier = entity.versionHashModifier { object["versionHashModifier"] = modifier }
            if !entity.uniquenessConstraints.isEmpty { object["uniquenessConstraints"] = entity.uniquenessConstraints }
            if !entity.indexes.isEmpty {
                object["indexes"] = entity.indexes.map { ["name": $0.name, "properties": $0.properties] as [String: Any] }
            }
            if !entity.fetchedProperties.isEmpty {
                object["fetchedProperties"] = entity.fetchedProperties.map {
                    ["name": $0.name, "entity": $0.entityName, "predicate": $0.predicate]
                }
            }
            entities.append(object)
        }
        var model: [String: Any] = ["entities": entities]
        if !fetchRequestTemplates.isEmpty {
            model["fetchRequestTemplates"] = fetchRequestTemplates.keys.sorted().map { name -> [String: Any] in
                let t = fetchRequestTemplates[name]!
                var object: [String: Any] = ["name": t.name, "entity": t.entityName]
                if let predicate = t.predicate { object["predicate"] = predicate }
                if t.fetchLimit != 0 { object["fetchLimit"] = t.fetchLimit }
                if !t.includesSubentities { object["includesSubentities"] = false }
                return object
            }
        }
        if !configurations.isEmpty { model["configurations"] = configurations }
        return (try? JSONSerialization.data(withJSONObject: model, options: [.sortedKeys])) ?? Data()
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
