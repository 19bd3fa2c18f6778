// `sift sql`: the SQL a predicate lowers to, and its bindings, in SQLite's or PostgreSQL's dialect.

import ArgumentParser
import Foundation
import Sift
import SiftStore

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

    @Option(help: ArgumentHelp("How to print: table (the SQL, then its bindings), json or jsonl (one object: sql, "
                               + "bindings). A statement has no rows: csv is refused.", valueName: "format"))
    var format: OutputFormat = .table

    func validate() throws {
        if format == .csv { throw ValidationError("--format csv is for rows of results: sql prints table, json or jsonl") }
    }

    func run() throws {
        let dataModel: DataModel
        if model.hasSuffix(".sqlite") || model.hasSuffix(".db") {
            dataModel = try openStore(model, readOnly: true).model
        } else {
            dataModel = try loadModel(model)
        }
        try checkEntity(entity, in: dataModel)
        let bound: BoundPredicate
        do {
            bound = try PredicateCompiler(model: dataModel).bind(
                predicate, arguments: try predicateArguments.values, entity: entity, variables: try predicateArguments.variableValues)
        } catch let error as PredicateCompileError {
            throw CommandFailure(.invalidData, diagnostic: error.rendered(in: predicate))
        }
        let schema = dialect == .sqlite ? SQLSchema(model: dataModel) : SQLSchema(model: dataModel, dialect: .postgreSQL)
        let query: SQLQuery
        do {
            query = try SQLLowering(schema: schema).select(entity, where: bound)
        } catch {
            throw CommandFailure(.invalidData, "\(error)")
        }
        // Each binding named by the dialect's placeholder.
        let bindings = query.bindings.enumerated().map { "\(schema.dialect.placeholder($0 + 1)) = \($1)" }
        switch format {
        case .table, .csv:
            print(query.sql + (bindings.isEmpty ? "" : "\n-- bindings: " + bindings.joined(separator: ", ")))
        case .json, .jsonl:
            var text = ""
            JSONText.object([("sql", .string(query.sql)), ("bindings", .array(bindings.map(PredicateValue.string)))],
                            into: &text, indent: format == .json ? 0 : nil)
            print(text)
        }
    }
}
