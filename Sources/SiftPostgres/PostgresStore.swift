// PostgreSQL: the store on a server. The same logical layout as on SQLite
// (`SQLSchema` in PostgreSQL's dialect: Core Data's tables, Z_PK, Z_OPT,
// Z_ENT, join tables, Z_PRIMARYKEY, Z_METADATA), in a schema of the
// database (`public` unless told), with the model identified in its
// metadata: opening it with a different model is an error, never a silent
// misreading. Fetching and saving are the SQL stores' (`SQLStoreBackend`,
// `SQLSaveWriter`); this file says how to open, create and close a store.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Logging
import PostgresNIO
import Sift
import SiftStore
import Synchronization

/// A store on a PostgreSQL server, for a model.
///
/// Every context on it (in any process) fetches and saves as on SQLite:
/// the same predicates and answers, saves as one transaction each with the
/// same optimistic locking and merge policies. Saves by other processes
/// reach this store's observers through `LISTEN`/`NOTIFY`.
///
/// ```swift
/// let store = try PostgresStore(url: "postgres://sift@127.0.0.1:5432/company", model: model)
/// defer { store.close() }
/// let context = ObjectContext(store: store)
/// let sales = try context.fetch(FetchRequest(entityName: "Employee", predicate: "department.name == %@",
///                                            arguments: ["Sales"]))
/// ```
public final class PostgresStore: @unchecked Sendable {
    /// The model the store holds.
    public let model: DataModel
    /// How the model is laid out in tables (PostgreSQL's dialect).
    public let schema: SQLSchema
    /// The SQL lowering for the model.
    public let lowering: SQLLowering
    /// The nodes of the rows read so far, shared by every context.
    public let rowCache: RowCache
    /// Functions the application registered: callable in predicates (they
    /// run in memory: PostgreSQL has no Swift functions).
    public let functions: FunctionRegistry
    /// Value transformers of transformable attributes, registered by name.
    public let valueTransformers = ValueTransformerRegistry()
    /// The database schema the store's tables are in.
    public let schemaName: String
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
    let pool: PostgresConnectionPool
    let logger: Logger
    /// This store's name in change notifications, to know its own.
    let identifier = UUID().uuidString.lowercased()
    /// The connection that listens for other processes' saves.
    let listener = LockedListener()
    /// Statements run so far.
    let statements = Atomic<Int>(0)

    /// Opens the store in `schemaName` of the database `url` names
    /// (`postgres://user[:password]@host[:port]/database`). A schema without
    /// the store's tables becomes a new store for `model` (the schema is
    /// created when missing); an existing store must have been made for
    /// `model` (or, when `model` is nil, is opened with the model it was
    /// made for). Two processes creating the same store at once are
    /// serialized by an advisory lock.
    ///
    /// At most `maximumConnections` connections are open at once. With
    /// `observesOtherProcesses`, one more connection listens for saves made
    /// through other stores on the same tables (other processes), and
    /// announces them to this store's observers.
    ///
    /// - Parameters:
    ///   - url: The database's URL: `postgres://user[:password]@host[:port]/database`.
    ///   - model: The model of a new store, or the model an existing store must have been made for; nil to open
    ///     an existing store with its own.
    ///   - schemaName: The database schema the store's tables are in.
    ///   - functions: The application's functions predicates may call (run in memory).
    ///   - maximumConnections: The most connections the store keeps open at once.
    ///   - observesOtherProcesses: Whether one more connection listens for other processes' saves and announces
    ///     them to this store's observers.
    /// - Throws: `StoreError`: `.server` when `url` is not a `postgres://` URL, or the server cannot be reached
    ///   or refuses a statement; `.noModel` when the schema holds no store and no model was given;
    ///   `.modelMismatch` when the store was made for another model; `.damaged` when its metadata does not name
    ///   a model that loads.
    public init(url: String, model: DataModel? = nil, schemaName: String = "public",
                functions: FunctionRegistry = FunctionRegistry(), maximumConnections: Int = 4,
                observesOtherProcesses: Bool = true) throws(StoreError) {
        let configuration = try Self.configuration(url: url)
        let logger = Logger(label: "sift.postgres")
        let pool = PostgresConnectionPool(configuration: configuration, schemaName: schemaName,
                                          maximumConnections: maximumConnections, logger: logger)
        let resolved: DataModel
        let numbers: [String: Int]?
        do {
            (resolved, numbers) = try Self.openOrCreate(pool, model: model, schemaName: schemaName, logger: logger)
        } catch {
            pool.close()
            throw Self.storeError(error)
        }
        self.model = resolved
        self.schema = SQLSchema(model: resolved, dialect: .postgreSQL, entityNumbers: numbers)
        self.lowering = SQLLowering(schema: schema)
        self.rowCache = RowCache(model: resolved)
        self.functions = functions
        self.schemaName = schemaName
        self.pool = pool
        self.logger = logger
        if observesOtherProcesses {
            do {
                try startListening()
            } catch {
                pool.close()
                throw Self.storeError(error)
            }
        }
    }

