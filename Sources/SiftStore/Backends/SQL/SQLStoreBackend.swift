// Store stage: what every SQL store answers a context with — SQL for what
// SQL can run, memory for a plan's residual; rows by key and links for
// faults and prefetching, with the statements the SQL stage builds; saves,
// batch changes and imports in one write transaction. A SQL backend
// (SQLite, PostgreSQL) supplies only how a statement runs, how its rows are
// read and how a write transaction begins and ends; the rest is written once,
// here. Plans and statements are made once per compiled request shape.

import Foundation
import Sift

/// A store whose rows live in SQL tables in Core Data's layout (`SQLiteStore`,
/// `PostgresStore`): what it shows of how it runs a request, and how it loads
/// rows in bulk. Written once for both.
///
/// ```swift
/// func show(_ text: String, in store: any SQLPersistentStore) throws {
///     let request = FetchRequest(entityName: "Employee", predicate: text)
///     print(try store.plan(request))                              // what SQL runs, what memory runs, and why
///     print(try store.sqlQuery(for: request, columns: .rows).sql)
/// }
/// ```
public protocol SQLPersistentStore: ImportingStore {
    /// The database's name, for plans and messages ("SQLite", "PostgreSQL").
    var databaseName: String { get }
    /// How the model is laid out in tables, and the database its statements are for.
    var schema: SQLSchema { get }
    /// Splits a request's predicate into what SQL runs and what memory runs.
    ///
    /// - Parameter request: The fetch to plan.
    /// - Returns: The plan: the predicate's SQL part, the residual memory evaluates, the sort keys memory
    ///   applies, and why; the request's arguments in place.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.notExpressibleInSQL` when the fetch cannot
    ///   be lowered to SQL at all.
    func plan(_ request: FetchRequest) throws(StoreError) -> FetchPlan
    /// A request's predicate, bound to the store's model and optimized.
    ///
    /// - Parameter request: The fetch whose predicate is bound.
    /// - Returns: The bound, optimized predicate; nil when the request has none.
    /// - Throws: `StoreError.invalidPredicate` when the predicate does not parse or fit the model.
    func bind(_ request: FetchRequest) throws(StoreError) -> BoundPredicate?
    /// The SQL a request runs when SQL runs all of its predicate; an error
    /// naming the first construct SQL cannot express (and where it is in the
    /// predicate's text) otherwise.
    ///
    /// - Parameters:
    ///   - request: The fetch.
    ///   - columns: What each row returns: whole rows, identifiers or a count.
    /// - Returns: The statement with its bindings, in the store's dialect.
    /// - Throws: `StoreError`: `.notExpressibleInSQL` when part of the fetch needs memory (with where in the
    ///   predicate's text, when known); `.unknownEntity` or `.invalidPredicate` when the request does not fit
    ///   the model.
    func sqlQuery(for request: FetchRequest, columns: SQLColumns) throws(StoreError) -> SQLQuery
    /// The one statement a dictionary fetch runs (its properties to fetch,
    /// grouping, having and distinctness); nil when part of it runs in memory.
    ///
    /// - Parameter request: The dictionary fetch, with its `propertiesToFetch`.
    /// - Returns: The statement with its bindings; nil when part of the fetch runs in memory.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidRequest` when the
    ///   request has no properties to fetch, a property is neither grouped nor aggregated, or a sort key names
    ///   no result; `.invalidPredicate` when a property, grouping key or predicate does not parse or fit the
    ///   model.
    func resultQuery(for request: FetchRequest) throws(StoreError) -> SQLQuery?
    /// The database's own plan for a query, one line per step.
    ///
    /// - Parameter query: The statement, with its bindings.
    /// - Returns: The lines of the database's plan (SQLite's `EXPLAIN QUERY PLAN`, PostgreSQL's `EXPLAIN`).
    /// - Throws: `StoreError`: the database's error when it cannot prepare or run the statement.
    func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String]
    /// Loads every object of a data set, in one transaction.
    ///
    /// - Parameters:
    ///   - dataSet: A data set of the store's model.
    ///   - progress: Told how many objects are written (``WorkProgress/Step/writingObjects``), as
    ///     ``WorkProgress`` says; nil for no reports.
    /// - Throws: `StoreError`, nothing written: `.modelMismatch` when the data set's model is not the store's;
    ///   the database's error when writing fails (a key the store already holds, say; on PostgreSQL,
    ///   `.validation` for a string holding U+0000, which its text cannot hold).
    func importDataSet(_ dataSet: DataSet, progress: ((WorkProgress) -> Void)?) throws(StoreError)
    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
    ///
    /// - Parameters:
    ///   - nodes: Rows of the store's model, with keys the store does not hold yet.
    ///   - progress: Told how many objects are written (``WorkProgress/Step/writingObjects``), as
    ///     ``WorkProgress`` says; nil for no reports.
    /// - Throws: `StoreError`, nothing written: the database's error when writing fails (a key the store
    ///   already holds, say).
    func importNodes(_ nodes: [RowNode], progress: ((WorkProgress) -> Void)?) throws(StoreError)
    /// Releases the store's connections, where it holds a pool of them (a
    /// server's); a store of one file keeps its connection.
    func close()
}

