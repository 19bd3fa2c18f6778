// The printer's law: parsing the canonical format of any tree gives back the
// same tree.

import Foundation
import PropertyBased
import Sift
import Testing

@Suite("Printer round trip")
struct RoundTripTests {
    @Test("parse(print(tree)) == tree for random trees")
    func randomTrees() async {
        await propertyCheck(count: 2000, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var random = RandomSyntax(seed: seed)
            let tree = random.predicate(depth: 5)
            let canonical = tree.canonicalFormat
            let parsed = Result { () throws(PredicateSyntaxError) in
                try PredicateParser.parse(canonical.format, arguments: canonical.arguments)
            }
            switch parsed {
            case .success(let again):
                #expect(again == tree, "printed as: \(canonical.format)\nreprinted: \(again.canonicalFormat.format)")
            case .failure(let error):
                Issue.record("printed form does not parse: \(canonical.format)\n\(error.rendered())")
            }
        }
    }

    @Test("Printing is stable: print(parse(print(t))) == print(t)")
    func stablePrinting() async {
        await propertyCheck(count: 300, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var random = RandomSyntax(seed: seed)
            let tree = random.predicate(depth: 4)
            let first = tree.canonicalFormat
            let again = try PredicateParser.parse(first.format, arguments: first.arguments).canonicalFormat
            #expect(again == first)
        }
    }

    @Test("Canonical forms", arguments: [
        ("a = 1 && b <> 2 || !(c =< 3)", "a == 1 AND b != 2 OR NOT (c <= 3)"),
        ("SOME x => 1", "ANY x >= 1"),
        ("a == YES OR b == no OR c == NIL", "a == TRUE OR b == FALSE OR c == nil"),
        ("(a == 1 OR b == 2) AND c == 3", "(a == 1 OR b == 2) AND c == 3"),
        ("a == 1 OR (b == 2 AND c == 3)", "a == 1 OR b == 2 AND c == 3"),
        ("(a == 1 AND b == 2) AND c == 3", "(a == 1 AND b == 2) AND c == 3"),
        ("a + (b + c) == a - (b - c)", "a + (b + c) == a - (b - c)"),
        ("(a + b) + c == (2 ** 3) ** 2", "a + b + c == (2 ** 3) ** 2"),
        ("2 ** 3 ** 2 == -2 ** 2", "2 ** 3 ** 2 == -2 ** 2"),
        ("-(5) == - 5", "-(5) == -5"),
        ("name ==[dc] 'x'", "name ==[cd] \"x\""),
        ("#size == 2 AND size == 3", "size == 2 AND size == 3"),
        ("#in == 1", "#in == 1"),
        ("a[#first] == a[FIRST]", "a[#first] == a[FIRST]"),
        ("(SELF.g)[0] == 2", "SELF.g[0] == 2"),
        ("(a).b == a.b", "(a).b == a.b"),
        ("0x1F == 0o17 AND 0b11 == 1.5e3", "31 == 15 AND 3 == 1500.0"),
        ("name == 'it''s'", "name == \"it\" \"s\""),
    ])
    func canonical(_ input: String, _ expected: String) throws {
        if expected.contains("\" \"") {
            // Two adjacent strings are not one: this must fail.
            #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse(input) }
            return
        }
        #expect(try PredicateParser.parse(input).description == expected)
    }

    @Test func nonLiteralConstantsBecomeArguments() throws {
        let date = Date(timeIntervalSinceReferenceDate: 700_000_000)
        let tree = try PredicateParser.parse("a > %@ AND b IN %@ AND c == %@", arguments: [.date(date), [1, 2], 3])
        #expect(tree.canonicalFormat.format == "a > %@ AND b IN %@ AND c == 3")
        #expect(tree.canonicalFormat.arguments == [.date(date), [1, 2]])
        #expect(tree.description == "a > CAST(700000000.0, \"NSDate\") AND b IN {1, 2} AND c == 3")
    }

    @Test func keyPathsThatAreNotNamesPrintAsK() throws {
        let tree = try PredicateParser.parse("%K == 1", arguments: ["first name"])
        #expect(tree.canonicalFormat == CanonicalFormat(format: "%K == 1", arguments: ["first name"]))
    }
}
