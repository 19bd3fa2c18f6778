// Stage 2 (schema): the data model — entities, attributes, relationships.
//
// A model is checked when it is made: names are unique, destinations exist,
// and inverses point back. Every property has a slot, its index among the
// entity's attributes (or among its to-one or to-many relationships), which is
// where row-cache nodes keep its value.

import Foundation
import SiftValues

/// The type of an attribute, as Core Data names them.
public enum AttributeType: String, Hashable, Sendable, CaseIterable, Codable {
    case integer16, integer32, integer64, decimal, double, float, string, boolean, date, binary, uuid

    /// Whether values of this type are numbers (booleans count: they are 0 and 1).
    public var isNumeric: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .decimal, .double, .float, .boolean: true
        default: false
        }
    }

    /// Whether values of this type are whole numbers.
    public var isInteger: Bool {
        switch self {
        case .integer16, .integer32, .integer64, .boolean: true
        default: false
        }
    }
}

extension AttributeType {
    /// The integers a value of this type may hold, for the integer types.
    public var integerRange: ClosedRange<Int64>? {
        switch self {
        case .integer16: Int64(Int16.min)...Int64(Int16.max)
        case .integer32: Int64(Int32.min)...Int64(Int32.max)
        case .integer64: Int64.min...Int64.max
        default: nil
        }
    }

    /// A value (as JSON gives it) as a value of this type, or nil when it
    /// does not fit: a string for a number, an integer out of the type's
    /// range, a number too large for a double to hold exactly as an integer.
    public func convert(_ value: PredicateValue) -> PredicateValue? {
        switch (value, self) {
        case (.null, _): return .null
        case (.int(let i), .integer16), (.int(let i), .integer32), (.int(let i), .integer64):
            // (Not a ternary: `nil` there would be the value `.null`.)
            guard integerRange!.contains(i) else { return nil }
            return value
        case (.double(let d), .integer16), (.double(let d), .integer32), (.double(let d), .integer64):
            // Beyond 2^53 a double no longer tells neighbouring integers
            // apart: -9223372036854775809 would read as Int64.min.
            guard d.magnitude <= 9_007_199_254_740_992, let i = Int64(exactly: d) else { return nil }
            return convert(.int(i))
        case (.int(let i), .double), (.int(let i), .float), (.int(let i), .decimal): return .double(Double(i))
        case (.double, .double), (.double, .float), (.double, .decimal): return value
        case (.bool, .boolean): return value
        case (.int(let i), .boolean) where i == 0 || i == 1: return .bool(i == 1)
        case (.string, .string): return value
        case (.int(let i), .date): return .date(Date(timeIntervalSinceReferenceDate: Double(i)))
        case (.double(let d), .date): return .date(Date(timeIntervalSinceReferenceDate: d))
        case (.date, .date): return value
        case (.string(let s), .uuid): return UUID(uuidString: s).map(PredicateValue.uuid)
        case (.uuid, .uuid): return value
        case (.string(let s), .binary): return Data(base64Encoded: s).map(PredicateValue.data)
        case (.data, .binary): return value
        default: return nil
        }
    }

    /// Why `value` does not fit this type, for messages: "must be integer16,
    /// not a string" or "is 99999, outside the range of integer16".
    public func mismatch(_ value: PredicateValue) -> String {
        switch value {
        case .int, .double:
            if let range = integerRange {
                return "is \(value), not a whole number in the range of \(rawValue) (\(range.lowerBound)...\(range.upperBound))"
            }
        default: break
        }
        return "must be \(rawValue), not \(value.kindDescription)"
    }
}

/// What happens to related objects when an object is deleted.
public enum DeleteRule: String, Hashable, Sendable, Codable {
    /// The inverse relationship of each related object is set to nil (the default).
    case nullify
    /// The related objects are deleted too.
    case cascade
    /// The delete fails while related objects exist.
    case deny
    /// Nothing is done to related objects.
    case noAction
}

