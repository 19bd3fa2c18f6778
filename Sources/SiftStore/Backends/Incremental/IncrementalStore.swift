// Store stage: the incremental store — contexts on a backend of one's own
// (`IncrementalStoreBackend`). Each fetch sends the backend the terms it
// accepts and evaluates the rest in memory over the rows that come back,
// the relationships those terms follow loaded a key path at a time; rows
// go into the row cache with their versions and fetch times, so faults fire
// from it while fresh, a batch at a time from the backend otherwise; the
// backend's references map to object IDs (`ReferenceTable`); a save is one
// change set, its delete rules worked out here over the backend's rows
// (SaveRules.swift), answered with new versions and references or with the
// conflicts the backend found. Requests reach the backend one at a time
// unless it says it takes them concurrently.

import Foundation
import Sift

/// A store on a backend of your own (an ``IncrementalStoreBackend``), as
/// Core Data's `NSIncrementalStore` is: contexts fetch, fault, prefetch and
/// save through it as through the built-in stores.
///
/// ```swift
/// let store = try IncrementalStore(backend: MyWebService(), model: model)
/// let context = ObjectContext(store: store)
/// let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == 'Sales'"))
/// ```
public final class IncrementalStore<Backend: IncrementalStoreBackend>: PersistentStore, @unchecked Sendable {
    public let model: DataModel
    /// The nodes of the rows read so far, shared by every context.
    public let rowCache: RowCache
    public let functions: FunctionRegistry
    /// Who hears about the store's saves.
    public let observers = StoreObservers()
    /// The requests compiled so far, by shape.
    public let compiledFetches = CompiledFetchCache()
    /// The backend.
    public let backend: Backend
    /// The store's identifier, in its objects' URIs.
    public let identifier: String
    /// Each row's reference and key, both ways.
    let references: LockedState<ReferenceTable<Backend.Reference>>
    /// One backend request at a time, unless the backend takes them
    /// concurrently; it counts the requests sent that way. (A lock around a
    /// value the sanitizer can see: one around `()` it reports as a race.)
    private let serial = LockedState(0)

    /// A store on `backend`, for `model`, with the identity the backend gives
    /// (``IncrementalStoreBackend/loadMetadata()``).
    ///
    /// - Parameters:
    ///   - backend: The backend that holds the rows.
    ///   - model: The model its rows follow.
    ///   - functions: The application's functions predicates may call.
    /// - Throws: `StoreError`: `.modelMismatch` when the backend's rows follow another model version;
    ///   `.server` when it fails to say.
    public init(backend: Backend, model: DataModel, functions: FunctionRegistry = FunctionRegistry()) throws(StoreError) {
        let metadata: BackendMetadata
        do {
            metadata = try backend.loadMetadata()
        } catch {
            throw .server("the backend did not say what it holds: \(error)", sql: nil)
        }
        if let hash = metadata.modelVersionHash, hash != model.versionHash {
            throw .modelMismatch(path: "the backend \(metadata.identifier)", storeHash: hash, modelHash: model.versionHash)
        }
        let identifier = metadata.identifier
        self.backend = backend
        self.model = model
        self.identifier = identifier
        self.functions = functions
        let table = LockedState(ReferenceTable<Backend.Reference>(roots: model.entities.count))
        self.references = table
        if backend.wantsRegistrations {
            // Contexts register objects with the row cache; the backend hears of them by reference.
            self.rowCache = RowCache(model: model) { [weak backend] ids, registered in
                guard let backend else { return }
                let objects = table.withLock { table in
                    ids.compactMap { id in
                        table.reference(for: id.primaryKey, root: id.root).map { (entityName: model.entities[id.entity].name, reference: $0) }
                    }
                }
                guard !objects.isEmpty else { return }
                if registered { backend.objectsRegistered(objects) } else { backend.objectsUnregistered(objects) }
            }
        } else {
            self.rowCache = RowCache(model: model)
        }
    }

    // MARK: References

    /// The ID of the object the backend calls `reference`, in `entityName`'s
    /// table (subentities share their root's references); it is given a key
    /// the first time it is asked for.
    ///
    /// - Parameters:
    ///   - reference: The object's reference.
    ///   - entityName: Its entity.
    /// - Returns: The ID, or nil when the model has no such entity.
    public func objectID(for reference: Backend.Reference, entityName: String) -> ObjectID? {
        guard let entity = model.entity(named: entityName), let key = try? key(for: reference, root: entity.rootIndex) else { return nil }
        return ObjectID(entity: entity, primaryKey: key)
    }

