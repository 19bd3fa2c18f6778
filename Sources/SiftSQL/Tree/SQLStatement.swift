// Stage 6b (SQL lowering): SQL statements as trees — SELECT with its joins,
// INSERT, UPDATE, DELETE, CREATE TABLE and CREATE INDEX. A dialect renders
// them (`SQLRenderer`); nothing outside this stage writes SQL text.

import SiftModel

/// What a FROM clause starts with.
package enum SQLSource: Hashable, Sendable {
    /// A table under an alias.
    ///
    /// - Parameter alias: The name the statement calls the table by.
    case table(String, alias: String)
    /// The members of an array (a JSON array for SQLite), one row each, the
    /// member in the column `value`.
    ///
    /// - Parameter alias: The name the statement calls the array's rows by.
    case array(SQLExpression, alias: String)
    /// The values of a list of expressions, one row each, the value in the
    /// column `value` (one VALUES of one-column rows).
    ///
    /// - Parameter alias: The name the statement calls the list's rows by.
    case values([SQLExpression], alias: String)

    /// Calls `body` on the expressions the source reads.
    func forEachExpression(_ body: (SQLExpression) -> Void) {
        switch self {
        case .table: break
        case .array(let e, _): body(e)
        case .values(let members, _): members.forEach(body)
        }
    }

    /// The alias the table or array goes by.
    package var alias: String {
        switch self {
        case .table(_, let alias), .array(_, let alias), .values(_, let alias): alias
        }
    }
}

/// A join in a FROM clause.
package struct SQLJoin: Hashable, Sendable {
    /// An inner join, or a LEFT JOIN (the row stays when nothing joins).
    package enum Kind: Hashable, Sendable {
        /// An inner join (`JOIN`): a row stays only when a joined row matches.
        case inner
        /// A `LEFT JOIN`: the row stays when nothing joins, with NULL in the
        /// joined columns.
        case left
    }
    /// Which join.
    package var kind: Kind
    /// The table or array joined.
    package var source: SQLSource
    /// The join condition (nil: the WHERE clause holds it).
    package var on: SQLExpression?

    /// The alias the joined table or array goes by.
    package var alias: String { source.alias }

    /// Creates a join.
    ///
    /// - Parameters:
    ///   - kind: Whether it is an inner join or a `LEFT JOIN`.
    ///   - source: The table or array joined, with its alias.
    ///   - on: The join condition; nil (the default) when the WHERE clause
    ///     holds it.
    package init(_ kind: Kind, _ source: SQLSource, on: SQLExpression? = nil) {
        self.kind = kind
        self.source = source
        self.on = on
    }
}

/// A sort key of a SELECT.
package struct SQLOrdering: Hashable, Sendable {
    /// The value sorted by.
    package var expression: SQLExpression
    /// Whether larger values come first.
    package var descending: Bool

    /// Creates a sort key.
    ///
    /// - Parameters:
    ///   - expression: The value sorted by.
    ///   - descending: Whether larger values come first; false (ascending)
    ///     by default.
    package init(_ expression: SQLExpression, descending: Bool = false) {
        self.expression = expression
        self.descending = descending
    }
}

