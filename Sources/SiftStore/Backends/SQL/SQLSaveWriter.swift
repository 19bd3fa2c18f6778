// Store stage: how a SQL store applies a save request, written once for
// every SQL backend — permanent keys reserved per table; every UPDATE and
// DELETE checked against the version the context read (`WHERE key = ? AND
// version = ?`). A row that moved is a conflict: the backend rolls the
// transaction back, and the conflicts go back with the rows as the store
// has them. The delete rules are worked out again over the rows as the
// transaction sees them (SaveRules.swift). The backend supplies a
// `SQLExecutor` inside its transaction.

import Foundation
import Sift

/// A connection inside a save's transaction, as the save writer uses it.
package protocol SQLExecutor {
    /// A statement made ready to run many times.
    associatedtype Prepared
    /// Prepares a statement (once per save for each shape).
    func prepare(_ sql: String) throws -> Prepared
    /// Runs a prepared statement; returns how many rows it changed.
    @discardableResult
    func run(_ statement: Prepared, _ bindings: [SQLValue]) throws -> Int
    /// The rows a statement gives.
    func rows(_ sql: String, _ bindings: [SQLValue]) throws -> [[SQLValue]]
    /// Reserves `count` new keys of `root`'s table; returns the largest of them
    /// (the others are the `count - 1` keys before it).
    func reserveKeys(_ count: Int64, root: Entity, schema: SQLSchema) throws -> Int64
    /// What the transaction records in the store's persistent history; nil
    /// when the store keeps none.
    var history: HistoryRecorder? { get }
}

extension SQLExecutor {
    /// No history (PostgreSQL, and stores that keep none).
    package var history: HistoryRecorder? { nil }
}

/// What the rows of one statement shape share: the entity, the statement
/// and its prepared form, the to-one targets' lookup, and for an update the
/// slots it writes. A class: a row borrows it, where a struct holding an
/// `Entity` was copied (a reference count per array of the entity) at every row.
final class RowPlan<Row, Prepared> {
    let entity: Entity
    /// The entity's numbers, for the row cache's batches.
    let shape: RowShape
    let row: Row
    let prepared: Prepared
    let targets: (Int, Int64) -> Int64?
    let attributeSlots: [Int]
    let toOneSlots: [Int]
    /// The names of the properties an update of this shape writes, for the
    /// store's history (made at its first row).
    lazy var propertyNames: [String] = attributeSlots.map { entity.attributes[$0].composite ?? entity.attributes[$0].name }
        + toOneSlots.compactMap { slot in entity.relationships.first { !$0.isToMany && $0.slot == slot }?.name }

    init(entity: Entity, row: Row, prepared: Prepared, targets: @escaping (Int, Int64) -> Int64?, attributeSlots: [Int] = [],
         toOneSlots: [Int] = []) {
        self.entity = entity
        shape = RowShape(entity: entity.index, root: entity.rootIndex, attributeCount: entity.attributes.count,
                         toOneCount: entity.toOneCount, toManyCount: entity.toManyCount)
        self.row = row
        self.prepared = prepared
        self.targets = targets
        self.attributeSlots = attributeSlots
        self.toOneSlots = toOneSlots
    }
}

/// An entity's index, root and numbers of slots: what a batch of its rows needs.
struct RowShape {
    let entity: Int
    let root: Int
    let attributeCount: Int
    let toOneCount: Int
    let toManyCount: Int
}

/// The rows a save wrote, as the row cache will hold them: each entity's
/// rows laid out in one batch, as a fetch's are (`RowCollector`), handed
/// back by their place in the request.
struct WrittenRows {
    /// Each entity's rows, by entity index (made at its first row).
    private var collectors: [RowCollector?]
    /// Each row's entity and index among that entity's rows; -1: no node.
    private var places: [(entity: Int, row: Int)] = []
    /// When the rows were written: their nodes' fetch time.
    private let now: Double

