// No input crashes the parser: random bytes, invalid UTF-8, mutations of valid
// predicates, huge inputs and hostile nesting all end in a tree or a typed error.

import Foundation
import PropertyBased
import Sift
import SiftDemo
import Testing

@Suite("Bad input")
struct BadInputTests {
    /// Parses and, on failure, checks the error is well formed.
    func survive(_ text: String) {
        do {
            let tree = try PredicateParser.parse(text)
            _ = tree.canonicalFormat
        } catch {
            #expect(error.range.lowerBound >= 0 && error.range.upperBound <= text.utf8.count)
            #expect(error.location.line >= 1 && error.location.column >= 1)
            #expect(!error.rendered().isEmpty)
        }
    }

    @Test func randomBytes() async {
        await propertyCheck(count: 1000, input: Gen<UInt8>.value(in: 0...255).array(of: 0...80)) { bytes in
            // Invalid UTF-8 becomes U+FFFD, as it does for any String.
            survive(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func randomPrintableASCII() async {
        await propertyCheck(count: 1000, input: Gen<UInt8>.value(in: 32...126).array(of: 0...60)) { bytes in
            survive(String(decoding: bytes, as: UTF8.self))
        }
    }

    @Test func mutatedCorpusInputs() async {
        let sources = GrammarCorpus.valid + CorpusCase.all.map(\.predicate)
        let alphabet = Array("()[]{}'\"\\$%@#.,=<>!&|*+-/ 0x9eANDORNOTSUBQUERY".utf8)
        await propertyCheck(count: 3000, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var rng = SplitMix(seed: seed)
            var bytes = Array(sources[Int(rng.next() % UInt64(sources.count))].utf8)
            for _ in 0...(rng.next() % 4) {
                let position = bytes.isEmpty ? 0 : Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 3 {
                case 0 where !bytes.isEmpty: bytes.remove(at: position)
                case 1: bytes.insert(alphabet[Int(rng.next() % UInt64(alphabet.count))], at: position)
                default: if !bytes.isEmpty { bytes[position] = alphabet[Int(rng.next() % UInt64(alphabet.count))] }
                }
            }
            survive(String(decoding: bytes, as: UTF8.self))
        }
    }

    /// Hostile nesting, built from a short description so test output stays short.
    struct Nesting: Sendable, CustomTestStringConvertible {
        var prefix: String
        var repeated: String
        var suffix: String
        var closing = ""
        /// A flat chain: refused for its length, not its depth.
        var isChain = false
        var testDescription: String { "\(prefix)(\(repeated))×60000\(suffix)" }
        var text: String {
            prefix + String(repeating: repeated, count: 60_000) + suffix + String(repeating: closing, count: 60_000)
        }
    }

    @Test("Deep nesting gives an error, not a stack overflow", arguments: [
        Nesting(prefix: "", repeated: "(", suffix: "a == 1", closing: ")"),
        Nesting(prefix: "", repeated: "(", suffix: ""),
        Nesting(prefix: "", repeated: "NOT ", suffix: "a == 1"),
        Nesting(prefix: "", repeated: "!", suffix: "a == 1"),
        Nesting(prefix: "a == ", repeated: "-", suffix: "1"),
        Nesting(prefix: "a == ", repeated: "{", suffix: ""),
        Nesting(prefix: "a == ", repeated: "f(", suffix: ""),
        Nesting(prefix: "a == ", repeated: "2 ** ", suffix: "2"),
        Nesting(prefix: "a == ", repeated: "1 + ", suffix: "1", isChain: true),
        Nesting(prefix: "a == ", repeated: "1 * ", suffix: "1", isChain: true),
        Nesting(prefix: "a == ", repeated: "a UNION ", suffix: "a", isChain: true),
        Nesting(prefix: "a == ", repeated: "$x := ", suffix: "1"),
        Nesting(prefix: "a == ", repeated: "a[", suffix: ""),
        Nesting(prefix: "a == ", repeated: "SUBQUERY(a, $x, ", suffix: ""),
        Nesting(prefix: "a == ", repeated: "TERNARY(", suffix: ""),
        Nesting(prefix: "a == ", repeated: "(", suffix: "1", closing: ")"),
    ])
    func deepNesting(_ nesting: Nesting) throws {
        let e = try #require(throws: PredicateSyntaxError.self) { try PredicateParser.parse(nesting.text) }
        let limits = PredicateLimits.standard
        #expect(e.reason == (nesting.isChain ? .chainTooLong(limit: limits.maximumChain)
                                             : .nestingTooDeep(limit: limits.maximumDepth)))
    }

    @Test func nestingUpToTheLimitParses() throws {
        let depth = PredicateLimits.standard.maximumDepth - 1
        let text = String(repeating: "(", count: depth) + "a == 1" + String(repeating: ")", count: depth)
        #expect(try PredicateParser.parse(text).description == "a == 1")
    }

    @Test func longChainsOfAndOrAreFlat() throws {
        let text = (0..<20_000).map { "a == \($0)" }.joined(separator: " OR ")
        guard case .or(let operands) = try PredicateParser.parse(text).kind else {
            Issue.record("expected an OR")
            return
        }
        #expect(operands.count == 20_000)
    }

    @Test func hugeStringsAndUnterminatedOnes() throws {
        let big = String(repeating: "x", count: 1_000_000)
        #expect(try PredicateParser.parse("name == '\(big)'").description.count == 1_000_010)
        let e = try #require(throws: PredicateSyntaxError.self) { try PredicateParser.parse("name == '\(big)") }
        #expect(e.reason == .unterminatedString)
        #expect(e.location == SourcePosition(line: 1, column: 9))
    }
}
