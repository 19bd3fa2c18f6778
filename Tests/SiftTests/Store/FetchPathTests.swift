// The fetch path: uniquing, faults and what fires them, batch faulting,
// relationship faults, prefetching (statement counts), staleness, reference
// counting and purge, sort/limit/offset/batch, result types, injection. The
// fetch path's tests run on every SQL store: SQLite, and PostgreSQL when a
// server is configured (the same statement counts there).

import Foundation
import Sift
import SiftDemo
import SiftPostgres
import SiftStore
import Testing

/// A SQL store for the fetch path's tests, with its statement count.
struct SQLStoreUnderTest {
    let test: TestStore
    let statementCount: () -> Int

    var rowCache: RowCache { test.rowCache }
    func context() -> ObjectContext { test.context() }
}

/// The SQL stores this run can make.
enum SQLStoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, postgres

    static var allCases: [SQLStoreKind] { StoreKind.postgresURL == nil ? [.sqlite] : [.sqlite, .postgres] }

    var testDescription: String { rawValue }

    /// A store with the company, its row cache empty.
    func fresh() throws -> SQLStoreUnderTest {
        let test = try (self == .sqlite ? StoreKind.sqlite : StoreKind.postgres).make()
        test.rowCache.removeAll()
        if let sqlite = test.store as? SQLiteStore { return SQLStoreUnderTest(test: test) { sqlite.statementCount } }
        let postgres = test.store as! PostgresStore
        return SQLStoreUnderTest(test: test) { postgres.statementCount }
    }
}

@Suite("Fetch path")
struct FetchPathTests {
    /// A fresh store per test, so statement counts and the row cache start clean.
    func freshStore() throws -> SQLiteStore {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        store.rowCache.removeAll()
        return store
    }

    func statements(_ store: SQLiteStore, _ body: () throws -> Void) rethrows -> Int {
        let before = store.statementCount
        try body()
        return store.statementCount - before
    }

    func statements(_ store: SQLStoreUnderTest, _ body: () throws -> Void) rethrows -> Int {
        let before = store.statementCount()
        try body()
        return store.statementCount() - before
    }

    @Test(arguments: SQLStoreKind.allCases)
    func uniquing(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let a = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 55"))
        let b = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 20"))
        let first = try #require(a.first)
        #expect(b.contains { $0 === first })
        let manager = try #require(try b.first { $0.objectID.primaryKey == 102 }?.object(forKey: "manager"))
        #expect(manager === a.first { $0.objectID.primaryKey == 101 })
        #expect(context.object(for: first.objectID) === first)
    }

