// The Swift examples users copy run as written. Every ```swift block of the
// README and of the DocC articles is a piece of a snippet (`Snippets/`), which
// the package builds; every snippet runs to its end here, and what its
// comments say it prints is what it prints:
//
//     print(tree)                     // department.name == "Legal" AND age > 30
//
// A `print` line's trailing comment is the line it prints (`…` stands for any
// text; an explanation may follow ` — `). Comment lines right below it, at the
// same column, are the lines it prints next; a trailing comment that ends in
// `prints:` introduces such lines for a statement that prints through others
// (a delegate). The expected lines must appear in the output in that order.
// No example force-unwraps or force-casts: users copy them.

import Foundation
import Testing

/// A snippet of the package: its file, and what its comments expect it to print.
struct SnippetFile: Sendable, CustomTestStringConvertible {
    var name: String
    var text: String

    var testDescription: String { name }

    static let folder = Fixtures.repositoryRoot.appendingPathComponent("Snippets")

    static let all: [SnippetFile] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.filter { $0.hasSuffix(".swift") }.sorted().compactMap { file in
            guard let text = try? String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8) else { return nil }
            return SnippetFile(name: String(file.dropLast(6)), text: text)
        }
    }()

    /// The lines DocC and the README show: every line but the slice markers and hidden regions.
    var shownLines: [String] {
        var hidden = false
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code == "// snippet.hide" { hidden = true; continue }
            if code == "// snippet.show" { hidden = false; continue }
            if code.hasPrefix("// snippet.") || hidden { continue }
            lines.append(line)
        }
        return lines
    }

    /// The shown lines of one slice (`// snippet.NAME` to `// snippet.end`).
    func slice(_ name: String) -> [String] {
        var current: String?
        var hidden = false
        var lines: [String] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            let code = line.trimmingCharacters(in: .whitespaces)
            if code == "// snippet.hide" { hidden = true; continue }
            if code == "// snippet.show" { hidden = false; continue }
            if code == "// snippet.end" { current = nil; continue }
            if code.hasPrefix("// snippet.") { current = String(code.dropFirst("// snippet.".count)); continue }
            if current == name, !hidden { lines.append(line) }
        }
        return lines
    }

    /// The lines the comments say the snippet prints, in order.
    var expectedOutput: [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var expected: [String] = []
        var index = 0
        while index < lines.count {
            defer { index += 1 }
            guard let comment = Self.trailingComment(of: lines[index]) else { continue }
            let isPrint = lines[index].contains("print(")
            let introduces = comment.text.hasSuffix("prints:")
            guard isPrint || introduces else { continue }
            if !introduces { expected.append(Self.expectation(comment.text)) }
            // The lines below at the comment's column continue it.
            while index + 1 < lines.count {
                let next = lines[index + 1]
                let prefix = String(repeating: " ", count: comment.column) + "//"
                guard next.hasPrefix(prefix), next.prefix(comment.column).allSatisfy({ $0 == " " }) else { break }
                expected.append(Self.expectation(String(next.dropFirst(prefix.count).dropFirst(next.dropFirst(prefix.count).hasPrefix(" ") ? 1 : 0))))
                index += 1
            }
        }
        return expected
    }

    /// A line's comment after its code, and the column of its `//` (nil for a line with no code).
    static func trailingComment(of line: String) -> (text: String, column: Int)? {
        guard let range = line.range(of: #"\s{2,}// "#, options: .regularExpression),
              !line[..<range.lowerBound].trimmingCharacters(in: .whitespaces).isEmpty else { return nil }
        let slashes = line[range].firstIndex(of: "/") ?? range.lowerBound
        return (String(line[range.upperBound...]), line.distance(from: line.startIndex, to: slashes))
    }

    /// A comment's expected line: the comment up to ` — ` (what follows explains).
    static func expectation(_ comment: String) -> String {
        let text = comment.components(separatedBy: " — ").first ?? comment
        return text.trimmingCharacters(in: .whitespaces)
    }

    /// Whether `line` is what `expected` says (`…` matches any text).
    static func matches(_ line: String, _ expected: String) -> Bool {
        let pattern = expected.components(separatedBy: "…").map(NSRegularExpression.escapedPattern(for:)).joined(separator: ".*")
        return line.trimmingCharacters(in: .whitespaces).range(of: "^" + pattern + "$", options: .regularExpression) != nil
    }
}

