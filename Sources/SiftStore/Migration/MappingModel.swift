// Store stage (migration): the mapping between two versions of a model that Core
// Data infers for a lightweight migration. Entities and properties are
// matched by name, or by the renaming identifier the newer version gives
// them; what was added starts empty or with its default value, what was
// removed is dropped, optionality and defaults may change, a relationship
// may change between to-one and to-many, and integers may widen. Anything
// else (a type change, an entity moving to another table, a relationship
// pointing elsewhere) cannot be inferred, and is listed in the error.

import Foundation
import Sift

/// How an inferred mapping fills one attribute of the destination version.
public enum AttributeMapping: Hashable, Sendable {
    /// From the source attribute of this name (another name when renamed), as it is.
    case copy(from: String)
    /// From the source attribute of this name, of a narrower numeric type.
    case convert(from: String, AttributeType)
    /// A new attribute: every object starts with its default value (nil when it has none).
    case defaultValue(PredicateValue?)
}

/// How an inferred mapping fills one relationship of the destination version.
public enum RelationshipMapping: Hashable, Sendable {
    /// From the source relationship of this name, with the same cardinality.
    case copy(from: String)
    /// From a to-one source relationship: each object's one destination, if any.
    case toMany(from: String)
    /// From a to-many source relationship: each object's first destination.
    case toOne(from: String)
    /// A new relationship: empty.
    case empty
}

/// How one entity of the destination version is filled.
public struct EntityMapping: Hashable, Sendable {
    /// The entity in the destination version.
    public let destination: String
    /// The entity of the source version its objects come from; nil for a
    /// new entity.
    public let source: String?
    /// Each stored attribute of the destination entity, by name.
    public let attributes: [String: AttributeMapping]
    /// Each stored relationship of the destination entity, by name.
    public let relationships: [String: RelationshipMapping]
    /// Whether nothing changes: same name, same version hash.
    public let isCopy: Bool
}

/// The mapping from one model version to another, inferred as Core Data's
/// lightweight migration infers it (`NSMappingModel.inferredMappingModel`).
///
/// ```swift
/// let bundle = try ModelBundle(contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"))
/// let mapping = try MappingModel.inferred(from: try bundle.model(version: "Model"),
///                                         to: try bundle.model())
/// print(mapping.summary.joined(separator: "\n"))
/// ```
public struct MappingModel: Hashable, Sendable {
    /// The version migrated from.
    public let source: DataModel
    /// The version migrated to.
    public let destination: DataModel
    /// One mapping per entity of the destination version, in its order.
    public let entityMappings: [EntityMapping]
    /// The source entities with no destination: their objects are dropped.
    public let removedEntities: [String]

    /// The mapping of the destination entity `name`.
    ///
    /// - Parameter name: The name of an entity of the destination version.
    /// - Returns: The entity's mapping, or nil when the destination has no such
    ///   entity.
    public func mapping(for name: String) -> EntityMapping? {
        entityMappings.first { $0.destination == name }
    }

    /// The destination entity a source entity's objects go to, if any.
    ///
    /// - Parameter sourceEntity: The name of an entity of the source version.
    /// - Returns: The destination entity's name, or nil when its objects are
    ///   dropped.
    public func destination(of sourceEntity: String) -> String? {
        entityMappings.first { $0.source == sourceEntity }?.destination
    }

