// `sift parse`: the front end on its own.

import ArgumentParser
import Foundation
import Sift

struct Parse: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Parse a predicate and print its canonical form, its tree, or its tree as JSON.",
        discussion: """
            --var NAME=VALUE replaces $NAME by the value in what is printed; a --var naming no \
            variable of the predicate is refused. Exit status: 0 when everything parsed, 65 when a \
            predicate or a value is invalid (the diagnostic goes to standard error), 64 for bad usage, \
            66 when the file cannot be read.
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
        var syntax = try PredicateParser.parse(predicate ?? "", arguments: try predicateArguments.values)
        let values = try predicateArguments.variableValues
        if !values.isEmpty {
            for name in values.keys.sorted() where !syntax.variables.contains(name) {
                throw CommandFailure(.usage, "--var \(name)=…: the predicate has no variable $\(name)"
                                     + suggestion(for: name, among: syntax.variables.sorted()))
            }
            syntax = syntax.substituting(values)
        }
        print(render(syntax))
    }

    func render(_ syntax: PredicateSyntax) -> String {
        if tree { return syntax.outline.text }
        if json { return syntax.outline.json }
        return syntax.description
    }

    func parseFile(_ path: String) throws {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw CommandFailure(.noInput, "cannot read '\(path)'")
        }
        let arguments = try predicateArguments.values
        var parsed = 0
        var failed = 0
        var diagnostics = ""
        // Lines found on the bytes (no grapheme breaking over the whole file).
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            let bytes = raw.bindMemory(to: UInt8.self)
            var start = 0
            var number = 0
            while start <= bytes.count {
                var end = start
                while end < bytes.count, bytes[end] != 0x0A { end += 1 }
                number += 1
                var last = end
                if last > start, bytes[last - 1] == 0x0D { last -= 1 }
                let slice = UnsafeBufferPointer(rebasing: bytes[start..<last])
                defer { start = end + 1 }
                if slice.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0B || $0 == 0x0C }) { continue }
                let line = String(decoding: slice, as: UTF8.self)
                if !slice.allSatisfy({ $0 < 0x80 }), line.allSatisfy(\.isWhitespace) { continue }
                do {
                    _ = try PredicateParser.parse(line, arguments: arguments)
                    parsed += 1
                } catch let error as PredicateSyntaxError {
                    failed += 1
                    diagnostics += error.rendered(sourceName: path, firstLine: number) + "\n"
                } catch {
                    failed += 1
                    diagnostics += "\(path):\(number): \(error)\n"
                }
                if end == bytes.count { break }
            }
        }
        print(diagnostics, terminator: "")
        print("\(parsed) parsed, \(failed) failed")
        if failed > 0 { throw ExitStatus.dataError }
    }
}
