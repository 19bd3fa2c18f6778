// Store stage: the split planner.
//
// For a fetch against a SQL store, the optimized predicate is split in
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
// Planning is written once for every SQL store (`SQLStoreBackend.makePlan`);
// each backend says only which statements pass its database's limits.

import Foundation
import Sift

/// A fetch plan made once for a shape of request, held by reference.
package final class SharedFetchPlan: Sendable {
    package let value: FetchPlan

    package init(_ value: FetchPlan) { self.value = value }
}

/// How a fetch runs: what SQL does, what memory does, and why.
public struct FetchPlan: CustomStringConvertible, Sendable {
    /// The whole predicate, bound and optimized (nil: every row).
    public var predicate: BoundPredicate?
    /// The part the database runs (nil: every row of the entity).
    public var sql: BoundPredicate?
    /// The part that runs in memory over the rows, if any.
    public var residual: BoundPredicate?
    /// Why each part of the residual could not run in SQL.
    public var reasons: [String]
    /// The optimizer rules that changed the predicate.
    public var rewrites: [String]
    /// The sort keys memory applies, when the database cannot run one of
    /// them (nil: the database sorts).
    public var sortKeysInMemory: [SQLSortKey]?
    /// The fetch as the SQL stage lowered it, once; and the terms SQL runs.
    package let fetch: SQLFetch
    package let sqlTerms: [Int]
    /// The values of the plan's parameters (a compiled request's arguments),
    /// bound into every statement `query(for:columns:)` writes.
    package var arguments: [String: PredicateValue] = [:]

    /// The plan with the values of its parameters in place: what it runs
    /// for one request of its shape.
    package func fillingParameters(_ values: [String: PredicateValue]) -> FetchPlan {
        guard !values.isEmpty else { return self }
        var plan = self
        plan.predicate = predicate?.fillingParameters(values)
        plan.sql = sql?.fillingParameters(values)
        plan.residual = residual?.fillingParameters(values)
        plan.arguments = values
        return plan
    }

    public var description: String {
        var lines: [String] = []
        lines.append("sql: " + (sql.map { "\n" + indent($0.outline) } ?? "every row"))
        if let residual { lines.append("memory:\n" + indent(residual.outline)) }
        if sortKeysInMemory != nil { lines.append("memory sorts the rows") }
        if needsMemory { lines.append("because: " + reasons.joined(separator: "; ")) }
        if !rewrites.isEmpty { lines.append("rewrites: " + rewrites.joined(separator: ", ")) }
        return lines.joined(separator: "\n")
    }

    private func indent(_ text: String) -> String {
        text.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n")
    }

    /// Whether memory filters or sorts the rows SQL returns.
    public var needsMemory: Bool { residual != nil || sortKeysInMemory != nil }

    /// The SQL of the plan's SQL part for `request`, returning `columns`;
    /// when memory filters or sorts, without limit and offset (they apply after).
    ///
    /// - Parameters:
    ///   - request: The request the plan was made for; its limit and offset are read.
    ///   - columns: What each row returns: whole rows, identifiers or a count.
    /// - Returns: The statement with its bindings.
    public func query(for request: FetchRequest, columns: SQLColumns) -> SQLQuery {
        let deferred = needsMemory
        // A negative limit is no limit, a negative offset skips nothing (as
        // SQLite reads them; PostgreSQL refuses them).
        let limit = request.fetchLimit.flatMap { $0 < 0 ? nil : $0 }
        let query = fetch.query(terms: sqlTerms, columns: columns, limit: deferred ? nil : limit,
                                offset: deferred || request.fetchOffset <= 0 ? nil : request.fetchOffset)
        guard !query.parameters.isEmpty, !arguments.isEmpty else { return query }
        return query.binding(arguments, dialect: fetch.dialect) ?? query
    }
}