    /// Infers the mapping from `source` to `destination`, or lists
    /// everything an inferred mapping cannot do.
    ///
    /// - Parameters:
    ///   - source: The version migrated from.
    ///   - destination: The version migrated to.
    /// - Returns: The mapping: each destination entity from the source entity
    ///   it (or its renaming identifier) names, if any.
    /// - Throws: `MappingError` listing every problem when the mapping cannot be
    ///   inferred: two entities that come from one, an entity that would move
    ///   to another table, an attribute whose type changes in a way it does not
    ///   widen, or a relationship that no longer points at the objects it
    ///   pointed at.
    public static func inferred(from source: DataModel, to destination: DataModel) throws(MappingError) -> MappingModel {
        var problems: [String] = []
        var mappings: [EntityMapping] = []
        // Destination entity name → source entity name.
        var sources: [String: String] = [:]
        for entity in destination.entities {
            if let old = source.entity(named: entity.renamingIdentifier ?? entity.name) ?? source.entity(named: entity.name) {
                if sources.values.contains(old.name) {
                    problems.append("entities '\(sources.first { $0.value == old.name }!.key)' and '\(entity.name)' both come from '\(old.name)'")
                }
                sources[entity.name] = old.name
            }
        }
        for entity in destination.entities {
            guard let oldName = sources[entity.name], let old = source.entity(named: oldName) else {
                mappings.append(EntityMapping(
                    destination: entity.name, source: nil,
                    attributes: Dictionary(uniqueKeysWithValues: entity.attributes.filter(\.isStored).map { ($0.name, .defaultValue($0.defaultValue)) }),
                    relationships: Dictionary(uniqueKeysWithValues: entity.relationships.filter { !$0.isTransient }.map { ($0.name, .empty) }),
                    isCopy: false))
                continue
            }
            // Each entity keeps its table: its root must come from its source's root.
            let root = destination.root(of: entity)
            if sources[root.name] != source.root(of: old).name {
                problems.append("entity '\(entity.name)' would move to another table: its root entity was "
                                + "'\(source.root(of: old).name)' and is '\(root.name)'")
            }
            var attributes: [String: AttributeMapping] = [:]
            for attribute in entity.attributes where attribute.isStored {
                let from = old.attributes.first { $0.isStored && $0.name == (attribute.renamingIdentifier ?? attribute.name) }
                    ?? old.attributes.first { $0.isStored && $0.name == attribute.name }
                guard let from else {
                    attributes[attribute.name] = .defaultValue(attribute.defaultValue)
                    continue
                }
                if from.type == attribute.type {
                    attributes[attribute.name] = .copy(from: from.name)
                } else if Self.widens(from.type, to: attribute.type) {
                    attributes[attribute.name] = .convert(from: from.name, from.type)
                } else {
                    problems.append("attribute '\(entity.name).\(attribute.name)' changes type from \(from.type.rawValue) to "
                                    + "\(attribute.type.rawValue), which an inferred mapping does not convert")
                }
            }
            var relationships: [String: RelationshipMapping] = [:]
            for relationship in entity.relationships where !relationship.isTransient {
                let from = old.relationships.first { !$0.isTransient && $0.name == (relationship.renamingIdentifier ?? relationship.name) }
                    ?? old.relationships.first { !$0.isTransient && $0.name == relationship.name }
                guard let from else {
                    relationships[relationship.name] = .empty
                    continue
                }
                // It must still point at the objects it pointed at.
                let expected = sources[relationship.destination]
                let reachable = expected.flatMap(source.entity(named:)).map { target in
                    source.entity(named: from.destination).map { source.isEntity(target, kindOf: $0) || source.isEntity($0, kindOf: target) } ?? false
                } ?? false
                guard reachable else {
                    problems.append("relationship '\(entity.name).\(relationship.name)' pointed at '\(from.destination)' "
                                    + "and points at '\(relationship.destination)', which does not come from it")
                    continue
                }
                switch (from.isToMany, relationship.isToMany) {
                case (false, true): relationships[relationship.name] = .toMany(from: from.name)
                case (true, false): relationships[relationship.name] = .toOne(from: from.name)
                default: relationships[relationship.name] = .copy(from: from.name)
                }
            }
            let unchanged = old.name == entity.name && source.versionHash(of: old) == destination.versionHash(of: entity)
            mappings.append(EntityMapping(destination: entity.name, source: old.name, attributes: attributes,
                                          relationships: relationships, isCopy: unchanged))
        }
        guard problems.isEmpty else { throw MappingError(problems: problems) }
        let kept = Set(sources.values)
        return MappingModel(source: source, destination: destination, entityMappings: mappings,
                            removedEntities: source.entities.map(\.name).filter { !kept.contains($0) })
    }

