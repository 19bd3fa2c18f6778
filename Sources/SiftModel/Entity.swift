// Stage 2 (schema): an entity — its attributes and relationships, the ones
// it inherits from its superentity first, each with its slot.

/// An entity: a kind of object, with its attributes and relationships.
///
/// ```swift
/// let model = try DataModel([
///     Entity("Employee", attributes: [Attribute("name", .string), Attribute("age", .integer64)]),
///     Entity("Manager", superentity: "Employee", attributes: [Attribute("budget", .double)]),
/// ])
/// guard let manager = model.entity(named: "Manager") else { return }
/// print(manager.propertyNames)                     // ["name", "age", "budget"]
/// if let budget = manager.attribute(named: "budget") {
///     print(budget.slot)                           // 2: after the inherited attributes
/// }
/// print(manager.rootIndex)                         // 0: Employee's, whose table it shares
/// ```
///
/// In a model, an entity with a superentity has the superentity's properties
/// first, in the same slots, then its own: a node of a subentity can be read
/// as a node of any of its ancestors.
public struct Entity: Hashable, Sendable {
    /// The entity's name.
    public let name: String
    /// The name of the entity it inherits from, if any.
    public let superentity: String?
    /// Whether it has no objects of its own, only those of its subentities.
    public let isAbstract: Bool
    /// Its attributes, in slot order: inherited ones first (once in a
    /// model), then its own; a composite's elements follow the composite.
    public let attributes: [Attribute]
    /// Its relationships: inherited ones first (once in a model), then its own.
    public let relationships: [Relationship]
    /// How many of `attributes` it inherits.
    public let inheritedAttributeCount: Int
    /// How many of `relationships` it inherits from its superentity: the
    /// first ones, before those it declares itself.
    public let inheritedRelationshipCount: Int
    /// The names of the entities that inherit from it directly (set by the model).
    public internal(set) var subentities: [String] = []
    /// Its index in the model.
    public internal(set) var index: Int = 0
    /// The index of its root entity (its own when it has no superentity):
    /// the entity whose table, and whose primary keys, it shares.
    public internal(set) var rootIndex: Int = 0
    /// How many to-one relationships it has (the slots of to-one values).
    public let toOneCount: Int
    /// How many to-many relationships it has.
    public let toManyCount: Int
    /// Sets of properties whose values no two objects may share.
    public var uniquenessConstraints: [[String]] = []
    /// Its fetch indexes (compound ones included).
    public var indexes: [FetchIndex] = []
    /// Its fetched properties.
    public var fetchedProperties: [FetchedProperty] = []
    /// The entity's name in the model version it was renamed from.
    public var renamingIdentifier: String?
    /// What its version hash mixes in.
    public var versionHashModifier: String?
    private let properties: [String: Property]
    /// Its own attributes as declared (composites with their elements inside).
    private let declaredForm: [Attribute]

    /// Creates an entity. Slots are given in order: attributes by their place
    /// in `attributes` (a composite's elements right after it, named
    /// `composite.element`), relationships by their place among the to-one
    /// (or to-many) ones. A model puts the superentity's properties first.
    ///
    /// - Parameters:
    ///   - name: The entity's name.
    ///   - superentity: The name of the entity it inherits from; nil (the
    ///     default) for none.
    ///   - abstract: Whether the entity has no objects of its own, only its
    ///     subentities' (false by default).
    ///   - attributes: Its own attributes (none by default).
    ///   - relationships: Its own relationships (none by default).
    public init(_ name: String, superentity: String? = nil, abstract: Bool = false, attributes: [Attribute] = [],
                relationships: [Relationship] = []) {
        self.init(name, superentity: superentity, abstract: abstract, inherited: ([], []),
                  declared: (attributes, relationships))
    }

    private init(_ name: String, superentity: String?, abstract: Bool, inherited: ([Attribute], [Relationship]),
                 declared: ([Attribute], [Relationship])) {
        self.name = name
        self.superentity = superentity
        self.isAbstract = abstract
        self.declaredForm = declared.0
        // A composite's elements are attributes of their own, after it.
        var flat = inherited.0
        func add(_ attribute: Attribute) {
            flat.append(attribute)
            for element in attribute.elements {
                var e = element
                e.name = attribute.name + "." + element.name
                e.composite = attribute.name
                e.isTransient = e.isTransient || attribute.isTransient
                add(e)
            }
        }
        for attribute in declared.0 { add(attribute) }
        self.attributes = flat.enumerated().map { var a = $1; a.slot = $0; return a }
        self.inheritedAttributeCount = inherited.0.count
        self.inheritedRelationshipCount = inherited.1.count
        var toOne = 0
        var toMany = 0
        self.relationships = (inherited.1 + declared.1).map {
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

    /// The entity with `parent`'s properties before its own (`parent`
    /// already has its ancestors').
    func inheriting(from parent: Entity) -> Entity {
        var entity = Entity(name, superentity: superentity, abstract: isAbstract,
                            inherited: (parent.attributes, parent.relationships),
                            declared: (declaredForm, declaredRelationships))
        entity.copyDetails(from: self)
        return entity
    }

    private mutating func copyDetails(from other: Entity) {
        uniquenessConstraints = other.uniquenessConstraints
        indexes = other.indexes
        fetchedProperties = other.fetchedProperties
        renamingIdentifier = other.renamingIdentifier
        versionHashModifier = other.versionHashModifier
        subentities = other.subentities
        index = other.index
    }

    /// The attributes it declares itself (a composite's elements included).
    public var declaredAttributes: [Attribute] { Array(attributes[inheritedAttributeCount...]) }
    /// The relationships it declares itself.
    public var declaredRelationships: [Relationship] { Array(relationships[inheritedRelationshipCount...]) }

    /// The property called `name`.
    ///
    /// - Parameter name: The property's name.
    /// - Returns: The attribute or relationship, or nil when the entity has none
    ///   of that name.
    public func property(named name: String) -> Property? { properties[name] }

    /// The attribute called `name`.
    ///
    /// - Parameter name: The attribute's name.
    /// - Returns: The attribute, or nil when the entity has no attribute of that
    ///   name.
    public func attribute(named name: String) -> Attribute? {
        if case .attribute(let a) = properties[name] { return a }
        return nil
    }

    /// A handle on the attribute called `name`, for reading it from many
    /// objects without looking the name up each time.
    ///
    /// - Parameter name: The attribute's name.
    /// - Returns: The handle, or nil when the entity has no attribute of that
    ///   name.
    public func handle(forAttribute name: String) -> AttributeHandle? {
        attribute(named: name).map { AttributeHandle(entity: index, slot: $0.slot, name: $0.name) }
    }

    /// The relationship called `name`.
    ///
    /// - Parameter name: The relationship's name.
    /// - Returns: The relationship, or nil when the entity has no relationship
    ///   of that name.
    public func relationship(named name: String) -> Relationship? {
        if case .relationship(let r) = properties[name] { return r }
        return nil
    }

    /// Every property name, attributes first.
    public var propertyNames: [String] { attributes.map(\.name) + relationships.map(\.name) }

    public static func == (lhs: Entity, rhs: Entity) -> Bool {
        lhs.name == rhs.name && lhs.superentity == rhs.superentity && lhs.isAbstract == rhs.isAbstract
            && lhs.attributes == rhs.attributes && lhs.relationships == rhs.relationships
            && lhs.uniquenessConstraints == rhs.uniquenessConstraints && lhs.indexes == rhs.indexes
            && lhs.fetchedProperties == rhs.fetchedProperties
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(superentity)
        hasher.combine(attributes)
        hasher.combine(relationships)
    }
}
