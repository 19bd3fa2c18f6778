// Store stage: the SQLite store.
//
// A store is a file (or an in-memory database for tests) in Core Data's
// layout (`SQLSchema`), with the model it was made for identified in its
// metadata (Core Data's entity version hashes, and Sift's JSON form of the
// model): opening it with a different model is an error, never a silent
// misreading. A store Apple's framework wrote opens with its model (the
// version whose hashes are the store's) or its model cache. Rows read
// from it become row-cache nodes; the store's row cache is shared by every
// context that uses it. Access to the connection is serialized.

import CSQLite
import Foundation
import Sift
import Synchronization

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
    /// The folder of the files Core Data keeps external binary data in.
    let externalData: URL?
    /// Functions the application registered: callable in predicates, in
    /// memory and in SQL alike.
    public let functions: FunctionRegistry
    /// Value transformers of transformable attributes, registered by name.
    public let valueTransformers = ValueTransformerRegistry()
    let connection: SQLiteConnection
    /// The connection's lock: re-entrant (the one lock in Sift that is not
    /// a `LockedState`), since work inside a transaction reads through
    /// `withConnection` again on the same thread.
    private let lock = NSRecursiveLock()
    /// Who hears about the store's saves.
    public let observers = StoreObservers()
    /// The requests compiled so far, by shape.
    public let compiledFetches = CompiledFetchCache()
    /// The store's own fetch time limit (`fetchTimeLimit`).
    let storedFetchTimeLimit = LockedState<Duration?>(nil)
    /// The longest one of the store's fetches may work unless its request
    /// says otherwise (`FetchRequest.timeLimit`); nil (the default) for
    /// `PredicateLimits.standard.fetchTimeLimit`. Past it the fetch stops and
    /// ends with `StoreError.evaluation(.fetchTooCostly)`.
    public var fetchTimeLimit: Duration? {
        get { storedFetchTimeLimit.withLock { $0 } }
        set { storedFetchTimeLimit.withLock { $0 = newValue } }
    }
    /// Why saves are refused, when they are: a store that keeps persistent
    /// history, opened with history tracking off.
    public internal(set) var writesRefused: String?
    /// How many tombstone columns the store's history has, when its saves
    /// write history; nil when they do not.
    var historyTombstones: Int?
    /// Learns of other processes' saves while the store is observed (a
    /// file's store; nil in memory).
    var otherProcesses: OtherProcessWatcher?
    /// Whether the store's saves, batch changes and imports write
    /// persistent history, as Core Data's do with history tracking on.
    public var writesPersistentHistory: Bool { historyTombstones != nil }

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
    ///
    /// A store that keeps persistent history (Core Data's `ATRANSACTION`,
    /// `ACHANGE` and `ATRANSACTIONSTRING` tables) writes it with every save,
    /// batch change and import, in the same transaction, unless
    /// `historyTracking` is `.off`; `.on` adds the tables to a store that has none.
    ///
    /// - Parameters:
    ///   - url: The store file; a missing or empty file becomes a new store.
    ///   - model: The model of a new store, or the model an existing store must have been made for; nil to open
    ///     an existing store with its own.
    ///   - functions: The application's functions, callable in predicates, in memory and in SQL.
    ///   - readOnly: Whether the store only fetches.
    ///   - busyTimeout: How many seconds to wait for another connection's lock before failing.
    ///   - historyTracking: Whether saves write persistent history: as the store does (`.asStored`, the
    ///     default), always (`.on`, adding the tables when the store has none), or never (`.off`: a store
    ///     that keeps history then opens for reading only, as Core Data's does).
    /// - Throws: `StoreError`: `.notAStoreFile` when the path is a folder, its folder does not exist, or
    ///   there is no file (or an empty one) and no store is to be made (no model given, or read-only);
    ///   `.noModel` when the file holds no store and no model was given (or the store
    ///   keeps no model); `.modelMismatch` or
    ///   `.modelDoesNotMatchStore` when the store was made for another model; `.notADatabase`,
    ///   `.foreignDatabase` or `.damaged` when the file is not a readable store; `.locked` or `.sqlite` when
    ///   SQLite fails.
    public convenience init(url: URL, model: DataModel? = nil, functions: FunctionRegistry = FunctionRegistry(),
                            readOnly: Bool = false, busyTimeout: Double = 5,
                            historyTracking: HistoryTracking = .asStored) throws(StoreError)
    {
        let path = url.path
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        let size = (attributes?[.size] as? NSNumber)?.intValue ?? 0
        if let problem = StoreError.FileProblem(storeAt: url, attributes: attributes,
                                                 creating: model != nil && !readOnly) {
            throw .notAStoreFile(path: path, problem: problem)
        }
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
        var numbers: [String: Int]?
        var refusal: String?
        var hasHistory = false
        var joinTables: [String: [String]]?
        if let stored = try Self.storedModel(connection, path: path, size: size, expected: model) {
            resolved = stored.model
            numbers = stored.entityNumbers
            // Its join tables as it names them, which Core Data's versions have named differently.
            joinTables = try Self.joinTableColumns(connection, path: path)
            hasHistory = stored.historyTracking
            if hasHistory, historyTracking == .off {
                refusal = "the store keeps persistent history and was opened with history tracking off, "
                    + "so its history would miss the changes: open it with history tracking on to save to it"
            }
        } else {
            guard let model else { throw .noModel(path: path) }
            guard !readOnly else { throw .readOnly(path: path) }
            resolved = model
            try Self.setJournalMode(connection, path: path)
            try Self.create(connection, model, path: path)
        }
        try self.init(connection: connection, model: resolved, url: url, functions: functions, entityNumbers: numbers,
                      joinTables: joinTables)
        // A store that exists is written to only once it is known to fit (its join tables matched).
        if joinTables != nil, !readOnly { try Self.setJournalMode(connection, path: path) }
        writesRefused = refusal
        let tracking = switch historyTracking {
        case .asStored: hasHistory
        case .on: true
        case .off: false
        }
        if tracking, !readOnly { try keepHistory(creatingTables: !hasHistory) }
    }

    /// Makes the store's writes keep history: adds the history tables (or
    /// the tombstone columns the model needs and the table lacks), as Core
    /// Data does when history tracking is turned on.
    private func keepHistory(creatingTables: Bool) throws(StoreError) {
        let needed = HistoryProperties.tombstoneCount(model)
        do {
            // A store whose history is whole already is only read: opening it writes nothing.
            func tombstoneColumns(_ connection: SQLiteConnection) throws -> Int {
                HistoryStatements.tombstoneColumns(try connection.query(HistoryStatements.changeColumns).compactMap { row -> String? in
                    if case .text(let name)? = row.first { name } else { nil }
                }).count
            }
            if !creatingTables, let present = try withConnection({ connection -> Int? in
                let counts = try connection.query(HistoryStatements.countHistoryTables).first ?? []
                guard counts == [.integer(3), .integer(3)] else { return nil }
                let present = try tombstoneColumns(connection)
                return present >= needed ? present : nil
            }) {
                historyTombstones = present
                return
            }
            historyTombstones = try withConnection { connection in
                try connection.transaction {
                    // (A store with only some of the tables gets the others.)
                    for statement in HistoryStatements.createTables(tombstones: needed) { try connection.execute(statement) }
                    if creatingTables { return needed }
                    let present = try tombstoneColumns(connection)
                    for number in present..<max(present, needed) {
                        try connection.execute(HistoryStatements.addTombstoneColumn(number))
                    }
                    return max(present, needed)
                }
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    private static func setJournalMode(_ connection: SQLiteConnection, path: String) throws(StoreError) {
        do {
            try connection.execute("PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL")
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// An in-memory store for `model`, for tests and one-off work.
    ///
    /// - Parameters:
    ///   - model: The store's model.
    ///   - functions: The application's functions, callable in predicates, in memory and in SQL.
    /// - Throws: `StoreError` (usually `.sqlite`) when SQLite cannot open the database or create the model's
    ///   tables.
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
        try self.init(connection: connection, model: model, url: nil, functions: functions, entityNumbers: nil)
    }

    /// - Parameter joinTables: The tables of a store that exists and their
    ///   columns (`joinTableColumns`), whose join tables the schema takes the
    ///   names of; nil for a new store, whose names are derived.
    private init(connection: SQLiteConnection, model: DataModel, url: URL?, functions: FunctionRegistry,
                 entityNumbers: [String: Int]?, joinTables: [String: [String]]? = nil) throws(StoreError) {
        self.connection = connection
        self.model = model
        let derived = SQLSchema(model: model, entityNumbers: entityNumbers)
        if let joinTables {
            do {
                self.schema = try derived.matchingJoinTables(joinTables)
            } catch {
                throw .unmatchedJoinTable(path: url?.path ?? ":memory:", table: error.table, reason: error.reason)
            }
        } else {
            self.schema = derived
        }
        self.lowering = SQLLowering(schema: schema)
        self.rowCache = RowCache(model: model)
        self.url = url
        self.externalData = url.map(SQLSchema.externalData(ofStoreAt:))
        self.functions = functions
        if url != nil {
            let watcher = OtherProcessWatcher(store: self)
            otherProcesses = watcher
            observers.whenFirstObserved.withLock { $0 = { watcher.start() } }
        }
        do {
            try connection.registerSiftFunctions()
            for function in functions.all { try connection.register(function) }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Registers a function for predicates, in memory and with SQLite.
    ///
    /// - Parameter function: The function, called by its name in predicates.
    /// - Throws: `StoreError` (usually `.sqlite`) when SQLite refuses the function; it stays registered for
    ///   memory evaluation.
    public func register(_ function: CustomFunction) throws(StoreError) {
        functions.register(function)
        do {
            try withConnection { try $0.register(function) }
        } catch {
            throw StoreError(error, path: path)
        }
    }



    /// A new store file at `url` for `model`, with the store UUID and the
    /// application's metadata keys of the store it replaces (a migration's
    /// destination). The file must not exist.
    convenience init(newStoreAt url: URL, model: DataModel, uuid: String, keeping metadata: [String: Any]) throws(StoreError) {
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: url.path)
        } catch {
            throw StoreError(error, path: url.path)
        }
        try Self.setJournalMode(connection, path: url.path)
        try Self.create(connection, model, path: url.path, uuid: uuid, keeping: metadata)
        try self.init(connection: connection, model: model, url: url, functions: FunctionRegistry(), entityNumbers: nil)
    }

    private static func create(_ connection: SQLiteConnection, _ model: DataModel, path: String,
                               uuid: String = UUID().uuidString, keeping: [String: Any] = [:]) throws(StoreError) {
        let schema = SQLSchema(model: model)
        let metadata = try StoreMetadata.propertyList(for: model, uuid: uuid, keeping: keeping)
        do {
            try connection.transaction {
                for statement in schema.createStatements { try connection.run(statement) }
                try connection.run(schema.insertMetadata(plist: Array(metadata), uuid: uuid))
                // The compiled model, as Core Data keeps it for migrations.
                if let cache = model.modelCacheData { try connection.run(schema.insertModelCache(cache)) }
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The model a store file was made for, its entity numbers and whether
    /// Core Data keeps history in it; nil when the file is empty (no tables
    /// at all): a new store. Reads only; a file that is not a store in Core
    /// Data's layout is an error.
    private static func storedModel(_ connection: SQLiteConnection, path: String, size: Int, expected: DataModel?)
        throws(StoreError) -> (model: DataModel, entityNumbers: [String: Int], historyTracking: Bool)?
    {
        guard size > 0, let catalog = try StoreCatalog.read(connection, path: path) else { return nil }
        guard let model = try catalog.model(expected: expected) else { throw .noModel(path: path) }
        return (model, catalog.entityNumbers(for: model), catalog.tracksHistory)
    }

    /// The tables of a store that exists that may be join tables, with their
    /// columns in order, read from `sqlite_master`.
    private static func joinTableColumns(_ connection: SQLiteConnection, path: String) throws(StoreError) -> [String: [String]] {
        do {
            let rows = try connection.query(CoreDataCatalog.sqliteTableColumns).compactMap { row -> (table: String, column: String)? in
                guard row.count == 2, case .text(let table) = row[0], case .text(let column) = row[1] else { return nil }
                return (table, column)
            }
            return CoreDataCatalog.joinTableCandidates(rows)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The store's file path, for errors (":memory:" for an in-memory store).
    var path: String { url?.path ?? ":memory:" }

    /// Runs `body` with the connection, one caller at a time.
    ///
    /// - Parameter body: The work to do with the store's connection.
    /// - Returns: What `body` returns.
    /// - Throws: Whatever `body` throws.
    public func withConnection<T>(_ body: (SQLiteConnection) throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body(connection)
    }

    /// How many SQL statements the store has run.
    public var statementCount: Int { withConnection { $0.statementCount } }
}
