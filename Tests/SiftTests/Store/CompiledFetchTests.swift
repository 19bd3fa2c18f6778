// Compiled fetches: each request shape compiled once and cached per store,
// string and integer arguments bound as parameters of the shape. The law: a
// fetch through a cached shape gives what the same request compiled with its
// values in place gives, on every store. And every path that fetches applies
// the same checks (a transient attribute is refused on each).

import Foundation
import PropertyBased
import Sift
import SiftDemo
import SiftPostgres
import SiftStore
import Testing

@Suite("Compiled fetches")
struct CompiledFetchTests {
    /// Predicates with arguments: some whose arguments become parameters
    /// (plain comparisons with attributes of their type), some that fall back
    /// to values in place (options, quantifiers, other operators, other types).
    static let shapes: [(text: String, kinds: [ArgumentKind])] = [
        ("name == %@", [.name]),
        ("%@ == name", [.name]),
        ("name != %@ AND age > %@", [.name, .age]),
        ("age >= %@ AND age <= %@", [.age, .age]),
        ("name == %@ OR name == %@ OR name == %@", [.name, .name, .name]),
        ("department.name == %@ AND age < %@", [.department, .age]),
        ("manager.name == %@ OR nickname == %@", [.name, .name]),
        ("SUBQUERY(reports, $r, $r.age > %@).@count > 0", [.age]),
        ("NOT (age == %@) AND name > %@", [.age, .name]),
        ("age + 1 > %@", [.age]),
        ("name ==[c] %@", [.name]),
        ("ANY reports.name == %@", [.name]),
        ("name BEGINSWITH %@", [.name]),
        ("salary > %@", [.age]),
        ("age == %@", [.name]),
        ("name == %@", [.age]),
        ("name IN %@", [.names]),
        ("name == %@", [.nul]),
        ("age < %@", [.huge]),
        ("name == %@ AND %@ == nil", [.name, .name]),
        ("age BETWEEN {%@, %@}", [.age, .age]),
    ]

    enum ArgumentKind {
        case name, names, age, department, nul, huge
    }

    /// The employees' names.
    static let names: [String] = {
        let model = Company.dataSet.model
        guard let employee = model.entity(named: "Employee"), let name = employee.attribute(named: "name") else { return [] }
        return Company.dataSet.nodes.compactMap { node in
            guard node.id.entity == employee.index, case .string(let value) = node.values[name.slot] else { return nil }
            return value
        }
    }()

    static func argument(_ kind: ArgumentKind, _ rng: inout SplitMix) -> PredicateValue {
        switch kind {
        case .name:
            let roll = Int(rng.next() % 10)
            return roll < 7 ? .string(names[Int(rng.next() % UInt64(names.count))]) : .string(["", "Zed", "a", "Ömer"][roll - 6])
        case .names: return .array([.string(names[0]), .string("Nobody")])
        case .age: return .int(Int64(rng.next() % 80))
        case .department: return .string(["Engineering", "Sales", "Support", "Nowhere"][Int(rng.next() % 4)])
        case .nul: return .string("a\u{0}b")
        case .huge: return .int(Int64.max - Int64(rng.next() % 3))
        }
    }

    /// The answer of `request` with its predicate compiled with its values
    /// in place (bound, not through the cache's parameters), or the error.
    static func byValue(_ request: FetchRequest, _ context: ObjectContext) -> Result<[ObjectID], StoreError> {
        guard case .format(let text, let arguments)? = request.predicate else { return .failure(.unknownEntity("?")) }
        var compiler = PredicateCompiler(model: context.model)
        compiler.requiresStoredAttributes = true
        let bound: BoundPredicate
        do {
            bound = try compiler.bind(text, arguments: arguments, entity: request.entityName)
        } catch {
            return .failure(.invalidPredicate(error, text: text))
        }
        var exact = request
        exact.predicate = .bound(bound)
        return Result { () throws(StoreError) in try context.fetchObjectIDs(exact) }
    }

    static func describe(_ result: Result<[ObjectID], StoreError>) -> String {
        switch result {
        case .success(let ids): ids.map { "\($0.primaryKey)" }.joined(separator: ",")
        case .failure(let error): "error: \(error)"
        }
    }

