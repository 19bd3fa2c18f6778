// Store stage: the SQLite store.
//
// A store is a file (or an in-memory database for tests) laid out by
// `SQLSchema`, with the model it was made for kept in `Z_METADATA`: opening
// it with a different model is an error, never a silent misreading. Rows read
// from it become row-cache nodes; the store's row cache is shared by every
// context that uses it. Access to the connection is serialized.

import CSQLite
import Foundation
import Sift
import Synchronization

/// Why a store operation failed.
public enum StoreError: Error, CustomStringConvertible {
    /// SQLite reported an error.
    case sqlite(SQLiteError)
    /// The store was made for another model.
    case modelMismatch(path: String, storeHash: String, modelHash: String)
    /// The file is not a Sift store and no model was given to make one.
    case noModel(path: String)
    /// The predicate or a sort key does not parse or fit the model.
    case invalidPredicate(PredicateCompileError, text: String)
    /// The predicate uses something SQL cannot express; the range is where,
    /// in the predicate's text, when it is known.
    case notExpressibleInSQL(SQLLoweringError, range: SourceRange?, text: String?)
    /// An entity the model does not have.
    case unknownEntity(String)
    /// A key path that is not a relationship of the entity (prefetching, faults).
    case unknownRelationship(String, entity: String)
    /// An attribute or relationship the entity does not have.
    case unknownKey(String, entity: String)
    /// A data set that cannot be imported.
    case invalidDataSet(DataSetError)
    /// A change to an object deleted in this context.
    case objectDeleted(String)
    /// A save refused before it touched the store: each failure names the
    /// object and the property.
    case validation([SaveValidationFailure])
    /// A save that found rows changed or deleted since this context read them,
    /// under the `.error` merge policy; nothing was written.
    case conflicts([SaveConflict])
    /// A fault whose row is no longer in the store (deleted by another
    /// context or process since the object was first seen).
    case objectNotFound(String)
    /// A store file that could not be written; the old file is intact.
    case cannotWrite(path: String, reason: String)
    /// The file is not an SQLite database (a damaged file, or another kind of
    /// file); it was left as it was.
    case notADatabase(path: String)
    /// An SQLite database of another application: it has tables but no Sift
    /// metadata. Sift neither reads nor changes it.
    case foreignDatabase(path: String, tables: [String])
    /// The store's file is damaged (truncated, overwritten, or its metadata
    /// unreadable); the reason is SQLite's or Sift's.
    case damaged(path: String, reason: String)
    /// Another connection or process held a lock on the store for longer
    /// than the busy timeout; nothing was written.
    case locked(path: String)
    /// The store's file (or its folder) cannot be written, or it was opened
    /// read-only; nothing was written.
    case readOnly(path: String)
    /// The store ran out of room (a full disk, or the database's page limit);
    /// the transaction was rolled back and nothing was written.
    case full(path: String)
    /// Evaluating the predicate ran out of a budget (a regular expression
    /// that backtracks without end); nothing was returned.
    case evaluation(EvaluationError)

    /// Runs an evaluation, its budget errors as `.evaluation`.
    static func evaluating<T>(_ body: () throws(EvaluationError) -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw .evaluation(error)
        }
    }

    /// `error` as a store error: store and evaluation errors as they are,
    /// SQLite's as ``init(_:path:)`` classifies them for the store at `path`
    /// (or as `.sqlite` without one), anything else as an SQLite error with
    /// its text and `sql`.
    init(_ error: any Error, path: String? = nil, sql: String? = nil) {
        switch error {
        case let error as StoreError: self = error
        case let error as SQLiteError: self = path.map { StoreError(error, path: $0) } ?? .sqlite(error)
        case let error as EvaluationError: self = .evaluation(error)
        default: self = .sqlite(SQLiteError(code: 1, message: "\(error)", sql: sql))
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let e): "\(e)"
        case .evaluation(let e): "\(e)"
        case .modelMismatch(let path, let storeHash, let modelHash):
            "the store '\(path)' was made for another model (store \(storeHash), model \(modelHash)): "
                + "open it with the model it was made with, or migrate it"
        case .noModel(let path): "'\(path)' is not a Sift store, and no model was given to create one"
        case .invalidPredicate(let e, let text): e.rendered(in: text)
        case .notExpressibleInSQL(let e, let range?, let text?):
            SourceDiagnostic(message: e.description, range: range, in: text).rendered()
        case .notExpressibleInSQL(let e, _, _): "\(e)"
        case .unknownEntity(let name): "the model has no entity named '\(name)'"
        case .unknownRelationship(let path, let entity): "'\(path)' is not a relationship key path of '\(entity)'"
        case .unknownKey(let key, let entity): "'\(entity)' has no attribute or relationship named '\(key)'"
        case .invalidDataSet(let e): "\(e)"
        case .objectDeleted(let object): "\(object) was deleted in this context"
        case .validation(let failures): "the save was refused: " + failures.map(\.description).joined(separator: "; ")
        case .conflicts(let conflicts):
            "the save found \(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s") and wrote nothing: "
                + conflicts.map(\.description).joined(separator: "; ")
        case .objectNotFound(let object): "\(object) is no longer in the store"
        case .cannotWrite(let path, let reason): "cannot write '\(path)': \(reason); the old file is unchanged"
        case .notADatabase(let path):
            "'\(path)' is not an SQLite database (it may be damaged, or another kind of file); it was left unchanged"
        case .foreignDatabase(let path, let tables):
            "'\(path)' is an SQLite database of another application (tables: \(tables.prefix(5).joined(separator: ", "))"
                + (tables.count > 5 ? ", …" : "") + "), not a Sift store; it was left unchanged: give a new file for the store"
        case .damaged(let path, let reason):
            "the store '\(path)' is damaged (\(reason)); it was left as it is: restore it from a backup"
        case .locked(let path):
            "the store '\(path)' is locked by another connection or process; nothing was written: try again when it is done"
        case .readOnly(let path):
            "the store '\(path)' is read-only (the file or its folder cannot be written); nothing was written"
        case .full(let path):
            "the store '\(path)' has no room left (the disk is full, or the store reached its size limit); nothing was written"
        }
    }
}

