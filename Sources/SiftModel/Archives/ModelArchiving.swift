// Stage 2 (schema): a model written in its compiled form — an archived
// `NSManagedObjectModel`, as a `.mom` file and a Core Data store's
// `Z_MODELCACHE` hold it — with Foundation's `NSKeyedArchiver`, under the
// class names and keys Core Data writes. Each entity lists every property,
// inherited ones as copies of its own; entities, properties and the model
// refer to each other by reference, as in Core Data's archives.

import CZlib
import Foundation
import SiftValues

extension DataModel {
    /// The model as an archived `NSManagedObjectModel` (a binary property
    /// list): what a compiled `.mom` file holds. `init(compiledModel:)`
    /// reads it back.
    public var compiledModelData: Data {
        let archiver = NSKeyedArchiver(requiringSecureCoding: false)
        archiver.outputFormat = .binary
        archiver.encode(ArchivedModel(self), forKey: NSKeyedArchiveRootObjectKey)
        archiver.finishEncoding()
        return ArchivedModel.withCoreDataClassNames(archiver.encodedData) ?? archiver.encodedData
    }

    /// `compiledModelData`, raw-deflate compressed: a store's model cache
    /// (`Z_MODELCACHE.Z_CONTENT`), which `init(modelCache:)` reads back.
    public var modelCacheData: Data? { Deflate.raw(compiledModelData) }
}

enum Deflate {
    /// `data` compressed as raw DEFLATE (no zlib header), as Core Data
    /// compresses a model cache; nil if zlib fails.
    static func raw(_ data: Data) -> Data? {
        var stream = z_stream()
        guard deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { deflateEnd(&stream) }
        let input = [UInt8](data)
        guard let available = UInt32(exactly: input.count) else { return nil }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, UInt(available))))
        let status = input.withUnsafeBufferPointer { source in
            output.withUnsafeMutableBufferPointer { target -> Int32 in
                stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
                stream.avail_in = available
                stream.next_out = target.baseAddress
                stream.avail_out = UInt32(clamping: target.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        return Data(output[..<Int(stream.total_out)])
    }
}

/// An `NSManagedObjectModel`, as Core Data archives one.
final class ArchivedModel: NSObject, NSCoding {
    /// Core Data's class of each of these, and the classes it inherits from.
    static let classNames: [String: [String]] = [
        NSStringFromClass(ArchivedModel.self): ["NSManagedObjectModel", "NSObject"],
        NSStringFromClass(ArchivedEntity.self): ["NSEntityDescription", "NSObject"],
        NSStringFromClass(ArchivedAttribute.self): ["NSAttributeDescription", "NSPropertyDescription", "NSObject"],
        NSStringFromClass(ArchivedComposite.self): ["NSCompositeAttributeDescription", "NSAttributeDescription",
                                                    "NSPropertyDescription", "NSObject"],
        NSStringFromClass(ArchivedRelationship.self): ["NSRelationshipDescription", "NSPropertyDescription", "NSObject"],
        NSStringFromClass(ArchivedFetchIndex.self): ["NSFetchIndexDescription", "NSObject"],
        NSStringFromClass(ArchivedFetchIndexElement.self): ["NSFetchIndexElementDescription", "NSObject"],
        NSStringFromClass(ArchivedDerivedAttribute.self): ["NSDerivedAttributeDescription", "NSAttributeDescription",
                                                           "NSPropertyDescription", "NSObject"],
        NSStringFromClass(ArchivedSelfExpression.self): ["NSSelfExpression", "NSExpression", "NSObject"],
        NSStringFromClass(ArchivedKeyPathExpression.self): ["NSKeyPathExpression", "NSFunctionExpression", "NSExpression", "NSObject"],
        NSStringFromClass(ArchivedKeyPathSpecifier.self): ["NSKeyPathSpecifierExpression", "NSExpression", "NSObject"],
        NSStringFromClass(ArchivedFunctionExpression.self): ["NSFunctionExpression", "NSExpression", "NSObject"],
    ]

    /// The archive with Core Data's class names in place of these classes'.
    /// (`NSKeyedArchiver.setClassName(_:for:)` is not applied by
    /// swift-corelibs-foundation: it records the name under another key
    /// than the one it looks up.)
    static func withCoreDataClassNames(_ archive: Data) -> Data? {
        guard var plist = try? PropertyListSerialization.propertyList(from: archive, format: nil) as? [String: Any],
              var objects = plist["$objects"] as? [Any] else { return nil }
        for (i, object) in objects.enumerated() {
            guard let description = object as? [String: Any], let name = description["$classname"] as? String,
                  let chain = classNames[name] else { continue }
            objects[i] = ["$classname": chain[0], "$classes": chain] as [String: Any]
        }
        plist["$objects"] = objects
        return try? PropertyListSerialization.data(fromPropertyList: plist, format: .binary, options: 0)
    }

    let entities: [String: ArchivedEntity]
    let versionIdentifiers: [String]

    init(_ model: DataModel) {
        versionIdentifiers = model.versionIdentifiers
        var entities: [String: ArchivedEntity] = [:]
        for entity in model.entities { entities[entity.name] = ArchivedEntity(entity) }
        self.entities = entities
        super.init()
        for entity in model.entities {
            let archived = entities[entity.name]!
            archived.model = self
            archived.superentity = entity.superentity.flatMap { entities[$0] }
            archived.subentities = Dictionary(uniqueKeysWithValues: entity.subentities.compactMap { name in entities[name].map { (name, $0) } })
            for attribute in entity.attributes where !attribute.name.contains(".") {
                archived.properties[attribute.name] = ArchivedAttribute.make(attribute, of: archived)
            }
            for relationship in entity.relationships {
                archived.properties[relationship.name] = ArchivedRelationship(relationship, of: archived,
                                                                              destination: entities[relationship.destination])
            }
            archived.indexes = entity.indexes.map { ArchivedFetchIndex($0, of: archived) }
        }
        // Inverses refer to each other's descriptions.
        for entity in model.entities {
            for relationship in entity.relationships {
                guard let archived = entities[entity.name]!.properties[relationship.name] as? ArchivedRelationship,
                      let inverse = relationship.inverse else { continue }
                archived.inverse = entities[relationship.destination]?.properties[inverse] as? ArchivedRelationship
            }
        }
    }

    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        coder.encode(entities as NSDictionary, forKey: "NSEntities")
        coder.encode(NSSet(array: versionIdentifiers), forKey: "NSVersionIdentifiers")
    }
}

