// The split planner, custom functions, templates and companion columns.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Split planner, functions, templates, companion columns")
struct PlannerTests {
    func freshStore(functions: FunctionRegistry = FunctionRegistry()) throws -> SQLiteStore {
        let store = try SQLiteStore(inMemoryWith: Company.model, functions: functions)
        try store.importDataSet(Company.dataSet)
        return store
    }

    func memoryIDs(_ text: String, _ arguments: [PredicateValue] = [], functions: FunctionRegistry? = nil) throws -> [Int64] {
        let bound = try PredicateCompiler(model: Company.model, functions: functions).bind(text, arguments: arguments, entity: "Employee")
        return try Company.cache.nodes(of: "Employee", matching: bound).map(\.id.primaryKey)
    }

    @Test func whatSQLCannotRunRunsInMemory() throws {
        let store = try freshStore()
        let text = "department.name != nil AND {age, 0}[FIRST] > 50 AND ANY tags.name != nil"
        let plan = try store.plan(FetchRequest(entityName: "Employee", predicate: text))
        #expect(plan.sql != nil)
        #expect(plan.residual != nil)
        #expect(plan.reasons == ["SQL cannot express indexing a collection ([FIRST], [LAST], [SIZE], [n])"])
        let ids = try ObjectContext(store: store).fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: text))
        #expect(ids.map(\.primaryKey) == (try memoryIDs(text)))
        #expect(!ids.isEmpty)
    }

    @Test func limitAndOffsetApplyAfterTheResidual() throws {
        let store = try freshStore()
        let text = "median({age, salary, 0}) > 50"  // the median is age unless the salary is below it
        var request = FetchRequest(entityName: "Employee", predicate: "age > 40 AND " + text,
                                   sortDescriptors: [FetchSortDescriptor("age", ascending: false)])
        let all = try ObjectContext(store: store).fetchObjectIDs(request).map(\.primaryKey)
        request.fetchOffset = 1
        request.fetchLimit = 3
        let page = try ObjectContext(store: store).fetchObjectIDs(request).map(\.primaryKey)
        #expect(page == Array(all.dropFirst().prefix(3)))
        #expect(try ObjectContext(store: store).count(for: request) == 3)
        var unlimited = request
        unlimited.fetchLimit = nil
        unlimited.fetchOffset = 0
        #expect(try ObjectContext(store: store).count(for: unlimited) == all.count)
        #expect(Set(all) == Set(try memoryIDs("age > 40 AND " + text)))
    }

    @Test func residualsLoadTheRelationshipsTheyFollow() throws {
        let store = try freshStore()
        store.rowCache.removeAll()
        let text = "median(reports.age) > 30"
        let plan = try store.plan(FetchRequest(entityName: "Employee", predicate: text))
        #expect(plan.sql == nil)
        let ids = try ObjectContext(store: store).fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: text))
        #expect(ids.map(\.primaryKey) == (try memoryIDs(text)))
        #expect(!ids.isEmpty)
    }

    static let initials = CustomFunction("initials", arguments: [.string], result: .string) { arguments in
        guard case .string(let s) = arguments[0] else { return .null }
        return .string(String(s.split(separator: " ").compactMap(\.first)))
    }

    @Test func customFunctionsRunInSQLAndInMemory() throws {
        let functions = FunctionRegistry([Self.initials])
        let store = try freshStore(functions: functions)
        for text in ["initials(name) == 'AA'", "FUNCTION(name, 'initials') ==[c] 'aa'", "FUNCTION(name, 'initials:') == 'BB'"] {
            let request = FetchRequest(entityName: "Employee", predicate: text)
            let plan = try store.plan(request)
            #expect(plan.residual == nil, "\(text) should run in SQL")
            #expect(try store.sqlQuery(for: request).sql.contains("sift_fn_initials"))
            let ids = try ObjectContext(store: store).fetchObjectIDs(request).map(\.primaryKey)
            #expect(ids == (try memoryIDs(text, functions: functions)))
            #expect(!ids.isEmpty)
        }
        #expect(throws: PredicateCompileError.self) {
            try PredicateCompiler(model: Company.model, functions: functions).bind("initials(age) == 'x'", entity: "Employee")
        }
    }

    @Test func functionsRegisteredLaterWorkToo() throws {
        let store = try freshStore()
        try store.register(CustomFunction("double", arguments: [.integer], result: .integer) { args in
            if case .int(let i) = args[0] { return .int(i * 2) }
            return .null
        })
        let ids = try ObjectContext(store: store).fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: "double(age) == 60"))
        #expect(ids.map(\.primaryKey) == [102, 105, 129])
    }

    @Test func templatesBindOnlyValues() throws {
        let store = try freshStore()
        let template = try PredicateTemplate(store: store, entityName: "Employee",
                                             predicate: "age > $min AND department.name == $department AND age IN $ages")
        #expect(template.variables == ["min", "department", "ages"])
        let context = ObjectContext(store: store)
        let first = try template.fetchObjectIDs(["min": 20, "department": "Sales", "ages": [30, 36, 40]]).map(\.primaryKey)
        #expect(first == (try memoryIDs("age > 20 AND department.name == 'Sales' AND age IN {30, 36, 40}")))
        let statement = try store.withConnection { try $0.statement(template.query!.sql) }
        let second = try template.fetch(in: context, ["min": 35, "department": "Sales", "ages": [30, 36, 40]])
        #expect(second.map(\.objectID.primaryKey) == (try memoryIDs("age > 35 AND department.name == 'Sales' AND age IN {30, 36, 40}")))
        // The same prepared statement, from the connection's cache.
        #expect(try store.withConnection { try $0.statement(template.query!.sql) } === statement)
        #expect(throws: StoreError.self) { try template.fetchObjectIDs(["min": 3]) }
    }

    static let canonicalModel: DataModel = {
        let company = Company.model
        let entities = company.entities.map { entity -> Entity in
            guard entity.name == "Employee" else { return entity }
            let attributes = entity.attributes.map { a -> Attribute in
                var copy = Attribute(a.name, a.type, optional: a.isOptional, defaultValue: a.defaultValue,
                                     indexed: a.isIndexed, canonical: a.name == "name")
                copy.isIndexed = a.isIndexed
                return copy
            }
            return Entity(entity.name, attributes: attributes, relationships: entity.relationships)
        }
        return try! DataModel(entities)
    }()

    /// The company data set with `Employee.name` canonical.
    static func canonicalDataSet() throws -> DataSet {
        let objects = try JSONSerialization.jsonObject(with: Fixtures.data("company.json")) as! [String: Any]
        let data = try JSONSerialization.data(withJSONObject: ["model": try JSONSerialization.jsonObject(with: canonicalModel.jsonData),
                                                               "objects": objects["objects"]!])
        return try DataSet(json: data)
    }

    @Test("Companion columns give the same answers, through an index", arguments: [
        "name ==[cd] 'renee roux'", "name BEGINSWITH[cd] 'emile'", "name ==[c] 'alice anderson'",
        "name BEGINSWITH[c] 'a'", "name IN[cd] {'jose garcia', 'zoe zimmermann'}", "name CONTAINS[cd] 'zoe'",
    ])
    func companionColumns(_ text: String) throws {
        let store = try SQLiteStore(inMemoryWith: Self.canonicalModel)
        try store.importDataSet(try Self.canonicalDataSet())
        let request = FetchRequest(entityName: "Employee", predicate: text)
        let query = try store.sqlQuery(for: request)
        let ids = try ObjectContext(store: store).fetchObjectIDs(request).map(\.primaryKey)
        #expect(ids == (try memoryIDs(text)))
        #expect(!ids.isEmpty)
        if !text.contains("CONTAINS") {
            #expect(query.sql.contains("Z_FOLD"))
            #expect(!query.sql.contains("sift_fold"))
            #expect(try store.queryPlan(query).joined().contains("Z_FOLD"))
        }
    }
}
