// `sift import`, `sift sql`, `sift explain`, `sift query`, `sift count`: a
// store from the command line, in a SQLite file or on a PostgreSQL server.

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// Shows progress on standard error, only when it is a terminal.
final class Progress: @unchecked Sendable {
    private let label: String
    private let start = Date()
    private let lock = NSLock()
    private var done = false
    private let isTerminal = isatty(2) == 1

    /// Starts showing the elapsed time of `label` after a second.
    init(_ label: String) {
        self.label = label
        guard isTerminal else { return }
        Thread.detachNewThread { [self] in
            Thread.sleep(forTimeInterval: 1)
            while true {
                lock.lock()
                let finished = done
                lock.unlock()
                if finished { return }
                FileHandle.standardError.write(Data("\r\(label)… \(String(format: "%.0f", Date().timeIntervalSince(start)))s ".utf8))
                Thread.sleep(forTimeInterval: 1)
            }
        }
    }

    /// Reports `count` of `total` done.
    func report(_ count: Int, of total: Int) {
        guard isTerminal else { return }
        FileHandle.standardError.write(Data("\r\(label)… \(count)/\(total) ".utf8))
    }

    /// Stops, clearing the line.
    func finish() {
        lock.lock()
        done = true
        lock.unlock()
        if isTerminal { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }

    var elapsedMilliseconds: Double { Date().timeIntervalSince(start) * 1000 }
}

/// Opens a store file, or exits with status 66 and the reason.
/// Runs `body`; a store error (an unknown template, a missing variable) is
/// printed and exits with the data error status.
func storeFailure<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as StoreError {
        printError("error: \(error)")
        throw ExitStatus.dataError
    }
}

/// Opens a store: Sift's (its model is in it), or one Core Data wrote, with
/// `model` (a bundle: the version whose hashes are the store's) or else its
/// model cache. Read-only stores only read.
func openStore(_ path: String, model: String? = nil, readOnly: Bool = false) throws -> SQLiteStore {
    guard FileManager.default.fileExists(atPath: path) else {
        printError("error: no store at '\(path)'")
        throw ExitStatus.noInput
    }
    let url = URL(fileURLWithPath: path)
    do {
        var dataModel: DataModel?
        if let model {
            dataModel = try StoreInspection(url: url, model: URL(fileURLWithPath: model)).model
        }
        return try SQLiteStore(url: url, model: dataModel, readOnly: readOnly)
    } catch {
        printError("error: \(error)")
        throw ExitStatus.noInput
    }
}

struct Import: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Load a JSON data set into a new store (a SQLite file, or a PostgreSQL schema), in one transaction.")

    @Option(help: ArgumentHelp("The JSON data set.", valueName: "dataset"))
    var data: String

    @OptionGroup var location: StoreLocation

    func run() throws {
        let dataSet = try loadDataSet(data)
        let progress = Progress("importing")
        defer { progress.finish() }
        do {
            let target: any CommandStore
            if let store = location.store {
                target = try SQLiteStore(url: URL(fileURLWithPath: store), model: dataSet.model)
            } else {
                target = try location.open(creatingWith: dataSet.model)
            }
            defer { target.closeConnections() }
            guard target.model.versionHash == dataSet.model.versionHash else {
                throw StoreError.modelMismatch(path: location.description, storeHash: target.model.versionHash,
                                               modelHash: dataSet.model.versionHash)
            }
            try target.importNodes(dataSet.nodes) { progress.report($0, of: $1) }
        } catch let status as ExitCode {
            throw status
        } catch {
            printError("error: \(error)")
            throw ExitStatus.dataError
        }
        print("imported \(dataSet.nodes.count) objects into \(location.description)")
    }
}

struct SQL: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sql", abstract: "Print the SQL a predicate lowers to, and its bindings.")

    @Option(help: ArgumentHelp("The model (or a store).", valueName: "model"))
    var model: String

    @Option(help: ArgumentHelp("The entity.", valueName: "entity"))
    var entity: String

    enum Dialect: String, ExpressibleByArgument, CaseIterable {
        case sqlite, postgresql
    }

    @Option(help: "The SQL dialect.")
    var dialect: Dialect = .sqlite

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate.")
    var predicate: String

    func run() throws {
        let dataModel: DataModel
        if model.hasSuffix(".sqlite") || model.hasSuffix(".db") {
            dataModel = try openStore(model).model
        } else {
            dataModel = try loadModel(model)
        }
        do {
            let bound = try PredicateCompiler(model: dataModel).bind(
                predicate, arguments: predicateArguments.values, entity: entity, variables: predicateArguments.variableValues)
            let schema = dialect == .sqlite ? SQLSchema(model: dataModel) : SQLSchema(model: dataModel, dialect: .postgreSQL)
            let query = try SQLLowering(schema: schema).select(entity, where: bound)
            // Each binding named by the dialect's placeholder.
            print(query.sql + (query.bindings.isEmpty ? "" : "\n-- bindings: " + query.bindings.enumerated()
                .map { "\(schema.dialect.placeholder($0 + 1)) = \($1)" }.joined(separator: ", ")))
        } catch let error as PredicateCompileError {
            printError(error.rendered(in: predicate))
            throw ExitStatus.dataError
        } catch {
            printError("error: \(error)")
            throw ExitStatus.dataError
        }
    }
}

