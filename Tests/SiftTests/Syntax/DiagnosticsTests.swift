// How errors are reported: typed, positioned, rendered for people.

import Foundation
import Sift
import Testing

@Suite("Diagnostics")
struct DiagnosticsTests {
    func error(_ text: String, _ arguments: [PredicateValue] = []) throws -> PredicateSyntaxError {
        try #require(throws: PredicateSyntaxError.self) { try PredicateParser.parse(text, arguments: arguments) }
    }

    @Test func rendersWithCaret() throws {
        #expect(try error("age >").rendered() == """
            error: expected an expression after '>'
             --> predicate:1:6
            1 | age >
              |      ^
            """)
    }

    @Test func caretCoversTheToken() throws {
        #expect(try error("age > 30 UNKNOWN").rendered(sourceName: "query.txt") == """
            error: unexpected 'UNKNOWN' after the end of the predicate
             --> query.txt:1:10
            1 | age > 30 UNKNOWN
              |          ^^^^^^^
            """)
    }

    @Test func predicatesFromAFileReportTheFileLine() throws {
        #expect(try error("age >").rendered(sourceName: "list.txt", firstLine: 12) == """
            error: expected an expression after '>'
              --> list.txt:12:6
            12 | age >
               |      ^
            """)
    }

    @Test func multiLinePredicatesReportTheLine() throws {
        let e = try error("age > 30 AND\n  name ==\n  OR x == 1")
        #expect(e.location == SourcePosition(line: 3, column: 3))
        #expect(e.sourceLine == "  OR x == 1")
        #expect(e.expected == "an expression after '=='")
        #expect(e.rendered().hasSuffix("3 |   OR x == 1\n  |   ^^"))
    }

    @Test func columnsCountCharactersNotBytes() throws {
        let e = try error("name == 'Renée' AND äge ~ 3")
        #expect(e.location == SourcePosition(line: 1, column: 25))
        #expect(e.range == SourceRange(26, 27))
        #expect(e.rendered().hasSuffix("  | " + String(repeating: " ", count: 24) + "^"))
    }

    @Test func errorsAreTypedAndDescribeThemselves() throws {
        let e = try error("age > %@")
        #expect(e.reason == .missingArgument(specifier: "%@", index: 0, given: 0))
        #expect(e.description == "1:7: error: format specifier '%@' needs argument 1, but only 0 were given")
        #expect((e as any Error).localizedDescription == e.description)
    }

    @Test func emptyAndBlankPredicates() throws {
        #expect(try error("").reason == .emptyPredicate)
        #expect(try error("  \n\t ").reason == .emptyPredicate)
    }

    @Test func reasonsSayWhatWasExpectedAndWhatWasFound() throws {
        #expect(try error("age >").reason == .missingExpression(after: "'>'", found: nil))
        #expect(try error("age > )").reason == .missingExpression(after: "'>'", found: "')'"))
        #expect(try error("a IN {1 'x'}").reason
            == .unclosedList(open: "{", close: "}", column: 6, found: #"string 'x'"#))
        #expect(try error("a == %d", [1.5]).reason == .wrongArgumentKind(specifier: "%d", expected: .integer, found: "a number"))
        #expect(try error("a == CAST(1, 2)").reason == .castTypeExpected)
        // The lexer's expectations are not in its messages, only in `expected`.
        #expect(try error("a : b").expected == "':='")
        #expect(try error("a == 1e").expected == "digits after the exponent")
        #expect(try error("a == 1e").message == "invalid number '1e'")
    }

    /// Every message the parser and lexer give is written in the catalog
    /// (Diagnostics.swift): the string literals of Parser.swift and Lexer.swift
    /// are spellings of tokens and keywords, never words of a message.
    @Test func parserAndLexerSpellNoMessages() throws {
        // A word and a space: "a predicate", "string \(…)".
        let words = try NSRegularExpression(pattern: "[A-Za-z]{2,} | [A-Za-z]{2,}")
        var inline: [String] = []
        for file in ["Parser.swift", "Lexer.swift"] {
            let lines = try Fixtures.repositoryFile("Sources/SiftSyntax/" + file)
                .split(separator: "\n", omittingEmptySubsequences: false)
            #expect(lines.count > 500, "\(file) is not where it was")
            for (number, line) in lines.enumerated() {
                for literal in Self.stringLiterals(in: line)
                where words.firstMatch(in: literal, range: NSRange(literal.startIndex..., in: literal)) != nil {
                    inline.append("\(file):\(number + 1): \"\(literal)\"")
                }
            }
        }
        #expect(inline == [], "messages belong in SyntaxErrorReason (Diagnostics.swift)")
    }

    /// The string literals on a line of Swift, comments left out: enough for
    /// the parser and lexer, which hold no multi-line or raw literals.
    static func stringLiterals(in line: Substring) -> [String] {
        var literals: [String] = []
        var current: String?
        var escaped = false
        var previous: Character = " "
        for c in line {
            if var text = current {
                if escaped {
                    escaped = false
                } else if c == "\\" {
                    escaped = true
                } else if c == "\"" {
                    literals.append(text)
                    current = nil
                    previous = c
                    continue
                }
                text.append(c)
                current = text
            } else if c == "\"" {
                current = ""
            } else if c == "/", previous == "/" {
                break
            }
            previous = c
        }
        return literals
    }
}

@Suite("Format arguments")
struct FormatArgumentTests {
    @Test func specifiersAreFilledInOrder() throws {
        let tree = try PredicateParser.parse("%K == %@ AND age > %d AND salary < %f AND name == %s",
                                             arguments: ["department.name", "Legal", 30, 1.5, "x"])
        #expect(tree.description == #"department.name == "Legal" AND age > 30 AND salary < 1.5 AND name == "x""#)
    }

    @Test func convertibleArguments() throws {
        let date = Date(timeIntervalSinceReferenceDate: 0)
        let id = UUID()
        let tree = try PredicateParser.parse("a == %@ AND b == %@ AND c == %@ AND d IN %@ AND e == %@ AND f == %@",
                                             Int16(3), date, id, [1, 2], Optional<String>.none, ObjectReference(entity: "E", id: 7))
        #expect(tree.canonicalFormat.arguments == [.date(date), .uuid(id), [1, 2], .object(ObjectReference(entity: "E", id: 7))])
        #expect(tree.canonicalFormat.format == "a == 3 AND b == %@ AND c == %@ AND d IN %@ AND e == nil AND f == %@")
    }

    @Test("printf-style specifiers", arguments: [
        ("%d", PredicateValue.int(3), "3"), ("%i", 3, "3"), ("%ld", 3, "3"), ("%lld", 3, "3"), ("%lu", 3, "3"),
        ("%hd", 3, "3"), ("%qd", 3, "3"), ("%u", 3, "3"), ("%x", 3, "3"), ("%o", 3, "3"), ("%d", true, "1"),
        ("%f", 1.5, "1.5"), ("%lf", 2, "2.0"), ("%e", 1.5, "1.5"), ("%g", 1.5, "1.5"), ("%5.2f", 1.5, "1.5"),
        ("%s", "x", "\"x\""), ("%c", "y", "\"y\""), ("%c", 65, "\"A\""), ("%@", nil, "nil"),
    ] as [(String, PredicateValue, String)])
    func printfSpecifiers(_ specifier: String, _ argument: PredicateValue, _ printed: String) throws {
        #expect(try PredicateParser.parse("a == \(specifier)", arguments: [argument]).description == "a == \(printed)")
    }

    @Test("Wrong kinds point at the specifier", arguments: [
        ("%K == 1", PredicateValue.int(3), "format specifier '%K' needs a key path string, but its argument is a number", 1),
        ("a == %d", "x", "format specifier '%d' needs an integer, but its argument is a string", 6),
        ("a == %f", "x", "format specifier '%f' needs a number, but its argument is a string", 6),
        ("a == %s", 1, "format specifier '%s' needs a string, but its argument is a number", 6),
        ("%K == 1", "a..b", "'%K' needs a key path such as \"department.name\", but its argument is \"a..b\"", 1),
    ] as [(String, PredicateValue, String, Int)])
    func wrongKinds(_ text: String, _ argument: PredicateValue, _ message: String, _ column: Int) throws {
        let e = try #require(throws: PredicateSyntaxError.self) { try PredicateParser.parse(text, arguments: [argument]) }
        #expect(e.message == message)
        #expect(e.location.column == column)
    }

    @Test func tooManyArguments() throws {
        let e = try #require(throws: PredicateSyntaxError.self) {
            try PredicateParser.parse("a == %@", arguments: [1, 2])
        }
        #expect(e.reason == .unusedArguments(used: 1, given: 2))
    }

    @Test func tooFewArgumentsPointAtTheFirstUnfilledSpecifier() throws {
        let e = try #require(throws: PredicateSyntaxError.self) {
            try PredicateParser.parse("a == %@ AND b == %@", arguments: [1])
        }
        #expect(e.location.column == 18)
        #expect(e.message == "format specifier '%@' needs argument 2, but only 1 was given")
    }

    @Test func specifiersInsideQuotesAreLiteral() throws {
        let tree = try PredicateParser.parse("name == '%@' AND nick == \"%K\"")
        #expect(tree == PredicateSyntax(.and([
            PredicateSyntax(.comparison(ComparisonSyntax(ExpressionSyntax(.keyPath(["name"])), .equalTo,
                                                         ExpressionSyntax(.constant("%@"))))),
            PredicateSyntax(.comparison(ComparisonSyntax(ExpressionSyntax(.keyPath(["nick"])), .equalTo,
                                                         ExpressionSyntax(.constant("%K"))))),
        ])))
    }

    @Test func percentPercentIsAPercentSign() throws {
        #expect(try PredicateParser.parse("a == %%").description == #"a == "%""#)
    }

    @Test func keyPathArgumentsContinueKeyPaths() throws {
        let tree = try PredicateParser.parse("%K.%K.@count > 1", arguments: ["a.b", "c"])
        #expect(tree.description == "a.b.c.@count > 1")
    }

    @Test func backtrackingDoesNotConsumeArgumentsTwice() throws {
        let tree = try PredicateParser.parse("(%@ + %@) > %@", arguments: [1, 2, 3])
        #expect(tree.description == "1 + 2 > 3")
    }

    @Test func jsonArguments() {
        #expect(PredicateValue(commandLineArgument: "30") == .int(30))
        #expect(PredicateValue(commandLineArgument: "30.5") == .double(30.5))
        #expect(PredicateValue(commandLineArgument: "true") == .bool(true))
        #expect(PredicateValue(commandLineArgument: "null") == .null)
        #expect(PredicateValue(commandLineArgument: "[1, \"a\"]") == [1, "a"])
        #expect(PredicateValue(commandLineArgument: "\"30\"") == "30")
        #expect(PredicateValue(commandLineArgument: "Sales") == "Sales")
        #expect(PredicateValue(commandLineArgument: #"{"date": 700000000}"#)
            == .date(Date(timeIntervalSinceReferenceDate: 700_000_000)))
        #expect(PredicateValue(commandLineArgument: #"{"object": {"entity": "Employee", "id": 101}}"#)
            == .object(ObjectReference(entity: "Employee", id: 101)))
        #expect(PredicateValue(commandLineArgument: #"{"k": 1}"#) == ["k": 1])
    }
}

@Suite("Substitution variables")
struct VariableTests {
    @Test func freeVariablesAreListed() throws {
        let tree = try PredicateParser.parse(
            "age > $min AND SUBQUERY(reports, $r, $r.age > $max).@count > 0 AND ($x := 1) == $y")
        #expect(tree.variables == ["min", "max", "y"])
    }

    @Test func substitutionMakesANewTree() throws {
        let template = try PredicateParser.parse("age > $min AND SUBQUERY(reports, $r, $r.age < $min).@count > $r")
        let bound = template.substituting(["min": 40, "r": 2])
        #expect(bound.description == "age > 40 AND SUBQUERY(reports, $r, $r.age < 40).@count > 2")
        #expect(bound.variables.isEmpty)
        #expect(template.variables == ["min", "r"])
    }

    @Test func unnamedVariablesStay() throws {
        let bound = try PredicateParser.parse("a == $a AND b == $b").substituting(["a": "x"])
        #expect(bound.description == #"a == "x" AND b == $b"#)
        #expect(bound.variables == ["b"])
    }
}
