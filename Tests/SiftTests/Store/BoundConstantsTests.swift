// Every constant reaches SQLite as a bound parameter, never as SQL text.
//
// The law tested: the SQL text of a predicate does not depend on the values
// of its constants. Each predicate is lowered twice, once as written and once
// with every number and string literal changed (numbers cubed, strings
// lengthened: their order, their equalities, their emptiness and the numbers
// 0, 1 and -1 stay as they were, so the optimizer rewrites both alike); the
// two SQL texts must be the same, and the only quoted text SQL may hold is
// Sift's own ('', '[', '[[]' and the names of built-in functions).

import Foundation
import Sift
import SiftStore
import Testing

enum ConstantPerturbation {
    /// Strings that name something rather than hold a value: CAST's types.
    static let names: Set<String> = ["NSDate", "NSNumber", "NSString", "Date", "Number", "String", "NSDecimalNumber"]

    /// `text` with its literals changed: numbers cubed (a change that keeps
    /// their order and leaves 0 and 1 alone), non-empty strings with "q"
    /// appended.
    static func perturb(_ text: String) -> String {
        let chars = Array(text.unicodeScalars)
        var out = String.UnicodeScalarView()
        var i = 0
        func isNameScalar(_ c: Unicode.Scalar) -> Bool {
            c.properties.isAlphabetic || c == "_" || c == "$" || c == "@" || c == "#" || ("0"..."9").contains(c)
        }
        while i < chars.count {
            let c = chars[i]
            if c == "\"" || c == "'" {
                // A string literal: copy to its closing quote, honouring escapes.
                var j = i + 1
                var content = String.UnicodeScalarView()
                while j < chars.count, chars[j] != c {
                    if chars[j] == "\\", j + 1 < chars.count { content.append(chars[j]); j += 1 }
                    content.append(chars[j])
                    j += 1
                }
                out.append(c)
                out.append(contentsOf: content)
                let value = String(content)
                if !value.isEmpty, !names.contains(value), !value.hasSuffix(":") { out.append("q") }
                if j < chars.count { out.append(c) }
                i = j + 1
                continue
            }
            let previous = i > 0 ? chars[i - 1] : " "
            if ("0"..."9").contains(c), !isNameScalar(previous), previous != "." {
                var j = i
                while j < chars.count, ("0"..."9").contains(chars[j]) || chars[j] == "." { j += 1 }
                let literal = String(String.UnicodeScalarView(chars[i..<j]))
                let next = j < chars.count ? chars[j] : " "
                if isNameScalar(next) || literal.count > 15 || literal.hasSuffix(".") {
                    out.append(contentsOf: literal.unicodeScalars)   // 0x1F, 1e5, a huge number: left alone
                } else if let n = Int64(literal), n < 2_000_000 {
                    out.append(contentsOf: String(n * n * n).unicodeScalars)
                } else if let d = Double(literal) {
                    out.append(contentsOf: String(d * d * d).unicodeScalars)
                } else {
                    out.append(contentsOf: literal.unicodeScalars)
                }
                i = j
                continue
            }
            out.append(c)
            i += 1
        }
        return String(out)
    }

    /// The quoted texts of an SQL statement ('…'): identifiers ("…") and the
    /// names of built-in functions (`sift_call('floor', …)`) left out.
    static func quotedTexts(_ sql: String) -> [String] {
        let sql = sql.replacing(/sift_call\('[A-Za-z:]+'/, with: "sift_call(")
        var result: [String] = []
        var current: String?
        var identifier = false
        for c in sql {
            if identifier {
                if c == "\"" { identifier = false }
            } else if current != nil {
                if c == "'" { result.append("'" + current! + "'"); current = nil } else { current!.append(c) }
            } else if c == "\"" {
                identifier = true
            } else if c == "'" {
                current = ""
            }
        }
        return result
    }
}

@Suite("Every constant is bound")
struct BoundConstantsTests {
    static let allowedQuotedText: Set<String> = ["''", "'['", "'[[]'"]

    /// Lowers `text` as written and perturbed; nil when either does not bind
    /// or lower (the perturbation may make a predicate invalid).
    static func sqlTexts(_ text: String, _ arguments: [PredicateValue], entity: String, model: DataModel)
        -> (String, String)?
    {
        let compiler = PredicateCompiler(model: model)
        let lowering = SQLLowering(schema: SQLSchema(model: model))
        guard let a = try? compiler.bind(text, arguments: arguments, entity: entity),
              let b = try? compiler.bind(ConstantPerturbation.perturb(text), arguments: arguments, entity: entity),
              let sqlA = try? lowering.select(entity, where: a).sql,
              let sqlB = try? lowering.select(entity, where: b).sql else { return nil }
        return (sqlA, sqlB)
    }

    @Test func perturbationKeepsShape() {
        #expect(ConstantPerturbation.perturb(#"age > 40 AND name == 'Ann' OR x == "" AND y IN {0, 1, 2.5}"#)
                == #"age > 64000 AND name == 'Annq' OR x == "" AND y IN {0, 1, 15.625}"#)
        #expect(ConstantPerturbation.perturb(#"x2 == 0x1F AND CAST(3, 'NSDate') < d AND s == 'a\'b'"#)
                == #"x2 == 0x1F AND CAST(27, 'NSDate') < d AND s == 'a\'bq'"#)
    }

    @Test("The conformance corpus", arguments: CorpusCase.all)
    func corpus(_ testCase: CorpusCase) {
        guard let (original, perturbed) = Self.sqlTexts(testCase.predicate, testCase.args ?? [],
                                                        entity: testCase.entity, model: Company.model) else { return }
        #expect(original == perturbed, "\(testCase.predicate) → \(ConstantPerturbation.perturb(testCase.predicate))")
        for quoted in ConstantPerturbation.quotedTexts(original) {
            #expect(Self.allowedQuotedText.contains(quoted), "\(testCase.predicate): \(quoted) in \(original)")
        }
    }

    @Test("Random predicates")
    func random() throws {
        var (generator, _, _) = try RandomWorld.make(seed: 11)
        var compared = 0
        for _ in 0..<2_000 {
            let text = generator.predicate(depth: 3)
            guard let (original, perturbed) = Self.sqlTexts(text, [], entity: "Thing", model: RandomWorld.model) else {
                continue
            }
            compared += 1
            #expect(original == perturbed, "\(text) → \(ConstantPerturbation.perturb(text))")
            for quoted in ConstantPerturbation.quotedTexts(original) {
                #expect(Self.allowedQuotedText.contains(quoted), "\(text): \(quoted)")
            }
        }
        #expect(compared > 1_000)
    }
}
