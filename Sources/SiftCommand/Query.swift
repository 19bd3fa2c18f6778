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
        defer { close(store) }
        var request = try options.request(in: store.model)
        let sources = options.sources + results.sources
        if results.asksForResults {
            try runDictionaryFetch(request, store: store, sources: sources)
            return
        }
        request.relationshipKeyPathsForPrefetching = prefetch
        request.returnsObjectsAsFaults = false
        let context = ObjectContext(store: store)
        let progress = ProgressLine("querying")
        let objects = try diagnosing(sources) {
            defer { progress.finish() }
            return try context.fetch(request)
        }
        guard let entity = store.model.entity(named: request.entityName) else {
            throw CommandFailure(.invalidData, "no entity '\(request.entityName)' in the model")
        }
        switch format {
        case .json, .jsonl:
            // Each object with its own entity's properties (a subentity's too), the keys sorted once per entity.
            let pretty = format == .json
            var layouts: [String: [(prefix: String, value: (ManagedObject) -> PredicateValue)]] = [:]
            let out = OutputBuffer()
            if pretty { out.write(objects.isEmpty ? "[]\n" : "[\n") }
            for (index, object) in objects.enumerated() {
                let own = object.entity
                let layout = layouts[own.name] ?? Self.jsonLayout(own, pretty: pretty)
                layouts[own.name] = layout
                var text = pretty ? "  {" : "{"
                for (position, member) in layout.enumerated() {
                    if position > 0 { text += "," }
                    text += member.prefix
                    JSONText.write(member.value(object), into: &text, indent: pretty ? 2 : nil)
                }
                text += pretty ? "\n  }" : "}"
                if pretty { text += index == objects.count - 1 ? "\n]" : "," }
                out.line(text)
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

    /// How an object of `entity` prints as JSON: its members in key order,
    /// each the text before its value (the key, quoted) and how to read the value.
    static func jsonLayout(_ entity: Entity, pretty: Bool) -> [(prefix: String, value: (ManagedObject) -> PredicateValue)] {
        var members: [(key: String, value: (ManagedObject) -> PredicateValue)] = [("id", { .int($0.objectID.primaryKey) })]
        for attribute in entity.attributes {
            let name = attribute.name
            members.append((outputKey(name, entity), { $0[name] ?? .null }))
        }
        for relationship in entity.relationships where !relationship.isToMany {
            let name = relationship.name
            members.append((outputKey(name, entity), { key(of: $0, name) }))
        }
        return members.sorted { $0.key < $1.key }.map { member in
            var prefix = pretty ? "\n    " : ""
            JSONText.string(member.key, into: &prefix)
            prefix += pretty ? ": " : ":"
            return (prefix, member.value)
        }
    }

    /// The primary key of the object a to-one relationship holds, or nil.
    static func key(of object: ManagedObject, _ relationship: String) -> PredicateValue {
        (try? object.object(forKey: relationship)).flatMap { $0 }.map { .int($0.objectID.primaryKey) } ?? .null
    }

    /// Prints the results of a dictionary fetch: a table, a JSON array,
    /// JSON lines or CSV, the columns in the order selected.
    func runDictionaryFetch(_ base: FetchRequest, store: any PersistentStore, sources: [SourceText]) throws {
        let request = try results.request(from: base)
        let progress = ProgressLine("querying")
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
