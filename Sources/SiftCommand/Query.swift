// `sift query`: a fetch of objects, or a dictionary fetch, printed as a table or JSON.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Query: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Fetch objects from a store and print them.")

    enum Format: String, ExpressibleByArgument, CaseIterable {
        case table, json
    }

    @OptionGroup var options: FetchOptions

    @Option(name: .customLong("prefetch"), help: ArgumentHelp("A relationship key path to prefetch.", valueName: "path"))
    var prefetch: [String] = []

    @Option(help: "How to print the objects: a table, or JSON objects whose \"id\" is the primary key (a property named id becomes \"_id\").")
    var format: Format = .table

    @OptionGroup var results: ResultOptions

    func run() throws {
        let store = try options.open()
        defer { store.close() }
        var request = try storeFailure { try options.request(in: store.model) }
        if results.asksForResults {
            try runDictionaryFetch(request, store: store)
            return
        }
        request.relationshipKeyPathsForPrefetching = prefetch
        request.returnsObjectsAsFaults = false
        let context = ObjectContext(store: store)
        let progress = Progress("querying")
        let objects: [ManagedObject]
        do {
            objects = try context.fetch(request)
        } catch {
            progress.finish()
            printError("\(error)")
            throw ExitStatus.dataError
        }
        progress.finish()
        guard let entity = store.model.entity(named: request.entityName) else {
            printError("the model has no entity named '\(request.entityName)'")
            throw ExitStatus.dataError
        }
        let toOne = entity.relationships.filter { !$0.isToMany }
        switch format {
        case .json:
            let rows = objects.map { object -> [String: PredicateValue] in
                // "id" is the primary key; a property of that name is written under a key of its own.
                var row: [String: PredicateValue] = ["id": .int(object.objectID.primaryKey)]
                let own = object.entity
                for attribute in own.attributes {
                    row[Self.outputKey(attribute.name, own)] = Self.jsonValue(object[attribute.name] ?? .null)
                }
                for relationship in own.relationships where !relationship.isToMany {
                    row[Self.outputKey(relationship.name, own)] = (try? object.object(forKey: relationship.name)).flatMap { $0 }
                        .map { .int($0.objectID.primaryKey) } ?? .null
                }
                return row
            }
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
            print(String(decoding: try encoder.encode(rows), as: UTF8.self))
        case .table:
            let header = ["id"] + (entity.attributes.map(\.name) + toOne.map(\.name)).map { Self.outputKey($0, entity) }
            var rows = [header]
            for object in objects {
                var row = [String(object.objectID.primaryKey)]
                for attribute in entity.attributes { row.append(Self.cell(object[attribute.name] ?? .null)) }
                for relationship in toOne {
                    row.append((try? object.object(forKey: relationship.name)).flatMap { $0 }
                        .map { String($0.objectID.primaryKey) } ?? "nil")
                }
                rows.append(row)
            }
            printTable(rows)
        }
        printError("\(objects.count) objects in \(String(format: "%.1f", progress.elapsedMilliseconds)) ms")
    }

    /// Prints the results of a dictionary fetch: a table, or one JSON
    /// object per result, its keys in the order selected.
    func runDictionaryFetch(_ base: FetchRequest, store: any SQLPersistentStore) throws {
        let request = try results.request(from: base)
        let progress = Progress("querying")
        let rows: [FetchedDictionary]
        do {
            rows = try ObjectContext(store: store).fetchDictionaries(request)
        } catch {
            progress.finish()
            printError("\(error)")
            throw ExitStatus.dataError
        }
        progress.finish()
        let names = request.propertiesToFetch.map(\.name)
        switch format {
        case .json:
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            for row in rows {
                let members = row.map { name, value in
                    let key = String(decoding: (try? encoder.encode(name)) ?? Data("\"\"".utf8), as: UTF8.self)
                    let text = String(decoding: (try? encoder.encode(Self.jsonValue(value))) ?? Data("null".utf8), as: UTF8.self)
                    return key + ": " + text
                }
                print("{" + members.joined(separator: ", ") + "}")
            }
        case .table:
            printTable([names] + rows.map { row in names.map { Self.cell(row[$0] ?? .null) } })
        }
        printError("\(rows.count) results in \(String(format: "%.1f", progress.elapsedMilliseconds)) ms")
    }

    /// Rows of cells in columns, the first row a header.
    func printTable(_ rows: [[String]]) {
        guard let header = rows.first else { return }
        let widths = header.indices.map { column in min(40, rows.map { $0[column].count }.max() ?? 0) }
        for (i, row) in rows.enumerated() {
            print(zip(row, widths).map { cell, width in
                let text = cell.count > width ? String(cell.prefix(width - 1)) + "…" : cell
                return text.padding(toLength: width, withPad: " ", startingAt: 0)
            }.joined(separator: "  "))
            if i == 0 { print(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  ")) }
        }
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

    /// A value as JSON output writes it, in one form for every command:
    /// a date as ISO 8601 text in UTC (as tables print it), an object as
    /// its key; the rest as JSON has it (binary data in Base64, a UUID as text).
    static func jsonValue(_ value: PredicateValue) -> PredicateValue {
        switch value {
        case .date(let d): .string(ISO8601DateFormatter().string(from: d))
        case .object(let reference): .int(reference.id)
        case .array(let members): .array(members.map(jsonValue))
        case .dictionary(let members): .dictionary(members.mapValues(jsonValue))
        default: value
        }
    }

    static func cell(_ value: PredicateValue) -> String {
        switch value {
        case .string(let s): s
        case .date(let d): ISO8601DateFormatter().string(from: d)
        default: value.description
        }
    }
}
