// Store stage: contexts and their objects — uniquing, faults, batch faulting,
// relationship faults, prefetching, refresh.
//
// A context holds at most one object per object ID (uniquing): every fetch and
// relationship returns that same instance. An object is a fault until its
// values are needed; reading its ID, entity or `isFault` does not fire it.
// Firing reads the row cache when it holds a fresh node (within the context's
// staleness interval), and SQL otherwise, many faults at once when they came
// from one batch. A context registers with the row cache the objects whose
// values it holds, and unregisters them when it refreshes or resets them.

import Foundation
import Sift

/// Faults fetched together (one batch of a batched fetch), fired together.
final class FaultBatch {
    let members: [ObjectID]
    init(_ members: [ObjectID]) { self.members = members }
}

/// A scratch pad of objects over a store: uniquing, faulting, fetching.
///
/// A context is confined to one thread or task at a time.
public final class ObjectContext {
    /// The store the context reads.
    public let store: SQLiteStore
    /// How old, in seconds, a cached row may be and still fire a fault without
    /// SQL. The default, infinity, always trusts the row cache.
    public var stalenessInterval: Double = .infinity
    /// How a save resolves conflicts with changes other contexts saved.
    public var mergePolicy: MergePolicy = .error
    var objects: [ObjectID: ManagedObject] = [:]
    /// Objects with unsaved changes (inserted, updated, deleted), by ID.
    var changed: [ObjectID: ManagedObject] = [:]
    /// Deletes that a deny rule refuses, reported at save (if the object is
    /// still deleted then).
    var denied: [ObjectID: [SaveValidationFailure]] = [:]
    /// The last temporary key given to an inserted object.
    var nextTemporaryKey: Int64 = 0

    public init(store: SQLiteStore) {
        self.store = store
    }

    deinit {
        store.rowCache.unregister(objects.values.lazy.filter { $0.node != nil }.map(\.objectID))
    }

    /// How many objects the context holds.
    public var registeredObjectCount: Int { objects.count }

    /// The context's object for `id`: the one it holds, or a new fault.
    public func object(for id: ObjectID) -> ManagedObject {
        if let object = objects[id] { return object }
        let object = ManagedObject(objectID: id, entity: store.model.entities[id.entity], context: self)
        objects[id] = object
        return object
    }

    func register(_ object: ManagedObject) {
        objects[object.objectID] = object
    }

    func unregisterObject(_ object: ManagedObject) {
        objects[object.objectID] = nil
        if object.node != nil {
            object.node = nil
            store.rowCache.unregister(object.objectID)
        }
    }

    // MARK: Fetching

    /// Fetches the objects a request selects.
    public func fetch(_ request: FetchRequest) throws(StoreError) -> [ManagedObject] {
        let entity = try store.entity(request.entityName)
        if needsPendingChanges(request, entity) { return try fetchIncludingChanges(request, entity) }
        let plan = try store.plan(request)
        if plan.residual != nil {
            let nodes = try fetchWithResidual(request, plan, entity)
            return try realize(nodes, request, entity)
        }
        if request.fetchBatchSize > 0 {
            let keys = try store.fetchIntegers(try store.sqlQuery(for: request, plan: plan, columns: .identifiers))
            let ids = keys.map { ObjectID(entity: entity.index, primaryKey: $0) }
            var result: [ManagedObject] = []
            result.reserveCapacity(ids.count)
            for start in stride(from: 0, to: ids.count, by: request.fetchBatchSize) {
                let batch = FaultBatch(Array(ids[start..<min(start + request.fetchBatchSize, ids.count)]))
                for id in batch.members {
                    let object = object(for: id)
                    if object.isFault { object.batch = batch }
                    result.append(object)
                }
            }
            return result
        }
        let nodes = try store.fetchNodes(try store.sqlQuery(for: request, plan: plan, columns: .rows), entity: entity)
        return try realize(nodes, request, entity)
    }

    /// The context's objects for fetched nodes: faults backed by the row
    /// cache, or realized when the request says so; then the prefetching.
    func realize(_ nodes: [RowNode], _ request: FetchRequest, _ entity: Entity) throws(StoreError) -> [ManagedObject] {
        objects.reserveCapacity(objects.count + nodes.count)
        var newlyRealized: [ObjectID] = []
        let result = nodes.map { node -> ManagedObject in
            let object = object(for: node.id)
            if !request.returnsObjectsAsFaults {
                if object.node == nil { newlyRealized.append(node.id) }
                object.node = node
                object.batch = nil
            }
            return object
        }
        store.rowCache.register(newlyRealized)
        for keyPath in request.relationshipKeyPathsForPrefetching {
            try prefetch(keyPath, from: nodes, entity: entity)
        }
        return result
    }

