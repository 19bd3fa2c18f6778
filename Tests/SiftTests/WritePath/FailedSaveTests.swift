// A save that fails leaves the context exactly as it was, whatever the merge
// policy and whichever store: the store reports conflicts, the policy
// resolves them, and the retry's commit fails (SQLite: a trigger refuses the
// second transaction; atomic: the file cannot be replaced). Observers hear of
// every save that committed, and of nothing else.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Failed saves")
struct FailedSaveTests {
    static let policies: [MergePolicy] = [.error, .storeTrump, .objectTrump, .overwrite, .rollback]

    func employee(_ context: ObjectContext, _ id: Int64) -> ManagedObject {
        context.object(for: ObjectID(entity: context.model.entity(named: "Employee")!.index, primaryKey: id))
    }

    /// Everything a user can see of a context's objects. (Reading it once
    /// registers the faults it reaches: take it twice before comparing.)
    func state(_ context: ObjectContext, _ objects: [ManagedObject]) throws -> [String] {
        var lines = ["changes: \(context.hasChanges)", "registered: \(context.registeredObjectCount)",
                     "inserted: \(context.insertedObjects.map(\.objectID))", "updated: \(context.updatedObjects.map(\.objectID))",
                     "deleted: \(context.deletedObjects.map(\.objectID))"]
        for object in objects {
            var line = "\(object) fault=\(object.isFault) changes=\(object.hasChanges)"
            if !object.isFault || object.isInserted {
                for attribute in object.entity.attributes { line += " \(attribute.name)=\(try object.value(forKey: attribute.name))" }
                line += " department=\(String(describing: try object.object(forKey: "department")?.objectID))"
            }
            lines.append(line)
        }
        return lines
    }

    /// A context with an insert, an update that conflicts with another
    /// context's save, an update that does not, and a delete.
    func conflictedContext(_ store: TestStore, _ policy: MergePolicy) throws -> (ObjectContext, [ManagedObject]) {
        let mine = store.context()
        mine.mergePolicy = policy
        let alice = employee(mine, 101)
        let bob = employee(mine, 102)
        let carol = employee(mine, 103)
        for object in [alice, bob, carol] { _ = try object.value(forKey: "age") }
        let theirs = store.context()
        try employee(theirs, 101).setValue(40, forKey: "age")
        try theirs.save()
        try alice.setValue(41, forKey: "age")
        try bob.setValue("Robert", forKey: "name")
        try mine.delete(carol)
        let hire = try mine.insert("Employee")
        try hire.setValue("Ada", forKey: "name")
        try hire.setValue(30, forKey: "age")
        try hire.setValue(50_000.0, forKey: "salary")
        try hire.setValue(false, forKey: "isManager")
        try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        try hire.setObject(try alice.object(forKey: "department"), forKey: "department")
        return (mine, [alice, bob, carol, hire])
    }

    @Test("A failed commit leaves the SQLite store's context as it was", arguments: policies)
    func sqliteCommitFails(_ policy: MergePolicy) throws {
        let store = try StoreKind.sqlite.make()
        let sqlite = store.store as! SQLiteStore
        let (mine, objects) = try conflictedContext(store, policy)
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        // The first transaction runs; every later one is refused by a trigger.
        let transactions = Counter()
        try sqlite.withConnection { connection in
            try connection.registerFunction("test_refuse", arity: 0, deterministic: false) { _ in
                .integer(transactions.next() > 1 ? 1 : 0)
            }
            try connection.execute(#"CREATE TEMP TRIGGER refuse BEFORE INSERT ON "ZEMPLOYEE" WHEN test_refuse() "#
                + "BEGIN SELECT RAISE(ABORT, 'refused by the test'); END")
        }
        _ = try state(mine, objects)
        let before = try state(mine, objects)
        #expect(throws: StoreError.self) { try mine.save() }
        let after = try state(mine, objects)
        #expect(after == before, "\(zip(before, after).filter { $0 != $1 })")
        #expect(announced.all.isEmpty)
        #expect(try store.context().count(for: FetchRequest(entityName: "Employee")) == 60)
        // The same changes save once the store takes them.
        try sqlite.withConnection { try $0.execute("DROP TRIGGER refuse") }
        if policy == .error {
            #expect(throws: StoreError.self) { try mine.save() }
            #expect(try state(mine, objects) == before)
        } else {
            try mine.save()
            #expect(!mine.hasChanges)
            #expect(announced.all.count == 1)
            #expect(try store.context().count(for: FetchRequest(entityName: "Employee")) == 60)
        }
    }

    @Test("A failed write leaves the atomic store's context as it was", arguments: policies)
    func atomicWriteFails(_ policy: MergePolicy) throws {
        let store = try StoreKind.atomic.make()
        let (mine, objects) = try conflictedContext(store, policy)
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        // The file cannot be replaced: a folder (not empty) takes its place.
        let file = try #require(store.file)
        try FileManager.default.removeItem(at: file)
        try FileManager.default.createDirectory(at: file, withIntermediateDirectories: false)
        try Data().write(to: file.appendingPathComponent("keep"))
        defer { try? FileManager.default.removeItem(at: file) }
        _ = try state(mine, objects)
        let before = try state(mine, objects)
        #expect(throws: StoreError.self) { try mine.save() }
        #expect(try state(mine, objects) == before)
        #expect(announced.all.isEmpty)
    }

    @Test("Observers hear of every committed save, once", arguments: StoreKind.allCases)
    func observersHearEveryCommit(_ kind: StoreKind) throws {
        let store = try kind.make()
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        let context = store.context()
        try employee(context, 101).setValue(50, forKey: "age")
        try context.save()
        try context.delete(employee(context, 102))
        try context.save()
        try context.save()  // nothing to save: nothing to hear
        let other = store.context()
        other.mergePolicy = .objectTrump
        try employee(other, 101).setValue(52, forKey: "salary")  // read at version 2
        try employee(context, 101).setValue(51, forKey: "age")
        try context.save()  // version 3: the other context conflicts, and its policy resolves it
        try other.save()
        let employeeID = ObjectID(entity: context.model.entity(named: "Employee")!.index, primaryKey: 101)
        #expect(announced.all.count == 4)
        // (The delete nullified the relationships of the objects related to 102: they were updated.)
        #expect(announced.all.map { $0.updated.contains(employeeID) } == [true, true, true, true])
        #expect(announced.all.map(\.inserted.isEmpty) == [true, true, true, true])
        #expect(announced.all.map(\.deleted) == [[], [ObjectID(entity: employeeID.entity, primaryKey: 102)], [], []])
    }
}

/// Counts calls from any thread.
final class Counter: @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    func next() -> Int {
        lock.lock()
        defer { lock.unlock() }
        count += 1
        return count
    }
}
