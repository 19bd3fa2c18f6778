// Stage 2 (schema): the data model — entities, attributes, relationships.
//
// A model is checked when it is made: names are unique, destinations exist,
// and inverses point back. Every property has a slot, its index among the
// entity's attributes (or among its to-one or to-many relationships), which is
// where row-cache nodes keep its value.

import SiftSyntax

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
    public init(_ entities: [Entity]) throws(ModelError) {
        var byName: [String: Int] = [:]
        var indexed: [Entity] = []
        for (i, entity) in entities.enumerated() {
            guard byName[entity.name] == nil else { throw ModelError.duplicateEntity(entity.name) }
            guard !entity.name.isEmpty else { throw ModelError.invalidName("") }
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
                guard !name.uppercased().hasPrefix("Z_") else {
                    throw ModelError.reservedName(entity: entity.name, property: name)
                }
                guard seen.insert(name).inserted else {
                    throw ModelError.duplicateProperty(entity: entity.name, property: name)
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
        case .unknownAttributeType(let entity, let attribute, let type):
            "attribute '\(entity).\(attribute)' has the unknown type '\(type)'"
        case .unreadable(let path, let reason): "cannot read the model '\(path)': \(reason)"
        case .reservedName(let entity, let property):
            "property '\(entity).\(property)' has a name starting with 'Z_', which the store reserves"
        }
    }
}
