// Issue 50, "once per shape": a `#Predicate` built again with new captured
// values takes its conversion from the shape cache, and what the cache gives
// is exactly what a fresh conversion gives: the same text and the same
// arguments, for values that change an argument (numbers, strings, dates,
// lists, ranges) and for values that change the text (nil, Booleans, an
// index), across operators that share an expression type.

import Foundation
import Sift
@testable import SiftStore
import Testing

/// A `#Predicate` with captured values chosen by a number.
struct ShapeCase: Sendable, CustomTestStringConvertible {
    let name: String
    let make: @Sendable (Int) -> Predicate<SPEmployee>
    var testDescription: String { name }
}

enum ShapeCases {
    static let names = ["Alice Anderson", "Bob", "", "Zoë", "O'Brien"]

    static let all: [ShapeCase] = [
        ShapeCase(name: "equal string") { i in let n = names[i % 5]; return #Predicate { $0.name == n } },
        ShapeCase(name: "less than") { i in let a = 20 + i; return #Predicate { ($0.age ?? 0) < a } },
        ShapeCase(name: "greater than") { i in let a = 20 + i; return #Predicate { ($0.age ?? 0) > a } },
        ShapeCase(name: "two values, one of them twice") { i in
            let low = 20 + i, high = 60 - i
            return #Predicate { ($0.age ?? low) >= low && ($0.age ?? 0) <= high }
        },
        ShapeCase(name: "optional capture, nil or not") { i in
            let n: String? = i.isMultiple(of: 2) ? nil : names[i % 5]
            return #Predicate { $0.nickname == n }
        },
        ShapeCase(name: "Boolean capture") { i in
            let flag = i.isMultiple(of: 2)
            return #Predicate { $0.isManager == flag }
        },
        ShapeCase(name: "Boolean capture as a condition") { i in
            let flag = i.isMultiple(of: 3)
            return #Predicate { $0.name?.starts(with: "A") ?? flag }
        },
        ShapeCase(name: "closed range") { i in
            let r = (20 + i)...(40 + i)
            return #Predicate { r.contains($0.age ?? 0) }
        },
        ShapeCase(name: "half-open range") { i in
            let r = Double(i * 1000)..<Double(90_000 + i)
            return #Predicate { r.contains($0.salary ?? 0) }
        },
        ShapeCase(name: "list") { i in
            let list = Array(names.prefix(i % 5 + 1))
            return #Predicate { list.contains($0.name ?? "") }
        },
        ShapeCase(name: "date") { i in
            let d = Date(timeIntervalSinceReferenceDate: Double(400_000_000 + i * 10_000_000))
            return #Predicate { ($0.startDate ?? d) < d }
        },
        ShapeCase(name: "arithmetic") { i in
            let k = i + 1
            return #Predicate { ($0.age ?? 0) * k - k > 40 }
        },
        ShapeCase(name: "subquery variables") { i in
            let a = 25 + i, t = names[i % 5]
            return #Predicate { e in
                e.reports.contains { ($0.age ?? 0) > a } && !e.tags.allSatisfy { $0.name != t }
            }
        },
        ShapeCase(name: "filter and count") { i in
            let a = 20 + i, c = i % 3
            return #Predicate { $0.reports.filter { ($0.age ?? 0) > a }.count >= c }
        },
        ShapeCase(name: "optional chaining") { i in
            let n = names[i % 5]
            return #Predicate { $0.department?.name == n }
        },
        ShapeCase(name: "conditional") { i in
            let a = 30 + i, b = 50 - i
            return #Predicate { (($0.isManager ?? false) ? ($0.age ?? 0) : b) > a }
        },
    ]
}

@Suite("SwiftPredicate shapes")
struct SwiftPredicateShapeTests {
    @Test("a predicate of a shape seen before is converted from the cache, exactly as afresh", arguments: ShapeCases.all)
    func cachedIsFresh(shapeCase: ShapeCase) throws {
        let cache = SwiftPredicateShapeCache()
        cache.verifies = true
        var formats: Set<String> = []
        for i in 0..<6 {
            let predicate = shapeCase.make(i)
            let cached = try FormatPredicate.formatText(of: predicate, naming: KeyPathNames.name(of:), cache: cache)
            let fresh = try FormatPredicate.formatText(of: predicate, naming: KeyPathNames.name(of:))
            #expect(cached.format == fresh.format)
            #expect(cached.arguments == fresh.arguments)
            formats.insert(cached.format)
        }
        #expect(cache.mismatches.withLock { $0 } == [])
        // Six predicates of at most two shapes (nil or not, true or false): most come from the cache.
        #expect(cache.hits >= 6 - 2 * formats.count)
        #expect(cache.hits > 0)
    }

    @Test("operators of one expression type are different shapes")
    func operatorsDiffer() throws {
        let cache = SwiftPredicateShapeCache()
        let a = 40
        let less = try FormatPredicate.formatText(of: #Predicate<SPEmployee> { ($0.age ?? 0) < a },
                                                  naming: KeyPathNames.name(of:), cache: cache)
        let more = try FormatPredicate.formatText(of: #Predicate<SPEmployee> { ($0.age ?? 0) > a },
                                                  naming: KeyPathNames.name(of:), cache: cache)
        #expect(less.format != more.format)
        let age = try FormatPredicate.formatText(of: #Predicate<SPEmployee> { $0.age == a },
                                                 naming: KeyPathNames.name(of:), cache: cache)
        let years = try FormatPredicate.formatText(of: #Predicate<SPEmployee> { $0.years == a },
                                                   naming: KeyPathNames.name(of:), cache: cache)
        // (Two key paths naming one attribute: the same text, from two shapes.)
        #expect(age.format == years.format)
        #expect(cache.hits == 0)
    }

    @Test("the store's fetches take #Predicates from its shape cache and answer as afresh")
    func storeFetches() throws {
        KeyPathNames.shapes.verifies = true
        let made = try StoreKind.sqlite.make()
        let context = made.context()
        let before = KeyPathNames.shapes.hits
        for shapeCase in ShapeCases.all {
            for i in 0..<3 {
                let predicate = shapeCase.make(i)
                let (format, arguments) = try FormatPredicate.formatText(of: predicate, naming: KeyPathNames.name(of:))
                var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
                request.predicate = .format(format, arguments)
                let expected = try context.fetch(request).map(\.objectID)
                let fetched = try context.fetch(SPEmployee.self, where: predicate, sortBy: [SortDescriptor(\SPEmployee.name, comparator: .lexical)])
                #expect(fetched.map(\.object.objectID) == expected, "\(shapeCase.name) \(i)")
            }
        }
        #expect(KeyPathNames.shapes.hits > before)
        #expect(KeyPathNames.shapes.mismatches.withLock { $0 } == [])
    }
}
