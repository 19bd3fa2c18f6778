// Entity inheritance in stores: subentities share their root's table (rows
// told apart by Z_ENT), a fetch includes subentities, relationships reach
// them, and objects know their own entity. The conformance corpus runs on
// a company whose employees inherit from an abstract root and whose managers
// are a subentity: every answer is the one the corpus expects, on SQLite
// and in memory; saves keep Core Data's invariants.

import Foundation
import Sift
import SiftStore
import Testing

/// The conformance data set with inheritance: `Employee` inherits `name`
/// from the abstract `Person`, and the employees that are managers are
/// objects of `Manager`, a subentity of `Employee` with a `level`.
enum InheritingCompany {
    static let dataSet: DataSet = {
        do {
            var json = try JSONSerialization.jsonObject(with: Fixtures.data("company.json")) as! [String: Any]
            var model = json["model"] as! [String: Any]
            var entities = model["entities"] as! [[String: Any]]
            let e = entities.firstIndex { $0["name"] as? String == "Employee" }!
            var attributes = entities[e]["attributes"] as! [[String: Any]]
            let name = attributes.first { $0["name"] as? String == "name" }!
            attributes.removeAll { $0["name"] as? String == "name" }
            entities[e]["attributes"] = attributes
            entities[e]["superentity"] = "Person"
            entities.append(["name": "Person", "abstract": true, "attributes": [name]])
            entities.append(["name": "Manager", "superentity": "Employee",
                             "attributes": [["name": "level", "type": "integer64", "optional": true]]])
            model["entities"] = entities
            json["model"] = model
            var objects = json["objects"] as! [String: [[String: Any]]]
            let employees = objects["Employee"]!
            objects["Employee"] = employees.filter { $0["isManager"] as? Bool != true }
            objects["Manager"] = employees.filter { $0["isManager"] as? Bool == true }.map { manager in
                var manager = manager
                manager["level"] = ((manager["id"] as? Int) ?? 0) % 3
                return manager
            }
            json["objects"] = objects
            return try DataSet(json: JSONSerialization.data(withJSONObject: json))
        } catch {
            fatalError("the company with inheritance does not load: \(error)")
        }
    }()
    static var model: DataModel { dataSet.model }
    static let cache: RowCache = dataSet.makeRowCache()
    static let store: SQLiteStore = {
        do {
            let store = try SQLiteStore(inMemoryWith: model)
            try store.importDataSet(dataSet)
            return store
        } catch {
            fatalError("the company with inheritance does not import: \(error)")
        }
    }()
}

@Suite("Entity inheritance")
struct InheritanceTests {
    @Test("The corpus on a company whose employees inherit: every answer as expected, SQLite and memory",
          arguments: CorpusCase.all)
    func corpus(_ testCase: CorpusCase) throws {
        try SQLCorpusTests.check(testCase, store: InheritingCompany.store, cache: InheritingCompany.cache)
    }

    @Test func theDataSetSplitsTheEmployees() {
        let model = InheritingCompany.model
        let managers = InheritingCompany.cache.snapshot().nodes(entity: model.entity(named: "Manager")!.index)
        let everyone = InheritingCompany.cache.snapshot().nodes(entity: model.entity(named: "Employee")!.index)
        #expect(managers.count > 3 && everyone.count == 60 && managers.count < everyone.count)
        #expect(managers.allSatisfy { $0.id.entity == model.entity(named: "Manager")!.index })
    }

    @Test func subentitiesShareTheirRootsTableAndFetchesFilterIt() throws {
        let store = InheritingCompany.store
        let schema = store.schema
        let model = store.model
        let employee = try #require(model.entity(named: "Employee"))
        let manager = try #require(model.entity(named: "Manager"))
        #expect(schema.table(employee) == "ZPERSON" && schema.table(manager) == "ZPERSON")
        // Core Data's numbers: Department 1, Person 2, Employee 3, Manager 4, Tag 5.
        #expect(SQLSchema.entityNumbers(of: model) == ["Department": 1, "Person": 2, "Employee": 3, "Manager": 4, "Tag": 5])
        // A fetch of a subentity keeps its rows of the shared table; the to-one
        // to an entity with subentities says which one each key is.
        let sql = try store.sqlQuery(for: FetchRequest(entityName: "Manager", predicate: "level == 1")).sql
        #expect(sql.contains("\"Z_ENT\" = 4") || sql.contains("\"Z_ENT\" IN (4)"), "\(sql)")
        let employees = try store.sqlQuery(for: FetchRequest(entityName: "Employee", predicate: "age > 30")).sql
        #expect(employees.contains("IN (3, 4)"), "\(employees)")
        #expect(schema.entityKey(try #require(employee.relationship(named: "manager")), of: employee) == "Z3_MANAGER")
        // Many-to-many: the join table is named by the entity that declares the relationship.
        guard case .joinTable(let table, _, _) = schema.storage(of: try #require(manager.relationship(named: "tags")), in: manager) else {
            Issue.record("Employee.tags has no join table")
            return
        }
        #expect(table == "Z_3TAGS")
        #expect(CoreDataInvariants.violations(of: store).isEmpty)
    }

