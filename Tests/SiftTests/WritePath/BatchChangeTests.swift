// Batch updates and batch deletes: each case's rows checked against a
// hand-written Swift reference over the company data set, on every store;
// the SQL path against the memory path and the atomic store on random data
// and random delete rules, and against deleting the same objects in a
// context and saving; versions, conflicts, merges, and every error typed
// with nothing written.

import Foundation
import Sift
import SiftStore
import SiftDemo
@testable import SiftStore
import Testing

/// An employee of the company data set, as the reference reads it.
struct EmployeeRow {
    var key: Int64
    var values: [String: PredicateValue]
    var department: String?
    var budget: Double?
    var reports: Int

    static let all: [EmployeeRow] = {
        let model = Company.model
        let employee = model.entity(named: "Employee")!
        let department = model.entity(named: "Department")!
        let nodes = Company.dataSet.nodes
        let departments = Dictionary(uniqueKeysWithValues: nodes.filter { $0.id.entity == department.index }.map { ($0.id.primaryKey, $0) })
        let employees = nodes.filter { $0.id.entity == employee.index }
        let managerSlot = employee.relationship(named: "manager")!.slot
        let departmentSlot = employee.relationship(named: "department")!.slot
        return employees.map { node in
            var values: [String: PredicateValue] = [:]
            for attribute in employee.attributes { values[attribute.name] = node.values[attribute.slot] }
            let own = node.toOne[departmentSlot].flatMap { departments[$0] }
            func string(_ v: PredicateValue?) -> String? { if case .string(let s)? = v { s } else { nil } }
            func double(_ v: PredicateValue?) -> Double? { if case .double(let d)? = v { d } else { nil } }
            return EmployeeRow(key: node.id.primaryKey, values: values,
                               department: string(own?.values[department.attribute(named: "name")!.slot]),
                               budget: double(own?.values[department.attribute(named: "budget")!.slot]),
                               reports: employees.filter { $0.toOne[managerSlot] == node.id.primaryKey }.count)
        }.sorted { $0.key < $1.key }
    }()
}

/// A batch update and what it makes of each employee.
struct BatchUpdateCase: CustomTestStringConvertible, Sendable {
    var name: String
    var predicate: String
    var set: [String: String]
    /// The employee's new values, or nil when the predicate does not select it.
    var expected: @Sendable (EmployeeRow) -> [String: PredicateValue]?

    var testDescription: String { name }

    static let all: [BatchUpdateCase] = [
        BatchUpdateCase(name: "a raise through a to-one key path", predicate: "department.name == 'Sales'",
                        set: ["salary": "salary * 1.1"]) { row in
            guard row.department == "Sales", case .double(let salary)? = row.values["salary"] else { return nil }
            return ["salary": .double(salary * 1.1)]
        },
        BatchUpdateCase(name: "two attributes, one set to nil", predicate: "age > 50",
                        set: ["age": "age + 1", "nickname": "nil"]) { row in
            guard case .int(let age)? = row.values["age"], age > 50 else { return nil }
            return ["age": .int(age + 1), "nickname": .null]
        },
        BatchUpdateCase(name: "a value read through a to-one key path", predicate: "isManager == YES",
                        set: ["salary": "department.budget / 100"]) { row in
            guard row.values["isManager"] == .bool(true) else { return nil }
            return ["salary": row.budget.map { .double($0 / 100) } ?? .null]
        },
        BatchUpdateCase(name: "an integer count into a double", predicate: "TRUEPREDICATE",
                        set: ["rating": "reports.@count"]) { row in
            ["rating": .double(Double(row.reports))]
        },
        BatchUpdateCase(name: "a string from another attribute", predicate: "nickname == nil",
                        set: ["nickname": "name"]) { row in
            guard row.values["nickname"] == .null else { return nil }
            return ["nickname": row.values["name"]!]
        },
    ]
}

@Suite("Batch changes")
struct BatchChangeTests {
    /// Every employee's attributes, read afresh from the store.
    func employees(_ store: TestStore) throws -> [Int64: [String: PredicateValue]] {
        store.rowCache.removeAll()
        let context = store.context()
        var result: [Int64: [String: PredicateValue]] = [:]
        for object in try context.fetch(FetchRequest(entityName: "Employee")) {
            var values: [String: PredicateValue] = [:]
            for attribute in object.entity.attributes { values[attribute.name] = try object.value(forKey: attribute.name) }
            result[object.objectID.primaryKey] = values
        }
        return result
    }