    /// The backend's reference of an object.
    ///
    /// - Parameter objectID: An object's ID (a temporary ID has no reference yet).
    /// - Returns: Its reference, or nil.
    public func reference(for objectID: ObjectID) -> Backend.Reference? {
        objectID.primaryKey > 0 ? knownReference(objectID.primaryKey, root: objectID.root) : nil
    }

    /// An object's URI, as Core Data's `uriRepresentation()` writes it:
    /// `x-coredata://<store identifier>/<Entity>/p<reference>`.
    ///
    /// - Parameter objectID: A saved object's ID.
    /// - Returns: The URI, or nil for an object with no reference yet.
    public func uri(for objectID: ObjectID) -> URL? {
        guard let reference = reference(for: objectID) else { return nil }
        let text = "\(reference)".addingPercentEncoding(withAllowedCharacters: .urlPathAllowed.subtracting(["/"])) ?? ""
        return URL(string: "x-coredata://\(identifier)/\(model.entities[objectID.entity].name)/p\(text)")
    }

    /// The ID of the object a URI names (``uri(for:)``'s form), when the URI
    /// is of this store and names an entity of its model.
    ///
    /// - Parameter uri: An object's URI, `x-coredata://<store identifier>/<Entity>/p<reference>`.
    /// - Returns: The object's ID, or nil.
    public func objectID(for uri: URL) -> ObjectID? where Backend.Reference: LosslessStringConvertible {
        let parts = uri.path.split(separator: "/", omittingEmptySubsequences: true)
        guard uri.scheme == "x-coredata", uri.host == identifier, parts.count == 2, parts[1].hasPrefix("p"),
              let reference = Backend.Reference(String(parts[1].dropFirst())) else { return nil }
        return objectID(for: reference, entityName: String(parts[0]))
    }

    private func key(for reference: Backend.Reference, root: Int) throws(StoreError) -> Int64 {
        try references.withLock { table throws(StoreError) in
            if let key = table.key(for: reference, root: root) { return key }
            guard let key = table.add(reference, root: root, preferred: backend.primaryKey(for: reference)) else {
                throw .keysExhausted(entity: model.entities[root].name)
            }
            return key
        }
    }

    private func reference(_ key: Int64, root: Int) throws(StoreError) -> Backend.Reference {
        guard let reference = knownReference(key, root: root) else {
            throw .objectNotFound(ObjectReference(entity: model.entities[root].name, id: key))
        }
        return reference
    }

    /// The reference of a key: the one the backend gave, or, for a backend
    /// whose keys are its references, the one it names for the key.
    private func knownReference(_ key: Int64, root: Int) -> Backend.Reference? {
        references.withLock { table in
            if let reference = table.reference(for: key, root: root) { return reference }
            guard let reference = backend.reference(forPrimaryKey: key), table.key(for: reference, root: root) == nil else { return nil }
            table.set(reference, key: key, root: root)
            return reference
        }
    }

    // MARK: The backend

    /// Calls the backend, one request at a time unless it takes them
    /// concurrently; its errors become `StoreError.server`.
    private func call<T>(_ body: () throws -> T) throws(StoreError) -> T {
        do {
            if backend.allowsConcurrentRequests { return try body() }
            return try serial.withLock { sent in
                sent &+= 1
                return try body()
            }
        } catch let error as StoreError {
            throw error
        } catch {
            throw .server("the backend failed: \(error)", sql: nil)
        }
    }

    /// A backend row as the row cache holds it: a node of its own.
    private func node(_ row: BackendRow<Backend.Reference>) throws(StoreError) -> RowNode {
        let (entity, key, values, toOne) = try parts(row, byReference: false)
        return RowNode(id: ObjectID(entity: entity, primaryKey: key), version: row.version, values: values, toOne: toOne,
                       toMany: [[Int64]?](repeating: nil, count: entity.toManyCount))
    }