/// An attribute of an entity.
public struct Attribute: Hashable, Sendable {
    /// The attribute's name.
    public var name: String
    /// The type of its values.
    public var type: AttributeType
    /// Whether it may be nil.
    public var isOptional: Bool
    /// The value a new object starts with.
    public var defaultValue: PredicateValue?
    /// Whether the store keeps an index on it.
    public var isIndexed: Bool
    /// Whether the store keeps folded ("canonical") companion columns of this
    /// string attribute, indexed, so `==[cd]`, `BEGINSWITH[cd]` and the `[c]`
    /// forms use an index instead of folding every row.
    public var isCanonical: Bool
    /// Its index among the entity's attributes: the slot that holds its value.
    public internal(set) var slot: Int = 0

    /// Creates an attribute: `Attribute("age", .integer64, indexed: true)`.
    public init(_ name: String, _ type: AttributeType, optional: Bool = false, defaultValue: PredicateValue? = nil,
                indexed: Bool = false, canonical: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.isIndexed = indexed
        self.isCanonical = canonical && type == .string
    }
}

/// A relationship from one entity to another.
public struct Relationship: Hashable, Sendable {
    /// The relationship's name.
    public var name: String
    /// The entity at the other end.
    public var destination: String
    /// Whether it holds a collection of objects rather than one.
    public var isToMany: Bool
    /// Whether it may be empty (nil for to-one).
    public var isOptional: Bool
    /// The relationship of the destination that points back, if any.
    public var inverse: String?
    /// What a delete does to the objects at the other end.
    public var deleteRule: DeleteRule
    /// Its index among the entity's to-one (or to-many) relationships.
    public internal(set) var slot: Int = 0

    /// Creates a relationship: `Relationship("reports", to: "Employee", toMany: true, inverse: "manager")`.
    public init(
        _ name: String, to destination: String, toMany: Bool = false, optional: Bool = true,
        inverse: String? = nil, deleteRule: DeleteRule = .nullify
    ) {
        self.name = name
        self.destination = destination
        self.isToMany = toMany
        self.isOptional = optional
        self.inverse = inverse
        self.deleteRule = deleteRule
    }
}

/// A property of an entity: an attribute or a relationship.
public enum Property: Hashable, Sendable {
    case attribute(Attribute)
    case relationship(Relationship)

    /// The property's name.
    public var name: String {
        switch self {
        case .attribute(let a): a.name
        case .relationship(let r): r.name
        }
    }
}

/// An entity: a kind of object, with its attributes and relationships.
public struct Entity: Hashable, Sendable {
    /// The entity's name.
    public let name: String
    /// Its attributes, in slot order.
    public let attributes: [Attribute]
    /// Its relationships, in the order given.
    public let relationships: [Relationship]
    /// Its index in the model.
    public internal(set) var index: Int = 0
    /// How many to-one relationships it has (the slots of to-one values).
    public let toOneCount: Int
    /// How many to-many relationships it has.
    public let toManyCount: Int
    private let properties: [String: Property]

    /// Creates an entity. Slots are given in order: attributes by their place
    /// in `attributes`, relationships by their place among the to-one (or
    /// to-many) ones.
    public init(_ name: String, attributes: [Attribute] = [], relationships: [Relationship] = []) {
        self.name = name
        self.attributes = attributes.enumerated().map { var a = $1; a.slot = $0; return a }
        var toOne = 0
        var toMany = 0
        self.relationships = relationships.map {
            var r = $0
            if r.isToMany { r.slot = toMany; toMany += 1 } else { r.slot = toOne; toOne += 1 }
            return r
        }
        self.toOneCount = toOne
        self.toManyCount = toMany
        var properties: [String: Property] = [:]
        for a in self.attributes where properties[a.name] == nil { properties[a.name] = .attribute(a) }
        for r in self.relationships where properties[r.name] == nil { properties[r.name] = .relationship(r) }
        self.properties = properties
    }

