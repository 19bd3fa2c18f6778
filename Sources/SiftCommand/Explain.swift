// `sift explain`: a fetch's trees, plan, SQL, bindings and the database's query plan.

import ArgumentParser
import Foundation
import Sift
#if HTTP
import SiftRemote
#endif
import SiftStore

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show how a fetch runs: the parsed tree, the bound tree, the SQL, its bindings and the database's plan.")

    @OptionGroup var options: FetchOptions

    @OptionGroup var results: ResultOptions

    @Option(help: ArgumentHelp("How to print: table (the sections as text), json or jsonl (one object, a member per "
                               + "section). An explanation has no rows: csv is refused.", valueName: "format"))
    var format: OutputFormat = .table

    func validate() throws {
        if format == .csv { throw ValidationError("--format csv is for rows of results: explain prints table, json or jsonl") }
    }

    func run() throws {
        let store = try options.open()
        defer { close(store) }
        let sections = try diagnosing(options.sources + results.sources) {
            guard let sqlStore = store as? any SQLPersistentStore else { return try explainRemote(store) }
            return results.asksForResults ? try explainResults(sqlStore) : try explainObjects(sqlStore)
        }
        switch format {
        case .table, .csv:
            for (name, value) in sections {
                switch value {
                case .string(let text) where name == "results": print("\(name): \(text)")
                case .string(let text): print("\(name):\n" + text.split(separator: "\n").map { "  " + $0 }.joined(separator: "\n"))
                case .array(let lines): print("\(name):\n" + (lines.isEmpty ? "  (none)" : lines.map { "  " + Cell.text($0) }.joined(separator: "\n")))
                default: print("\(name): \(Cell.text(value))")
                }
            }
        case .json, .jsonl:
            var text = ""
            JSONText.object(sections, into: &text, indent: format == .json ? 0 : nil)
            print(text)
        }
    }

    /// The sections of a fetch of objects: parsed, bound, plan, sql, bindings, the database's plan.
    func explainObjects(_ store: any SQLPersistentStore) throws -> [(String, PredicateValue)] {
        let text = try options.predicate(in: store.model)
        var request = try options.request(in: store.model)
        // Parsed and bound once; the plan optimizes and lowers the bound tree.
        let source = SourceText("predicate", given: text)
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(text, arguments: options.template == nil ? try options.predicateArguments.values : [])
        } catch let error as PredicateSyntaxError {
            throw CommandFailure(.invalidData, diagnostic: source.render(.syntax(error)))
        }
        var sections: [(String, PredicateValue)] = [("parsed", .string(syntax.description))]
        let compiler = PredicateCompiler(model: store.model, optimizer: nil, functions: store.functions)
        do {
            request.predicate = .bound(try compiler.bind(syntax, entity: request.entityName))
        } catch {
            throw CommandFailure(.invalidData, diagnostic: source.render(error))
        }
        let plan = try store.plan(request)
        guard let bound = plan.predicate else { return sections }
        sections.append(("bound", .string(bound.outline)))
        sections.append(("plan", .string(plan.description)))
        return sections + (try statement(plan.query(for: request, columns: .rows), store))
    }

    /// The sections of a dictionary fetch: its plan, and the one statement
    /// it runs, or that it runs in memory, and why.
    func explainResults(_ store: any SQLPersistentStore) throws -> [(String, PredicateValue)] {
        let request = try results.request(from: try options.request(in: store.model))
        // The objects read: result names are not key paths of the entity.
        var objects = request
        objects.sortDescriptors = []
        objects.fetchLimit = nil
        objects.fetchOffset = 0
        let plan = try store.plan(objects)
        var sections: [(String, PredicateValue)] = [("plan", .string(plan.description))]
        guard let query = try store.resultQuery(for: request) else {
            sections.append(("results", .string("grouped in memory, over the rows SQL selects")))
            sections.append(("sql", .string(plan.query(for: objects, columns: .rows).sql)))
            return sections
        }
        return sections + (try statement(query, store))
    }

    /// The sections of a fetch from a store served over HTTP: parsed,
    /// bound, what the server evaluates (the text and arguments sent) and
    /// what memory does here.
    func explainRemote(_ store: any PersistentStore) throws -> [(String, PredicateValue)] {
        #if HTTP
        guard let remote = store as? RemoteStore else {
            throw CommandFailure(.usage, "explain shows the SQL of a store file or a PostgreSQL schema, or the plan of a served store")
        }
        if results.asksForResults {
            throw CommandFailure(.usage, "explain of a dictionary fetch needs a store file or --postgres: a served store runs it in memory here")
        }
        let text = try options.predicate(in: store.model)
        let request = try options.request(in: store.model)
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(text, arguments: options.template == nil ? try options.predicateArguments.values : [])
        } catch let error as PredicateSyntaxError {
            throw CommandFailure(.invalidData, diagnostic: SourceText("predicate", given: text).render(.syntax(error)))
        }
        var sections: [(String, PredicateValue)] = [("parsed", .string(syntax.description)), ("server", .string(remote.backend.url.absoluteString))]
        let plan = try remote.plan(request)
        if let bound = try remote.compile(request).predicate { sections.append(("bound", .string(bound.outline))) }
        sections.append(("plan", .string(plan.description)))
        if let sent = plan.backend?.canonicalFormat {
            sections.append(("sent", .string(sent.format)))
            sections.append(("arguments", .array(sent.arguments.enumerated().map { .string("%@ \($0 + 1) = \($1)") })))
        }
        return sections
        #else
        throw CommandFailure(.usage, "explain shows the SQL of a store file or a PostgreSQL schema")
        #endif
    }

    /// A statement's sections: its SQL, its bindings, the database's plan.
    func statement(_ query: SQLQuery, _ store: any SQLPersistentStore) throws -> [(String, PredicateValue)] {
        [("sql", .string(query.sql)),
         ("bindings", .array(store.bindingLines(query).map(PredicateValue.string))),
         ("\(store.databaseName.lowercased()) plan", .array(try store.queryPlan(query).map(PredicateValue.string)))]
    }
}
