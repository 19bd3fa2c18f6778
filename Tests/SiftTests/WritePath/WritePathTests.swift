// The write path: changes in a context, delete rules, validation, fetches
// that see unsaved changes, saves with optimistic locking and every merge
// policy, several contexts, change notifications. Every test runs on the
// SQLite store and on the atomic store: the context API is the same.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Write path")
struct WritePathTests {
    func employee(_ context: ObjectContext, _ id: Int64) -> ManagedObject {
        context.object(for: ObjectID(entity: 1, primaryKey: id))
    }

    func storeValue(_ store: TestStore, _ id: Int64, _ key: String) throws -> PredicateValue? {
        let fresh = store.context()
        store.rowCache.removeAll()
        return try fresh.object(for: ObjectID(entity: 1, primaryKey: id)).value(forKey: key)
    }

    func newEmployee(_ context: ObjectContext, _ name: String, age: Int64 = 30) throws -> ManagedObject {
        let e = try context.insert("Employee")
        try e.setValue(.string(name), forKey: "name")
        try e.setValue(.int(age), forKey: "age")
        try e.setValue(.double(50_000), forKey: "salary")
        try e.setValue(.bool(false), forKey: "isManager")
        try e.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        return e
    }

    @Test(arguments: StoreKind.allCases)
    func insertGetsAPermanentIDAndKeepsItsIdentity(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let e = try newEmployee(context, "New Person")
        #expect(e.objectID.primaryKey < 0)
        #expect(e.isInserted && context.hasChanges)
        #expect(context.insertedObjects.map { $0 === e } == [true])
        try context.save()
        #expect(e.objectID.primaryKey == 161)
        #expect(!e.isInserted && !context.hasChanges)
        // The save's result gave the row it wrote: the object holds it, no fault to fire.
        #expect(!e.isFault)
        #expect(context.object(for: e.objectID) === e)
        #expect(try storeValue(store, 161, "name") == "New Person")
    }