    @Test("A fetch handed over as batches gives the objects and values a fetch through nodes gives, into an empty context or one that already holds objects of the table")
    func batchesHandedOverGiveWhatNodesGive() throws {
        let request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        // The answer through nodes: a context whose table already holds an object.
        let holding = ObjectContext(store: try freshStore())
        _ = holding.object(for: ObjectID(entity: 1, primaryKey: 101))
        let expected = try holding.fetch(request).map { [$0.objectID.primaryKey: try $0.value(forKey: "name")] }
        #expect(expected.count > RowCollector.fewRows)
        let empty = ObjectContext(store: try freshStore())
        // An unsaved insert: the context holds an object of the table before the fetch.
        let inserting = ObjectContext(store: try freshStore())
        try inserting.insert("Employee").setValue("Zed", forKey: "name")
        for context in [empty, inserting] {
            let objects = try context.fetch(request)
            let saved = objects.filter { !$0.isInserted }
            #expect(objects.count == saved.count + (context === inserting ? 1 : 0))
            #expect(try saved.map { [$0.objectID.primaryKey: try $0.value(forKey: "name")] } == expected)
            // Uniqued: the same objects by ID and by a second fetch.
            for object in saved { #expect(context.object(for: object.objectID) === object) }
            let again = try context.fetch(request)
            #expect(again.count == objects.count && zip(again, objects).allSatisfy { $0 === $1 })
        }
    }

    @Test(arguments: SQLStoreKind.allCases)
    func faultsFireOnlyWhenValuesAreRead(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let id = ObjectID(entity: 1, primaryKey: 101)
        let object = context.object(for: id)
        let quiet = statements(store) {
            #expect(object.isFault)
            #expect(object.objectID == id)
            #expect(object.entity.name == "Employee")
            #expect(object.description.contains("fault"))
        }
        #expect(quiet == 0)
        var name: PredicateValue?
        let firing = try statements(store) { name = try object.value(forKey: "name") }
        #expect(firing == 1)
        #expect(name == "Alice Anderson")
        #expect(!object.isFault)
        let count1 = try statements(store) { _ = try object.value(forKey: "age") }
        #expect(count1 == 0)
    }

    @Test(arguments: SQLStoreKind.allCases)
    func fetchedFaultsFireFromTheRowCache(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let objects = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 55"))
        #expect(objects.allSatisfy { $0.isFault })
        let count2 = try statements(store) { for o in objects { _ = try o.value(forKey: "age") } }
        #expect(count2 == 0)
    }

    @Test(arguments: SQLStoreKind.allCases)
    func batchFaultingUsesOneStatement(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let faults = (101...130).map { context.object(for: ObjectID(entity: 1, primaryKey: Int64($0))) }
        let count3 = try statements(store) { try context.fireFaults(faults) }
        #expect(count3 == 1)
        #expect(faults.allSatisfy { !$0.isFault })
    }

    @Test(arguments: SQLStoreKind.allCases)
    func batchSizeFetchesIDsThenRowsInBatches(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("age"), FetchSortDescriptor("name")])
        request.fetchBatchSize = 20
        var objects: [ManagedObject] = []
        let count4 = try statements(store) { objects = try context.fetch(request) }
        #expect(count4 == 1)
        #expect(objects.count == 60)
        #expect(objects.allSatisfy { $0.isFault })
        let count5 = try statements(store) { _ = try objects[25].value(forKey: "name") }
        #expect(count5 == 1)
        #expect(objects[20..<40].allSatisfy { !$0.isFault })
        #expect(objects[0..<20].allSatisfy { $0.isFault })
        let count6 = try statements(store) { for o in objects[20..<40] { _ = try o.value(forKey: "age") } }
        #expect(count6 == 0)
        // Batched results keep the request's order.
        let ages = try objects.map { try $0.value(forKey: "age") }
        #expect(ages == ages.sorted { ValueComparison.order($0, $1)! < 0 || $0 == $1 })
    }

    @Test(arguments: SQLStoreKind.allCases)
    func relationshipFaults(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let alice = context.object(for: ObjectID(entity: 1, primaryKey: 101))
        let department = try #require(try alice.object(forKey: "department"))
        #expect(department.isFault)
        #expect(try department.value(forKey: "name") == "Engineering")
        var reports: [ManagedObject] = []
        let count7 = try statements(store) { reports = try alice.objects(forKey: "reports") }
        #expect(count7 == 1)
        let expected = try #require(Company.cache.node(ObjectID(entity: 1, primaryKey: 101))?.toMany[0])
        #expect(reports.map(\.objectID.primaryKey) == expected.sorted())
        #expect(!reports.isEmpty)
        let count8 = try statements(store) { _ = try alice.objects(forKey: "reports") }
        #expect(count8 == 0)
        #expect(try alice.objects(forKey: "tags").map(\.objectID.primaryKey) == [4, 6, 7])
        #expect(throws: StoreError.self) { try alice.objects(forKey: "department") }
    }

    @Test(arguments: SQLStoreKind.allCases)
    func prefetchingTakesOneStatementPerKeyPath(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        var request = FetchRequest(entityName: "Employee", predicate: "age > 30")
        request.relationshipKeyPathsForPrefetching = ["department", "reports", "tags", "manager.department"]
        var objects: [ManagedObject] = []
        // 1 fetch + department + reports + tags + manager + manager.department
        let count9 = try statements(store) { objects = try context.fetch(request) }
        #expect(count9 == 6)
        let touched = try statements(store) {
            for object in objects {
                _ = try object.object(forKey: "department")?.value(forKey: "name")
                for report in try object.objects(forKey: "reports") { _ = try report.value(forKey: "age") }
                for tag in try object.objects(forKey: "tags") { _ = try tag.value(forKey: "name") }
                _ = try object.object(forKey: "manager")?.object(forKey: "department")?.value(forKey: "budget")
            }
        }
        #expect(touched == 0)
    }

    @Test("A fault fetched with its row fires with the cache's row: the fetched one, or the one another save left, or a fresh read when stale",
          arguments: SQLStoreKind.allCases)
    func fetchedFaultsFireWithTheCachesRow(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        // Fetched as faults into a new context: they hold their rows, registered.
        let reader = store.context()
        let faults = try reader.fetch(request)
        #expect(faults.count > 2 && faults.allSatisfy(\.isFault))
        #expect(store.rowCache.referenceCount(faults[0].objectID) == 1)
        let untouched = try statements(store) { _ = try faults[0].value(forKey: "age") }
        #expect(untouched == 0 && !faults[0].isFault)
        // Another context saves one of them: the fault fires with the saved row.
        let writer = store.context()
        let other = writer.object(for: faults[1].objectID)
        let age = try #require(try other.value(forKey: "age").intValue)
        try other.setValue(.int(Int64(age) + 1), forKey: "age")
        try writer.save()
        #expect(faults[1].isFault)
        #expect(try faults[1].value(forKey: "age") == .int(Int64(age) + 1))
        // Stale in a strict context: read again.
        let strict = store.context()
        strict.stalenessInterval = 0
        let strictFaults = try strict.fetch(request)
        Thread.sleep(forTimeInterval: 0.01)
        let read = try statements(store) { _ = try strictFaults[2].value(forKey: "age") }
        #expect(read == 1)
        // A context released gives its faults' registrations back.
        let id = faults[0].objectID
        let before = store.rowCache.referenceCount(id)
        func fetchAndRelease() throws {
            let scoped = store.context()
            let held = try scoped.fetch(request)
            #expect(store.rowCache.referenceCount(id) == before + 1)
            withExtendedLifetime((scoped, held)) {}
        }
        try fetchAndRelease()
        #expect(store.rowCache.referenceCount(id) == before)
        withExtendedLifetime((reader, writer, strict, faults, strictFaults)) {}
    }

    @Test(arguments: SQLStoreKind.allCases)
    func staleNodesAreRefetched(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let id = ObjectID(entity: 1, primaryKey: 101)
        let holder = store.context()
        _ = try holder.object(for: id).value(forKey: "age")  // keeps the node cached
        Thread.sleep(forTimeInterval: 0.01)
        let strict = store.context()
        strict.stalenessInterval = 0
        let refetched = try statements(store) { _ = try strict.object(for: id).value(forKey: "age") }
        #expect(refetched == 1)
        let trusting = store.context()
        let cached = try statements(store) { _ = try trusting.object(for: id).value(forKey: "age") }
        #expect(cached == 0)
    }

    @Test(arguments: SQLStoreKind.allCases)
    func referenceCountsAndPurge(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let id = ObjectID(entity: 1, primaryKey: 101)
        let one = store.context()
        let two = store.context()
        _ = try one.object(for: id).value(forKey: "age")
        _ = try two.object(for: id).value(forKey: "age")
        #expect(store.rowCache.referenceCount(id) == 2)
        one.refresh(one.object(for: id))
        #expect(store.rowCache.node(id) != nil)
        #expect(one.object(for: id).isFault)
        two.reset()
        #expect(store.rowCache.referenceCount(id) == 0)
        #expect(store.rowCache.node(id) == nil)
        #expect(two.registeredObjectCount == 0)
    }

    @Test(arguments: SQLStoreKind.allCases)
    func sortLimitOffset(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        func ids(_ request: FetchRequest) throws -> [Int64] { try context.fetch(request).map(\.objectID.primaryKey) }
        let byAge = FetchRequest(entityName: "Employee", predicate: "age > 55",
                                 sortDescriptors: [FetchSortDescriptor("age", ascending: false), FetchSortDescriptor("name")])
        let all = try ids(byAge)
        var limited = byAge
        limited.fetchLimit = 3
        limited.fetchOffset = 2
        #expect(try ids(limited) == Array(all[2..<5]))
        let ages = try context.fetch(byAge).map { try $0.value(forKey: "age") }
        #expect(ages == ages.sorted { (ValueComparison.order($0, $1) ?? 0) > 0 || $0 == $1 })
        // Sorting through a to-one path, and case-insensitively.
        let byDepartment = FetchRequest(entityName: "Employee", predicate: "department != nil",
                                        sortDescriptors: [FetchSortDescriptor("department.name"), FetchSortDescriptor("name", caseInsensitive: true)])
        let names = try context.fetch(byDepartment).map { try $0.object(forKey: "department")!.value(forKey: "name") }
        #expect(names == names.sorted { (ValueComparison.order($0, $1) ?? 0) < 0 || $0 == $1 })
    }

    @Test(arguments: SQLStoreKind.allCases)
    func resultTypes(_ kind: SQLStoreKind) throws {
        let store = try kind.fresh()
        let context = store.context()
        let request = FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'")
        #expect(try context.count(for: request) == 5)
        #expect(try context.fetchObjectIDs(request).map(\.primaryKey) == [102, 112, 116, 129, 160])
        let rows = try context.fetchDictionaries(request, properties: ["name", "department"])
        #expect(rows.first?["name"] == "bob baker")
        #expect(rows.first?["department"] == .object(ObjectReference(entity: "Department", id: 2)))
        var limited = request
        limited.fetchLimit = 2
        #expect(try context.count(for: limited) == 2)
    }

    @Test func injectionNeverAltersTheSQL() throws {
        let store = try freshStore()
        let context = ObjectContext(store: store)
        let hostile = ["'; DROP TABLE \"Employee\"; --", "\" OR 1=1 --", "x'); DELETE FROM Employee; --", "%%%", "_;_", "\\\\"]
        for text in hostile {
            let request = FetchRequest(entityName: "Employee", predicate: "name == %@ OR name BEGINSWITH %@ OR name IN %@",
                                       arguments: [.string(text), .string(text), [.string(text)]])
            let query = try store.sqlQuery(for: request)
            #expect(!query.sql.contains(text))
            #expect(try context.fetch(request).isEmpty)
        }
        let quoted = FetchRequest(entityName: "Employee", predicate: "name == 'it''s' OR name == \"Say \\\"Hi\\\"\"")
        _ = quoted
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
    }

    @Test func storesRememberTheirModel() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-\(UUID()).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        do {
            let store = try SQLiteStore(url: url, model: Company.model)
            try store.importDataSet(Company.dataSet)
        }
        let reopened = try SQLiteStore(url: url)
        #expect(reopened.model == Company.model)
        #expect(try ObjectContext(store: reopened).count(for: FetchRequest(entityName: "Tag")) == 11)
        let other = try DataModel([Entity("Other", attributes: [Attribute("x", .string)])])
        #expect {
            try SQLiteStore(url: url, model: other)
        } throws: { error in
            if case StoreError.modelMismatch = error { return true }
            return false
        }
    }

    @Test func whatSQLCannotExpressIsReportedAtItsSource() throws {
        let store = try freshStore()
        let request = FetchRequest(entityName: "Employee", predicate: "age > 3 AND median({age, salary}) > 40")
        do {
            _ = try store.sqlQuery(for: request)
            Issue.record("median should not lower to SQL")
        } catch {
            guard case .notExpressibleInSQL(let e, let range, _) = error else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(e.construct == "the function median")
            #expect(range == SourceRange(12, 33))
            #expect("\(error)".contains("1:13"))
        }
    }

    @Test func invalidPredicatesAreReportedWithTheirText() throws {
        let context = ObjectContext(store: try freshStore())
        #expect {
            try context.fetch(FetchRequest(entityName: "Employee", predicate: "agee > 3"))
        } throws: { error in
            "\(error)".contains("did you mean 'age'?")
        }
    }
}

