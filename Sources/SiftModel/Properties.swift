// Stage 2 (schema): the properties of an entity — attributes,
// relationships and fetched properties — as Core Data describes them.

import SiftValues

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

    /// Core Data's `NSDeleteRule` raw value, as compiled models keep it:
    /// 0 no action, 1 nullify, 2 cascade, 3 deny (nullify for anything else).
    ///
    /// - Parameter coreDataCode: The raw value of an `NSDeleteRule`.
    public init(coreDataCode: Int) {
        self = switch coreDataCode {
        case 0: .noAction
        case 2: .cascade
        case 3: .deny
        default: .nullify
        }
    }

    /// The rule's `NSDeleteRule` raw value.
    public var coreDataCode: Int {
        switch self {
        case .noAction: 0
        case .nullify: 1
        case .cascade: 2
        case .deny: 3
        }
    }
}

/// An attribute of an entity.
public struct Attribute: Hashable, Sendable {
    /// The attribute's name (`composite.element` for an element of a composite).
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
    /// Whether its values live only in memory: the store has no column for
    /// it, and a predicate that SQL runs may not use it.
    public var isTransient: Bool = false
    /// The expression a derived attribute's value is computed from
    /// (`derivationExpression`); the store computes it, and it is read-only.
    public var derivation: String?
    /// Whether a large binary value may live in a file beside the store
    /// (`allowsExternalBinaryDataStorage`): the column then holds a
    /// reference to it.
    public var allowsExternalStorage = false
    /// The name of the value transformer of a transformable attribute.
    public var valueTransformerName: String?
    /// Whether its value stays in persistent history after its object is
    /// deleted (Xcode's `preserveAfterDeletion`).
    public var preservesValueInHistoryOnDeletion = false
    /// The smallest value (or length) allowed, as Xcode's `minValueString` gives it.
    public var minimum: String?
    /// The largest value (or length) allowed.
    public var maximum: String?
    /// The attribute's name in the model version it was renamed from.
    public var renamingIdentifier: String?
    /// What its version hash mixes in, to tell apart versions that look alike.
    public var versionHashModifier: String?
    /// The elements of a composite attribute, by their own names.
    public var elements: [Attribute] = []
    /// For an element of a composite, the composite attribute's name.
    public internal(set) var composite: String?
    /// Its index among the entity's attributes: the slot that holds its value.
    public internal(set) var slot: Int = 0

    /// Creates an attribute: `Attribute("age", .integer64, indexed: true)`.
    ///
    /// - Parameters:
    ///   - name: The attribute's name.
    ///   - type: The type of its values.
    ///   - optional: Whether it may hold nil (false by default).
    ///   - defaultValue: The value a new object gets; nil (the default) for
    ///     none.
    ///   - indexed: Whether the store indexes it (false by default).
    ///   - canonical: Whether the store keeps folded ("canonical") companion
    ///     columns of a string attribute, so comparisons that ignore case and
    ///     diacritics use an index; ignored for other types (false by
    ///     default).
    ///   - transient: Whether it lives only in memory (false by default; an
    ///     attribute of type `AttributeType.undefined` always does).
    public init(_ name: String, _ type: AttributeType, optional: Bool = false, defaultValue: PredicateValue? = nil,
                indexed: Bool = false, canonical: Bool = false, transient: Bool = false) {
        self.name = name
        self.type = type
        self.isOptional = optional
        self.defaultValue = defaultValue
        self.isIndexed = indexed
        self.isCanonical = canonical && type == .string
        self.isTransient = transient || type == .undefined
    }

    /// Whether the store keeps its values: not transient, and of a type
    /// with a column.
    public var isStored: Bool { !isTransient && type.hasColumn }

    /// Whether objects may not set it: a derived attribute.
    public var isReadOnly: Bool { derivation != nil }
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
    /// Whether a to-many relationship keeps its objects in an order.
    public var isOrdered = false
    /// The fewest objects a to-many relationship may hold (0: no minimum).
    public var minimumCount = 0
    /// The most objects it may hold: 1 for a to-one, 0 for a to-many with
    /// no maximum (Core Data's `maxCount`).
    public var maximumCount = 0
    /// Whether it lives only in memory.
    public var isTransient = false
    /// The relationship's name in the model version it was renamed from.
    public var renamingIdentifier: String?
    /// What its version hash mixes in.
    public var versionHashModifier: String?
    /// Its index among the entity's to-one (or to-many) relationships.
    public internal(set) var slot: Int = 0

    /// Creates a relationship: `Relationship("reports", to: "Employee", toMany: true, inverse: "manager")`.
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - destination: The name of the entity at the other end.
    ///   - toMany: Whether it holds a collection of objects (false by default).
    ///   - optional: Whether it may be empty (true by default).
    ///   - inverse: The name of the destination's relationship that points
    ///     back; nil (the default) for none.
    ///   - deleteRule: What a delete does to the objects at the other end
    ///     (`DeleteRule.nullify` by default).
    ///   - ordered: Whether a to-many relationship keeps its objects in an
    ///     order (false by default; ignored for a to-one).
    public init(
        _ name: String, to destination: String, toMany: Bool = false, optional: Bool = true,
        inverse: String? = nil, deleteRule: DeleteRule = .nullify, ordered: Bool = false
    ) {
        self.name = name
        self.destination = destination
        self.isToMany = toMany
        self.isOptional = optional
        self.inverse = inverse
        self.deleteRule = deleteRule
        self.isOrdered = ordered && toMany
        self.maximumCount = toMany ? 0 : 1
    }
}

/// A fetched property: a predicate over another entity, evaluated for an
/// object (`$FETCH_SOURCE` is the object, `$FETCHED_PROPERTY` the property).
public struct FetchedProperty: Hashable, Sendable {
    /// The property's name.
    public var name: String
    /// The entity it fetches.
    public var entityName: String
    /// The predicate, in the format language.
    public var predicate: String

    /// Creates a fetched property.
    ///
    /// - Parameters:
    ///   - name: The property's name.
    ///   - entityName: The name of the entity it fetches.
    ///   - predicate: The predicate, in the format language; `$FETCH_SOURCE`
    ///     stands for the object the property is read from.
    public init(_ name: String, entityName: String, predicate: String) {
        self.name = name
        self.entityName = entityName
        self.predicate = predicate
    }
}

/// A property of an entity: an attribute or a relationship.
public enum Property: Hashable, Sendable {
    /// An attribute: a property that holds a value.
    case attribute(Attribute)
    /// A relationship: a property that leads to other objects.
    case relationship(Relationship)

    /// The property's name.
    public var name: String {
        switch self {
        case .attribute(let a): a.name
        case .relationship(let r): r.name
        }
    }
}

/// An index on one or more properties of an entity (Xcode's fetch index).
public struct FetchIndex: Hashable, Sendable {
    /// The index's name.
    public var name: String
    /// The properties it orders by, in order.
    public var properties: [String]

    /// Creates a fetch index.
    ///
    /// - Parameters:
    ///   - name: The index's name.
    ///   - properties: The names of the properties it orders by, in order.
    public init(_ name: String, properties: [String]) {
        self.name = name
        self.properties = properties
    }
}

/// An attribute resolved once, for fast reads from objects of its entity
/// (and of its subentities): `Entity.handle(forAttribute:)`. Three words,
/// nothing to retain when the name is short: copying one costs nothing.
public struct AttributeHandle: Hashable, Sendable {
    /// The index of the entity it was made from.
    public let entity: Int
    /// The attribute's slot in that entity's objects.
    public let slot: Int
    /// The attribute's name, for objects of other entities.
    public let name: String
}
