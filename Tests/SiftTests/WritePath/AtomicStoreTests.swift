// The atomic store: the conformance corpus through the memory lowering over
// the file it loaded, saves that replace the whole file atomically, and the
// errors of opening and writing files.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Atomic store")
struct AtomicStoreTests {
    /// The company fixture file itself, opened read-only (nothing here saves).
    static let companyStore: AtomicStore<DataSetFormat> = {
        do {
            guard let url = Bundle.module.url(forResource: "Fixtures/company.json", withExtension: nil) else {
                throw FixtureError.missing("company.json")
            }
            return try AtomicStore(url: url)
        } catch {
            fatalError("company.json does not open as an atomic store: \(error)")
        }
    }()

    @Test("Atomic store agrees with the corpus", arguments: CorpusCase.all)
    func corpus(_ testCase: CorpusCase) throws {
        var request = FetchRequest(entityName: testCase.entity, predicate: testCase.predicate,
                                   arguments: testCase.args ?? [])
        request.includesPendingChanges = false
        let ids: [Int64]
        do {
            ids = try ObjectContext(store: Self.companyStore).fetchObjectIDs(request).map(\.primaryKey)
        } catch {
            guard case .invalidPredicate(let compileError, _) = error else { throw error }
            #expect(testCase.expect == .error(compileError.kind))
            return
        }
        #expect(testCase.expect == .matches(ids), "\(testCase.predicate)")
    }

    @Test func savesSurviveReopening() throws {
        let test = try StoreKind.atomic.make()
        let url = try #require(test.file)
        let context = test.context()
        let alice = context.object(for: ObjectID(entity: 1, primaryKey: 101))
        try alice.setValue(59, forKey: "age")
        try context.delete(context.object(for: ObjectID(entity: 1, primaryKey: 102)))
        let legal = context.object(for: ObjectID(entity: 0, primaryKey: 6))
        let newcomer = try context.insert("Employee")
        for (key, value) in [("name", "Newcomer"), ("age", 25), ("salary", 1.5), ("isManager", false),
                             ("startDate", PredicateValue.date(Date(timeIntervalSinceReferenceDate: 0)))]
            as [(String, PredicateValue)] {
            try newcomer.setValue(value, forKey: key)
        }
        try newcomer.setObject(legal, forKey: "department")
        try context.save()

        let reopened = ObjectContext(store: try AtomicStore(url: url, model: Company.model))
        let count = try reopened.count(for: FetchRequest(entityName: "Employee"))
        #expect(count == 60)
        #expect(try reopened.object(for: ObjectID(entity: 1, primaryKey: 101)).value(forKey: "age") == 59)
        let found = try reopened.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Newcomer'"))
        #expect(found.map(\.objectID.primaryKey) == [newcomer.objectID.primaryKey])
        #expect(try found.first?.object(forKey: "department")?.value(forKey: "name")
            == legal.value(forKey: "name"))
        #expect(try reopened.fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: "SELF == %@",
                                                         arguments: [.object(ObjectReference(entity: "Employee", id: 102))])).isEmpty)
        // Nothing but the store file was left in its folder.
        let siblings = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path)
        #expect(!siblings.contains { $0.hasPrefix(".\(url.lastPathComponent)") })
    }

    @Test func aFailedWriteChangesNothing() throws {
        let test = try StoreKind.atomic.make()
        let url = try #require(test.file)
        let context = test.context()
        let alice = context.object(for: ObjectID(entity: 1, primaryKey: 101))
        try alice.setValue(1, forKey: "age")
        // A folder where the file was: the rename over it fails.
        try FileManager.default.removeItem(at: url)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: false)
        #expect {
            try context.save()
        } throws: { error in
            guard case StoreError.cannotWrite(let path, _) = error else { return false }
            return path == url.path
        }
        #expect(context.hasChanges)
        let other = test.context()
        test.rowCache.removeAll()
        #expect(try other.object(for: ObjectID(entity: 1, primaryKey: 101)).value(forKey: "age") == 58)
        // Once the path is writable again, the same save goes through.
        try FileManager.default.removeItem(at: url)
        try context.save()
        let reopened = ObjectContext(store: try AtomicStore(url: url))
        #expect(try reopened.object(for: ObjectID(entity: 1, primaryKey: 101)).value(forKey: "age") == 1)
    }

    @Test func aValueWithNoJSONFormIsRefusedNotDropped() throws {
        let test = try StoreKind.atomic.make()
        let context = test.context()
        try context.object(for: ObjectID(entity: 1, primaryKey: 101)).setValue(.double(.infinity), forKey: "salary")
        #expect {
            try context.save()
        } throws: { error in
            guard case StoreError.cannotWrite(_, let reason) = error else { return false }
            return reason.contains("salary")
        }
        // The file still opens, with the old value.
        let reopened = ObjectContext(store: try AtomicStore(url: try #require(test.file)))
        #expect(try reopened.object(for: ObjectID(entity: 1, primaryKey: 101)).value(forKey: "salary") == 250_000.0)
    }

    @Test func openingErrorsAreTyped() throws {
        let folder = FileManager.default.temporaryDirectory
        let missing = folder.appendingPathComponent("sift-missing-\(UUID().uuidString).json")
        #expect {
            _ = try AtomicStore(url: missing)
        } throws: { error in
            if case StoreError.noModel = error { return true } else { return false }
        }
        let garbage = folder.appendingPathComponent("sift-garbage-\(UUID().uuidString).json")
        try Data("{ not json".utf8).write(to: garbage)
        defer { try? FileManager.default.removeItem(at: garbage) }
        #expect {
            _ = try AtomicStore(url: garbage)
        } throws: { error in
            if case StoreError.invalidDataSet = error { return true } else { return false }
        }
        let other = try DataModel([Entity("Thing", attributes: [Attribute("name", .string)])])
        let test = try StoreKind.atomic.make()
        #expect {
            _ = try AtomicStore(url: try #require(test.file), model: other)
        } throws: { error in
            if case StoreError.modelMismatch = error { return true } else { return false }
        }
    }
}