@Suite("SQLite connection")
struct SQLiteConnectionTests {
    @Test func valuesRoundTripThroughBoundParameters() throws {
        let db = try SQLiteConnection()
        try db.execute("CREATE TABLE t (a)")
        let values: [SQLValue] = [.null, .integer(.min), .real(-0.5), .text("it's; -- \"quoted\""), .blob(Data([0, 255]))]
        for value in values { _ = try db.query("INSERT INTO t (a) VALUES (?1)", [value]) }
        #expect(try db.query("SELECT a FROM t ORDER BY rowid").map { $0[0] } == values)
    }

    @Test("A cached statement run with fewer values than parameters reads NULL for the rest, not the last run's")
    func parametersLeftOutAreNull() throws {
        let db = try SQLiteConnection()
        let long = String(repeating: "x", count: 70_000)
        #expect(try db.query("SELECT ?1, ?2", [.integer(1), .text(long)]) == [[.integer(1), .text(long)]])
        #expect(try db.query("SELECT ?1, ?2", [.integer(2), .text("b")]) == [[.integer(2), .text("b")]])
        #expect(try db.query("SELECT ?1, ?2", [.integer(3)]) == [[.integer(3), .null]])
        #expect(try db.query("SELECT ?1, ?2", []) == [[.null, .null]])
    }

