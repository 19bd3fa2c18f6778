// Store stage: merging other contexts' saves into this one, under the
// context's merge policy.

import Foundation
import Sift

extension ObjectContext {
    /// Brings in what another context saved: objects it updated that this
    /// context holds are refreshed, deleted ones dropped. Unsaved edits of
    /// this context are kept as the merge policy says: `.error` leaves them
    /// to conflict at save, `.storeTrump` drops the edits to properties the
    /// other save changed, `.objectTrump` and `.overwrite` keep them over the
    /// new values, `.rollback` discards them.
    ///
    /// - Parameter changes: What another context's save changed, as the store's observers hear it.
    /// - Throws: `StoreError`: `.objectNotFound` when an updated object's row is gone when it is read again;
    ///   the store's error (such as `.sqlite` or `.locked`) when reading fails.
    public func mergeChanges(from changes: StoreChanges) throws(StoreError) {
        if changes.includesUnknownChanges {
            // Another process wrote rows the store cannot name: every object without edits is read again.
            var stale: [ManagedObject] = []
            objects.forEach { if !$0.hasChanges && !$0.isInserted { stale.append($0) } }
            for object in stale { refresh(object) }
        }
        for id in changes.updated {
            guard let object = objects[id], !object.isInserted else { continue }
            guard object.hasValueChanges || object.isDeleted else {
                refresh(object)
                continue
            }
            let old = object.node
            switch mergePolicy {
            case .error:
                continue
            case .rollback:
                object.discardChanges()
                object.isDeleted = false
                changed.remove(object)
            case .storeTrump, .objectTrump, .overwrite:
                break
            }
            // Read the new snapshot, keeping the edits.
            let edits = (object.changedValues, object.changedToOne, object.addedToMany, object.removedToMany)
            refresh(object, keepingChanges: true)
            try fireFaults([object])
            (object.changedValues, object.changedToOne, object.addedToMany, object.removedToMany) = edits
            if mergePolicy == .storeTrump, let old, let new = object.node {
                for (slot, _) in object.changedValues where new.value(at: slot) != old.value(at: slot) {
                    object.changedValues[slot] = nil
                }
            }
            if !object.hasChanges { changed.remove(object) }
        }
        for id in changes.deleted {
            guard let object = objects[id], !object.hasValueChanges else { continue }
            object.isDeleted = true
            changed.remove(object)
            unregisterObject(object)
        }
        resultsDidChange(changes)
    }
}
