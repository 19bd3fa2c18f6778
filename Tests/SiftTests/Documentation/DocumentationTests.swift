// The documentation's examples run: every row of the example tables of the
// predicate language and semantics articles is evaluated and must give its
// result; every `sift` command of the command line article's sessions runs
// in a scratch folder and must print exactly what the article shows. (The
// Swift examples, which are snippets, are run by ExamplesTests.)

import Foundation
import Sift
import Testing

/// One example row of an article: a predicate, a value and the result.
struct ArticleExample: Sendable, CustomTestStringConvertible {
    var article: String
    var predicate: String
    var value: String
    var result: String

    var testDescription: String { "\(article): \(predicate) with \(value)" }

    /// A catalog's file, from the repository.
    static func article(_ path: String) -> String {
        (try? Fixtures.repositoryFile(path)) ?? ""
    }

    /// The rows `| construct | `predicate` | `value` | result |` of an article's tables.
    static func rows(of path: String) -> [ArticleExample] {
        article(path).split(separator: "\n").compactMap { line -> ArticleExample? in
            guard line.hasPrefix("|") else { return nil }
            let cells = line.replacingOccurrences(of: "\\|", with: "\u{1}").split(separator: "|", omittingEmptySubsequences: false)
                .map { $0.trimmingCharacters(in: .whitespaces).replacingOccurrences(of: "\u{1}", with: "|") }
            guard cells.count == 6, cells[2].hasPrefix("`"), cells[3].hasPrefix("`"),
                  ["true", "false", "error", "refused"].contains(cells[4]) else { return nil }
            func code(_ cell: String) -> String { String(cell.dropFirst().dropLast()) }
            return ArticleExample(article: (path as NSString).lastPathComponent, predicate: code(cells[2]),
                                  value: code(cells[3]), result: cells[4])
        }
    }

    static let all = rows(of: "Sources/Sift/Sift.docc/PredicateLanguage.md") + rows(of: "Sources/Sift/Sift.docc/Semantics.md")
}

@Suite("Documentation")
struct DocumentationTests {
    @Test func theTablesAreThere() {
        #expect(ArticleExample.rows(of: "Sources/Sift/Sift.docc/PredicateLanguage.md").count >= 50)
        #expect(ArticleExample.rows(of: "Sources/Sift/Sift.docc/Semantics.md").count >= 25)
    }

    @Test("Every example of the language and semantics articles gives its result", arguments: ArticleExample.all)
    func example(_ example: ArticleExample) throws {
        let value = PredicateValue(commandLineArgument: example.value)
        guard example.result != "refused" else {
            #expect(throws: PredicateCompileError.self) { try FormatPredicate(format: example.predicate) }
            return
        }
        let predicate = try FormatPredicate(format: example.predicate)
        switch example.result {
        case "true", "false":
            #expect(try predicate.evaluate(with: value) == (example.result == "true"))
        default:
            #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: value) }
        }
    }

    /// The sessions of the command line article: each `$ sift …` line and the output under it.
    static let sessions: [(command: String, output: [String])] = {
        var result: [(String, [String])] = []
        var inSession = false
        for line in ArticleExample.article("Sources/Sift/Sift.docc/CommandLine.md").split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("```console") { inSession = true; continue }
            if line.hasPrefix("```") { inSession = false; continue }
            guard inSession else { continue }
            if line.hasPrefix("$ ") {
                result.append((String(line.dropFirst(2)), []))
            } else if !result.isEmpty {
                result[result.count - 1].1.append(String(line))
            }
        }
        return result
    }()

    @Test("The command line article's sessions print what they show")
    func commandLineSessions() throws {
        #expect(Self.sessions.count >= 12)
        let folder = try ScratchFolder()
        try Fixtures.data("company.json").write(to: folder.url.appendingPathComponent("company.json"))
        try FileManager.default.copyItem(at: Fixtures.repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/Company.xcdatamodeld"),
                                         to: folder.url.appendingPathComponent("Company.xcdatamodeld"))
        let executable = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift").path
        for (command, expected) in Self.sessions {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/bin/sh")
            process.arguments = ["-c", "sift() { \"$SIFT\" \"$@\"; }; " + command]
            process.environment = ["SIFT": executable, "PATH": "/usr/bin:/bin"]
            process.currentDirectoryURL = folder.url
            let output = Pipe()
            process.standardOutput = output
            process.standardError = FileHandle.nullDevice
            try process.run()
            let data = output.fileHandleForReading.readDataToEndOfFile()
            process.waitUntilExit()
            // Lines end with LF, or CRLF (CSV).
            let lines = String(decoding: data, as: UTF8.self).split(omittingEmptySubsequences: false, whereSeparator: \.isNewline)
                .map { $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression) }
            #expect(Array(lines.dropLast(lines.last == "" ? 1 : 0)) == expected.map {
                $0.replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
            }, "\(command)")
        }
    }
}
