// The semantics rules of Grammar/README.md, one table row each, on a small
// data set chosen to hit the edges: nil, empty strings and collections,
// canonically equivalent strings, wildcard characters, mixed numbers.

import Foundation
import Sift
import SiftStore
import Testing

enum Edges {
    static let model = try! DataModel([
        Entity("Item", attributes: [
            Attribute("name", .string, optional: true),
            Attribute("count", .integer64, optional: true),
            Attribute("price", .double, optional: true),
            Attribute("flag", .boolean, optional: true),
            Attribute("when", .date, optional: true),
        ], relationships: [
            Relationship("parts", to: "Part", toMany: true, inverse: "item"),
        ]),
        Entity("Part", attributes: [Attribute("weight", .double, optional: true), Attribute("label", .string)],
               relationships: [Relationship("item", to: "Item", inverse: "parts")]),
    ])

    static let dataSet = try! DataSet(model: model, objects: [
        "Item": [
            ["id": 1, "name": "Renée", "count": 30, "price": 30.0, "flag": true, "when": 0, "parts": [1, 2]],
            ["id": 2, "name": "Rene\u{301}e", "count": 5, "price": 2.5, "flag": false, "when": 100, "parts": [3]],
            ["id": 3, "name": "", "count": nil, "price": nil, "flag": nil, "when": nil, "parts": []],
            ["id": 4, "name": nil, "count": 0, "price": -1, "flag": true, "parts": [4]],
            ["id": 5, "name": "50% *off* a_b?", "count": 7, "price": 7.5, "flag": false],
            ["id": 6, "name": "Ångström", "count": 1, "price": 1, "flag": false],
            ["id": 7, "name": "ALICE", "count": 2, "price": 2, "flag": false],
        ],
        "Part": [
            ["id": 1, "weight": 1.5, "label": "a"], ["id": 2, "weight": nil, "label": "b"],
            ["id": 3, "weight": 4, "label": "c"], ["id": 4, "weight": nil, "label": "d"],
        ],
    ])

    static let cache = dataSet.makeRowCache()
}

@Suite("Semantics")
struct SemanticsTests {
    @Test("Rules", arguments: [
        // Two-valued nil logic.
        ("count > 4", [1, 2, 5]),
        ("NOT (count > 4)", [3, 4, 6, 7]),
        ("count != 5", [1, 3, 4, 5, 6, 7]),
        ("count == nil", [3]),
        ("count != nil", [1, 2, 4, 5, 6, 7]),
        ("name == nil", [4]),
        ("price + 1 > 0", [1, 2, 5, 6, 7]),
        ("NOT (price + 1 > 0)", [3, 4]),
        // Literal strings compare by scalars; options fold.
        ("name == 'Renée'", [1]),
        ("name ==[c] 'renée'", [1, 2]),
        ("name ==[d] 'Renee'", [1, 2]),
        ("name ==[cd] 'RENEE'", [1, 2]),
        ("name BEGINSWITH[c] 'a'", [7]),
        ("name BEGINSWITH[cd] 'a'", [6, 7]),
        ("name < 'B'", [3, 5, 7]),
        ("name >= 'a'", [6]),
        // Empty patterns never match; the empty string is not nil.
        ("name BEGINSWITH ''", []),
        ("name ENDSWITH ''", []),
        ("name CONTAINS ''", []),
        ("name IN ''", []),
        ("name == ''", [3]),
        ("'' IN name", []),
        // LIKE: * and ? are wildcards; % and _ are literal.
        ("name LIKE '*%*'", [5]),
        ("name LIKE '*a_b?'", [5]),
        ("name LIKE '?????'", [1, 7]),
        ("name LIKE '??????'", [2]),
        ("name LIKE[c] 'alice'", [7]),
        ("name LIKE '*'", [1, 2, 3, 5, 6, 7]),
        // MATCHES: the whole string.
        ("name MATCHES 'A.*'", [7]),
        ("name MATCHES 'LIC'", []),
        ("name MATCHES[c] 'alice'", [7]),
        ("name MATCHES '.*'", [1, 2, 3, 5, 6, 7]),
        // Numbers by value across types; booleans are 1 and 0.
        ("count == price", [1, 3, 6, 7]),
        ("count == 30.0", [1]),
        ("price == 30", [1]),
        ("flag == 1", [1, 4]),
        ("flag == YES", [1, 4]),
        ("flag < 1", [2, 5, 6, 7]),
        // Dates compare with dates.
        ("when > CAST(50, 'NSDate')", [2]),
        ("when == CAST(0, 'NSDate')", [1]),
        // Collections: empty ANY false, ALL and NONE true; aggregates.
        ("ANY parts.weight > 1", [1, 2]),
        ("ALL parts.weight > 1", [2, 3, 5, 6, 7]),
        ("NONE parts.weight > 1", [3, 4, 5, 6, 7]),
        ("parts.@count == 0", [3, 5, 6, 7]),
        ("parts.@sum.weight == 0", [3, 4, 5, 6, 7]),
        ("parts.@avg.weight == 1.5", [1]),
        ("parts.@avg.weight == nil", [3, 4, 5, 6, 7]),
        ("parts.@max.weight == nil", [3, 4, 5, 6, 7]),
        ("parts.@min.weight < 2", [1]),
        ("ANY parts.weight == nil", [1, 4]),
        ("SUBQUERY(parts, $p, $p.weight == nil).@count == 1", [1, 4]),
        ("SUBQUERY(parts, $p, $p.weight > 1).@count > 0", [1, 2]),
        // Inside SUBQUERY a bare key reads the evaluated object, not the member (as Apple's).
        ("SUBQUERY(parts, $p, count > 4).@count > 0", [1, 2]),
        ("SUBQUERY(parts, $p, SELF.count > 10 AND $p.weight > 1).@count > 0", [1]),
        // Arithmetic on nil is nil; integers divide as integers, a real as reals; by zero nil.
        ("count / 2 == 2", [2]),
        ("count / 2.0 == 2.5", [2]),
        ("(count / 2) * 2 != count", [2, 5, 6]),
        ("count / 0 == nil", [1, 2, 3, 4, 5, 6, 7]),
        ("count * 2 == 60", [1]),
        ("-count == -5", [2]),
        ("2 ** 3 == 8", [1, 2, 3, 4, 5, 6, 7]),
        // Membership.
        ("count IN {5, 7.0}", [2, 5]),
        ("name IN[c] {'alice', 'bob'}", [7]),
        ("name IN 'Renée and ALICE'", [1, 7]),
        ("ANY parts.label IN {'a', 'd'}", [1, 4]),
        ("count BETWEEN {1, 5}", [2, 6, 7]),
        ("TERNARY(count > 5, 'big', 'small') == 'big'", [1, 5]),
        ("uppercase(name) == 'ALICE'", [7]),
        ("abs(price) == 1", [4, 6]),
        ("max({count, 6}) == 6", [2, 3, 4, 6, 7]),
    ] as [(String, [Int64])])
    func rule(_ predicate: String, _ expected: [Int64]) throws {
        let bound = try PredicateCompiler(model: Edges.model).bind(predicate, entity: "Item")
        #expect(try Edges.cache.nodes(of: "Item", matching: bound).map(\.id.primaryKey) == expected)
    }

