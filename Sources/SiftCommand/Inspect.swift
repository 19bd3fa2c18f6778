// `sift inspect`: what a store file holds — its layout, where its model
// comes from, its entities with their row counts, and its metadata.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Inspect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show what a store holds: its layout, its model's source, its entities and row counts, its metadata.")

    @Option(help: ArgumentHelp("The store file (Sift's, or one Core Data wrote), or a server `sift serve` runs: "
                               + "http://HOST:PORT.", valueName: "path"))
    var store: String

    @Option(help: ArgumentHelp("The bearer token of a `sift serve` server.", valueName: "token"))
    var token: String?

    @Option(help: ArgumentHelp("The store's model (an .xcdatamodeld bundle: the version that made the store); "
                               + "by default the store's own.", valueName: "path"))
    var model: String?

    @Option(help: ArgumentHelp("How to print: table (the description), json or jsonl (one object: store, layout, model, "
                               + "entities, metadata) or csv (the entities: number, name, superentity, rows).",
                               valueName: "format"))
    var format: OutputFormat = .table

    func run() throws {
        let progress = ProgressLine("reading")
        let summary: (layout: String, modelSource: String, entities: [StoreInspection.EntitySummary], metadata: [String: String])
        if isServerAddress(store) {
            defer { progress.finish() }
            summary = try served()
        } else {
            let url = URL(fileURLWithPath: store)
            do {
                defer { progress.finish() }
                let inspection = try StoreInspection(url: url, model: model.map { URL(fileURLWithPath: $0) })
                summary = (inspection.layout.rawValue, inspection.modelSource, inspection.entities, inspection.metadata)
            } catch {
                throw CommandFailure(error).naming(url, as: store)
            }
        }
        let entities = summary.entities.map { entity -> [(String, PredicateValue)] in
            [("number", entity.number.map { .int(Int64($0)) } ?? .null), ("name", .string(entity.name)),
             ("superentity", entity.superentity.map(PredicateValue.string) ?? .null), ("rows", .int(Int64(entity.rows)))]
        }
        switch format {
        case .table:
            print("store:   \(store)")
            print("layout:  \(summary.layout)")
            print("model:   \(summary.modelSource)")
            print("\nentities:")
            let width = summary.entities.map(\.name.count).max() ?? 0
            for entity in summary.entities {
                let number = entity.number.map { String($0).padding(toLength: 4, withPad: " ", startingAt: 0) } ?? ""
                let parent = entity.superentity.map { "  (inherits from \($0))" } ?? ""
                print("  \(number)\(entity.name.padding(toLength: width, withPad: " ", startingAt: 0))  "
                      + "\(counted(entity.rows, "row"))\(parent)")
            }
            if !summary.metadata.isEmpty {
                print("\nmetadata:")
                for (key, value) in summary.metadata.sorted(by: { $0.key < $1.key }) { print("  \(key): \(value)") }
            }
        case .json, .jsonl:
            let object: [(String, PredicateValue)] = [
                ("store", .string(store)), ("layout", .string(summary.layout)), ("model", .string(summary.modelSource)),
                ("entities", .array(entities.map { .dictionary(Dictionary($0, uniquingKeysWith: { a, _ in a })) })),
                ("metadata", .dictionary(summary.metadata.mapValues(PredicateValue.string))),
            ]
            var text = ""
            JSONText.object(object, into: &text, indent: format == .json ? 0 : nil)
            print(text)
        case .csv:
            ResultRows(columns: ["number", "name", "superentity", "rows"], rows: entities.map { $0.map(\.1) }).print(.csv)
        }
    }

    /// What a served store holds: its entities with the objects of each
    /// (its own, not its subentities'), counted by the server.
    func served() throws -> (layout: String, modelSource: String, entities: [StoreInspection.EntitySummary], metadata: [String: String]) {
        #if HTTP
        let remote = try openRemoteStore(store, token: token)
        let context = ObjectContext(store: remote)
        var totals: [String: Int] = [:]
        do {
            for entity in remote.model.entities where !entity.isAbstract || !remote.model.descendants(of: entity).isEmpty {
                totals[entity.name] = try context.count(for: FetchRequest(entityName: entity.name))
            }
        } catch {
            throw CommandFailure(error)
        }
        let entities = remote.model.entities.map { entity in
            let children = remote.model.entities.filter { $0.superentity == entity.name }
            let own = (totals[entity.name] ?? 0) - children.reduce(0) { $0 + (totals[$1.name] ?? 0) }
            return StoreInspection.EntitySummary(name: entity.name, number: nil, superentity: entity.superentity, rows: max(own, 0))
        }
        return ("served by \(remote.backend.url.absoluteString)", "the server's", entities,
                ["identifier": remote.identifier, "versionHash": remote.model.versionHash,
                 "writable": remote.backend.isWritable ? "yes" : "no"])
        #else
        throw CommandFailure(.usage, "this sift was built without the HTTP trait: --store http://… is not available")
        #endif
    }
}