    /// Whether values of type `from` fit a `to` attribute unchanged in
    /// meaning: a wider integer, or a floating-point number.
    static func widens(_ from: AttributeType, to: AttributeType) -> Bool {
        let integers: [AttributeType] = [.integer16, .integer32, .integer64]
        if let a = integers.firstIndex(of: from), let b = integers.firstIndex(of: to) { return a <= b }
        if integers.contains(from) || from == .float { return [.double, .decimal, .float].contains(to) && !(from == .integer64 && to == .float) }
        return false
    }

    /// The mapping in words, a line per change: what a dry run prints.
    public var summary: [String] {
        var lines: [String] = []
        for mapping in entityMappings {
            guard let sourceName = mapping.source else {
                lines.append("\(mapping.destination): new entity, empty")
                continue
            }
            if mapping.isCopy {
                lines.append("\(mapping.destination): unchanged")
                continue
            }
            let header = lines.count
            lines.append(sourceName == mapping.destination ? "\(mapping.destination):" : "\(mapping.destination): renamed from \(sourceName)")
            let old = source.entity(named: sourceName)!
            let entity = destination.entity(named: mapping.destination)!
            // Each entity's own properties: inherited ones are its superentity's lines.
            let attributes = entity.attributes[entity.inheritedAttributeCount...]
            let relationships = entity.relationships[entity.inheritedRelationshipCount...]
            for attribute in attributes where attribute.isStored {
                switch mapping.attributes[attribute.name] {
                case .copy(let from)?:
                    let was = old.attributes.first { $0.name == from }
                    if from != attribute.name { lines.append("  \(attribute.name): renamed from \(from)") }
                    if let was, was.isOptional && !attribute.isOptional {
                        lines.append("  \(attribute.name): now required"
                                     + (attribute.defaultValue.map { ", nil becomes \($0)" } ?? ", every object must have a value"))
                    } else if let was, !was.isOptional && attribute.isOptional {
                        lines.append("  \(attribute.name): now optional")
                    }
                case .convert(let from, let type)?:
                    lines.append("  \(attribute.name): \(type.rawValue) \(from) becomes \(attribute.type.rawValue)")
                case .defaultValue(let value)?:
                    lines.append("  \(attribute.name): added, " + (value.map { "every object starts at \($0)" } ?? "nil"))
                case nil:
                    break
                }
            }
            for attribute in old.attributes[old.inheritedAttributeCount...] where attribute.isStored && !mapping.attributes.values.contains(where: {
                switch $0 { case .copy(attribute.name), .convert(attribute.name, _): true; default: false }
            }) {
                lines.append("  \(attribute.name): removed")
            }
            for relationship in relationships where !relationship.isTransient {
                switch mapping.relationships[relationship.name] {
                case .copy(let from)? where from != relationship.name:
                    lines.append("  \(relationship.name): renamed from \(from)")
                case .toMany(let from)?:
                    lines.append("  \(relationship.name): " + (from == relationship.name ? "" : "renamed from \(from), ")
                                 + "to-one becomes to-many")
                case .toOne(let from)?:
                    lines.append("  \(relationship.name): " + (from == relationship.name ? "" : "renamed from \(from), ")
                                 + "to-many becomes to-one (each object keeps its first)")
                case .empty?:
                    lines.append("  \(relationship.name): added, empty")
                default:
                    break
                }
            }
            for relationship in old.relationships[old.inheritedRelationshipCount...] where !relationship.isTransient && !mapping.relationships.values.contains(where: {
                switch $0 { case .copy(relationship.name), .toMany(relationship.name), .toOne(relationship.name): true; default: false }
            }) {
                lines.append("  \(relationship.name): removed")
            }
            if lines.count == header + 1 && sourceName == mapping.destination {
                lines[header] += " no change of its own"
            }
        }
        for name in removedEntities { lines.append("\(name): removed, with its objects") }
        return lines
    }
}

/// Why a mapping between two model versions cannot be inferred.
public struct MappingError: Error, Hashable, Sendable, CustomStringConvertible {
    /// Each change an inferred mapping cannot make.
    public let problems: [String]

    public var description: String {
        "the mapping between these model versions cannot be inferred: " + problems.joined(separator: "; ")
    }
}

extension MappingError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
