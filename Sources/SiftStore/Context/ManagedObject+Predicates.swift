// Store stage: a context's objects read by predicates compiled without a
// model (`FormatPredicate`), as records: an attribute is its value (unsaved
// changes included), a to-one relationship the related object, a to-many
// one its objects; faults fire as they are read. So one predicate filters
// plain values and fetched objects alike, and goes to a fetch request too.

import Foundation
import Sift

extension ManagedObject: KeyValueRecordRepresentable {
    /// The object as a record predicates read key by key, through its context.
    public var keyValueRecord: any KeyValueRecord { ObjectRecord(object: self) }
}

/// An object read as a record; a key that does not read (an unknown one, a
/// fault whose row is gone) is nil.
struct ObjectRecord: KeyValueRecord {
    let object: ManagedObject

    func value(forKey key: String) -> KeyValueItem {
        switch object.entity.property(named: key) {
        case .attribute?:
            return .value((try? object.value(forKey: key)) ?? .null)
        case .relationship(let relationship)? where !relationship.isToMany:
            let related = (try? object.object(forKey: key)) ?? nil
            return .record(related.map { ObjectRecord(object: $0) })
        case .relationship?:
            return .records(((try? object.objects(forKey: key)) ?? []).map { ObjectRecord(object: $0) })
        case nil:
            return .value(.null)
        }
    }

    var objectReference: ObjectReference? { object.reference }
}

extension FetchPredicate {
    /// A fetch predicate from a predicate compiled without a model: its text
    /// and arguments, bound to the fetch's entity when the fetch runs.
    ///
    /// ```swift
    /// let adults = try FormatPredicate(format: "age >= %@", 18)
    /// let request = FetchRequest(entityName: "Employee", predicate: FetchPredicate(adults))
    /// let objects = try context.fetch(request)
    /// let sameAgain = try adults.filter(objects)        // the same predicate over fetched objects
    /// ```
    ///
    /// - Parameter predicate: The predicate.
    public init(_ predicate: FormatPredicate) {
        // Variables given values so far are written in place; others stay
        // `$variables` (and the fetch refuses them as unbound).
        self = predicate.substitutions.isEmpty
            ? .format(predicate.format, predicate.formatArguments)
            : .format(predicate.predicateFormat, [])
    }
}

extension FetchRequest {
    /// A request for the objects of `entityName` that satisfy `predicate`.
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects (and subentities' objects) are fetched.
    ///   - predicate: The predicate, compiled without a model; it is bound to the entity when the fetch runs.
    ///   - sortDescriptors: How to order the results, by each descriptor in turn.
    ///   - fetchLimit: The most objects to return; nil for all.
    public init(entityName: String, predicate: FormatPredicate, sortDescriptors: [FetchSortDescriptor] = [],
                fetchLimit: Int? = nil) {
        self.init(entityName: entityName, sortDescriptors: sortDescriptors, fetchLimit: fetchLimit)
        self.predicate = FetchPredicate(predicate)
    }
}