    /// Backend rows as the row cache holds them, in their order: the rows of
    /// each entity in one batch, by column, as the SQL stores read theirs;
    /// keyed by the store's keys, or (`byReference`, for a backend whose
    /// references are `Int64`) by the backend's references, as a
    /// ``NodeAnsweringBackend`` gives its nodes.
    func nodes(_ rows: [BackendRow<Backend.Reference>], byReference: Bool = false) throws(StoreError) -> [RowNode] {
        let now = Date().timeIntervalSinceReferenceDate
        var collectors: [Int: RowCollector] = [:]
        var order: [(entity: Int, row: Int)] = []
        order.reserveCapacity(rows.count)
        for row in rows {
            let (entity, key, values, toOne) = try parts(row, byReference: byReference)
            let index = collectors[entity.index, default: RowCollector(
                entity: entity.index, root: entity.rootIndex, attributeCount: entity.attributes.count,
                toOneCount: entity.toOneCount, toManyCount: entity.toManyCount)]
                .append(key: key, version: row.version, values: values, toOne: toOne, now: now)
            order.append((entity.index, index))
        }
        var made: [Int: [RowNode]] = [:]
        for (entity, var collector) in collectors { made[entity] = collector.take(now: now) }
        return order.map { made[$0.entity]![$0.row] }
    }

    /// A backend row's entity, key, attribute values by slot and to-one keys by slot, checked against the model.
    private func parts(_ row: BackendRow<Backend.Reference>, byReference: Bool) throws(StoreError) -> (Entity, Int64, [PredicateValue], [Int64?]) {
        func key(for reference: Backend.Reference, root: Int) throws(StoreError) -> Int64 {
            guard byReference else { return try self.key(for: reference, root: root) }
            guard let reference = reference as? Int64 else { throw .unexpected("a backend of nodes has Int64 references") }
            return reference
        }
        guard let entity = model.entity(named: row.entityName) else {
            throw .server("the backend gave a row of '\(row.entityName)', which is not an entity of the model", sql: nil)
        }
        var values: [PredicateValue] = []
        values.reserveCapacity(entity.attributes.count)
        for attribute in entity.attributes {
            let raw = row.values[attribute.name] ?? .null
            guard let value = DataSet.convert(raw, to: attribute.type) else {
                throw .server("the backend gave \(entity.name) \(row.reference) the value \(raw) for '\(attribute.name)', "
                              + "\(attribute.type.mismatch(raw))", sql: nil)
            }
            values.append(value)
        }
        var toOne = [Int64?](repeating: nil, count: entity.toOneCount)
        for relationship in entity.relationships where !relationship.isToMany {
            guard let target = row.toOne[relationship.name], let destination = model.entity(named: relationship.destination) else { continue }
            toOne[relationship.slot] = try key(for: target, root: destination.rootIndex)
        }
        return (entity, try key(for: row.reference, root: entity.rootIndex), values, toOne)
    }

    /// The terms of a predicate the backend evaluates, and those memory does.
    func split(_ predicate: BoundPredicate?) -> (sent: BoundPredicate?, residual: BoundPredicate?) {
        guard let predicate else { return (nil, nil) }
        let terms: [BoundPredicate]
        if case .and(let operands) = predicate { terms = operands } else { terms = [predicate] }
        let capabilities = backend.capabilities
        let sent = terms.filter(capabilities.evaluates)
        let residual = terms.filter { !capabilities.evaluates($0) }
        func joined(_ terms: [BoundPredicate]) -> BoundPredicate? { terms.isEmpty ? nil : terms.count == 1 ? terms[0] : .and(terms) }
        return (joined(sent), joined(residual))
    }

    // MARK: Reading

    /// How a request runs: the terms the backend receives, those memory
    /// evaluates, and whether memory sorts and pages — what `explain` shows
    /// for a SQL store.
    ///
    /// - Parameter request: The fetch.
    /// - Returns: The split.
    /// - Throws: `StoreError.invalidPredicate` when the request does not compile.
    public func plan(_ request: FetchRequest) throws(StoreError) -> BackendPlan {
        let fetch = try compile(request)
        let (sent, residual) = split(fetch.predicate)
        let capabilities = backend.capabilities
        let sorts = capabilities.sorts && !fetch.sortKeys.isEmpty
        let pages = capabilities.pages && residual == nil && (sorts || fetch.sortKeys.isEmpty)
        return BackendPlan(backend: sent, memory: residual, memorySorts: !sorts && !fetch.sortKeys.isEmpty,
                           memoryPages: !pages && (request.fetchLimit != nil || request.fetchOffset > 0))
    }