extension SQLPersistentStore {
    /// A statement's bindings, one line each, as its placeholders name them (`?1 = 40`, `$2 = 'S'`).
    ///
    /// - Parameter query: A statement of this store's dialect.
    /// - Returns: One line per binding, in order.
    public func bindingLines(_ query: SQLQuery) -> [String] {
        query.bindings.enumerated().map { "\(schema.dialect.placeholder($0 + 1)) = \($1)" }
    }

    /// Loads every object of a data set, in one transaction, with no progress reports.
    ///
    /// - Parameter dataSet: A data set of the store's model.
    /// - Throws: `StoreError`, nothing written, as ``SiftStore/SQLPersistentStore/importDataSet(_:progress:)`` does.
    public func importDataSet(_ dataSet: DataSet) throws(StoreError) {
        try importDataSet(dataSet, progress: nil)
    }

    /// Inserts nodes as new rows, in one transaction, with no progress reports.
    ///
    /// - Parameter nodes: Rows of the store's model, with keys the store does not hold yet.
    /// - Throws: `StoreError`, nothing written, as ``SiftStore/SQLPersistentStore/importNodes(_:progress:)`` does.
    public func importNodes(_ nodes: [RowNode]) throws(StoreError) {
        try importNodes(nodes, progress: nil)
    }

    /// The SQL a request runs, whole rows returned.
    ///
    /// - Parameter request: The fetch.
    /// - Returns: The statement with its bindings, in the store's dialect.
    /// - Throws: `StoreError`, as ``SiftStore/SQLPersistentStore/sqlQuery(for:columns:)`` does.
    public func sqlQuery(for request: FetchRequest) throws(StoreError) -> SQLQuery {
        try sqlQuery(for: request, columns: .rows)
    }
}

