// Store stage: fetching with Swift's own predicates and sort descriptors.
//
// A `#Predicate` over a `ManagedObjectView` class or a `Codable` record is
// converted to format text (`FormatPredicate.formatText(of:naming:)`) with its
// captured values as `%@` arguments, its key paths named by `KeyPathNames`,
// and fetched as that text: the store's compiled-fetch cache keys on the text
// and the kinds of its arguments, so a `#Predicate` fetched again with new
// captured values is parsed, bound, optimized and planned once, as a format
// string is.

import Foundation
import Sift

extension FetchPredicate {
    /// A Swift predicate, converted: its key paths named as the store names them (a view's `@Managed`
    /// attributes, a record's stored properties), its captured values as arguments.
    ///
    /// - Parameter predicate: A predicate over a ``ManagedObjectView`` class or a `Codable` record.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate has no Sift form.
    public init<Root>(_ predicate: Predicate<Root>) throws(StoreError) {
        do {
            let (format, arguments) = try FormatPredicate.formatText(of: predicate, naming: KeyPathNames.name(of:),
                                                                     cache: KeyPathNames.shapes)
            self = .format(format, arguments)
        } catch {
            throw .invalidRequest(.swiftPredicate(error))
        }
    }
}

extension FetchSortDescriptor {
    /// A Foundation `SortDescriptor` over key paths, as the store sorts: a string compared by a localized
    /// comparator sorts case-insensitively, by `.lexical` as it is.
    ///
    /// - Parameter descriptor: A sort descriptor made from a key path (`SortDescriptor(\Employee.name)`).
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the descriptor has no key path (one made
    ///   from a comparator) or its key path names nothing.
    public init<Compared>(_ descriptor: SortDescriptor<Compared>) throws(StoreError) {
        guard let keyPath = descriptor.keyPath else {
            throw .invalidRequest(.swiftPredicate(PredicateConversionError(.unsupportedUse(
                "a sort descriptor made from a comparator has no key path to sort by; make it from a key path"))))
        }
        guard let name = KeyPathNames.name(of: keyPath) else {
            throw .invalidRequest(.swiftPredicate(PredicateConversionError(.unnamedKeyPath("\(keyPath)"))))
        }
        let comparator = descriptor.stringComparator
        self.init(name, ascending: descriptor.order == .forward,
                  caseInsensitive: comparator != nil && comparator != .lexical)
    }
}

extension FetchRequest {
    /// A request for the objects of `type`'s entity that `predicate` selects, in `sortBy`'s order.
    ///
    /// ```swift
    /// let limit = 40
    /// let request = try FetchRequest(Employee.self, where: #Predicate { ($0.age ?? 0) > limit },
    ///                                sortBy: [SortDescriptor(\.name)])
    /// let controller = try FetchedResultsController(context: context, request: request)
    /// ```
    ///
    /// - Parameters:
    ///   - type: The view class; its ``ManagedObjectView/entityName`` is the entity fetched.
    ///   - predicate: Which objects to fetch; nil for all of them.
    ///   - sortBy: How to order them, by key paths of `type`.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate or a sort descriptor has no
    ///   Sift form.
    public init<View: ManagedObjectView>(_ type: View.Type, where predicate: Predicate<View>? = nil,
                                         sortBy: [SortDescriptor<View>] = []) throws(StoreError)
    {
        self.init(entityName: View.entityName)
        if let predicate { self.predicate = try FetchPredicate(predicate) }
        sortDescriptors = try Self.sortDescriptors(sortBy)
    }

    /// A request for the objects of `entityName` that `predicate`, over a record type, selects.
    ///
    /// - Parameters:
    ///   - entityName: The entity fetched.
    ///   - predicate: Which objects to fetch, over the record type's stored properties; nil for all of them.
    ///   - sortBy: How to order them, by key paths of the record type.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate or a sort descriptor has no
    ///   Sift form.
    public init<Record>(entityName: String, where predicate: Predicate<Record>?,
                        sortBy: [SortDescriptor<Record>] = []) throws(StoreError)
    {
        self.init(entityName: entityName)
        if let predicate { self.predicate = try FetchPredicate(predicate) }
        sortDescriptors = try Self.sortDescriptors(sortBy)
    }

