// The stores the command line opens: a SQLite file (Sift's, or one Core
// Data wrote) or a store on a PostgreSQL server (`--postgres URL`, in
// `--schema`). Both fetch, explain and import alike.

import ArgumentParser
import Foundation
import Sift
#if PostgreSQL
import SiftPostgres
#endif
import SiftStore

/// Where a command's store is: a file, or a server.
struct StoreLocation: ParsableArguments {
    @Option(help: ArgumentHelp("The store file (Sift's, or one Core Data wrote).", valueName: "path"))
    var store: String?

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

    /// Opens the store. `model` is the model of a Core Data store file (or
    /// of a new server store).
    func open(model: String? = nil, readOnly: Bool = true, creatingWith newModel: DataModel? = nil) throws -> any SQLPersistentStore {
        if let store { return try openStore(store, model: model, readOnly: readOnly) }
        return try openServerStore(url: postgres ?? "", model: newModel, schemaName: schema)
    }
}

/// A store on a PostgreSQL server, in `schemaName` (made on first open with
/// `model`), not listening to other processes: a command's store.
func openServerStore(url: String, model: DataModel?, schemaName: String) throws -> any SQLPersistentStore {
    #if PostgreSQL
    return try PostgresStore(url: url, model: model, schemaName: schemaName, observesOtherProcesses: false)
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