    /// The rows a compiled request selects: the backend's answer to the terms
    /// it accepts, then the rest evaluated in memory, sorted and paged where
    /// the backend did not.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The rows' nodes, in order, offset and limit applied.
    /// - Throws: `StoreError`: `.server` when the backend fails; `.evaluation` when a pattern runs out of its budget.
    public func rows(for fetch: CompiledFetch) throws(StoreError) -> [RowNode] {
        let (sent, residual) = split(fetch.predicate)
        let capabilities = backend.capabilities
        let sorts = capabilities.sorts && !fetch.sortKeys.isEmpty
        let pages = capabilities.pages && residual == nil && (sorts || fetch.sortKeys.isEmpty)
        let request = BackendFetch(entityName: fetch.entity.name, predicate: sent,
                                   sortDescriptors: sorts ? fetch.request.sortDescriptors : nil,
                                   offset: pages ? fetch.request.fetchOffset : 0, limit: pages ? fetch.request.fetchLimit : nil,
                                   prefetchKeyPaths: fetch.request.relationshipKeyPathsForPrefetching,
                                   patternStepLimit: EvaluationBudget.remainingSteps ?? fetch.request.regularExpressionStepLimit)
        var fetched: [RowNode]
        if let answering = backend as? any NodeAnsweringBackend {
            fetched = try keyed(try call { try answering.fetchNodes(request) })
        } else {
            fetched = try self.nodes(try call { try backend.fetch(request) })
        }
        // A fetch with no order comes in key order, as from every store: put
        // in that order before the rows are stored, so that the cache keeps
        // the very array the context is given (and can count its
        // registrations once). A residual's filter keeps the order.
        let keyOrder = !sorts && fetch.sortKeys.isEmpty
        if keyOrder { fetched.sort { $0.id.primaryKey < $1.id.primaryKey } }
        var nodes = rowCache.storeFetched(fetched)
        let entity = fetch.entity
        if let residual {
            // The relationships the terms left for memory follow, a key path at a time.
            var paths = RelationshipPaths.of(residual)
            if !sorts { for key in fetch.sortKeys { paths.formUnion(RelationshipPaths.of(key.expression, [:])) } }
            for path in paths.sorted() { _ = try loadPath(path, from: nodes, entity: entity) }
            let domain = RowNodeDomain(cache: rowCache)
            let current = nodes.compactMap { domain.snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
            let filter = MemoryPredicate(residual, domain: domain)
            nodes = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(current) }
        }
        if !sorts, !keyOrder {
            if residual == nil {
                var paths = Set<String>()
                for key in fetch.sortKeys { paths.formUnion(RelationshipPaths.of(key.expression, [:])) }
                for path in paths.sorted() { _ = try loadPath(path, from: nodes, entity: entity) }
            }
            nodes = try sortedNodes(nodes, fetch, domain: RowNodeDomain(cache: rowCache))
        }
        return pages ? nodes : fetch.request.page(nodes)
    }

