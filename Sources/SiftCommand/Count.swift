// `sift count`: the number of objects a fetch matches.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Count: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Count the objects a fetch matches.")

    @OptionGroup var options: FetchOptions

    @Option(help: ArgumentHelp("How to print the count: table (the number alone), json ({\"count\": N}), jsonl or csv.",
                               valueName: "format"))
    var format: OutputFormat = .table

    func run() throws {
        let store = try options.open()
        defer { close(store) }
        let request = try options.request(in: store.model)
        let progress = ProgressLine("counting")
        let count = try diagnosing(options.sources) {
            defer { progress.finish() }
            return try ObjectContext(store: store).count(for: request)
        }
        printCount(count, format)
    }
}

/// Prints a count: the number alone in a table, `{"count": N}` in JSON, a
/// `count` column in CSV.
func printCount(_ count: Int, _ format: OutputFormat, extra: [(String, PredicateValue)] = []) {
    let members = [("count", PredicateValue.int(Int64(count)))] + extra
    switch format {
    case .table:
        print(count)
    case .json:
        var text = ""
        JSONText.object(members, into: &text, indent: 0)
        print(text)
    case .jsonl:
        var text = ""
        JSONText.object(members, into: &text, indent: nil)
        print(text)
    case .csv:
        ResultRows(columns: members.map(\.0), rows: [members.map(\.1)]).print(.csv)
    }
}