    /// The number of objects a request selects (one `COUNT(*)` statement
    /// when SQL can run the whole predicate).
    public func count(for request: FetchRequest) throws(StoreError) -> Int {
        let entity = try store.entity(request.entityName)
        if needsPendingChanges(request, entity) { return try fetchIncludingChanges(request, entity).count }
        var countRequest = request
        countRequest.sortDescriptors = []
        let plan = try store.plan(countRequest)
        if plan.residual != nil { return try fetchWithResidual(countRequest, plan, entity).count }
        let whole = request.fetchLimit == nil && request.fetchOffset == 0
        let query = try store.sqlQuery(for: countRequest, plan: plan, columns: whole ? .count : .identifiers)
        if whole { return Int(try store.fetchIntegers(query).first ?? 0) }
        return try store.fetchIntegers(query).count
    }

    /// The IDs of the objects a request selects.
    public func fetchObjectIDs(_ request: FetchRequest) throws(StoreError) -> [ObjectID] {
        let entity = try store.entity(request.entityName)
        if needsPendingChanges(request, entity) { return try fetchIncludingChanges(request, entity).map(\.objectID) }
        let plan = try store.plan(request)
        if plan.residual != nil { return try fetchWithResidual(request, plan, entity).map(\.id) }
        return try store.fetchIntegers(try store.sqlQuery(for: request, plan: plan, columns: .identifiers))
            .map { ObjectID(entity: entity.index, primaryKey: $0) }
    }

