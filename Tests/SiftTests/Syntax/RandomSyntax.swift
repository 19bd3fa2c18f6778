// Random syntax trees for property tests. Every tree it makes keeps the
// documented invariants of the syntax tree (AND/OR with two or more operands,
// key paths that are not empty, names that are identifiers, function names
// that are not the special forms), and so must survive a print-parse round
// trip unchanged.

import Foundation
import Sift
import SiftDemo

struct RandomSyntax {
    var rng: SplitMix

    init(seed: UInt64) { rng = SplitMix(seed: seed) }

    /// Names, including reserved words (printed with `#`), words reserved only
    /// in some places, collection operators and non-ASCII names.
    static let names = [
        "age", "name", "salary", "department", "reports", "x", "_private", "a1", "size", "first", "last",
        "self", "in", "AND", "Any", "union", "minus", "cast", "subquery", "ternary", "function", "@count",
        "@sum", "@avg", "@distinctUnionOfObjects", "名前", "café", "uti",
    ]
    static let functionNames = ["sum", "count", "max", "uppercase", "now", "abs", "random", "bitwiseAnd", "frobnicate"]
    static let strings = [
        "", "a", "O'Brien", "Say \"Hi\"", "back\\slash", "tab\there", "new\nline", "nul\u{0}x", "%@", "%K", "*?%_",
        "Renée", "Rene\u{301}e", "Ångström", "😀", "\u{7F}", "\u{1B}[0m", "日本語",
    ]

    mutating func int(_ upper: Int) -> Int { Int.random(in: 0..<upper, using: &rng) }
    mutating func chance(_ percent: Int) -> Bool { int(100) < percent }
    mutating func pick<T>(_ values: [T]) -> T { values[int(values.count)] }

    mutating func name() -> String { pick(Self.names) }

    mutating func value() -> PredicateValue {
        switch int(16) {
        case 0: return .null
        case 1: return .bool(chance(50))
        case 2: return .int(pick([0, 1, -1, 42, Int64.max, Int64.min, -7, 1_000_000]))
        case 3: return .int(Int64.random(in: -1000...1000, using: &rng))
        case 4: return .double(pick([0.5, -0.5, 3.0, 1e16, -1e-7, .leastNonzeroMagnitude, .greatestFiniteMagnitude, -0.0, 0.1]))
        case 5: return .double(Double.random(in: -1e6...1e6, using: &rng))
        case 6, 7, 8: return .string(pick(Self.strings))
        case 9: return .date(Date(timeIntervalSinceReferenceDate: Double(int(1_000_000_000))))
        case 10: return .array([.int(1), .string("two"), .null])
        case 11: return .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!)
        case 12: return .data(Data([0, 1, 2, 255]))
        case 13: return .object(ObjectReference(entity: "Employee", id: Int64(int(200))))
        case 14: return .dictionary(["k": .int(1)])
        default: return .double(pick([.infinity, -.infinity]))
        }
    }

    mutating func keyPath() -> [String] { (0...int(3)).map { _ in name() } }

    mutating func expression(depth: Int) -> ExpressionSyntax {
        let leaf = depth <= 0 || chance(35)
        if leaf {
            switch int(5) {
            case 0, 1: return ExpressionSyntax(.keyPath(keyPath()))
            case 2: return ExpressionSyntax(.constant(value()))
            case 3: return ExpressionSyntax(.variable(pick(["x", "limit", "r", "名"])))
            default: return ExpressionSyntax(chance(50) ? .evaluatedObject : .constant(value()))
            }
        }
        let d = depth - 1
        switch int(14) {
        case 0: return ExpressionSyntax(.assignment(variable: "v", value: expression(depth: d)))
        case 1: return ExpressionSyntax(.member(expression(depth: d), keyPath()))
        case 2:
            let index: IndexSyntax = switch int(4) {
            case 0: .first
            case 1: .last
            case 2: .size
            default: .expression(expression(depth: d))
            }
            return ExpressionSyntax(.index(expression(depth: d), index))
        case 3: return ExpressionSyntax(.aggregate((0..<int(4)).map { _ in expression(depth: d) }))
        case 4: return ExpressionSyntax(.negate(expression(depth: d)))
        case 5, 6:
            return ExpressionSyntax(.binary(pick(BinaryOperator.allCases), expression(depth: d), expression(depth: d)))
        case 7:
            return ExpressionSyntax(.function(name: pick(Self.functionNames),
                                              arguments: (0..<int(3)).map { _ in expression(depth: d) }))
        case 8:
            return ExpressionSyntax(.functionCall(receiver: expression(depth: d), selector: pick(["now", "add:to:", "it's"]),
                                                  arguments: (0..<int(3)).map { _ in expression(depth: d) }))
        case 9:
            return ExpressionSyntax(.subquery(collection: expression(depth: d), variable: "r", predicate: predicate(depth: d)))
        case 10:
            return ExpressionSyntax(.ternary(predicate(depth: d), expression(depth: d), expression(depth: d)))
        case 11: return ExpressionSyntax(.cast(expression(depth: d), type: pick(["NSDate", "NSNumber", "NSString"])))
        case 12: return ExpressionSyntax(.index(ExpressionSyntax(.keyPath([pick(["first", "last", "size"])])),
                                                .expression(ExpressionSyntax(.keyPath([pick(["first", "last", "size"])])))))
        default: return ExpressionSyntax(.constant(value()))
        }
    }

    mutating func predicate(depth: Int) -> PredicateSyntax {
        let leaf = depth <= 0 || chance(30)
        if leaf {
            if chance(10) { return PredicateSyntax(.constant(chance(50))) }
            return comparison(depth: depth - 1)
        }
        let d = depth - 1
        switch int(5) {
        case 0: return PredicateSyntax(.not(predicate(depth: d)))
        case 1: return PredicateSyntax(.and((0..<(2 + int(3))).map { _ in predicate(depth: d) }))
        case 2: return PredicateSyntax(.or((0..<(2 + int(3))).map { _ in predicate(depth: d) }))
        default: return comparison(depth: d)
        }
    }

    mutating func comparison(depth: Int) -> PredicateSyntax {
        var options: ComparisonOptions = []
        for option in [ComparisonOptions.caseInsensitive, .diacriticInsensitive, .normalized, .localeSensitive]
        where chance(20) { options.insert(option) }
        let quantifier = pick(Quantifier.allCases)
        return PredicateSyntax(.comparison(ComparisonSyntax(
            expression(depth: depth), pick(ComparisonOperator.allCases), options: options, expression(depth: depth),
            quantifier: quantifier)))
    }
}
