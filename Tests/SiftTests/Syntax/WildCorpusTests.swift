// Format strings from public Swift and Objective-C code (Fixtures/wild):
// each one parses, prints, and reads back to the same tree; those that need
// no model and no arguments evaluate against plain values without a crash.
// The few that Apple's own parser refuses too are listed with the reason in
// Fixtures/wild/refused.txt, and must fail.

import Foundation
import Sift
import Testing

/// One string of `Fixtures/wild/strings.jsonl`.
struct WildString: Decodable, Sendable, CustomTestStringConvertible {
    var kind: String
    var format: String
    var arguments: [PredicateValue?]
    var repository: String
    var path: String

    var testDescription: String { format }

    static let all: [WildString] = {
        guard let data = try? Fixtures.data("wild/strings.jsonl") else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode(WildString.self, from: Data($0.utf8))
        }
    }()

    /// The formats Apple's parser refuses too, with why (`refused.txt`:
    /// a format line, then a `-->` line with the reason).
    static let refused: [String: String] = {
        guard let data = try? Fixtures.data("wild/refused.txt") else { return [:] }
        var result: [String: String] = [:]
        var pending: String?
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("#") || line.isEmpty { continue }
            if line.hasPrefix("--> "), let format = pending {
                result[format] = String(line.dropFirst(4))
                pending = nil
            } else {
                pending = String(line)
            }
        }
        return result
    }()

    /// The format's specifiers outside quotes, in order (`%%` left out).
    var specifiers: [Character] {
        var result: [Character] = []
        var quote: Character?
        var characters = Array(format)[...]
        while let c = characters.popFirst() {
            if let q = quote {
                if c == "\\" { _ = characters.popFirst() } else if c == q { quote = nil }
                continue
            }
            if c == "'" || c == "\"" { quote = c; continue }
            guard c == "%" else { continue }
            while let next = characters.first, "-+ #0123456789.hlqLzjt".contains(next) { characters.removeFirst() }
            guard let conversion = characters.popFirst() else { break }
            if conversion != "%" { result.append(conversion) }
        }
        return result
    }

    /// An argument for each specifier: the recorded one where it fits, else
    /// a value of the kind the specifier takes.
    var filledArguments: [PredicateValue] {
        specifiers.enumerated().map { index, conversion in
            let recorded = index < arguments.count ? arguments[index] : nil
            switch conversion {
            case "K":
                if case .string(let key)? = recorded, !key.isEmpty, !key.split(separator: ".", omittingEmptySubsequences: false).contains(where: \.isEmpty) {
                    return .string(key)
                }
                return "key"
            case "d", "i", "o", "u", "x", "X", "c", "C":
                if case .int? = recorded { return recorded! }
                return 1
            case "f", "F", "e", "E", "g", "G", "a", "A":
                if case .double? = recorded { return recorded! }
                if case .int? = recorded { return recorded! }
                return 1.5
            case "s", "S":
                if case .string? = recorded { return recorded! }
                return "x"
            default:
                return recorded ?? "x"
            }
        }
    }
}

@Suite("Format strings from the wild")
struct WildCorpusTests {
    @Test func theCorpusIsThere() {
        #expect(Set(WildString.all.map(\.format)).count >= 300)
        #expect(WildString.all.allSatisfy { !$0.repository.isEmpty && !$0.path.isEmpty })
    }

    @Test("Parses, prints and reads back", arguments: WildString.all)
    func roundTrip(_ string: WildString) throws {
        let arguments = string.filledArguments
        if let reason = WildString.refused[string.format] {
            #expect(throws: PredicateSyntaxError.self, "refused by Apple's parser too: \(reason)") {
                try parse(string, arguments)
            }
            return
        }
        let printed = try parse(string, arguments)
        // A key given to %K that no name can spell (`fill-opacity`) prints as
        // given, and that text reads as something else: only a %K argument
        // can hold such a key.
        let spelledOnlyByK = string.filledArguments.compactMap { if case .string(let key) = $0, key.contains("-") { key } else { nil } }
        if !spelledOnlyByK.isEmpty, string.specifiers.contains("K") {
            // Each such key is printed as given, in full.
            for key in spelledOnlyByK { #expect(printed.text.contains(key), "\(key) in \(printed.text)") }
            return
        }
        let again = try parse(WildString(kind: string.kind, format: printed.text, arguments: [], repository: "",
                                         path: ""), [])
        #expect(again.tree == printed.tree, "printed as \(printed.text)")
    }

    /// The tree (as text of its dump, so predicates and expressions compare
    /// alike) and its printed form.
    func parse(_ string: WildString, _ arguments: [PredicateValue]) throws -> (tree: String, text: String) {
        if string.kind == "expression" {
            let tree = try PredicateParser.parseExpression(string.format, arguments: arguments)
            return ("\(tree.kind)", tree.description)
        }
        let tree = try PredicateParser.parse(string.format, arguments: arguments)
        return ("\(tree.kind)", tree.description)
    }

    /// Those with no arguments evaluate against a few plain values: true,
    /// false or a typed error, never a crash (a crash ends the test run).
    @Test("Evaluate without a crash", arguments: WildString.all.filter {
        $0.kind == "predicate" && $0.specifiers.isEmpty && WildString.refused[$0.format] == nil
    })
    func evaluates(_ string: WildString) throws {
        let predicate: FormatPredicate
        do {
            predicate = try FormatPredicate(format: string.format)
        } catch {
            // Refused when checked without a model (an unknown function, a
            // template's variables): a typed error, which is all that is asked.
            return
        }
        let values: [PredicateValue] = [.null, "text", 42, ["name": "Ann", "age": 41, "tags": ["a", "b"]], [1, 2, 3]]
        for value in values {
            _ = try? predicate.evaluate(with: value, substitutionVariables: [:])
        }
    }
}
