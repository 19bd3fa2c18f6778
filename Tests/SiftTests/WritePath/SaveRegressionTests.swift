// Regressions found reviewing the save-as-a-value redesign: links written
// before deletes, conflicts whose resolution keeps the store's row reading
// it afresh, deletes of rows already gone announced, observers that look the
// saved objects up, keys at the end of Int64, and negative limits.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Save regressions")
struct SaveRegressionTests {
    static let tagsModel = try! DataModel([
        Entity("Article", attributes: [Attribute("title", .string)],
               relationships: [Relationship("tags", to: "Tag", toMany: true, inverse: "articles")]),
        Entity("Tag", attributes: [Attribute("name", .string)],
               relationships: [Relationship("articles", to: "Article", toMany: true, inverse: "tags", deleteRule: .noAction)]),
    ])

    @Test("A link added to an object deleted in the same save leaves no link behind", arguments: StoreKind.allCases)
    func linkToADeletedObject(_ kind: StoreKind) throws {
        let store = try kind.make(try DataSet(model: Self.tagsModel, objects: [
            "Article": [["id": 1, "title": "A"]], "Tag": [["id": 1, "name": "T"]],
        ]))
        let context = store.context()
        let article = context.object(for: ObjectID(entity: 0, primaryKey: 1))
        let tag = context.object(for: ObjectID(entity: 1, primaryKey: 1))
        try article.addObject(tag, forKey: "tags")
        try context.delete(tag)
        try context.save()
        let fresh = store.context()
        let again = fresh.object(for: ObjectID(entity: 0, primaryKey: 1))
        #expect(try again.objects(forKey: "tags").isEmpty)
    }

    @Test("Inserted objects are found by their temporary IDs, then by their permanent ones, and a dropped one goes",
          arguments: StoreKind.allCases)
    func insertedObjectsByIdentity(_ kind: StoreKind) throws {
        let store = try kind.make(try DataSet(model: Self.tagsModel, objects: ["Article": [], "Tag": []]))
        let context = store.context()
        // Enough for several pages of temporary keys, and one dropped before the save.
        let inserted = try (0..<300).map { index in
            let tag = try context.insert("Tag")
            try tag.setValue(.string("t\(index)"), forKey: "name")
            return tag
        }
        let article = try context.insert("Article")
        try article.setValue(.string("A"), forKey: "title")
        for tag in inserted.prefix(70) { try article.addObject(tag, forKey: "tags") }
        for tag in inserted { #expect(context.object(for: tag.objectID) === tag) }
        try context.delete(inserted[150])
        #expect(context.registeredObjectCount == 300)
        let temporary = inserted.map(\.objectID)
        try context.save()
        for (index, tag) in inserted.enumerated() where index != 150 {
            #expect(tag.objectID.primaryKey > 0)
            #expect(context.object(for: tag.objectID) === tag)
            #expect(context.object(for: temporary[index]) !== tag)
        }
        let fresh = store.context()
        let names = try fresh.fetch(FetchRequest(entityName: "Tag")).compactMap { $0["name"]?.stringValue }
        #expect(names.count == 299 && !names.contains("t150"))
        #expect(try fresh.object(for: article.objectID).objects(forKey: "tags").count == 70)
    }

    @Test("A conflict the policy resolves for the store reads the store's row, not a cached one", arguments: [
        MergePolicy.rollback, .storeTrump,
    ])
    func discardedChangesReadTheStoresRow(_ policy: MergePolicy) throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("company.sqlite")
        try SQLiteStore(url: url, model: Company.model).importDataSet(Company.dataSet)
        let here = try SQLiteStore(url: url)
        let elsewhere = try SQLiteStore(url: url)  // another process, as far as `here` knows
        let id = ObjectID(entity: Company.model.entity(named: "Employee")!.index, primaryKey: 101)
        let holder = ObjectContext(store: here)
        _ = try holder.object(for: id).value(forKey: "age")  // keeps the node it read in the cache
        let mine = ObjectContext(store: here)
        mine.mergePolicy = policy
        let alice = mine.object(for: id)
        _ = try alice.value(forKey: "age")
        let theirs = ObjectContext(store: elsewhere)
        try theirs.object(for: id).setValue(77, forKey: "age")
        try theirs.save()
        if policy == .storeTrump {
            try mine.delete(alice)  // deleted here, changed there: the store's row stays
        } else {
            try alice.setValue(1, forKey: "age")
        }
        try mine.save()
        #expect(!alice.isDeleted)
        #expect(try alice.value(forKey: "age") == 77)
    }