    @Test(arguments: BatchUpdateCase.all, StoreKind.allCases)
    func batchUpdateMatchesTheReference(_ update: BatchUpdateCase, _ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let result = try context.execute(BatchUpdateRequest(entityName: "Employee", predicate: .format(update.predicate, []),
                                                            setting: update.set))
        let selected = EmployeeRow.all.filter { update.expected($0) != nil }.map(\.key)
        #expect(result.objectIDs.map(\.primaryKey) == selected)
        #expect(result.changes.updated.count == selected.count && result.changes.deleted.isEmpty)
        #expect(result.ranInSQL == (kind == .sqlite || kind == .postgres))
        let after = try employees(store)
        for row in EmployeeRow.all {
            var expected = row.values
            for (name, value) in update.expected(row) ?? [:] { expected[name] = value }
            #expect(after[row.key] == expected, "employee \(row.key)")
        }
    }

    @Test("A batch update on SQLite is one UPDATE, and increments each changed row's version")
    func oneStatementAndVersions() throws {
        let store = try StoreKind.sqlite.make()
        let sqlite = try #require(store.store as? SQLiteStore)
        let request = BatchUpdateRequest(entityName: "Employee", predicate: .format("age > 50", []), setting: ["salary": "salary + 1"])
        let before = sqlite.statementCount
        let result = try sqlite.batchUpdate(try sqlite.bindBatchUpdate(request))
        #expect(sqlite.statementCount - before == 3, "BEGIN, the UPDATE, COMMIT")
        #expect(result.ranInSQL)
        let versions = try sqlite.withConnection { try $0.query(#"SELECT "Z_PK", "Z_OPT" FROM "ZEMPLOYEE" ORDER BY "Z_PK""#) }
        let changed = Set(result.objectIDs.map(\.primaryKey))
        #expect(!changed.isEmpty)
        for row in versions {
            guard case .integer(let key) = row[0] else { continue }
            #expect(row[1] == .integer(changed.contains(key) ? 2 : 1))
        }
    }

    @Test(arguments: StoreKind.allCases)
    func anEditOfABatchUpdatedObjectConflicts(_ kind: StoreKind) throws {
        let store = try kind.make()
        let editor = store.context()
        let alice = editor.object(for: ObjectID(entity: 1, primaryKey: 101))
        try alice.setValue(.int(40), forKey: "age")
        try store.context().execute(BatchUpdateRequest(entityName: "Employee", predicate: .format("age > 50", []),
                                                       setting: ["salary": "salary * 2"]))
        #expect {
            try editor.save()
        } throws: { error in
            guard case StoreError.conflicts(let conflicts) = error else { return false }
            return conflicts.map(\.objectID.primaryKey) == [101]
        }
    }

    @Test(arguments: StoreKind.allCases)
    func contextsMergeABatchUpdate(_ kind: StoreKind) throws {
        let store = try kind.make()
        let reader = store.context()
        let alice = reader.object(for: ObjectID(entity: 1, primaryKey: 101))
        let salary = try alice.value(forKey: "salary")
        let heard = LockedState<[StoreChanges]>([])
        let observation = store.store.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        let writer = store.context()
        let bob = writer.object(for: ObjectID(entity: 1, primaryKey: 101))
        _ = try bob.value(forKey: "salary")
        try writer.execute(BatchUpdateRequest(entityName: "Employee", predicate: .format("age > 50", []),
                                              setting: ["salary": "salary * 2"]))
        guard case .double(let old) = salary else { Issue.record("salary is \(salary)"); return }
        // The executing context refreshed its object; the other merges what it heard.
        #expect(try bob.value(forKey: "salary") == .double(old * 2))
        let changes = heard.withLock { $0 }
        #expect(changes.count == 1 && changes[0].updated.contains(alice.objectID))
        for change in changes { try reader.mergeChanges(from: change) }
        #expect(try alice.value(forKey: "salary") == .double(old * 2))
    }

    /// A request that must fail, how, and that nothing was written.
    static let refusals: [(String, BatchUpdateRequest, String)] = [
        ("a double into an integer", BatchUpdateRequest(entityName: "Employee", setting: ["age": "salary"]),
         "'age' holds integer values"),
        ("a relationship", BatchUpdateRequest(entityName: "Employee", setting: ["department": "nil"]), "it is a relationship"),
        ("an unknown attribute", BatchUpdateRequest(entityName: "Employee", setting: ["salry": "1.0"]), "did you mean 'salary'"),
        ("nil for a required attribute", BatchUpdateRequest(entityName: "Employee", setting: ["name": "nil"]), "it is required"),
        ("a nil value for a required attribute", BatchUpdateRequest(entityName: "Employee", setting: ["salary": "rating"]),
         "gives nil, and the attribute is required"),
        ("an integer overflow", BatchUpdateRequest(entityName: "Employee", predicate: .format("age > 60", []),
                                                   setting: ["age": "age * 9223372036854775807"]), "overflow"),
        ("a collection", BatchUpdateRequest(entityName: "Employee", setting: ["name": "reports.name"]), "needs one value"),
        ("no properties", BatchUpdateRequest(entityName: "Employee"), "needs properties to update"),
        ("a string into a date", BatchUpdateRequest(entityName: "Employee", setting: ["startDate": "name"]), "holds dates"),
    ]

    @Test(arguments: StoreKind.allCases)
    func refusedUpdatesWriteNothing(_ kind: StoreKind) throws {
        let store = try kind.make()
        let before = try employees(store)
        for (name, request, message) in Self.refusals {
            do {
                try store.context().execute(request)
                Issue.record("\(name): no error")
            } catch {
                #expect("\(error)".contains(message), "\(name): \(error)")
            }
        }
        #expect(try employees(store) == before)
    }

    // MARK: Deletes

    @Test(arguments: StoreKind.allCases)
    func batchDeleteAppliesDeleteRules(_ kind: StoreKind) throws {
        let store = try kind.make(try DataSet(model: WritePathTests.rulesModel, objects: [
            "Owner": [["id": 1, "name": "Ann"], ["id": 2, "name": "Bo"]],
            "Pet": [["id": 1, "name": "Rex", "owner": 1], ["id": 2, "name": "Tom", "owner": 1], ["id": 3, "name": "Kit", "owner": 2]],
            "Toy": [["id": 1, "name": "ball", "pet": 2]],
        ]))
        let context = store.context()
        // Ann's cascade reaches Tom, whose toys deny: nothing is deleted.
        #expect {
            try context.execute(BatchDeleteRequest(entityName: "Owner", predicate: .format("name == 'Ann'", [])))
        } throws: { error in
            guard case StoreError.validation(let failures) = error else { return false }
            return failures.map(\.object) == ["<Pet 2>"] && failures[0].property == "toys"
        }
        #expect(try context.count(for: FetchRequest(entityName: "Pet")) == 3)
        // The toy goes first (no action: Tom keeps no link to it), then Ann takes her pets along.
        let toys = try context.execute(BatchDeleteRequest(entityName: "Toy"))
        #expect(toys.count == 1)
        let owners = try context.execute(BatchDeleteRequest(entityName: "Owner", predicate: .format("name == 'Ann'", [])))
        #expect(owners.objectIDs.map(\.primaryKey) == [1])
        #expect(owners.changes.deleted.count == 3)
        store.rowCache.removeAll()
        let fresh = store.context()
        #expect(try fresh.fetch(FetchRequest(entityName: "Pet")).map(\.objectID.primaryKey) == [3])
        #expect(try fresh.count(for: FetchRequest(entityName: "Owner")) == 1)
        // By IDs: Kit; Bo's pets lose it (nullify).
        let kit = try fresh.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: 1, primaryKey: 3), ObjectID(entity: 1, primaryKey: 99)],
                                                       entityName: "Pet"))
        #expect(kit.objectIDs.map(\.primaryKey) == [3])
        #expect(kit.changes.updated.map(\.primaryKey) == [2], "Bo's pets changed")
        #expect(try fresh.object(for: ObjectID(entity: 0, primaryKey: 2)).objects(forKey: "pets").isEmpty)
        // An ID of another entity is refused, whatever the store.
        #expect {
            try fresh.execute(BatchDeleteRequest(objectIDs: [ObjectID(entity: 0, primaryKey: 2)], entityName: "Pet"))
        } throws: { error in
            guard case StoreError.invalidRequest(.objectOfAnotherEntity(let object, let entity)) = error else { return false }
            return object == ObjectReference(entity: "Owner", id: 2) && entity == "Pet" && "\(error)".contains("names Owner 2")
        }
        #expect(try fresh.count(for: FetchRequest(entityName: "Owner")) == 1)
    }

    @Test(arguments: StoreKind.allCases)
    func batchDeleteNullifiesAndMerges(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let sales = context.object(for: ObjectID(entity: 0, primaryKey: 2))
        let members = try sales.objects(forKey: "employees")
        // Another context edits a member the nullify rule will change.
        let editor = store.context()
        let edited = try #require(members.first)
        try editor.object(for: edited.objectID).setValue(.int(33), forKey: "age")
        let result = try context.execute(BatchDeleteRequest(entityName: "Department", predicate: .format("name == 'Sales'", [])))
        #expect(result.count == 1 && result.ranInSQL == (kind == .sqlite || kind == .postgres))
        #expect(result.changes.updated == Set(members.map(\.objectID)))
        #expect(context.registeredObjectCount > 0)
        // The context dropped Sales, and its members forgot it.
        for member in members { #expect(try member.object(forKey: "department") == nil) }
        // Its version moved: the other context's edit conflicts.
        #expect {
            try editor.save()
        } throws: { error in
            guard case StoreError.conflicts(let conflicts) = error else { return false }
            return conflicts.map(\.objectID) == [edited.objectID]
        }
        store.rowCache.removeAll()
        let fresh = store.context()
        #expect(try fresh.count(for: FetchRequest(entityName: "Department")) == 7)
        #expect(try fresh.count(for: FetchRequest(entityName: "Employee", predicate: "department == nil")) == 3 + members.count)
    }

    /// The random world with delete rules chosen by `seed`.
    static func rulesWorld(_ seed: UInt64) -> DataModel {
        let rules: [DeleteRule] = [.nullify, .cascade, .deny, .noAction]
        let pick = { (n: UInt64) in rules[Int((seed / n) % 4)] }
        return try! DataModel([
            Entity("Thing", attributes: [
                Attribute("i", .integer64, optional: true), Attribute("d", .double, optional: true),
                Attribute("s", .string, optional: true), Attribute("b", .boolean, optional: true),
                Attribute("t", .date, optional: true),
            ], relationships: [
                Relationship("parent", to: "Thing", inverse: "children", deleteRule: pick(1) == .deny ? .nullify : pick(1)),
                Relationship("children", to: "Thing", toMany: true, inverse: "parent", deleteRule: pick(4)),
                Relationship("labels", to: "Label", toMany: true, inverse: "things", deleteRule: pick(16)),
            ]),
            Entity("Label", attributes: [Attribute("name", .string, optional: true)],
                   relationships: [Relationship("things", to: "Thing", toMany: true, inverse: "labels", deleteRule: pick(64))]),
        ])
    }

    /// Every row of the random world, with its relationships, read afresh.
    func world(_ store: TestStore) throws -> [String] {
        store.rowCache.removeAll()
        let context = store.context()
        var lines: [String] = []
        for entity in ["Thing", "Label"] {
            let objects = try context.fetch(FetchRequest(entityName: entity)).sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
            for object in objects {
                var line = "\(entity) \(object.objectID.primaryKey):"
                for attribute in object.entity.attributes { line += " \(attribute.name)=\(try object.value(forKey: attribute.name))" }
                for relationship in object.entity.relationships {
                    if relationship.isToMany {
                        line += " \(relationship.name)=\(try object.objects(forKey: relationship.name).map(\.objectID.primaryKey).sorted())"
                    } else {
                        line += " \(relationship.name)=\(try object.object(forKey: relationship.name)?.objectID.primaryKey ?? 0)"
                    }
                }
                lines.append(line)
            }
        }
        return lines
    }

    /// Whether `body` fails with a validation error (a deny rule refusing).
    func refused(_ body: () throws -> Void) throws -> Bool {
        do {
            try body()
            return false
        } catch let error as StoreError {
            if case .validation = error { return true }
            throw error
        }
    }

    @Test("Batch deletes agree with deleting in a context, in SQL and in memory, on random data and rules",
          arguments: 0..<40 as Range<UInt64>)
    func randomBatchDeletes(_ seed: UInt64) throws {
        var generator = RandomWorld.Generator(rng: SplitMix(seed: seed))
        let dataSet = try DataSet(model: Self.rulesWorld(seed), objects: generator.data())
        let text = generator.predicate(depth: 2)
        let request = BatchDeleteRequest(entityName: "Thing", predicate: .format(text, []))
        var states: [String: [String]] = [:]
        var refusals: [String: Bool] = [:]
        for kind in [StoreKind.sqlite, .atomic] {
            // A batch delete, then the same objects deleted in a context and saved.
            let batch = try kind.make(dataSet)
            refusals["\(kind) batch"] = try refused { try batch.context().execute(request) }
            states["\(kind) batch"] = try world(batch)
            let byObjects = try kind.make(dataSet)
            let context = byObjects.context()
            for object in try context.fetch(FetchRequest(entityName: "Thing", predicate: text)) { try context.delete(object) }
            refusals["\(kind) context"] = try refused { try context.save() }
            states["\(kind) context"] = try world(byObjects)
        }
        // SQLite's memory path, as a predicate SQL cannot run takes it.
        let memory = try StoreKind.sqlite.make(dataSet)
        let sqlite = try #require(memory.store as? SQLiteStore)
        refusals["sqlite memory"] = try refused {
            _ = try sqlite.batchDeleteInMemory(request, entity: sqlite.model.entity(named: "Thing")!)
        }
        states["sqlite memory"] = try world(memory)
        let context = "seed \(seed): \(text)"
        #expect(refusals["sqlite batch"] == refusals["atomic batch"] && refusals["sqlite batch"] == refusals["sqlite memory"], "\(context)")
        #expect(states["sqlite batch"] == states["sqlite memory"], "\(context)")
        // A deny rule that refuses a batch refuses the context's save too (a
        // context checks when each object is deleted, so it may refuse more).
        if refusals["sqlite batch"] == true { #expect(refusals["sqlite context"] == true, "\(context)") }
        for kind in ["sqlite", "atomic"] where refusals["\(kind) batch"] == false && refusals["\(kind) context"] == false {
            #expect(states["\(kind) batch"] == states["\(kind) context"], "\(kind), \(context)")
        }
        // No dangling links but those no-action rules leave: then the stores differ by design.
        let model = dataSet.model
        let noAction = model.entities.contains { $0.relationships.contains { $0.deleteRule == DeleteRule.noAction } }
        if !noAction { #expect(states["sqlite batch"] == states["atomic batch"], "\(context)") }
    }

    @Test("Batch updates agree in SQL, in memory and on the atomic store, on random data",
          arguments: 0..<40 as Range<UInt64>)
    func randomBatchUpdates(_ seed: UInt64) throws {
        var generator = RandomWorld.Generator(rng: SplitMix(seed: seed))
        let dataSet = try DataSet(model: RandomWorld.model, objects: generator.data())
        let text = generator.predicate(depth: 2)
        let choices: [String: [String]] = [
            "i": ["i * 2 - 1", "i + children.@count", "parent.i", "-i", "nil", "children.@sum.i", "labels.@count"],
            "d": ["d / 2", "i", "d + i", "parent.d", "children.@avg.d", "nil"],
            "s": ["s", "parent.s", "nil", "'x'"],
            "b": ["b", "YES", "parent.b"],
            "t": ["t", "parent.t", "nil"],
        ]
        var set: [String: String] = [:]
        for name in choices.keys.sorted() where generator.chance(50) { set[name] = generator.pick(choices[name]!) }
        if set.isEmpty { set["i"] = "i + 1" }
        let request = BatchUpdateRequest(entityName: "Thing", predicate: .format(text, []), setting: set)
        let sql = try StoreKind.sqlite.make(dataSet)
        let atomic = try StoreKind.atomic.make(dataSet)
        let memory = try StoreKind.sqlite.make(dataSet)
        let sqlResult = try sql.context().execute(request)
        let atomicResult = try atomic.context().execute(request)
        let sqlite = try #require(memory.store as? SQLiteStore)
        let memoryResult = try sqlite.batchUpdateInMemory(try sqlite.bindBatchUpdate(request))
        let context = "seed \(seed): \(set) where \(text)"
        #expect(sqlResult.objectIDs == atomicResult.objectIDs && sqlResult.objectIDs == memoryResult.objectIDs, "\(context)")
        let state = try world(sql)
        #expect(state == (try world(atomic)), "\(context)")
        #expect(state == (try world(memory)), "\(context)")
    }
}
