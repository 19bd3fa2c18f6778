// `sift parse`: the front end on its own.

import ArgumentParser
import Foundation
import Sift

struct Parse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Parse a predicate and print its canonical form, its tree, or its tree as JSON.",
        discussion: """
            Exit status: 0 when everything parsed, 65 when a predicate is invalid \
            (the diagnostic goes to standard error), 64 for bad usage.
            """
    )

    @Flag(help: "Print the syntax tree as an outline.")
    var tree = false

    @Flag(help: "Print the syntax tree as JSON.")
    var json = false

    @Option(help: ArgumentHelp("Parse each line of a file as one predicate and print a summary.", valueName: "file"))
    var file: String?

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate, in the Cocoa predicate format language.")
    var predicate: String?

    func validate() throws {
        if file == nil, predicate == nil { throw ValidationError("Give a predicate, or --file FILE.") }
        if file != nil, predicate != nil { throw ValidationError("Give a predicate or --file FILE, not both.") }
        if tree, json { throw ValidationError("Choose one of --tree and --json.") }
    }

    func run() throws {
        if let file { return try parseFile(file) }
        do {
            let syntax = try PredicateParser.parse(predicate ?? "", arguments: predicateArguments.values)
            print(render(syntax))
        } catch {
            printError(error.rendered())
            throw ExitStatus.dataError
        }
    }

    func render(_ syntax: PredicateSyntax) -> String {
        if tree { return syntax.outline.text }
        if json { return syntax.outline.json }
        return syntax.description
    }

    func parseFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            printError("error: cannot read '\(path)'")
            throw ExitStatus.usage
        }
        let text = String(decoding: data, as: UTF8.self)
        var parsed = 0
        var failed = 0
        for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            let line = line.hasSuffix("\r") ? line.dropLast() : line
            if line.allSatisfy(\.isWhitespace) { continue }
            do {
                _ = try PredicateParser.parse(String(line), arguments: predicateArguments.values)
                parsed += 1
            } catch {
                failed += 1
                print(error.rendered(sourceName: path, firstLine: number + 1))
            }
        }
        print("\(parsed) parsed, \(failed) failed")
        if failed > 0 { throw ExitStatus.dataError }
    }
}