    /// The property called `name`.
    public func property(named name: String) -> Property? { properties[name] }

    /// The attribute called `name`.
    public func attribute(named name: String) -> Attribute? {
        if case .attribute(let a) = properties[name] { return a }
        return nil
    }

    /// The relationship called `name`.
    public func relationship(named name: String) -> Relationship? {
        if case .relationship(let r) = properties[name] { return r }
        return nil
    }

    /// Every property name, attributes first.
    public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }

    public static func == (lhs: Entity, rhs: Entity) -> Bool {
        lhs.name == rhs.name && lhs.attributes == rhs.attributes && lhs.relationships == rhs.relationships
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(attributes)
        hasher.combine(relationships)
    }
}

/// A data model: the entities a store holds.
///
/// ```swift
/// let model = try DataModel([
///     Entity("Department", attributes: [Attribute("name", .string)],
///            relationships: [Relationship("employees", to: "Employee", toMany: true, inverse: "department")]),
///     Entity("Employee", attributes: [Attribute("age", .integer64), Attribute("rating", .double, optional: true)],
///            relationships: [Relationship("department", to: "Department", inverse: "employees")]),
/// ])
/// ```
public struct DataModel: Hashable, Sendable {
    /// The entities, in the order given.
    public let entities: [Entity]
    private let byName: [String: Int]

    /// Creates a model and checks it: unique names, existing destinations,
    /// and inverses that point back.
    /// The model with no entities: what predicates bound without a model
    /// are checked against.
    public static let empty: DataModel = {
        do {
            return try DataModel([])
        } catch {
            preconditionFailure("a model with no entities is always valid: \(error)")
        }
    }()

    public init(_ entities: [Entity]) throws(ModelError) {
        var byName: [String: Int] = [:]
        var indexed: [Entity] = []
        for (i, entity) in entities.enumerated() {
            guard byName[entity.name] == nil else { throw ModelError.duplicateEntity(entity.name) }
            guard !entity.name.isEmpty else { throw ModelError.unnamedEntity(index: i) }
            guard !Self.hasControlCharacter(entity.name) else { throw ModelError.controlCharacter(entity: entity.name, property: nil) }
            byName[entity.name] = i
            var e = entity
            e.index = i
            indexed.append(e)
        }
        self.entities = indexed
        self.byName = byName
        try validate()
    }

    /// The entity called `name`.
    public func entity(named name: String) -> Entity? {
        byName[name].map { entities[$0] }
    }

    private func validate() throws(ModelError) {
        for entity in entities {
            var seen = Set<String>()
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                guard !name.isEmpty else { throw ModelError.invalidName(entity.name) }
                guard !Self.hasControlCharacter(name) else {
                    throw ModelError.controlCharacter(entity: entity.name, property: name)
                }
                guard !name.uppercased().hasPrefix("Z_") else {
                    throw ModelError.reservedName(entity: entity.name, property: name)
                }
                guard seen.insert(name).inserted else {
                    throw ModelError.duplicateProperty(entity: entity.name, property: name)
                }
            }
            for attribute in entity.attributes {
                if let value = attribute.defaultValue, attribute.type.convert(value) == nil {
                    throw ModelError.invalidDefault(entity: entity.name, attribute: attribute.name,
                                                    reason: attribute.type.mismatch(value))
                }
            }
            for relationship in entity.relationships {
                guard let destination = self.entity(named: relationship.destination) else {
                    throw ModelError.unknownDestination(entity: entity.name, relationship: relationship.name,
                                                        destination: relationship.destination)
                }
                guard let inverseName = relationship.inverse else { continue }
                guard let inverse = destination.relationship(named: inverseName) else {
                    throw ModelError.unknownInverse(entity: entity.name, relationship: relationship.name,
                                                    inverse: inverseName, destination: destination.name)
                }
                guard inverse.destination == entity.name, inverse.inverse == nil || inverse.inverse == relationship.name
                else {
                    throw ModelError.inverseMismatch(entity: entity.name, relationship: relationship.name,
                                                     inverse: "\(destination.name).\(inverseName)")
                }
            }
        }
    }

    /// Names with control characters (a NUL, a newline) no store can keep
    /// faithfully: SQLite reads identifiers up to a NUL.
    private static func hasControlCharacter(_ name: String) -> Bool {
        name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    public static func == (lhs: DataModel, rhs: DataModel) -> Bool { lhs.entities == rhs.entities }
    public func hash(into hasher: inout Hasher) { hasher.combine(entities) }
}

