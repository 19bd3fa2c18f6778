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