    init(entityCount: Int, rows: Int, now: Double) {
        collectors = Array(repeating: nil, count: entityCount)
        places.reserveCapacity(rows)
        self.now = now
    }

    /// Adds the next row of the request: a row of the entity `shape` describes, as written.
    mutating func add(_ shape: RowShape, key: Int64, version: Int64, values: [PredicateValue], toOne: [Int64?]) {
        let index = shape.entity
        if collectors[index] == nil {
            collectors[index] = RowCollector(entity: index, root: shape.root, attributeCount: shape.attributeCount,
                                             toOneCount: shape.toOneCount, toManyCount: shape.toManyCount)
        }
        // (Appended in place: the optional is unwrapped where it is stored, not copied out.)
        let row = collectors[index]!.append(key: key, version: version, values: values, toOne: toOne, now: now)
        places.append((index, row))
    }

    /// Adds the next row of the request, which has no node (it was not written).
    mutating func skip() { places.append((-1, -1)) }

    /// The node of each row added, in order.
    mutating func nodes() -> [RowNode?] {
        var byEntity: [[RowNode]] = Array(repeating: [], count: collectors.count)
        for index in collectors.indices where collectors[index] != nil {
            byEntity[index] = collectors[index]!.take(now: now)
        }
        return places.map { $0.entity < 0 ? nil : byEntity[$0.entity][$0.row] }
    }
}

/// Rolls a save's transaction back when it found conflicts.
package struct ConflictsFound: Error {
    package var conflicts: [RowConflict]
}

