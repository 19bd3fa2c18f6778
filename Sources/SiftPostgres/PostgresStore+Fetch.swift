// PostgreSQL: how the store runs the statements of a fetch — each on a
// connection of the pool, its rows read through the schema's row layout
// into row-cache nodes. What to run, and what memory does, is
// `SQLStoreBackend`'s, as on SQLite.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import PostgresNIO
import Sift
import SiftStore

extension PostgresStore: SQLStoreBackend {
    /// "PostgreSQL", for plans and messages.
    public var databaseName: String { "PostgreSQL" }
    package var location: String { schemaName }

    /// The value transformers of the store's transformable attributes.
    public var transformers: ValueTransformerRegistry? { valueTransformers }

    package func fetchNodes(_ query: SQLQuery, entity: Entity, ownerColumn: Bool,
                            owner: ((Int64) -> Void)?) throws(StoreError) -> [RowNode] {
        let collector = RowCollector(
            RowReaders(schema.rowLayout(entity), base: ownerColumn ? 1 : 0, externalData: nil, transformers: valueTransformers),
            ownerColumn: ownerColumn)
        // Rows become nodes as they arrive, on the connection's event loop.
        let logger = self.logger
        statements.add(1, ordering: .relaxed)
        try withConnection { connection in
            try connection.forEachRow(query.sql, query.bindings, logger: logger) { collector.add($0) }
        }
        if let owner { for key in collector.owners { owner(key) } }
        return rowCache.storeFetched(collector.readers.nodes(now: collector.now))
    }

    package func fetchObjectIDs(_ query: SQLQuery, entity: Entity) throws(StoreError) -> [ObjectID] {
        let layout = schema.rowLayout(entity)
        let rows = try run(query)
        guard layout.entityColumn != nil else {
            return rows.map { ObjectID(entity: entity, primaryKey: ValueRow($0).integer(0)) }
        }
        return rows.compactMap { columns in
            let row = ValueRow(columns)
            return layout.member(number: row.integer(1)).map {
                ObjectID(entity: $0.entity, root: $0.root, primaryKey: row.integer(0))
            }
        }
    }

    package func fetchIntegers(_ query: SQLQuery, columns: Int) throws(StoreError) -> [Int64] {
        var result: [Int64] = []
        for columnValues in try run(query) {
            let row = ValueRow(columnValues)
            for column in 0..<columns { result.append(row.integer(column)) }
        }
        return result
    }

    package func fetchValues(_ query: SQLQuery, types: [AttributeType]) throws(StoreError) -> [[PredicateValue]] {
        try run(query).map { columns in
            types.indices.map { $0 < columns.count ? PredicateValue(sqlValue: columns[$0], type: types[$0]) : .null }
        }
    }

    /// PostgreSQL binds at most 65 535 parameters to a statement, and its
    /// parser has a stack depth limit: a statement past either is refused
    /// (and its largest terms run in memory).
    package func refuses(_ select: SQLSelect) -> String? {
        let query = schema.render(.select(select))
        if query.bindings.count > Int(UInt16.max) {
            return "PostgreSQL's limits (\(query.bindings.count) parameters, more than 65 535)"
        }
        do {
            _ = try run(ServerCatalog.explain(query))
            return nil
        } catch {
            if case .server(let message, _) = error, message.contains("stack depth") || message.contains("too many") {
                return "PostgreSQL's limits (\(message))"
            }
            return nil
        }
    }

    /// PostgreSQL's plan for a query (`EXPLAIN`), one line per step.
    ///
    /// - Parameter query: The statement, with its bindings.
    /// - Returns: The lines of PostgreSQL's `EXPLAIN`.
    /// - Throws: `StoreError.server` when the server cannot be reached or refuses the statement.
    public func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String] {
        try run(ServerCatalog.explain(query)).map { row in
            if case .text(let line)? = row.first { return line }
            return row.map(\.description).joined(separator: " ")
        }
    }
}

/// Lays rows out in batches as they arrive (on the connection's event loop;
/// read after the statement completes).
final class RowCollector: @unchecked Sendable {
    let readers: RowReaders
    let ownerColumn: Bool
    let now = Date().timeIntervalSinceReferenceDate
    var owners: [Int64] = []

    init(_ readers: RowReaders, ownerColumn: Bool) {
        self.readers = readers
        self.ownerColumn = ownerColumn
    }

    func add(_ row: PostgresRow) {
        let row = PostgresStoreRow(row.makeRandomAccess())
        if readers.add(row, now: now), ownerColumn { owners.append(row.integer(0)) }
    }
}

/// A PostgreSQL row, its cells decoded straight into Sift's values.
struct PostgresStoreRow: StoreRow {
    let row: PostgresRandomAccessRow

    init(_ row: PostgresRandomAccessRow) { self.row = row }

    func value(_ index: Int, as type: AttributeType) -> PredicateValue {
        guard index < row.count else { return .null }
        let cell = row[index]
        guard cell.bytes != nil else { return .null }
        switch (type, cell.dataType) {
        case (.integer16, .int8), (.integer32, .int8), (.integer64, .int8):
            if let value = try? cell.decode(Int64.self) { return .int(value) }
        case (.double, .float8), (.float, .float8), (.decimal, .float8):
            if let value = try? cell.decode(Double.self) { return .double(value) }
        case (.date, .float8):
            if let value = try? cell.decode(Double.self) { return .date(Date(timeIntervalSinceReferenceDate: value)) }
        case (.boolean, .int8):
            if let value = try? cell.decode(Int64.self) { return .bool(value != 0) }
        case (.string, .text), (.uri, .text):
            if let value = try? cell.decode(String.self) { return .string(value) }
        default:
            break
        }
        return (try? PostgresDatabase.value(cell)).map { PredicateValue(sqlValue: $0, type: type) } ?? .null
    }

    func integer(_ index: Int) -> Int64 {
        guard index < row.count else { return 0 }
        let cell = row[index]
        guard cell.bytes != nil else { return 0 }
        if cell.dataType == .int8, let value = try? cell.decode(Int64.self) { return value }
        return (try? PostgresDatabase.value(cell)).map { ValueRow([$0]).integer(0) } ?? 0
    }

    func isNull(_ index: Int) -> Bool {
        index >= row.count || row[index].bytes == nil
    }
}
#endif