    @Test func errorsCarryCodeMessageAndSQL() throws {
        let db = try SQLiteConnection()
        do {
            _ = try db.query("SELECT * FROM missing")
            Issue.record("expected an error")
        } catch let error as SQLiteError {
            #expect(error.code == 1)
            #expect(error.message == "no such table: missing")
            #expect(error.sql == "SELECT * FROM missing")
        }
    }

    @Test func statementsAreCachedAndCounted() throws {
        let db = try SQLiteConnection()
        let a = try db.statement("SELECT 1")
        let b = try db.statement("SELECT 1")
        #expect(a === b)
        let before = db.statementCount
        _ = try db.query("SELECT 1")
        #expect(db.statementCount == before + 1)
    }

    @Test func transactionsRollBackOnError() throws {
        let db = try SQLiteConnection()
        try db.execute("CREATE TABLE t (a)")
        struct Failure: Error {}
        #expect(throws: Failure.self) {
            try db.transaction {
                _ = try db.query("INSERT INTO t VALUES (1)")
                throw Failure()
            }
        }
        #expect(try db.query("SELECT COUNT(*) FROM t").first?.first == .integer(0))
    }

    @Test func registeredFunctions() throws {
        let db = try SQLiteConnection()
        try db.registerFunction("twice", arity: 1) { args in
            if case .integer(let i) = args[0] { return .integer(i * 2) }
            return .null
        }
        #expect(try db.query("SELECT twice(?1)", [.integer(21)]).first?.first == .integer(42))
    }
}