/// A SELECT statement (or subquery).
package struct SQLSelect: Hashable, Sendable {
    /// The values each row returns.
    package var columns: [SQLExpression]
    /// What the FROM clause starts with.
    package var from: SQLSource
    /// The joins after it, in order.
    package var joins: [SQLJoin]
    /// Conditions joined by AND.
    package var conditions: [SQLExpression]
    /// The sort keys.
    package var orderBy: [SQLOrdering]
    /// The most rows returned.
    package var limit: SQLExpression?
    /// How many rows are skipped first.
    package var offset: SQLExpression?
    /// Whether equal rows are returned once (`SELECT DISTINCT`).
    package var distinct = false
    /// The expressions rows are grouped by.
    package var groupBy: [SQLExpression] = []
    /// Conditions on the groups, joined by AND.
    package var having: [SQLExpression] = []
    /// The names of the columns (`AS name`), which ORDER BY may use; empty
    /// for none.
    package var columnNames: [String] = []

    /// Creates a SELECT; it is not distinct and has no grouping, HAVING
    /// conditions or column names until those properties are set.
    ///
    /// - Parameters:
    ///   - columns: The values each row returns.
    ///   - from: What the FROM clause starts with.
    ///   - joins: The joins after it, in order; none by default.
    ///   - conditions: The WHERE conditions, joined by AND; none by default.
    ///   - orderBy: The sort keys; none by default.
    ///   - limit: The most rows returned, or nil (the default) for no limit.
    ///   - offset: How many rows are skipped first, or nil (the default)
    ///     for none.
    package init(_ columns: [SQLExpression], from: SQLSource, joins: [SQLJoin] = [], where conditions: [SQLExpression] = [],
                orderBy: [SQLOrdering] = [], limit: SQLExpression? = nil, offset: SQLExpression? = nil) {
        self.columns = columns
        self.from = from
        self.joins = joins
        self.conditions = conditions
        self.orderBy = orderBy
        self.limit = limit
        self.offset = offset
    }

    /// Calls `body` on every expression of the statement, for walking the tree.
    func forEachExpression(_ body: (SQLExpression) -> Void) {
        columns.forEach(body)
        conditions.forEach(body)
        groupBy.forEach(body)
        having.forEach(body)
        for ordering in orderBy { body(ordering.expression) }
        from.forEachExpression(body)
        for join in joins {
            if let on = join.on { body(on) }
            join.source.forEachExpression(body)
        }
        if let limit { body(limit) }
        if let offset { body(offset) }
    }

    /// The select without the LEFT JOINs nothing reads (a LEFT JOIN on a
    /// primary key never changes which rows come back).
    ///
    /// - Returns: A copy without those joins; the select itself when every LEFT
    ///   JOIN is read.
    package func prunedJoins() -> SQLSelect {
        // A LEFT JOIN is kept when something kept reads it: the columns, the
        // conditions, the order, or the condition of a later join kept.
        var unread = Set(joins.lazy.filter { $0.kind == .left }.map(\.alias))
        guard !unread.isEmpty else { return self }
        func read(_ e: SQLExpression) {
            guard !unread.isEmpty, e.reads(anyOf: unread) else { return }
            e.visit { if case .column(let table, _) = $0.node { unread.remove(table) } }
        }
        columns.forEach(read)
        conditions.forEach(read)
        groupBy.forEach(read)
        having.forEach(read)
        for ordering in orderBy { read(ordering.expression) }
        var kept: [SQLJoin] = []
        for join in joins.reversed() where join.kind != .left || !unread.contains(join.alias) {
            if let on = join.on { read(on) }
            kept.append(join)
        }
        guard kept.count < joins.count else { return self }
        var copy = self
        copy.joins = kept.reversed()
        return copy
    }
}

/// An INSERT of one row.
package struct SQLInsert: Hashable, Sendable {
    /// The table written.
    package var table: String
    /// The columns given values.
    package var columns: [String]
    /// Their values, in the same order.
    package var values: [SQLExpression]
    /// Whether a row whose key is already there is skipped rather than an error.
    package var ignoringDuplicates: Bool
}

/// An UPDATE.
package struct SQLUpdate: Hashable, Sendable {
    /// The table written.
    package var table: String
    /// The name the values and conditions call the table by (nil: its own).
    package var alias: String?
    /// Each column set, and its new value.
    package var assignments: [(column: String, value: SQLExpression)]
    /// Conditions joined by AND: the rows changed.
    package var conditions: [SQLExpression]
    /// What each changed row gives back (`RETURNING`), if anything: columns
    /// named without a table (SQLite reads no alias there).
    package var returning: [SQLExpression] = []
    /// A SELECT computed whole before any row changes (`WITH name AS
    /// MATERIALIZED (…)`), joined to the rows updated (`FROM name`): where
    /// the new values come from when they read other rows of the table.
    package var source: (name: String, select: SQLSelect)?

    /// Creates an UPDATE; it has no `source` until that property is set.
    ///
    /// - Parameters:
    ///   - table: The table written.
    ///   - alias: The name the values and conditions call the table by; nil
    ///     (the default) for its own name.
    ///   - assignments: Each column set, and the expression of its new value.
    ///   - conditions: The conditions, joined by AND, that pick the rows
    ///     changed.
    ///   - returning: What each changed row gives back (`RETURNING`); nothing
    ///     by default.
    package init(table: String, alias: String? = nil, assignments: [(column: String, value: SQLExpression)],
                conditions: [SQLExpression], returning: [SQLExpression] = []) {
        self.table = table
        self.alias = alias
        self.assignments = assignments
        self.conditions = conditions
        self.returning = returning
    }

    package static func == (a: SQLUpdate, b: SQLUpdate) -> Bool {
        a.table == b.table && a.alias == b.alias && a.assignments.map(\.column) == b.assignments.map(\.column)
            && a.assignments.map(\.value) == b.assignments.map(\.value) && a.conditions == b.conditions
            && a.returning == b.returning && a.source?.name == b.source?.name && a.source?.select == b.source?.select
    }

    package func hash(into hasher: inout Hasher) {
        hasher.combine(table)
        hasher.combine(alias)
        for (column, value) in assignments {
            hasher.combine(column)
            hasher.combine(value)
        }
        hasher.combine(conditions)
        hasher.combine(returning)
        hasher.combine(source?.name)
        hasher.combine(source?.select)
    }
}

