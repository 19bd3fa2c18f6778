// Store stage: fetched properties — a fetch request an entity declares,
// whose predicate names the object asking as `$FETCH_SOURCE`. Each use runs
// the fetch with the object (and the key paths from it the predicate uses)
// substituted, as Core Data does when a fetched property fires.

import Foundation
import Sift

extension ManagedObject {
    /// The objects of the fetched property `key`: its fetch request, run
    /// with `$FETCH_SOURCE` standing for this object.
    ///
    /// Replaces `object.value(forKey: key) as? [NSManagedObject]` for a
    /// fetched property. `$FETCH_SOURCE` may be compared as an object
    /// (`owner == $FETCH_SOURCE`) or followed by a key path through to-one
    /// relationships (`name == $FETCH_SOURCE.name`).
    ///
    /// - Parameter key: The fetched property's name.
    /// - Returns: The objects its fetch request selects, for this object.
    /// - Throws: `StoreError`: `.unknownKey` when the entity has no fetched property `key`; `.invalidPredicate`
    ///   when its predicate does not parse or fit the model; `.missingVariables` when it uses a `$variable`
    ///   other than `$FETCH_SOURCE`; `.unknownRelationship` when a `$FETCH_SOURCE` key path goes through a
    ///   key that is not a to-one relationship; `.unknownKey` when its last key is not an attribute or
    ///   relationship; `.contextGone` when the object's context was released; any error of the fetch.
    public func fetchedObjects(forKey key: String) throws(StoreError) -> [ManagedObject] {
        var property = entity.fetchedProperties.first { $0.name == key }
        if property == nil, !entity.subentities.isEmpty, isFault {
            try context().fire(self)
            property = entity.fetchedProperties.first { $0.name == key }
        }
        guard let property else { throw .unknownKey(key, entity: entity.name) }
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(property.predicate)
        } catch {
            throw .invalidPredicate(.syntax(error), text: property.predicate)
        }
        var values: [String: PredicateValue] = ["FETCH_SOURCE": .object(reference)]
        for path in syntax.variableKeyPaths where path.hasPrefix("FETCH_SOURCE.") {
            values[path] = try value(atKeyPath: path.split(separator: ".").dropFirst().map(String.init))
        }
        let missing = syntax.variables.subtracting(["FETCH_SOURCE"])
        guard missing.isEmpty else { throw .missingVariables(template: "fetched property '\(key)'", missing.sorted()) }
        let request = FetchRequest(entityName: property.entityName, predicate: syntax.substituting(values).description)
        return try context().fetch(request)
    }

    /// The value at a key path from this object, through to-one
    /// relationships: an attribute's value, or an object's reference (nil
    /// when a relationship on the way is empty).
    func value(atKeyPath keys: [String]) throws(StoreError) -> PredicateValue {
        var current: ManagedObject = self
        for (i, key) in keys.enumerated() {
            let last = i == keys.count - 1
            if current.entity.relationship(named: key) == nil {
                guard last else { throw .unknownRelationship(keys.joined(separator: "."), entity: entity.name) }
                return try current.value(forKey: key)
            }
            guard let next = try current.object(forKey: key) else { return .null }
            current = next
        }
        return .object(current.reference)
    }
}
