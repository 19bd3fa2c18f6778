// `sift update` and `sift delete`: batch changes in a store — every object
// a predicate selects changed or deleted in one transaction, without
// loading them. The count goes to standard output; how it ran, to standard
// error.

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

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate selecting the objects (every object of the entity when omitted).")
    var predicateText: String?

    var predicate: FetchPredicate? { predicateText.map { .format($0, predicateArguments.values) } }

    /// Opens the store for writing, runs `body` on a context, and reports.
    func run(_ verb: String, _ body: (ObjectContext) throws(StoreError) -> BatchResult) throws {
        let store = try location.open(model: model, readOnly: false)
        defer { store.close() }
        let progress = Progress(verb)
        let result: BatchResult
        do {
            result = try body(ObjectContext(store: store))
        } catch {
            progress.finish()
            printError("\(error)")
            throw ExitStatus.dataError
        }
        progress.finish()
        print(result.count)
        var detail = "\(verb) \(result.count) \(entity) objects"
        let cascaded = result.changes.deleted.count - (verb == "deleted" ? result.count : 0)
        if cascaded > 0 { detail += ", and \(cascaded) more by cascade rules" }
        let touched = result.changes.updated.count - (verb == "updated" ? result.count : 0)
        if touched > 0 { detail += "; \(touched) related objects changed by the delete rules" }
        printError(detail + " in \(String(format: "%.1f", progress.elapsedMilliseconds)) ms (\(result.ranInSQL ? "SQL" : "memory"))")
    }
}

struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Set attributes of every object a predicate selects, in the store, without loading them (a batch update); "
            + "print how many changed.")

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
        var request = BatchUpdateRequest(entityName: options.entity, predicate: options.predicate)
        request.propertiesToUpdate = assignments.map { item in
            let parts = item.split(separator: "=", maxSplits: 1)
            return ExpressionDescription(name: parts[0].trimmingCharacters(in: .whitespaces),
                                         expression: parts.count > 1 ? String(parts[1]) : "")
        }
        try options.run("updated") { context throws(StoreError) in try context.execute(request) }
    }
}

struct Delete: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Delete every object a predicate selects, in the store, applying the relationships' delete rules, "
            + "without loading them (a batch delete); print how many were selected.")

    @OptionGroup var options: BatchChangeOptions

    func run() throws {
        let request = BatchDeleteRequest(entityName: options.entity, predicate: options.predicate)
        try options.run("deleted") { context throws(StoreError) in try context.execute(request) }
    }
}