/// Writes save requests and imports with one backend's executor.
package struct SQLSaveWriter {
    /// How many inserted rows are written before they are laid out for the row cache.
    static let rowsLaidOutAtOnce = 256

    package let model: DataModel
    package let schema: SQLSchema
    package let rowCache: RowCache
    package let externalData: URL?
    package let transformers: ValueTransformerRegistry

    package init(model: DataModel, schema: SQLSchema, rowCache: RowCache, externalData: URL?,
                 transformers: ValueTransformerRegistry) {
        self.model = model
        self.schema = schema
        self.rowCache = rowCache
        self.externalData = externalData
        self.transformers = transformers
    }

    /// `write(_:_:)` with the executor a transaction hands out, called with
    /// SQLite's executor as its own type: through the existential, the
    /// generic writer ran unspecialized, each row's plan, statement and
    /// values reached through type metadata and witness tables.
    package func write(_ request: SaveRequest, on executor: any SQLExecutor) throws -> SaveResult {
        if let sqlite = executor as? SQLiteExecutor { return try write(request, sqlite) }
        return try write(request, executor)
    }

    /// Writes a request inside the caller's transaction. Throws
    /// `ConflictsFound` (the caller rolls back) when rows moved.
    package func write<E: SQLExecutor>(_ request: SaveRequest, _ executor: E) throws -> SaveResult {
        try checkText(request.inserts.lazy.map { ($0.id, $0.values) })
        try checkText(request.updates.lazy.map { ($0.id, $0.values) })
        var result = SaveResult()
        let now = Date().timeIntervalSinceReferenceDate

        // Permanent keys for inserted objects, reserved per table (an entity
        // and its subentities share their root's table and keys).
        var counts: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 { counts[insert.id.root, default: 0] += 1 }
        var next: [Int: Int64] = [:]
        for (root, count) in counts.sorted(by: { $0.key < $1.key }) {
            let largest = try executor.reserveKeys(count, root: model.entities[root], schema: schema)
            next[root] = largest - count
        }
        // Each insert's permanent key by its place in the request, so that
        // the rows below need no lookup; the result's table by temporary key too.
        var permanentKeys: [Int64] = []
        permanentKeys.reserveCapacity(request.inserts.count)
        result.keys.reserveCapacity(request.inserts.count)
        // (The inserts read in place, by index: a loop over the array copies
        // each one out, its arrays retained and released.)
        request.inserts.withUnsafeBufferPointer { inserts in
            for index in inserts.indices {
                let id = inserts[index].id
                guard id.primaryKey < 0 else {
                    permanentKeys.append(id.primaryKey)
                    continue
                }
                next[id.root]! += 1
                let key = next[id.root]!
                result.keys[id.primaryKey] = key
                permanentKeys.append(key)
            }
        }
        let keys = result.keys
        func resolve(_ key: Int64?) -> Int64? { SaveRequest.resolve(key, keys) }
        func permanent(_ id: ObjectID) -> ObjectID { ObjectID(entity: id.entity, root: id.root, primaryKey: resolve(id.primaryKey)!) }

        // The entity number of each inserted row, for the to-one columns that
        // say which entity a key points at (made the first time one is
        // asked for: most models have none); other rows' are read when needed.
        var insertedEntities: [ObjectID: Int64]?
        func insertedEntity(_ id: ObjectID) -> Int64? {
            if insertedEntities == nil {
                var numbers: [ObjectID: Int64] = [:]
                for insert in request.inserts {
                    numbers[permanent(insert.id)] = Int64(schema.entityNumber(model.entities[insert.id.entity]))
                }
                insertedEntities = numbers
            }
            return insertedEntities?[id]
        }
        func targetEntity(of entity: Entity) -> (Int, Int64) -> Int64? {
            { slot, key in
                guard let relationship = entity.relationships.first(where: { !$0.isToMany && $0.slot == slot }),
                      let destination = self.model.entity(named: relationship.destination) else { return nil }
                let id = ObjectID(entity: destination, primaryKey: key)
                if let number = insertedEntity(id) { return number }
                if let node = self.rowCache.node(id) { return Int64(self.schema.entityNumber(self.model.entities[node.id.entity])) }
                let query = self.schema.selectEntityNumber(destination)
                if case .integer(let number)? = try? executor.rows(query.sql, [.integer(key)]).first?.first { return number }
                return nil
            }
        }

        // One closure per entity, not one per row.
        var targetClosures: [Int: (Int, Int64) -> Int64?] = [:]
        func targetEntities(_ entity: Entity) -> (Int, Int64) -> Int64? {
            if let closure = targetClosures[entity.index] { return closure }
            let closure = targetEntity(of: entity)
            targetClosures[entity.index] = closure
            return closure
        }
        // Whether any value needs a value transformer: most saves need none.
        let hasTransformers = model.entities.contains { entity in
            entity.attributes.contains { $0.type == .transformable && $0.valueTransformerName != nil }
        }

        var statements: [String: E.Prepared] = [:]
        func statement(_ query: SQLQuery) throws -> E.Prepared {
            if let prepared = statements[query.sql] { return prepared }
            let prepared = try executor.prepare(query.sql)
            statements[query.sql] = prepared
            return prepared
        }

        // Each statement is built once per save: one INSERT per entity, one
        // UPDATE per entity and set of changed columns. A row reads its plan
        // through a reference (no copy of the entity per row), and takes the
        // previous row's when it has the same shape (a save's rows come by
        // entity, and its updates mostly change the same columns).
        var insertPlans: [Int: RowPlan<RowInsert, E.Prepared>] = [:]
        var updatePlans: [[Int]: RowPlan<RowUpdate, E.Prepared>] = [:]
        // The rows written, laid out by entity in batches as a fetch's are,
        // and handed back by their place in the request.
        var insertedRows = WrittenRows(entityCount: model.entities.count, rows: request.inserts.count, now: now)
        var updatedRows = WrittenRows(entityCount: model.entities.count, rows: request.updates.count, now: now)
        result.changes.inserted.reserveCapacity(request.inserts.count)
        result.changes.updated.reserveCapacity(request.updates.count)
        let history = executor.history
        var current: RowPlan<RowInsert, E.Prepared>?
        // One array of bindings for every row.
        var bindings: [SQLValue] = []
        // The rows written are laid out for the row cache, and their IDs
        // hashed, apart from the statements: between two runs SQLite's
        // work leaves little of the columns or the table in the processor's
        // caches. The cache's rows go in runs of a few hundred (their
        // values still at hand), the IDs in one pass at the end.
        var written: [(index: Int, plan: RowPlan<RowInsert, E.Prepared>, toOne: [Int64?])] = []
        written.reserveCapacity(Self.rowsLaidOutAtOnce)
        var insertedIDs: [ObjectID] = []
        insertedIDs.reserveCapacity(request.inserts.count)
        try request.inserts.withUnsafeBufferPointer { inserts in
            func layOut() {
                for row in written {
                    insertedRows.add(row.plan.shape, key: permanentKeys[row.index], version: 1, values: inserts[row.index].values,
                                     toOne: row.toOne)
                }
                written.removeAll(keepingCapacity: true)
            }
            for index in inserts.indices {
                let id = inserts[index].id
                if current?.shape.entity != id.entity {
                    if insertPlans[id.entity] == nil {
                        let entity = model.entities[id.entity]
                        let row = schema.insertRow(entity)
                        insertPlans[id.entity] = RowPlan(entity: entity, row: row, prepared: try statement(row.query),
                                                         targets: targetEntities(entity))
                    }
                    current = insertPlans[id.entity]
                }
                guard let plan = current else { continue }
                let key = permanentKeys[index]
                let keys = inserts[index].toOne
                let toOne = keys.contains { ($0 ?? 0) < 0 } ? keys.map(resolve) : keys
                plan.row.bindings(key: key, version: 1, values: try storedValues(inserts[index].values, of: plan, hasTransformers),
                                  toOne: toOne, targetEntity: plan.targets, into: &bindings)
                try executor.run(plan.prepared, bindings)
                written.append((index, plan, toOne))
                if written.count == Self.rowsLaidOutAtOnce { layOut() }
                let permanent = ObjectID(entity: id.entity, root: id.root, primaryKey: key)
                insertedIDs.append(permanent)
                history?.inserted(permanent)
            }
            layOut()
        }
        for id in insertedIDs { result.changes.inserted.insert(id) }

        var conflicts: [RowConflict] = []
        var previous: RowPlan<RowUpdate, E.Prepared>?
        // (Each update read in place through a buffer: a plain loop copies
        // each one out, its four arrays retained and released, for every row.)
        try request.updates.withUnsafeBufferPointer { updates in
            for index in updates.indices {
                let id = updates[index].id
                let plan: RowPlan<RowUpdate, E.Prepared>
                if let previous, previous.shape.entity == id.entity, previous.attributeSlots == updates[index].attributeSlots,
                   previous.toOneSlots == updates[index].toOneSlots {
                    plan = previous
                } else {
                    let (attributeSlots, toOneSlots) = (updates[index].attributeSlots, updates[index].toOneSlots)
                    let shape = [id.entity] + attributeSlots + [-1] + toOneSlots
                    if let known = updatePlans[shape] {
                        plan = known
                    } else {
                        let entity = model.entities[id.entity]
                        let row = schema.updateRow(
                            entity, attributes: attributeSlots.map { entity.attributes[$0] },
                            toOne: toOneSlots.compactMap { slot in entity.relationships.first { !$0.isToMany && $0.slot == slot } })
                        plan = RowPlan(entity: entity, row: row, prepared: try statement(row.query), targets: targetEntities(entity),
                                       attributeSlots: attributeSlots, toOneSlots: toOneSlots)
                        updatePlans[shape] = plan
                    }
                    previous = plan
                }
                let written = updates[index].toOne
                let toOne = written.contains { ($0 ?? 0) < 0 } ? written.map(resolve) : written
                let expectedVersion = updates[index].expectedVersion
                let changed = try executor.run(plan.prepared, plan.row.bindings(
                    values: try storedValues(updates[index].values, of: plan, hasTransformers), toOne: toOne, key: id.primaryKey,
                    expectedVersion: expectedVersion, targetEntity: plan.targets))
                guard changed == 1 else {
                    conflicts.append(RowConflict(id: id, current: try storeRow(id, executor)))
                    updatedRows.skip()
                    continue
                }
                updatedRows.add(plan.shape, key: id.primaryKey, version: expectedVersion &+ 1, values: updates[index].values, toOne: toOne)
                result.changes.updated.insert(id)
                executor.history?.updated(id, plan.propertyNames)
            }
        }

        // Links before deletes: a deleted row takes every link to it along,
        // even one this save added.
        for change in request.links {
            let entity = model.entities[change.owner.entity]
            guard let insert = schema.insertLink(change.relationship, in: entity),
                  let remove = schema.deleteLink(change.relationship, in: entity) else { continue }
            let owner = resolve(change.owner.primaryKey)!
            for added in change.added { try executor.run(statement(insert), [.integer(owner), .integer(resolve(added)!)]) }
            for removed in change.removed { try executor.run(statement(remove), [.integer(owner), .integer(resolve(removed)!)]) }
            executor.history?.updated(ObjectID(entity: change.owner.entity, root: change.owner.root, primaryKey: owner),
                                      [change.relationship.name])
        }
        // Order keys of ordered relationships, after every row and link is written.
        for change in request.links {
            guard let order = change.order,
                  let update = schema.updateOrderKey(change.relationship, in: model.entities[change.owner.entity]) else { continue }
            let owner = resolve(change.owner.primaryKey)!
            for (index, member) in order.enumerated() {
                try executor.run(statement(update), [.integer(SQLSchema.orderKeyValue(at: index)), .integer(resolve(member)!),
                                                     .integer(owner)])
            }
        }

        // The delete rules, worked out again over the rows as this
        // transaction sees them (SaveRules.swift); a refusal waits for the
        // conflicts, which go first (the merge policy may change the request).
        let reader = SQLDeletionReader(executor: executor, schema: schema)
        var rules: Result<DeletionPlan?, any Error>
        do {
            rules = .success(try request.deletionPlan(keys: keys, model: model, reader: reader))
        } catch {
            rules = .failure(error)
        }

        for delete in request.deletes {
            let entity = model.entities[delete.id.entity]
            let query = schema.deleteRow(entity, checkingVersion: delete.expectedVersion != nil)
            var bindings: [SQLValue] = [.integer(delete.id.primaryKey)]
            if let version = delete.expectedVersion { bindings.append(.integer(version)) }
            try executor.history?.willDelete(CollectionOfOne(delete.id), executor)
            let changed = try executor.run(statement(query), bindings)
            if changed == 0, let current = try storeRow(delete.id, executor) {
                // Still there at another version: a conflict.
                conflicts.append(RowConflict(id: delete.id, current: current))
                continue
            }
            // Its links go with it.
            for relationship in entity.relationships where relationship.isToMany {
                if let links = schema.deleteLinks(relationship, in: entity) {
                    try executor.run(statement(links), [.integer(delete.id.primaryKey)])
                }
            }
            result.changes.deleted.insert(delete.id)
            executor.history?.deleted(delete.id)
        }
        guard conflicts.isEmpty else { throw ConflictsFound(conflicts: conflicts) }
        // What the rules reach beyond the request: rows deleted, links cleared.
        if let plan = try rules.get() {
            result.ruleChanges = try plan.run(executor, schema: schema, model: model, except: Set(request.deletes.map(\.id)))
        }
        // Links the request wrote to rows no longer there.
        let dangling = try request.danglingLinks(keys: keys, model: model, reader: reader)
        result.ruleChanges.updated.formUnion(try DeletionPlan.clear(dangling, executor, schema: schema))
        result.ruleChanges.updated.subtract(result.changes.deleted)
        result.insertedKeys = permanentKeys
        result.insertedNodes = insertedRows.nodes()
        result.updatedNodes = updatedRows.nodes()
        // A row the rules changed has a new version: its node, if any, is stale.
        if !result.ruleChanges.updated.isEmpty {
            for (index, insert) in request.inserts.enumerated() where result.ruleChanges.updated.contains(
                ObjectID(entity: insert.id.entity, root: insert.id.root, primaryKey: permanentKeys[index])) {
                result.insertedNodes[index] = nil
            }
            for (index, update) in request.updates.enumerated() where result.ruleChanges.updated.contains(update.id) {
                result.updatedNodes[index] = nil
            }
        }
        result.changes.deleted.formUnion(result.ruleChanges.deleted)
        if !result.ruleChanges.updated.isEmpty {
            result.changes.updated.formUnion(result.ruleChanges.updated.subtracting(result.changes.inserted))
        }
        // Rows the request learnt are gone (deleted by another store): they go from the cache too.
        result.changes.deleted.formUnion(request.gone)
        return result
    }

    /// Where the database's text cannot hold U+0000 (PostgreSQL), a value
    /// that does is refused before anything is written, naming the property
    /// (SQLite keeps it).
    private func checkText(_ rows: some Sequence<(ObjectID, [PredicateValue])>) throws(StoreError) {
        guard !schema.dialect.textHoldsNUL else { return }
        var failures: [SaveValidationFailure] = []
        for (id, values) in rows {
            let entity = model.entities[id.entity]
            for attribute in entity.attributes where attribute.slot < values.count {
                if case .string(let text) = values[attribute.slot], text.utf8.contains(0) {
                    failures.append(SaveValidationFailure(
                        object: "<\(entity.name) \(id.primaryKey)>", property: attribute.name,
                        reason: "this database's text cannot hold U+0000 (the NUL character), and this value does"))
                }
            }
        }
        guard failures.isEmpty else { throw .validation(failures) }
    }

    /// An object's values as the store keeps them: transformable attributes
    /// as the bytes their registered transformers make.
    /// (Given the plan, not its entity: an entity read out of the plan is a
    /// copy, a retain of each of its arrays, made for every row.)
    private func storedValues<Row, Prepared>(_ values: [PredicateValue], of plan: RowPlan<Row, Prepared>,
                                             _ needed: Bool) throws -> [PredicateValue] {
        guard needed else { return values }
        let entity = plan.entity
        var result = values
        for attribute in entity.attributes where attribute.type == .transformable && attribute.valueTransformerName != nil {
            do {
                result[attribute.slot] = try transformers.storedValue(values[attribute.slot], of: attribute)
            } catch {
                throw StoreError.validation([SaveValidationFailure(
                    object: "<\(entity.name)>", property: attribute.name,
                    reason: "its value transformer '\(attribute.valueTransformerName!)' cannot store \(values[attribute.slot]): \(error)")])
            }
        }
        return result
    }

    /// The row with `id` as the store has it now, or nil when it is gone.
    private func storeRow<E: SQLExecutor>(_ id: ObjectID, _ executor: E) throws -> RowNode? {
        let entity = model.entities[id.entity]
        let query = schema.selectRow(entity)
        let layout = schema.rowLayout(entity)
        guard let columns = try executor.rows(query.sql, [.integer(id.primaryKey)]).first else { return nil }
        let row = ValueRow(columns)
        let member = layout.entityColumn.flatMap { layout.member(number: row.integer($0)) } ?? layout.members[0]
        return RowReader(member, base: 0, externalData: externalData, transformers: transformers)
            .node(row, primaryKey: id.primaryKey, version: row.integer(1), now: Date().timeIntervalSinceReferenceDate)
    }

    /// Inserts nodes of the model as new rows, with their relationships,
    /// inside the caller's transaction; the largest keys are recorded.
    package func importNodes<E: SQLExecutor>(_ nodes: [RowNode], _ executor: E, progress: ((WorkProgress) -> Void)?) throws {
        try checkText(nodes.lazy.map { ($0.id, $0.values) })
        var reporter = ProgressReporter(progress, .writingObjects, total: nodes.count)
        var links: [String: E.Prepared] = [:]
        var largest: [Int: Int64] = [:]
        // Which entity each imported row is, for to-one columns that
        // say which entity a key points at (models with inheritance).
        var numbers: [ObjectID: Int64] = [:]
        if model.entities.contains(where: { $0.superentity != nil }) {
            for node in nodes { numbers[node.id] = Int64(schema.entityNumber(model.entities[node.id.entity])) }
        }
        // What each entity's rows need, worked out at its first row: its
        // insert, its to-one destinations, and the link statements of the
        // to-many relationships it writes (shared by SQL text).
        var plans = [EntityImport<E.Prepared>?](repeating: nil, count: model.entities.count)
        var bindings: [SQLValue] = []
        for node in nodes {
            executor.history?.inserted(node.id)
            let entityIndex = node.id.entity
            let plan: EntityImport<E.Prepared>
            if let known = plans[entityIndex] {
                plan = known
            } else {
                let entity = model.entities[entityIndex]
                let insert = schema.insertRow(entity)
                var destinations: [Int: Entity] = [:]
                var entityLinks: [(slot: Int, statement: E.Prepared)] = []
                for relationship in entity.relationships {
                    if !relationship.isToMany {
                        destinations[relationship.slot] = model.entity(named: relationship.destination)
                        continue
                    }
                    // Join tables are written from one side only.
                    guard schema.writesLinks(of: relationship, in: entity),
                          let link = schema.insertLink(relationship, in: entity) else { continue }
                    let statement = try links[link.sql] ?? executor.prepare(link.sql)
                    links[link.sql] = statement
                    entityLinks.append((relationship.slot, statement))
                }
                plan = EntityImport<E.Prepared>(insert: insert, statement: try executor.prepare(insert.query.sql),
                                    destinations: destinations, links: entityLinks)
                plans[entityIndex] = plan
            }
            let root = node.id.root
            largest[root] = max(largest[root] ?? 0, node.id.primaryKey)
            plan.insert.bindings(key: node.id.primaryKey, version: node.version, values: node.values, toOne: node.toOne,
                                 targetEntity: { slot, key in
                                     guard let destination = plan.destinations[slot] else { return nil }
                                     return numbers[ObjectID(entity: destination, primaryKey: key)]
                                 }, into: &bindings)
            try executor.run(plan.statement, bindings)
            for (slot, statement) in plan.links {
                guard let targets = node.toManyKeys(at: slot) else { continue }
                for target in targets { try executor.run(statement, [.integer(node.id.primaryKey), .integer(target)]) }
            }
            reporter.advance()
        }
        // Order keys of ordered relationships, once every member's row is there.
        var orderKeys: [String: E.Prepared] = [:]
        for node in nodes {
            let entity = model.entities[node.id.entity]
            for relationship in entity.relationships where relationship.isToMany && relationship.isOrdered {
                guard let members = node.toManyKeys(at: relationship.slot), !members.isEmpty,
                      let update = schema.updateOrderKey(relationship, in: entity) else { continue }
                let statement = try orderKeys[update.sql] ?? executor.prepare(update.sql)
                orderKeys[update.sql] = statement
                for (index, member) in members.enumerated() {
                    try executor.run(statement, [.integer(SQLSchema.orderKeyValue(at: index)), .integer(member),
                                                 .integer(node.id.primaryKey)])
                }
            }
        }
        // The largest keys, recorded as Core Data records them.
        for (index, key) in largest {
            let query = schema.selectKeyMaximum(model.entities[index])
            var current: Int64 = 0
            if case .integer(let m)? = try executor.rows(query.sql, query.bindings).first?.first { current = m }
            if key > current {
                let update = schema.updateKeyMaximum(model.entities[index], to: key)
                try executor.run(executor.prepare(update.sql), update.bindings)
            }
        }
        reporter.finish()
    }
}

/// What an import writes for each row of one entity: its insert, its to-one
/// destinations by slot, and the link statements of the to-many
/// relationships it writes.
private struct EntityImport<Prepared> {
    let insert: RowInsert
    let statement: Prepared
    let destinations: [Int: Entity]
    let links: [(slot: Int, statement: Prepared)]
}
