// `sift query`: a fetch of objects, or a dictionary fetch, printed as a
// table, JSON, JSON lines or CSV.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch objects from a store and print them.")

    @OptionGroup var options: FetchOptions

    @Option(name: .customLong("prefetch"), help: ArgumentHelp("A relationship key path to prefetch.", valueName: "path"))
    var prefetch: [String] = []

    @Option(help: ArgumentHelp(
        "How to print: table, json (an array of objects), jsonl (one object a line) or csv. An object's \"id\" is its "
            + "primary key (a property named id becomes \"_id\"); a to-one relationship prints the key of its object.",
        valueName: "format"))
    var format: OutputFormat = .table

    @OptionGroup var results: ResultOptions

    func run() throws {
        let store = try options.open()
        defer { store.close() }
        var request = try options.request(in: store.model)
        let sources = options.sources + results.sources
        if results.asksForResults {
            try runDictionaryFetch(request, store: store, sources: sources)
            return
        }
        request.relationshipKeyPathsForPrefetching = prefetch
        request.returnsObjectsAsFaults = false
        let context = ObjectContext(store: store)
        let progress = Progress("querying")
        let objects = try diagnosing(sources) {
            defer { progress.finish() }
            return try context.fetch(request)
        }
        guard let entity = store.model.entity(named: request.entityName) else {
            throw CommandFailure(.invalidData, "no entity '\(request.entityName)' in the model")
        }
        switch format {
        case .json, .jsonl:
            // Each object with its own entity's properties (a subentity's too).
            let rows = objects.map { object -> [(String, PredicateValue)] in
                let own = object.entity
                return [("id", .int(object.objectID.primaryKey))]
                    + own.attributes.map { (Self.outputKey($0.name, own), object[$0.name] ?? .null) }
                    + own.relationships.filter { !$0.isToMany }.map { relationship in
                        (Self.outputKey(relationship.name, own), Self.key(of: object, relationship.name))
                    }
            }
            let out = OutputBuffer()
            if format == .jsonl {
                for row in rows {
                    var text = ""
                    JSONText.object(row, into: &text, indent: nil)
                    out.line(text)
                }
            } else {
                out.write(rows.isEmpty ? "[]\n" : "[\n")
                for (index, row) in rows.enumerated() {
                    var text = ""
                    JSONText.object(row, into: &text, indent: 1)
                    out.write("  " + text + (index == rows.count - 1 ? "\n]\n" : ",\n"))
                }
            }
        case .table, .csv:
            let toOne = entity.relationships.filter { !$0.isToMany }
            let columns = ["id"] + (entity.attributes.map(\.name) + toOne.map(\.name)).map { Self.outputKey($0, entity) }
            let rows = objects.map { object in
                [.int(object.objectID.primaryKey)] + entity.attributes.map { object[$0.name] ?? .null }
                    + toOne.map { Self.key(of: object, $0.name) }
            }
            ResultRows(columns: columns, rows: rows).print(format)
        }
        printError("\(counted(objects.count, "object")) \(progress.elapsed)")
    }

    /// The primary key of the object a to-one relationship holds, or nil.
    static func key(of object: ManagedObject, _ relationship: String) -> PredicateValue {
        (try? object.object(forKey: relationship)).flatMap { $0 }.map { .int($0.objectID.primaryKey) } ?? .null
    }

    /// Prints the results of a dictionary fetch: a table, a JSON array,
    /// JSON lines or CSV, the columns in the order selected.
    func runDictionaryFetch(_ base: FetchRequest, store: any SQLPersistentStore, sources: [SourceText]) throws {
        let request = try results.request(from: base)
        let progress = Progress("querying")
        let rows = try diagnosing(sources) {
            defer { progress.finish() }
            return try ObjectContext(store: store).fetchDictionaries(request)
        }
        let names = request.propertiesToFetch.map(\.name)
        ResultRows(columns: names, rows: rows.map { row in names.map { row[$0] ?? .null } }).print(format)
        printError("\(counted(rows.count, "result")) \(progress.elapsed)")
    }

    /// The key a property is written under next to the primary key "id":
    /// its name, or, for a property named "id", the name with underscores
    /// before it until no property of the entity has it.
    static func outputKey(_ name: String, _ entity: Entity) -> String {
        guard name == "id" else { return name }
        var key = "_id"
        while entity.property(named: key) != nil { key = "_" + key }
        return key
    }
}