    /// The IDs of the objects a compiled request selects.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The IDs, in order, offset and limit applied.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    public func keys(for fetch: CompiledFetch) throws(StoreError) -> [ObjectID] {
        try rows(for: fetch).map(\.id)
    }

    /// How many objects a compiled request selects.
    ///
    /// - Parameter fetch: The request, compiled by `compile(_:)`.
    /// - Returns: The number of objects, offset and limit applied.
    /// - Throws: `StoreError`, as ``rows(for:)`` does.
    public func count(for fetch: CompiledFetch) throws(StoreError) -> Int {
        let (sent, residual) = split(fetch.predicate)
        if residual == nil, fetch.request.fetchLimit == nil, fetch.request.fetchOffset == 0 {
            let request = BackendFetch(entityName: fetch.entity.name, predicate: sent, sortDescriptors: nil, offset: 0, limit: nil,
                                       patternStepLimit: EvaluationBudget.remainingSteps ?? fetch.request.regularExpressionStepLimit)
            if let count = try call({ try backend.count(request) }) { return count }
        }
        return try rows(for: fetch).count
    }

    /// The rows of `entity` with these keys: one backend request for the batch.
    ///
    /// - Parameters:
    ///   - entity: The entity (or an ancestor) of the rows.
    ///   - keys: Their primary keys.
    /// - Returns: The nodes of the rows the backend holds.
    /// - Throws: `StoreError.server` when the backend fails.
    public func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        let wanted = keys.compactMap { knownReference($0, root: entity.rootIndex) }
        guard !wanted.isEmpty else { return [] }
        if let answering = backend as? any NodeAnsweringBackend, let references = wanted as? [Int64] {
            return rowCache.storeFetched(try keyed(try call { try answering.nodes(references, entityName: entity.name) }))
        }
        let rows = try call { try backend.rows(wanted, entityName: entity.name) }
        return rowCache.storeFetched(try nodes(rows))
    }

    /// The members of a to-many relationship for each owner: one backend
    /// request, and one more for the members' rows with `loadingRows`.
    ///
    /// - Parameters:
    ///   - relationship: A to-many relationship of `entity`.
    ///   - owners: The owners' primary keys.
    ///   - entity: The owners' entity.
    ///   - loadingRows: Whether the members' rows are read into the row cache too.
    /// - Returns: Each owner's member keys.
    /// - Throws: `StoreError`: `.unknownRelationship` for a relationship of another entity; `.server` when the
    ///   backend fails.
    public func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
                      loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]] {
        guard let destination = model.entity(named: relationship.destination) else {
            throw .unknownRelationship(relationship.name, entity: entity.name)
        }
        let owned = owners.compactMap { key in knownReference(key, root: entity.rootIndex).map { (key, $0) } }
        var links: [Int64: [Int64]] = [:]
        for owner in owners { links[owner] = [] }
        guard !owned.isEmpty else { return links }
        let answer = try call { try backend.destinations(of: relationship.name, entityName: entity.name, owners: owned.map(\.1)) }
        for (key, reference) in owned {
            var members: [Int64] = []
            for member in answer[reference] ?? [] { members.append(try self.key(for: member, root: destination.rootIndex)) }
            links[key] = members
        }
        if loadingRows {
            let members = Array(Set(links.values.joined()))
            let cached = rowCache.snapshot()
            let missing = members.filter { cached.node(entity: destination.rootIndex, primaryKey: $0) == nil }
            if !missing.isEmpty { _ = try rows(destination, keys: missing) }
        }
        return links
    }

    // MARK: Changes the backend tells of

    /// Tells the store of changes made in the backend by others (another
    /// client of the same service, say): their rows leave the row cache, so
    /// the next read sees them new, deleted ones are forgotten, and the
    /// store's observers hear of them as of a save (a context merges them
    /// with `mergeChanges(from:)`, a fetched results controller moves its objects).
    ///
    /// - Parameters:
    ///   - inserted: Rows inserted, by entity name and reference.
    ///   - updated: Rows changed.
    ///   - deleted: Rows deleted.
    public func backendDidChange(inserted: [(entityName: String, reference: Backend.Reference)] = [],
                                 updated: [(entityName: String, reference: Backend.Reference)] = [],
                                 deleted: [(entityName: String, reference: Backend.Reference)] = []) {
        func ids(_ rows: [(entityName: String, reference: Backend.Reference)]) -> Set<ObjectID> {
            Set(rows.compactMap { objectID(for: $0.reference, entityName: $0.entityName) })
        }
        let changes = StoreChanges(inserted: ids(inserted), updated: ids(updated), deleted: ids(deleted))
        guard !changes.isEmpty else { return }
        rowCache.remove(changes.updated.union(changes.deleted))
        for id in changes.deleted { references.withLock { $0.remove(key: id.primaryKey, root: id.root) } }
        announce(changes)
    }

    /// Tells the store that the backend now calls an object by another
    /// reference (a row written offline under a reference of the backend's
    /// own, which its server later gave a permanent one): the object keeps
    /// its ID, and rows read under either reference are that object.
    ///
    /// - Parameters:
    ///   - old: The reference the object had.
    ///   - new: The reference it has now.
    ///   - entityName: Its entity.
    /// - Returns: False when the store already holds another object under `new` (the caller then announces
    ///   the old object deleted); true otherwise, also when it never met `old`.
    @discardableResult
    public func backendDidRename(_ old: Backend.Reference, to new: Backend.Reference, entityName: String) -> Bool {
        guard let entity = model.entity(named: entityName) else { return true }
        return references.withLock { table in
            guard table.key(for: old, root: entity.rootIndex) != nil else { return true }
            return table.rename(old, to: new, root: entity.rootIndex)
        }
    }

    // MARK: Saving

    /// Sends one save to the backend as a change set, its delete rules
    /// worked out over the backend's rows; all of it is written, or none.
    ///
    /// - Parameter request: The changes.
    /// - Returns: `.committed` with what was written, or `.conflicts` with the rows the backend found moved.
    /// - Throws: `StoreError`: `.validation` when a deny rule refuses; `.server` when the backend fails (nothing
    ///   written: the context keeps its changes, to retry).
    public func apply(_ request: SaveRequest) throws(StoreError) -> SaveResponse {
        let plan: DeletionPlan?
        do {
            plan = try request.deletionPlan(keys: [:], model: model, reader: BackendReader(store: self))
        } catch {
            throw StoreError(error)
        }
        // Links the request writes to rows the backend no longer holds (another context deleted them):
        // cleared, or refused when required, as every store does.
        let dangling = try danglingLinks(request)
        var changes = BackendChanges<Backend.Reference>()
        changes.mergePolicy = request.mergePolicy
        func object(_ key: Int64, root: Int) throws(StoreError) -> BackendObject<Backend.Reference> {
            key < 0 ? .inserted(key) : .existing(try reference(key, root: root))
        }
        func values(_ row: [PredicateValue], of entity: Entity) -> [String: PredicateValue] {
            var named: [String: PredicateValue] = [:]
            for attribute in entity.attributes where row[attribute.slot] != .null { named[attribute.name] = row[attribute.slot] }
            return named
        }
        func toOne(_ keys: [Int64?], of entity: Entity) throws(StoreError) -> [String: BackendObject<Backend.Reference>] {
            var named: [String: BackendObject<Backend.Reference>] = [:]
            for relationship in entity.relationships where !relationship.isToMany {
                guard let key = keys[relationship.slot], let destination = model.entity(named: relationship.destination) else { continue }
                named[relationship.name] = try object(key, root: destination.rootIndex)
            }
            return named
        }
        func kept(_ keys: [Int64?], of entity: Entity) -> [Int64?] {
            var keys = keys
            for relationship in entity.relationships where !relationship.isToMany {
                if let key = keys[relationship.slot], let destination = model.entity(named: relationship.destination),
                   dangling.contains(ObjectID(entity: destination, primaryKey: key)) { keys[relationship.slot] = nil }
            }
            return keys
        }
        var request = request
        var relinked = Set<ObjectID>()
        for index in request.inserts.indices {
            let entity = model.entities[request.inserts[index].id.entity]
            let toOne = kept(request.inserts[index].toOne, of: entity)
            if toOne != request.inserts[index].toOne { relinked.insert(request.inserts[index].id) }
            request.inserts[index].toOne = toOne
        }
        for index in request.updates.indices {
            let entity = model.entities[request.updates[index].id.entity]
            let toOne = kept(request.updates[index].toOne, of: entity)
            if toOne != request.updates[index].toOne { relinked.insert(request.updates[index].id) }
            request.updates[index].toOne = toOne
        }
        for insert in request.inserts {
            let entity = model.entities[insert.id.entity]
            changes.inserts.append(.init(temporaryID: insert.id.primaryKey, entityName: entity.name,
                                         values: values(insert.values, of: entity), toOne: try toOne(insert.toOne, of: entity)))
        }
        for update in request.updates {
            let entity = model.entities[update.id.entity]
            changes.updates.append(.init(reference: try reference(update.id.primaryKey, root: update.id.root), entityName: entity.name,
                                         expectedVersion: update.expectedVersion, values: values(update.values, of: entity),
                                         toOne: try toOne(update.toOne, of: entity),
                                         changedAttributes: entity.attributes.filter { update.attributeSlots.contains($0.slot) }.map(\.name),
                                         changedToOne: entity.relationships.filter {
                                             !$0.isToMany && update.toOneSlots.contains($0.slot)
                                         }.map(\.name)))
        }
        for id in request.kept.sorted(by: { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }) {
            guard let reference = knownReference(id.primaryKey, root: id.root) else { continue }
            changes.kept.append(.init(reference: reference, entityName: model.entities[id.entity].name))
        }
        var deleted = Set<ObjectID>()
        for delete in request.deletes where deleted.insert(delete.id).inserted {
            guard let reference = knownReference(delete.id.primaryKey, root: delete.id.root) else { continue }
            changes.deletes.append(.init(reference: reference, entityName: model.entities[delete.id.entity].name,
                                         expectedVersion: delete.expectedVersion))
        }
        var cascaded = Set<ObjectID>()
        for id in plan?.deleted ?? [] where deleted.insert(id).inserted {
            cascaded.insert(id)
            changes.deletes.append(.init(reference: try reference(id.primaryKey, root: id.root),
                                         entityName: model.entities[id.entity].name, expectedVersion: nil))
        }
        var cleared = Set<ObjectID>()
        for clear in plan?.cleared ?? [] {
            guard let destination = model.entity(named: clear.relationship.destination) else { continue }
            var rows: [Backend.Reference] = []
            for id in clear.rows { rows.append(try reference(id.primaryKey, root: id.root)) }
            var targets: [Backend.Reference] = []
            for key in clear.targets { targets.append(try reference(key, root: destination.rootIndex)) }
            changes.clears.append(.init(entityName: clear.entity.name, relationship: clear.relationship.name, rows: rows, targets: targets))
            cleared.formUnion(clear.rows)
        }
        for change in request.links {
            // A to-many whose inverse is to-one changes through its members' keys.
            if let destination = model.entity(named: change.relationship.destination),
               let inverse = change.relationship.inverse.flatMap({ destination.relationship(named: $0) }), !inverse.isToMany { continue }
            guard let destination = model.entity(named: change.relationship.destination) else { continue }
            var added: [BackendObject<Backend.Reference>] = []
            for key in change.added where !dangling.contains(ObjectID(entity: destination, primaryKey: key)) {
                added.append(try object(key, root: destination.rootIndex))
            }
            let removed = change.removed.compactMap { knownReference($0, root: destination.rootIndex) }
            changes.links.append(.init(owner: try object(change.owner.primaryKey, root: change.owner.root),
                                       entityName: model.entities[change.owner.entity].name,
                                       relationship: change.relationship.name, added: added, removed: removed))
        }

        switch try call({ try backend.save(changes) }) {
        case .conflicts(let conflicts):
            var found: [RowConflict] = []
            for conflict in conflicts {
                guard let entity = model.entity(named: conflict.entityName) else { continue }
                let id = ObjectID(entity: entity, primaryKey: try key(for: conflict.reference, root: entity.rootIndex))
                found.append(RowConflict(id: id, current: try conflict.current.map(node)))
            }
            return .conflicts(found)
        case .saved(let versions, let newReferences):
            var result = SaveResult()
            for insert in request.inserts where insert.id.primaryKey < 0 {
                guard let reference = newReferences[insert.id.primaryKey] else {
                    throw .server("the backend saved a new \(model.entities[insert.id.entity].name) but gave it no reference", sql: nil)
                }
                let key = try references.withLock { table throws(StoreError) -> Int64 in
                    if let existing = table.key(for: reference, root: insert.id.root) {
                        throw .duplicateReference(entity: model.entities[insert.id.root].name, reference: "\(reference) (key \(existing))")
                    }
                    guard let key = table.add(reference, root: insert.id.root, preferred: backend.primaryKey(for: reference)) else {
                        throw .keysExhausted(entity: model.entities[insert.id.root].name)
                    }
                    return key
                }
                result.keys[insert.id.primaryKey] = key
            }
            // An object written again under its old key (a merge policy kept what another context deleted)
            // keeps its key, under the reference the backend gave it now.
            for insert in request.inserts where insert.id.primaryKey > 0 {
                guard let reference = newReferences[insert.id.primaryKey] else { continue }
                references.withLock { table in
                    table.remove(key: insert.id.primaryKey, root: insert.id.root)
                    _ = table.set(reference, key: insert.id.primaryKey, root: insert.id.root)
                }
            }
            let keys = result.keys
            let now = Date().timeIntervalSinceReferenceDate
            for insert in request.inserts {
                let entity = model.entities[insert.id.entity]
                let id = ObjectID(entity: entity, primaryKey: SaveRequest.resolve(insert.id.primaryKey, keys) ?? insert.id.primaryKey)
                let version = try versions[reference(id.primaryKey, root: id.root)] ?? 1
                result.nodes[insert.id] = RowNode(id: id, version: version, fetchTimestamp: now, values: insert.values,
                                                  toOne: insert.toOne.map { SaveRequest.resolve($0, keys) },
                                                  toMany: [[Int64]?](repeating: nil, count: entity.toManyCount))
                result.changes.inserted.insert(id)
            }
            for update in request.updates {
                let version = try versions[reference(update.id.primaryKey, root: update.id.root)] ?? update.expectedVersion &+ 1
                result.nodes[update.id] = RowNode(id: update.id, version: version, fetchTimestamp: now, values: update.values,
                                                  toOne: update.toOne.map { SaveRequest.resolve($0, keys) },
                                                  toMany: [[Int64]?](repeating: nil, count: model.entities[update.id.entity].toManyCount))
                result.changes.updated.insert(update.id)
            }
            result.ruleChanges.deleted = cascaded
            // Rows whose written links were cleared: inserted ones by their permanent IDs.
            let relinkedIDs = relinked.map { id in
                ObjectID(entity: id.entity, root: id.root, primaryKey: SaveRequest.resolve(id.primaryKey, keys) ?? id.primaryKey)
            }
            result.ruleChanges.updated = cleared.union(plan?.touched ?? []).union(relinkedIDs).subtracting(deleted)
            result.changes.deleted = deleted.union(request.gone)
            result.changes.updated.formUnion(result.ruleChanges.updated)
            for id in deleted { references.withLock { $0.remove(key: id.primaryKey, root: id.root) } }
            rowCache.store(result.nodes.values)
            rowCache.remove(result.changes.deleted)
            rowCache.remove(result.ruleChanges.updated)
            return .committed(result)
        }
    }
}