    @Test(arguments: StoreKind.allCases)
    func updatesBumpTheVersion(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let alice = employee(context, 101)
        #expect(try alice.value(forKey: "age") == 58)
        try alice.setValue(59, forKey: "age")
        #expect(context.updatedObjects.count == 1)
        #expect(try alice.value(forKey: "age") == 59)
        try context.save()
        #expect(!alice.isFault)
        if let sqlite = store.store as? SQLiteStore {
            let version = try sqlite.withConnection { try $0.query(#"SELECT "Z_OPT" FROM "ZEMPLOYEE" WHERE "Z_PK" = 101"#) }
            #expect(version.first?.first == .integer(2))
        }
        #expect(try storeValue(store, 101, "age") == 59)
    }

    @Test(arguments: StoreKind.allCases)
    func inversesStayInStep(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let bob = employee(context, 102)
        let legal = context.object(for: ObjectID(entity: 0, primaryKey: 6))
        let sales = try #require(try bob.object(forKey: "department"))
        try bob.setObject(legal, forKey: "department")
        #expect(try legal.objects(forKey: "employees").contains { $0 === bob })
        #expect(try !sales.objects(forKey: "employees").contains { $0 === bob })
        // Many-to-many: both sides.
        let lead = context.object(for: ObjectID(entity: 2, primaryKey: 2))
        try bob.addObject(lead, forKey: "tags")
        #expect(try lead.objects(forKey: "employees").contains { $0 === bob })
        let remote = context.object(for: ObjectID(entity: 2, primaryKey: 1))
        try remote.removeObject(bob, forKey: "employees")
        #expect(try !bob.objects(forKey: "tags").contains { $0 === remote })
        // A to-many whose inverse is to-one sets the member's to-one.
        let carol = employee(context, 103)
        try legal.addObject(carol, forKey: "employees")
        #expect(try carol.object(forKey: "department") === legal)
        try context.save()

        let fresh = store.context()
        store.rowCache.removeAll()
        let bob2 = employee(fresh, 102)
        #expect(try bob2.object(forKey: "department")?.objectID.primaryKey == 6)
        #expect(try Set(bob2.objects(forKey: "tags").map(\.objectID.primaryKey)) == [2, 10])
        #expect(try employee(fresh, 103).object(forKey: "department")?.objectID.primaryKey == 6)
    }

    @Test(arguments: StoreKind.allCases)
    func deleteNullifiesInverses(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let sales = context.object(for: ObjectID(entity: 0, primaryKey: 2))
        let members = try sales.objects(forKey: "employees")
        try context.delete(sales)
        #expect(sales.isDeleted)
        for member in members { #expect(try member.object(forKey: "department") == nil) }
        try context.save()
        let fresh = store.context()
        store.rowCache.removeAll()
        #expect(try fresh.count(for: FetchRequest(entityName: "Department")) == 7)
        #expect(try fresh.count(for: FetchRequest(entityName: "Employee", predicate: "department == nil")) == 3 + members.count)
    }

    static let rulesModel = try! DataModel([
        Entity("Owner", attributes: [Attribute("name", .string)],
               relationships: [Relationship("pets", to: "Pet", toMany: true, inverse: "owner", deleteRule: .cascade)]),
        Entity("Pet", attributes: [Attribute("name", .string)],
               relationships: [Relationship("owner", to: "Owner", inverse: "pets"),
                               Relationship("toys", to: "Toy", toMany: true, inverse: "pet", deleteRule: .deny)]),
        Entity("Toy", attributes: [Attribute("name", .string)],
               relationships: [Relationship("pet", to: "Pet", inverse: "toys", deleteRule: .noAction)]),
    ])

    @Test(arguments: StoreKind.allCases)
    func cascadeDenyAndNoAction(_ kind: StoreKind) throws {
        let store = try kind.make(try DataSet(model: Self.rulesModel, objects: [
            "Owner": [["id": 1, "name": "Ann"]],
            "Pet": [["id": 1, "name": "Rex", "owner": 1], ["id": 2, "name": "Tom", "owner": 1]],
            "Toy": [["id": 1, "name": "ball", "pet": 2]],
        ]))
        let context = store.context()
        let ann = context.object(for: ObjectID(entity: 0, primaryKey: 1))
        try context.delete(ann)
        #expect(context.deletedObjects.count == 3)  // Ann, Rex, Tom
        #expect {
            try context.save()
        } throws: { error in
            guard case StoreError.validation(let failures) = error else { return false }
            return failures.count == 1 && failures[0].property == "toys" && failures[0].object.contains("Pet 2")
        }
        context.rollback()
        let tom = context.object(for: ObjectID(entity: 1, primaryKey: 2))
        let ball = try #require(try tom.objects(forKey: "toys").first)
        try context.delete(ball)  // no action: Tom still lists it until saved
        try context.delete(ann)
        try context.save()
        let fresh = store.context()
        #expect(try fresh.count(for: FetchRequest(entityName: "Pet")) == 0)
        #expect(try fresh.count(for: FetchRequest(entityName: "Owner")) == 0)
    }

    @Test("Objects stop and start being changed, many times over: the context lists exactly the changed ones, in key order, and saves exactly them",
          arguments: StoreKind.allCases)
    func changedObjectsComeAndGo(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        // 100 inserted, then 80 of them deleted again (never saved, so gone):
        // more than half of the changed objects stop being changed at once.
        let inserted = try (0..<100).map { try newEmployee(context, "New \($0)") }
        for object in inserted[20...] { try context.delete(object) }
        #expect(context.insertedObjects.map(\.objectID) == inserted[..<20].map(\.objectID))
        #expect(context.deletedObjects.isEmpty)
        // Ten saved employees changed, in an order other than their keys'; five
        // refreshed (their changes dropped), two of those changed again.
        let keys: [Int64] = [110, 101, 105, 103, 109, 102, 108, 104, 106, 107]
        for key in keys { try employee(context, key).setValue(.int(key), forKey: "age") }
        for key in keys.prefix(5) { context.refresh(employee(context, key)) }
        for key in [105, 101] as [Int64] { try employee(context, key).setValue(.int(key + 1), forKey: "age") }
        let updated: [Int64] = [101, 102, 104, 105, 106, 107, 108]
        #expect(context.updatedObjects.map(\.objectID.primaryKey) == updated)
        #expect(context.hasChanges)
        try context.save()
        #expect(!context.hasChanges && context.updatedObjects.isEmpty && context.insertedObjects.isEmpty)
        let fresh = store.context()
        #expect(try fresh.count(for: FetchRequest(entityName: "Employee")) == 60 + 20)
        let ages = Dictionary(uniqueKeysWithValues: try fresh.fetch(FetchRequest(entityName: "Employee", predicate: "age < 200"))
            .map { ($0.objectID.primaryKey, $0["age"]) })
        for key in keys {
            let expected: PredicateValue = [101, 105].contains(key) ? .int(key + 1) : .int(key)
            if updated.contains(key) { #expect(ages[key] == expected) } else { #expect(ages[key] != .int(key)) }
        }
        // Changed once more after the save: listed again.
        try employee(context, 103).setValue(.int(1), forKey: "age")
        #expect(context.updatedObjects.map(\.objectID.primaryKey) == [103])
    }

    @Test(arguments: StoreKind.allCases)
    func rollbackDiscardsEverything(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let alice = employee(context, 101)
        try alice.setValue(1, forKey: "age")
        let inserted = try newEmployee(context, "X")
        let bob = employee(context, 102)
        try context.delete(bob)
        context.rollback()
        #expect(!context.hasChanges)
        #expect(try alice.value(forKey: "age") == 58)
        #expect(!bob.isDeleted)
        #expect(context.object(for: inserted.objectID) !== inserted)
    }

    @Test(arguments: StoreKind.allCases)
    func validationNamesTheObjectAndProperty(_ kind: StoreKind) throws {
        let context = try kind.make().context()
        let e = try context.insert("Employee")
        try e.setValue("Nameless", forKey: "name")
        // A value of the wrong type, or out of range, is refused when it is set, and nothing changes.
        #expect {
            try e.setValue("thirty", forKey: "age")
        } throws: { error in
            guard case StoreError.invalidValue(let failure) = error else { return false }
            return failure.property == "age" && failure.reason == "must be integer64, not a string"
                && (error as? StoreError)?.code == .invalidValue
        }
        #expect(e["age"] == .null)
        let age = 41
        try e.setValue(age, forKey: "age")
        #expect(e["age", as: Int.self] == 41)
        // Required attributes are still checked at save, each named.
        #expect {
            try context.save()
        } throws: { error in
            guard case StoreError.validation(let failures) = error else { return false }
            return Set(failures.map(\.property)) == ["salary", "isManager", "startDate"]
        }
    }

    @Test("perform and performAndWait run work on a context one piece at a time, from many tasks and threads",
          arguments: StoreKind.allCases)
    func performRunsOnePieceAtATime(_ kind: StoreKind) async throws {
        let store = try kind.make()
        let context = store.context()
        try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<12 {
                group.addTask {
                    try await context.perform { context in
                        let hire = try context.insert("Employee")
                        try hire.setValue("Temp \(i)", forKey: "name")
                        try hire.setValue(20 + i, forKey: "age")
                        try hire.setValue(1000.0, forKey: "salary")
                        try hire.setValue(false, forKey: "isManager")
                        try hire.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "startDate")
                        if i % 3 == 0 { try context.save() }
                        return try context.count(for: FetchRequest(entityName: "Employee", predicate: "name BEGINSWITH 'Temp'"))
                    }
                }
            }
            for try await count in group { #expect(count >= 1) }
        }
        // From a thread that is not a task, and nested inside work already on the queue.
        let names = try context.performAndWait { context in
            try context.save()
            return try context.performAndWait { inner in
                try inner.fetch(FetchRequest(entityName: "Employee", predicate: "name BEGINSWITH 'Temp'"))
                    .compactMap { $0["name", as: String.self] }
            }
        }
        #expect(Set(names) == Set((0..<12).map { "Temp \($0)" }))
        let other = store.context()
        #expect(try other.count(for: FetchRequest(entityName: "Employee", predicate: "name BEGINSWITH 'Temp'")) == 12)
    }

