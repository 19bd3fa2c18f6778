// Store stage: live fetch results. A fetched results controller fetches once,
// then keeps its objects and sections current after every save and merge of
// its context by testing only the changed objects in memory, with the
// request's predicate and sort compiled by the memory lowering — no query
// runs again. The one exception: a predicate, sort key or section key path
// that reads related objects (`department.name`) can change for objects no
// save touched, so such a controller refetches after a change and works out
// the difference from the two lists.

import Foundation
import Sift
import Synchronization

/// Keeps the results of a fetch current as its context saves and merges,
/// and reports each change: Core Data's `NSFetchedResultsController`.
///
/// ```swift
/// var request = FetchRequest(entityName: "Employee", predicate: "salary > 50000")
/// request.sortDescriptors = [FetchSortDescriptor("department.name"), FetchSortDescriptor("name")]
/// let controller = try FetchedResultsController(fetchRequest: request, context: context,
///                                               sectionNameKeyPath: "department.name")
/// try controller.performFetch()
/// controller.delegate = listView          // or: for await difference in controller.differences { … }
/// try context.save()                      // the delegate hears what moved, per save
/// ```
///
/// The controller follows saves of its context, batch changes executed in
/// it, and other contexts' saves once merged into it with
/// `ObjectContext.mergeChanges(from:)`. Like its context, it is confined to
/// one thread or task at a time.
public final class FetchedResultsController {
    /// The fetch the results come from.
    public let fetchRequest: FetchRequest
    /// The context whose objects the results are.
    public let context: ObjectContext
    /// The key path whose value names each object's section; nil for one section.
    public let sectionNameKeyPath: String?
    /// Who hears about changes.
    public weak var delegate: (any FetchedResultsControllerDelegate)?

    private let entity: Entity
    /// The request, compiled once: every fetch of the controller runs it.
    private let compiled: CompiledFetch
    private let predicate: MemoryPredicate<ContextDomain>?
    private let sort: InMemorySort<ContextDomain>
    private let section: MemoryExpression<ContextDomain>?
    /// Whether the predicate, a sort key or the section key path reads
    /// related objects: then changes refetch.
    private let readsRelatedObjects: Bool

    /// The results, in order.
    private var ids: [ObjectID] = []
    /// What each result is sorted by, and its section's name.
    private var entries: [ObjectID: Entry] = [:]
    /// The sections in order: names and sizes.
    private var sectionNames: [String] = []
    private var sectionCounts: [Int] = []
    private var fetched = false
    private var needsRefetch = false
    private let streams = Streams()

    /// How many times changes were handled by fetching again rather than
    /// testing the changed objects (for tests and benchmarks).
    package private(set) var refetchCount = 0

    private struct Entry {
        var keys: [PredicateValue]
        var section: String
    }

    /// A controller for `fetchRequest`, which must sort by at least one key
    /// and select objects (no limit or offset). With `sectionNameKeyPath`,
    /// the first sort key must be that key path, so that each section's
    /// objects come together.
    ///
    /// - Parameters:
    ///   - fetchRequest: The fetch whose results the controller keeps: sorted, for objects, with no limit or
    ///     offset.
    ///   - context: The context whose objects the results are, and whose changes the controller follows.
    ///   - sectionNameKeyPath: The key path whose value names each object's section; nil for one section.
    /// - Throws: `StoreError.invalidRequest` when the request has no sort descriptor, fetches anything but
    ///   objects, has a limit or offset, or does not sort first by `sectionNameKeyPath`; `.unknownEntity` when
    ///   the model has no such entity; `.invalidPredicate` when the predicate or a sort key does not parse or
    ///   fit the model.
    public init(fetchRequest: FetchRequest, context: ObjectContext, sectionNameKeyPath: String? = nil) throws(StoreError) {
        guard !fetchRequest.sortDescriptors.isEmpty else {
            throw .invalidRequest(.noSortDescriptors)
        }
        guard fetchRequest.resultType == .objects, fetchRequest.propertiesToFetch.isEmpty else {
            throw .invalidRequest(.resultTypeNotObjects)
        }
        guard fetchRequest.fetchLimit == nil, fetchRequest.fetchOffset == 0 else {
            throw .invalidRequest(.limitOrOffset)
        }
        if let sectionNameKeyPath, fetchRequest.sortDescriptors[0].keyPath != sectionNameKeyPath {
            throw .invalidRequest(.sectionKeyNotFirstSortKey(sectionNameKeyPath))
        }
        let store = context.store
        self.fetchRequest = fetchRequest
        self.context = context
        self.sectionNameKeyPath = sectionNameKeyPath
        var unbatched = fetchRequest
        unbatched.fetchBatchSize = 0
        compiled = try store.compile(unbatched)
        entity = compiled.entity
        let domain = ContextDomain(context: context)
        let bound = compiled.predicate
        predicate = bound.map { MemoryPredicate($0, domain: domain) }
        let keys = compiled.sortKeys
        sort = InMemorySort(keys, domain: domain)
        var sectionExpression: BoundExpression?
        if sectionNameKeyPath != nil { sectionExpression = keys[0].expression }
        section = sectionExpression.map { MemoryExpression($0, domain: domain) }
        readsRelatedObjects = (bound?.readsRelatedObjects ?? false) || keys.contains { $0.expression.readsRelatedObjects }
    }