@Suite("Examples")
struct ExamplesTests {
    /// The ```swift blocks of the README and of every DocC article, with where each is.
    static var documentedBlocks: [(place: String, code: String)] {
        var files = ["README.md"]
        let sources = Fixtures.repositoryRoot.appendingPathComponent("Sources")
        let walker = FileManager.default.enumerator(atPath: sources.path)
        while let path = walker?.nextObject() as? String {
            if path.hasSuffix(".md"), path.contains(".docc/") { files.append("Sources/" + path) }
        }
        return files.sorted().flatMap { file -> [(place: String, code: String)] in
            let text = (try? Fixtures.repositoryFile(file)) ?? ""
            return text.components(separatedBy: "```swift\n").dropFirst().enumerated().map { index, block in
                (place: "\(file), Swift block \(index + 1)", code: block.components(separatedBy: "```").first ?? "")
            }
        }
    }

    @Test("Every Swift example of the README and the articles is a piece of a snippet, which runs")
    func everyExampleIsASnippet() throws {
        let blocks = Self.documentedBlocks
        #expect(blocks.count >= 12)
        // Each snippet whole, and each of its slices without its common indentation (a slice inside a `do`).
        let slices = SnippetFile.all.flatMap { snippet in
            snippet.text.matches(of: /\/\/ snippet\.(\w+)/).map { String($0.1) }.filter { !["end", "hide", "show"].contains($0) }
                .map { name -> String in
                    let lines = snippet.slice(name)
                    let indent = lines.filter { !$0.trimmingCharacters(in: .whitespaces).isEmpty }.map { $0.prefix { $0 == " " }.count }.min() ?? 0
                    return lines.map { Self.trimmed(String($0.dropFirst(min(indent, $0.prefix { $0 == " " }.count)))) }.joined(separator: "\n")
                }
        }
        let snippets = SnippetFile.all.map { $0.shownLines.map(Self.trimmed).joined(separator: "\n") } + slices
        #expect(snippets.count >= 10)
        for block in blocks {
            // A package manifest's lines are not a program: they belong in Package.swift.
            if block.code.contains(".package(") { continue }
            var lines = block.code.split(separator: "\n", omittingEmptySubsequences: false).map { Self.trimmed(String($0)) }
            // The imports a snippet has at its top, before its slices.
            while let first = lines.first, first.hasPrefix("import ") || first.isEmpty { lines.removeFirst() }
            let indent = lines.filter { !$0.isEmpty }.map { $0.prefix(while: { $0 == " " }).count }.min() ?? 0
            let code = lines.map { String($0.dropFirst(min(indent, $0.count))) }.joined(separator: "\n")
                .trimmingCharacters(in: .newlines)
            #expect(snippets.contains { $0.contains(code) }, "\(block.place) is in no snippet:\n\(code)")
        }
    }

    /// Issue 54: the articles showed their code only through `@Snippet` directives, which a reader of the
    /// article's file sees as one line. Each slice is shown inline, after a `<!-- snippet NAME SLICE -->`
    /// marker, as `Scripts/inline-snippets` writes it: whole, and the same as the snippet's.
    @Test("Every article shows its snippets inline, each slice whole")
    func articlesShowTheirSnippetsInline() throws {
        let sources = Fixtures.repositoryRoot.appendingPathComponent("Sources")
        let walker = FileManager.default.enumerator(atPath: sources.path)
        var markers = 0
        while let path = walker?.nextObject() as? String {
            guard path.hasSuffix(".md"), path.contains(".docc/") else { continue }
            let text = try Fixtures.repositoryFile("Sources/" + path)
            #expect(!text.contains("@Snippet("), "\(path) shows a snippet only through a directive")
            let lines = text.components(separatedBy: "\n")
            for (index, line) in lines.enumerated() {
                guard let match = line.wholeMatch(of: /<!-- snippet (\w+) (\w+) -->/) else { continue }
                markers += 1
                let snippet = try #require(SnippetFile.all.first { $0.name == String(match.1) }, "\(path): no snippet \(match.1)")
                #expect(lines.dropFirst(index + 1).first == "```swift", "\(path): no block after \(line)")
                let block = Array(lines.dropFirst(index + 2).prefix { $0 != "```" })
                #expect(block == snippet.slice(String(match.2)), "\(path): the block after \(line) is not the slice; run Scripts/inline-snippets")
            }
        }
        #expect(markers >= 20)
    }