    @Test("A cached shape gives what the values in place give, on every store", arguments: StoreKind.allCases)
    func cachedShapesAgree(_ kind: StoreKind) async throws {
        let store = try kind.make()
        let context = store.context()
        await propertyCheck(count: 40, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var rng = SplitMix(seed: seed)
            for (text, kinds) in Self.shapes {
                let arguments = kinds.map { Self.argument($0, &rng) }
                let request = FetchRequest(entityName: "Employee", predicate: text, arguments: arguments,
                                           sortDescriptors: [FetchSortDescriptor("name"), FetchSortDescriptor("age", ascending: false)])
                let cached = Result { () throws(StoreError) in try context.fetchObjectIDs(request) }
                let exact = Self.byValue(request, context)
                #expect(Self.describe(cached) == Self.describe(exact), "\(kind): \(text) with \(arguments)")
            }
        }
    }

    @Test("One shape, many values: compiled once, and each fetch has its own values")
    func oneShapeManyValues() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let context = ObjectContext(store: store)
        let before = store.compiledFetches.count
        var found = 0
        for name in Self.names.prefix(30) {
            let request = FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(name)])
            let objects = try context.fetch(request)
            #expect(objects.allSatisfy { $0["name"] == .string(name) })
            found += objects.count
            let compiled = try store.compile(request)
            #expect(compiled.predicate?.parameterOccurrences.isEmpty == true)
        }
        #expect(found >= 30)
        #expect(store.compiledFetches.count == before + 1)
        // The plan shows the values, not the parameters.
        let plan = try store.plan(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: ["Ada"]))
        #expect(plan.description.contains("\"Ada\""), "\(plan)")
        #expect(try store.sqlQuery(for: FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: ["Ada"]))
            .bindings.contains(.text("Ada")))
    }

    @Test("Every path that fetches shares the compiled shape")
    func everyPathSharesTheShape() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let context = ObjectContext(store: store)
        func request(_ age: Int64) -> FetchRequest {
            FetchRequest(entityName: "Employee", predicate: "age > %@", arguments: [.int(age)], sortDescriptors: [FetchSortDescriptor("name")])
        }
        _ = try context.fetch(request(30))
        let shapes = store.compiledFetches.count
        _ = try context.fetchObjectIDs(request(40))
        _ = try context.fetchDictionaries(request(50), properties: ["name"])
        let controller = try FetchedResultsController(fetchRequest: request(35), context: context)
        try controller.performFetch()
        let hire = try context.insert("Employee")
        try hire.setValue(.string("Zoe"), forKey: "name")
        try hire.setValue(.int(77), forKey: "age")
        #expect(try context.fetch(request(70)).contains { $0 === hire })
        #expect(store.compiledFetches.count == shapes)
        // A count drops the sort: one more shape, then shared too.
        _ = try context.count(for: request(20))
        _ = try context.count(for: request(25))
        #expect(store.compiledFetches.count == shapes + 1)
    }

    @Test("The cache is bounded")
    func bounded() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        let cache = store.compiledFetches
        for n in 0..<(cache.capacity + 100) {
            _ = try store.compile(FetchRequest(entityName: "Employee", predicate: "age > \(n)"))
        }
        #expect(cache.count <= cache.capacity)
        #expect(cache.count > cache.capacity / 2)
        // A shape keyed by a long list is not kept (the cache bounds memory, not only entries).
        cache.removeAll()
        let long = PredicateValue.array((0..<1_000).map { .string("name \($0)") })
        _ = try store.compile(FetchRequest(entityName: "Employee", predicate: "name IN %@", arguments: [long]))
        #expect(cache.count == 0)
        _ = try store.compile(FetchRequest(entityName: "Employee", predicate: "name IN %@", arguments: [["Ada", "Bo"]]))
        #expect(cache.count == 1)
    }

    @Test("A function registered after a compile is seen by the next one")
    func functionsRegisteredLater() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let context = ObjectContext(store: store)
        let request = FetchRequest(entityName: "Employee", predicate: "twice(age) > 100")
        #expect(throws: StoreError.self) { try context.fetch(request) }
        try store.register(CustomFunction("twice", arguments: [.integer], result: .integer) { values in
            guard case .int(let n) = values[0] else { return .null }
            return .int(n &* 2)
        })
        #expect(try context.count(for: request) > 0)
    }

    @Test("An error SQL cannot express is placed in the text from the shape's source map")
    func errorsPlacedFromTheSourceMap() throws {
        let store = CompanyStore.store
        let text = "name == %@ AND median({age, %@}) > 40"
        let error = #expect(throws: StoreError.self) {
            try store.sqlQuery(for: FetchRequest(entityName: "Employee", predicate: text, arguments: ["Ada", 3]))
        }
        // The shape is cached by now: the second error comes from its source map too.
        let again = #expect(throws: StoreError.self) {
            try store.sqlQuery(for: FetchRequest(entityName: "Employee", predicate: text, arguments: ["Bo", 4]))
        }
        #expect(String(describing: again) == String(describing: error).replacingOccurrences(of: "Ada", with: "Bo")
            || String(describing: again) == String(describing: error))
        guard case .notExpressibleInSQL(_, let range?, let source)? = error else {
            Issue.record("no range: \(String(describing: error))")
            return
        }
        #expect(source == text)
        let found = String(text.utf8[text.utf8.index(text.utf8.startIndex, offsetBy: range.lowerBound)...]) ?? ""
        #expect(found.hasPrefix("median("), "\(range) in \(text)")
    }
}