    deinit {
        streams.finish()
    }

    // MARK: Results

    /// Fetches the results; the controller then follows its context's changes.
    ///
    /// - Throws: `StoreError` when the fetch fails: the store's error (such as `.sqlite` or `.locked`),
    ///   `.objectNotFound` for a row deleted while its fault fired, `.evaluation` when computing a sort or
    ///   section value ran out of a budget.
    public func performFetch() throws(StoreError) {
        let (ids, entries) = try fetchResults()
        self.ids = ids
        self.entries = entries
        (sectionNames, sectionCounts) = Self.sections(of: ids, entries, sectioned: section != nil)
        needsRefetch = false
        if !fetched {
            fetched = true
            context.addResultsController(self)
        }
    }

    /// The results, in order (empty before `performFetch()`).
    public var fetchedObjects: [ManagedObject] { ids.map(context.object(for:)) }

    /// The results' IDs, in order.
    public var fetchedObjectIDs: [ObjectID] { ids }

    /// The sections, in order. Without a section key path there is exactly
    /// one, named "", once the controller has fetched.
    public var sections: [FetchedResultsSection] {
        var start = 0
        return zip(sectionNames, sectionCounts).map { name, count in
            defer { start += count }
            return FetchedResultsSection(name: name, objects: ids[start..<start + count].map(context.object(for:)))
        }
    }

    /// The object at `indexPath`, or nil when there is none.
    ///
    /// - Parameter indexPath: The section and the item inside it.
    /// - Returns: The object at that position, or nil when the position is outside the sections.
    public func object(at indexPath: FetchedIndexPath) -> ManagedObject? {
        guard indexPath.section >= 0, indexPath.section < sectionCounts.count,
              indexPath.item >= 0, indexPath.item < sectionCounts[indexPath.section] else { return nil }
        return context.object(for: ids[sectionCounts[..<indexPath.section].reduce(0, +) + indexPath.item])
    }

    /// Where `object` is in the results, or nil when it is not one of them.
    ///
    /// - Parameter object: An object of the controller's context.
    /// - Returns: The object's section and item, or nil when it is not one of the results.
    public func indexPath(forObject object: ManagedObject) -> FetchedIndexPath? {
        position(of: object.objectID).map(indexPath(ofPosition:))
    }

    /// Differences as they happen: one element per save or merge that
    /// changed the results, until the controller is released.
    public var differences: AsyncStream<FetchedResultsDifference> { streams.make() }

    // MARK: Following changes

    /// Brings the results up to date after a save or merge in the context.
    func contextDidChange(_ changes: StoreChanges) {
        guard fetched, !changes.isEmpty else { return }
        do {
            let difference: FetchedResultsDifference
            if readsRelatedObjects || needsRefetch || changes.includesUnknownChanges {
                difference = try refetch(changed: changes.inserted.union(changes.updated))
            } else {
                difference = try apply(changes)
            }
            needsRefetch = false
            guard !difference.isEmpty else { return }
            delegate?.controller(self, didChange: difference)
            streams.yield(difference)
        } catch {
            needsRefetch = true
            delegate?.controller(self, didFailWith: error)
        }
    }

