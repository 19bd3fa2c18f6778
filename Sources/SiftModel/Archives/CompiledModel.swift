// Stage 2 (schema): models in their compiled forms — an archived
// `NSManagedObjectModel` (a `.mom` file, and a Core Data store's
// `Z_MODELCACHE` after inflating it) and Xcode 3's `elements` file (an
// archive of Xcode's own editor model).
//
// In an archived `NSManagedObjectModel`, each entity lists every property,
// inherited ones as copies of its own; a property is declared by the
// topmost entity that has one of its name. Classes Sift does not know (an
// application's class as a default value) are skipped.

import Foundation
import SiftValues

extension DataModel {
    /// Reads an archived `NSManagedObjectModel`: a compiled `.mom` file, or a
    /// store's inflated model cache.
    ///
    /// - Parameters:
    ///   - data: The archive's bytes (a binary property list).
    ///   - path: What to call the file in errors (`"model"` by default).
    /// - Throws: `ModelError.unreadable` when the bytes are not a keyed archive
    ///   of an `NSManagedObjectModel`; another `ModelError` when an entity in it
    ///   is wrong or the model is not valid.
    public init(compiledModel data: Data, path: String = "model") throws(ModelError) {
        guard let archive = KeyedArchive(data), let root = archive.topObject("root") else {
            throw ModelError.unreadable(path: path, reason: "not a keyed archive of a model")
        }
        let reader = CompiledModelReader(archive: archive)
        guard archive.className(root) == "NSManagedObjectModel" else {
            throw ModelError.unreadable(path: path, reason: "its archive holds \(archive.className(root) ?? "no object"), "
                                        + "not an NSManagedObjectModel")
        }
        try self.init(reader.entities(of: root), fetchRequestTemplates: reader.templates(of: root),
                      configurations: reader.configurations(of: root))
        versionIdentifiers = archive.members(archive.object(root, "NSVersionIdentifiers")).compactMap { archive.string(at: $0) }
    }

    /// Reads Xcode 3's `elements` file (a `.xcdatamodel` folder without `contents`).
    ///
    /// - Parameters:
    ///   - data: The archive's bytes.
    ///   - path: What to call the file in errors (`"elements"` by default).
    /// - Throws: `ModelError.unreadable` when the bytes are not an Xcode 3 model
    ///   archive; another `ModelError` when an entity in it is wrong or the
    ///   model is not valid.
    public init(xcode3Elements data: Data, path: String = "elements") throws(ModelError) {
        guard let archive = KeyedArchive(data), let root = archive.topObject("root"),
              archive.className(root) == "XDPMModel" else {
            throw ModelError.unreadable(path: path, reason: "not an Xcode 3 model archive")
        }
        try self.init(Xcode3ModelReader(archive: archive).entities(of: root))
    }
}

/// Reads entities, templates and configurations from an archived
/// `NSManagedObjectModel`.
private struct CompiledModelReader {
    let archive: KeyedArchive
    var predicates: ArchivedPredicates { ArchivedPredicates(archive: archive) }