    @Test func aSubentitysPropertyOnTheParentsFetchNamesTheSubentity() {
        let error = #expect(throws: StoreError.self) {
            try ObjectContext(store: InheritingCompany.store).fetch(FetchRequest(entityName: "Employee", predicate: "level > 1"))
        }
        #expect(error.map { "\($0)" }?.contains("Manager") == true)
    }

    @Test("Objects know their own entity, however they were reached", arguments: StoreKind.allCases)
    func objectsKnowTheirEntity(_ kind: StoreKind) throws {
        let store = try kind.make(InheritingCompany.dataSet)
        let context = store.context()
        let all = try context.fetch(FetchRequest(entityName: "Employee"))
        let managers = all.filter { $0.entity.name == "Manager" }
        #expect(managers.count == all.filter { $0["isManager"] == .bool(true) }.count && !managers.isEmpty)
        #expect(managers.allSatisfy { $0["level"] != nil })
        // Reached through a relationship whose destination is the parent: the same object.
        for employee in all {
            if let boss = try employee.object(forKey: "manager") {
                #expect(boss.entity.name == "Manager")
                #expect(managers.contains { $0 === boss })
            }
        }
        // A fresh context: a manager reached as an Employee fault learns its entity when fired.
        let fresh = store.context()
        let employee = try #require(try fresh.fetch(FetchRequest(entityName: "Employee", predicate: "manager != nil")).first)
        // Reached through a relationship whose destination has subentities: its row is read to know its entity.
        let boss = try #require(try employee.object(forKey: "manager"))
        #expect(boss.entity.name == "Manager" && !boss.isFault)
        #expect(boss["level"] != nil)
        // An ID that names the parent entity finds the same object, and a fault learns its entity when fired.
        let other = store.context()
        let fault = other.object(for: ObjectID(entity: other.model.entity(named: "Employee")!, primaryKey: boss.objectID.primaryKey))
        #expect(fault.isFault && fault.entity.name == "Employee")
        #expect(fault["level"] != nil && fault.entity.name == "Manager")
        #expect(other.object(for: boss.objectID) === fault)
        // And its department's employees hold that same object.
        let department = try #require(try boss.object(forKey: "department"))
        #expect(try department.objects(forKey: "employees").contains { $0 === boss })
    }

    @Test("Saves write subentity rows into the root's table", arguments: StoreKind.allCases)
    func saves(_ kind: StoreKind) throws {
        let store = try kind.make(InheritingCompany.dataSet)
        let context = store.context()
        let department = try #require(try context.fetch(FetchRequest(entityName: "Department")).first)
        func hire(_ entity: String, _ name: String) throws -> ManagedObject {
            let object = try context.insert(entity)
            try object.setValue(.string(name), forKey: "name")
            try object.setValue(.int(40), forKey: "age")
            try object.setValue(.double(1000), forKey: "salary")
            try object.setValue(.bool(entity == "Manager"), forKey: "isManager")
            try object.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
            try object.setObject(department, forKey: "department")
            return object
        }
        let boss = try hire("Manager", "Boss")
        try boss.setValue(.int(7), forKey: "level")
        let worker = try hire("Employee", "Worker")
        try worker.setObject(boss, forKey: "manager")
        try context.save()
        // Keys are handed out per root table: no employee shares one with a manager.
        let ids = try context.fetchObjectIDs(FetchRequest(entityName: "Employee")).map(\.primaryKey)
        #expect(Set(ids).count == ids.count && ids.count == 62)
        #expect(boss.objectID.primaryKey > 0 && boss.objectID.primaryKey != worker.objectID.primaryKey)

        let reader = store.context()
        let found = try #require(try reader.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Worker'")).first)
        let foundBoss = try #require(try found.object(forKey: "manager"))
        #expect(foundBoss["level"] == .int(7) && foundBoss.entity.name == "Manager")
        #expect(try reader.count(for: FetchRequest(entityName: "Manager", predicate: "level == 7")) == 1)
        #expect(try reader.count(for: FetchRequest(entityName: "Department", predicate: "ANY employees.name == 'Boss'")) == 1)

        // Deleting the manager nullifies the worker's manager.
        let bossAgain = try #require(try reader.fetch(FetchRequest(entityName: "Manager", predicate: "level == 7")).first)
        try reader.delete(bossAgain)
        try reader.save()
        #expect(try store.context().count(for: FetchRequest(entityName: "Employee", predicate: "name == 'Worker' AND manager == nil")) == 1)
        if let sqlite = store.store as? SQLiteStore {
            #expect(CoreDataInvariants.violations(of: sqlite).isEmpty)
        }
    }

    @Test func aStoreFileWithInheritanceReopens() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("company.sqlite")
        do {
            let store = try SQLiteStore(url: url, model: InheritingCompany.model)
            try store.importDataSet(InheritingCompany.dataSet)
        }
        let reopened = try SQLiteStore(url: url)
        let context = ObjectContext(store: reopened)
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
        #expect(try context.count(for: FetchRequest(entityName: "Person")) == 60)
        let managers = try context.fetch(FetchRequest(entityName: "Manager"))
        #expect(!managers.isEmpty && managers.allSatisfy { $0.entity.name == "Manager" })
        #expect(CoreDataInvariants.violations(of: reopened).isEmpty)
    }
}