    /// Runs a plan with a residual: SQL returns the candidate rows in order,
    /// the relationships the residual follows are loaded (one statement per
    /// key path), memory filters, then offset and limit apply.
    func fetchWithResidual(_ request: FetchRequest, _ plan: FetchPlan, _ entity: Entity) throws(StoreError) -> [RowNode] {
        guard let residual = plan.residual else { return [] }
        let candidates = try store.fetchNodes(try store.sqlQuery(for: request, plan: plan, columns: .rows), entity: entity)
        for path in RelationshipPaths.of(residual).sorted() {
            try prefetch(path, from: candidates, entity: entity)
        }
        let filter = MemoryPredicate(residual, domain: RowNodeDomain(cache: store.rowCache))
        let snapshot = RowNodeDomain(cache: store.rowCache).snapshot
        var matching = candidates.compactMap { snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
            .filter(filter.evaluate)
        if request.fetchOffset > 0 { matching = Array(matching.dropFirst(request.fetchOffset)) }
        if let limit = request.fetchLimit { matching = Array(matching.prefix(limit)) }
        return matching
    }

    /// The named properties of the objects a request selects, as dictionaries:
    /// attributes as values, to-one relationships as object references.
    public func fetchDictionaries(_ request: FetchRequest, properties: [String]) throws(StoreError) -> [[String: PredicateValue]] {
        let entity = try store.entity(request.entityName)
        for name in properties where entity.property(named: name) == nil {
            throw .unknownKey(name, entity: entity.name)
        }
        let plan = try store.plan(request)
        let nodes = plan.residual != nil
            ? try fetchWithResidual(request, plan, entity)
            : try store.fetchNodes(try store.sqlQuery(for: request, plan: plan, columns: .rows), entity: entity)
        return nodes.map { node in
            var dictionary: [String: PredicateValue] = [:]
            for name in properties {
                switch entity.property(named: name)! {
                case .attribute(let a):
                    dictionary[name] = node.values[a.slot]
                case .relationship(let r) where !r.isToMany:
                    dictionary[name] = node.toOne[r.slot].map {
                        .object(ObjectReference(entity: r.destination, id: $0))
                    } ?? .null
                case .relationship:
                    break
                }
            }
            return dictionary
        }
    }

    // MARK: Faults

    func attach(_ node: RowNode, to object: ManagedObject) {
        if object.node == nil { store.rowCache.register(object.objectID) }
        object.node = node
        object.batch = nil
    }

    /// Whether a cached node is fresh enough to fire a fault with.
    func isFresh(_ node: RowNode) -> Bool {
        stalenessInterval.isInfinite || Date().timeIntervalSinceReferenceDate - node.fetchTimestamp <= stalenessInterval
    }

    /// Fires an object's fault, and the faults of its batch with it.
    func fire(_ object: ManagedObject) throws(StoreError) {
        let members = object.batch?.members.compactMap { objects[$0] }.filter(\.isFault) ?? [object]
        try fireFaults(members.contains { $0 === object } ? members : members + [object])
    }

    /// Fires many faults with at most one statement per entity: those whose
    /// rows the cache holds fresh need none.
    public func fireFaults(_ faults: [ManagedObject]) throws(StoreError) {
        var missing: [Int: [ManagedObject]] = [:]
        for object in faults where object.isFault {
            if let node = store.rowCache.node(object.objectID), isFresh(node) {
                attach(node, to: object)
            } else {
                missing[object.objectID.entity, default: []].append(object)
            }
        }
        for (entityIndex, objects) in missing {
            let entity = store.model.entities[entityIndex]
            let keys = objects.map { PredicateValue.int($0.objectID.primaryKey) }
            let query = try rowsQuery(entity, primaryKeys: keys)
            let nodes = try store.fetchNodes(query, entity: entity)
            let byKey = Dictionary(nodes.map { ($0.id.primaryKey, $0) }, uniquingKeysWith: { a, _ in a })
            for object in objects {
                if let node = byKey[object.objectID.primaryKey] { attach(node, to: object) }
            }
        }
        for object in faults where object.isFault {
            // The row is gone from the store: the object is not there any more.
            throw .sqlite(SQLiteError(code: 0, message: "no row for \(object) in the store", sql: nil))
        }
    }

    /// The rows of `entity` with the given primary keys, as one query.
    func rowsQuery(_ entity: Entity, primaryKeys: [PredicateValue]) throws(StoreError) -> SQLQuery {
        let primaryKey = BoundExpression(.evaluatedObject, type: .object(entity.name))
        let references = primaryKeys.map { key -> PredicateValue in
            if case .int(let k) = key { return .object(ObjectReference(entity: entity.name, id: k)) }
            return key
        }
        let predicate = BoundPredicate.comparison(BoundComparison(
            primaryKey, .in, .constant(.array(references), type: .collection(.object(entity.name)))))
        do {
            return try store.lowering.select(entity.name, where: predicate)
        } catch {
            throw .notExpressibleInSQL(error, range: nil, text: nil)
        }
    }

    /// Turns an object back into a fault, releasing its values (and its
    /// unsaved changes, unless `keepingChanges`).
    public func refresh(_ object: ManagedObject, keepingChanges: Bool = false) {
        if !keepingChanges, !object.isInserted {
            object.discardChanges()
            if !object.isDeleted { changed[object.objectID] = nil }
        }
        guard object.node != nil else { return }
        object.node = nil
        store.rowCache.unregister(object.objectID)
    }

    /// Forgets every object and every unsaved change: the context holds none.
    public func reset() {
        store.rowCache.unregister(objects.values.lazy.filter { $0.node != nil }.map(\.objectID))
        for object in objects.values {
            object.node = nil
            object.discardChanges()
        }
        objects.removeAll()
        changed = [:]
        denied = [:]
    }

    // MARK: Relationships

    /// The primary keys of a to-many relationship of `object`, loaded with one
    /// statement the first time and kept in the object's node.
    func toManyKeys(of object: ManagedObject, _ relationship: Relationship) throws(StoreError) -> [Int64] {
        let node = try object.values()
        if let keys = node.toMany[relationship.slot] { return keys }
        let keys = try loadToMany(relationship, of: [node], entity: object.entity)[node.id.primaryKey] ?? []
        return keys
    }

    /// Loads a to-many relationship for several nodes with one statement; the
    /// nodes are updated in the row cache (and in their objects).
    @discardableResult
    func loadToMany(_ relationship: Relationship, of nodes: [RowNode], entity: Entity,
                    destinationRows: Bool = false) throws(StoreError) -> [Int64: [Int64]] {
        let schema = store.schema
        let q = SQLSchema.quote
        let destination = store.model.entity(named: relationship.destination)!
        let owners = nodes.map { SQLValue.integer($0.id.primaryKey) }
        let json = SQLValue.text("[" + owners.map(\.description).joined(separator: ",") + "]")
        var links: [Int64: [Int64]] = [:]
        for node in nodes { links[node.id.primaryKey] = [] }
        let sql: String
        switch schema.storage(of: relationship, in: entity) {
        case .inverseForeignKey(let table, let column):
            sql = destinationRows
                ? try rowsSQL(destination, owner: "t0.\(q(column))", from: "\(q(table)) AS t0", where: "t0.\(q(column))")
                : "SELECT t0.\(q(column)), t0.\"Z_PK\" FROM \(q(table)) AS t0 WHERE t0.\(q(column)) IN (SELECT value FROM json_each(?1)) ORDER BY t0.\"Z_PK\""
        case .joinTable(let table, let source, let target):
            sql = destinationRows
                ? try rowsSQL(destination, owner: "j.\(q(source))",
                              from: "\(q(table)) AS j JOIN \(q(schema.table(destination))) AS t0 ON t0.\"Z_PK\" = j.\(q(target))",
                              where: "j.\(q(source))")
                : "SELECT j.\(q(source)), j.\(q(target)) FROM \(q(table)) AS j WHERE j.\(q(source)) IN (SELECT value FROM json_each(?1)) ORDER BY j.\(q(target))"
        case .foreignKey:
            throw .unknownRelationship(relationship.name, entity: entity.name)
        }
        if destinationRows {
            var owner: [Int64] = []
            let fetched = try store.fetchNodes(SQLQuery(sql: sql, bindings: [json]), entity: destination,
                                               extraLeadingColumns: 1) { row in owner.append(row.integer(0)) }
            for (node, ownerKey) in zip(fetched, owner) { links[ownerKey, default: []].append(node.id.primaryKey) }
        } else {
            var pairs: [(Int64, Int64)] = []
            do {
                try store.withConnection { connection in
                    try connection.forEachRow(sql, [json]) { row in
                        pairs.append((row.integer(0), row.integer(1)))
                        return true
                    }
                }
            } catch let error as SQLiteError {
                throw .sqlite(error)
            } catch {
                throw .sqlite(SQLiteError(code: 1, message: "\(error)", sql: sql))
            }
            for (owner, target) in pairs { links[owner, default: []].append(target) }
        }
        // Keep the loaded keys in the cached nodes (as they are now: other
        // prefetches may have filled other slots), so memory evaluation and
        // later reads see them.
        let updated = store.rowCache.setToMany(
            slot: relationship.slot,
            Dictionary(uniqueKeysWithValues: nodes.map { ($0.id, links[$0.id.primaryKey] ?? []) }))
        for node in updated {
            if let object = objects[node.id], object.node != nil { object.node = node }
        }
        return links
    }

    /// A SELECT of a destination's rows, with the owner's key as the first column.
    func rowsSQL(_ destination: Entity, owner: String, from: String, where column: String) throws(StoreError) -> String {
        let q = SQLSchema.quote
        let toOne = destination.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }.map(\.name)
        let columns = ([SQLSchema.primaryKey, SQLSchema.version] + destination.attributes.map(\.name) + toOne)
            .map { "t0.\(q($0))" }
        return "SELECT \(owner), \(columns.joined(separator: ", ")) FROM \(from) WHERE \(column) IN (SELECT value FROM json_each(?1)) ORDER BY t0.\"Z_PK\""
    }

    // MARK: Prefetching

    /// Fetches the objects along a relationship key path for `nodes`, one
    /// statement per key of the path.
    func prefetch(_ keyPath: String, from nodes: [RowNode], entity: Entity) throws(StoreError) {
        var current = nodes
        var currentEntity = entity
        for key in keyPath.split(separator: ".").map(String.init) {
            guard let relationship = currentEntity.relationship(named: key) else {
                throw .unknownRelationship(keyPath, entity: entity.name)
            }
            let destination = store.model.entity(named: relationship.destination)!
            if relationship.isToMany {
                let links = try loadToMany(relationship, of: current, entity: currentEntity, destinationRows: true)
                let keys = Set(links.values.joined())
                current = keys.compactMap { store.rowCache.node(ObjectID(entity: destination.index, primaryKey: $0)) }
            } else {
                let keys = Array(Set(current.compactMap { $0.toOne[relationship.slot] })).sorted()
                current = keys.isEmpty ? [] : try store.fetchNodes(try rowsQuery(destination, primaryKeys: keys.map(PredicateValue.int)),
                                                                   entity: destination)
            }
            for node in current { _ = object(for: node.id) }
            currentEntity = destination
        }
    }
}