    /// Tests the changed objects of the fetched entity alone, moving each
    /// in or out of the results: work in proportion to the changes (and a
    /// binary search of the results for each).
    private func apply(_ changes: StoreChanges) throws(StoreError) -> FetchedResultsDifference {
        let model = context.model
        let mine = { (id: ObjectID) in model.isEntity(at: id.entity, kindOf: self.entity.index) }
        let deleted = changes.deleted.filter(mine)
        let changed = changes.inserted.union(changes.updated).filter { mine($0) && !deleted.contains($0) }
        guard !deleted.isEmpty || !changed.isEmpty else { return FetchedResultsDifference() }
        // The changed objects' new state, read before the results change (a failure leaves them as they were).
        let objects = changed.map(context.object(for:)).filter { !$0.isDeleted }
        try context.fireFaults(objects)
        var newEntries: [ObjectID: Entry] = [:]
        for object in objects {
            let matches = try StoreError.evaluating { () throws(EvaluationError) in try predicate?.evaluate(object) ?? true }
            if matches { newEntries[object.objectID] = try entry(of: object) }
        }
        let oldNames = sectionNames
        // Old places, then out of the results.
        var old: [(id: ObjectID, position: Int, path: FetchedIndexPath, keys: [PredicateValue])] = []
        for id in deleted.union(changed) {
            if let position = position(of: id) { old.append((id, position, indexPath(ofPosition: position), entries[id]!.keys)) }
        }
        for (id, position, _, _) in old.sorted(by: { $0.position > $1.position }) {
            let section = sectionIndex(ofPosition: position)
            ids.remove(at: position)
            entries[id] = nil
            sectionCounts[section] -= 1
            if sectionCounts[section] == 0 && self.section != nil {
                sectionCounts.remove(at: section)
                sectionNames.remove(at: section)
            }
        }
        // Into the results, where the sort puts them.
        for (id, entry) in newEntries.sorted(by: { compare($0.value, $0.key, $1.value, $1.key) < 0 }) {
            let position = insertionPosition(entry, id)
            insertIntoSection(entry.section, at: position)
            ids.insert(id, at: position)
            entries[id] = entry
        }
        let oldByID = Dictionary(uniqueKeysWithValues: old.map { ($0.id, ($0.path, $0.keys)) })
        var objectChanges: [FetchedResultsChange] = []
        for (id, _, path, _) in old where newEntries[id] == nil {
            objectChanges.append(FetchedResultsChange(kind: .delete, objectID: id, indexPath: path, newIndexPath: nil))
        }
        for (id, entry) in newEntries {
            let path = indexPath(ofPosition: position(of: id)!)
            if let (before, keys) = oldByID[id] {
                // Sorted by the same values, it kept its place among the others.
                objectChanges.append(FetchedResultsChange(kind: keys == entry.keys ? .update : .move, objectID: id,
                                                          indexPath: before, newIndexPath: path))
            } else {
                objectChanges.append(FetchedResultsChange(kind: .insert, objectID: id, indexPath: nil, newIndexPath: path))
            }
        }
        return FetchedResultsDifference(sectionChanges: Self.sectionChanges(from: oldNames, to: sectionNames),
                                        objectChanges: Self.ordered(objectChanges))
    }

    /// Fetches the results again and reports how they differ: objects
    /// that kept their relative order (the longest such run) stay, the
    /// others move.
    private func refetch(changed: Set<ObjectID>) throws(StoreError) -> FetchedResultsDifference {
        refetchCount += 1
        let (newIDs, newEntries) = try fetchResults()
        let (newNames, newCounts) = Self.sections(of: newIDs, newEntries, sectioned: section != nil)
        let oldPaths = Self.indexPaths(ids, sectionCounts)
        let newPaths = Self.indexPaths(newIDs, newCounts)
        let newPosition = Dictionary(uniqueKeysWithValues: newIDs.enumerated().map { ($0.element, $0.offset) })
        // Objects in both, in old order, that stayed in a section of the same name.
        let kept = ids.filter { id in
            newPosition[id] != nil && entries[id]?.section == newEntries[id]?.section
        }
        let staying = Self.longestIncreasingRun(kept.map { newPosition[$0]! }).map { kept[$0] }
        let stays = Set(staying)
        var objectChanges: [FetchedResultsChange] = []
        for id in ids where newPosition[id] == nil {
            objectChanges.append(FetchedResultsChange(kind: .delete, objectID: id, indexPath: oldPaths[id], newIndexPath: nil))
        }
        for id in newIDs {
            if let before = oldPaths[id] {
                if !stays.contains(id) {
                    objectChanges.append(FetchedResultsChange(kind: .move, objectID: id, indexPath: before, newIndexPath: newPaths[id]))
                } else if changed.contains(id) {
                    objectChanges.append(FetchedResultsChange(kind: .update, objectID: id, indexPath: before, newIndexPath: newPaths[id]))
                }
            } else {
                objectChanges.append(FetchedResultsChange(kind: .insert, objectID: id, indexPath: nil, newIndexPath: newPaths[id]))
            }
        }
        let difference = FetchedResultsDifference(sectionChanges: Self.sectionChanges(from: sectionNames, to: newNames),
                                                  objectChanges: Self.ordered(objectChanges))
        (ids, entries, sectionNames, sectionCounts) = (newIDs, newEntries, newNames, newCounts)
        return difference
    }