/// An `NSEntityDescription`.
final class ArchivedEntity: NSObject, NSCoding {
    let entity: Entity
    weak var model: ArchivedModel?
    weak var superentity: ArchivedEntity?
    var subentities: [String: ArchivedEntity] = [:]
    var properties: [String: NSObject] = [:]
    var indexes: [ArchivedFetchIndex] = []

    init(_ entity: Entity) {
        self.entity = entity
    }

    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        coder.encode(entity.name, forKey: "NSEntityName")
        coder.encode("NSManagedObject", forKey: "NSClassNameForEntity")
        coder.encode(model, forKey: "NSManagedObjectModel")
        coder.encode(superentity, forKey: "NSSuperentity")
        coder.encode(subentities as NSDictionary, forKey: "NSSubentities")
        coder.encode(properties as NSDictionary, forKey: "NSProperties")
        if entity.isAbstract { coder.encode(true, forKey: "NSIsAbstract") }
        coder.encode(entity.renamingIdentifier ?? entity.name, forKey: "NSRenamingIdentifier")
        coder.encode(entity.versionHashModifier, forKey: "NSVersionHashModifier")
        coder.encode(NSDictionary(), forKey: "NSUserInfo")
        coder.encode(entity.uniquenessConstraints.map { $0 as NSArray } as NSArray, forKey: "NSUniqueTuples")
        coder.encode(indexes as NSArray, forKey: "NSFetchIndexDescriptions")
    }
}

/// An `NSAttributeDescription` (a composite's: `ArchivedComposite`).
class ArchivedAttribute: NSObject, NSCoding {
    let attribute: Attribute
    weak var entity: ArchivedEntity?

    init(_ attribute: Attribute, of entity: ArchivedEntity) {
        self.attribute = attribute
        self.entity = entity
    }

    required init?(coder: NSCoder) { nil }

    /// The description of `attribute`: a composite's with its elements.
    static func make(_ attribute: Attribute, of entity: ArchivedEntity) -> ArchivedAttribute {
        if attribute.type == .composite { return ArchivedComposite(attribute, of: entity) }
        if let derivation = attribute.derivation, let expression = ArchivedDerivedAttribute.expression(derivation) {
            return ArchivedDerivedAttribute(attribute, of: entity, expression: expression)
        }
        return ArchivedAttribute(attribute, of: entity)
    }

    /// The Objective-C class of the attribute's values, as Core Data names it.
    var valueClassName: String? {
        switch attribute.type {
        case .integer16, .integer32, .integer64, .double, .float, .boolean: "NSNumber"
        case .decimal: "NSDecimalNumber"
        case .string: "NSString"
        case .date: "NSDate"
        case .binary: "NSData"
        case .uuid: "NSUUID"
        case .uri: "NSURL"
        case .transformable, .objectID, .composite, .undefined: nil
        }
    }

