// Evaluation by columns gives the node-by-node evaluator's answers, on the
// values that make typed loops go wrong: nils, NaN, a column of mixed types,
// strings that fold (case, accents, non-ASCII), relationships to rows the
// snapshot does not hold, and sibling subentities sharing a table.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Evaluation by columns")
struct ColumnarEvaluationTests {
    static let model = try! DataModel([
        Entity("Item", attributes: [
            Attribute("n", .integer64, optional: true), Attribute("d", .double, optional: true),
            Attribute("s", .string, optional: true), Attribute("b", .boolean, optional: true),
            Attribute("m", .double, optional: true),
        ], relationships: [
            Relationship("owner", to: "Item", inverse: "parts"),
            Relationship("parts", to: "Item", toMany: true, inverse: "owner"),
        ]),
        Entity("Special", superentity: "Item", attributes: [Attribute("extra", .integer64, optional: true)]),
        Entity("Other", superentity: "Item", attributes: [Attribute("note", .string, optional: true)]),
    ])

    /// Items 1…40 with awkward values; a few owners and parts point at keys
    /// no node holds.
    static let cache = makeCache(items: 40)
    /// The same over several words of 64 rows (and a last word not full).
    static let largeCache = makeCache(items: 300)

    static func makeCache(items: Int) -> RowCache {
        let cache = RowCache(model: model)
        let strings: [PredicateValue] = ["Ann", "ann", "ANNA", "Ånn", "émile", "Emile", "", "x", .null, "naïve", "NAIVE", "straße",
                                         // Long enough to be searched eight bytes at a time.
                                         "Joanna and Annabel Annex", "\u{0}\u{1}a\u{1}\u{0}annexe of the ANNEX", "aaaaaaaaaaaaaaaaaan"]
        let doubles: [PredicateValue] = [.double(1.5), .double(.nan), .null, .double(-0.0), .double(2.5), .double(.infinity)]
        var nodes: [RowNode] = []
        for key in 1...items {
            let entity = key % 7 == 0 ? 1 : (key % 11 == 0 ? 2 : 0)
            let n: PredicateValue = key % 5 == 0 ? .null : .int(Int64(key % 13) - 3)
            // `m` mixes integers and doubles: evaluated value by value.
            let m: PredicateValue = key % 2 == 0 ? .int(Int64(key)) : .double(Double(key) / 2)
            let b: PredicateValue = key % 3 == 0 ? .null : .bool(key % 2 == 0)
            var values = [n, doubles[key % doubles.count], strings[key % strings.count], b, m]
            if entity == 1 { values.append(key % 4 == 0 ? .null : .int(Int64(key))) }
            if entity == 2 { values.append(strings[(key + 3) % strings.count]) }
            let owner: Int64? = key % 6 == 0 ? nil : (key % 9 == 0 ? 999 : Int64(key / 4 + 1))
            let parts: [Int64]? = key % 8 == 0 ? nil : [Int64(key * 2), Int64(key * 2 + 1), 500]
            nodes.append(RowNode(id: ObjectID(entity: entity, root: 0, primaryKey: Int64(key)), values: values,
                                 toOne: [owner], toMany: [parts]))
        }
        cache.store(nodes)
        return cache
    }

    static let predicates = [
        "n > 2", "n <= 0", "n == 4", "n != 4", "n == nil", "n != nil", "n BETWEEN {0, 5}", "n IN {1, 2, 3}",
        "d > 1", "d < 2", "d == 1.5", "d != 1.5", "d >= -0.0", "d == nil", "d BETWEEN {0, 3}",
        "s == 'ann'", "s ==[c] 'ann'", "s ==[cd] 'ANN'", "s !=[c] 'ann'", "s BEGINSWITH[c] 'an'", "s BEGINSWITH ''",
        "s ENDSWITH[cd] 'le'", "s CONTAINS[c] 'N'", "s CONTAINS[cd] 'i'", "s < 'b'", "s >=[c] 'emile'", "s == nil",
        "s != nil", "s CONTAINS 'ann'", "s CONTAINS[c] 'annex'", "s CONTAINS 'an'", "s CONTAINS[cd] 'ANNE'",
        "s IN 'xannay'", "s IN[c] 'XANNA'", "s LIKE[c] 'a*'", "s MATCHES '[a-z]+'",
        "b == YES", "b == NO", "b != YES", "b == nil",
        "m > 10", "m == 4", "m < 3.5",
        "owner.n > 1", "owner.s ==[c] 'ann'", "owner == nil", "owner != nil", "owner.d > 1",
        "ANY parts.n > 3", "ALL parts.n > -5", "NONE parts.s BEGINSWITH 'A'", "parts.@count > 1", "parts.@count == 0",
        "n > 2 AND (s BEGINSWITH[c] 'a' OR d > 1) AND NOT b == YES", "NOT (n > 2 OR n == nil)",
        "n + 1 > 3 OR uppercase(s) == 'ANN'", "SUBQUERY(parts, $p, $p.n > 2).@count > 0", "TRUEPREDICATE", "FALSEPREDICATE",
    ]

