// Store stage: what a fetched results controller reports after a save or a
// merge — index paths, object changes and section changes, in Core Data's
// vocabulary — and its delegate.

import Foundation
import Sift

/// A position in a fetched results controller's sections.
///
/// Foundation's `IndexPath` has no `section` and `item` on Linux, so the
/// controller names positions with this pair.
public struct FetchedIndexPath: Hashable, Sendable, Comparable, CustomStringConvertible {
    /// The section's index.
    public var section: Int
    /// The object's index inside its section.
    public var item: Int

    /// The position of item `item` of section `section`.
    ///
    /// - Parameters:
    ///   - item: The object's index inside its section.
    ///   - section: The section's index.
    public init(item: Int, section: Int) {
        self.section = section
        self.item = item
    }

    public static func < (a: FetchedIndexPath, b: FetchedIndexPath) -> Bool {
        (a.section, a.item) < (b.section, b.item)
    }

    public var description: String { "[\(section), \(item)]" }
}

/// How one object of a controller's results changed.
public struct FetchedResultsChange: Hashable, Sendable, CustomStringConvertible {
    /// The kinds of change, as Core Data's `NSFetchedResultsChangeType` names them.
    public enum Kind: Hashable, Sendable {
        /// The object joined the results, at `newIndexPath`.
        case insert
        /// The object left the results, from `indexPath`.
        case delete
        /// The object changed its place, from `indexPath` to `newIndexPath`.
        case move
        /// The object changed in place: it stays at `indexPath` (before the
        /// other changes; `newIndexPath` is where it is after them).
        case update
    }

    /// What happened.
    public var kind: Kind
    /// The object.
    public var objectID: ObjectID
    /// Where the object was before the change (nil for an insert).
    public var indexPath: FetchedIndexPath?
    /// Where the object is after the change (nil for a delete).
    public var newIndexPath: FetchedIndexPath?

    /// A change of `objectID`.
    ///
    /// - Parameters:
    ///   - kind: What happened to the object.
    ///   - objectID: The object's ID.
    ///   - indexPath: Where the object was before the change; nil for an insert.
    ///   - newIndexPath: Where the object is after the change; nil for a delete.
    public init(kind: Kind, objectID: ObjectID, indexPath: FetchedIndexPath?, newIndexPath: FetchedIndexPath?) {
        self.kind = kind
        self.objectID = objectID
        self.indexPath = indexPath
        self.newIndexPath = newIndexPath
    }

    public var description: String {
        switch kind {
        case .insert: "insert \(objectID) at \(newIndexPath!)"
        case .delete: "delete \(objectID) at \(indexPath!)"
        case .move: "move \(objectID) from \(indexPath!) to \(newIndexPath!)"
        case .update: "update \(objectID) at \(indexPath!)"
        }
    }
}

/// A section that appeared or disappeared.
public struct FetchedSectionChange: Hashable, Sendable, CustomStringConvertible {
    /// The kinds of section change.
    public enum Kind: Hashable, Sendable {
        /// The section is new, at `sectionIndex` after the change.
        case insert
        /// The section is gone, from `sectionIndex` before the change.
        case delete
    }

    /// What happened.
    public var kind: Kind
    /// The section's index: before the change for a delete, after it for an insert.
    public var sectionIndex: Int
    /// The section's name.
    public var name: String

    /// A change of the section called `name`.
    ///
    /// - Parameters:
    ///   - kind: Whether the section appeared or disappeared.
    ///   - sectionIndex: The section's index: before the change for a delete, after it for an insert.
    ///   - name: The section's name.
    public init(kind: Kind, sectionIndex: Int, name: String) {
        self.kind = kind
        self.sectionIndex = sectionIndex
        self.name = name
    }

    public var description: String { "\(kind == .insert ? "insert" : "delete") section \(sectionIndex) '\(name)'" }
}

/// Everything one save or merge changed in a controller's results.
///
/// ```swift
/// var rows = controller.sections.map { $0.objects.map(\.objectID) }    // a table's rows; each difference: apply(difference, to: &rows)
/// func apply(_ difference: FetchedResultsDifference, to rows: inout [[ObjectID]]) {
///     let removed = difference.objectChanges.filter { $0.kind == .delete || $0.kind == .move }.compactMap(\.indexPath)
///     for path in removed.sorted(by: >) { rows[path.section].remove(at: path.item) }
///     let sections = difference.sectionChanges.sorted { $0.sectionIndex < $1.sectionIndex }
///     for change in sections.reversed() where change.kind == .delete { rows.remove(at: change.sectionIndex) }
///     for change in sections where change.kind == .insert { rows.insert([], at: change.sectionIndex) }
///     let added = difference.objectChanges.filter { $0.kind == .insert || $0.kind == .move }
///         .compactMap { change in change.newIndexPath.map { (path: $0, id: change.objectID) } }
///     for (path, id) in added.sorted(by: { $0.path < $1.path }) {
///         rows[path.section].insert(id, at: path.item)
///     }
/// }
/// ```
///
/// Apply it as a table view applies a batch of updates: remove the deleted
/// sections and the objects at the `indexPath` of deletes and moves (old
/// positions), then insert the new sections and the objects at the
/// `newIndexPath` of inserts and moves (new positions), in ascending order.
/// Objects not named keep their order, and updates stay in place.
public struct FetchedResultsDifference: Hashable, Sendable {
    /// Sections removed and added.
    public var sectionChanges: [FetchedSectionChange]
    /// Objects inserted, deleted, moved and updated.
    public var objectChanges: [FetchedResultsChange]

    /// A difference of these changes.
    ///
    /// - Parameters:
    ///   - sectionChanges: The sections removed and added.
    ///   - objectChanges: The objects inserted, deleted, moved and updated.
    public init(sectionChanges: [FetchedSectionChange] = [], objectChanges: [FetchedResultsChange] = []) {
        self.sectionChanges = sectionChanges
        self.objectChanges = objectChanges
    }

    /// Whether nothing changed.
    public var isEmpty: Bool { sectionChanges.isEmpty && objectChanges.isEmpty }
}

/// One section of a controller's results.
public struct FetchedResultsSection {
    /// The section's name: its objects' value of the section key path
    /// (strings as they are, nil as the empty string), or the empty string
    /// when the controller has no section key path.
    public let name: String
    /// The section's objects, in order.
    public let objects: [ManagedObject]
    /// How many objects the section holds.
    public var numberOfObjects: Int { objects.count }
}

/// Hears what each save or merge changed in a controller's results.
public protocol FetchedResultsControllerDelegate: AnyObject {
    /// The results changed, as `difference` describes; the controller's
    /// sections are already the new ones.
    ///
    /// - Parameters:
    ///   - controller: The controller whose results changed.
    ///   - difference: The sections and objects that changed, with their old and new positions.
    func controller(_ controller: FetchedResultsController, didChange difference: FetchedResultsDifference)

    /// The controller could not bring its results up to date after a
    /// change (a store error while reading the changed rows); its results
    /// are those of the last successful update, and the next change refetches.
    ///
    /// - Parameters:
    ///   - controller: The controller that could not update its results.
    ///   - error: The store error that stopped the update.
    func controller(_ controller: FetchedResultsController, didFailWith error: StoreError)
}

extension FetchedResultsControllerDelegate {
    /// Does nothing.
    ///
    /// - Parameters:
    ///   - controller: The controller that could not update its results.
    ///   - error: The store error that stopped the update.
    public func controller(_ controller: FetchedResultsController, didFailWith error: StoreError) {}
}