    func encode(with coder: NSCoder) {
        coder.encode(attribute.name, forKey: "NSPropertyName")
        coder.encode(entity, forKey: "NSEntity")
        coder.encode(attribute.type.coreDataCode, forKey: "NSAttributeType")
        coder.encode(valueClassName, forKey: "NSAttributeValueClassName")
        if attribute.isOptional { coder.encode(true, forKey: "NSIsOptional") }
        if attribute.isTransient { coder.encode(true, forKey: "NSIsTransient") }
        if attribute.isIndexed { coder.encode(true, forKey: "NSIsIndexed") }
        coder.encode(attribute.defaultValue.flatMap(Self.plain), forKey: "NSDefaultValue")
        var flags = 0
        if attribute.maximum != nil { flags |= 0x01 }
        if attribute.minimum != nil { flags |= 0x02 }
        if attribute.allowsExternalStorage { flags |= 0x04 }
        if attribute.preservesValueInHistoryOnDeletion { flags |= 0x10 }
        coder.encode(flags, forKey: "NSFlagsKey")
        if let maximum = attribute.maximum { coder.encode(Self.bound(maximum), forKey: "NSMaxValueName") }
        if let minimum = attribute.minimum { coder.encode(Self.bound(minimum), forKey: "NSMinValueName") }
        coder.encode(attribute.valueTransformerName, forKey: "NSValueTransformerName")
        coder.encode(attribute.renamingIdentifier ?? attribute.name, forKey: "NSRenamingIdentifier")
        coder.encode(attribute.versionHashModifier, forKey: "NSVersionHashModifier")
    }

    /// A default value as a property-list value.
    static func plain(_ value: PredicateValue) -> NSObject? {
        switch value {
        case .int(let i): NSNumber(value: i)
        case .double(let d): NSNumber(value: d)
        case .bool(let b): NSNumber(value: b)
        case .string(let s): s as NSString
        case .date(let d): d as NSDate
        case .data(let d): d as NSData
        default: nil
        }
    }

    /// A minimum or maximum as a number when it is one.
    static func bound(_ text: String) -> NSObject {
        if let i = Int64(text) { return NSNumber(value: i) }
        if let d = Double(text) { return NSNumber(value: d) }
        return text as NSString
    }
}

/// An `NSCompositeAttributeDescription`: its elements, each an attribute
/// named by its own name.
final class ArchivedComposite: ArchivedAttribute {
    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        let elements = attribute.elements.map { element -> ArchivedAttribute in
            var element = element
            element.name = element.name.split(separator: ".").last.map(String.init) ?? element.name
            return ArchivedAttribute.make(element, of: entity!)
        }
        coder.encode(elements as NSArray, forKey: "NSCompositeElements")
    }
}

/// An `NSDerivedAttributeDescription`: its derivation as an archived
/// `NSExpression`, for the shapes Xcode writes — a key path, and an
/// aggregate of one (`pages.@count` is the function `count:` of `pages`).
final class ArchivedDerivedAttribute: ArchivedAttribute {
    var expression: NSObject = ArchivedSelfExpression()

    convenience init(_ attribute: Attribute, of entity: ArchivedEntity, expression: NSObject) {
        self.init(attribute, of: entity)
        self.expression = expression
    }

    /// The archived form of a derivation; nil for one of another shape.
    static func expression(_ text: String) -> NSObject? {
        let names = ["@count": "count:", "@sum": "sum:", "@avg": "average:", "@min": "min:", "@max": "max:"]
        let parts = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        let isKey = { (part: String) in
            !part.isEmpty && part.unicodeScalars.allSatisfy { CharacterSet.alphanumerics.contains($0) || $0 == "_" }
        }
        if let i = parts.firstIndex(where: { names[$0] != nil }), i > 0 {
            let path = Array(parts[..<i] + parts[(i + 1)...])
            guard path.allSatisfy(isKey) else { return nil }
            return ArchivedFunctionExpression(selector: names[parts[i]]!,
                                              arguments: [ArchivedKeyPathExpression(path.joined(separator: "."))])
        }
        return parts.allSatisfy(isKey) ? ArchivedKeyPathExpression(text) : nil
    }

    override func encode(with coder: NSCoder) {
        super.encode(with: coder)
        coder.encode(expression, forKey: "NSDerivationExpression")
    }
}

/// `SELF` as an archived `NSExpression`.
final class ArchivedSelfExpression: NSObject, NSCoding {
    override init() {}
    required init?(coder: NSCoder) { nil }
    func encode(with coder: NSCoder) {
        coder.encode(1, forKey: "NSExpressionType")
    }
}

