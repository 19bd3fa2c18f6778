// What the store commands share (`sift import`, `sql`, `explain`, `query`,
// `count`, each in its own file): progress on a terminal, store failures as
// exit statuses, opening a SQLite store, and the fetch and result options.

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// Shows progress on standard error, only when it is a terminal.
final class Progress: Sendable {
    private let label: String
    private let start = Date()
    private let done = LockedState(false)
    private let isTerminal = isatty(2) == 1

    /// Starts showing the elapsed time of `label` after a second.
    init(_ label: String) {
        self.label = label
        guard isTerminal else { return }
        Thread.detachNewThread { [self] in
            Thread.sleep(forTimeInterval: 1)
            while true {
                if done.withLock({ $0 }) { return }
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
        done.withLock { $0 = true }
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
    func open() throws -> any SQLPersistentStore { try location.open(model: model) }

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
