// `sift copy`: a store copied into a new store of another type — a SQLite
// file, an atomic store's JSON data set file, or a PostgreSQL schema — keys,
// values and relationships kept (Core Data's migratePersistentStore).

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Copy: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Copy a store into a new store of another type, keys and relationships kept, written at once.",
        discussion: "The new store is a SQLite file (--to PATH), an atomic store in Sift's JSON data set format "
            + "(--to PATH.json), or a PostgreSQL schema (--to-postgres URL --to-schema NAME); it must be new or empty.")

    @OptionGroup var location: StoreLocation

    @Option(help: ArgumentHelp("The model of a store Core Data wrote (an .xcdatamodeld bundle); by default the store's own. "
                               + "A source ending in .json is an atomic store's data set file.",
                               valueName: "path"))
    var model: String?

    @Option(name: .customLong("to"), help: ArgumentHelp("The new store's file: .json for an atomic store, any other name for SQLite.",
                                                         valueName: "path"))
    var destination: String?

    @Option(name: .customLong("to-postgres"), help: ArgumentHelp("A PostgreSQL server for the new store instead.", valueName: "url"))
    var destinationServer: String?

    @Option(name: .customLong("to-schema"), help: ArgumentHelp("The new store's schema on that server.", valueName: "name"))
    var destinationSchema: String = "public"

    @OptionGroup var output: QuietOption

    func validate() throws {
        if (destination == nil) == (destinationServer == nil) {
            throw ValidationError("give the new store's file (--to) or a server (--to-postgres)")
        }
    }

    func run() throws {
        // The source: an atomic store's data set file, or a store `location` opens (SQLite, PostgreSQL).
        let source = try location.open(model: model)
        defer { (source as? any SQLPersistentStore)?.close() }
        let progress = output.progress("copying", main: .writingObjects)
        defer { progress.finish() }
        let target: any ImportingStore
        let description: String
        if let destination {
            let url = URL(fileURLWithPath: destination)
            do {
                target = url.pathExtension.lowercased() == "json"
                    ? try AtomicStore(url: url, model: source.model)
                    : try SQLiteStore(url: url, model: source.model)
            } catch {
                throw CommandFailure(error).naming(url, as: destination)
            }
            description = destination
        } else {
            target = try openServerStore(url: destinationServer ?? "", model: source.model, schemaName: destinationSchema)
            description = "\(destinationServer ?? "") (schema \(destinationSchema))"
        }
        defer { (target as? any SQLPersistentStore)?.close() }
        let count: Int
        do {
            count = try source.copy(to: target, progress: progress.report)
        } catch {
            // The library knows the destination only as a store: name its file or schema.
            if case .keysInUse(_, let entity) = error { throw CommandFailure(StoreError.keysInUse(path: description, entity: entity)) }
            throw error
        }
        progress.finish()
        print("copied \(counted(count, "object")) from \(location.description) into \(description)")
    }
}
