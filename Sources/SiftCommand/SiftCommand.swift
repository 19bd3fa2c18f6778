// The `sift` command line: one subcommand per job.

import ArgumentParser
import Foundation
import Sift

/// The version of `sift` and of the package, named once.
enum SiftVersion {
    static let current = "0.9.0"
}

@main
struct SiftCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sift",
        abstract: "Parse, check and run Cocoa predicate format strings.",
        discussion: """
            Exit statuses (sysexits.h): 0 success, 64 bad usage, 65 an invalid predicate, request or value, \
            66 a store or input that cannot be opened, 70 an unexpected failure, 73 a store that cannot be \
            created or written, 74 a damaged store or an I/O error, 75 a locked store or a conflicting save \
            (try again). Shell completion: sift --generate-completion-script bash|zsh|fish prints a script to \
            install (for example: sift --generate-completion-script zsh > ~/.zfunc/_sift).
            """,
        version: SiftVersion.current,
        subcommands: [Demo.self, Parse.self, Check.self, Eval.self, SQL.self, Import.self, Copy.self, Explain.self, Query.self, Count.self, Inspect.self, Serve.self, Batch.self, Update.self, Delete.self, Migrate.self, History.self, Watch.self, StressSave.self, StressShare.self, StressOffline.self]
    )

    /// Parses the command line and runs the command. A failure while running
    /// is printed as ``CommandFailure`` gives it, and exits with its kind's
    /// status; the argument parser's own (usage, help, --version, completion
    /// scripts) as it prints them, with the lowercase `error:` of the rest.
    static func main() {
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exitAsTheParserDoes(error)
        }
        do {
            try command.run()
        } catch let status as ExitCode {
            exit(withError: status)
        } catch {
            // The parser's own (a command run without its subcommand asks for help).
            let status = exitCode(for: error)
            if !(error is ValidationError), status == .success || status == FailureKind.usage.status { exitAsTheParserDoes(error) }
            let failure = CommandFailure(error)
            report(failure)
            exit(withError: failure.kind.status)
        }
    }

    /// Prints what the argument parser prints for `error` (help, a version,
    /// a completion script, a usage error, with `error:` in lowercase), and exits
    /// with its status.
    static func exitAsTheParserDoes(_ error: any Error) -> Never {
        let status = exitCode(for: error)
        var message = fullMessage(for: error)
        if status == .success {
            if !message.isEmpty { print(message) }
        } else {
            if message.hasPrefix("Error: ") { message = "error: " + message.dropFirst("Error: ".count) }
            printError(message)
        }
        exit(withError: status)
    }
}

/// Exit statuses, as sysexits.h names them (``FailureKind`` gives each kind of failure its own).
enum ExitStatus {
    /// A predicate is invalid.
    static let dataError = FailureKind.invalidData.status
    /// The command was used wrongly.
    static let usage = FailureKind.usage.status
    /// An input file cannot be read.
    static let noInput = FailureKind.noInput.status
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
    var values: [PredicateValue] {
        get throws { try arguments.map { try commandLineValue($0, option: "--arg") } }
    }

    /// The values of the variables given with --var.
    var variableValues: [String: PredicateValue] {
        get throws {
            var result: [String: PredicateValue] = [:]
            for item in variables {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                let name = parts.first.map { $0.hasPrefix("$") ? String($0.dropFirst()) : String($0) } ?? ""
                result[name] = try commandLineValue(parts.count > 1 ? String(parts[1]) : "", option: "--var \(name)=")
            }
            return result
        }
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
