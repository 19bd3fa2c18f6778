// Store stage: the attribute or relationship a Swift key path names, for
// `#Predicate`s and `SortDescriptor`s over `ManagedObjectView` classes and
// `Codable` records.
//
// A view's properties are computed (an `@Managed` property reads through its
// object), so their key paths print no name. A probe names them: a view made
// on a `ManagedObject` of no context flagged `.probe`, whose reads record the
// key they ask for and give nil. Reading a key path from the probe reads the
// property, which asks its object for its attribute (or, for a property of
// your own, a relationship by `object(forKey:)` / `objects(forKey:)`): the
// one key it asked for is the key path's name. A record's stored property
// names the coding key it is decoded from (RecordKeyNames.swift); anything
// else is named as it prints. Names are kept per key path.

import Foundation
import Sift

extension ManagedObject {
    /// The keys probes were asked for, by probe, while a key path is read.
    static let probeReads = LockedState<[ObjectIdentifier: [String]]>([:])

    /// Records that the probe was asked for `key`, and answers `answer`.
    func probeRead<T>(_ key: String, _ answer: T) -> T {
        Self.probeReads.withLock { $0[ObjectIdentifier(self), default: []].append(key) }
        return answer
    }

    /// A probe: an object of no context whose reads record their keys (nil only if its model could not be made).
    static func makeProbe() -> ManagedObject? {
        guard let description = probeDescription else { return nil }
        let object = ManagedObject(primaryKey: 0, description: description)
        object.flags.insert(.probe)
        return object
    }

    /// The description probes share: an entity of nothing (probes read no slot).
    nonisolated(unsafe) static let probeDescription: EntityDescription? = {
        // (A model of one plain entity is valid, so this does not fail.)
        guard let model = try? DataModel([Entity("SiftProbe")]), let entity = model.entity(named: "SiftProbe") else {
            return nil
        }
        return EntityDescription(entity, in: model)
    }()
}

/// How the store names Swift key paths: by probe for a view class, by
/// property name for anything else; each name found once.
enum KeyPathNames {
    /// Conversions of Swift predicates, by shape, with key paths named as here.
    static let shapes = SwiftPredicateShapeCache()

    /// Names found, by key path (nil: the key path names nothing).
    static let cache = LockedState<[AnyKeyPath: String?]>([:])

    /// The attribute or relationship `keyPath` names, or nil.
    ///
    /// - Parameter keyPath: A key path of one property.
    /// - Returns: The name: a view's property's `@Managed` attribute (or the key it reads), a record's
    ///   stored property's coding key (RecordKeyNames.swift), or its name.
    static func name(of keyPath: AnyKeyPath) -> String? {
        if let known = cache.withLock({ $0[keyPath] }) { return known }
        let found = find(keyPath)
        cache.withLock { $0[keyPath] = .some(found) }
        return found
    }

    /// Whether `type` is a view class, an optional one or a collection of them.
    private static func isViews(_ type: Any.Type) -> Bool {
        if type is any ManagedObjectView.Type { return true }
        let name = String(reflecting: type)
        return name.hasPrefix("Swift.Optional<") || name.hasPrefix("Swift.Array<") || name.hasPrefix("Swift.Set<")
    }

    private static func find(_ keyPath: AnyKeyPath) -> String? {
        let root = type(of: keyPath).rootType
        guard let view = root as? any ManagedObjectView.Type else {
            // A record's stored property names the coding key it is decoded from.
            if let record = root as? any Decodable.Type, let key = RecordKeyNames.name(of: keyPath, in: record) {
                return key
            }
            return SwiftPredicateConverter.propertyName(of: keyPath)
        }
        guard let probe = ManagedObject.makeProbe() else { return nil }
        let instance: Any = view.init(probe)
        let id = ObjectIdentifier(probe)
        _ = instance[keyPath: keyPath]
        let keys = ManagedObject.probeReads.withLock { $0.removeValue(forKey: id) } ?? []
        // A property that read exactly one key names it; one that read none is a stored property of the
        // class, named as it prints.
        if keys.count == 1 {
            // A relationship read (marked by a leading U+0001) names the key path only when the key path gives
            // the related views: `\Employee.department?.name` reads `department` too, and names nothing.
            guard keys[0].hasPrefix("\u{1}") else { return keys[0] }
            return isViews(type(of: keyPath).valueType) ? String(keys[0].dropFirst()) : nil
        }
        if keys.isEmpty, let name = SwiftPredicateConverter.propertyName(of: keyPath) { return name }
        return nil
    }
}