    private static func sortDescriptors<Compared>(_ descriptors: [SortDescriptor<Compared>]) throws(StoreError)
        -> [FetchSortDescriptor]
    {
        guard !descriptors.isEmpty else { return [] }
        var converted: [FetchSortDescriptor] = []
        for descriptor in descriptors { converted.append(try FetchSortDescriptor(descriptor)) }
        return converted
    }
}

extension ObjectContext {
    /// The objects of `type`'s entity that a Swift predicate selects, seen through `type`.
    ///
    /// ```swift
    /// let limit = 40
    /// let older = try context.fetch(Employee.self, where: #Predicate { ($0.age ?? 0) > limit },
    ///                               sortBy: [SortDescriptor(\Employee.name)])
    /// ```
    ///
    /// - Parameters:
    ///   - type: The view class; its ``ManagedObjectView/entityName`` is the entity fetched.
    ///   - predicate: Which objects to fetch, over `type`'s `@Managed` properties (and properties of your own
    ///     that read one relationship).
    ///   - sortBy: How to order them, by key paths of `type`.
    /// - Returns: A view of each object fetched, in order.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate or a sort descriptor has no
    ///   Sift form; otherwise as ``fetch(_:)``.
    public func fetch<View: ManagedObjectView>(_ type: View.Type, where predicate: Predicate<View>,
                                               sortBy: [SortDescriptor<View>] = []) throws(StoreError) -> [View]
    {
        try fetch(type, try FetchRequest(type, where: predicate, sortBy: sortBy))
    }

    /// How many objects of `type`'s entity a Swift predicate selects.
    ///
    /// - Parameters:
    ///   - type: The view class.
    ///   - predicate: Which objects to count.
    /// - Returns: The number of matching objects, unsaved changes included.
    /// - Throws: `StoreError`, as ``fetch(_:where:sortBy:)`` does.
    public func count<View: ManagedObjectView>(of type: View.Type, where predicate: Predicate<View>) throws(StoreError) -> Int {
        try count(for: try FetchRequest(type, where: predicate))
    }

    /// The objects of `entityName` that a Swift predicate over a record type selects, decoded as records.
    ///
    /// - Parameters:
    ///   - type: The record type.
    ///   - entityName: The entity fetched.
    ///   - predicate: Which objects to fetch, over the record's stored properties (each named as the attribute).
    ///   - sortBy: How to order them.
    /// - Returns: One record per object, in order.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate or a sort descriptor has no
    ///   Sift form; otherwise as ``fetch(_:_:)-(Record.Type,_)``.
    public func fetch<Record: Decodable>(_ type: Record.Type, entityName: String, where predicate: Predicate<Record>,
                                         sortBy: [SortDescriptor<Record>] = []) throws(StoreError) -> [Record]
    {
        try fetch(type, try FetchRequest(entityName: entityName, where: predicate, sortBy: sortBy))
    }

