// `sift migrate`: a store moved to another version of its model bundle by
// lightweight migration, or, with --dry-run, the inferred mapping only.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Migrate a SQLite store to another version of its model (lightweight migration), in place and safely.",
        discussion: """
            Finds the store's version in the bundle by its entity version hashes (or uses the model it keeps), \
            infers the mapping, prints it, then writes the migrated store into a new file and renames it over the store. \
            A mapping that cannot be inferred is an error listing every reason; the store is left as it was.
            """)

    @Option(help: ArgumentHelp("The store file.", valueName: "file"))
    var store: String

    @Option(help: ArgumentHelp("The model bundle (.xcdatamodeld or .momd).", valueName: "bundle"))
    var model: String

    @Option(name: .customLong("to"), help: ArgumentHelp("The version to migrate to (the bundle's current one by default).",
                                                        valueName: "version"))
    var version: String?

    @Flag(help: "Print the inferred mapping and write nothing.")
    var dryRun = false

    @OptionGroup var output: QuietOption

    func run() throws {
        let url = URL(fileURLWithPath: store)
        if let problem = StoreError.FileProblem(storeAt: url, attributes: try? FileManager.default.attributesOfItem(atPath: url.path),
                                                creating: false) {
            throw CommandFailure(StoreError.notAStoreFile(path: store, problem: problem))
        }
        let bundle: ModelBundle
        do {
            bundle = try ModelBundle(contentsOf: URL(fileURLWithPath: model))
        } catch {
            throw CommandFailure(.noInput, "\(error)")
        }
        do {
            try migrate(bundle)
        } catch {
            // The store named as it was given.
            throw CommandFailure(error).naming(url, as: store)
        }
    }

    private func migrate(_ bundle: ModelBundle) throws(StoreError) {
        let migration = try StoreMigration(storeAt: URL(fileURLWithPath: store), bundle: bundle, version: version)
        // A dry run's result is the mapping; a migration's, what it migrated (--quiet prints only that).
        func say(_ line: String) { if dryRun || !output.quiet { print(line) } }
        say("store version: \(migration.sourceVersion)")
        say("model version: \(migration.destinationVersion)")
        guard migration.isNeeded else {
            print("the store is in this version already: nothing to do")
            return
        }
        for line in migration.mapping.summary { say(line) }
        guard !dryRun else {
            print("dry run: nothing written")
            return
        }
        let progress = output.progress("migrating", main: .writingObjects)
        defer { progress.finish() }
        let report = try migration.run(progress: progress.report)
        progress.finish()
        let count = report.objects.values.reduce(0, +)
        print("migrated \(counted(count, "object"))"
              + (report.droppedObjects > 0 ? ", dropped \(counted(report.droppedObjects, "object")) of removed entities" : "")
              + " in \(String(format: "%.3f", report.seconds)) s")
    }
}
