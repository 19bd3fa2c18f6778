// Saving with optimistic locking: two contexts change one object, the
// second save conflicts, and a merge policy decides.
import Foundation
import Sift
import SiftStore
import Synchronization

let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let store = try SQLiteStore(inMemoryWith: dataSet.model)
try store.importDataSet(dataSet)

// snippet.main
let heard = Mutex<[StoreChanges]>([])
let observation = store.addObserver { changes in heard.withLock { $0.append(changes) } }

let alice = ObjectContext(store: store)
let bob = ObjectContext(store: store)
let request = FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")
let aliceSeesIt = try alice.fetch(request)[0]
let bobSeesIt = try bob.fetch(request)[0]
print(try bobSeesIt.value(forKey: "nickname"))         // "Doc" — Bob's object now holds version 1 of the row

try aliceSeesIt.setValue(90_000.0, forKey: "salary")
try alice.save()                                       // one transaction; the row's version goes to 2

try bobSeesIt.setValue("Annie", forKey: "nickname")
do {
    try bob.save()                                     // Bob read version 1: nothing is written
} catch {
    if case .conflicts(let conflicts) = error {
        print(conflicts[0].entity, conflicts[0].contextVersion, conflicts[0].storeVersion ?? -1)   // Employee 1 2
    }
}

bob.mergePolicy = .objectTrump                         // Bob's changed properties win, the rest is Alice's
try bob.save()
let reader = ObjectContext(store: store)          // a context must outlive the objects read through it
let saved = try reader.fetch(request)[0]
print(try saved.value(forKey: "salary"), try saved.value(forKey: "nickname"))   // 90000.0 "Annie"

// Another context brings in what was saved, as the store announced it.
for changes in heard.withLock({ $0 }) { try alice.mergeChanges(from: changes) }
print(try aliceSeesIt.value(forKey: "nickname"))       // "Annie"
observation.cancel()
// snippet.end
