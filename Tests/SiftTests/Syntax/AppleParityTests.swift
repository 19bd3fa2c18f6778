// Apple parity in the front end (issue 29): functions written by their
// NSExpression selector, bitwise operators, escapes Apple reads by dropping
// the backslash, options on numbers — accepted as Apple accepts them, with a
// warning where the text is almost always a mistake.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Apple parity: syntax and warnings")
struct AppleParityTests {
    @Test(arguments: [
        ("sum:(salary) > 1", "sum(salary) > 1"),
        ("count:(reports) == 0", "count(reports) == 0"),
        ("max:(reports.age) > min:(reports.age)", "max(reports.age) > min(reports.age)"),
        ("bitwiseAnd:with:(flags, 4) != 0", "bitwiseAnd(flags, 4) != 0"),
        ("modulus:by:(age, 7) == 2", "modulus(age, 7) == 2"),
        ("add:to:(age, 1) > 2", "age + 1 > 2"),
        ("from:subtract:(age, 1) > 2", "age - 1 > 2"),
        ("multiply:by:(age, 2) > divide:by:(salary, 12)", "age * 2 > salary / 12"),
        ("raise:toPower:(2, 10) == 1024", "2 ** 10 == 1024"),
        ("castObject:toType:(age, 'NSString') == '30'", "CAST(age, 'NSString') == '30'"),
        ("objectFrom:withIndex:(tags, 0) == 1", "tags[0] == 1"),
        ("noindex:(age) == 1", "age == 1"),
        ("(flags & 4) != 0", "bitwiseAnd(flags, 4) != 0"),
        ("flags | 1 == 3", "bitwiseOr(flags, 1) == 3"),
        ("flags ^ 2 + 1 == 3", "bitwiseXor(flags, 2 + 1) == 3"),
    ])
    func selectorsReadAsTheShortForms(_ written: String, _ short: String) throws {
        #expect(try PredicateParser.parse(written) == PredicateParser.parse(short))
    }

    @Test func anExpressionDescriptionTakesTheSelectorForm() throws {
        let description = try ExpressionDescription(parsing: "sum:(salary) as total")
        #expect(description.name == "total")
        #expect(try PredicateParser.parseExpression("sum:(salary)") == PredicateParser.parseExpression("sum(salary)"))
    }

    @Test func aSelectorWithTheWrongArgumentCountSaysSo() {
        let error = #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse("add:to:(1) > 0") }
        #expect(error?.message == "'add:to:' takes 2 arguments, but 1 was given")
        #expect(error?.location.column == 1)
        // `:=` is still assignment, and a lone ':' still an error.
        #expect(throws: PredicateSyntaxError.self) { try PredicateParser.parse("a : b == 1") }
    }