/// Options shared by `explain`, `query` and `count`.
struct FetchOptions: ParsableArguments {
    @OptionGroup var location: StoreLocation

    @Option(help: ArgumentHelp("The model of a store Core Data wrote (an .xcdatamodeld bundle: the version that made "
                               + "it); by default the store's own.", valueName: "path"))
    var model: String?

    @Option(help: ArgumentHelp("The entity to fetch (the template's with --template).", valueName: "entity"))
    var entity: String?

    @Option(help: ArgumentHelp("A fetch request template of the model, by name; --var gives its $variables.",
                               valueName: "name"))
    var template: String?

    @Option(name: .customLong("sort"), help: ArgumentHelp("Sort by a key path: key, key:desc, key:ci.", valueName: "key"))
    var sort: [String] = []

    @Option(help: "The most objects to return.")
    var limit: Int?

    @Option(help: "How many objects to skip.")
    var offset: Int?

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate (TRUEPREDICATE when omitted).")
    var predicateText: String?

    /// Opens the store, or exits with status 66 and the reason.
    func open() throws -> any CommandStore { try location.open(model: model) }

    func validate() throws {
        if entity == nil, template == nil { throw ValidationError("give the entity to fetch (--entity) or a template (--template)") }
        if template != nil, predicateText != nil { throw ValidationError("a template has its own predicate: give --var values, not a predicate") }
    }

    /// The predicate's text: the one given, or the template's with its variables replaced.
    func predicate(in model: DataModel) throws -> String {
        try request(in: model).predicate.flatMap { if case .format(let text, _) = $0 { text } else { nil } } ?? "TRUEPREDICATE"
    }

    /// The entity fetched.
    func entityName(in model: DataModel) throws -> String { try request(in: model).entityName }

