// Store stage: the split planner.
//
// For a fetch against the SQLite store, the optimized predicate is split in
// two: the terms SQL can run, and a residual that runs in memory over the rows
// SQL returns (a median, an index into a list, anything the SQL lowering
// refuses). With a residual, SQL returns every candidate row in order; the
// residual filters them, and only then do offset and limit apply, so sort,
// limit, offset and batch size keep their meaning.
//
// SQL that SQLite would refuse for its size (an expression tree deeper than
// 1 000, more than 32 766 variables, a parser stack overflow, more than 64
// joined tables) also moves to memory: the largest terms first, until what
// is left prepares. Memory answers any predicate the parser accepts, so a
// predicate's size never changes its answer.
//
// The predicate is bound, optimized and lowered once: the SQL stage lowers
// it term by term and says which terms it can express, the plan keeps the
// lowered fetch, and every statement the fetch runs is written from it.

import Foundation
import Sift

/// How a fetch runs: what SQL does, what memory does, and why.
public struct FetchPlan: CustomStringConvertible {
    /// The whole predicate, bound and optimized (nil: every row).
    public var predicate: BoundPredicate?
    /// The part SQLite runs (nil: every row of the entity).
    public var sql: BoundPredicate?
    /// The part that runs in memory over the rows, if any.
    public var residual: BoundPredicate?
    /// Why each part of the residual could not run in SQL.
    public var reasons: [String]
    /// The optimizer rules that changed the predicate.
    public var rewrites: [String]
    /// The fetch as the SQL stage lowered it, once; and the terms SQL runs.
    let fetch: SQLFetch
    let sqlTerms: [Int]

    public var description: String {
        var lines: [String] = []
        lines.append("sql: " + (sql.map { "\n" + indent($0.outline) } ?? "every row"))
        if let residual {
            lines.append("memory:\n" + indent(residual.outline))
            lines.append("because: " + reasons.joined(separator: "; "))
        }
        if !rewrites.isEmpty { lines.append("rewrites: " + rewrites.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    private func indent(_ text: String) -> String {
        text.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }

    /// The SQL of the plan's SQL part for `request`, returning `columns`;
    /// with a residual, without limit and offset (they apply after it).
    public func query(for request: FetchRequest, columns: SQLColumns) -> SQLQuery {
        let deferred = residual != nil
        return fetch.query(terms: sqlTerms, columns: columns, limit: deferred ? nil : request.fetchLimit,
                           offset: deferred || request.fetchOffset == 0 ? nil : request.fetchOffset)
    }
}

extension SQLiteStore {
    /// Splits a request's predicate into what SQL runs and what memory runs,
    /// binding, optimizing and lowering it once.
    public func plan(_ request: FetchRequest) throws(StoreError) -> FetchPlan {
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
        do {
            fetch = try lowering.lower(entity.name, where: predicate, sortedBy: sort)
        } catch {
            throw .notExpressibleInSQL(error, range: nil, text: nil)
        }
        var sql = fetch.terms.indices.filter { fetch.terms[$0].sql != nil }
        var residual = fetch.terms.indices.filter { fetch.terms[$0].sql == nil }
        var reasons = residual.compactMap { fetch.terms[$0].error?.description }
        // Past SQLite's limits: the larger half of the SQL terms moves to
        // memory until the rest prepares. Each round halves what is left,
        // so there are at most log2(n) + 1 of them.
        while !sql.isEmpty, fetch.metrics(terms: sql).mayPassLimits,
              let refusal = sqliteRefuses(fetch.statement(terms: sql, columns: .identifiers)) {
            let sizes = sql.map { fetch.terms[$0].sql?.size ?? 0 }
            let largest = Set(sql.indices.sorted { sizes[$0] > sizes[$1] }.prefix((sql.count + 1) / 2))
            residual += sql.indices.filter(largest.contains).map { sql[$0] }
            sql = sql.indices.filter { !largest.contains($0) }.map { sql[$0] }
            reasons.append("SQLite's limits (\(refusal))")
        }
        func joined(_ indices: [Int]) -> BoundPredicate? {
            let ps = indices.sorted().map { fetch.terms[$0].predicate }
            return ps.isEmpty ? nil : ps.count == 1 ? ps[0] : .and(ps)
        }
        return FetchPlan(predicate: predicate, sql: joined(sql), residual: joined(residual), reasons: reasons, rewrites: rewrites,
                         fetch: fetch, sqlTerms: sql.sorted())
    }

    /// Nil when SQLite accepts `select`; SQLite's message when the statement
    /// passes one of its limits.
    func sqliteRefuses(_ select: SQLSelect) -> String? {
        let query = schema.render(.select(select))
        do {
            try withConnection { try $0.check(query.sql) }
            return nil
        } catch let error as SQLiteError where error.isLimit {
            return error.message
        } catch {
            return nil
        }
    }
}