/// The hooks Sift's own SQL stores give the code they share (not public: a
/// store of your own implements ``PersistentStore``).
package protocol SQLStoreBackend: SQLPersistentStore {
    /// The SQL lowering for the model.
    var lowering: SQLLowering { get }
    /// Where the store is, for errors: a file's path, a server's schema.
    var location: String { get }
    /// Why the store refuses writes; nil when it takes them.
    var writesRefused: String? { get }
    /// Writes saves and imports with the store's statements.
    var writer: SQLSaveWriter { get }
    /// Runs a `.rows` query of `entity` and returns its rows as nodes,
    /// stored in the row cache. With `ownerColumn`, each row starts with
    /// an owner's key (a link query), passed to `owner` in row order.
    func fetchNodes(_ query: SQLQuery, entity: Entity, ownerColumn: Bool, owner: ((Int64) -> Void)?) throws(StoreError)
        -> [RowNode]
    /// Runs an `.identifiers` query of `entity`: each row's object ID, of the row's own entity.
    func fetchObjectIDs(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [ObjectID]
    /// Runs a query whose columns are integers, and returns them row after row.
    func fetchIntegers(_ query: SQLQuery, columns: Int) throws(StoreError) -> [Int64]
    /// Runs a query whose columns are values of `types`.
    func fetchValues(_ query: SQLQuery, types: [AttributeType]) throws(StoreError) -> [[PredicateValue]]
    /// Nil when the database would run `select`; why not (naming the limit),
    /// when it passes one of the database's limits: the planner then moves
    /// terms to memory.
    func refuses(_ select: SQLSelect) -> String?
    /// Runs `body` in one write transaction on one connection: committed
    /// when it returns (the changes it gives sent to other processes with the
    /// commit, where the database does that), rolled back when it throws,
    /// its error rethrown as it is. Keys for `reservingKeys` (how many, by
    /// root entity index) are reserved first where the database hands them
    /// out outside the transaction.
    func inWriteTransaction<T>(reservingKeys: [Int: Int64],
                               _ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws -> T
    /// The store's error for what a write threw.
    func storeError(_ error: any Error) -> StoreError
    /// Called after rows were loaded in bulk (PostgreSQL analyzes its tables).
    func didImport() throws(StoreError)
}

extension SQLStoreBackend {
    package func fetchNodes(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [RowNode] {
        try fetchNodes(query, entity: entity, ownerColumn: false, owner: nil)
    }

    public func rows(for fetch: CompiledFetch) throws(StoreError) -> [RowNode] {
        let plan = try sharedPlan(for: fetch)
        if plan.value.needsMemory { return try rowsWithResidual(fetch, plan.value) }
        return try fetchNodes(try statement(fetch, columns: .rows), entity: fetch.entity)
    }

    public func keys(for fetch: CompiledFetch) throws(StoreError) -> [ObjectID] {
        let plan = try sharedPlan(for: fetch)
        if plan.value.needsMemory { return try rowsWithResidual(fetch, plan.value).map(\.id) }
        return try fetchObjectIDs(try statement(fetch, columns: .identifiers), entity: fetch.entity)
    }

    public func count(for fetch: CompiledFetch) throws(StoreError) -> Int {
        let plan = try sharedPlan(for: fetch)
        if plan.value.needsMemory { return try rowsWithResidual(fetch, plan.value).count }
        let whole = fetch.request.fetchLimit == nil && fetch.request.fetchOffset == 0
        let query = try statement(fetch, columns: whole ? .count : .identifiers)
        if whole { return Int(clamping: try fetchIntegers(query, columns: 1).first ?? 0) }
        return try fetchObjectIDs(query, entity: fetch.entity).count
    }

    /// Runs a plan with a residual: SQL returns the candidate rows in order,
    /// the relationships the residual follows are loaded (one statement per
    /// key path), memory filters, then offset and limit apply.
    /// With sort keys the database cannot run, memory sorts the rows that
    /// pass before offset and limit apply.
    package func rowsWithResidual(_ fetch: CompiledFetch, _ plan: FetchPlan) throws(StoreError) -> [RowNode] {
        let entity = fetch.entity
        let candidates = try fetchNodes(try statement(fetch, columns: .rows), entity: entity)
        let residual = plan.residual?.fillingParameters(fetch.parameterValues)
        var paths = residual.map { RelationshipPaths.of($0) } ?? []
        for key in plan.sortKeysInMemory ?? [] { paths.formUnion(RelationshipPaths.of(key.expression, [:])) }
        for path in paths.sorted() {
            try loadPath(path, from: candidates, entity: entity)
        }
        let domain = RowNodeDomain(cache: rowCache)
        let current = candidates.compactMap { domain.snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
        var matching = current
        if let residual {
            let filter = MemoryPredicate(residual, domain: domain)
            matching = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(current) }
        }
        if let keys = plan.sortKeysInMemory {
            matching = try sortedInMemory(matching, by: keys, domain: domain) { $0.id.primaryKey < $1.id.primaryKey }
        }
        return fetch.request.page(matching)
    }

    /// A dictionary fetch as one statement when SQL can run all of it (the
    /// predicate, every property, the grouping and the having predicate),
    /// else in memory over the rows SQL selects.
    public func results(_ results: BoundDictionaryFetch, of fetch: CompiledFetch,
                        sort: [ResultSortKey]) throws(StoreError) -> [[PredicateValue]] {
        if let query = try resultQuery(results, of: fetch, sort: sort) {
            let rows = try fetchValues(query, types: results.columns.map(\.type.resultAttributeType))
            let types = results.columns.map(\.type)
            return rows.map { row in zip(row, types).map { resultValue($0, type: $1) } }
        }
        return try resultsInMemory(results, of: fetch, sort: sort)
    }

    /// The statement of a dictionary fetch; nil when part of it needs memory.
    package func resultQuery(_ results: BoundDictionaryFetch, of fetch: CompiledFetch,
                             sort: [ResultSortKey]) throws(StoreError) -> SQLQuery? {
        guard try sharedPlan(for: fetch).value.residual == nil else { return nil }
        do {
            return try lowering.selectResults(results, where: fetch.predicate, sortedBy: sort, limit: fetch.request.fetchLimit,
                                              offset: fetch.request.fetchOffset == 0 ? nil : fetch.request.fetchOffset)
        } catch {
            return nil
        }
    }

    public func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        try fetchNodes(schema.selectRows(entity, keys: keys), entity: entity)
    }

    public func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
                       loadingRows: Bool) throws(StoreError) -> [Int64: [Int64]] {
        guard let destination = model.entity(named: relationship.destination),
              let query = schema.selectLinks(relationship, in: entity, owners: owners, withRows: loadingRows) else {
            throw .unknownRelationship(relationship.name, entity: entity.name)
        }
        var links: [Int64: [Int64]] = [:]
        for owner in owners { links[owner] = [] }
        if loadingRows {
            var ownerKeys: [Int64] = []
            let fetched = try fetchNodes(query, entity: destination, ownerColumn: true) { ownerKeys.append($0) }
            for (node, ownerKey) in zip(fetched, ownerKeys) { links[ownerKey, default: []].append(node.id.primaryKey) }
        } else {
            let pairs = try fetchIntegers(query, columns: 2)
            for i in stride(from: 0, to: pairs.count - 1, by: 2) { links[pairs[i], default: []].append(pairs[i + 1]) }
        }
        return links
    }

    /// The plan of a compiled request's shape: made once, then kept with
    /// the shape (its statements take the request's arguments as parameters).
    package func plan(for fetch: CompiledFetch) throws(StoreError) -> FetchPlan {
        try sharedPlan(for: fetch).value
    }

    /// The plan of a compiled request's shape, made the first time it is
    /// asked for, by reference (what every fetch reads: no copy of the plan).
    package func sharedPlan(for fetch: CompiledFetch) throws(StoreError) -> SharedFetchPlan {
        if let plan = fetch.shape.plan.withLock({ $0 }) { return plan }
        let plan = SharedFetchPlan(try makePlan(fetch))
        fetch.shape.plan.withLock { $0 = plan }
        return plan
    }

    /// A statement of a compiled request's plan, its arguments bound:
    /// rendered once per shape, kind of columns, limit and offset.
    package func statement(_ fetch: CompiledFetch, columns: SQLColumns) throws(StoreError) -> SQLQuery {
        let plan = try sharedPlan(for: fetch)
        let request = fetch.request
        let deferred = plan.value.needsMemory
        // A negative limit is no limit, a negative offset skips nothing (as
        // SQLite reads them; PostgreSQL refuses them).
        let key = CompiledShape.StatementKey(
            columns: columns, limit: deferred ? nil : request.fetchLimit.flatMap { $0 < 0 ? nil : $0 },
            offset: deferred || request.fetchOffset <= 0 ? nil : request.fetchOffset)
        let query: SQLQuery
        if let rendered = fetch.shape.statements.withLock({ $0[key] }) {
            query = rendered
        } else {
            query = plan.value.fetch.query(terms: plan.value.sqlTerms, columns: columns, limit: key.limit, offset: key.offset)
            fetch.shape.statements.withLock { statements in
                if statements.count > 16 { statements.removeAll() }
                statements[key] = query
            }
        }
        guard !query.parameters.isEmpty else { return query }
        guard let bound = query.binding(fetch.parameterValues, dialect: schema.dialect) else {
            throw .notExpressibleInSQL(SQLLoweringError("an argument the statement cannot bind"), range: nil,
                                       text: request.predicateText)
        }
        return bound
    }

    /// Splits a compiled request's predicate into what SQL runs and what
    /// memory runs, lowering it once.
    private func makePlan(_ compiled: CompiledFetch) throws(StoreError) -> FetchPlan {
        let entity = compiled.entity
        let predicate = compiled.shape.predicate
        let rewrites = compiled.rewrites
        let fetch: SQLFetch
        let sort = compiled.sortKeys
        var sortKeysInMemory: [SQLSortKey]?
        var sortReason: String?
        do {
            fetch = try lowering.lower(entity.name, where: predicate, sortedBy: sort)
        } catch {
            // A sort key the database cannot run (a case-insensitive key
            // where it has no folding function): the rows come unsorted
            // and memory sorts them, as it would the whole fetch.
            do {
                fetch = try lowering.lower(entity.name, where: predicate, sortedBy: [])
            } catch {
                throw .notExpressibleInSQL(error, range: nil, text: nil)
            }
            sortKeysInMemory = sort
            sortReason = "sorting: \(error.description)"
        }
        var sql = fetch.terms.indices.filter { fetch.terms[$0].sql != nil }
        var residual = fetch.terms.indices.filter { fetch.terms[$0].sql == nil }
        var reasons = residual.compactMap { fetch.terms[$0].error?.description }
        if let sortReason { reasons.append(sortReason) }
        // Past the database's limits: the larger half of the SQL terms moves
        // to memory until the rest prepares. Each round halves what is left,
        // so there are at most log2(n) + 1 of them.
        while !sql.isEmpty, fetch.metrics(terms: sql).mayPassLimits,
              let refusal = refuses(fetch.statement(terms: sql, columns: .identifiers)) {
            let sizes = sql.map { fetch.terms[$0].sql?.size ?? 0 }
            let largest = Set(sql.indices.sorted { sizes[$0] > sizes[$1] }.prefix((sql.count + 1) / 2))
            residual += sql.indices.filter(largest.contains).map { sql[$0] }
            sql = sql.indices.filter { !largest.contains($0) }.map { sql[$0] }
            reasons.append(refusal)
        }
        func joined(_ indices: [Int]) -> BoundPredicate? {
            let ps = indices.sorted().map { fetch.terms[$0].predicate }
            return ps.isEmpty ? nil : ps.count == 1 ? ps[0] : .and(ps)
        }
        return FetchPlan(predicate: predicate, sql: joined(sql), residual: joined(residual), reasons: reasons, rewrites: rewrites,
                         sortKeysInMemory: sortKeysInMemory, fetch: fetch, sqlTerms: sql.sorted())
    }

    /// The SQL a request runs when SQL runs all of its predicate; an error
    /// naming the first construct SQL cannot express (and where it is in the
    /// predicate's text) otherwise.
    package func makeSQLQuery(for request: FetchRequest, columns: SQLColumns) throws(StoreError) -> SQLQuery {
        let fetch = try compile(request)
        let plan = try plan(for: fetch)
        if let term = plan.fetch.terms.first(where: { $0.error != nil }), let error = term.error {
            throw .notExpressibleInSQL(error, range: fetch.sourceRange(of: error.expression), text: request.predicateText)
        }
        if plan.needsMemory, let reason = plan.reasons.first {
            throw .notExpressibleInSQL(SQLLoweringError(reason), range: nil, text: request.predicateText)
        }
        return try statement(fetch, columns: columns)
    }
}