    @Test("Deleting rows another save deleted is announced", arguments: StoreKind.allCases)
    func deletesOfGoneRowsAreAnnounced(_ kind: StoreKind) throws {
        let store = try kind.make()
        let id = ObjectID(entity: Company.model.entity(named: "Employee")!.index, primaryKey: 160)
        let mine = store.context()
        let object = mine.object(for: id)
        _ = try object.value(forKey: "age")
        let theirs = store.context()
        try theirs.delete(theirs.object(for: id))
        try theirs.save()
        let announced = Announcements()
        let observation = store.store.addObserver { announced.append($0) }
        defer { observation.cancel() }
        try mine.delete(object)
        try mine.save()
        #expect(announced.all.map(\.deleted).contains { $0.contains(id) })
    }

    @Test("Observers find the saved objects under their permanent IDs", arguments: StoreKind.allCases)
    func observersSeeTheSavedContext(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let box = ContextBox(context)
        let department = try context.insert("Department")
        try department.setValue("New", forKey: "name")
        try department.setValue(1, forKey: "budget")
        let inserted = ObjectBox(department)
        let found = Announcements()
        let observation = store.store.addObserver { changes in
            // The saving context's own object, not a second one for the same row.
            for id in changes.inserted where box.context.object(for: id) === inserted.object { found.append(changes) }
        }
        defer { observation.cancel() }
        try context.save()
        #expect(found.all.count == 1)
        #expect(context.object(for: department.objectID) === department)
        #expect(context.registeredObjectCount == 1)
    }

    @Test("A table holding the largest key refuses new keys with a typed error", arguments: StoreKind.allCases)
    func keysRunOut(_ kind: StoreKind) throws {
        let model = try DataModel([Entity("Item", attributes: [Attribute("name", .string, optional: true)])])
        let store = try kind.make(try DataSet(model: model, objects: ["Item": [["id": .int(Int64.max)]]]))
        let context = store.context()
        _ = try context.insert("Item")
        let error = #expect(throws: StoreError.self) { try context.save() }
        guard case .keysExhausted(let entity)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(entity == "Item")
        #expect(context.hasChanges)
    }

    @Test("A negative limit is no limit and a negative offset skips nothing, on every path", arguments: StoreKind.allCases)
    func negativeLimitAndOffset(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        // median(…) runs in memory after SQL: the residual path.
        for predicate in ["age > 50", "median({age, 1}) > 25"] {
            var request = FetchRequest(entityName: "Employee", predicate: predicate)
            let all = try context.fetch(request).count
            request.fetchLimit = -1
            request.fetchOffset = -3
            #expect(try context.fetch(request).count == all)
            _ = try context.insert("Department")  // unsaved changes: the pending-changes path
            request.entityName = "Department"
            request.predicate = nil
            #expect(try context.fetch(request).count == 1 + (try store.context().count(for: FetchRequest(entityName: "Department"))))
            context.rollback()
        }
        // Dictionary fetches, plain and grouped: SQL and memory both read no limit.
        for grouped in [false, true] {
            var request = FetchRequest(entityName: "Employee")
            request.propertiesToFetch = ["age"]
            if grouped { request.propertiesToGroupBy = ["age"] }
            let all = try context.fetchDictionaries(request).count
            #expect(all > 1)
            request.fetchLimit = -1
            request.fetchOffset = -3
            #expect(try context.fetchDictionaries(request).count == all)
        }
    }
}

/// Hands an object to an observer in a test.
final class ObjectBox: @unchecked Sendable {
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }
}

/// Hands a context to an observer in a test (observers are `@Sendable`).
final class ContextBox: @unchecked Sendable {
    let context: ObjectContext
    init(_ context: ObjectContext) { self.context = context }
}
