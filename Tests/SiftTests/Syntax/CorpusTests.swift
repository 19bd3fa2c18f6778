// The conformance corpus through the front end: every predicate that is not a
// syntax error parses; every syntax error is reported at the right place.

import Foundation
import Sift
import Testing

@Suite("Conformance corpus (front end)")
struct CorpusTests {
    @Test func corpusIsComplete() {
        #expect(CorpusCase.conformance.count == 145)
        #expect(CorpusCase.parity.count == 38)
    }

    @Test("Parses", arguments: CorpusCase.all.filter {
        if case .error("syntax") = $0.expect { return false }
        return true
    })
    func parses(_ testCase: CorpusCase) throws {
        let tree = try PredicateParser.parse(testCase.predicate, arguments: testCase.args ?? [])
        // What it prints parses back to the same tree.
        let canonical = tree.canonicalFormat
        #expect(try PredicateParser.parse(canonical.format, arguments: canonical.arguments) == tree)
    }

    /// Where each syntax error of the corpus must point (line 1, this column).
    static let syntaxErrorColumns: [String: Int] = [
        "err-trailing-op": 6,        // age >|
        "err-trailing-and": 13,      // age > 30 AND|
        "err-unknown-op": 5,         // age |~= 30
        "err-unterminated": 9,       // name == |'abc
        "err-empty": 1,
        "err-double-op": 7,          // age > |> 30
        "err-bad-option": 17,        // name BEGINSWITH[|x] 'a'
        "err-question-token": 8,     // age == |?
        "err-missing-args": 7,       // age > |%@
        "err-extra-paren": 9,        // age > 30|)
        "err-subquery-no-var": 19,   // SUBQUERY(reports, |r, ...
    ]

    @Test("Syntax errors point at the problem", arguments: CorpusCase.all.filter {
        if case .error("syntax") = $0.expect { return true }
        return false
    })
    func syntaxError(_ testCase: CorpusCase) throws {
        let error = #expect(throws: PredicateSyntaxError.self) {
            try PredicateParser.parse(testCase.predicate, arguments: testCase.args ?? [])
        }
        let column = try #require(Self.syntaxErrorColumns[testCase.id], "no expected column for \(testCase.id)")
        #expect(error?.location == SourcePosition(line: 1, column: column), "\(error?.rendered() ?? "")")
    }
}
