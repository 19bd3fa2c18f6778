// What the store commands share (`sift import`, `sql`, `explain`, `query`,
// `count`, each in its own file): opening a SQLite store, and the fetch and
// result options. (Progress on a terminal is ProgressLine's.)

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// Opens a store: Sift's (its model is in it), or one Core Data wrote, with
/// `model` (a bundle: the version whose hashes are the store's) or else its
/// model cache. Read-only stores only read. A store that cannot be opened
/// is a ``CommandFailure`` naming the file as it was given.
func openStore(_ path: String, model: String? = nil, readOnly: Bool = false) throws -> SQLiteStore {
    let url = URL(fileURLWithPath: path)
    do {
        var dataModel: DataModel?
        if let model {
            dataModel = try StoreInspection(url: url, model: URL(fileURLWithPath: model)).model
        }
        return try SQLiteStore(url: url, model: dataModel, readOnly: readOnly)
    } catch {
        throw CommandFailure(error).naming(url, as: path)
    }
}

extension CommandFailure {
    /// The failure with the file at `url` named as the user gave it (`path`).
    func naming(_ url: URL, as path: String) -> CommandFailure {
        var failure = self
        if url.path != path { failure.text = failure.text.replacingOccurrences(of: "'\(url.path)'", with: "'\(path)'") }
        let folder = url.deletingLastPathComponent().path
        let given = path.lastIndex(of: "/").map { String(path[..<$0]) } ?? ""
        if folder != given, !given.isEmpty {
            failure.text = failure.text.replacingOccurrences(of: "'\(folder)'", with: "'\(given)'")
        }
        return failure
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

    @Option(name: .customLong("sort"), help: ArgumentHelp(
        "Sort by a key path: key, key:desc (or :descending), key:asc, and :ci for case-insensitive strings (name:desc:ci).",
        valueName: "key"))
    var sort: [String] = []

    @Option(parsing: .unconditional, help: "The most objects to return.")
    var limit: Int?

    @Option(parsing: .unconditional, help: "How many objects to skip.")
    var offset: Int?

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate (TRUEPREDICATE when omitted).")
    var predicateText: String?

    /// Opens the store (read-only).
    func open() throws -> any PersistentStore { try location.open(model: model) }

    func validate() throws {
        if entity == nil, template == nil { throw ValidationError("give the entity to fetch (--entity) or a template (--template)") }
        if template != nil, predicateText != nil { throw ValidationError("a template has its own predicate: give --var values, not a predicate") }
        if let limit, limit < 0 { throw ValidationError("--limit takes a count of 0 or more, not \(limit)") }
        if let offset, offset < 0 { throw ValidationError("--offset takes a count of 0 or more, not \(offset)") }
    }

    /// The texts a fetch compiles, by the option each came from, for diagnostics.
    var sources: [SourceText] {
        (predicateText.map { [SourceText("predicate", given: $0)] } ?? [])
            + sort.compactMap { text in FetchSortDescriptor(parsing: text).map { SourceText("--sort", given: text, compiled: $0.keyPath) } }
    }

    /// The predicate's text: the one given, or the template's with its variables replaced.
    func predicate(in model: DataModel) throws -> String {
        try request(in: model).predicate.flatMap { if case .format(let text, _) = $0 { text } else { nil } } ?? "TRUEPREDICATE"
    }

    /// The entity fetched.
    func entityName(in model: DataModel) throws -> String { try request(in: model).entityName }

    /// The request: the entity and predicate given, or the template's, with the sort, limit and offset.
    func request(in model: DataModel) throws -> FetchRequest {
        var request: FetchRequest
        if let template {
            guard model.fetchRequestTemplates[template] != nil else {
                let names = model.fetchRequestTemplates.keys.sorted()
                throw CommandFailure(.invalidData, "no fetch request template '\(template)' in the model"
                                     + (names.isEmpty ? " (it has none)" : suggestion(for: template, among: names)
                                        + " (it has \(names.map { "'\($0)'" }.joined(separator: ", ")))"))
            }
            request = try storeFailure {
                try model.fetchRequestFromTemplate(withName: template, substitutionVariables: try predicateArguments.variableValues)
            }
        } else {
            let entity = entity ?? ""
            try checkEntity(entity, in: model)
            request = FetchRequest(entityName: entity, predicate: predicateText ?? "TRUEPREDICATE",
                                   arguments: try predicateArguments.values)
        }
        if let entity, let template, entity != request.entityName {
            throw CommandFailure(.usage, "the template '\(template)' fetches '\(request.entityName)', not '\(entity)'")
        }
        request.sortDescriptors = try sort.map { text in
            guard let descriptor = FetchSortDescriptor(parsing: text) else {
                throw CommandFailure(.usage, "--sort takes a key path, then :asc or :desc (:ascending, :descending) and :ci "
                                     + "(name:desc:ci), not '\(text)'")
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
            + "optionally named with 'as NAME'. Results print one per row.",
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

    func validate() throws {
        if asksForResults, select.isEmpty {
            throw ValidationError("--group-by, --having and --distinct need properties to fetch: add --select")
        }
    }

    /// The texts a dictionary fetch compiles, by the option each came from, for diagnostics.
    var sources: [SourceText] {
        select.map { SourceText("--select", given: $0, compiled: ExpressionDescription(parsing: $0).expression) }
            + groupBy.map { SourceText("--group-by", given: $0, compiled: $0.trimmingCharacters(in: .whitespaces)) }
            + (having.map { [SourceText("--having", given: $0)] } ?? [])
    }

    /// `base` as a dictionary fetch.
    func request(from base: FetchRequest) throws -> FetchRequest {
        var request = base
        request.propertiesToFetch = select.map(ExpressionDescription.init(parsing:))
        request.propertiesToGroupBy = groupBy
        request.havingPredicate = having.map { .format($0, []) }
        request.returnsDistinctResults = distinct
        return request
    }
}