    @Test(arguments: StoreKind.allCases)
    func notANumberIsRefused(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let employee = try employee(context, 101)
        #expect {
            try employee.setValue(.double(.nan), forKey: "salary")
        } throws: { error in
            guard case StoreError.invalidValue(let failure) = error else { return false }
            return failure.property == "salary" && failure.reason.contains("NaN")
        }
        #expect(!context.hasChanges)
    }

    @Test(arguments: StoreKind.allCases)
    func fetchesSeeUnsavedChanges(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        var request = FetchRequest(entityName: "Employee", predicate: "age > 60",
                                   sortDescriptors: [FetchSortDescriptor("age", ascending: false)])
        let before = try context.fetchObjectIDs(request).map(\.primaryKey)
        let young = employee(context, 102)
        try young.setValue(99, forKey: "age")
        let old = try #require(try context.fetch(request).last)
        try old.setValue(20, forKey: "age")
        let inserted = try newEmployee(context, "Elder", age: 70)
        try context.delete(employee(context, before.first!))
        let ids = try context.fetch(request).map(\.objectID.primaryKey)
        #expect(ids.first == 102)
        #expect(ids.contains(inserted.objectID.primaryKey))
        #expect(!ids.contains(old.objectID.primaryKey))
        #expect(!ids.contains(before.first!))
        request.fetchLimit = 2
        #expect(try context.fetch(request).map(\.objectID.primaryKey) == Array(ids.prefix(2)))
        request.includesPendingChanges = false
        request.fetchLimit = nil
        #expect(try context.fetchObjectIDs(request).map(\.primaryKey) == before)
        // After saving, the store gives the same answer.
        try context.save()
        var saved = FetchRequest(entityName: "Employee", predicate: "age > 60",
                                 sortDescriptors: [FetchSortDescriptor("age", ascending: false)])
        saved.includesPendingChanges = false
        let afterSave = try store.context().fetchObjectIDs(saved).map(\.primaryKey)
        #expect(afterSave == ids.map { $0 < 0 ? inserted.objectID.primaryKey : $0 }, "\(afterSave) vs \(ids)")
    }

    func conflictingEdit(_ store: TestStore, policy: MergePolicy) throws -> (ObjectContext, ManagedObject) {
        let mine = store.context()
        mine.mergePolicy = policy
        let alice = employee(mine, 101)
        _ = try alice.value(forKey: "age")
        // Another context changes age and salary, and saves first.
        let theirs = store.context()
        let theirAlice = employee(theirs, 101)
        try theirAlice.setValue(40, forKey: "age")
        try theirAlice.setValue(1.0, forKey: "salary")
        try theirs.save()
        try alice.setValue(41, forKey: "age")
        try alice.setValue("Renamed", forKey: "name")
        return (mine, alice)
    }

    @Test(arguments: StoreKind.allCases)
    func conflictsFailTheWholeSaveByDefault(_ kind: StoreKind) throws {
        let store = try kind.make()
        let (mine, _) = try conflictingEdit(store, policy: .error)
        let inserted = try newEmployee(mine, "Never Saved")
        #expect {
            try mine.save()
        } throws: { error in
            guard case StoreError.conflicts(let conflicts) = error else { return false }
            return conflicts.count == 1 && conflicts[0].contextVersion == 1 && conflicts[0].storeVersion == 2
                && conflicts[0].storeValues?["age"] == 40 && conflicts[0].contextValues["age"] == 41
        }
        #expect(inserted.isInserted)
        #expect(try store.context().count(for: FetchRequest(entityName: "Employee")) == 60)
        #expect(try storeValue(store, 101, "name") == "Alice Anderson")
    }

    @Test("Merge policies", arguments: StoreKind.allCases, [
        (MergePolicy.storeTrump, PredicateValue.int(40), PredicateValue.string("Renamed"), PredicateValue.double(1)),
        (.objectTrump, 41, "Renamed", 1.0),
        (.overwrite, 41, "Renamed", 250_000.0),
        (.rollback, 40, "Alice Anderson", 1.0),
    ] as [(MergePolicy, PredicateValue, PredicateValue, PredicateValue)])
    func mergePolicies(_ kind: StoreKind,
                       _ expected: (policy: MergePolicy, age: PredicateValue, name: PredicateValue, salary: PredicateValue)) throws {
        let (policy, age, name, salary) = expected
        let store = try kind.make()
        let (mine, alice) = try conflictingEdit(store, policy: policy)
        try mine.save()
        #expect(try storeValue(store, 101, "age") == age)
        #expect(try storeValue(store, 101, "name") == name)
        #expect(try storeValue(store, 101, "salary") == salary)
        #expect(try alice.value(forKey: "age") == age)
        #expect(!mine.hasChanges)
    }

    @Test(arguments: StoreKind.allCases)
    func deletedInOneContextWhileChangedInAnother(_ kind: StoreKind) throws {
        let store = try kind.make()
        let changer = store.context()
        let bob = employee(changer, 102)
        try bob.setValue(31, forKey: "age")
        let deleter = store.context()
        try deleter.delete(employee(deleter, 102))
        try deleter.save()
        #expect {
            try changer.save()
        } throws: { error in
            guard case StoreError.conflicts(let conflicts) = error else { return false }
            return conflicts.first?.storeVersion == nil
        }
        changer.mergePolicy = .objectTrump
        try changer.save()  // the context's object wins: the row comes back
        #expect(try storeValue(store, 102, "age") == 31)
    }

    @Test("Changed here, deleted in the store: each policy", arguments: StoreKind.allCases, [
        (MergePolicy.storeTrump, false), (.rollback, false), (.objectTrump, true), (.overwrite, true),
    ])
    func changedHereDeletedThere(_ kind: StoreKind, _ expected: (policy: MergePolicy, rowComesBack: Bool)) throws {
        let store = try kind.make()
        let changer = store.context()
        changer.mergePolicy = expected.policy
        let bob = employee(changer, 102)
        try bob.setValue(31, forKey: "age")
        let deleter = store.context()
        try deleter.delete(employee(deleter, 102))
        try deleter.save()
        try changer.save()
        #expect(!changer.hasChanges)
        let count = try store.context().count(for: FetchRequest(entityName: "Employee", predicate: "SELF == %@",
                                                                arguments: [.object(ObjectReference(entity: "Employee", id: 102))]))
        #expect(count == (expected.rowComesBack ? 1 : 0))
        #expect(bob.isDeleted == !expected.rowComesBack)
        if expected.rowComesBack { #expect(try storeValue(store, 102, "age") == 31) }
    }

    // A save's result gives its rows by their place in the request; once a
    // conflict is resolved, the request's places no longer follow the
    // context's lists, and the context finds the rows by ID instead.
    @Test("A save whose conflict was resolved holds every object it wrote with its new snapshot: an insert, an update and a row written back",
          arguments: StoreKind.allCases, [MergePolicy.objectTrump, .overwrite, .storeTrump])
    func resolvedSavesKeepTheirSnapshots(_ kind: StoreKind, _ policy: MergePolicy) throws {
        let store = try kind.make()
        let changer = store.context()
        changer.mergePolicy = policy
        let alice = employee(changer, 101)
        try alice.setValue(59, forKey: "age")
        let bob = employee(changer, 102)
        try bob.setValue(31, forKey: "age")
        let hire = try newEmployee(changer, "New Hire", age: 22)
        let deleter = store.context()
        try deleter.delete(employee(deleter, 102))
        try deleter.save()
        try changer.save()
        let rowComesBack = policy != .storeTrump
        #expect(!changer.hasChanges)
        for (object, age) in [(alice, 59), (hire, 22)] + (rowComesBack ? [(bob, 31)] : []) {
            #expect(!object.isFault, "\(object) holds the row it wrote")
            #expect(object.objectID.primaryKey > 0)
            #expect(changer.object(for: object.objectID) === object)
            #expect(try object.value(forKey: "age") == .int(Int64(age)))
            #expect(try storeValue(store, object.objectID.primaryKey, "age") == .int(Int64(age)))
        }
        #expect(bob.isDeleted == !rowComesBack)
    }

    @Test("Deleted here, changed in the store: each policy", arguments: StoreKind.allCases, [
        (MergePolicy.storeTrump, true), (.rollback, true), (.objectTrump, false), (.overwrite, false),
    ])
    func deletedHereChangedThere(_ kind: StoreKind, _ expected: (policy: MergePolicy, rowStays: Bool)) throws {
        let store = try kind.make()
        let deleter = store.context()
        deleter.mergePolicy = expected.policy
        let bob = employee(deleter, 102)
        _ = try bob.value(forKey: "age")
        let changer = store.context()
        try employee(changer, 102).setValue(77, forKey: "age")
        try changer.save()
        try deleter.delete(bob)
        try deleter.save()
        #expect(!deleter.hasChanges)
        #expect(bob.isDeleted == !expected.rowStays)
        if expected.rowStays {
            #expect(try storeValue(store, 102, "age") == 77)
            #expect(try bob.value(forKey: "age") == 77)
        } else {
            #expect(try store.context().count(for: FetchRequest(entityName: "Employee")) == 59)
        }
    }

    @Test(arguments: StoreKind.allCases)
    func aRefetchKeepsTheSnapshotOfAChangedObject(_ kind: StoreKind) throws {
        let store = try kind.make()
        let mine = store.context()
        let alice = employee(mine, 101)
        try alice.setValue(59, forKey: "age")
        let theirs = store.context()
        try employee(theirs, 101).setValue(1.0, forKey: "salary")
        try theirs.save()
        var request = FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")
        request.returnsObjectsAsFaults = false
        request.includesPendingChanges = false
        #expect(try mine.fetch(request).first === alice)
        #expect(try alice.value(forKey: "salary") == 250_000.0)  // what this context read
        #expect(throws: StoreError.self) { try mine.save() }       // checked against that version
    }

    @Test(arguments: StoreKind.allCases)
    func deletingWhatAnotherContextDeletedIsFine(_ kind: StoreKind) throws {
        let store = try kind.make()
        let first = store.context()
        let second = store.context()
        _ = try employee(second, 140).value(forKey: "age")
        try first.delete(employee(first, 140))
        try first.save()
        try second.delete(employee(second, 140))
        try second.save()
        #expect(try store.context().count(for: FetchRequest(entityName: "Employee")) == 59)
    }

    @Test func foldedCompanionColumnsFollowEverySave() throws {
        let store = try StoreKind.sqlite.make(try PlannerTests.canonicalDataSet())
        let context = store.context()
        let inserted = try newEmployee(context, "Önder Ünal")
        try employee(context, 101).setValue("Ångström", forKey: "name")
        try context.save()
        // Overwrite after a conflict writes every column, companions included.
        let mine = store.context()
        mine.mergePolicy = .overwrite
        let carol = employee(mine, 103)
        _ = try carol.value(forKey: "name")
        let theirs = store.context()
        try employee(theirs, 103).setValue("Someone Else", forKey: "name")
        try theirs.save()
        try carol.setValue("Çelik", forKey: "name")
        try mine.save()
        func ids(_ predicate: String) throws -> [Int64] {
            var request = FetchRequest(entityName: "Employee", predicate: predicate)
            request.includesPendingChanges = false
            let sqlite = try #require(store.store as? SQLiteStore)
            #expect(try sqlite.sqlQuery(for: request).sql.contains("Z_FOLD"))
            return try store.context().fetchObjectIDs(request).map(\.primaryKey)
        }
        #expect(try ids("name BEGINSWITH[cd] 'onder u'") == [inserted.objectID.primaryKey])
        #expect(try ids("name ==[cd] 'angstrom'") == [101])
        #expect(try ids("name ==[c] 'çelik'") == [103])
        #expect(try ids("name ==[cd] 'someone else'").isEmpty)
    }

    @Test(arguments: StoreKind.allCases)
    func aFaultWhoseRowIsGoneSaysSo(_ kind: StoreKind) throws {
        let store = try kind.make()
        let reader = store.context()
        let carol = employee(reader, 103)  // a fault: not read yet
        let deleter = store.context()
        try deleter.delete(employee(deleter, 103))
        try deleter.save()
        #expect {
            _ = try carol.value(forKey: "age")
        } throws: { error in
            guard case StoreError.objectNotFound(let object) = error else { return false }
            return object.id == 103
        }
    }

    @Test(arguments: StoreKind.allCases)
    func otherContextsMergeWhatWasSaved(_ kind: StoreKind) throws {
        let store = try kind.make()
        let reader = store.context()
        let alice = employee(reader, 101)
        let bob = employee(reader, 102)
        #expect(try alice.value(forKey: "age") == 58)
        _ = try bob.value(forKey: "age")
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        let writer = store.context()
        try employee(writer, 101).setValue(60, forKey: "age")
        try writer.delete(employee(writer, 102))
        try writer.save()
        let changes = try #require(announced.all.first)
        #expect(changes.updated.contains(ObjectID(entity: 1, primaryKey: 101)))
        #expect(changes.deleted.contains(ObjectID(entity: 1, primaryKey: 102)))
        try reader.mergeChanges(from: changes)
        #expect(try alice.value(forKey: "age") == 60)
        #expect(bob.isDeleted)
        // After a reset, objects come back by ID with an IN predicate.
        reader.reset()
        let ids = [101, 103].map { PredicateValue.object(ObjectReference(entity: "Employee", id: $0)) }
        let again = try reader.fetch(FetchRequest(entityName: "Employee", predicate: "SELF IN %@", arguments: [.array(ids)]))
        #expect(again.map(\.objectID.primaryKey) == [101, 103])
    }

    @Test(arguments: StoreKind.allCases)
    func mergeKeepsUnsavedEditsAsThePolicySays(_ kind: StoreKind) throws {
        let store = try kind.make()
        let reader = store.context()
        reader.mergePolicy = .storeTrump
        let alice = employee(reader, 101)
        try alice.setValue(1, forKey: "age")
        try alice.setValue("Mine", forKey: "name")
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        let writer = store.context()
        try employee(writer, 101).setValue(70, forKey: "age")
        try writer.save()
        try reader.mergeChanges(from: try #require(announced.all.first))
        #expect(try alice.value(forKey: "age") == 70)       // the store changed it: its value wins
        #expect(try alice.value(forKey: "name") == "Mine")  // untouched in the store: the edit stays
        try reader.save()                                   // no conflict: the snapshot is current
        #expect(try storeValue(store, 101, "name") == "Mine")
    }
}

/// Collects store announcements from any thread.
final class Announcements: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [StoreChanges] = []
    func append(_ changes: StoreChanges) {
        lock.lock()
        items.append(changes)
        lock.unlock()
    }
    var all: [StoreChanges] {
        lock.lock()
        defer { lock.unlock() }
        return items
    }
}
