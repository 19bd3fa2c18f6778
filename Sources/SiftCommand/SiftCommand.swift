// The `sift` command line: one subcommand per job.

import ArgumentParser
import Foundation
import Sift

@main
struct SiftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sift",
        abstract: "Parse, check and run Cocoa predicate format strings.",
        subcommands: [Parse.self]
    )
}

/// Exit statuses, as sysexits.h names them.
enum ExitStatus {
    /// A predicate is invalid.
    static let dataError = ExitCode(65)
    /// The command was used wrongly.
    static let usage = ExitCode(64)
}

/// Options shared by every subcommand that takes a predicate.
struct PredicateArguments: ParsableArguments {
    @Option(name: .customLong("arg"),
            help: ArgumentHelp("Fills the next format argument: JSON when valid JSON (30, true, null, [1, 2], \"30\", {\"date\": 700000000}), a plain string otherwise.",
                               valueName: "value"))
    var arguments: [String] = []

    /// The arguments as predicate values.
    var values: [PredicateValue] { arguments.map(PredicateValue.init(commandLineArgument:)) }
}

/// Writes to standard error.
func printError(_ text: String) {
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