/// The key of a key path expression.
final class ArchivedKeyPathSpecifier: NSObject, NSCoding {
    let keyPath: String
    init(_ keyPath: String) { self.keyPath = keyPath }
    required init?(coder: NSCoder) { nil }
    func encode(with coder: NSCoder) {
        coder.encode(10, forKey: "NSExpressionType")
        coder.encode(keyPath, forKey: "NSKeyPath")
    }
}

/// A key path from `SELF`, as an archived `NSExpression`.
final class ArchivedKeyPathExpression: NSObject, NSCoding {
    let keyPath: String
    init(_ keyPath: String) { self.keyPath = keyPath }
    required init?(coder: NSCoder) { nil }
    func encode(with coder: NSCoder) {
        coder.encode(3, forKey: "NSExpressionType")
        coder.encode(ArchivedSelfExpression(), forKey: "NSOperand")
        coder.encode("valueForKeyPath:", forKey: "NSSelectorName")
        coder.encode([ArchivedKeyPathSpecifier(keyPath)] as NSArray, forKey: "NSArguments")
    }
}

/// A function of expressions, as an archived `NSExpression`.
final class ArchivedFunctionExpression: NSObject, NSCoding {
    let selector: String
    let arguments: [NSObject]
    init(selector: String, arguments: [NSObject]) {
        self.selector = selector
        self.arguments = arguments
    }
    required init?(coder: NSCoder) { nil }
    func encode(with coder: NSCoder) {
        coder.encode(4, forKey: "NSExpressionType")
        coder.encode(selector, forKey: "NSSelectorName")
        coder.encode(arguments as NSArray, forKey: "NSArguments")
    }
}

/// An `NSRelationshipDescription`.
final class ArchivedRelationship: NSObject, NSCoding {
    let relationship: Relationship
    weak var entity: ArchivedEntity?
    weak var destination: ArchivedEntity?
    weak var inverse: ArchivedRelationship?

    init(_ relationship: Relationship, of entity: ArchivedEntity, destination: ArchivedEntity?) {
        self.relationship = relationship
        self.entity = entity
        self.destination = destination
    }

    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        coder.encode(relationship.name, forKey: "NSPropertyName")
        coder.encode(entity, forKey: "NSEntity")
        coder.encode(destination, forKey: "NSDestinationEntity")
        coder.encode(relationship.destination, forKey: "_NSDestinationEntityName")
        coder.encode(inverse, forKey: "NSInverseRelationship")
        coder.encode(relationship.inverse, forKey: "_NSInverseRelationshipName")
        coder.encode(relationship.deleteRule.coreDataCode, forKey: "NSDeleteRule")
        coder.encode(relationship.minimumCount, forKey: "NSMinCount")
        coder.encode(relationship.isToMany ? relationship.maximumCount : 1, forKey: "NSMaxCount")
        if relationship.isOptional { coder.encode(true, forKey: "NSIsOptional") }
        if relationship.isOrdered { coder.encode(true, forKey: "NSIsOrdered") }
        if relationship.isTransient { coder.encode(true, forKey: "NSIsTransient") }
        coder.encode(relationship.renamingIdentifier ?? relationship.name, forKey: "NSRenamingIdentifier")
        coder.encode(relationship.versionHashModifier, forKey: "NSVersionHashModifier")
    }
}

/// An `NSFetchIndexDescription`.
final class ArchivedFetchIndex: NSObject, NSCoding {
    let index: FetchIndex
    weak var entity: ArchivedEntity?
    var elements: [ArchivedFetchIndexElement] = []

    init(_ index: FetchIndex, of entity: ArchivedEntity) {
        self.index = index
        self.entity = entity
        super.init()
        elements = index.properties.map { ArchivedFetchIndexElement($0, of: self) }
    }

    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        coder.encode(index.name, forKey: "NSIndexName")
        coder.encode(entity, forKey: "NSEntity")
        coder.encode(elements as NSArray, forKey: "NSIndexElements")
    }
}

/// An `NSFetchIndexElementDescription`.
final class ArchivedFetchIndexElement: NSObject, NSCoding {
    let property: String
    weak var index: ArchivedFetchIndex?

    init(_ property: String, of index: ArchivedFetchIndex) {
        self.property = property
        self.index = index
    }

    required init?(coder: NSCoder) { nil }

    func encode(with coder: NSCoder) {
        coder.encode(property, forKey: "NSPropertyName")
        coder.encode(0, forKey: "NSFetchIndexElementType")
        coder.encode(index, forKey: "NSFetchIndexDescription")
        coder.encode(true, forKey: "NSAscending")
    }
}