/// A DELETE.
package struct SQLDelete: Hashable, Sendable {
    /// The table written.
    package var table: String
    /// Conditions joined by AND: the rows removed.
    package var conditions: [SQLExpression]
    /// What each removed row gives back (`RETURNING`), if anything.
    package var returning: [SQLExpression] = []

    /// Creates a DELETE.
    ///
    /// - Parameters:
    ///   - table: The table written.
    ///   - conditions: The conditions, joined by AND, that pick the rows
    ///     removed.
    ///   - returning: What each removed row gives back (`RETURNING`); nothing
    ///     by default.
    package init(table: String, conditions: [SQLExpression], returning: [SQLExpression] = []) {
        self.table = table
        self.conditions = conditions
        self.returning = returning
    }
}

/// The type of a column, as the dialect names it.
package enum SQLColumnType: Hashable, Sendable {
    /// An integer (`INTEGER` in SQLite, `BIGINT` in PostgreSQL): integer and
    /// boolean attributes.
    case integer
    /// A floating-point number (`FLOAT` in SQLite, `DOUBLE PRECISION` in
    /// PostgreSQL): double and float attributes.
    case real
    /// Text (`VARCHAR` in SQLite, `TEXT COLLATE "C"` in PostgreSQL): string
    /// and URI attributes.
    case text
    /// Binary data (`BLOB` in SQLite, `BYTEA` in PostgreSQL): binary,
    /// transformable and UUID attributes.
    case blob
    /// Seconds since 2001 (a number; Core Data's TIMESTAMP).
    case timestamp
    /// A decimal number, kept as a real (Core Data's DECIMAL).
    case decimal

    /// The column type that holds an attribute's values, as Core Data declares them.
    ///
    /// - Parameter type: The attribute's type. A type no column holds (an object
    ///   ID, a composite, undefined) gives `.blob`, though the schema makes no
    ///   column for it.
    package init(_ type: AttributeType) {
        switch type {
        case .integer16, .integer32, .integer64, .boolean: self = .integer
        case .double, .float: self = .real
        case .decimal: self = .decimal
        case .date: self = .timestamp
        case .string, .uri: self = .text
        // A UUID is its 16 bytes.
        case .binary, .transformable, .uuid: self = .blob
        // No column holds these (`AttributeType.hasColumn`): the schema
        // mapping gives them none.
        case .objectID, .composite, .undefined: self = .blob
        }
    }
}

/// A column of a CREATE TABLE.
package struct SQLColumnDefinition: Hashable, Sendable {
    /// The column's name.
    package var name: String
    /// What it holds.
    package var type: SQLColumnType
    /// Whether it is the table's (integer) primary key.
    package var isPrimaryKey = false
    /// Whether it may hold NULL.
    package var isNullable = true
    /// A default written into the table's definition.
    package var defaultValue: SQLLiteral?

    /// Creates a column definition.
    ///
    /// - Parameters:
    ///   - name: The column's name.
    ///   - type: What it holds.
    ///   - primaryKey: Whether it is the table's (integer) primary key;
    ///     false by default.
    ///   - nullable: Whether it may hold NULL (when false, the column is
    ///     declared `NOT NULL`); true by default.
    ///   - defaultValue: A default written into the table's definition
    ///     (`DEFAULT`), or nil (the default) for none.
    package init(_ name: String, _ type: SQLColumnType, primaryKey: Bool = false, nullable: Bool = true,
                default defaultValue: SQLLiteral? = nil) {
        self.name = name
        self.type = type
        self.isPrimaryKey = primaryKey
        self.isNullable = nullable
        self.defaultValue = defaultValue
    }
}

/// A CREATE TABLE.
package struct SQLCreateTable: Hashable, Sendable {
    /// The table's name.
    package var name: String
    /// Its columns, in order.
    package var columns: [SQLColumnDefinition]
    /// A primary key of several columns (a join table's), clustered when the
    /// dialect can.
    package var compositeKey: [String]
}

/// A CREATE INDEX.
package struct SQLCreateIndex: Hashable, Sendable {
    /// The index's name.
    package var name: String
    /// The table indexed.
    package var table: String
    /// The columns, in key order.
    package var columns: [String]
}

/// Any statement the stage builds.
package enum SQLStatement: Hashable, Sendable {
    /// A SELECT.
    case select(SQLSelect)
    /// An INSERT of one row.
    case insert(SQLInsert)
    /// An UPDATE.
    case update(SQLUpdate)
    /// A DELETE.
    case delete(SQLDelete)
    /// A CREATE TABLE.
    case createTable(SQLCreateTable)
    /// A CREATE INDEX.
    case createIndex(SQLCreateIndex)
}
