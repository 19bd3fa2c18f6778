// PostgreSQL: a pool of connections for the store's synchronous calls.
//
// A context's API is synchronous (as Core Data's is), so the store waits for
// each statement on the calling thread: postgres-nio's EventLoopFuture
// interface runs the statement on NIO's event loops, and the caller blocks
// on its result. postgres-nio's own pool (`PostgresClient`) is async-only:
// blocking a thread of Swift's cooperative pool on it could starve the very
// tasks it waits for. This pool hands out at most `maximumConnections`
// connections, opening them when first needed; a caller waits (on a
// condition) when all are in use. Each connection's search path is the
// store's schema.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Logging
import PostgresNIO
import Sift

/// Connections to one database, at most `maximumConnections` of them open.
final class PostgresConnectionPool: @unchecked Sendable {
    let configuration: PostgresConnection.Configuration
    /// The schema every connection works in (its search path).
    let schemaName: String
    let maximumConnections: Int
    let logger: Logger
    private let condition = NSCondition()
    private var idle: [PostgresConnection] = []
    private var open = 0
    private var nextID = 0
    private var closed = false

    init(configuration: PostgresConnection.Configuration, schemaName: String, maximumConnections: Int, logger: Logger) {
        self.configuration = configuration
        self.schemaName = schemaName
        self.maximumConnections = max(1, maximumConnections)
        self.logger = logger
    }

    /// Opens a connection whose search path is the store's schema.
    func connect() throws -> PostgresConnection {
        let id = condition.withLock { () -> Int in
            nextID += 1
            return nextID
        }
        let connection: PostgresConnection
        do {
            connection = try PostgresConnection.connect(on: PostgresConnection.defaultEventLoopGroup.any(),
                                                        configuration: configuration, id: id, logger: logger).wait()
        } catch let error as PSQLError {
            throw PostgresDatabaseError(message: "cannot connect to \(describe(configuration)): \(PostgresDatabaseError(error, sql: nil).message)")
        } catch {
            throw PostgresDatabaseError(message: "cannot connect to \(describe(configuration)): \(error)")
        }
        do {
            let use = ServerCatalog.useSchema(schemaName)
            _ = try connection.run(use.sql, use.bindings, logger: logger)
        } catch {
            try? connection.close().wait()
            throw error
        }
        return connection
    }

    private func describe(_ configuration: PostgresConnection.Configuration) -> String {
        "\(configuration.host ?? "the server"):\(configuration.port ?? 5432)"
    }

    /// Runs `body` with a connection of the pool, waiting for one when all
    /// are in use. A connection that failed is closed, not reused.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try acquire()
        do {
            let result = try body(connection)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    private func acquire() throws -> PostgresConnection {
        condition.lock()
        while true {
            if closed {
                condition.unlock()
                throw PostgresDatabaseError(message: "the store was closed")
            }
            if let connection = idle.popLast() {
                condition.unlock()
                if connection.isClosed {
                    condition.withLock { open -= 1 }
                    return try acquire()
                }
                return connection
            }
            if open < maximumConnections {
                open += 1
                condition.unlock()
                do {
                    return try connect()
                } catch {
                    condition.withLock {
                        open -= 1
                        condition.signal()
                    }
                    throw error
                }
            }
            condition.wait()
        }
    }

    private func release(_ connection: PostgresConnection) {
        condition.withLock {
            if connection.isClosed || closed {
                open -= 1
                if !connection.isClosed { let closing: EventLoopFuture<Void> = connection.close(); _ = closing }
            } else {
                idle.append(connection)
            }
            condition.signal()
        }
    }

    /// Closes every idle connection; connections in use close when released.
    func close() {
        let connections = condition.withLock { () -> [PostgresConnection] in
            closed = true
            defer { idle.removeAll() }
            open -= idle.count
            condition.broadcast()
            return idle
        }
        for connection in connections { try? connection.close().wait() }
    }
}

extension PostgresConnection {
    /// Runs a statement with Sift's values bound, and returns its rows as
    /// values and how many rows it changed.
    func run(_ sql: String, _ bindings: [SQLValue], logger: Logger) throws -> (rows: [[SQLValue]], changed: Int) {
        let query = try PostgresDatabase.query(sql, bindings)
        do {
            let result = try self.query(query, logger: logger).wait()
            return (try result.rows.map { try $0.map(PostgresDatabase.value) }, result.metadata.rows ?? 0)
        } catch let error as PSQLError {
            throw PostgresDatabaseError(error, sql: sql)
        }
    }
}

extension PostgresConnection {
    /// Runs a statement, handing each row to `body` as it arrives (on the
    /// connection's event loop), and waits until the last one.
    func forEachRow(_ sql: String, _ bindings: [SQLValue], logger: Logger,
                    _ body: @escaping @Sendable (PostgresRow) -> Void) throws {
        let query = try PostgresDatabase.query(sql, bindings)
        do {
            _ = try self.query(query, logger: logger) { body($0) }.wait()
        } catch let error as PSQLError {
            throw PostgresDatabaseError(error, sql: sql)
        }
    }
}
#endif