    deinit {
        close()
    }

    /// Closes the store's connections. A closed store fails every call.
    public func close() {
        listener.stop()
        pool.close()
    }

    /// Runs `body` with a connection of the store's pool.
    ///
    /// Inside a fetch with a time budget (`EvaluationBudget.remainingTime`),
    /// the connection's `statement_timeout` is what is left of it while
    /// `body` runs (and is reset after), so the server cancels a statement
    /// that runs on past the fetch's time; the cancel (SQLSTATE 57014) is
    /// `StoreError.evaluation(.fetchTooCostly)`.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws(StoreError) -> T {
        guard let remaining = EvaluationBudget.remainingTime else {
            do {
                return try pool.withConnection(body)
            } catch {
                throw Self.storeError(error)
            }
        }
        let term = "the fetch's SQL statement"
        // Whole milliseconds, at least 1 (0 would mean no timeout), clamped
        // to what PostgreSQL takes (an int of milliseconds).
        let (seconds, attoseconds) = remaining.components
        let milliseconds = seconds >= Int64(Int32.max / 1000) ? Int64(Int32.max)
            : max(1, seconds * 1000 + attoseconds / 1_000_000_000_000_000)
        if remaining == .zero { throw .evaluation(EvaluationBudget.timedOut(in: term)) }
        let logger = self.logger
        do {
            return try pool.withConnection { connection in
                _ = try connection.run("SET statement_timeout = \(milliseconds)", [], logger: logger)
                defer { _ = try? connection.run("RESET statement_timeout", [], logger: logger) }
                return try body(connection)
            }
        } catch let error as PostgresDatabaseError where error.code == PostgresDatabaseError.SQLState.queryCanceled {
            throw .evaluation(EvaluationBudget.timedOut(in: term))
        } catch {
            throw Self.storeError(error)
        }
    }

    /// Runs one statement on a connection of the pool.
    func run(_ query: SQLQuery) throws(StoreError) -> [[SQLValue]] {
        let logger = self.logger
        statements.add(1, ordering: .relaxed)
        return try withConnection { try $0.run(query.sql, query.bindings, logger: logger).rows }
    }

    /// How many SQL statements the store has run (fetches, faults, saves).
    public var statementCount: Int { statements.load(ordering: .relaxed) }

    /// A PostgreSQL or pool error as a store error.
    static func storeError(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError: error
        case let error as PostgresDatabaseError: .server(error.message, sql: error.sql)
        case let error as PSQLError: .server(PostgresDatabaseError(error, sql: nil).message, sql: nil)
        default: StoreError(error)
        }
    }

    /// The connection settings a `postgres://` URL names.
    static func configuration(url text: String) throws(StoreError) -> PostgresConnection.Configuration {
        guard let url = URL(string: text), ["postgres", "postgresql"].contains(url.scheme ?? ""), let host = url.host,
              let user = url.user, !user.isEmpty else {
            throw .server("'\(text)' is not a postgres://user@host[:port]/database URL", sql: nil)
        }
        let database = url.path.hasPrefix("/") ? String(url.path.dropFirst()) : url.path
        return PostgresConnection.Configuration(host: host, port: url.port ?? 5432, username: user, password: url.password,
                                                database: database.isEmpty ? nil : database, tls: .disable)
    }

    /// Opens the store in the schema, or creates it there, in one
    /// transaction under an advisory lock named after the schema.
    private static func openOrCreate(_ pool: PostgresConnectionPool, model: DataModel?, schemaName: String,
                                     logger: Logger) throws -> (DataModel, [String: Int]?) {
        try pool.withConnection { connection in
            func run(_ query: SQLQuery) throws -> [[SQLValue]] {
                try connection.run(query.sql, query.bindings, logger: logger).rows
            }
            _ = try run(ServerCatalog.createSchema(schemaName))
            _ = try run(SQLQuery(sql: "BEGIN"))
            do {
                _ = try run(ServerCatalog.lockStore(schemaName))
                let exists = try run(ServerCatalog.storeExists(schemaName))
                let result: (DataModel, [String: Int]?)
                if case .integer(1)? = exists.first?.first {
                    result = try storedModel(try run(CoreDataCatalog.selectMetadata(in: .postgreSQL)), expected: model,
                                             schemaName: schemaName)
                } else {
                    guard let model else { throw StoreError.noModel(path: schemaName) }
                    let schema = SQLSchema(model: model, dialect: .postgreSQL)
                    let uuid = UUID().uuidString
                    let metadata = try StoreMetadata.propertyList(for: model, uuid: uuid, storeType: "PostgreSQL")
                    for statement in schema.createStatements { _ = try run(statement) }
                    _ = try run(schema.insertMetadata(plist: Array(metadata), uuid: uuid))
                    result = (model, nil)
                }
                // The change history (PostgresStore+ChangeHistory.swift), added to a store made without it.
                _ = try run(ChangeHistoryStatements.createTable())
                _ = try run(SQLQuery(sql: "COMMIT"))
                return result
            } catch {
                _ = try? run(SQLQuery(sql: "ROLLBACK"))
                throw error
            }
        }
    }

    /// The model a store's metadata names, checked against `expected`.
    private static func storedModel(_ rows: [[SQLValue]], expected: DataModel?, schemaName: String) throws
        -> (DataModel, [String: Int]?)
    {
        guard case .blob(let plist)? = rows.first?.first, let metadata = StoreMetadata.read(plist),
              let json = metadata[StoreMetadata.modelKey] as? String else {
            throw StoreError.damaged(path: schemaName, reason: "its metadata does not name the model it was made for")
        }
        let hash = metadata[StoreMetadata.modelHashKey] as? String ?? ""
        if let expected {
            guard expected.versionHash == hash else {
                throw StoreError.modelMismatch(path: schemaName, storeHash: hash, modelHash: expected.versionHash)
            }
            return (expected, nil)
        }
        let stored: DataModel
        do {
            stored = try DataModel(json: Data(json.utf8))
        } catch {
            throw StoreError.damaged(path: schemaName, reason: "the model it holds does not load: \(error)")
        }
        guard stored.versionHash == hash else {
            throw StoreError.damaged(path: schemaName, reason: "the model it holds is not the one its hash names (\(hash))")
        }
        return (stored, nil)
    }

    /// Removes the store from the database: its schema (with everything in
    /// it) when the store has a schema of its own, its tables when it is in
    /// `public`. The store is closed afterwards.
    ///
    /// - Throws: `StoreError.server` when the server cannot be reached or refuses to drop the schema or a
    ///   table; the store is closed all the same.
    public func destroy() throws(StoreError) {
        defer { close() }
        if schemaName == "public" {
            // With the change history, and the table of a served store's remembered save answers when it has one.
            for table in schema.tableNames + [ChangeHistoryStatements.table, SaveAnswerStatements.table] {
                _ = try run(ServerCatalog.dropTable(table))
            }
        } else {
            _ = try run(ServerCatalog.dropSchema(schemaName))
        }
    }

    /// Registers a function for predicates (it runs in memory).
    ///
    /// - Parameter function: The function, called by its name in predicates.
    public func register(_ function: CustomFunction) {
        functions.register(function)
    }
}
#endif
