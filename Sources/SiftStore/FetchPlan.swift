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

import Foundation
import Sift

/// How a fetch runs: what SQL does, what memory does, and why.
public struct FetchPlan: CustomStringConvertible {
    /// The part SQLite runs (nil: every row of the entity).
    public var sql: BoundPredicate?
    /// The part that runs in memory over the rows, if any.
    public var residual: BoundPredicate?
    /// Why each part of the residual could not run in SQL.
    public var reasons: [String]
    /// The optimizer rules that changed the predicate.
    public var rewrites: [String]

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
}

extension SQLiteStore {
    /// Splits a request's predicate into what SQL runs and what memory runs.
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
        guard let predicate else { return FetchPlan(sql: nil, residual: nil, reasons: [], rewrites: rewrites) }
        if lowers(predicate, entity) == nil, sqliteRefuses(predicate, entity) == nil {
            return FetchPlan(sql: predicate, residual: nil, reasons: [], rewrites: rewrites)
        }
        let terms: [BoundPredicate]
        if case .and(let ps) = predicate { terms = ps } else { terms = [predicate] }
        var sql: [BoundPredicate] = []
        var residual: [BoundPredicate] = []
        var reasons: [String] = []
        for term in terms {
            if let error = lowers(term, entity) {
                residual.append(term)
                reasons.append(error.description)
            } else {
                sql.append(term)
            }
        }
        func joined(_ ps: [BoundPredicate]) -> BoundPredicate? {
            ps.isEmpty ? nil : ps.count == 1 ? ps[0] : .and(ps)
        }
        // Past SQLite's limits: the larger half of the SQL terms moves to
        // memory until the rest prepares. Each round halves what is left,
        // so there are at most log2(n) + 1 of them.
        while let rest = joined(sql), let refusal = sqliteRefuses(rest, entity) {
            let sizes = sql.map { (try? lowering.select(entity.name, where: $0, columns: .identifiers).sql.utf8.count) ?? 0 }
            let largest = Set(sql.indices.sorted { sizes[$0] > sizes[$1] }.prefix((sql.count + 1) / 2))
            residual += sql.indices.filter(largest.contains).map { sql[$0] }
            sql = sql.indices.filter { !largest.contains($0) }.map { sql[$0] }
            reasons.append("SQLite's limits (\(refusal))")
        }
        return FetchPlan(sql: joined(sql), residual: joined(residual), reasons: reasons, rewrites: rewrites)
    }

    /// Nil when SQLite accepts the SQL of `predicate`; SQLite's message when
    /// the statement passes one of its limits. SQL too small to reach a
    /// limit is not tried.
    func sqliteRefuses(_ predicate: BoundPredicate, _ entity: Entity) -> String? {
        guard let query = try? lowering.select(entity.name, where: predicate, columns: .identifiers),
              Self.mayPassLimits(query) else { return nil }
        do {
            try withConnection { try $0.check(query.sql) }
            return nil
        } catch let error as SQLiteError where error.isLimit {
            return error.message
        } catch {
            return nil
        }
    }

    /// Whether a statement is large or deep enough that SQLite might refuse
    /// it: many variables, long text, parentheses (and so expressions or
    /// subqueries) nested deeper than 8 (SQLite's parser overflows its stack
    /// at about 14 levels of subqueries), many joined tables, or a call with
    /// many arguments. Everything else prepares without being tried first.
    static func mayPassLimits(_ query: SQLQuery) -> Bool {
        if query.bindings.count > 999 || query.sql.utf8.count > 4_096 { return true }
        var depth = 0
        var deepest = 0
        var joins = 0
        // Commas at each open level: SQLite takes at most 127 arguments a function.
        var commas: [Int] = [0]
        var mostCommas = 0
        var quote: UInt8?
        var previous: UInt8 = 0
        for byte in query.sql.utf8 {
            if let q = quote {
                if byte == q { quote = nil }
            } else {
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "'"): quote = byte
                case UInt8(ascii: "("):
                    depth += 1
                    deepest = max(deepest, depth)
                    commas.append(0)
                case UInt8(ascii: ")"):
                    depth -= 1
                    if commas.count > 1 { commas.removeLast() }
                case UInt8(ascii: ","):
                    commas[commas.count - 1] += 1
                    mostCommas = max(mostCommas, commas[commas.count - 1])
                case UInt8(ascii: "J") where previous == UInt8(ascii: " "): joins += 1
                default: break
                }
            }
            previous = byte
        }
        return deepest > 8 || joins > 32 || mostCommas > 100
    }

    /// Nil when SQL can run `predicate`; the reason otherwise.
    func lowers(_ predicate: BoundPredicate, _ entity: Entity) -> SQLLoweringError? {
        do {
            _ = try lowering.select(entity.name, where: predicate, columns: .identifiers)
            return nil
        } catch {
            return error
        }
    }

    /// The SQL for a plan's SQL part, sorted as the request says; with a
    /// residual, without limit and offset (they apply after it).
    public func sqlQuery(for request: FetchRequest, plan: FetchPlan, columns: SQLColumns) throws(StoreError) -> SQLQuery {
        let sort = try sortKeys(request)
        let deferred = plan.residual != nil
        do {
            return try lowering.select(request.entityName, where: plan.sql, sortedBy: sort,
                                       limit: deferred ? nil : request.fetchLimit,
                                       offset: deferred || request.fetchOffset == 0 ? nil : request.fetchOffset,
                                       columns: columns)
        } catch {
            throw .notExpressibleInSQL(error, range: sourceRange(of: error.expression, in: request), text: request.predicateText)
        }
    }
}

