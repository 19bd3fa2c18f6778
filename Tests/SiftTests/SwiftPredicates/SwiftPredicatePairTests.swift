// Issue 50: a `#Predicate` fetches what its format text fetches, on every
// store. Each pair is a Swift predicate over the company model's view
// classes and the format text Apple's `NSPredicate(_:)` would give for it;
// both are fetched (sorted by name, then by key, and unsorted) on SQLite,
// the atomic store (memory), an incremental store whose backend evaluates
// everything, the remote store and, when configured, PostgreSQL.

import Foundation
import Sift
import SiftStore
import Testing

/// A `#Predicate` and its format text.
struct SwiftPredicatePair: Sendable, CustomTestStringConvertible {
    let predicate: Predicate<SPEmployee>
    let format: String
    let arguments: [PredicateValue]
    var testDescription: String { format }

    init(_ predicate: Predicate<SPEmployee>, _ format: String, _ arguments: [PredicateValue] = []) {
        self.predicate = predicate
        self.format = format
        self.arguments = arguments
    }
}

enum SwiftPredicatePairs {
    static let cutoff = Date(timeIntervalSinceReferenceDate: 500_000_000)

    static let all: [SwiftPredicatePair] = {
        let limit = 40, low = 25, high = 35, name = "Alice Anderson", prefix = "A", part = "an"
        let names = ["Alice Anderson", "bob baker", "Nobody"], cutoff = Self.cutoff, money = 60_000.0
        let ages = 30...40, open = 30..<40, department = "Sales", tag = "remote"
        typealias P = SwiftPredicatePair
        return [
            // Comparisons, equality, captured values.
            P(#Predicate { ($0.age ?? 0) > limit }, "age > %@", [.int(40)]),
            P(#Predicate { ($0.age ?? 0) >= limit }, "age >= 40"),
            P(#Predicate { ($0.age ?? 100) < limit }, "age < 40"),
            P(#Predicate { ($0.age ?? 100) <= 30 }, "age <= 30"),
            P(#Predicate { $0.age == 30 }, "age == 30"),
            P(#Predicate { $0.age != 30 }, "age != 30"),
            P(#Predicate { $0.name == name }, "name == 'Alice Anderson'"),
            P(#Predicate { $0.name != name }, "name != 'Alice Anderson'"),
            P(#Predicate { $0.nickname == nil }, "nickname == nil"),
            P(#Predicate { $0.nickname != nil }, "nickname != nil"),
            P(#Predicate { $0.rating == nil }, "rating == nil"),
            P(#Predicate { ($0.rating ?? 0) > 3.5 }, "rating > 3.5"),
            P(#Predicate { ($0.salary ?? 0) >= money }, "salary >= 60000"),
            P(#Predicate { $0.isManager == true }, "isManager == YES"),
            P(#Predicate { $0.isManager == false }, "isManager == NO"),
            P(#Predicate { $0.isManager ?? false }, "isManager == YES"),
            P(#Predicate { ($0.startDate ?? cutoff) < cutoff }, "startDate < %@", [.date(cutoff)]),
            P(#Predicate { $0.startDate! > cutoff }, "startDate > %@", [.date(cutoff)]),
            P(#Predicate { $0.years == 30 }, "age == 30"),
            // Logic.
            P(#Predicate { ($0.age ?? 0) > low && ($0.age ?? 0) < high }, "age > 25 AND age < 35"),
            P(#Predicate { ($0.age ?? 0) < low || ($0.age ?? 0) > high }, "age < 25 OR age > 35"),
            P(#Predicate { !(($0.age ?? 0) > limit) }, "NOT age > 40"),
            P(#Predicate { !($0.isManager ?? false) && $0.nickname != nil }, "isManager == NO AND nickname != nil"),
            P(#Predicate { ($0.age ?? 0) > 50 || ($0.isManager ?? false) && ($0.rating ?? 0) > 4 },
              "age > 50 OR (isManager == YES AND rating > 4)"),
            P(#Predicate { _ in true }, "TRUEPREDICATE"),
            P(#Predicate { _ in false }, "FALSEPREDICATE"),
            // Arithmetic.
            P(#Predicate { ($0.age ?? 0) + 10 > 60 }, "age + 10 > 60"),
            P(#Predicate { ($0.age ?? 0) - 10 < 20 }, "age - 10 < 20"),
            P(#Predicate { ($0.age ?? 0) * 2 == 60 }, "age * 2 == 60"),
            P(#Predicate { ($0.age ?? 0) / 10 == 3 }, "age / 10 == 3"),
            P(#Predicate { ($0.age ?? 0) % 2 == 0 }, "modulus:by:(age, 2) == 0"),
            P(#Predicate { ($0.salary ?? 0) / 2.0 > 50_000 }, "salary / 2.0 > 50000"),
            P(#Predicate { -($0.age ?? 0) < -50 }, "age > 50"),
            P(#Predicate { ($0.salary ?? 0) * 1.1 > 100_000 }, "salary * 1.1 > 100000"),
            // Optionals.
            P(#Predicate { ($0.nickname ?? "") == "Doc" }, "nickname == 'Doc'"),
            P(#Predicate { ($0.nickname ?? "none") == "none" }, "nickname == nil OR nickname == 'none'"),
            P(#Predicate { $0.name?.starts(with: prefix) ?? false }, "name BEGINSWITH 'A'"),
            P(#Predicate { $0.name?.starts(with: "b") ?? true }, "name == nil OR name BEGINSWITH 'b'"),
            P(#Predicate { $0.nickname?.contains("o") ?? false }, "nickname CONTAINS 'o'"),
            P(#Predicate { $0.name!.contains(part) }, "name CONTAINS 'an'"),
            P(#Predicate { $0.name!.starts(with: "C") }, "name BEGINSWITH 'C'"),
            P(#Predicate { $0.department?.name == department }, "department.name == 'Sales'"),
            P(#Predicate { $0.department?.name != department }, "department.name != 'Sales'"),
            P(#Predicate { ($0.department?.budget ?? 0) > 1_000_000 }, "department.budget > 1000000"),
            P(#Predicate { $0.department?.budget == nil }, "department.budget == nil"),
            P(#Predicate { $0.manager?.name == name }, "manager.name == 'Alice Anderson'"),
            P(#Predicate { ($0.manager?.age ?? 0) > 50 }, "manager.age > 50"),
            P(#Predicate { $0.manager?.department?.name == "Engineering" }, "manager.department.name == 'Engineering'"),
            P(#Predicate { $0.department!.name == "Marketing" }, "department.name == 'Marketing'"),
            // Ranges and membership.
            P(#Predicate { ages.contains($0.age ?? 0) }, "age BETWEEN {30, 40}"),
            P(#Predicate { open.contains($0.age ?? 0) }, "age >= 30 AND age < 40"),
            P(#Predicate { (30...40).contains($0.age ?? 0) }, "age BETWEEN {30, 40}"),
            P(#Predicate { (low..<high).contains($0.age ?? 0) }, "age >= 25 AND age < 35"),
            P(#Predicate { names.contains($0.name ?? "") }, "name IN {'Alice Anderson', 'bob baker', 'Nobody'}"),
            // To-many: ANY, ALL, counts, SUBQUERY.
            P(#Predicate { $0.tags.contains { $0.name == tag } }, "ANY tags.name == 'remote'"),
            P(#Predicate { !$0.tags.contains { $0.name == tag } }, "NOT (ANY tags.name == 'remote')"),
            P(#Predicate { $0.reports.contains { ($0.age ?? 0) > 50 } }, "ANY reports.age > 50"),
            P(#Predicate { $0.tags.allSatisfy { $0.name != "remote" } }, "ALL tags.name != 'remote'"),
            P(#Predicate { $0.reports.allSatisfy { ($0.age ?? 0) < 40 } }, "ALL reports.age < 40"),
            P(#Predicate { $0.tags.count == 2 }, "tags.@count == 2"),
            P(#Predicate { $0.tags.count > 2 }, "tags.@count > 2"),
            P(#Predicate { $0.reports.isEmpty }, "reports.@count == 0"),
            P(#Predicate { !$0.reports.isEmpty }, "reports.@count > 0"),
            P(#Predicate { $0.reports.filter { ($0.age ?? 0) > 30 }.count >= 2 },
              "SUBQUERY(reports, $r, $r.age > 30).@count >= 2"),
            P(#Predicate { $0.tags.filter { $0.name?.starts(with: "s") ?? false }.isEmpty },
              "SUBQUERY(tags, $t, $t.name BEGINSWITH 's').@count == 0"),
            P(#Predicate { $0.department?.employees.contains { $0.name == name } ?? false },
              "ANY department.employees.name == 'Alice Anderson'"),
            // Conditionals.
            P(#Predicate { (($0.isManager ?? false) ? ($0.age ?? 0) : 0) > 40 }, "isManager == YES AND age > 40"),
            P(#Predicate { ($0.isManager ?? false) ? ($0.age ?? 0) > 50 : ($0.age ?? 0) < 25 },
              "(isManager == YES AND age > 50) OR (isManager == NO AND age < 25)"),
        ]
    }()
}

@Suite("SwiftPredicate pairs")
struct SwiftPredicatePairTests {
    @Test("the pair table has at least 60 pairs")
    func size() {
        #expect(SwiftPredicatePairs.all.count >= 60)
    }

    @Test("a #Predicate fetches what its format text fetches", arguments: StoreKind.allCases)
    func pairs(kind: StoreKind) throws {
        let made = try kind.make()
        let context = made.context()
        var nonEmpty = 0
        for pair in SwiftPredicatePairs.all {
            let converted = try FetchPredicate(pair.predicate)
            let sorted = try context.fetch(SPEmployee.self, where: pair.predicate,
                                           sortBy: [SortDescriptor(\SPEmployee.name, comparator: .lexical)])
            var request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
            request.predicate = .format(pair.format, pair.arguments)
            let expected = try context.fetch(request).map(\.objectID)
            #expect(sorted.map(\.object.objectID) == expected, "\(kind): \(pair.format) as \(converted)")
            let unsorted = try context.fetch(SPEmployee.self, where: pair.predicate)
            #expect(Set(unsorted.map(\.object.objectID)) == Set(expected), "\(kind): \(pair.format) as \(converted)")
            #expect(try context.count(of: SPEmployee.self, where: pair.predicate) == expected.count)
            if !expected.isEmpty { nonEmpty += 1 }
        }
        // The table selects something on most pairs, so an empty answer everywhere cannot pass.
        #expect(nonEmpty >= 50)
    }
}
