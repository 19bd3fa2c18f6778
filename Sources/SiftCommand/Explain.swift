// `sift explain`: a fetch's trees, plan, SQL, bindings and the database's query plan.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show how a fetch runs: the parsed tree, the bound tree, the SQL, its bindings and the database's plan.")

    @OptionGroup var options: FetchOptions

    @OptionGroup var results: ResultOptions

    func run() throws {
        let store = try options.open()
        defer { store.close() }
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
                : query.bindings.enumerated().map { "  \(store.schema.dialect.placeholder($0 + 1)) = \($1)" }.joined(separator: "\n")))
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
    func explainResults(_ store: any SQLPersistentStore) throws {
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
                : query.bindings.enumerated().map { "  \(store.schema.dialect.placeholder($0 + 1)) = \($1)" }.joined(separator: "\n")))
            print("\(store.databaseName.lowercased()) plan:\n" + (try store.queryPlan(query)).map { "  " + $0 }.joined(separator: "\n"))
        } catch let status as ExitCode {
            throw status
        } catch {
            printError("\(error)")
            throw ExitStatus.dataError
        }
    }
}