    func entities(of root: Int) throws(ModelError) -> [Entity] {
        let entries = archive.entries(archive.object(root, "NSEntities"))
        let byName = Dictionary(entries.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
        var result: [Entity] = []
        for (name, index) in entries {
            let superentity = archive.string(archive.object(index, "NSSuperentity"), "NSEntityName")
            let inherited = Set(superentity.flatMap { byName[$0] }.map { archive.entries(archive.object($0, "NSProperties")).map(\.key) } ?? [])
            var attributes: [Attribute] = []
            var relationships: [Relationship] = []
            var fetched: [FetchedProperty] = []
            for (propertyName, property) in archive.entries(archive.object(index, "NSProperties"))
            where !inherited.contains(propertyName) {
                switch archive.className(property) {
                case "NSRelationshipDescription":
                    relationships.append(relationship(property, named: propertyName))
                case "NSFetchedPropertyDescription":
                    let request = archive.object(property, "NSFetchRequest")
                    let entityName = archive.string(property, "_NSFetchRequestEntityName")
                        ?? archive.string(archive.object(request, "NSEntity"), "NSEntityName") ?? ""
                    fetched.append(FetchedProperty(propertyName, entityName: entityName,
                                                   predicate: predicates.predicate(archive.object(request, "NSPredicate"))
                                                       ?? "TRUEPREDICATE"))
                case "NSAttributeDescription", "NSDerivedAttributeDescription", "NSCompositeAttributeDescription":
                    attributes.append(try attribute(property, named: propertyName, in: name))
                default:
                    continue
                }
            }
            var entity = Entity(name, superentity: superentity, abstract: archive.flag(index, "NSIsAbstract"),
                                attributes: attributes, relationships: relationships)
            entity.fetchedProperties = fetched
            entity.renamingIdentifier = archive.string(index, "NSRenamingIdentifier").flatMap { $0 == name ? nil : $0 }
            entity.versionHashModifier = archive.string(index, "NSVersionHashModifier")
            entity.uniquenessConstraints = archive.members(archive.object(index, "NSUniqueTuples")).map { tuple in
                archive.members(tuple).compactMap { archive.string(at: $0) }
            }
            entity.indexes = archive.members(archive.object(index, "NSFetchIndexDescriptions")).map { description in
                FetchIndex(archive.string(description, "NSIndexName") ?? "",
                           properties: archive.members(archive.object(description, "NSIndexElements")).compactMap {
                               archive.string($0, "NSPropertyName")
                           })
            }
            result.append(entity)
        }
        return result
    }

    func attribute(_ index: Int, named name: String, in entity: String) throws(ModelError) -> Attribute {
        let code = archive.number(index, "NSAttributeType") ?? 0
        guard let type = AttributeType.coreDataCodes[code] else {
            throw ModelError.unknownAttributeType(entity: entity, attribute: name, type: "NSAttributeType \(code)")
        }
        var attribute = Attribute(name, type, optional: archive.flag(index, "NSIsOptional"),
                                  defaultValue: Self.value(archive.scalar(index, "NSDefaultValue"), type),
                                  indexed: archive.flag(index, "NSIsIndexed"), transient: archive.flag(index, "NSIsTransient"))
        let flags = archive.number(index, "NSFlagsKey") ?? 0
        attribute.allowsExternalStorage = flags & 0x04 != 0
        attribute.preservesValueInHistoryOnDeletion = flags & 0x10 != 0
        attribute.valueTransformerName = archive.string(index, "NSValueTransformerName")
        attribute.versionHashModifier = archive.string(index, "NSVersionHashModifier")
        attribute.renamingIdentifier = archive.string(index, "NSRenamingIdentifier").flatMap { $0 == name ? nil : $0 }
        if flags & 0x01 != 0 { attribute.maximum = archive.scalar(index, "NSMaxValueName").map { "\($0)" } }
        if flags & 0x02 != 0 { attribute.minimum = archive.scalar(index, "NSMinValueName").map { "\($0)" } }
        if archive.className(index) == "NSDerivedAttributeDescription" {
            let expression = archive.object(index, "NSDerivationExpression")
            attribute.derivation = predicates.expression(expression) ?? predicates.appleFormat(expression) ?? ""
        }
        for element in archive.members(archive.object(index, "NSCompositeElements")) {
            guard let elementName = archive.string(element, "NSPropertyName") else { continue }
            attribute.elements.append(try self.attribute(element, named: elementName, in: entity))
        }
        return attribute
    }

    func relationship(_ index: Int, named name: String) -> Relationship {
        let destination = archive.string(index, "_NSDestinationEntityName")
            ?? archive.string(archive.object(index, "NSDestinationEntity"), "NSEntityName") ?? ""
        let maxCount = archive.number(index, "NSMaxCount") ?? 0
        let rule = DeleteRule(coreDataCode: archive.number(index, "NSDeleteRule") ?? 1)
        var relationship = Relationship(name, to: destination, toMany: maxCount != 1,
                                        optional: archive.flag(index, "NSIsOptional"),
                                        inverse: archive.string(index, "_NSInverseRelationshipName")
                                            ?? archive.string(archive.object(index, "NSInverseRelationship"), "NSPropertyName"),
                                        deleteRule: rule, ordered: archive.flag(index, "NSIsOrdered"))
        relationship.minimumCount = archive.number(index, "NSMinCount") ?? 0
        relationship.maximumCount = maxCount
        relationship.isTransient = archive.flag(index, "NSIsTransient")
        relationship.versionHashModifier = archive.string(index, "NSVersionHashModifier")
        relationship.renamingIdentifier = archive.string(index, "NSRenamingIdentifier").flatMap { $0 == name ? nil : $0 }
        return relationship
    }

    func templates(of root: Int) -> [FetchRequestTemplate] {
        archive.entries(archive.object(root, "NSFetchRequestTemplates")).map { name, request in
            FetchRequestTemplate(name, entityName: archive.string(archive.object(request, "NSEntity"), "NSEntityName")
                                    ?? archive.string(request, "_NSFetchRequestEntityName") ?? "",
                                 predicate: predicates.predicate(archive.object(request, "NSPredicate")),
                                 fetchLimit: archive.number(request, "NSFetchLimit") ?? 0)
        }
    }

    func configurations(of root: Int) -> [String: [String]] {
        var result: [String: [String]] = [:]
        for (name, set) in archive.entries(archive.object(root, "NSConfigurations")) {
            result[name] = archive.members(set).compactMap { archive.string($0, "NSEntityName") }.sorted()
        }
        return result
    }

    /// A default value archived as a plain value; nil for an archived object.
    static func value(_ scalar: Any?, _ type: AttributeType) -> PredicateValue? {
        switch scalar {
        case let text as String: return type.convert(.string(text))
        case let flag as Bool where type == .boolean: return .bool(flag)
        // A property list may keep 0 and 1 as booleans.
        case let flag as Bool where type.isNumeric: return type.convert(.int(flag ? 1 : 0))
        case let number as Int: return type.convert(.int(Int64(number)))
        case let number as Double: return type.convert(.double(number))
        case let date as Date: return .date(date)
        case let data as Data: return type.convert(.data(data))
        default: return nil
        }
    }
}

/// Reads entities from Xcode 3's editor model: each entity and property
/// keeps its settings in "stereotypes", keyed by setting name.
private struct Xcode3ModelReader {
    let archive: KeyedArchive