@Suite("A transient attribute is refused on every path that fetches")
struct TransientOnEveryPathTests {
    static func model() throws -> DataModel {
        try DataModel([Entity("Item", attributes: [Attribute("name", .string), Attribute("scratch", .string, optional: true, transient: true)])])
    }

    static func isRefused(_ body: () throws -> Void) -> Bool {
        do {
            try body()
            return false
        } catch let error as StoreError {
            if case .invalidPredicate(let inner, _) = error { return "\(inner)".contains("transient") }
            return false
        } catch {
            return false
        }
    }

    @Test("fetch, count, IDs, dictionaries, pending changes, controllers, batch updates, templates",
          arguments: StoreKind.allCases)
    func everyPath(_ kind: StoreKind) throws {
        let dataSet = try DataSet(model: try Self.model(), objects: ["Item": [["id": .int(1), "name": .string("a")],
                                                                                  ["id": .int(2), "name": .string("b")]]])
        let store = try kind.make(dataSet)
        let context = store.context()
        let onScratch = FetchRequest(entityName: "Item", predicate: "scratch == %@", arguments: ["x"])
        let sortedByScratch = FetchRequest(entityName: "Item", sortDescriptors: [FetchSortDescriptor("scratch")])
        #expect(Self.isRefused { _ = try context.fetch(onScratch) })
        #expect(Self.isRefused { _ = try context.fetch(sortedByScratch) })
        #expect(Self.isRefused { _ = try context.count(for: onScratch) })
        #expect(Self.isRefused { _ = try context.fetchObjectIDs(onScratch) })
        #expect(Self.isRefused { _ = try context.fetchDictionaries(onScratch, properties: ["name"]) })
        var dictionaries = FetchRequest(entityName: "Item")
        dictionaries.propertiesToFetch = ["scratch"]
        #expect(Self.isRefused { _ = try context.fetchDictionaries(dictionaries) })
        dictionaries.propertiesToFetch = ["name"]
        dictionaries.predicate = onScratch.predicate
        #expect(Self.isRefused { _ = try context.fetchDictionaries(dictionaries) })
        #expect(Self.isRefused {
            _ = try FetchedResultsController(fetchRequest: FetchRequest(entityName: "Item", predicate: "scratch != nil",
                                                                        sortDescriptors: [FetchSortDescriptor("name")]),
                                             context: context)
        })
        var update = BatchUpdateRequest(entityName: "Item", predicate: onScratch.predicate, propertiesToUpdate: [])
        update.propertiesToUpdate = [ExpressionDescription(name: "name", expression: "'c'")]
        #expect(Self.isRefused { _ = try context.execute(update) })
        let item = try context.insert("Item")
        try item.setValue(.string("c"), forKey: "name")
        #expect(Self.isRefused { _ = try context.fetch(onScratch) })
        if let sqlite = store.store as? SQLiteStore {
            #expect(Self.isRefused { _ = try PredicateTemplate(store: sqlite, entityName: "Item", predicate: "scratch == $x") })
        }
        // The stored attribute is fine on every path.
        #expect(try context.fetch(FetchRequest(entityName: "Item", predicate: "name == %@", arguments: ["a"])).count == 1)
    }
}
