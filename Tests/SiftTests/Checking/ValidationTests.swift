// Every validation error the binder reports, each at the construct at fault
// and with advice where there is some.

import Foundation
import Sift
import Testing

struct ValidationCase: Sendable, CustomTestStringConvertible {
    var predicate: String
    var entity = "Employee"
    var arguments: [PredicateValue] = []
    var reason: ValidationErrorReason
    /// The text the error's range must cover.
    var at: String
    var testDescription: String { predicate }
}

@Suite("Validation")
struct ValidationTests {
    static let cases: [ValidationCase] = [
        .init(predicate: "agee > 30", reason: .unknownKey("agee", entity: "Employee", suggestion: "age"), at: "agee"),
        .init(predicate: "department.nam == 'x'", reason: .unknownKey("nam", entity: "Department", suggestion: "name"),
              at: "department.nam"),
        .init(predicate: "zzzzzz == 1", reason: .unknownKey("zzzzzz", entity: "Employee", suggestion: nil), at: "zzzzzz"),
        .init(predicate: "age.value > 3", reason: .keyPathContinuesPastAttribute(attribute: "age", key: "value"),
              at: "age.value"),
        .init(predicate: "reports.age > 60", reason: .collectionNeedsQuantifier("reports.age"), at: "reports.age"),
        .init(predicate: "tags == 'x'", reason: .collectionNeedsQuantifier("tags"), at: "tags"),
        .init(predicate: "ANY age > 3", reason: .quantifierNeedsCollection(.any), at: "age"),
        .init(predicate: "name > 3", reason: .incomparableTypes(.string, .greaterThan, .integer), at: "name > 3"),
        .init(predicate: "age == 'x'", reason: .incomparableTypes(.integer, .equalTo, .string), at: "age == 'x'"),
        .init(predicate: "startDate < 5", reason: .incomparableTypes(.date, .lessThan, .integer), at: "startDate < 5"),
        .init(predicate: "department == 'Sales'", reason: .incomparableTypes(.object("Department"), .equalTo, .string),
              at: "department == 'Sales'"),
        .init(predicate: "manager == %@", arguments: [.object(ObjectReference(entity: "Tag", id: 1))],
              reason: .incomparableTypes(.object("Employee"), .equalTo, .object("Tag")), at: "manager == %@"),
        .init(predicate: "age LIKE '3*'", reason: .operatorNeedsStrings(.like, found: .integer), at: "age LIKE '3*'"),
        .init(predicate: "salary MATCHES '1.*'", reason: .operatorNeedsStrings(.matches, found: .double),
              at: "salary MATCHES '1.*'"),
        .init(predicate: "name MATCHES '(unclosed'",
              reason: .invalidRegularExpression(pattern: "(unclosed", reason: ""), at: "'(unclosed'"),
        .init(predicate: "age BETWEEN {30}", reason: .betweenNeedsTwoBounds(found: 1), at: "{30}"),
        .init(predicate: "age BETWEEN %@", arguments: [[1, 2, 3]], reason: .betweenNeedsTwoBounds(found: 3), at: "%@"),
        .init(predicate: "age BETWEEN 3", reason: .betweenNeedsTwoBounds(found: nil), at: "3"),
        .init(predicate: "employees.@sum.name > 3", entity: "Department",
              reason: .aggregateNeedsNumbers("@sum", found: .string), at: "employees.@sum.name"),
        .init(predicate: "employees.@avg.startDate > 3", entity: "Department",
              reason: .aggregateNeedsNumbers("@avg", found: .date), at: "employees.@avg.startDate"),
        .init(predicate: "name.@count > 3", reason: .aggregateNeedsCollection("@count"), at: "name.@count"),
        .init(predicate: "reports.@median.age > 3", reason: .unknownCollectionOperator("@median"), at: "reports.@median.age"),
        .init(predicate: "frobnicate(age) > 3", reason: .unknownFunction("frobnicate", suggestion: nil), at: "frobnicate(age)"),
        .init(predicate: "uppercse(name) == 'X'", reason: .unknownFunction("uppercse", suggestion: "uppercase"),
              at: "uppercse(name)"),
        .init(predicate: "floor(age, 2) == 3", reason: .wrongArgumentCount(function: "floor", expected: "one argument", found: 2),
              at: "floor(age, 2)"),
        .init(predicate: "uppercase(age) == 'X'", reason: .wrongArgumentType(function: "uppercase", expected: "a string", found: .integer),
              at: "uppercase(age)"),
        .init(predicate: "name + 1 > 3", reason: .arithmeticNeedsNumbers(.add, .string, .integer), at: "name + 1"),
        .init(predicate: "age > $limit", reason: .unboundVariable("limit"), at: "$limit"),
        .init(predicate: "SUBQUERY(name, $x, $x == 'a').@count > 0", reason: .subqueryNeedsObjects(found: .string), at: "name"),
        .init(predicate: "CAST(age, 'NSPoint') > 0", reason: .unsupportedCast("NSPoint"), at: "CAST(age, 'NSPoint')"),
        .init(predicate: "name UTI-CONFORMS-TO 'public.text'",
              reason: .unsupported("UTI-CONFORMS-TO (there are no uniform type identifiers on Linux)"),
              at: "name UTI-CONFORMS-TO 'public.text'"),
        .init(predicate: "reports[FIRST].age > 3", reason: .unsupported("indexing a to-many relationship (its members have no order)"),
              at: "reports[FIRST]"),
        .init(predicate: "FUNCTION(SELF, 'foo') == 1",
              reason: .unsupported("FUNCTION(…) calling 'foo', which is not a registered function"),
              at: "FUNCTION(SELF, 'foo')"),
        .init(predicate: "self == %@", arguments: [.object(ObjectReference(entity: "Nope", id: 1))],
              reason: .unknownEntity("Nope"), at: "%@"),
    ]