    /// The settings of an element: setting name → the object index of its value.
    func settings(_ index: Int) -> [String: Int] {
        var result: [String: Int] = [:]
        for (_, stereotype) in archive.entries(archive.object(index, "XDBucketForStereotypesstorage")) {
            for (key, setting) in archive.entries(archive.object(stereotype, "XDBucketForOwnedAttributesstorage")) {
                result[key] = setting
            }
        }
        return result
    }

    func value(_ settings: [String: Int], _ key: String) -> Any? { settings[key].flatMap { archive.scalar($0, "_default") } }
    func flag(_ settings: [String: Int], _ key: String) -> Bool { settings[key].map { archive.flag($0, "_default") } ?? false }
    func number(_ settings: [String: Int], _ key: String) -> Int? { settings[key].flatMap { archive.number($0, "_default") } }

    func entities(of root: Int) throws(ModelError) -> [Entity] {
        let package = archive.object(root, "_xd_rootPackage")
        var result: [Entity] = []
        for (name, index) in archive.entries(archive.object(package, "XDBucketForClassesstorage")) {
            let entitySettings = settings(index)
            // The superentity, as the entity's generalization.
            let superentity = archive.members(archive.object(index, "XDBucketForGeneralizationsstorage")).lazy
                .compactMap { archive.string(archive.object($0, "_general"), "_name") ?? archive.string($0, "_name") }.first
            var attributes: [Attribute] = []
            var relationships: [Relationship] = []
            for (propertyName, property) in archive.entries(archive.object(index, "XDBucketForOwnedAttributesstorage")) {
                let s = settings(property)
                switch archive.className(property) {
                case "XDPMAttribute":
                    let code = number(s, "XD_PAttK_attributeType") ?? 0
                    guard let type = AttributeType.coreDataCodes[code] else {
                        throw ModelError.unknownAttributeType(entity: name, attribute: propertyName, type: "NSAttributeType \(code)")
                    }
                    var attribute = Attribute(propertyName, type, optional: flag(s, "XD_PPSK_isOptional"),
                                              indexed: flag(s, "XD_PPSK_isIndexed"), transient: flag(s, "XD_PPSK_isTransient"))
                    attribute.valueTransformerName = value(s, "XD_PAttK_valueTransformerName") as? String
                    attribute.allowsExternalStorage = flag(s, "XD_PAttK_allowsExternalBinaryDataStorage")
                    attribute.versionHashModifier = value(s, "XD_PPSK_versionHashModifier") as? String
                    if let text = value(s, "XD_PAttK_defaultValueAsString") as? String {
                        attribute.defaultValue = type.convert(Self.parse(text, type))
                    }
                    attributes.append(attribute)
                case "XDPMRelationship":
                    let destination = s["XD_PRK_destination"].flatMap { archive.string(archive.object($0, "_default"), "_name") } ?? ""
                    let inverse = s["XD_PRK_inverseRelationship"].flatMap { archive.string(archive.object($0, "_default"), "_name") }
                    let maxCount = number(s, "XD_PRK_maxCount") ?? 0
                    var relationship = Relationship(propertyName, to: destination,
                                                    toMany: flag(s, "XD_PRK_isToMany") || maxCount > 1,
                                                    optional: flag(s, "XD_PPSK_isOptional"), inverse: inverse,
                                                    ordered: flag(s, "XD_PRK_ordered"))
                    relationship.deleteRule = DeleteRule(coreDataCode: number(s, "XD_PRK_deleteRule") ?? 1)
                    relationship.minimumCount = number(s, "XD_PRK_minCount") ?? 0
                    relationship.maximumCount = maxCount
                    relationship.isTransient = flag(s, "XD_PPSK_isTransient")
                    relationship.versionHashModifier = value(s, "XD_PPSK_versionHashModifier") as? String
                    relationships.append(relationship)
                default:
                    continue
                }
            }
            var entity = Entity(name, superentity: superentity, abstract: flag(entitySettings, "XD_PSK_isAbstract"),
                                attributes: attributes, relationships: relationships)
            entity.versionHashModifier = value(entitySettings, "XD_PSK_versionHashModifier") as? String
            result.append(entity)
        }
        return result
    }

    static func parse(_ text: String, _ type: AttributeType) -> PredicateValue {
        if type.isInteger, type != .boolean, let i = Int64(text) { return .int(i) }
        if type.isNumeric, type != .boolean, let d = Double(text) { return .double(d) }
        if type == .boolean { return .bool(text == "YES" || text == "1") }
        return .string(text)
    }
}
