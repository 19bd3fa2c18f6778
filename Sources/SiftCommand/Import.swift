// `sift import`: a JSON data set into a new store, in a SQLite file or on a PostgreSQL server.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a JSON data set into a new store (a SQLite file, or a PostgreSQL schema), in one transaction.")

    @Option(help: ArgumentHelp("The JSON data set.", valueName: "dataset"))
    var data: String

    @OptionGroup var location: StoreLocation

    @OptionGroup var output: QuietOption

    func run() throws {
        // On a terminal: the time reading the data set takes, then the objects written.
        let progress = output.progress("importing", main: .writingObjects)
        defer { progress.finish() }
        let dataSet = try loadDataSet(data)
        let target: any SQLPersistentStore
        if let store = location.store {
            let url = URL(fileURLWithPath: store)
            do {
                target = try SQLiteStore(url: url, model: dataSet.model)
            } catch {
                throw CommandFailure(error).naming(url, as: store)
            }
        } else {
            target = try location.openSQL(creatingWith: dataSet.model)
        }
        defer { target.close() }
        do {
            guard target.model.versionHash == dataSet.model.versionHash else {
                throw StoreError.modelMismatch(path: location.description, storeHash: target.model.versionHash,
                                               modelHash: dataSet.model.versionHash)
            }
            try target.importNodes(dataSet.nodes, progress: progress.report)
        } catch {
            throw location.store.map { CommandFailure(error).naming(URL(fileURLWithPath: $0), as: $0) } ?? CommandFailure(error)
        }
        progress.finish()
        print("imported \(counted(dataSet.nodes.count, "object")) into \(location.description)")
    }
}
