// Issue 50, the API beyond fetch: records whose coding keys differ from their
// properties, batch updates and deletes, and fetched results controllers,
// each taking a `#Predicate`, answering as the same format text does.

import Foundation
import Sift
import SiftStore
import Testing

/// An employee as a record whose properties are named apart from the attributes.
struct RenamedEmployee: Codable, Sendable, Equatable {
    var fullName: String
    var years: Int
    var boss: Bool
    var pay: Double

    enum CodingKeys: String, CodingKey {
        case fullName = "name", years = "age", boss = "isManager", pay = "salary"
    }

    /// Not stored: reads `years` changed, so it names nothing.
    var nextYear: Int { years + 1 }
}

@Suite("SwiftPredicate API")
struct SwiftPredicateAPITests {
    /// The object IDs a format text selects, sorted by name.
    func expected(_ context: ObjectContext, _ format: String, _ arguments: [PredicateValue] = []) throws -> [ObjectID] {
        var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        request.predicate = .format(format, arguments)
        return try context.fetch(request).map(\.objectID)
    }

    @Test("a record's key paths name the coding keys its properties are decoded from")
    func recordCodingKeys() throws {
        let made = try StoreKind.sqlite.make()
        let context = made.context()
        let limit = 40
        let predicate = #Predicate<RenamedEmployee> { $0.years > limit && $0.boss == true && $0.pay > 1000 }
        guard case .format(let text, _)? = try FetchRequest(entityName: "Employee", where: predicate).predicate else {
            Issue.record("no format text")
            return
        }
        #expect(text == "((age > %@ AND isManager == %@) AND salary > %@)")
        let records = try context.fetch(RenamedEmployee.self, entityName: "Employee", where: predicate,
                                        sortBy: [SortDescriptor(\RenamedEmployee.fullName, comparator: .lexical)])
        let names = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 40 AND isManager == YES AND salary > 1000",
                                                   sortDescriptors: [FetchSortDescriptor("name")]))
            .map { $0["name", as: String.self] ?? "" }
        #expect(!names.isEmpty)
        #expect(records.map(\.fullName) == names)
        #expect(try context.count(of: RenamedEmployee.self, entityName: "Employee", where: predicate) == names.count)
        // A computed property reads its key changed: it names nothing, and says so.
        #expect(throws: StoreError.self) {
            _ = try context.fetch(RenamedEmployee.self, entityName: "Employee", where: #Predicate { $0.nextYear > 3 })
        }
    }

    @Test("batch updates and deletes take a #Predicate")
    func batches() throws {
        let made = try StoreKind.sqlite.make()
        let context = made.context()
        let young = try expected(context, "age < 30")
        #expect(!young.isEmpty)
        let update = try BatchUpdateRequest(SPEmployee.self, where: #Predicate { ($0.age ?? 0) < 30 && $0.age != nil },
                                            setting: ["nickname": "'junior'"])
        #expect(try context.execute(update).count == young.count)
        #expect(try expected(context, "nickname == 'junior'") == young)
        let cutoff = 60
        let delete = try BatchDeleteRequest(entityName: "Employee",
                                            where: #Predicate<RenamedEmployee> { $0.years >= cutoff })
        let old = try expected(context, "age >= 60")
        #expect(try context.execute(delete).count == old.count)
        #expect(try expected(context, "age >= 60") == [])
    }

    @Test("a fetched results controller takes a #Predicate and Foundation's sort descriptors")
    func controller() throws {
        let made = try StoreKind.sqlite.make()
        let context = made.context()
        let controller = try FetchedResultsController(SPEmployee.self, where: #Predicate { $0.isManager == true },
                                                      sortBy: [SortDescriptor(\SPEmployee.name, comparator: .lexical)],
                                                      context: context)
        try controller.performFetch()
        let managers = try expected(context, "isManager == YES")
        #expect(!managers.isEmpty)
        #expect(controller.fetchedObjects.map(\.objectID) == managers)
        #expect(throws: StoreError.self) {
            _ = try FetchedResultsController(SPEmployee.self, context: context)   // no sort descriptor
        }
    }
}