    @Test func anUnknownEscapeKeepsItsCharacterWithAWarning() throws {
        var warnings: [PredicateWarning] = []
        let tree = try PredicateParser.parse(#"name MATCHES '\d+' AND code == 'a\?'"#, warnings: &warnings)
        #expect(tree == (try PredicateParser.parse("name MATCHES 'd+' AND code == 'a?'")))
        #expect(warnings.count == 2)
        #expect(warnings.first?.reason == .unknownEscape(#"\d"#))
        #expect(warnings.first?.range == SourceRange(14, 16))
        let rendered = warnings[0].rendered(in: #"name MATCHES '\d+' AND code == 'a\?'"#)
        #expect(rendered.hasPrefix("warning: unknown escape '\\d' reads as 'd'"))
        #expect(rendered.contains("^^"))
        // Known escapes give none.
        var none: [PredicateWarning] = []
        _ = try PredicateParser.parse(#"name == 'a\tb\\c'"#, warnings: &none)
        #expect(none.isEmpty)
    }

    @Test func optionsOnANumberChangeNothingWithAWarning() throws {
        var warnings: [PredicateWarning] = []
        let compiler = PredicateCompiler(model: Company.model)
        let bound = try compiler.bind("age ==[c] 58", entity: "Employee", warnings: &warnings)
        #expect(bound == (try compiler.bind("age == 58", entity: "Employee")))
        #expect(warnings.map(\.reason) == [.optionsIgnored(options: "[c]", type: "an integer")])
        let plain = try FormatPredicate(format: "age IN[cd] {41, 42}")
        #expect(plain.warnings.count == 1)
        #expect(try plain.evaluate(with: ["age": 41] as [String: Any]))
        #expect(try FormatPredicate(format: "name ==[c] 'ANN'").warnings.isEmpty)
    }

    @Test func checkPrintsWarningsAndStillSucceeds() throws {
        let model = CheckAndBatchTests.fixture("company.json")
        let result = try runSift(["check", "--model", model, "--entity", "Employee", #"age ==[c] 41 AND name == 'a\q'"#])
        #expect(result.status == 0)
        #expect(result.error.contains("warning: the options [c] apply to strings; on an integer they change nothing"))
        #expect(result.error.contains("warning: unknown escape '\\q'"))
    }

    @Test func aDictionaryArgumentIsRefusedAgainstAModelButInIN() throws {
        let compiler = PredicateCompiler(model: Company.model)
        #expect(throws: PredicateCompileError.self) {
            try compiler.bind("nickname >= %@", arguments: [.dictionary(["k": 1])], entity: "Employee")
        }
        #expect(throws: PredicateCompileError.self) {
            try compiler.bind("ALL reports.salary > (%@ * tags.@count)", arguments: [.dictionary(["k": 1])], entity: "Employee")
        }
        let names = try compiler.bind("name IN %@", arguments: [.dictionary(["a": "Sales"])], entity: "Department")
        #expect(try Company.cache.nodes(of: "Department", matching: names).count == 1)
    }

    @Test func integersCompareExactlyWithDoubles() {
        #expect(ValueComparison.order(.int(9_223_372_036_854_775_807), .double(9_223_372_036_854_775_808)) == -1)
        #expect(ValueComparison.order(.double(9_223_372_036_854_775_808), .int(.max)) == 1)
        #expect(!ValueComparison.equal(.int(9_007_199_254_740_993), .double(9_007_199_254_740_992)))
        #expect(ValueComparison.equal(.int(3), .double(3)))
        #expect(ValueComparison.order(.int(-3), .double(-3.5)) == 1)
        #expect(Arithmetic.apply(.divide, .int(.min), .int(-1)) == .double(9_223_372_036_854_775_808))
        #expect(Arithmetic.apply(.divide, .int(-7), .int(2)) == .int(-3))
    }

    /// A constant no value of the other side's type equals is compared with
    /// its nearest neighbours instead, so that PostgreSQL, which compares a
    /// bigint with a float8 as floats, answers as memory and SQLite do.
    @Test(arguments: [
        ("(isManager + 9223372036854775808) == 9223372036854775807", "FALSEPREDICATE"),
        ("(isManager + 9223372036854775808) != 9223372036854775807", "TRUEPREDICATE"),
        ("age < 9223372036854775808.0", "age != nil"),
        ("age > 9223372036854775808.0", "FALSEPREDICATE"),
        ("age >= -1e19", "age != nil"),
        ("salary < 9007199254740993", "salary <= 9007199254740992.0"),
        ("9007199254740993 < salary", "salary >= 9007199254740994.0"),
    ])
    func integersAndDoublesCompareExactlyOnEveryBackend(_ written: String, _ meaning: String) throws {
        let compiler = PredicateCompiler(model: Company.model, optimizer: nil)
        #expect(try compiler.bind(written, entity: "Employee") == compiler.bind(meaning, entity: "Employee"))
    }

    @Test func aDateAsAStringIsNSDatesDescription() {
        #expect(Functions.dateDescription(0) == "2001-01-01 00:00:00 +0000")
        #expect(Functions.dateDescription(-0.5) == "2000-12-31 23:59:59 +0000")
        #expect(Functions.dateDescription(700_000_000) == "2023-03-08 20:26:40 +0000")
        #expect(Functions.dateDescription(-63_113_904_001) == nil)
        #expect(Functions.dateDescription(.infinity) == nil)
    }
}
