// Store stage: what every SQL store answers a context with — SQL for what
// SQL can run, memory for a plan's residual; rows by key and links for
// faults and prefetching, with the statements the SQL stage builds. A SQL
// backend (SQLite, PostgreSQL) supplies only how a statement runs and how
// its rows are read; fetching is written once, here.

import Foundation
import Sift

/// A store whose rows live in SQL tables laid out by `SQLSchema`.
package protocol SQLStoreBackend: StoreBackend {
    /// How the model is laid out in tables, and the dialect of its statements.
    var schema: SQLSchema { get }
    /// The SQL lowering for the model.
    var lowering: SQLLowering { get }
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
    /// Runs `body` in one write transaction: committed when it returns (the
    /// changes it gives sent to other processes with the commit, where the
    /// database does that), rolled back when it throws (its error rethrown).
    func writeTransaction<T>(_ body: (any SQLExecutor) throws -> (T, StoreChanges)) throws(StoreError) -> T
}

extension SQLStoreBackend {
    package func fetchNodes(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [RowNode] {
        try fetchNodes(query, entity: entity, ownerColumn: false, owner: nil)
    }

    package func rows(for request: FetchRequest) throws(StoreError) -> [RowNode] {
        let entity = try self.entity(request.entityName)
        let plan = try makePlan(request)
        if plan.needsMemory { return try rowsWithResidual(request, plan, entity) }
        return try fetchNodes(plan.query(for: request, columns: .rows), entity: entity)
    }

    package func keys(for request: FetchRequest) throws(StoreError) -> [ObjectID] {
        let entity = try self.entity(request.entityName)
        let plan = try makePlan(request)
        if plan.needsMemory { return try rowsWithResidual(request, plan, entity).map(\.id) }
        return try fetchObjectIDs(plan.query(for: request, columns: .identifiers), entity: entity)
    }

    package func count(for request: FetchRequest) throws(StoreError) -> Int {
        let entity = try self.entity(request.entityName)
        var countRequest = request
        countRequest.sortDescriptors = []
        let plan = try makePlan(countRequest)
        if plan.needsMemory { return try rowsWithResidual(countRequest, plan, entity).count }
        let whole = request.fetchLimit == nil && request.fetchOffset == 0
        let query = plan.query(for: countRequest, columns: whole ? .count : .identifiers)
        if whole { return Int(clamping: try fetchIntegers(query, columns: 1).first ?? 0) }
        return try fetchObjectIDs(query, entity: entity).count
    }

    /// Runs a plan with a residual: SQL returns the candidate rows in order,
    /// the relationships the residual follows are loaded (one statement per
    /// key path), memory filters, then offset and limit apply.
    /// With sort keys the database cannot run, memory sorts the rows that
    /// pass before offset and limit apply.
    package func rowsWithResidual(_ request: FetchRequest, _ plan: FetchPlan, _ entity: Entity) throws(StoreError) -> [RowNode] {
        let candidates = try fetchNodes(plan.query(for: request, columns: .rows), entity: entity)
        var paths = plan.residual.map { RelationshipPaths.of($0) } ?? []
        for key in plan.sortKeysInMemory ?? [] { paths.formUnion(RelationshipPaths.of(key.expression, [:])) }
        for path in paths.sorted() {
            try loadPath(path, from: candidates, entity: entity)
        }
        let domain = RowNodeDomain(cache: rowCache)
        let current = candidates.compactMap { domain.snapshot.node(entity: entity.index, primaryKey: $0.id.primaryKey) }
        var matching = current
        if let residual = plan.residual {
            let filter = MemoryPredicate(residual, domain: domain)
            matching = try StoreError.evaluating { () throws(EvaluationError) in try filter.filter(current) }
        }
        if let keys = plan.sortKeysInMemory {
            matching = try sortedInMemory(matching, by: keys, domain: domain) { $0.id.primaryKey < $1.id.primaryKey }
        }
        return request.page(matching)
    }

    /// A dictionary fetch as one statement when SQL can run all of it (the
    /// predicate, every property, the grouping and the having predicate),
    /// else in memory over the rows SQL selects.
    package func results(_ fetch: BoundDictionaryFetch, request: FetchRequest,
                         sort: [ResultSortKey]) throws(StoreError) -> [[PredicateValue]] {
        if let query = try resultQuery(fetch, request: request, sort: sort) {
            let rows = try fetchValues(query, types: fetch.columns.map(\.type.resultAttributeType))
            let types = fetch.columns.map(\.type)
            return rows.map { row in zip(row, types).map { resultValue($0, type: $1) } }
        }
        return try resultsInMemory(fetch, request: request, sort: sort)
    }

    /// The statement of a dictionary fetch; nil when part of it needs memory.
    package func resultQuery(_ fetch: BoundDictionaryFetch, request: FetchRequest,
                             sort: [ResultSortKey]) throws(StoreError) -> SQLQuery? {
        let plan = try makePlan(objectRequest(request))
        guard plan.residual == nil else { return nil }
        do {
            return try lowering.selectResults(fetch, where: plan.predicate, sortedBy: sort, limit: request.fetchLimit,
                                              offset: request.fetchOffset == 0 ? nil : request.fetchOffset)
        } catch {
            return nil
        }
    }

    package func rows(_ entity: Entity, keys: [Int64]) throws(StoreError) -> [RowNode] {
        try fetchNodes(schema.selectRows(entity, keys: keys), entity: entity)
    }

    package func links(_ relationship: Relationship, of owners: [Int64], entity: Entity,
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

    /// Splits a request's predicate into what SQL runs and what memory runs,
    /// binding, optimizing and lowering it once.
    package func makePlan(_ request: FetchRequest) throws(StoreError) -> FetchPlan {
        let entity = try self.entity(request.entityName)
        var rewrites: [String] = []
        let predicate: BoundPredicate?
        switch request.predicate {
        case nil:
            predicate = nil
        case .bound(let bound):
            (predicate, rewrites) = Optimizer.standard.optimizeWithTrace(bound)
        case .format(let text, let arguments):
            do {
                var unoptimized = compiler
                unoptimized.optimizer = nil
                let bound = try unoptimized.bind(text, arguments: arguments, entity: request.entityName)
                (predicate, rewrites) = Optimizer.standard.optimizeWithTrace(bound)
            } catch {
                throw .invalidPredicate(error, text: text)
            }
        }
        let fetch: SQLFetch
        let sort = try sortKeys(request)
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
        let plan = try makePlan(request)
        if let term = plan.fetch.terms.first(where: { $0.error != nil }), let error = term.error {
            throw .notExpressibleInSQL(error, range: sourceRange(of: error.expression, in: request), text: request.predicateText)
        }
        if plan.needsMemory, let reason = plan.reasons.first {
            throw .notExpressibleInSQL(SQLLoweringError(reason), range: nil, text: request.predicateText)
        }
        return plan.query(for: request, columns: columns)
    }

    /// Where in the request's predicate text a bound expression came from.
    package func sourceRange(of expression: BoundExpression?, in request: FetchRequest) -> SourceRange? {
        guard let expression, case .format(let text, let arguments) = request.predicate,
              let syntax = try? PredicateParser.parse(text, arguments: arguments),
              let (_, ranges) = try? binder.bindWithSourceMap(syntax, entity: request.entityName)
        else { return nil }
        return ranges[expression]
    }
}
