// Stage 6b (SQL lowering): how large a statement tree is, in the measures a
// database limits — nesting, parameters, joined tables, arguments of one
// call — read from the tree, so the planner can tell which statements are
// worth trying before it hands them to the database.

/// The sizes of a statement that a database may refuse it for.
package struct SQLMetrics: Hashable, Sendable {
    /// The deepest nesting of expressions and subqueries, as rendered
    /// (AND and OR chains count as the balanced trees they render as).
    package var depth = 0
    /// Bound values and parameters.
    package var parameters = 0
    /// Tables joined, subqueries' included.
    package var joins = 0
    /// The most members of one list or arguments of one call.
    package var widestList = 0
    /// Expression nodes.
    package var nodes = 0

    /// Whether a database with SQLite's default limits might refuse it; a
    /// statement below every threshold prepares without being tried first.
    package var mayPassLimits: Bool {
        parameters > 999 || nodes > 1_000 || depth > 8 || joins > 32 || widestList > 100
    }

    /// Measures a SELECT, its subqueries included.
    ///
    /// - Parameter select: The statement measured.
    package init(_ select: SQLSelect) {
        measure(select, depth: 0)
    }

    /// The sizes of a SELECT with these conditions over these joins.
    ///
    /// - Parameters:
    ///   - conditions: The WHERE conditions.
    ///   - joins: The joins, counted and their ON conditions measured.
    ///   - orderBy: The sort keys.
    package init(conditions: [SQLExpression], joins: [SQLJoin], orderBy: [SQLOrdering]) {
        self.joins = joins.count
        for e in conditions { measure(e, depth: 1) }
        for join in joins { if let on = join.on { measure(on, depth: 1) } }
        for ordering in orderBy { measure(ordering.expression, depth: 1) }
    }

    private mutating func measure(_ select: SQLSelect, depth: Int) {
        joins += select.joins.count
        select.forEachExpression { measure($0, depth: depth + 1) }
    }

    private mutating func measure(_ e: SQLExpression, depth: Int) {
        nodes += 1
        self.depth = max(self.depth, depth)
        switch e.node {
        case .value, .parameter, .slot: parameters += 1
        case .and(let terms), .or(let terms):
            // A balanced tree of chains of eight.
            var levels = 1
            var count = terms.count
            while count > 8 {
                count = (count + 1) / 2
                levels += 1
            }
            widestList = max(widestList, min(terms.count, 8))
            for term in terms { measure(term, depth: depth + levels) }
            return
        case .inList(_, let members): widestList = max(widestList, members.count)
        case .sift(_, let arguments), .builtin(_, let arguments), .custom(_, let arguments), .jsonArray(let arguments):
            widestList = max(widestList, arguments.count)
        case .exists(let select, _), .scalar(let select):
            measure(select, depth: depth + 2)
            return
        default: break
        }
        e.forEachChild { measure($0, depth: depth + 1) }
    }
}