@Suite("Reading by a resolved attribute")
struct AttributeHandleTests {
    @Test("A handle, an Attribute and a name read the same value: snapshot, unsaved change, inserted object")
    func handlesReadWhatNamesRead() throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        let employee = try #require(context.model.entity(named: "Employee"))
        let objects = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 50"))
        #expect(!objects.isEmpty)
        for name in ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"] {
            let handle = try #require(employee.handle(forAttribute: name))
            let attribute = try #require(employee.attribute(named: name))
            for object in objects {
                let byName = try object.value(forKey: name)
                #expect(try object.value(for: handle) == byName)
                #expect(object[attribute] == byName)
            }
        }
        let age = try #require(employee.handle(forAttribute: "age"))
        try objects[0].setValue(99, forKey: "age")
        #expect(objects[0][age] == 99)
        let hire = try context.insert("Employee")
        try hire.setValue(23, forKey: "age")
        #expect(hire[age] == 23)
        #expect(employee.handle(forAttribute: "salry") == nil)
        // A handle of another entity reads by its name: nil where the object has no such attribute.
        let budget = try #require(context.model.entity(named: "Department")?.handle(forAttribute: "budget"))
        #expect(objects[0][budget] == nil)
        let departmentName = try #require(context.model.entity(named: "Department")?.handle(forAttribute: "name"))
        #expect(objects[0][departmentName] == (try objects[0].value(forKey: "name")))
    }

    // An object holds its snapshot's batch by a reference it retains and
    // releases itself (reads borrow it): the batch must live as long as the
    // object needs it, and a replaced snapshot must let go of the old one.
    @Test("An object's snapshot outlives the cache and the fetch that made it, and a refresh replaces it")
    func snapshotsOutliveTheirFetch() throws {
        let store = try StoreKind.sqlite.make()
        let employee = try #require(store.context().model.entity(named: "Employee"))
        let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
        let handles = try names.map { try #require(employee.handle(forAttribute: $0)) }
        var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        request.returnsObjectsAsFaults = false
        var context: ObjectContext? = store.context()
        var expected: [[PredicateValue?]] = []
        var held: [ManagedObject] = []
        do {
            let objects = try context!.fetch(request)
            #expect(objects.count > RowCollector.fewRows, "enough rows to be laid out by column")
            expected = objects.map { object in handles.map { object[$0] } }
            held = objects
        }
        store.rowCache.removeAll()
        // Each read after the cache let go: the same values, by handle and by name.
        for (object, values) in zip(held, expected) {
            #expect(handles.map { object[$0] } == values)
            #expect(names.map { object[$0] } == values)
        }
        // A refresh drops the snapshot; the next read is the store's row again.
        context!.refresh(held[0])
        #expect(held[0].isFault)
        #expect(handles.map { held[0][$0] } == expected[0])
        // Objects outliving their context release what they hold when they go.
        context = nil
        held = []
        #expect(store.rowCache.count == 0)
    }

    @Test("A to-one read by name sees the snapshot, an unsaved change, a cleared relationship and a refresh")
    func toOneReadsFollowChanges() throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        let employees = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department != nil AND manager != nil"))
        let employee = try #require(employees.first)
        let department = try #require(try employee.object(forKey: "department"))
        #expect(department.entity.name == "Department")
        let colleagues = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department == %@", arguments: [.object(department.reference)]))
        #expect(colleagues.contains { $0 === employee })
        let other = try #require(try context.fetch(FetchRequest(entityName: "Department", predicate: "SELF != %@", arguments: [.object(department.reference)])).first)
        try employee.setObject(other, forKey: "department")
        #expect(try employee.object(forKey: "department") === other)
        try employee.setObject(nil, forKey: "department")
        #expect(try employee.object(forKey: "department") == nil)
        context.rollback()
        #expect(try employee.object(forKey: "department") === department)
        #expect(throws: StoreError.self) { try employee.object(forKey: "departmnt") }
        #expect(throws: StoreError.self) { try employee.object(forKey: "tags") }
    }

    // A read by name finds a literal key by the words of its `String`, and
    // any other key by its characters: both must read the same attribute.
    @Test("A name made at run time reads what the literal reads: long and non-ASCII names, changes, faults, unknown keys",
          arguments: StoreKind.allCases)
    func namesMadeAtRunTime(kind: StoreKind) throws {
        let json = #"""
        {"model": {"entities": [{"name": "Item", "attributes": [
            {"name": "n", "type": "integer64", "optional": true},
            {"name": "aVeryLongAttributeNameIndeed", "type": "string", "optional": true},
            {"name": "größe", "type": "double", "optional": true},
            {"name": "aVeryLongAttributeNameIndeeD", "type": "integer64", "optional": true}]}]},
         "objects": {"Item": [
            {"id": 1, "n": 1, "aVeryLongAttributeNameIndeed": "one", "größe": 1.5, "aVeryLongAttributeNameIndeeD": 10},
            {"id": 2, "n": 2, "aVeryLongAttributeNameIndeed": "two", "größe": 2.5, "aVeryLongAttributeNameIndeeD": 20}]}}
        """#
        let store = try kind.make(try DataSet(json: Data(json.utf8)))
        let context = store.context()
        let items = try context.fetch(FetchRequest(entityName: "Item", sortDescriptors: [FetchSortDescriptor("n")]))
        try #require(items.count == 2)
        // The same names, made from their bytes and by joining pieces: other storage, the same characters.
        func madeAtRunTime(_ name: String) -> String { String(decoding: Array(name.utf8), as: UTF8.self) }
        let long = ["aVeryLong", "Attribute", "NameIndeed"].joined()
        #expect(items[0]["aVeryLongAttributeNameIndeed"] == "one")
        #expect(items[0][long] == "one")
        #expect(items[1][madeAtRunTime("aVeryLongAttributeNameIndeed")] == "two")
        #expect(items[1]["aVeryLongAttributeNameIndeeD"] == 20)
        #expect(items[1][madeAtRunTime("aVeryLongAttributeNameIndeeD")] == 20)
        #expect(items[0]["größe"] == 1.5)
        #expect(items[0][madeAtRunTime("gro\u{308}ße")] == 1.5)   // the decomposed spelling is the same name
        #expect(items[1][madeAtRunTime("n")] == 2)
        #expect(items[0]["N"] == nil)
        #expect(items[0]["aVeryLongAttributeNameIndeedX"] == nil)
        // An unsaved change is read by either key.
        try items[0].setValue(PredicateValue.string("uno"), forKey: long)
        #expect(items[0]["aVeryLongAttributeNameIndeed"] == "uno")
        #expect(items[0][madeAtRunTime(long)] == "uno")
        // A fault fires on its first read by either key.
        let other = store.context()
        let fault = other.object(for: items[1].objectID)
        #expect(fault.isFault)
        #expect(fault[long] == "two")
        #expect(!fault.isFault)
        #expect(fault["größe"] == 2.5)
    }

    // A typed read by handle loads a value its column stores as the type
    // asked for, and converts anything else as the read by name does: the
    // two must agree for every attribute, every type, and every state.
    @Test("A typed read by handle gives what a typed read by name gives: every attribute as every type, changed, inserted, faulted",
          arguments: StoreKind.allCases)
    func typedReadsByHandle(kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let employee = try #require(context.model.entity(named: "Employee"))
        var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        request.returnsObjectsAsFaults = false
        let objects = try context.fetch(request)
        try #require(objects.count > RowCollector.fewRows, "enough rows to be laid out by column")
        let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
        let handles = try names.map { try #require(employee.handle(forAttribute: $0)) }
        func agree(_ object: ManagedObject, sourceLocation: SourceLocation = #_sourceLocation) {
            for (name, handle) in zip(names, handles) {
                func check<T: PredicateValueRepresentable & Equatable>(_ type: T.Type) {
                    #expect(object[handle, as: type] == object[name, as: type], "\(name) as \(type)", sourceLocation: sourceLocation)
                    #expect((try? object.value(for: handle, as: type)) == (try? object.value(forKey: name, as: type)),
                            "\(name) as \(type), throwing", sourceLocation: sourceLocation)
                }
                check(String.self); check(Int.self); check(Int64.self); check(Double.self); check(Float.self)
                check(Bool.self); check(Date.self); check(Decimal.self); check(PredicateValue.self)
            }
        }
        var typedValues = 0
        for object in objects {
            agree(object)
            if object[handles[2], as: Int.self] != nil { typedValues += 1 }
        }
        #expect(typedValues == objects.count, "every age reads as an Int")
        // Nil reads as nil, and a value of another kind throws from the throwing read.
        let withoutNickname = try #require(objects.first { object in object["nickname"] == .null })
        #expect(withoutNickname[handles[1], as: String.self] == nil)
        #expect(throws: StoreError.self) { try objects[0].value(for: handles[0], as: Int.self) }
        #expect(objects[0][handles[2], as: Double.self] == objects[0][handles[2]]?.doubleValue)
        // An unsaved change, an inserted object, a fault firing on its first typed read.
        try objects[0].setValue(PredicateValue.int(99), forKey: "age")
        #expect(objects[0][handles[2], as: Int.self] == 99)
        agree(objects[0])
        let hire = try context.insert("Employee")
        try hire.setValue(PredicateValue.string("Ann"), forKey: "name")
        #expect(hire[handles[0], as: String.self] == "Ann")
        agree(hire)
        let other = store.context()
        let fault = other.object(for: objects[1].objectID)
        #expect(fault.isFault)
        #expect(fault[handles[0], as: String.self] == objects[1][handles[0], as: String.self])
        #expect(!fault.isFault)
        agree(fault)
        withExtendedLifetime(other) {}
        // A handle of another entity reads by its name.
        let budget = try #require(context.model.entity(named: "Department")?.handle(forAttribute: "budget"))
        #expect(objects[1][budget, as: Double.self] == nil)
        let departmentName = try #require(context.model.entity(named: "Department")?.handle(forAttribute: "name"))
        #expect(objects[1][departmentName, as: String.self] == objects[1]["name", as: String.self])
    }

    // A typed read of a string hands out its own reference to the column's
    // storage: long (not small) strings read many times, then the batch
    // freed while the strings read live on.
    @Test("Long strings read by typed handles stay valid, read again and again and after their batch is gone",
          arguments: StoreKind.allCases)
    func longStringsByTypedHandle(kind: StoreKind) throws {
        let texts = (0..<40).map { "A string long enough to live on the heap, number \($0) — ünïcödé" }
        let items = texts.enumerated().map { #"{"id": \#($0.offset + 1), "text": "\#($0.element)"}"# }.joined(separator: ",")
        let json = #"{"model": {"entities": [{"name": "Item", "attributes": [{"name": "text", "type": "string"}]}]}, "objects": {"Item": ["#
            + items + "]}}"
        let store = try kind.make(try DataSet(json: Data(json.utf8)))
        var read: [String?] = []
        do {
            let context = store.context()
            var request = FetchRequest(entityName: "Item")
            request.returnsObjectsAsFaults = false
            let objects = try context.fetch(request)
            let handle = try #require(context.model.entity(named: "Item")?.handle(forAttribute: "text"))
            for _ in 0..<5 { read = objects.map { $0[handle, as: String.self] } }
            withExtendedLifetime(context) {}
        }
        store.rowCache.removeAll()
        #expect(read.compactMap { $0 }.sorted() == texts.sorted())
    }

    @Test("A handle of a parent entity reads a subentity's object, and a subentity's handle reads through a parent's fault")
    func handlesAcrossInheritance() throws {
        let store = try StoreKind.sqlite.make(InheritingCompany.dataSet)
        let context = store.context()
        let model = context.model
        let personName = try #require(model.entity(named: "Person")?.handle(forAttribute: "name"))
        let level = try #require(model.entity(named: "Manager")?.handle(forAttribute: "level"))
        let managers = try context.fetch(FetchRequest(entityName: "Manager"))
        #expect(!managers.isEmpty)
        for manager in managers {
            #expect(manager[personName] == (try manager.value(forKey: "name")))
            #expect(manager[level] == (try manager.value(forKey: "level")))
        }
        // A fault reached as an Employee learns it is a Manager when read.
        let other = store.context()
        let fault = other.object(for: ObjectID(entity: try #require(model.entity(named: "Employee")), primaryKey: managers[0].objectID.primaryKey))
        #expect(fault[level] == (try managers[0].value(forKey: "level")))
    }
}

@Suite("Uniquing by ID")
struct UniquingTests {
    // A context keeps its objects in pages by primary key, and keys the
    // pages do not cover (far, sparse or negative) in a dictionary; a page
    // made later takes the dictionary's keys of it. Whichever holds an ID,
    // the context must give one object for it.
    @Test("One object per ID: dense, far, sparse and negative keys, before and after the pages grow, and after a fetch")
    func oneObjectPerID() throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        let employee = try #require(context.model.entity(named: "Employee"))
        var keys: [Int64] = [1, 2, 63, 64, 65, 5_000_000, Int64.max, -3, 4_000, 100_001]
        keys += (100_000..<100_700).map { Int64($0) }          // far, then dense enough for pages of their own
        keys += stride(from: 1_000_000, to: 9_000_000, by: 80_000).map { Int64($0) }   // sparse
        var first: [Int64: ManagedObject] = [:]
        for key in keys { first[key] = context.object(for: ObjectID(entity: employee, primaryKey: key)) }
        #expect(context.registeredObjectCount == Set(keys).count)
        for key in keys.reversed() {
            #expect(context.object(for: ObjectID(entity: employee, primaryKey: key)) === first[key], "key \(key)")
        }
        // A fetch into the same table finds the objects the context holds.
        let fetched = try context.fetch(FetchRequest(entityName: "Employee"))
        for object in fetched where first[object.objectID.primaryKey] != nil {
            #expect(object === first[object.objectID.primaryKey])
        }
        // A new context's fetch adds its objects in bulk; a lookup afterwards finds the same ones.
        let other = store.context()
        let bulk = try other.fetch(FetchRequest(entityName: "Employee"))
        for object in bulk { #expect(other.object(for: object.objectID) === object) }
        #expect(other.registeredObjectCount == bulk.count)
    }
}

@Suite("Fetches and saves of more rows than one batch")
struct ManyBatchesTests {
    // A fetch lays its rows out in batches of `RowCollector.batchRows`, and a
    // save's results too: every row must come back with its own values, nils
    // and to-one keys across the batches' boundaries.
    @Test("10 000 generated employees fetched, and 5 000 inserted in one save, read back value for value")
    func rowsAcrossBatches() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-batches-\(UUID().uuidString).sqlite")
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: url.path + suffix) } }
        let model = CompanyGenerator.model
        let store = try SQLiteStore(url: url, model: model)
        let employee = try #require(model.entity(named: "Employee"))
        let generated = CompanyGenerator.nodes(employees: 10_000).filter { $0.id.entity == employee.index }
        #expect(generated.count > 2 * RowCollector.batchRows)
        try store.importNodes(CompanyGenerator.nodes(employees: 10_000))
        let names = employee.attributes.map(\.name)
        let context = ObjectContext(store: store)
        let fetched = try context.fetch(FetchRequest(entityName: "Employee"))
        try #require(fetched.count == generated.count)
        let byKey = Dictionary(uniqueKeysWithValues: generated.map { ($0.id.primaryKey, $0) })
        for object in fetched {
            let node = try #require(byKey[object.objectID.primaryKey])
            for name in names {
                #expect(object[name] == node.value(at: try #require(employee.attribute(named: name)).slot), "\(object.objectID) \(name)")
            }
            let department = try object.object(forKey: "department")
            #expect(department?.objectID.primaryKey == node.toOneKey(at: try #require(employee.relationship(named: "department")).slot))
        }
        // One save of more rows than a batch: its results laid out by column, then read by another context.
        let writer = ObjectContext(store: store)
        var inserted: [ManagedObject] = []
        for index in 0..<5_000 {
            let hire = try writer.insert("Employee")
            try hire.setValue(.string("Hire \(index)"), forKey: "name")
            try hire.setValue(.int(Int64(20 + index % 40)), forKey: "age")
            try hire.setValue(.double(Double(index)), forKey: "salary")
            try hire.setValue(index % 3 == 0 ? .null : .string("h\(index)"), forKey: "nickname")
            try hire.setValue(.bool(index % 2 == 0), forKey: "isManager")
            try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: Double(index))), forKey: "startDate")
            inserted.append(hire)
        }
        try writer.save()
        for (index, hire) in inserted.enumerated() {
            #expect(hire["name"] == .string("Hire \(index)"))
            #expect(hire["salary"] == .double(Double(index)))
        }
        let reader = ObjectContext(store: store)
        let again = try reader.fetch(FetchRequest(entityName: "Employee", predicate: "name BEGINSWITH 'Hire '"))
        #expect(again.count == 5_000)
        for object in again {
            guard case .string(let name)? = object["name"], let index = Int(name.dropFirst(5)) else {
                Issue.record("unexpected name \(String(describing: object["name"]))")
                continue
            }
            #expect(object["age"] == .int(Int64(20 + index % 40)))
            #expect(object["nickname"] == (index % 3 == 0 ? .null : .string("h\(index)")))
        }
    }
}

// A fetch into a table the row cache holds nothing of is kept as the
// fetch's nodes, counted once for the context that registers them, and
// indexed only when something needs a row by ID. Whatever happens to it,
// the cache must end as it would have had the fetch been indexed at once.
@Suite("A fetch kept whole in the row cache")
struct PendingFetchTests {
    /// A request whose rows come in key order, as a pending fetch needs.
    static let employees = FetchRequest(entityName: "Employee")

    @Test("Fetched, read and released as an application does: never indexed, and nothing left behind",
          arguments: StoreKind.allCases)
    func keptWholeAndDroppedWhole(kind: StoreKind) throws {
        let store = try kind.make()
        store.rowCache.removeAll()
        var expected: [[PredicateValue?]] = []
        let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
        let replacementsBefore = store.rowCache.replacementCount
        do {
            let context = store.context()
            let objects = try context.fetch(Self.employees)
            try #require(objects.count > RowCollector.fewRows)
            #expect(store.rowCache.pendingFetchCount == 1, "kept whole")
            if kind == .sqlite || kind == .postgres {
                #expect(store.rowCache.pendingFetchesKeptAsBatches == 1, "as its batches: a SQL store's fetch of one entity")
            }
            #expect(store.rowCache.count == objects.count)
            expected = objects.map { object in names.map { object[$0] } }
            #expect(objects.allSatisfy { !$0.isFault })
            _ = try objects[0].object(forKey: "department")
            #expect(store.rowCache.pendingFetchCount == 1, "reads and a to-one's fault need no index")
            withExtendedLifetime(context) {}
        }
        #expect(store.rowCache.pendingFetchCount == 0)
        #expect(store.rowCache.count == 0, "dropped whole with its context")
        #expect(store.rowCache.replacementCount != replacementsBefore, "a purge counts as a replacement")
        // The same values when the rows are read again, indexed at once.
        let context = store.context()
        let objects = try context.fetch(Self.employees)
        #expect(objects.map { object in names.map { object[$0] } } == expected)
        withExtendedLifetime(context) {}
    }

    @Test("A fetch of one entity is kept as its batches, an interleaved one as its nodes: the very same nodes count once, others index it")
    func keptAsBatchesOrAsNodes() throws {
        let employee = try #require(Company.model.entity(named: "Employee"))
        func batch(_ keys: Range<Int64>) -> RowBatch {
            let builder = RowBatchBuilder(entity: employee.index, root: employee.rootIndex, attributeCount: employee.attributes.count,
                                          toOneCount: employee.toOneCount, toManyCount: employee.toManyCount)
            for key in keys { builder.append(key: key, version: 1, values: [.string("e\(key)")], toOne: []) }
            return builder.batch(fetchTimestamp: 0)
        }
        let (first, second) = (batch(1..<21), batch(21..<41))
        let inOrder = (0..<20).map { RowNode(batch: first, row: $0) } + (0..<20).map { RowNode(batch: second, row: $0) }
        let interleaved = (0..<20).flatMap { [RowNode(batch: first, row: $0), RowNode(batch: second, row: $0)] }
        for (nodes, asBatches) in [(inOrder, true), (interleaved, false)] {
            let cache = RowCache(model: Company.model)
            let stored = cache.storeFetched(nodes)
            #expect(cache.pendingFetchCount == 1)
            #expect(cache.pendingFetchesKeptAsBatches == (asBatches ? 1 : 0))
            // The same nodes: in the very array always; in a copy, when kept as batches (their rows are compared).
            cache.register(nodes: stored)
            #expect(cache.pendingFetchCount == 1, "counted once, not indexed")
            cache.register(nodes: stored.map { $0 })
            #expect(cache.pendingFetchCount == (asBatches ? 1 : 0))
            // Some of them: the fetch is indexed first, with its registrations.
            cache.register(nodes: Array(stored.prefix(5)))
            #expect(cache.pendingFetchCount == 0)
            for (index, node) in nodes.enumerated() {
                #expect(cache.referenceCount(node.id) == (index < 5 ? 3 : 2))
                #expect(cache.node(node.id)?.value(at: 0) == node.value(at: 0))
            }
        }
    }

    @Test("Another context's use indexes the fetch with its registration: counts, nodes and purges as if indexed at once",
          arguments: StoreKind.allCases)
    func indexedWhenNeeded(kind: StoreKind) throws {
        let store = try kind.make()
        store.rowCache.removeAll()
        var first: ObjectContext? = store.context()
        let objects = try first!.fetch(Self.employees)
        let ids = objects.map(\.objectID)
        #expect(store.rowCache.pendingFetchCount == 1)
        // A second context reads one object by ID: the cache indexes the fetch first.
        let second = store.context()
        #expect(try second.object(for: ids[3]).value(forKey: "name") == objects[3]["name"])
        #expect(store.rowCache.pendingFetchCount == 0)
        #expect(store.rowCache.referenceCount(ids[3]) == 2)
        #expect(store.rowCache.referenceCount(ids[0]) == 1)
        // The first context goes: only the object the second holds stays.
        withExtendedLifetime(objects) {}
        first = nil
        #expect(store.rowCache.count == 1)
        #expect(store.rowCache.node(ids[3]) != nil)
        #expect(store.rowCache.node(ids[0]) == nil)
        second.reset()
        #expect(store.rowCache.count == 0)
        withExtendedLifetime(first) {}
    }

    @Test("Two contexts fetch the same rows; a context fetches twice, and two tables: every count comes back to nothing",
          arguments: StoreKind.allCases)
    func sharedAndRepeatedFetches(kind: StoreKind) throws {
        let store = try kind.make()
        store.rowCache.removeAll()
        var one: ObjectContext? = store.context()
        var two: ObjectContext? = store.context()
        let held = try one!.fetch(Self.employees)
        let again = try two!.fetch(Self.employees)
        let ids = held.map(\.objectID)
        #expect(again.map(\.objectID) == ids)
        #expect(ids.allSatisfy { store.rowCache.referenceCount($0) == 2 })
        two = nil
        #expect(ids.allSatisfy { store.rowCache.referenceCount($0) == 1 })
        #expect(store.rowCache.count == ids.count)
        one = nil
        #expect(store.rowCache.count == 0)
        // One context: the same fetch twice, then another table.
        do {
            let context = store.context()
            _ = try context.fetch(Self.employees)
            let twice = try context.fetch(Self.employees)
            #expect(twice.allSatisfy { store.rowCache.referenceCount($0.objectID) == 1 })
            let departments = try context.fetch(FetchRequest(entityName: "Department"))
            #expect(!departments.isEmpty)
            withExtendedLifetime(context) {}
        }
        #expect(store.rowCache.count == 0)
        #expect(store.rowCache.pendingFetchCount == 0)
        // A context reset, and one dropped after one of its objects was refreshed.
        let reset = store.context()
        _ = try reset.fetch(Self.employees)
        reset.reset()
        #expect(store.rowCache.count == 0)
        do {
            let context = store.context()
            let objects = try context.fetch(Self.employees)
            context.refresh(objects[0])
            #expect(store.rowCache.referenceCount(objects[0].objectID) == 0)
            #expect(store.rowCache.referenceCount(objects[1].objectID) == 1)
            withExtendedLifetime(context) {}
        }
        #expect(store.rowCache.count == 0)
        withExtendedLifetime((one, two, held, again)) {}
    }

    @Test("A fetch kept whole is seen by an evaluation over the cache, and a save in its context leaves the cache as an indexed one does",
          arguments: StoreKind.allCases)
    func snapshotsAndSaves(kind: StoreKind) throws {
        // The same steps, with the fetch kept whole and with it indexed at once (by a lookup).
        func run(indexedAtOnce: Bool) throws -> [Int] {
            let store = try kind.make()
            store.rowCache.removeAll()
            let context = store.context()
            let objects = try context.fetch(Self.employees)
            if indexedAtOnce { _ = store.rowCache.node(objects[0].objectID) }
            #expect(store.rowCache.pendingFetchCount == (indexedAtOnce ? 0 : 1))
            let predicate = try PredicateCompiler(model: store.rowCache.model).bind("age > 40", entity: "Employee")
            let older = try store.rowCache.nodes(of: "Employee", matching: predicate)
            #expect(older.count == objects.filter { ($0["age"]?.intValue ?? 0) > 40 }.count)
            #expect(!older.isEmpty)
            // A save in the context: the objects' rows are replaced, and the counts stay right.
            let changed = objects[2]
            try changed.setValue(.int(77), forKey: "age")
            try context.save()
            #expect(changed["age"] == 77)
            let counts = [store.rowCache.count, store.rowCache.referenceCount(changed.objectID),
                          store.rowCache.referenceCount(objects[3].objectID)]
            context.reset()
            return counts + [store.rowCache.count]
        }
        let kept = try run(indexedAtOnce: false)
        #expect(kept == (try run(indexedAtOnce: true)))
        #expect(kept[1] == 1 && kept[2] == 1)
    }
}
