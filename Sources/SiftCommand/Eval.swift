// `sift eval`: evaluate a predicate against plain JSON values, with no model.

import ArgumentParser
import Foundation
import Sift

struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Evaluate a predicate against plain values, with no model.",
        discussion: """
            With --value, prints true or false for that value (read as --arg reads one: JSON when \
            valid JSON, {"date": N} a date, a plain string otherwise). With --data, reads a JSON \
            array (or one JSON value a line) and prints each element that matches as one JSON line. \
            SELF is the value; key paths look keys up in objects and map them over arrays. Exit \
            status: 0 when the predicate ran, 65 when it is invalid or its evaluation fails (the \
            diagnostic goes to standard error), 64 for bad usage, 66 when the file cannot be read.
            """
    )

    @Option(help: ArgumentHelp("The value to test.", valueName: "value"))
    var value: String?

    @Option(help: ArgumentHelp("A JSON file: an array, or one value a line.", valueName: "file"))
    var data: String?

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate.")
    var predicate: String

    func validate() throws {
        guard (value == nil) != (data == nil) else { throw ValidationError("give --value or --data, one of them") }
    }

    func run() throws {
        let compiled: FormatPredicate
        do {
            compiled = try FormatPredicate(format: predicate, argumentArray: predicateArguments.values,
                                           variables: predicateArguments.variableValues)
        } catch {
            printError(error.rendered(in: predicate))
            throw ExitStatus.dataError
        }
        do {
            if let value {
                print(try compiled.evaluate(with: PredicateValue(commandLineArgument: value)))
                return
            }
            let values = try readValues(data ?? "")
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
            for element in values where try compiled.evaluate(with: element) {
                let line = (try? encoder.encode(element)).map { String(decoding: $0, as: UTF8.self) } ?? "\(element)"
                print(line)
            }
        } catch let error as PredicateEvaluationError {
            printError(error.rendered())
            throw ExitStatus.dataError
        }
    }

    /// The values of a JSON file: the members of an array, or one value a line.
    func readValues(_ path: String) throws -> [PredicateValue] {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            printError("error: cannot read '\(path)': \(error.localizedDescription)")
            throw ExitStatus.noInput
        }
        if let whole = try? JSONDecoder().decode(PredicateValue.self, from: contents) {
            if case .array(let members) = whole { return members }
            return [whole]
        }
        var values: [PredicateValue] = []
        for (number, line) in String(decoding: contents, as: UTF8.self).split(separator: "\n").enumerated() {
            guard !line.allSatisfy(\.isWhitespace) else { continue }
            guard let value = try? JSONDecoder().decode(PredicateValue.self, from: Data(line.utf8)) else {
                printError("error: \(path):\(number + 1): not a JSON value")
                throw ExitStatus.noInput
            }
            values.append(value)
        }
        return values
    }
}
