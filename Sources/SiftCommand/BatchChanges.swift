// `sift update` and `sift delete`: batch changes in a store — every object
// a predicate selects changed or deleted in one transaction, without
// loading them. The count goes to standard output; how it ran, to standard
// error. `--dry-run` selects and checks, and writes nothing; `delete`
// without a predicate needs `--all`.

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// Where and what a batch change works on.
struct BatchChangeOptions: ParsableArguments {
    @OptionGroup var location: StoreLocation

    @Option(help: ArgumentHelp("The model of a store Core Data wrote (an .xcdatamodeld bundle); by default the store's own.",
                               valueName: "path"))
    var model: String?

    @Option(help: ArgumentHelp("The entity whose objects change (its subentities' objects too).", valueName: "entity"))
    var entity: String

    @Flag(help: "Print how many objects would change, and which, and write nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("How to print the count: table (the number alone), json ({\"count\": N}, with the \"ids\" "
                               + "of a dry run), jsonl or csv.", valueName: "format"))
    var format: OutputFormat = .table

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate selecting the objects.")
    var predicateText: String?

    var predicate: FetchPredicate? {
        get throws { try predicateText.map { .format($0, try predicateArguments.values) } }
    }

    /// Opens the store for writing and checks the entity; runs `body` on a
    /// context (or, for a dry run, `dryRun` to select), and reports.
    func run(_ verb: String, sources: [SourceText], _ body: (ObjectContext) throws(StoreError) -> BatchResult,
             dryRun select: (any PersistentStore, ObjectContext) throws -> [ObjectID]) throws {
        let store = try location.open(model: model, readOnly: dryRun)
        defer { close(store) }
        try checkEntity(entity, in: store.model)
        let sources = (predicateText.map { [SourceText("predicate", given: $0)] } ?? []) + sources
        let progress = ProgressLine(dryRun ? "selecting" : verb)
        let context = ObjectContext(store: store)
        if dryRun {
            let ids = try diagnosing(sources) {
                defer { progress.finish() }
                return try select(store, context)
            }
            printCount(ids.count, format, extra: [("dryRun", .bool(true)), ("ids", .array(ids.map { .int($0.primaryKey) }))])
            let keys = ids.prefix(50).map { String($0.primaryKey) }.joined(separator: ", ")
            printError("dry run: would have \(verb) \(counted(ids.count, "\(entity) object"))"
                       + (ids.isEmpty ? "" : " (keys \(keys)\(ids.count > 50 ? ", and \(ids.count - 50) more" : ""))")
                       + ", selected \(progress.elapsed); nothing was written")
            return
        }
        let result = try diagnosing(sources) {
            defer { progress.finish() }
            return try body(context)
        }
        printCount(result.count, format)
        var detail = "\(verb) \(counted(result.count, "\(entity) object"))"
        let cascaded = result.changes.deleted.count - (verb == "deleted" ? result.count : 0)
        if cascaded > 0 { detail += ", and \(cascaded) more by cascade rules" }
        let touched = result.changes.updated.count - (verb == "updated" ? result.count : 0)
        if touched > 0 { detail += "; \(counted(touched, "related object")) changed by the delete rules" }
        printError(detail + " \(progress.elapsed) (\(result.ranInSQL ? "SQL" : "memory"))")
    }
}

struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set attributes of every object a predicate selects, in the store, without loading them (a batch update); "
            + "print how many changed.",
        discussion: "Without a predicate, every object of the entity is updated. --dry-run prints how many would change, "
            + "and which, after checking the assignments, and writes nothing.")

    @OptionGroup var options: BatchChangeOptions

    @Option(name: .customLong("set"), help: ArgumentHelp(
        "An attribute and the expression of the object's current values it is set to: NAME=EXPRESSION (salary=salary * 1.1).",
        valueName: "name=expression"))
    var assignments: [String] = []

    func validate() throws {
        if assignments.isEmpty { throw ValidationError("give at least one --set NAME=EXPRESSION") }
        for item in assignments where !item.contains("=") || item.hasPrefix("=") {
            throw ValidationError("--set takes NAME=EXPRESSION, not '\(item)'")
        }
    }

    func run() throws {
        var request = BatchUpdateRequest(entityName: options.entity, predicate: try options.predicate)
        var sources: [SourceText] = []
        request.propertiesToUpdate = assignments.map { item in
            let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingCharacters(in: .whitespaces)
            let expression = parts.count > 1 ? String(parts[1]) : ""
            sources.append(SourceText(assignment: item, name: name, expression: expression))
            return ExpressionDescription(name: name, expression: expression)
        }
        try options.run("updated", sources: sources, { context throws(StoreError) in try context.execute(request) },
                        dryRun: { store, context in
            // The assignments checked as the update checks them, then the objects selected.
            _ = try store.bindBatchUpdate(request)
            return try context.fetchObjectIDs(selection(request.entityName, request.predicate))
        })
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete every object a predicate selects, in the store, applying the relationships' delete rules, "
            + "without loading them (a batch delete); print how many were selected.",
        discussion: "Without a predicate, delete refuses to run unless --all says to delete every object of the entity. "
            + "--dry-run prints how many objects the predicate selects, and which, and deletes nothing (the objects "
            + "cascade rules would delete too are not counted).")

    @OptionGroup var options: BatchChangeOptions

    @Flag(help: "Delete every object of the entity (needed when no predicate is given).")
    var all = false

    func run() throws {
        if options.predicateText == nil, !all {
            throw CommandFailure(.usage, "delete needs a predicate selecting the objects, or --all to delete every \(options.entity) object")
        }
        if options.predicateText != nil, all { throw CommandFailure(.usage, "give a predicate or --all, not both") }
        let request = BatchDeleteRequest(entityName: options.entity, predicate: try options.predicate)
        try options.run("deleted", sources: [], { context throws(StoreError) in try context.execute(request) },
                        dryRun: { _, context in
            try context.fetchObjectIDs(selection(request.entityName, request.predicate))
        })
    }
}

/// The fetch of the objects a batch change selects.
func selection(_ entity: String, _ predicate: FetchPredicate?) -> FetchRequest {
    var request = FetchRequest(entityName: entity)
    request.predicate = predicate
    return request
}
