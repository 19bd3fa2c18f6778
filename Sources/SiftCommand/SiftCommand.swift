// The `sift` command line: one subcommand per job.

import ArgumentParser
import Foundation
import Sift

@main
struct SiftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sift",
        abstract: "Parse, check and run Cocoa predicate format strings.",
        subcommands: [Demo.self, Parse.self, Check.self, Eval.self, SQL.self, Import.self, Explain.self, Query.self, Count.self, Inspect.self, Batch.self, Update.self, Delete.self, Migrate.self, History.self, StressSave.self]
    )
}

/// Exit statuses, as sysexits.h names them.
enum ExitStatus {
    /// A predicate is invalid.
    static let dataError = ExitCode(65)
    /// The command was used wrongly.
    static let usage = ExitCode(64)
    /// An input file cannot be read.
    static let noInput = ExitCode(66)
}

/// Options shared by every subcommand that takes a predicate.
struct PredicateArguments: ParsableArguments {
    @Option(name: .customLong("arg"),
            help: ArgumentHelp("Fills the next format argument: JSON when valid JSON (30, true, null, [1, 2], \"30\", {\"date\": 700000000}), a plain string otherwise.",
                               valueName: "value"))
    var arguments: [String] = []

    @Option(name: .customLong("var"),
            help: ArgumentHelp("Gives a $variable a value: NAME=VALUE, the value read as --arg reads it.",
                               valueName: "name=value"))
    var variables: [String] = []

    /// The arguments as predicate values.
    var values: [PredicateValue] { arguments.map(PredicateValue.init(commandLineArgument:)) }

    /// The values of the variables given with --var.
    var variableValues: [String: PredicateValue] {
        var result: [String: PredicateValue] = [:]
        for item in variables {
            let parts = item.split(separator: "=", maxSplits: 1)
            let name = parts.first.map { $0.hasPrefix("$") ? String($0.dropFirst()) : String($0) } ?? ""
            result[name] = PredicateValue(commandLineArgument: parts.count > 1 ? String(parts[1]) : "")
        }
        return result
    }

    func validate() throws {
        for item in variables where !item.contains("=") {
            throw ValidationError("--var takes NAME=VALUE, not '\(item)'")
        }
    }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
