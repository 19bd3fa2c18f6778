// Grammar/Corpus: the examples that go with the grammar. Valid ones parse and
// round-trip; invalid ones fail with the recorded position and message.

import Foundation
import Sift
import Testing

struct InvalidExample: Sendable, CustomTestStringConvertible {
    var predicate: String
    var line: Int
    var column: Int
    var message: String
    var testDescription: String { predicate }
}

enum GrammarCorpus {
    static func lines(_ name: String) -> [String] {
        guard let text = try? Fixtures.repositoryFile("Grammar/Corpus/" + name) else { return [] }
        return text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    }

    static let valid: [String] = lines("valid.txt").filter { !$0.isEmpty && !$0.hasPrefix("#") }

    static let invalid: [InvalidExample] = {
        var examples: [InvalidExample] = []
        var pending: String?
        for line in lines("invalid.txt") {
            if let predicate = pending {
                pending = nil
                // --> LINE:COLUMN MESSAGE
                let body = line.dropFirst(4)
                let position = body.prefix { $0 != " " }
                let parts = position.split(separator: ":").compactMap { Int($0) }
                guard line.hasPrefix("--> "), parts.count == 2 else {
                    examples.append(InvalidExample(predicate: predicate, line: 0, column: 0, message: "malformed: \(line)"))
                    continue
                }
                examples.append(InvalidExample(predicate: predicate, line: parts[0], column: parts[1],
                                               message: String(body.dropFirst(position.count + 1))))
            } else if !(line.isEmpty || line.hasPrefix("# ") || line == "#") {
                pending = line
            }
        }
        return examples
    }()
}

@Suite("Grammar corpus")
struct GrammarCorpusTests {
    @Test func corpusIsThere() {
        #expect(GrammarCorpus.valid.count > 100)
        #expect(GrammarCorpus.invalid.count > 40)
    }

    @Test("Valid examples parse and round-trip", arguments: GrammarCorpus.valid)
    func valid(_ predicate: String) throws {
        let tree = try PredicateParser.parse(predicate)
        let canonical = tree.canonicalFormat
        #expect(try PredicateParser.parse(canonical.format, arguments: canonical.arguments) == tree)
    }

    @Test("Invalid examples fail where and how recorded", arguments: GrammarCorpus.invalid)
    func invalid(_ example: InvalidExample) {
        let error = #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse(example.predicate) }
        #expect(error?.location == SourcePosition(line: example.line, column: example.column))
        #expect(error?.message == example.message)
    }
}
