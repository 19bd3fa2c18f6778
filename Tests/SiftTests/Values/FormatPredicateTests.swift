// Predicates against plain Swift values, with no model: the everyday uses of
// NSPredicate, every kind of value Foundation code holds, variables, errors,
// and the conformance corpus over the company as records and as nested values.

import Foundation
import Sift
import Testing

@Suite("Format predicates")
struct FormatPredicateTests {
    @Test func validatesAString() throws {
        let isEmail = try FormatPredicate(format: "SELF MATCHES %@", "[^@ ]+@[^@ ]+\\.[a-z]{2,}")
        #expect(try isEmail.evaluate(with: "ann@example.com"))
        #expect(try !isEmail.evaluate(with: "ann@example"))
        #expect(try !isEmail.evaluate(with: nil))
    }

    @Test func filtersJSONDictionaries() throws {
        let json = #"[{"name": "Ann", "age": 31, "tags": ["a"], "address": {"city": "Oslo"}},"#
            + #" {"name": "Bo", "age": 17, "active": true}, {"name": "Cy", "age": 45.5, "address": null}]"#
        let people = try JSONSerialization.jsonObject(with: Data(json.utf8)) as! [[String: Any]]
        let adults = try FormatPredicate(format: "age >= %d", 18).filter(people)
        #expect(adults.map { $0["name"] as? String } == ["Ann", "Cy"])
        #expect(try FormatPredicate(format: "address.city == 'Oslo'").filter(people).count == 1)
        #expect(try FormatPredicate(format: "ANY tags == 'a'").filter(people).count == 1)
        #expect(try FormatPredicate(format: "active == YES").filter(people).count == 1)
        #expect(try FormatPredicate(format: "active == 1").filter(people).count == 1)
        #expect(try FormatPredicate(format: "address == nil").filter(people).count == 2)
    }