    @Test("No example force-unwraps or force-casts", arguments: SnippetFile.all)
    func noForcedUnwraps(_ snippet: SnippetFile) {
        for line in snippet.shownLines {
            let code = line.components(separatedBy: "//").first ?? line
            let unquoted = code.replacingOccurrences(of: #""([^"\\]|\\.)*""#, with: "\"\"", options: .regularExpression)
            #expect(unquoted.range(of: #"(try!|as!|[\w\)\]]!(?!=))"#, options: .regularExpression) == nil,
                    "\(snippet.name): \(line)")
        }
    }

    @Test("Each snippet runs to its end and prints what its comments say", arguments: SnippetFile.all)
    func runs(_ snippet: SnippetFile) throws {
        var arguments: [String] = []
        var scratch: URL?
        defer { scratch.map { try? FileManager.default.removeItem(at: $0) } }
        if snippet.name == "CoreDataStore" {
            // An app's store and its model bundle: a copy of a store Core Data wrote (the snippet migrates it).
            let fixture = Fixtures.repositoryRoot.deletingLastPathComponent()
                .appendingPathComponent("shared/coredata-stores/bsk-bookmarks-v3")
            try #require(FileManager.default.fileExists(atPath: fixture.path),
                         "the Core Data stores are not beside the checkout (../shared/coredata-stores)")
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-snippet-\(UUID())")
            scratch = folder
            try FileManager.default.copyItem(at: fixture, to: folder)
            try Self.makeWritable(folder)
            let files = try FileManager.default.contentsOfDirectory(atPath: folder.path)
            let store = try #require(files.first { $0.hasSuffix(".sqlite") })
            let bundle = try #require(files.first { $0.hasSuffix(".xcdatamodeld") })
            arguments = [folder.appendingPathComponent(store).path, folder.appendingPathComponent(bundle).path]
        }
        if snippet.name == "PostgreSQL", ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"] == nil {
            // CI starts a server (.ci/run); without one the snippet says so and stops.
            return
        }
        let executable = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(snippet.name)
        try #require(FileManager.default.isExecutableFile(atPath: executable.path),
                     "snippet \(snippet.name) is not built: swift build --build-tests builds every snippet")
        let run = try runProduct(snippet.name, arguments, in: Fixtures.repositoryRoot)
        #expect(run.status == 0, "\(snippet.name) failed: \(run.error)")
        let lines = run.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        var position = 0
        for expected in snippet.expectedOutput {
            guard let found = lines[position...].firstIndex(where: { SnippetFile.matches($0, expected) }) else {
                let all = lines.joined(separator: "\n")
                Issue.record("\(snippet.name) does not print '\(expected)' (after line \(position)); it printed:\n\(all)")
                return
            }
            position = found + 1
        }
    }

    @Test("The comment rules read what they should")
    func commentRules() {
        let snippet = SnippetFile(name: "t", text: """
            print(a)          // 1 — the count
            print(b)          // error: x
                              //  --> predicate:1:6
            let c = 2         // not printed
            try save()        // the delegate prints:
            // insert 1
            """)
        #expect(snippet.expectedOutput == ["1", "error: x", "--> predicate:1:6"])
        #expect(SnippetFile.matches("SELECT a FROM t", "SELECT … FROM …"))
        #expect(!SnippetFile.matches("3", "2"))
    }

    static func trimmed(_ line: String) -> String {
        line.replacingOccurrences(of: #"\s+$"#, with: "", options: .regularExpression)
    }

    /// The fixtures are read-only; a copy must be writable (SQLite adds its log, a migration rewrites the file).
    static func makeWritable(_ folder: URL) throws {
        let walker = FileManager.default.enumerator(atPath: folder.path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: folder.path)
        while let path = walker?.nextObject() as? String {
            let url = folder.appendingPathComponent(path)
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder)
            try FileManager.default.setAttributes([.posixPermissions: isFolder.boolValue ? 0o755 : 0o644], ofItemAtPath: url.path)
        }
    }
}
