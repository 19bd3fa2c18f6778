// `sift eval`: evaluate a predicate against plain JSON values, with no model.

import ArgumentParser
import Foundation
import Sift

struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate a predicate against plain values, with no model.",
        discussion: """
            With --value, prints true or false for that value (read as --arg reads one: JSON when it \
            starts as JSON does, and then it must be valid; {"date": N} a date; a plain string otherwise). \
            With --data, reads a JSON array (or one JSON value a line) and prints each element that \
            matches: one JSON line each by default (--format jsonl), or a JSON array, a table or CSV \
            (objects' keys as columns). SELF is the value; key paths look keys up in objects and map \
            them over arrays. Exit status: 0 when the predicate ran, 65 when it, a value or the data is \
            invalid or its evaluation fails (the diagnostic goes to standard error), 64 for bad usage, \
            66 when the file cannot be read.
            """
    )

    @Option(help: ArgumentHelp("The value to test.", valueName: "value"))
    var value: String?

    @Option(help: ArgumentHelp("A JSON file: an array, or one value a line.", valueName: "file"))
    var data: String?

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate.")
    var predicate: String

    @Option(help: ArgumentHelp("How --data prints the matching elements: jsonl (the default: one a line), json (an array), "
                               + "table or csv (objects' keys as columns, other values in a column 'value').", valueName: "format"))
    var format: OutputFormat = .jsonl

    func validate() throws {
        guard (value == nil) != (data == nil) else { throw ValidationError("give --value or --data, one of them") }
    }

    func run() throws {
        let compiled: FormatPredicate
        do {
            compiled = try FormatPredicate(format: predicate, argumentArray: try predicateArguments.values,
                                           variables: try predicateArguments.variableValues)
        } catch let error as PredicateCompileError {
            throw CommandFailure(.invalidData, diagnostic: error.rendered(in: predicate))
        }
        if let value {
            print(try compiled.evaluate(with: try commandLineValue(value, option: "--value")))
            return
        }
        let matches = try readValues(data ?? "").filter { try compiled.evaluate(with: $0) }
        switch format {
        case .jsonl:
            let out = OutputBuffer()
            for element in matches { out.line(JSONText.compact(element)) }
        case .json:
            print(JSONText.pretty(.array(matches)))
        case .table, .csv:
            // Objects' keys as columns, in order of first appearance; other values under "value".
            var columns: [String] = []
            var seen: Set<String> = []
            for element in matches {
                let keys = if case .dictionary(let members) = element { members.keys.sorted() } else { ["value"] }
                for key in keys where seen.insert(key).inserted { columns.append(key) }
            }
            let rows = matches.map { element in
                columns.map { column in
                    if case .dictionary(let members) = element { members[column] ?? .null } else { column == "value" ? element : .null }
                }
            }
            ResultRows(columns: columns, rows: rows).print(format)
        }
    }

    /// The values of a JSON file: the members of an array, or one value a line.
    func readValues(_ path: String) throws -> [PredicateValue] {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw CommandFailure(.noInput, "cannot read '\(path)': \(error.localizedDescription)")
        }
        if let whole = try? JSONDecoder().decode(PredicateValue.self, from: contents) {
            if case .array(let members) = whole { return members }
            return [whole]
        }
        var values: [PredicateValue] = []
        for (number, line) in String(decoding: contents, as: UTF8.self).split(separator: "\n").enumerated() {
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            do {
                values.append(try JSONDecoder().decode(PredicateValue.self, from: Data(line.utf8)))
            } catch {
                throw CommandFailure(.invalidData, "\(path):\(number + 1): not a JSON value: \(jsonProblem(error, in: String(line)))")
            }
        }
        return values
    }
}