extension IncrementalStore {
    /// The rows the request links to (to-one keys it writes, to-many members
    /// it adds) that the backend no longer holds; throws a validation error
    /// when such a link is required.
    fileprivate func danglingLinks(_ request: SaveRequest) throws(StoreError) -> Set<ObjectID> {
        var targets: [Int: Set<Int64>] = [:]   // by destination entity index
        var required: [(owner: ObjectID, relationship: Relationship, destination: Entity, key: Int64)] = []
        func note(_ owner: ObjectID, _ rows: [Int64?]) {
            for relationship in model.entities[owner.entity].relationships where !relationship.isToMany {
                guard let key = rows[relationship.slot], key > 0, let destination = model.entity(named: relationship.destination) else { continue }
                targets[destination.index, default: []].insert(key)
                if !relationship.isOptional { required.append((owner, relationship, destination, key)) }
            }
        }
        for insert in request.inserts { note(insert.id, insert.toOne) }
        for update in request.updates { note(update.id, update.toOne) }
        for change in request.links {
            guard let destination = model.entity(named: change.relationship.destination) else { continue }
            targets[destination.index, default: []].formUnion(change.added.filter { $0 > 0 })
        }
        var gone = Set<ObjectID>()
        let reader = BackendReader(store: self)
        for (index, keys) in targets {
            let destination = model.entities[index]
            let found: [Int64: Int]
            do {
                found = try reader.entities(of: keys.sorted(), in: destination)
            } catch {
                throw StoreError(error)
            }
            for key in keys where found[key].map({ !model.isEntity(at: $0, kindOf: destination.index) }) ?? true {
                gone.insert(ObjectID(entity: destination, primaryKey: key))
            }
        }
        let failures = required.filter { gone.contains(ObjectID(entity: $0.destination, primaryKey: $0.key)) }.map { link in
            SaveValidationFailure(object: "<\(model.entities[link.owner.entity].name) \(link.owner.primaryKey)>", property: link.relationship.name,
                                  reason: "is required, but <\(link.destination.name) \(link.key)>, which it points at, is deleted")
        }
        guard failures.isEmpty else { throw .validation(failures) }
        return gone
    }
}