    /// How many objects of `entityName` a Swift predicate over a record type selects.
    ///
    /// - Parameters:
    ///   - type: The record type.
    ///   - entityName: The entity counted.
    ///   - predicate: Which objects to count.
    /// - Returns: The number of matching objects.
    /// - Throws: `StoreError`, as ``fetch(_:entityName:where:sortBy:)`` does.
    public func count<Record>(of type: Record.Type, entityName: String, where predicate: Predicate<Record>)
        throws(StoreError) -> Int
    {
        try count(for: try FetchRequest(entityName: entityName, where: predicate))
    }
}

extension BatchUpdateRequest {
    /// A request setting each attribute named to its expression, on the objects of `type`'s entity that a
    /// Swift predicate selects.
    ///
    /// ```swift
    /// let request = try BatchUpdateRequest(Employee.self, where: #Predicate { ($0.age ?? 0) > 60 },
    ///                                      setting: ["salary": "salary * 1.1"])
    /// ```
    ///
    /// - Parameters:
    ///   - type: The view class; its ``ManagedObjectView/entityName`` is the entity changed.
    ///   - predicate: Which objects change.
    ///   - properties: Each attribute's name, with the expression (in the format language) of its new value.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate has no Sift form.
    public init<View: ManagedObjectView>(_ type: View.Type, where predicate: Predicate<View>,
                                         setting properties: [String: String]) throws(StoreError)
    {
        self.init(entityName: View.entityName, predicate: try FetchPredicate(predicate), setting: properties)
    }

    /// A request setting each attribute named to its expression, on the objects of `entityName` that a Swift
    /// predicate over a record type selects.
    ///
    /// - Parameters:
    ///   - entityName: The entity changed.
    ///   - predicate: Which objects change, over the record's stored properties.
    ///   - properties: Each attribute's name, with the expression (in the format language) of its new value.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate has no Sift form.
    public init<Record>(entityName: String, where predicate: Predicate<Record>, setting properties: [String: String])
        throws(StoreError)
    {
        self.init(entityName: entityName, predicate: try FetchPredicate(predicate), setting: properties)
    }
}

extension BatchDeleteRequest {
    /// A request deleting the objects of `type`'s entity that a Swift predicate selects.
    ///
    /// - Parameters:
    ///   - type: The view class; its ``ManagedObjectView/entityName`` is the entity deleted from.
    ///   - predicate: Which objects are deleted.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate has no Sift form.
    public init<View: ManagedObjectView>(_ type: View.Type, where predicate: Predicate<View>) throws(StoreError) {
        self.init(entityName: View.entityName, predicate: try FetchPredicate(predicate))
    }

    /// A request deleting the objects of `entityName` that a Swift predicate over a record type selects.
    ///
    /// - Parameters:
    ///   - entityName: The entity deleted from.
    ///   - predicate: Which objects are deleted, over the record's stored properties.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate has no Sift form.
    public init<Record>(entityName: String, where predicate: Predicate<Record>) throws(StoreError) {
        self.init(entityName: entityName, predicate: try FetchPredicate(predicate))
    }
}

extension FetchedResultsController {
    /// A controller of the objects of `type`'s entity that a Swift predicate selects, in `sortBy`'s order.
    ///
    /// ```swift
    /// let controller = try FetchedResultsController(Employee.self, where: #Predicate { $0.isManager == true },
    ///                                               sortBy: [SortDescriptor(\.name)], context: context)
    /// try controller.performFetch()
    /// ```
    ///
    /// - Parameters:
    ///   - type: The view class; its ``ManagedObjectView/entityName`` is the entity fetched.
    ///   - predicate: Which objects to keep; nil for all of them.
    ///   - sortBy: How to order them, by key paths of `type`.
    ///   - context: The context whose objects, saved and unsaved, the controller follows.
    ///   - sectionNameKeyPath: The key path whose value names each object's section; nil for one section.
    /// - Throws: `StoreError.invalidRequest(.swiftPredicate(_:))` when the predicate or a sort descriptor has no
    ///   Sift form; otherwise as ``init(fetchRequest:context:sectionNameKeyPath:)``.
    public convenience init<View: ManagedObjectView>(_ type: View.Type, where predicate: Predicate<View>? = nil,
                                                     sortBy: [SortDescriptor<View>] = [], context: ObjectContext,
                                                     sectionNameKeyPath: String? = nil) throws(StoreError)
    {
        try self.init(fetchRequest: try FetchRequest(type, where: predicate, sortBy: sortBy), context: context,
                      sectionNameKeyPath: sectionNameKeyPath)
    }
}