    /// The request's objects, sorted as the controller keeps them (the
    /// store's order, checked), with their sort values.
    private func fetchResults() throws(StoreError) -> ([ObjectID], [ObjectID: Entry]) {
        let objects = try context.fetch(compiled)
        try context.fireFaults(objects)
        var entries: [ObjectID: Entry] = [:]
        entries.reserveCapacity(objects.count)
        var ids: [ObjectID] = []
        ids.reserveCapacity(objects.count)
        for object in objects {
            entries[object.objectID] = try entry(of: object)
            ids.append(object.objectID)
        }
        // The store sorts as memory does; sort again only if it did not (a collation the memory sort folds differently).
        let sorted = zip(ids, ids.dropFirst()).allSatisfy { compare(entries[$0]!, $0, entries[$1]!, $1) < 0 }
        if !sorted { ids.sort { compare(entries[$0]!, $0, entries[$1]!, $1) < 0 } }
        return (ids, entries)
    }

    private func entry(of object: ManagedObject) throws(StoreError) -> Entry {
        let keys = try sort.values(of: object)
        guard let section else { return Entry(keys: keys, section: "") }
        let value = try StoreError.evaluating { () throws(EvaluationError) in try section.evaluate(object) }
        return Entry(keys: keys, section: Self.sectionName(value))
    }

    /// A section's name for a value: strings as they are, nil as "",
    /// anything else as a predicate would write it.
    static func sectionName(_ value: PredicateValue) -> String {
        switch value {
        case .null: ""
        case .string(let s): s
        case .bool(let b): b ? "1" : "0"
        default: value.description
        }
    }

    // MARK: Positions

    /// Negative when result `a` comes before `b`: by sort values, then primary key.
    private func compare(_ a: Entry, _ aID: ObjectID, _ b: Entry, _ bID: ObjectID) -> Int {
        let order = sort.compare(a.keys, b.keys)
        if order != 0 { return order }
        return aID.primaryKey < bID.primaryKey ? -1 : (aID.primaryKey > bID.primaryKey ? 1 : 0)
    }

    /// Where a result is in `ids`, found by binary search.
    private func position(of id: ObjectID) -> Int? {
        guard let entry = entries[id] else { return nil }
        let position = insertionPosition(entry, id)
        return position < ids.count && ids[position] == id ? position : nil
    }