extension IncrementalStoreBackend {
    /// No key of its own: Sift numbers a root entity's rows in the order it first meets them.
    ///
    /// - Parameter reference: A row's reference.
    /// - Returns: nil.
    public func primaryKey(for reference: Reference) -> Int64? { nil }

    /// No reference for a key the backend did not give.
    ///
    /// - Parameter primaryKey: A row's key.
    /// - Returns: nil.
    public func reference(forPrimaryKey primaryKey: Int64) -> Reference? { nil }
}

/// The backend's relationships, as the delete rules read them.
private struct BackendReader<Backend: IncrementalStoreBackend>: DeletionReader {
    let store: IncrementalStore<Backend>

    func pairs(_ relationship: Relationship, of entity: Entity, owners: [Int64]) throws -> [(owner: Int64, member: Int64)] {
        if relationship.isToMany {
            let links = try store.links(relationship, of: owners, entity: entity, loadingRows: false)
            return owners.flatMap { owner in (links[owner] ?? []).map { (owner, $0) } }
        }
        let rows = try store.rows(entity, keys: owners)
        return rows.compactMap { row in row.toOneKey(at: relationship.slot).map { (row.id.primaryKey, $0) } }
    }

    func entities(of keys: [Int64], in entity: Entity) throws -> [Int64: Int] {
        var found: [Int64: Int] = [:]
        for row in try store.rows(entity, keys: keys) { found[row.id.primaryKey] = row.id.entity }
        return found
    }
}