/// A SQLite store for a model.
///
/// ```swift
/// let store = try SQLiteStore(url: URL(fileURLWithPath: "company.sqlite"), model: dataSet.model)
/// try store.importDataSet(dataSet)
/// let context = ObjectContext(store: store)
/// let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
///                                            arguments: ["Sales"]))
/// ```
public final class SQLiteStore: @unchecked Sendable {
    /// The model the store holds.
    public let model: DataModel
    /// How the model is laid out in tables.
    public let schema: SQLSchema
    /// The SQL lowering for the model.
    public let lowering: SQLLowering
    /// The nodes of the rows read so far, shared by every context.
    public let rowCache: RowCache
    /// The store's file, or nil for an in-memory store.
    public let url: URL?
    /// Functions the application registered: callable in predicates, in
    /// memory and in SQL alike.
    public let functions: FunctionRegistry
    let connection: SQLiteConnection
    private let lock = NSRecursiveLock()
    /// Who hears about saves.
    let observers = Observers()

    /// Opens the store at `url`. A missing or empty file becomes a new store
    /// for `model`; an existing store must have been made for `model` (or,
    /// when `model` is nil, is opened with the model it was made for).
    ///
    /// Anything else is an error and the file is left as it was: a file that
    /// is not an SQLite database, a damaged store, or another application's
    /// database. A `readOnly` store (or a file without write permission)
    /// fetches but does not save. While another connection or process holds
    /// a lock, the store waits up to `busyTimeout` seconds, then fails with
    /// `StoreError.locked`.
    public convenience init(url: URL, model: DataModel? = nil, functions: FunctionRegistry = FunctionRegistry(),
                            readOnly: Bool = false, busyTimeout: Double = 5) throws(StoreError)
    {
        let path = url.path
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
        // A file nobody may write opens read-only, even for a user (root) who could.
        let permissions = (attributes?[.posixPermissions] as? NSNumber)?.intValue
        let readOnly = readOnly || permissions.map { $0 & 0o222 == 0 } ?? false
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: readOnly, busyTimeout: busyTimeout)
        } catch {
            throw StoreError(error, path: path)
        }
        // What the file holds is read before anything is written to it.
        let resolved: DataModel
        if let stored = try Self.storedModel(connection, path: path, size: size, expected: model) {
            resolved = stored
            if !readOnly { try Self.setJournalMode(connection, path: path) }
        } else {
            guard let model else { throw .noModel(path: path) }
            guard !readOnly else { throw .readOnly(path: path) }
            resolved = model
            try Self.setJournalMode(connection, path: path)
            try Self.create(connection, model, path: path)
        }
        try self.init(connection: connection, model: resolved, url: url, functions: functions)
    }

    private static func setJournalMode(_ connection: SQLiteConnection, path: String) throws(StoreError) {
        do {
            try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// An in-memory store for `model`, for tests and one-off work.
    public convenience init(inMemoryWith model: DataModel, functions: FunctionRegistry = FunctionRegistry())
        throws(StoreError)
    {
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection()
        } catch {
            throw .sqlite(error)
        }
        try Self.create(connection, model, path: ":memory:")
        try self.init(connection: connection, model: model, url: nil, functions: functions)
    }

    private init(connection: SQLiteConnection, model: DataModel, url: URL?, functions: FunctionRegistry) throws(StoreError) {
        self.connection = connection
        self.model = model
        self.schema = SQLSchema(model: model)
        self.lowering = SQLLowering(schema: schema)
        self.rowCache = RowCache(model: model)
        self.url = url
        self.functions = functions
        do {
            try connection.registerSiftFunctions()
            for function in functions.all { try connection.register(function) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Registers a function for predicates, in memory and with SQLite.
    public func register(_ function: CustomFunction) throws(StoreError) {
        functions.register(function)
        do {
            try withConnection { try $0.register(function) }
        } catch {
            throw StoreError(error, path: path)
        }
    }



    private static func create(_ connection: SQLiteConnection, _ model: DataModel, path: String) throws(StoreError) {
        let schema = SQLSchema(model: model)
        do {
            try connection.transaction {
                for statement in schema.createStatements { try connection.execute(statement) }
                try connection.execute("CREATE TABLE \"Z_METADATA\" (\"Z_KEY\" TEXT PRIMARY KEY, \"Z_VALUE\" TEXT NOT NULL)")
                let insert = "INSERT INTO \"Z_METADATA\" (\"Z_KEY\", \"Z_VALUE\") VALUES (?1, ?2)"
                try connection.forEachRow(insert, [.text("modelHash"), .text(model.versionHash)])
                try connection.forEachRow(insert, [.text("model"), .text(String(decoding: model.jsonData, as: UTF8.self))])
                try connection.forEachRow(insert, [.text("format"), .text("1")])
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The model a store file was made for, or nil when the file is empty (no
    /// tables at all): a new store. Reads only; anything but a Sift store is
    /// an error.
    private static func storedModel(_ connection: SQLiteConnection, path: String, size: Int, expected: DataModel?)
        throws(StoreError) -> DataModel?
    {
        guard size > 0 else { return nil }
        var tables: [String] = []
        var metadata: [String: String] = [:]
        do {
            for row in try connection.query("SELECT \"name\" FROM \"sqlite_master\" WHERE \"type\" = 'table'") {
                if case .text(let name) = row[0] { tables.append(name) }
            }
            if tables.isEmpty {
                // A database with nothing in it (a store whose creation was cut short).
                let objects = try connection.query("SELECT COUNT(*) FROM \"sqlite_master\"")
                if objects.first?.first == .integer(0) { return nil }
            }
            guard tables.contains("Z_METADATA") else { throw StoreError.foreignDatabase(path: path, tables: tables.sorted()) }
            for row in try connection.query("SELECT \"Z_KEY\", \"Z_VALUE\" FROM \"Z_METADATA\"") {
                if case .text(let key) = row[0], case .text(let value) = row[1] { metadata[key] = value }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw .damaged(path: path, reason: "\(error)")
        }
        guard let hash = metadata["modelHash"], let json = metadata["model"] else {
            throw .damaged(path: path, reason: "its Z_METADATA table has no model")
        }
        let stored: DataModel
        do {
            stored = try DataModel(json: Data(json.utf8))
        } catch {
            throw .damaged(path: path, reason: "the model it holds does not load: \(error)")
        }
        guard stored.versionHash == hash else {
            throw .damaged(path: path, reason: "the model it holds is not the one its hash names (\(hash))")
        }
        if let expected, expected.versionHash != hash {
            throw .modelMismatch(path: path, storeHash: hash, modelHash: expected.versionHash)
        }
        return expected ?? stored
    }

    /// The store's file path, for errors (":memory:" for an in-memory store).
    var path: String { url?.path ?? ":memory:" }

    /// Runs `body` with the connection, one caller at a time.
    public func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// How many SQL statements the store has run.
    public var statementCount: Int { withConnection { $0.statementCount } }


    // MARK: Import

    /// Loads every object of a data set, in one transaction.
    public func importDataSet(_ dataSet: DataSet, progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url?.path ?? ":memory:", storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try importNodes(dataSet.nodes, progress: progress)
    }

    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
    public func importNodes(_ nodes: [RowNode], progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        do {
            try insert(nodes, progress: progress)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    private func insert(_ nodes: [RowNode], progress: ((Int, Int) -> Void)?) throws {
        let q = SQLSchema.quote
        try withConnection { connection in
            try connection.transaction {
                for (index, node) in nodes.enumerated() {
                    let entity = model.entities[node.id.entity]
                    let toOne = entity.relationships.filter { !$0.isToMany }.sorted { $0.slot < $1.slot }
                    let canonical = entity.attributes.filter(\.isCanonical)
                    let companions = canonical.flatMap { a in
                        SQLSchema.companionFlags.map { (a, $0) }
                    }
                    let columns = [SQLSchema.primaryKey, SQLSchema.version] + entity.attributes.map(schema.column)
                        + toOne.map(\.name) + companions.map { SQLSchema.companionColumn($0.0.name, flags: $0.1) }
                    let sql = "INSERT INTO \(q(schema.table(entity))) (\(columns.map(q).joined(separator: ", "))) VALUES ("
                        + (1...columns.count).map { "?\($0)" }.joined(separator: ", ") + ")"
                    var values: [SQLValue] = [.integer(node.id.primaryKey), .integer(node.version)]
                    values += node.values.map(SQLLowering.sqlValue)
                    values += toOne.map { node.toOne[$0.slot].map(SQLValue.integer) ?? .null }
                    values += companions.map { attribute, flags in
                        guard case .string(let text) = node.values[attribute.slot] else { return SQLValue.null }
                        return .text(StringFolding.fold(text, ComparisonOptions(foldingFlags: flags)))
                    }
                    try connection.forEachRow(sql, values)
                    for relationship in entity.relationships where relationship.isToMany {
                        // Join tables are written from their source side only.
                        guard case .joinTable(let table, "Z_SOURCE", _) = schema.storage(of: relationship, in: entity),
                              let targets = node.toMany[relationship.slot] else { continue }
                        let link = "INSERT OR IGNORE INTO \(q(table)) (\"Z_SOURCE\", \"Z_TARGET\") VALUES (?1, ?2)"
                        for target in targets {
                            try connection.forEachRow(link, [.integer(node.id.primaryKey), .integer(target)])
                        }
                    }
                    if index % 10_000 == 9_999 { progress?(index + 1, nodes.count) }
                }
                progress?(nodes.count, nodes.count)
            }
        }
    }

    // MARK: Reading rows

    /// Runs a `.rows` query of `entity` and returns its rows as nodes, stored
    /// in the row cache.
    func fetchNodes(_ query: SQLQuery, entity: Entity, extraLeadingColumns: Int = 0,
                    leading: ((SQLiteStatement) -> Void)? = nil) throws(StoreError) -> [RowNode] {
        let now = Date().timeIntervalSinceReferenceDate
        let attributeTypes = entity.attributes.map(\.type)
        let toOneCount = entity.toOneCount
        let toManyCount = entity.toManyCount
        let base = extraLeadingColumns
        // Every node starts with its to-many relationships not loaded: one
        // shared array.
        let unloaded = [[Int64]?](repeating: nil, count: toManyCount)
        var nodes: [RowNode] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    if let leading { leading(row) }
                    var values: [PredicateValue] = []
                    values.reserveCapacity(attributeTypes.count)
                    for (i, type) in attributeTypes.enumerated() {
                        values.append(row.value(base + 2 + i, as: type))
                    }
                    var toOne: [Int64?] = []
                    toOne.reserveCapacity(toOneCount)
                    for i in 0..<toOneCount {
                        let column = base + 2 + attributeTypes.count + i
                        toOne.append(row.isNull(column) ? nil : row.integer(column))
                    }
                    nodes.append(RowNode(id: ObjectID(entity: entity.index, primaryKey: row.integer(base)),
                                         version: row.integer(base + 1), fetchTimestamp: now, values: values,
                                         toOne: toOne, toMany: unloaded))
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return rowCache.storeFetched(nodes)
    }

    /// Runs a query whose first column is an integer and returns that column.
    func fetchIntegers(_ query: SQLQuery) throws(StoreError) -> [Int64] {
        var result: [Int64] = []
        do {
            try withConnection { connection in
                try connection.forEachRow(query.sql, query.bindings) { row in
                    result.append(row.integer(0))
                    return true
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
        return result
    }

    /// SQLite's query plan for a query, one line per step.
    public func queryPlan(_ query: SQLQuery) throws(StoreError) -> [String] {
        do {
            return try withConnection { connection in
                try connection.query("EXPLAIN QUERY PLAN " + query.sql, query.bindings).map { row in
                    if case .text(let detail) = row[3] { return detail }
                    return row.map(\.description).joined(separator: " ")
                }
            }
        } catch {
            throw StoreError(error, path: path, sql: query.sql)
        }
    }
}

extension StoreError {
    /// The error for an SQLite failure on the store at `path`: the failures a
    /// user can act on (a lock, a read-only or full file, a damaged file)
    /// get their own cases; the rest stay `.sqlite`.
    init(_ error: SQLiteError, path: String) {
        switch error.code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: self = .locked(path: path)
        case SQLITE_READONLY: self = .readOnly(path: path)
        case SQLITE_FULL: self = .full(path: path)
        case SQLITE_CORRUPT: self = .damaged(path: path, reason: error.message)
        case SQLITE_NOTADB: self = .notADatabase(path: path)
        default: self = .sqlite(error)
        }
    }
}