    /// The first position whose result does not come before `entry`.
    private func insertionPosition(_ entry: Entry, _ id: ObjectID) -> Int {
        var (low, high) = (0, ids.count)
        while low < high {
            let middle = low + (high - low) / 2
            if compare(entries[ids[middle]]!, ids[middle], entry, id) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }

    private func sectionIndex(ofPosition position: Int) -> Int {
        var start = 0
        for (index, count) in sectionCounts.enumerated() {
            if position < start + count { return index }
            start += count
        }
        return max(sectionCounts.count - 1, 0)
    }

    private func indexPath(ofPosition position: Int) -> FetchedIndexPath {
        var start = 0
        for (index, count) in sectionCounts.enumerated() {
            if position < start + count { return FetchedIndexPath(item: position - start, section: index) }
            start += count
        }
        return FetchedIndexPath(item: position - start, section: max(sectionCounts.count - 1, 0))
    }

    /// Counts a new result at `position` (before it is inserted) in its
    /// section: the neighbour's of the same name, or a new one between them.
    private func insertIntoSection(_ name: String, at position: Int) {
        guard section != nil else {
            if sectionCounts.isEmpty { (sectionNames, sectionCounts) = ([""], [0]) }
            sectionCounts[0] += 1
            return
        }
        if position > 0 {
            let before = sectionIndex(ofPosition: position - 1)
            if sectionNames[before] == name {
                sectionCounts[before] += 1
                return
            }
        }
        if position < ids.count {
            let after = sectionIndex(ofPosition: position)
            if sectionNames[after] == name {
                sectionCounts[after] += 1
                return
            }
            // Between sections (or, if the sort disagrees with the names, inside one).
            let start = sectionCounts[..<after].reduce(0, +)
            if start == position {
                sectionNames.insert(name, at: after)
                sectionCounts.insert(1, at: after)
            } else {
                sectionCounts[after] += 1
            }
            return
        }
        sectionNames.append(name)
        sectionCounts.append(1)
    }

    // MARK: Differences

    private static func sections(of ids: [ObjectID], _ entries: [ObjectID: Entry], sectioned: Bool) -> ([String], [Int]) {
        guard sectioned else { return ([""], [ids.count]) }
        var names: [String] = []
        var counts: [Int] = []
        for id in ids {
            let name = entries[id]!.section
            if names.last == name { counts[counts.count - 1] += 1 } else { names.append(name); counts.append(1) }
        }
        return (names, counts)
    }

    private static func indexPaths(_ ids: [ObjectID], _ counts: [Int]) -> [ObjectID: FetchedIndexPath] {
        var paths: [ObjectID: FetchedIndexPath] = [:]
        paths.reserveCapacity(ids.count)
        var position = 0
        for (section, count) in counts.enumerated() {
            for item in 0..<count {
                paths[ids[position]] = FetchedIndexPath(item: item, section: section)
                position += 1
            }
        }
        return paths
    }

    /// Sections by name: those gone (old indexes), then those new (new indexes).
    private static func sectionChanges(from old: [String], to new: [String]) -> [FetchedSectionChange] {
        let (oldSet, newSet) = (Set(old), Set(new))
        return old.enumerated().filter { !newSet.contains($0.element) }.map {
            FetchedSectionChange(kind: .delete, sectionIndex: $0.offset, name: $0.element)
        } + new.enumerated().filter { !oldSet.contains($0.element) }.map {
            FetchedSectionChange(kind: .insert, sectionIndex: $0.offset, name: $0.element)
        }
    }

    /// Deletes by old position, then moves, inserts and updates by new position.
    private static func ordered(_ changes: [FetchedResultsChange]) -> [FetchedResultsChange] {
        func rank(_ change: FetchedResultsChange) -> (Int, FetchedIndexPath) {
            switch change.kind {
            case .delete: (0, change.indexPath!)
            case .move: (1, change.newIndexPath!)
            case .insert: (1, change.newIndexPath!)
            case .update: (2, change.indexPath!)
            }
        }
        return changes.sorted { rank($0) < rank($1) }
    }

    /// The indexes of a longest strictly increasing run of `values`
    /// (patience sorting, O(n log n)).
    static func longestIncreasingRun(_ values: [Int]) -> [Int] {
        var tails: [Int] = []        // index into values of the smallest tail of each length
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var (low, high) = (0, tails.count)
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var run: [Int] = []
        var index = tails.last ?? -1
        while index >= 0 {
            run.append(index)
            index = previous[index]
        }
        return run.reversed()
    }
}

/// The continuations of a controller's `differences` streams.
private final class Streams: Sendable {
    private let continuations = LockedState<[UUID: AsyncStream<FetchedResultsDifference>.Continuation]>([:])

    func make() -> AsyncStream<FetchedResultsDifference> {
        let (stream, continuation) = AsyncStream<FetchedResultsDifference>.makeStream()
        let id = UUID()
        continuations.withLock { $0[id] = continuation }
        continuation.onTermination = { [weak self] _ in _ = self?.continuations.withLock { $0.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ difference: FetchedResultsDifference) {
        for continuation in continuations.withLock({ Array($0.values) }) { continuation.yield(difference) }
    }

    func finish() {
        for continuation in continuations.withLock({ Array($0.values) }) { continuation.finish() }
    }
}

extension BoundPredicate {
    /// Whether the predicate reads any object other than the one tested.
    var readsRelatedObjects: Bool {
        switch self {
        case .constant: false
        case .not(let p): p.readsRelatedObjects
        case .and(let ps), .or(let ps): ps.contains { $0.readsRelatedObjects }
        case .comparison(let c): c.left.readsRelatedObjects || c.right.readsRelatedObjects
        case .exists(let e): e.readsRelatedObjects
        @unknown default: true
        }
    }
}

extension BoundExpression {
    /// Whether the expression reads any object other than the one tested.
    var readsRelatedObjects: Bool {
        switch kind {
        case .constant, .evaluatedObject, .variable, .parameter: false
        case .toOne, .toMany, .subquery: true
        case .attribute(let e, _), .key(let e, _), .aggregate(_, let e), .negate(let e), .size(let e): e.readsRelatedObjects
        case .map(let a, _, let b), .arithmetic(_, let a, let b), .index(let a, let b): a.readsRelatedObjects || b.readsRelatedObjects
        case .list(let es), .function(_, let es), .custom(_, let es): es.contains { $0.readsRelatedObjects }
        case .ternary(let p, let a, let b): p.readsRelatedObjects || a.readsRelatedObjects || b.readsRelatedObjects
        @unknown default: true
        }
    }
}
