// `sift inspect`: what a store file holds — its layout, where its model
// comes from, its entities with their row counts, and its metadata.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a store holds: its layout, its model's source, its entities and row counts, its metadata.")

    @Option(help: ArgumentHelp("The store file (Sift's, or one Core Data wrote).", valueName: "path"))
    var store: String

    @Option(help: ArgumentHelp("The store's model (an .xcdatamodeld bundle: the version that made the store); "
                               + "by default the store's own.", valueName: "path"))
    var model: String?

    func run() throws {
        guard FileManager.default.fileExists(atPath: store) else {
            printError("error: no store at '\(store)'")
            throw ExitStatus.noInput
        }
        let summary: StoreInspection
        do {
            summary = try StoreInspection(url: URL(fileURLWithPath: store), model: model.map { URL(fileURLWithPath: $0) })
        } catch {
            printError("error: \(error)")
            throw ExitStatus.dataError
        }
        print("store:   \(store)")
        print("layout:  \(summary.layout.rawValue)")
        print("model:   \(summary.modelSource)")
        print("\nentities:")
        let width = summary.entities.map(\.name.count).max() ?? 0
        for entity in summary.entities {
            let number = entity.number.map { String($0).padding(toLength: 4, withPad: " ", startingAt: 0) } ?? ""
            let parent = entity.superentity.map { "  (inherits from \($0))" } ?? ""
            print("  \(number)\(entity.name.padding(toLength: width, withPad: " ", startingAt: 0))  \(entity.rows) rows\(parent)")
        }
        if !summary.metadata.isEmpty {
            print("\nmetadata:")
            for key in summary.metadata.keys.sorted() { print("  \(key): \(summary.metadata[key]!)") }
        }
    }
}