    @Test("Every predicate selects the same rows by columns as node by node",
          arguments: ["Item", "Special", "Other"], [40, 300])
    func sameRows(_ entity: String, items: Int) throws {
        let compiler = PredicateCompiler(model: Self.model)
        let domain = RowNodeDomain(cache: items == 40 ? Self.cache : Self.largeCache)
        let index = try #require(Self.model.entity(named: entity)).index
        let table = domain.snapshot.table(entity: index)
        #expect(table.nodes.map(\.id) == domain.snapshot.nodes(entity: index).map(\.id))
        var selectedSome = 0
        for text in Self.predicates + (entity == "Special" ? ["extra > 10", "extra == nil"] : [])
            + (entity == "Other" ? ["note ==[cd] 'emile'", "note != nil"] : []) {
            let filter = MemoryPredicate(try compiler.bind(text, entity: entity), domain: domain)
            let nodeByNode = try filter.filter(domain.snapshot.nodes(entity: index)).map(\.id.primaryKey)
            let byColumns = try filter.filter(table).map(\.id.primaryKey)
            #expect(byColumns == nodeByNode, "\(entity): \(text)")
            // Columns kept with the table answer the same the second time.
            #expect(try filter.filter(table).map(\.id.primaryKey) == nodeByNode, "\(entity): \(text), again")
            if !nodeByNode.isEmpty { selectedSome += 1 }
        }
        #expect(selectedSome > Self.predicates.count / 3)
    }

    @Test("A cache hands out the same columns until its nodes change")
    func columnsFollowTheCache() throws {
        let cache = RowCache(model: Self.model)
        cache.store([RowNode(id: ObjectID(entity: 0, primaryKey: 1), values: [.int(1), .null, .null, .null, .null],
                             toOne: [nil], toMany: [[]])])
        let filter = try PredicateCompiler(model: Self.model).bind("n > 0", entity: "Item")
        #expect(try cache.nodes(of: "Item", matching: filter).count == 1)
        #expect(cache.snapshot().table(entity: 0) === cache.snapshot().table(entity: 0))
        let before = cache.snapshot().table(entity: 0)
        cache.store([RowNode(id: ObjectID(entity: 0, primaryKey: 2), values: [.int(5), .null, .null, .null, .null],
                             toOne: [nil], toMany: [[]])])
        #expect(cache.snapshot().table(entity: 0) !== before)
        #expect(try cache.nodes(of: "Item", matching: filter).map(\.id.primaryKey) == [1, 2])
        cache.remove([ObjectID(entity: 0, primaryKey: 1)])
        #expect(try cache.nodes(of: "Item", matching: filter).map(\.id.primaryKey) == [2])
    }

    @Test("Folding an ASCII value as it is read answers as folding it first")
    func asciiFolding() {
        var generator = SystemRandomNumberGenerator()
        let alphabet = Array("aAbBzZ@[`{ é\u{301}Å".unicodeScalars)
        func word() -> String {
            var scalars = String.UnicodeScalarView()
            for _ in 0..<Int.random(in: 0...5, using: &generator) { scalars.append(alphabet.randomElement(using: &generator)!) }
            return String(scalars)
        }
        let operators: [ComparisonOperator] = [.equalTo, .notEqualTo, .beginsWith, .endsWith, .contains]
        let options: [ComparisonOptions] = [.caseInsensitive, .diacriticInsensitive, [.caseInsensitive, .diacriticInsensitive]]
        for _ in 0..<5000 {
            let (left, right) = (word(), word())
            let (op, option) = (operators.randomElement()!, options.randomElement()!)
            let (l, r) = (StringFolding.fold(left, option), StringFolding.fold(right, option))
            let expected = switch op {
            case .equalTo: Array(l.utf8) == Array(r.utf8)
            case .notEqualTo: Array(l.utf8) != Array(r.utf8)
            case .beginsWith: StringMatching.hasPrefix(l, r)
            case .endsWith: StringMatching.hasSuffix(l, r)
            default: StringMatching.contains(l, r)
            }
            #expect(PreparedComparison(op, option, right: .string(right)).test(.string(left)) == expected,
                    "\(left.debugDescription) \(op) \(option) \(right.debugDescription)")
        }
    }
}