/// The relationship key paths (from the evaluated object) an expression
/// follows: what must be loaded before memory evaluates it over store rows.
enum RelationshipPaths {
    static func of(_ p: BoundPredicate, _ variables: [String: [String]] = [:]) -> Set<String> {
        switch p {
        case .constant: return []
        case .not(let q): return of(q, variables)
        case .and(let qs), .or(let qs): return qs.reduce(into: []) { $0.formUnion(of($1, variables)) }
        case .comparison(let c): return of(c.left, variables).union(of(c.right, variables))
        case .exists(let e): return of(e, variables)
        }
    }

    static func of(_ e: BoundExpression, _ variables: [String: [String]]) -> Set<String> {
        var result = Set(paths(e, variables).filter { !$0.isEmpty })
        switch e.kind {
        case .attribute(let b, _), .toOne(let b, _), .toMany(let b, _), .negate(let b), .aggregate(_, let b), .size(let b):
            result.formUnion(of(b, variables))
        case .map(let collection, let variable, let each):
            result.formUnion(of(collection, variables))
            var inner = variables
            inner[variable] = paths(collection, variables)
            result.formUnion(of(each, inner))
        case .subquery(let collection, let variable, let predicate):
            result.formUnion(of(collection, variables))
            var inner = variables
            inner[variable] = paths(collection, variables)
            result.formUnion(of(predicate, inner))
        case .arithmetic(_, let a, let b), .index(let a, let b):
            result.formUnion(of(a, variables))
            result.formUnion(of(b, variables))
        case .list(let es), .function(_, let es), .custom(_, let es):
            for x in es { result.formUnion(of(x, variables)) }
        case .ternary(let p, let a, let b):
            result.formUnion(of(p, variables))
            result.formUnion(of(a, variables))
            result.formUnion(of(b, variables))
        case .constant, .evaluatedObject, .variable, .parameter:
            break
        }
        return result
    }

    /// The key paths, from the evaluated object, that the objects an
    /// object-valued expression gives may be reached by: one for a plain key
    /// path, both branches' for a TERNARY, every member's for a list or a set
    /// operation. Empty for objects given as constants.
    static func paths(_ e: BoundExpression, _ variables: [String: [String]]) -> [String] {
        switch e.kind {
        case .evaluatedObject: return [""]
        case .variable(let name): return variables[name] ?? []
        case .toOne(let base, let r), .toMany(let base, let r):
            return paths(base, variables).map { $0.isEmpty ? r.name : $0 + "." + r.name }
        case .map(let collection, let variable, let each):
            var inner = variables
            inner[variable] = paths(collection, variables)
            return paths(each, inner)
        case .subquery(let collection, _, _), .index(let collection, _):
            return paths(collection, variables)
        case .ternary(_, let a, let b):
            return paths(a, variables) + paths(b, variables)
        case .list(let es), .function(_, let es):
            return es.flatMap { paths($0, variables) }
        default:
            return []
        }
    }
}
