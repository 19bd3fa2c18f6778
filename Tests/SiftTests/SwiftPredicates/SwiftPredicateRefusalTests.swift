// Issue 50: every expression type Sift does not convert is a typed error
// naming it; a key path that names nothing is one too. Never a crash.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("SwiftPredicate refusals")
struct SwiftPredicateRefusalTests {
    typealias PE = PredicateExpressions

    /// Each refused expression type, built from Foundation's public initializers, with its name.
    static func refused() -> [(name: String, predicate: Predicate<SPEmployeeRecord>)] {
        [
            ("TypeCheck", Predicate { PE.TypeCheck<PE.KeyPath<PE.Variable<SPEmployeeRecord>, String>, String>(
                PE.KeyPath(root: $0, keyPath: \SPEmployeeRecord.name)) }),
            ("ConditionalCast", Predicate { PE.NotEqual(
                lhs: PE.ConditionalCast<PE.KeyPath<PE.Variable<SPEmployeeRecord>, String>, String>(
                    PE.KeyPath(root: $0, keyPath: \SPEmployeeRecord.name)),
                rhs: PE.NilLiteral<String>()) }),
            ("ForceCast", Predicate { PE.Equal(
                lhs: PE.ForceCast<PE.KeyPath<PE.Variable<SPEmployeeRecord>, String>, String>(
                    PE.KeyPath(root: $0, keyPath: \SPEmployeeRecord.name)),
                rhs: PE.Value("Ann")) }),
            ("DictionaryKeySubscript", Predicate { _ in PE.Equal(
                lhs: PE.DictionaryKeySubscript(wrapped: PE.Value(["a": 1]), key: PE.Value("a")),
                rhs: PE.Value(Int?.some(1))) }),
            ("DictionaryKeyDefaultValueSubscript", Predicate { _ in PE.Equal(
                lhs: PE.DictionaryKeyDefaultValueSubscript(wrapped: PE.Value(["a": 1]), key: PE.Value("a"),
                                                           default: PE.Value(0)),
                rhs: PE.Value(1)) }),
        ]
    }

    @Test("each refused expression type is a typed error naming it")
    func refusals() {
        let cases = Self.refused()
        #expect(cases.count == 5)
        for (name, predicate) in cases {
            do {
                _ = try FormatPredicate(predicate)
                Issue.record("\(name) converted")
            } catch {
                guard case .unsupportedExpression(let type, let instead) = error.reason else {
                    Issue.record("\(name): \(error)")
                    continue
                }
                #expect(type.hasPrefix(name), "\(type)")
                #expect(!instead.isEmpty)
                #expect(error.description.contains(name))
            }
        }
    }

    @Test("a key path that names nothing is a typed error naming it")
    func unnamedKeyPath() throws {
        let made = try StoreKind.sqlite.make()
        let context = made.context()
        do {
            _ = try context.fetch(SPEmployee.self, where: #Predicate { $0.shout == "hey" })
            Issue.record("a computed property converted")
        } catch {
            guard case .invalidRequest(.swiftPredicate(let conversion)) = error,
                  case .unnamedKeyPath(let keyPath) = conversion.reason else {
                Issue.record("\(error)")
                return
            }
            #expect(keyPath.contains("SPEmployee"))
        }
    }

    @Test("a captured value of a type predicates do not hold is a typed error")
    func unsupportedValue() {
        struct Opaque: Equatable, Codable, Sendable {}
        let predicate = Predicate<SPEmployeeRecord> { _ in PE.Equal(lhs: PE.Value(Opaque()), rhs: PE.Value(Opaque())) }
        #expect(throws: PredicateConversionError(.unsupportedValue(type: "Opaque"))) { try FormatPredicate(predicate) }
    }

    @Test("a view's key path names its @Managed attribute, a record's its property")
    func names() throws {
        let years = try FetchPredicate(#Predicate<SPEmployee> { $0.years == 3 })
        guard case .format(let text, let arguments) = years else { Issue.record("\(years)"); return }
        #expect(text == "age == %@" && arguments == [.int(3)])
        let record = try FormatPredicate(#Predicate<SPEmployeeRecord> { $0.age > 3 && $0.nickname == nil })
        #expect(record.format == "(age > %@ AND nickname == nil)")
        #expect(try record.evaluate(with: SPEmployeeRecord(name: "A", nickname: nil, age: 4, salary: 1, rating: nil,
                                                           isManager: false)))
    }
}
