// Stage 2 (schema): the data model — entities with inheritance, fetch
// request templates and configurations.
//
// A model is checked when it is made: names are unique, superentities and
// destinations exist, inheritance has no cycle, and inverses point back.
// Every property has a slot, its index among the entity's attributes (or
// among its to-one or to-many relationships), which is where row-cache nodes
// keep its value; a subentity keeps its ancestors' properties in their slots.

import Foundation
import SiftValues

/// A fetch request stored in a model (Xcode's fetch request template): an
/// entity and a predicate whose `$variables` are given when it is used.
public struct FetchRequestTemplate: Hashable, Sendable {
    /// The template's name.
    public var name: String
    /// The entity it fetches.
    public var entityName: String
    /// The predicate, in the format language (nil: every object).
    public var predicate: String?
    /// The most objects it returns (0: no limit).
    public var fetchLimit: Int
    /// Whether objects of subentities are included (the default).
    public var includesSubentities: Bool

    /// Creates a fetch request template.
    ///
    /// - Parameters:
    ///   - name: The template's name.
    ///   - entityName: The name of the entity it fetches.
    ///   - predicate: The predicate, in the format language, with `$variables`
    ///     given when the template is used; nil fetches every object.
    ///   - fetchLimit: The most objects it returns; 0 (the default) sets no limit.
    ///   - includesSubentities: Whether objects of the entity's subentities
    ///     are included (the default).
    public init(_ name: String, entityName: String, predicate: String?, fetchLimit: Int = 0,
                includesSubentities: Bool = true) {
        self.name = name
        self.entityName = entityName
        self.predicate = predicate
        self.fetchLimit = fetchLimit
        self.includesSubentities = includesSubentities
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
///     Entity("Manager", superentity: "Employee", attributes: [Attribute("budget", .double)]),
/// ])
/// ```
public struct DataModel: Hashable, Sendable {
    /// The entities, in the order given, each with its inherited properties.
    public let entities: [Entity]
    /// The fetch request templates, by name.
    public let fetchRequestTemplates: [String: FetchRequestTemplate]
    /// The configurations: named sets of entity names.
    public let configurations: [String: [String]]
    /// The model's version identifiers (Xcode's "model version identifier").
    public var versionIdentifiers: [String] = []
    private let byName: [String: Int]

    /// The model with no entities: what predicates bound without a model
    /// are checked against.
    public static let empty: DataModel = {
        do {
            return try DataModel([])
        } catch {
            preconditionFailure("a model with no entities is always valid: \(error)")
        }
    }()

    /// Creates a model and checks it: unique names, existing superentities
    /// and destinations, no inheritance cycle, and inverses that point back.
    /// Each entity gets its superentity's properties before its own.
    ///
    /// - Parameters:
    ///   - entities: The entities, each with only its own properties; a
    ///     subentity names its superentity.
    ///   - fetchRequestTemplates: The fetch request templates (none by default);
    ///     of two with one name, the first is kept.
    ///   - configurations: Named sets of entity names (none by default).
    /// - Throws: `ModelError` when the model is not valid: an entity without a
    ///   name, two entities or two properties of one entity with the same name,
    ///   a name with a control character, a property name that is empty, has a
    ///   dot or starts with `Z_`, a default value that does not fit its
    ///   attribute, an unknown superentity, destination or inverse, an
    ///   inheritance cycle, an inverse that does not point back, or a template,
    ///   fetched property or configuration naming an unknown entity.
    public init(_ entities: [Entity], fetchRequestTemplates: [FetchRequestTemplate] = [],
                configurations: [String: [String]] = [:]) throws(ModelError) {
        var byName: [String: Int] = [:]
        for (i, entity) in entities.enumerated() {
            guard !entity.name.isEmpty else { throw ModelError.unnamedEntity(index: i) }
            guard byName[entity.name] == nil else { throw ModelError.duplicateEntity(entity.name) }
            guard !Self.hasControlCharacter(entity.name) else { throw ModelError.controlCharacter(entity: entity.name, property: nil) }
            byName[entity.name] = i
        }
        // Inheritance: each entity after its superentity has its properties.
        var resolved: [Entity?] = Array(repeating: nil, count: entities.count)
        func resolve(_ i: Int, _ path: [String]) throws(ModelError) -> Entity {
            if let done = resolved[i] { return done }
            var entity = entities[i]
            if let parentName = entity.superentity {
                guard let p = byName[parentName] else {
                    throw ModelError.unknownSuperentity(entity: entity.name, superentity: parentName)
                }
                guard !(path + [entity.name]).contains(parentName) else {
                    throw ModelError.inheritanceCycle((path + [entity.name, parentName]).drop { $0 != parentName }.map { $0 })
                }
                let parent = try resolve(p, path + [entity.name])
                entity = entity.inheriting(from: parent)
                entity.rootIndex = parent.rootIndex
            } else {
                entity.rootIndex = i
            }
            entity.index = i
            entity.subentities = entities.filter { $0.superentity == entity.name }.map(\.name)
            resolved[i] = entity
            return entity
        }
        var indexed: [Entity] = []
        for i in entities.indices { indexed.append(try resolve(i, [])) }
        self.entities = indexed
        self.byName = byName
        self.fetchRequestTemplates = Dictionary(fetchRequestTemplates.map { ($0.name, $0) }, uniquingKeysWith: { a, _ in a })
        self.configurations = configurations
        try validate()
        for template in fetchRequestTemplates where entity(named: template.entityName) == nil {
            throw ModelError.unknownEntity(context: "fetch request template '\(template.name)'", entity: template.entityName)
        }
    }

    /// The entity called `name`.
    ///
    /// - Parameter name: The entity's name.
    /// - Returns: The entity, or nil when the model has none of that name.
    public func entity(named name: String) -> Entity? {
        byName[name].map { entities[$0] }
    }

    /// The index in ``entities`` of the entity called `name` (an index is
    /// found without copying the entity).
    ///
    /// - Parameter name: The entity's name.
    /// - Returns: The entity's index, or nil when the model has none of that name.
    public func entityIndex(named name: String) -> Int? {
        byName[name]
    }

    /// The entity and every entity that inherits from it, at any depth:
    /// what a fetch of the entity includes.
    ///
    /// - Parameter entity: An entity of the model.
    /// - Returns: `entity` first, then its subentities, breadth first.
    public func descendants(of entity: Entity) -> [Entity] {
        var result = [entity]
        var i = 0
        while i < result.count {
            result += result[i].subentities.compactMap { self.entity(named: $0) }
            i += 1
        }
        return result
    }

    /// The entity at the top of `entity`'s inheritance chain (itself when it
    /// has no superentity): the one whose table a store keeps it in.
    ///
    /// - Parameter entity: An entity of the model.
    /// - Returns: The root entity.
    public func root(of entity: Entity) -> Entity {
        var current = entity
        while let parent = current.superentity.flatMap({ self.entity(named: $0) }) { current = parent }
        return current
    }

    /// Whether the entity at `index` is the one at `ancestor` or inherits
    /// from it.
    ///
    /// - Parameters:
    ///   - index: The index of an entity in `entities`.
    ///   - ancestor: The index of the possible ancestor in `entities`.
    /// - Returns: True when the two indexes are equal or the entity inherits
    ///   from the ancestor; false for an index out of range.
    public func isEntity(at index: Int, kindOf ancestor: Int) -> Bool {
        if index == ancestor { return true }
        guard entities.indices.contains(index), entities.indices.contains(ancestor),
              entities[index].rootIndex == entities[ancestor].rootIndex else { return false }
        return isEntity(entities[index], kindOf: entities[ancestor])
    }

    /// The entity among `entity` and its ancestors that declares the
    /// relationship `name` (a subentity inherits it unchanged).
    ///
    /// - Parameters:
    ///   - name: The relationship's name.
    ///   - entity: The entity that has the relationship.
    /// - Returns: The topmost ancestor of `entity` (or `entity` itself) that
    ///   has a property called `name`.
    public func declaringEntity(of name: String, from entity: Entity) -> Entity {
        var current = entity
        while let parent = current.superentity.flatMap({ self.entity(named: $0) }), parent.relationship(named: name) != nil
                || parent.attribute(named: name) != nil {
            current = parent
        }
        return current
    }

    /// Whether `entity` is `ancestor` or inherits from it.
    ///
    /// - Parameters:
    ///   - entity: An entity of the model.
    ///   - ancestor: The possible ancestor.
    /// - Returns: True when `entity` has the ancestor's name, or one of its
    ///   superentities does.
    public func isEntity(_ entity: Entity, kindOf ancestor: Entity) -> Bool {
        var current: Entity? = entity
        while let e = current {
            if e.name == ancestor.name { return true }
            current = e.superentity.flatMap { self.entity(named: $0) }
        }
        return false
    }

    private func validate() throws(ModelError) {
        for entity in entities {
            var seen = Set<String>()
            for name in entity.attributes.map(\.name) + entity.relationships.map(\.name) {
                guard !name.isEmpty else { throw ModelError.invalidName(entity.name) }
                guard !Self.hasControlCharacter(name) else {
                    throw ModelError.controlCharacter(entity: entity.name, property: name)
                }
                guard !name.contains(".") || entity.attribute(named: name)?.composite != nil else {
                    throw ModelError.dotInName(entity: entity.name, property: name)
                }
                guard !name.uppercased().hasPrefix("Z_") else {
                    throw ModelError.reservedName(entity: entity.name, property: name)
                }
                guard seen.insert(name).inserted else {
                    throw ModelError.duplicateProperty(entity: entity.name, property: name)
                }
            }
            for attribute in entity.declaredAttributes {
                if let value = attribute.defaultValue, attribute.type.convert(value) == nil {
                    throw ModelError.invalidDefault(entity: entity.name, attribute: attribute.name,
                                                    reason: attribute.type.mismatch(value))
                }
            }
            for relationship in entity.declaredRelationships {
                guard let destination = self.entity(named: relationship.destination) else {
                    throw ModelError.unknownDestination(entity: entity.name, relationship: relationship.name,
                                                        destination: relationship.destination)
                }
                guard let inverseName = relationship.inverse else { continue }
                guard let inverse = destination.relationship(named: inverseName) else {
                    throw ModelError.unknownInverse(entity: entity.name, relationship: relationship.name,
                                                    inverse: inverseName, destination: destination.name)
                }
                // The inverse leads back to this entity or one of its ancestors.
                guard let back = self.entity(named: inverse.destination), isEntity(entity, kindOf: back),
                      inverse.inverse == nil || inverse.inverse == relationship.name
                else {
                    throw ModelError.inverseMismatch(entity: entity.name, relationship: relationship.name,
                                                     inverse: "\(destination.name).\(inverseName)")
                }
            }
            for fetched in entity.fetchedProperties where self.entity(named: fetched.entityName) == nil {
                throw ModelError.unknownEntity(context: "fetched property '\(entity.name).\(fetched.name)'",
                                               entity: fetched.entityName)
            }
        }
        for (name, members) in configurations {
            for member in members where entity(named: member) == nil {
                throw ModelError.unknownEntity(context: "configuration '\(name)'", entity: member)
            }
        }
    }

    /// Names with control characters (a NUL, a newline) no store can keep
    /// faithfully: SQLite reads identifiers up to a NUL.
    private static func hasControlCharacter(_ name: String) -> Bool {
        name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }

    public static func == (lhs: DataModel, rhs: DataModel) -> Bool {
        lhs.entities == rhs.entities && lhs.fetchRequestTemplates == rhs.fetchRequestTemplates
            && lhs.configurations == rhs.configurations
    }

    public func hash(into hasher: inout Hasher) { hasher.combine(entities) }
}

/// Why a model is not valid.
public enum ModelError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Two entities of the model have the same name (the name given).
    case duplicateEntity(String)
    /// An entity has two properties (attributes or relationships, inherited
    /// ones included) with the same name.
    case duplicateProperty(entity: String, property: String)
    /// An entity (the name given) has a property with an empty name.
    case invalidName(String)
    /// A relationship's destination is not an entity of the model.
    case unknownDestination(entity: String, relationship: String, destination: String)
    /// A relationship names an inverse that its destination entity does not
    /// have.
    case unknownInverse(entity: String, relationship: String, inverse: String, destination: String)
    /// A relationship's inverse (given as `Destination.inverse`) does not
    /// point back to the relationship's entity, or names a different inverse
    /// of its own.
    case inverseMismatch(entity: String, relationship: String, inverse: String)
    /// An attribute's type is missing (an empty `type`) or is not one the
    /// model format knows.
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
    /// A property name with a dot, which key paths would read as two names.
    case dotInName(entity: String, property: String)
    /// A superentity that is not an entity of the model.
    case unknownSuperentity(entity: String, superentity: String)
    /// Entities that inherit from each other in a circle.
    case inheritanceCycle([String])
    /// A template, fetched property or configuration names an entity the
    /// model does not have.
    case unknownEntity(context: String, entity: String)

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
            "attribute '\(entity).\(attribute)' has the unknown type '\(type)' (the types are "
                + AttributeType.allCases.map(\.rawValue).joined(separator: ", ") + ")"
        case .unreadable(let path, let reason): "cannot read the model '\(path)': \(reason)"
        case .unnamedEntity(let index): "entity \(index + 1) of the model has no name"
        case .controlCharacter(let entity, nil):
            "the entity name \(entity.debugDescription) has a control character, which a store cannot keep"
        case .controlCharacter(let entity, let property?):
            "property \(entity.debugDescription).\(property.debugDescription) has a control character in its name, "
                + "which a store cannot keep"
        case .invalidDefault(let entity, let attribute, let reason):
            "the default value of attribute '\(entity).\(attribute)' \(reason)"
        case .dotInName(let entity, let property):
            "property '\(entity).\(property)' has a dot in its name, which a key path would read as two names"
        case .unknownSuperentity(let entity, let superentity):
            "entity '\(entity)' inherits from '\(superentity)', which is not an entity of the model"
        case .inheritanceCycle(let names):
            "entities inherit from each other in a circle: \(names.map { "'\($0)'" }.joined(separator: " → "))"
        case .unknownEntity(let context, let entity):
            "\(context) names the entity '\(entity)', which is not an entity of the model"
        case .reservedName(let entity, let property):
            "property '\(entity).\(property)' has a name starting with 'Z_', which the store reserves"
        }
    }
}

extension ModelError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