/// Why a model is not valid.
public enum ModelError: Error, Hashable, Sendable, CustomStringConvertible {
    case duplicateEntity(String)
    case duplicateProperty(entity: String, property: String)
    case invalidName(String)
    case unknownDestination(entity: String, relationship: String, destination: String)
    case unknownInverse(entity: String, relationship: String, inverse: String, destination: String)
    case inverseMismatch(entity: String, relationship: String, inverse: String)
    case unknownAttributeType(entity: String, attribute: String, type: String)
    /// Names that start with `Z_` belong to the store.
    case reservedName(entity: String, property: String)
    /// The model's file could not be read or is not in a known format.
    case unreadable(path: String, reason: String)
    /// An entity without a name (its place in the model, from 0).
    case unnamedEntity(index: Int)
    /// A name with a control character, such as a NUL (`property` is nil
    /// for the entity's own name).
    case controlCharacter(entity: String, property: String?)
    /// A default value that does not fit the attribute's type.
    case invalidDefault(entity: String, attribute: String, reason: String)
    /// An Xcode entity with a parent entity: Sift's models have no
    /// inheritance, and reading it without would drop the inherited
    /// properties.
    case inheritance(entity: String, parent: String)

    public var description: String {
        switch self {
        case .duplicateEntity(let name): "the model has two entities named '\(name)'"
        case .duplicateProperty(let entity, let property): "entity '\(entity)' has two properties named '\(property)'"
        case .invalidName(let entity): "entity '\(entity)' has a property with an empty name"
        case .unknownDestination(let entity, let relationship, let destination):
            "relationship '\(entity).\(relationship)' points to '\(destination)', which is not an entity of the model"
        case .unknownInverse(let entity, let relationship, let inverse, let destination):
            "relationship '\(entity).\(relationship)' names the inverse '\(inverse)', but '\(destination)' has no such relationship"
        case .inverseMismatch(let entity, let relationship, let inverse):
            "relationship '\(entity).\(relationship)' names the inverse '\(inverse)', which does not point back to it"
        case .unknownAttributeType(let entity, let attribute, ""): "attribute '\(entity).\(attribute)' has no type"
        case .unknownAttributeType(let entity, let attribute, let type):
            "attribute '\(entity).\(attribute)' has the unknown type '\(type)'"
        case .unreadable(let path, let reason): "cannot read the model '\(path)': \(reason)"
        case .unnamedEntity(let index): "entity \(index + 1) of the model has no name"
        case .controlCharacter(let entity, nil):
            "the entity name \(entity.debugDescription) has a control character, which a store cannot keep"
        case .controlCharacter(let entity, let property?):
            "property \(entity.debugDescription).\(property.debugDescription) has a control character in its name, "
                + "which a store cannot keep"
        case .invalidDefault(let entity, let attribute, let reason):
            "the default value of attribute '\(entity).\(attribute)' \(reason)"
        case .inheritance(let entity, let parent):
            "entity '\(entity)' inherits from '\(parent)', and Sift's models have no entity inheritance: "
                + "give '\(entity)' the properties it inherits and remove its parent entity"
        case .reservedName(let entity, let property):
            "property '\(entity).\(property)' has a name starting with 'Z_', which the store reserves"
        }
    }
}