    /// Key paths through arrays whose members lack the key, are nil, or are
    /// not dictionaries: `[String: Any]` read key by key answers as the
    /// converted value tree does (the values fuzzer found the first two).
    @Test(arguments: [
        (#"{"boxes": [{"items": [{"price": 3}]}, {"other": 4}]}"#, "ANY boxes.items.price == nil", true),
        (#"{"boxes": [{"items": [{"price": 3}]}, {"other": 4}]}"#, "boxes.items.@count == 2", true),
        (#"{"a": [{"b": 1}, 5]}"#, "ANY a.b == 1", nil),
        (#"{"a": [{"b": {"c": 1}}, null, {"x": 2}]}"#, "a.b.c.@count == 3", true),
        (#"{"a": [{"b": {"c": 1}}, null, {"x": 2}]}"#, "ANY a.b.c == nil", true),
        (#"{"a": [{"b": [{"c": 1}]}, {"b": [[{"c": 3}], {"c": 4}]}]}"#, "a.b.c.@sum == 8", true),
    ] as [(String, String, Bool?)])
    func keyPathsThroughUnevenArrays(json: String, format: String, expected: Bool?) throws {
        let foundation = try JSONSerialization.jsonObject(with: Data(json.utf8))
        let tree = try JSONDecoder().decode(PredicateValue.self, from: Data(json.utf8))
        let predicate = try FormatPredicate(format: format)
        if let expected {
            #expect(try predicate.evaluate(with: foundation) == expected)
            #expect(try predicate.evaluate(with: tree) == expected)
        } else {
            // A key looked up in a number: an error on both readings.
            #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: foundation) }
            #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: tree) }
        }
    }

    @Test func readsFoundationValues() throws {
        let date = Date(timeIntervalSinceReferenceDate: 1_000)
        let id = UUID()
        #expect(try FormatPredicate(format: "SELF > %@", Date(timeIntervalSinceReferenceDate: 0)).evaluate(with: date))
        #expect(try FormatPredicate(format: "SELF == %@", id).evaluate(with: id))
        #expect(try FormatPredicate(format: "SELF BEGINSWITH 'https://'").evaluate(with: URL(string: "https://example.com")!))
        #expect(try FormatPredicate(format: "SELF > 1.5").evaluate(with: Decimal(2)))
        #expect(try FormatPredicate(format: "SELF == 3").evaluate(with: UInt8(3)))
        #expect(try FormatPredicate(format: "@count == 2").evaluate(with: Set(["a", "b"])))
        #expect(try FormatPredicate(format: "SELF.@sum == 6").evaluate(with: [1, 2, 3]))
        #expect(try FormatPredicate(format: "SELF == nil").evaluate(with: NSNull()))
        #expect(try FormatPredicate(format: "SELF.length == 2").evaluate(with: ["length": 2] as [String: PredicateValue]))
    }

    struct Order: Encodable {
        var id: Int
        var placed: Date
        var lines: [Line]
        struct Line: Encodable {
            var sku: String
            var quantity: Int
        }
    }

    @Test func readsEncodableValuesWithDates() throws {
        let order = Order(id: 7, placed: Date(timeIntervalSinceReferenceDate: 100),
                          lines: [Order.Line(sku: "A-1", quantity: 2), Order.Line(sku: "B-2", quantity: 5)])
        #expect(try FormatPredicate(format: "placed > %@", Date(timeIntervalSinceReferenceDate: 50)).evaluate(with: order))
        #expect(try FormatPredicate(format: "ANY lines.quantity > 4 AND lines.@sum.quantity == 7").evaluate(with: order))
        #expect(try FormatPredicate(format: "SUBQUERY(lines, $l, $l.sku BEGINSWITH 'B').@count == 1").evaluate(with: order))
        let tree = try PredicateValue(encoding: order)
        guard case .dictionary(let fields) = tree else { Issue.record("\(tree)"); return }
        #expect(fields["placed"] == .date(Date(timeIntervalSinceReferenceDate: 100)))
    }

    struct Sample: Encodable {
        enum Kind: String, Encodable { case small, large }
        enum Shape: Encodable {
            case circle(radius: Double)
            case square(side: Int)
        }
        var when = Date(timeIntervalSinceReferenceDate: 5)
        var bytes = Data([1, 2])
        var id = UUID(uuid: (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16))
        var link = URL(string: "https://example.com/a")!
        var price = Decimal(string: "2.5")!
        var nickname: String? = nil
        var huge = UInt64.max
        var small = Int8(-3)
        var ratio = Double.nan
        var kind = Kind.large
        var shape = Shape.square(side: 3)
        var counts = [1, 2]
        var date = 12  // a field named "date" is a number, not a date
    }

    @Test func encodesFoundationTypesAsThemselves() throws {
        guard case .dictionary(let fields) = try PredicateValue(encoding: Sample()) else { Issue.record("not a dictionary"); return }
        #expect(fields["when"] == .date(Date(timeIntervalSinceReferenceDate: 5)))
        #expect(fields["bytes"] == .data(Data([1, 2])))
        #expect(fields["id"] == .uuid(Sample().id))
        #expect(fields["link"] == .string("https://example.com/a"))
        #expect(fields["price"] == .double(2.5))
        #expect(fields["nickname"] == nil)  // encodeIfPresent: no key
        #expect(fields["huge"] == .double(Double(UInt64.max)))
        #expect(fields["small"] == .int(-3))
        if case .double(let ratio)? = fields["ratio"] { #expect(ratio.isNaN) } else { Issue.record("ratio") }
        #expect(fields["kind"] == .string("large"))
        #expect(fields["shape"] == .dictionary(["square": .dictionary(["side": .int(3)])]))
        #expect(fields["counts"] == .array([.int(1), .int(2)]))
        #expect(fields["date"] == .int(12))
        #expect(try FormatPredicate(format: "shape.square.side == 3 AND kind == 'large' AND nickname == nil")
            .evaluate(with: Sample()))
    }

    struct Person: Encodable {
        struct Address: Encodable { var city: String }
        var name: String
        var age: Int
        var address: Address?
        var tags: [String]
    }

    static let people = [
        Person(name: "Ann", age: 31, address: .init(city: "Oslo"), tags: ["a"]),
        Person(name: "Bo", age: 17, address: nil, tags: []),
        Person(name: "Cy", age: 45, address: .init(city: "Rome"), tags: ["a", "b"]),
    ]

    @Test("ValueColumns select what evaluating each value selects", arguments: [
        "age > 30", "address.city == 'Oslo'", "address == nil", "ANY tags == 'b'", "tags.@count == 0",
        "SELF.name BEGINSWITH 'C'", "nickname == nil", "name MATCHES '[A-C].'", "age BETWEEN {17, 31}",
        "SUBQUERY(tags, $t, $t == 'a').@count > 0", "address.city IN {'Rome', 'Paris'} OR age < 18",
    ])
    func columnsAgreeWithValues(format: String) throws {
        let predicate = try FormatPredicate(format: format)
        let columns = try ValueColumns(Self.people)
        let oneByOne = try Self.people.filter { try predicate.evaluate(with: $0) }.map(\.name)
        #expect(try predicate.filter(columns).map(\.name) == oneByOne)
        #expect(try predicate.matchingIndices(columns).map { Self.people[$0].name } == oneByOne)
        #expect(try predicate.filter(Self.people).map(\.name) == oneByOne)
    }

    @Test func dictionariesWithFewSharedKeysStayValueTrees() throws {
        // 20 000 dictionaries, each with a key of its own: columns would be 20 000 × 20 000 cells.
        let rows = (0..<20_000).map { ["k\($0)": $0, "n": $0] as [String: Any] }
        let columns = try ValueColumns(plain: rows)
        #expect(try FormatPredicate(format: "n < 3").matchingIndices(columns) == [0, 1, 2])
        #expect(try FormatPredicate(format: "k7 == 7").matchingIndices(columns) == [7])
    }

    @Test func columnsOfValuesThatAreNotDictionaries() throws {
        let words = try ValueColumns(plain: ["apple", "kiwi", "avocado"])
        #expect(try FormatPredicate(format: "SELF BEGINSWITH 'a'").filter(words) == ["apple", "avocado"])
        #expect(words.count == 3 && words[1] == "kiwi")
        let mixed = try ValueColumns(plain: [["n": 1] as [String: Any], 2 as Any])
        #expect(try FormatPredicate(format: "SELF == 2").matchingIndices(mixed) == [1])
        final class Opaque {}
        #expect(throws: PredicateEvaluationError.self) { try ValueColumns(plain: [Opaque()]) }
    }

    @Test func columnsReportErrorsAndMissingVariables() throws {
        let columns = try ValueColumns(Self.people)
        let error = #expect(throws: PredicateEvaluationError.self) {
            try FormatPredicate(format: "age > 3 AND name.first == 'A'").filter(columns)
        }
        #expect(error?.range == SourceRange(12, 22))
        let mismatch = #expect(throws: PredicateEvaluationError.self) { try FormatPredicate(format: "name > 3").filter(columns) }
        #expect(mismatch?.message == "> cannot compare a string with a number")
        let unbound = #expect(throws: PredicateEvaluationError.self) { try FormatPredicate(format: "age > $min").filter(columns) }
        #expect(unbound?.reason == .unboundVariable("min"))
        // A row compared as a whole is the dictionary it was.
        let ann = try FormatPredicate(format: "SELF == %@", PredicateValue(encoding: Self.people[0]))
        #expect(try ann.filter(Self.people).map(\.name) == ["Ann"])
        #expect(try ann.evaluate(with: PredicateValue(encoding: Self.people[0])))
        #expect(try ann.filter(columns).map(\.name) == ["Ann"])
    }

    @Test func readsKeyValueRecords() throws {
        // The record type of the model-bound tests, read here without a model.
        let people = [KeyValueTests.Person(name: "Ann", age: 31), KeyValueTests.Person(name: "Bo", age: 17)]
        #expect(try FormatPredicate(format: "age > 18 AND name BEGINSWITH[c] 'a'").filter(people).map(\.name) == ["Ann"])
    }

    @Test func variablesAreGivenAtEachEvaluation() throws {
        let older = try FormatPredicate(format: "age > $min")
        #expect(older.variables == ["min"])
        #expect(try older.evaluate(with: ["age": 31] as [String: Any], substitutionVariables: ["min": 30]))
        #expect(try !older.evaluate(with: ["age": 31] as [String: Any], substitutionVariables: ["min": 40]))
        #expect(throws: PredicateEvaluationError.self) { try older.evaluate(with: ["age": 31] as [String: Any]) }
        let fixed = try older.withSubstitutionVariables(["min": 30])
        #expect(fixed.variables.isEmpty)
        #expect(try fixed.evaluate(with: ["age": 31] as [String: Any]))
    }

    @Test func errorsPointIntoTheText() throws {
        let predicate = try FormatPredicate(format: "age > 3 AND name.first == 'A'")
        let error = #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: ["age": 5, "name": "Ann"]) }
        #expect(error?.message.contains("'first'") == true)
        #expect(error?.message.contains("a string") == true)
        #expect(error?.range == SourceRange(12, 22))
        let mismatch = #expect(throws: PredicateEvaluationError.self) {
            try FormatPredicate(format: "age > 3").evaluate(with: ["age": "old"])
        }
        #expect(mismatch?.message == "> cannot compare a string with a number")
        // Syntax errors are the parser's, as everywhere.
        #expect(throws: PredicateCompileError.self) { try FormatPredicate(format: "age >") }
    }

    @Test func aValueOfNoKnownTypeIsAnError() throws {
        final class Opaque {}
        #expect(throws: PredicateEvaluationError.self) { try FormatPredicate(format: "SELF == nil").evaluate(with: Opaque()) }
    }
}

/// A row-cache node read key by key: the company as records, relationships
/// followed lazily.
struct NodeRecord: KeyValueRecord {
    let node: RowNode
    let snapshot: RowSnapshot
    let model: DataModel

    func value(forKey key: String) -> KeyValueItem {
        let entity = model.entities[node.id.entity]
        switch entity.property(named: key) {
        case .attribute(let a)?:
            return .value(node.values[a.slot])
        case .relationship(let r)? where r.isToMany:
            let destination = model.entity(named: r.destination)!.index
            return .records((node.toMany[r.slot] ?? []).compactMap { key in
                snapshot.node(entity: destination, primaryKey: key).map { NodeRecord(node: $0, snapshot: snapshot, model: model) }
            })
        case .relationship(let r)?:
            let destination = model.entity(named: r.destination)!.index
            return .record(node.toOne[r.slot].flatMap { snapshot.node(entity: destination, primaryKey: $0) }
                .map { NodeRecord(node: $0, snapshot: snapshot, model: model) })
        case nil:
            return .value(.null)
        }
    }

    var objectReference: ObjectReference? {
        ObjectReference(entity: model.entities[node.id.entity].name, id: node.id.primaryKey)
    }
}

@Suite("Conformance corpus without a model")
struct ModelFreeCorpusTests {
    static let snapshot = Company.cache.snapshot()

    /// A node as a nested value: attributes, relationships as nested
    /// dictionaries and arrays down to `depth` (the corpus's key paths are
    /// no deeper).
    static func nested(_ node: RowNode, depth: Int) -> PredicateValue {
        let entity = Company.model.entities[node.id.entity]
        var fields: [String: PredicateValue] = [:]
        for attribute in entity.attributes { fields[attribute.name] = node.values[attribute.slot] }
        if depth > 0 {
            for r in entity.relationships {
                let destination = Company.model.entity(named: r.destination)!.index
                if r.isToMany {
                    fields[r.name] = .array((node.toMany[r.slot] ?? []).compactMap {
                        snapshot.node(entity: destination, primaryKey: $0).map { nested($0, depth: depth - 1) }
                    })
                } else {
                    fields[r.name] = node.toOne[r.slot].flatMap { snapshot.node(entity: destination, primaryKey: $0) }
                        .map { nested($0, depth: depth - 1) } ?? .null
                }
            }
        }
        return .dictionary(fields)
    }

    /// The cases that hold without a model: those that expect rows. (Errors
    /// the model finds — a key it has not, types that do not mix — are the
    /// model's to report.) A to-many relationship is a set, whose nil members
    /// a key path drops, as NSSet's `valueForKey:` does; a plain array keeps
    /// them, as NSArray's does: the nil-member cases differ by design.
    static let cases = CorpusCase.all.filter {
        guard case .matches = $0.expect else { return false }
        return !$0.id.hasPrefix("parity-nil-members")
    }

    @Test("Records and nested values select what the model selects", arguments: cases)
    func corpusCase(_ testCase: CorpusCase) throws {
        guard case .matches(let expected) = testCase.expect else { return }
        let predicate = try FormatPredicate(format: testCase.predicate, argumentArray: testCase.args ?? [])
        let entity = Company.model.entity(named: testCase.entity)!
        let nodes = Self.snapshot.nodes(entity: entity.index)
        let records = nodes.map { NodeRecord(node: $0, snapshot: Self.snapshot, model: Company.model) }
        let byRecord = try predicate.filter(records).map(\.node.id.primaryKey)
        #expect(byRecord.sorted() == expected.sorted(), "records: \(testCase.predicate)")
        // Nested values are plain values, not objects: predicates that compare
        // objects (SELF, or an object argument) are for records.
        func namesObjects(_ value: PredicateValue) -> Bool {
            switch value {
            case .object: true
            case .array(let members): members.contains(where: namesObjects)
            default: false
            }
        }
        guard !testCase.predicate.contains("SELF"), !(testCase.args ?? []).contains(where: namesObjects) else { return }
        let values = nodes.map { Self.nested($0, depth: 3) }
        var failed = false
        let byValue = zip(nodes, values).filter {
            do { return try predicate.evaluate(with: $0.1) } catch { failed = true; return false }
        }.map(\.0.id.primaryKey)
        #expect(byValue.sorted() == expected.sorted(), "nested values: \(testCase.predicate)")
        // The same values as columns: the same rows, or the same failure.
        let columns = try ValueColumns(plain: values)
        if failed {
            #expect(throws: PredicateEvaluationError.self) { try predicate.matchingIndices(columns) }
        } else {
            #expect(try predicate.matchingIndices(columns).map { nodes[$0].id.primaryKey } == byValue,
                    "columns: \(testCase.predicate)")
        }
    }
}
