// The stores the command line opens: a SQLite file (Sift's, or one Core
// Data wrote), a store on a PostgreSQL server (`--postgres URL`, in
// `--schema`), or a store `sift serve` serves (`--store http://HOST:PORT`,
// with `--token`). All of them fetch, count, explain and change alike.

import ArgumentParser
import Foundation
import Sift
#if PostgreSQL
import SiftPostgres
#endif
#if HTTP
import SiftRemote
#endif
import SiftStore

/// Where a command's store is: a file, or a server.
struct StoreLocation: ParsableArguments {
    @Option(help: ArgumentHelp("The store file (SQLite: Sift's, or one Core Data wrote; a name ending in .json: an atomic "
                               + "store's data set), or a server `sift serve` runs: "
                               + "http://HOST:PORT.", valueName: "path"))
    var store: String?

    @Option(help: ArgumentHelp("The bearer token of a `sift serve` server (--store http://…).", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("A store on a PostgreSQL server instead: postgres://user[:password]@host[:port]/database.",
                               valueName: "url"))
    var postgres: String?

    @Option(help: ArgumentHelp("The database schema of the PostgreSQL store.", valueName: "name"))
    var schema: String = "public"

    func validate() throws {
        if (store == nil) == (postgres == nil) { throw ValidationError("give a store file (--store) or a server (--postgres)") }
    }

    /// Where the store is, for messages.
    var description: String { store ?? "\(postgres ?? "") (schema \(schema))" }

    /// Whether the store is one `sift serve` serves.
    var isRemote: Bool { store.map(isServerAddress) ?? false }

    /// Opens the store. `model` is the model of a Core Data store file (or
    /// of a new server store).
    func open(model: String? = nil, readOnly: Bool = true, creatingWith newModel: DataModel? = nil) throws -> any PersistentStore {
        if let store, isServerAddress(store) { return try openRemoteStore(store, token: token) }
        if let store, isAtomicStoreFile(store) { return try openAtomicStore(store) }
        return try openSQL(model: model, readOnly: readOnly, creatingWith: newModel)
    }

    /// Opens a store that runs SQL: a file or a PostgreSQL schema (a store served over HTTP is refused).
    func openSQL(model: String? = nil, readOnly: Bool = true, creatingWith newModel: DataModel? = nil) throws -> any SQLPersistentStore {
        if let store {
            if isServerAddress(store) {
                throw CommandFailure(.usage, "\(store) is a store served over HTTP: this command needs a store file or --postgres")
            }
            return try openStore(store, model: model, readOnly: readOnly)
        }
        return try openServerStore(url: postgres ?? "", model: newModel, schemaName: schema)
    }
}

/// Whether a store file is an atomic store's JSON data set (what `sift copy --to FILE.json` writes), not
/// SQLite: a name ending in `.json`, as `copy` reads its source and writes its target.
func isAtomicStoreFile(_ path: String) -> Bool {
    URL(fileURLWithPath: path).pathExtension.lowercased() == "json"
}

/// Opens an atomic store's data set file, naming it as given in a failure.
func openAtomicStore(_ path: String) throws -> any PersistentStore {
    let url = URL(fileURLWithPath: path)
    do {
        return try AtomicStore(url: url)
    } catch {
        throw CommandFailure(error).naming(url, as: path)
    }
}

/// Whether `--store` names a server rather than a file.
func isServerAddress(_ text: String) -> Bool {
    text.hasPrefix("http://") || text.hasPrefix("https://")
}

#if HTTP
/// A store `sift serve` serves, with the model it serves; no change feed (a command's store).
func openRemoteStore(_ address: String, token: String?) throws -> RemoteStore {
    guard let url = URL(string: address), url.host != nil else {
        throw CommandFailure(.usage, "'\(address)' is not a server's address (http://HOST:PORT)")
    }
    var configuration = RemoteStoreConfiguration()
    configuration.token = token
    configuration.followsChanges = false
    do {
        return try RemoteStore(url: url, configuration: configuration)
    } catch {
        throw CommandFailure(error)
    }
}
#else
/// Stores served over HTTP need the HTTP trait.
func openRemoteStore(_ address: String, token: String?) throws -> any PersistentStore {
    throw CommandFailure(.usage, "this sift was built without the HTTP trait: --store http://… is not available")
}
#endif

/// Closes a store the command opened, when it holds a connection or file.
func close(_ store: any PersistentStore) {
    (store as? any SQLPersistentStore)?.close()
}

/// A store on a PostgreSQL server, in `schemaName` (made on first open with
/// `model`), not listening to other processes: a command's store.
func openServerStore(url: String, model: DataModel?, schemaName: String, observesOtherProcesses: Bool = false) throws -> any SQLPersistentStore {
    #if PostgreSQL
    return try PostgresStore(url: url, model: model, schemaName: schemaName, observesOtherProcesses: observesOtherProcesses)
    #else
    throw CommandFailure(.usage, "this sift was built without the PostgreSQL trait: --postgres is not available")
    #endif
}

/// Drops a scratch store's schema, when it is on a server.
func destroyServerStore(_ store: (any SQLPersistentStore)?) {
    #if PostgreSQL
    try? (store as? PostgresStore)?.destroy()
    #endif
}