    @Test("Validation errors", arguments: cases)
    func validation(_ c: ValidationCase) throws {
        let error = try #require(throws: PredicateCompileError.self) {
            try PredicateCompiler(model: Company.model).bind(c.predicate, arguments: c.arguments, entity: c.entity)
        }
        guard case .validation(let v) = error else {
            Issue.record("expected a validation error, got \(error)")
            return
        }
        if case .invalidRegularExpression(let pattern, _) = v.reason {
            #expect(pattern == "(unclosed")
        } else {
            #expect(v.reason == c.reason)
        }
        let utf8 = Array(c.predicate.utf8)
        let covered = String(decoding: utf8[v.range.lowerBound..<v.range.upperBound], as: UTF8.self)
        #expect(covered == c.at)
        #expect(!v.rendered(in: c.predicate).isEmpty)
    }

    @Test func hintsSayHowToFix() throws {
        func hint(_ text: String) throws -> String? {
            do {
                _ = try PredicateCompiler(model: Company.model).bind(text, entity: "Employee")
                return nil
            } catch {
                guard case .validation(let v) = error else { return nil }
                return v.hint
            }
        }
        #expect(try hint("agee > 3") == "did you mean 'age'?")
        #expect(try hint("reports.age > 3")?.contains("ANY reports.age") == true)
        #expect(try hint("startDate < 5")?.contains("CAST(") == true)
        #expect(try hint("5.5 < startDate")?.contains("CAST(") == true)
        // Issue 54: a string against a number spoke of dates.
        #expect(try hint("name > 3") == "quote the number to compare strings ('3'), or compare a number attribute")
        #expect(try hint("age == 'x'")?.contains("CAST(") == false)
        #expect(try hint("age > $min")?.contains("substituting") == true)
    }

    @Test func unknownEntity() {
        #expect(throws: PredicateCompileError.self) {
            try PredicateCompiler(model: Company.model).bind("a == 1", entity: "Nope")
        }
    }

    @Test func boundTreesCarryTypesAndNoText() throws {
        let unoptimized = PredicateCompiler(model: Company.model, optimizer: nil)
        let bound = try unoptimized.bind(
            "ANY reports.age > 60 AND department.name == %@", arguments: ["Sales"], entity: "Employee")
        guard case .and(let parts) = bound, case .comparison(let any) = parts[0], case .comparison(let eq) = parts[1] else {
            Issue.record("unexpected shape: \(bound)")
            return
        }
        #expect(any.quantifier == .any)
        #expect(any.left.type == .collection(.integer))
        #expect(eq.left.type == .string)
        #expect(eq.right == .constant("Sales", type: .string))
        // Hashable: binding twice gives equal trees.
        let again = try unoptimized.bind(
            "ANY reports.age > 60 AND department.name == %@", arguments: ["Sales"], entity: "Employee")
        #expect(Set([bound, again]).count == 1)
    }

    @Test func variablesBindToConstants() throws {
        let bound = try PredicateCompiler(model: Company.model).bind("age > $limit", entity: "Employee",
                                                                   variables: ["limit": 40])
        guard case .comparison(let c) = bound else { return }
        #expect(c.right == .constant(40, type: .integer))
    }
}