    @Test func foldingFollowsTheRules() {
        #expect(StringFolding.fold("Ångström", [.caseInsensitive]) == "ångström")
        #expect(StringFolding.fold("Ångström", [.diacriticInsensitive]) == "Angstrom")
        #expect(StringFolding.fold("Rene\u{301}e", [.caseInsensitive]).unicodeScalars.count == 5)
        #expect(StringFolding.fold("ABC", [.normalized]) == "ABC")
    }
}

@Suite("Key-value records")
struct KeyValueTests {
    static let model = try! DataModel([
        Entity("Person", attributes: [Attribute("name", .string), Attribute("age", .integer64)],
               relationships: [Relationship("friends", to: "Person", toMany: true),
                               Relationship("boss", to: "Person")]),
    ])

    @Test func dictionariesCanBeFiltered() throws {
        let people: [[String: PredicateValue]] = [
            ["name": "Ann", "age": 31, "friends": [["name": "Bo", "age": 20]], "boss": ["name": "Cy", "age": 50]],
            ["name": "Bo", "age": 20, "friends": []],
            ["name": "Cy", "age": 50, "self": .object(ObjectReference(entity: "Person", id: 3))],
        ]
        let compiler = PredicateCompiler(model: Self.model)
        func names(_ text: String, _ arguments: [PredicateValue] = []) throws -> [String] {
            let filter = try compiler.memoryPredicate(text, arguments: arguments, entity: "Person", domain: KeyValueDomain())
            return try people.filter(filter.evaluate).compactMap { if case .string(let s)? = $0["name"] { s } else { nil } }
        }
        #expect(try names("age > 25") == ["Ann", "Cy"])
        #expect(try names("ANY friends.age < 30") == ["Ann"])
        #expect(try names("boss.name == 'Cy'") == ["Ann"])
        #expect(try names("boss == nil") == ["Bo", "Cy"])
        #expect(try names("friends.@count == 0") == ["Bo", "Cy"])
        #expect(try names("SELF == %@", [.object(ObjectReference(entity: "Person", id: 3))]) == ["Cy"])
    }

    struct Person: KeyValueRecord {
        var name: String
        var age: Int
        func value(forKey key: String) -> KeyValueItem {
            switch key {
            case "name": .value(.string(name))
            case "age": .value(.int(Int64(age)))
            default: .value(.null)
            }
        }
    }

    @Test func usersOwnTypesCanBeFiltered() throws {
        let filter = try PredicateCompiler(model: Self.model).memoryPredicate(
            "name BEGINSWITH[c] 'a' AND age >= 18", entity: "Person", domain: KeyValueDomain())
        let people = [Person(name: "Ann", age: 31), Person(name: "al", age: 12), Person(name: "Bo", age: 40)]
        #expect(try people.filter(filter.evaluate).map(\.name) == ["Ann"])
    }
}