    func request(in model: DataModel) throws -> FetchRequest {
        var request: FetchRequest
        if let template {
            request = try model.fetchRequestFromTemplate(withName: template, substitutionVariables: predicateArguments.variableValues)
        } else {
            request = FetchRequest(entityName: entity ?? "", predicate: predicateText ?? "TRUEPREDICATE",
                                   arguments: predicateArguments.values)
        }
        if let entity, template != nil, entity != request.entityName {
            throw ValidationError("the template '\(template!)' fetches '\(request.entityName)', not '\(entity)'")
        }
        request.sortDescriptors = try sort.map { text in
            guard let descriptor = SortDescriptor(parsing: text) else {
                throw ValidationError("--sort takes a key path with :asc or :desc and :ci (name:desc:ci), not '\(text)'")
            }
            return descriptor
        }
        if let limit { request.fetchLimit = limit }
        request.fetchOffset = offset ?? 0
        return request
    }
}

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show how a fetch runs: the parsed tree, the bound tree, the SQL, its bindings and the database's plan.")

    @OptionGroup var options: FetchOptions

    @OptionGroup var results: ResultOptions

    func run() throws {
        let store = try options.open()
        defer { store.closeConnections() }
        if results.asksForResults {
            try explainResults(store)
            return
        }
        let text = try storeFailure { try options.predicate(in: store.model) }
        do {
            // Parsed and bound once; the plan optimizes and lowers the bound tree.
            let syntax = try PredicateParser.parse(text, arguments: options.template == nil ? options.predicateArguments.values : [])
            print("parsed:\n  \(syntax)")
            var request = try storeFailure { try options.request(in: store.model) }
            let compiler = PredicateCompiler(model: store.model, optimizer: nil, functions: store.functions)
            do {
                request.predicate = .bound(try compiler.bind(syntax, entity: request.entityName))
            } catch {
                printError(error.rendered(in: text))
                throw ExitStatus.dataError
            }
            let plan = try store.plan(request)
            guard let bound = plan.predicate else { return }
            print("bound:\n" + bound.outline.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            print("plan:\n" + plan.description.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            let query = plan.query(for: request, columns: .rows)
            print("sql:\n  \(query.sql)")
            print("bindings:\n" + (query.bindings.isEmpty ? "  (none)"
                : query.bindings.enumerated().map { "  \(store.placeholder($0 + 1)) = \($1)" }.joined(separator: "\n")))
            print("\(store.databaseName.lowercased()) plan:\n" + (try store.queryPlan(query)).map { "  " + $0 }.joined(separator: "\n"))
        } catch let error as PredicateSyntaxError {
            printError(error.rendered())
            throw ExitStatus.dataError
        } catch let status as ExitCode {
            throw status
        } catch {
            printError("\(error)")
            throw ExitStatus.dataError
        }
    }
}

extension Explain {
    /// Shows the one statement a dictionary fetch runs, or that it runs in memory, and why.
    func explainResults(_ store: any CommandStore) throws {
        do {
            let request = try results.request(from: try storeFailure { try options.request(in: store.model) })
            // The objects read: result names are not key paths of the entity.
            var objects = request
            objects.sortDescriptors = []
            objects.fetchLimit = nil
            objects.fetchOffset = 0
            let plan = try store.plan(objects)
            print("plan:\n" + plan.description.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
            guard let query = try store.resultQuery(for: request) else {
                print("results: grouped in memory, over the rows SQL selects")
                let rows = plan.query(for: objects, columns: .rows)
                print("sql:\n  \(rows.sql)")
                return
            }
            print("sql:\n  \(query.sql)")
            print("bindings:\n" + (query.bindings.isEmpty ? "  (none)"
                : query.bindings.enumerated().map { "  \(store.placeholder($0 + 1)) = \($1)" }.joined(separator: "\n")))
            print("\(store.databaseName.lowercased()) plan:\n" + (try store.queryPlan(query)).map { "  " + $0 }.joined(separator: "\n"))
        } catch let status as ExitCode {
            throw status
        } catch {
            printError("\(error)")
            throw ExitStatus.dataError
        }
    }
}

/// What a dictionary fetch returns: properties to fetch, grouping, a
/// having predicate, distinctness (`query` and `explain`).
struct ResultOptions: ParsableArguments {
    @Option(name: .customLong("select"), help: ArgumentHelp(
        "A property to fetch instead of objects: a key path, an expression or an aggregate (sum(salary), @count), "
            + "optionally named with 'as NAME'. Results print one per row (as JSON, one object per line).",
        valueName: "expression"))
    var select: [String] = []

    @Option(name: .customLong("group-by"), help: ArgumentHelp("A key path (or selected name) to group results by.", valueName: "keypath"))
    var groupBy: [String] = []

    @Option(help: ArgumentHelp("A predicate over the results, by name, applied after grouping.", valueName: "predicate"))
    var having: String?

    @Flag(help: "Return equal results once.")
    var distinct = false

    /// Whether any of these options was given.
    var asksForResults: Bool { !select.isEmpty || !groupBy.isEmpty || having != nil || distinct }

    /// `base` as a dictionary fetch.
    func request(from base: FetchRequest) throws -> FetchRequest {
        guard !select.isEmpty else {
            printError("--group-by, --having and --distinct need properties to fetch: add --select")
            throw ExitStatus.usage
        }
        var request = base
        request.propertiesToFetch = select.map(ExpressionDescription.init(parsing:))
        request.propertiesToGroupBy = groupBy
        request.havingPredicate = having.map { .format($0, []) }
        request.returnsDistinctResults = distinct
        return request
    }
}

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
        defer { store.closeConnections() }
        var request = try storeFailure { try options.request(in: store.model) }
        if results.asksForResults {
            try runDictionaryFetch(request, store: store)
            return
        }
        request.relationshipKeyPathsForPrefetching = prefetch
        request.returnsObjectsAsFaults = false
        let context = store.makeContext()
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
                for attribute in own.attributes { row[Self.outputKey(attribute.name, own)] = object[attribute.name] ?? .null }
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
    func runDictionaryFetch(_ base: FetchRequest, store: any CommandStore) throws {
        let request = try results.request(from: base)
        let progress = Progress("querying")
        let rows: [FetchedDictionary]
        do {
            rows = try store.makeContext().fetchDictionaries(request)
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
                    let text = String(decoding: (try? encoder.encode(value)) ?? Data("null".utf8), as: UTF8.self)
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

    static func cell(_ value: PredicateValue) -> String {
        switch value {
        case .string(let s): s
        case .date(let d): ISO8601DateFormatter().string(from: d)
        default: value.description
        }
    }
}

struct Count: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Count the objects a fetch matches.")

    @OptionGroup var options: FetchOptions

    func run() throws {
        let store = try options.open()
        defer { store.closeConnections() }
        let request = try storeFailure { try options.request(in: store.model) }
        do {
            print(try store.makeContext().count(for: request))
        } catch {
            printError("\(error)")
            throw ExitStatus.dataError
        }
    }
}
