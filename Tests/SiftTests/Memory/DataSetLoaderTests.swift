// The data-set loader at its edges: ids anywhere in 64 bits (dense, sparse,
// negative), links listed from either side in any order with repeats,
// subentities sharing a table, numbers at the edges of what JSON and the
// attribute types hold, and malformed data sets; random data sets load to
// the links they were made from.

import Foundation
import PropertyBased
import Sift
import SiftStore
import Testing

@Suite("Data-set loader")
struct DataSetLoaderTests {
    static let model = try! DataModel([
        Entity("A", attributes: [Attribute("x", .integer64)],
               relationships: [Relationship("bs", to: "B", toMany: true, inverse: "a")]),
        Entity("B", relationships: [Relationship("a", to: "A", inverse: "bs")]),
    ])

    static func nodes(_ set: DataSet) -> [ObjectID: RowNode] {
        Dictionary(uniqueKeysWithValues: set.nodes.map { ($0.id, $0) })
    }

    /// What loading throws: the message of its `DataSetError`, or nil when it loads.
    static func message(_ body: () throws -> DataSet) -> String? {
        do {
            _ = try body()
            return nil
        } catch let error as DataSetError {
            return error.message
        } catch {
            return "not a DataSetError: \(error)"
        }
    }

    @Test("Ids at the edges of 64 bits, sparse or dense, link both ways", arguments: [
        [Int64.min, 0, Int64.max], [1, 1_000_000_000_000], [-5, -4, -3], [7], [Int64.max - 1, Int64.max],
    ])
    func idsAnywhere(_ ids: [Int64]) throws {
        let objects: [String: [[String: PredicateValue]]] = [
            "A": ids.map { ["id": .int($0), "x": .int($0), "bs": .array([.int($0)])] },
            "B": ids.reversed().map { ["id": .int($0), "a": .int($0)] },
        ]
        let nodes = Self.nodes(try DataSet(model: Self.model, objects: objects))
        #expect(nodes.count == 2 * ids.count)
        for id in ids {
            #expect(nodes[ObjectID(entity: 0, primaryKey: id)]?.values == [.int(id)])
            #expect(nodes[ObjectID(entity: 0, primaryKey: id)]?.toMany == [[id]])
            #expect(nodes[ObjectID(entity: 1, primaryKey: id)]?.toOne == [id])
        }
        // Nodes come table by table, in key order.
        let set = try DataSet(model: Self.model, objects: objects)
        #expect(set.nodes.map(\.id.primaryKey) == ids.sorted() + ids.sorted())
    }

    @Test("Links to ids outside the table's range are missing", arguments: [Int64.min, -1, 0, 3, Int64.max])
    func missingTargets(_ target: Int64) {
        let objects: [String: [[String: PredicateValue]]] = [
            "A": [["id": 1, "x": 0, "bs": .array([.int(target)])]], "B": [["id": 1], ["id": 2]],
        ]
        let message = Self.message { try DataSet(model: Self.model, objects: objects) }
        if target == 1 || target == 2 { return }
        #expect(message?.contains("points to the missing 'B' \(target)") == true, "\(String(describing: message))")
        let fromB: [String: [[String: PredicateValue]]] = ["A": [["id": 1, "x": 0]], "B": [["id": 1, "a": .int(target)]]]
        let other = Self.message { try DataSet(model: Self.model, objects: fromB) }
        #expect(other?.contains("'A.bs' links the missing 'A' \(target)") == true, "\(String(describing: other))")
    }

    @Test func repeatsAndOrderDoNotMatter() throws {
        let objects: [String: [[String: PredicateValue]]] = [
            "A": [["id": 2, "x": 0, "bs": [12, 10, 12]], ["id": 1, "x": 0, "bs": [11]]],
            "B": [["id": 12, "a": 2], ["id": 10, "a": 2], ["id": 11, "a": 1]],
        ]
        let nodes = Self.nodes(try DataSet(model: Self.model, objects: objects))
        #expect(nodes[ObjectID(entity: 0, primaryKey: 2)]?.toMany == [[10, 12]])
        #expect(nodes[ObjectID(entity: 0, primaryKey: 1)]?.toMany == [[11]])
        #expect(nodes[ObjectID(entity: 1, primaryKey: 12)]?.toOne == [2])
    }

    @Test func anEmptyToManyLeavesTheOtherSideToSay() throws {
        // Empty arrays list no link: the inverse's links stand.
        let objects: [String: [[String: PredicateValue]]] = ["A": [["id": 1, "x": 0, "bs": []]], "B": [["id": 10, "a": 1]]]
        let nodes = Self.nodes(try DataSet(model: Self.model, objects: objects))
        #expect(nodes[ObjectID(entity: 0, primaryKey: 1)]?.toMany == [[10]])
        // A null to-one lists "no link": the other side must agree.
        let nulls: [String: [[String: PredicateValue]]] = ["A": [["id": 1, "x": 0, "bs": [10]]], "B": [["id": 10, "a": nil]]]
        #expect(Self.message { try DataSet(model: Self.model, objects: nulls) }?.contains("disagree") == true)
    }

    @Test("Bad relationships and ids", arguments: [
        (["A": [["id": 1, "x": 0, "bs": [10]]], "B": [["id": 10], ["id": 11, "a": 1]]], "disagree"),
        (["A": [["id": 1, "x": 0], ["id": 2, "x": 0, "bs": [10]]], "B": [["id": 10, "a": 1]]], "disagree"),
        (["A": [["id": 1, "x": 0, "bs": [10]], ["id": 2, "x": 0, "bs": [10]]], "B": [["id": 10]]], "several destinations"),
        (["A": [["id": 1, "x": 0, "bs": ["10"]]], "B": [["id": 10]]], "must list integer ids"),
        (["A": [["id": 1, "x": 0, "bs": 10]], "B": [["id": 10]]], "must be an array of ids"),
        (["A": [["id": 1, "x": 0]], "B": [["id": 10, "a": [1]]]], "must be an id or null"),
        (["A": [["id": 1, "x": 0], ["id": 1, "x": 1]]], "two objects of 'A' have the id 1"),
        (["A": [["id": 1.5, "x": 0]]], "not a 64-bit integer"),
        (["A": [["id": 1, "x": 0, "x2": 1]]], "'x2', which is not a property"),
    ] as [([String: [[String: PredicateValue]]], String)])
    func rejects(_ objects: [String: [[String: PredicateValue]]], _ reason: String) {
        let message = Self.message { try DataSet(model: Self.model, objects: objects) }
        #expect(message?.contains(reason) == true, "\(String(describing: message))")
    }

    @Test func subentitiesShareTheirRootsIds() throws {
        let model = try DataModel([
            Entity("P", attributes: [Attribute("n", .integer64, optional: true)]),
            Entity("Q", superentity: "P", attributes: [Attribute("m", .integer64, optional: true)]),
            Entity("L", relationships: [Relationship("p", to: "P")]),
        ])
        let shared: [String: [[String: PredicateValue]]] = ["P": [["id": 1]], "Q": [["id": 1, "m": 2]]]
        #expect(Self.message { try DataSet(model: model, objects: shared) }?
            .contains("'Q' 1 and 'P' 1 share an id") == true)
        let set = try DataSet(model: model, objects: ["P": [["id": 3]], "Q": [["id": 2, "n": 1, "m": 2]], "L": [["id": 1, "p": 2]]])
        #expect(set.nodes.map(\.id.primaryKey) == [2, 3, 1])
        #expect(set.nodes.first { $0.id.primaryKey == 1 }?.toOne == [2])
    }

    @Test func anAttributeNamedIdIsNotTheKey() throws {
        let model = try DataModel([Entity("E", attributes: [Attribute("id", .integer64, optional: true)])])
        let set = try DataSet(model: model, objects: ["E": [["id": 5]]])
        #expect(set.nodes.map(\.id.primaryKey) == [5])
        #expect(set.nodes.first?.values == [.null])
    }

    /// A data set with one entity "E" of one attribute "n" of `type`, and
    /// one object whose "n" is the JSON text `value`.
    static func dataSet(_ type: String, _ value: String) -> Data {
        Data((#"{"model": {"entities": [{"name": "E", "attributes": [{"name": "n", "type": "\#(type)", "optional": true}]}]}, "#
            + #""objects": {"E": [{"id": 1, "n": \#(value)}]}}"#).utf8)
    }

    @Test("Numbers at the edges", arguments: [
        ("double", "9223372036854775808", PredicateValue.double(9_223_372_036_854_775_808)),
        ("double", "-9223372036854775809", .double(-9_223_372_036_854_775_809)),
        ("double", "123456789012345678901234567890", .double(123_456_789_012_345_678_901_234_567_890)),
        ("double", "1e308", .double(1e308)), ("double", "5e-324", .double(5e-324)), ("double", "1e-400", .double(0)),
        ("double", "-0.0", .double(-0.0)), ("double", "3", .double(3)), ("integer64", "-0", .int(0)),
        ("integer64", "9223372036854775807", .int(Int64.max)), ("integer64", "-9223372036854775808", .int(Int64.min)),
        ("integer64", "1e15", .int(1_000_000_000_000_000)), ("integer16", "32767", .int(32767)),
        ("string", #""Ren\u00e9e \ud83d\ude00""#, .string("Renée 😀")), ("string", #""é""#, .string("é")),
        ("boolean", "true", .bool(true)), ("double", "null", .null),
        ("date", #"{"date": 1.5}"#, .date(Date(timeIntervalSinceReferenceDate: 1.5))),
        ("date", "86400", .date(Date(timeIntervalSinceReferenceDate: 86_400))), ("date", #""2001-01-02""#, .date(Date(timeIntervalSinceReferenceDate: 86_400))),
    ])
    func numbersAtTheEdges(_ type: String, _ text: String, _ expected: PredicateValue) throws {
        let values = try DataSet(json: Self.dataSet(type, text)).nodes.first?.values
        #expect(values == [expected], "\(type) \(text)")
        if case .double(let d) = expected, d == 0 {
            if case .double(let read)? = values?.first { #expect(read.sign == d.sign, "\(text)") }
        }
    }

    @Test("Numbers that do not fit", arguments: [
        ("integer64", "9223372036854775808", "integer64"), ("integer64", "-9223372036854775809", "integer64"),
        ("integer64", "1.5", "integer64"), ("integer64", "1e19", "integer64"), ("integer16", "32768", "integer16"),
        ("double", "1e400", "not valid JSON"), ("double", "-1e400", "not valid JSON"), ("double", "1e999999999999", "not valid JSON"),
    ])
    func numbersThatDoNotFit(_ type: String, _ text: String, _ fragment: String) {
        let message = Self.message { try DataSet(json: Self.dataSet(type, text)) }
        #expect(message?.contains(fragment) == true, "\(type) \(text): \(String(describing: message))")
    }

    @Test("Malformed data sets are typed errors", arguments: [
        ("", "empty"), ("[]", "not valid JSON"), ("{", "not valid JSON"), (#"{"model": {"entities": []}, "objects": {}"#, "not valid JSON"),
        (#"{"model": {"entities": []}, "objects": {},}"#, "not valid JSON"), (#"{"model": {"entities": []}, "objects": {}} x"#, "not valid JSON"),
        (#"{"model": {"entities": []}, "objects": []}"#, "not an object of arrays"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": {}}}"#, "not an array"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [1]}}"#, "not a JSON object"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 1}, {"id": 1}]}}"#, "two objects"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 1, "id": 2}, {"id": 2}]}}"#, "two objects"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": "1"}]}}"#, "not a 64-bit integer"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 1, "n": "\ud800"}]}}"#, "lone surrogate"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 1, "n": "a"#, "not closed"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 01}]}}"#, "leading zero"),
        (#"{"model": {"entities": [{"name": "E"}]}, "objects": {"F": []}}"#, "not an entity"),
    ])
    func malformed(_ text: String, _ fragment: String) {
        let message = Self.message { try DataSet(json: Data(text.utf8)) }
        #expect(message?.contains(fragment) == true, "\(text): \(String(describing: message))")
    }

    @Test func invalidUTF8AfterASCII() {
        let head = #"{"model": {"entities": [{"name": "E", "attributes": [{"name": "n", "type": "string"}]}]}, "objects": {"E": [{"id": 1, "n": "abc"#
        for bytes: [UInt8] in [[0xC3, 0x28], [0xFF], [0xE2, 0x82], [0xED, 0xA0, 0x80]] {
            let data = Data(head.utf8) + Data(bytes) + Data(#""}]}}"#.utf8)
            let message = Self.message { try DataSet(json: data) }
            #expect(message?.contains("not UTF-8") == true, "\(bytes): \(String(describing: message))")
        }
    }

    /// A random data set of the A–B model: its links, listed from A's side,
    /// B's side or both, in a random order with repeats, and the ids dense,
    /// sparse or negative.
    @Test("Random data sets load to the links they were made from")
    func randomDataSets() async {
        await propertyCheck(count: 200, input: Gen.uint64(in: 0...UInt64.max)) { seed in
            var generator = SplitMix64(seed: seed)
            func pick(_ n: Int) -> Int { Int(generator.next() % UInt64(n)) }
            let spreads: [Int64] = [1, 1_000, -3, Int64.max / 128]
            let spread = spreads[pick(4)]
            let aIDs = Array(Set((0..<pick(30)).map { _ in Int64(pick(40)) * spread }))
            let bIDs = Array(Set((0..<pick(60)).map { _ in Int64(pick(80)) * spread }))
            var owner: [Int64: Int64] = [:]
            for b in bIDs where !aIDs.isEmpty && pick(3) > 0 { owner[b] = aIDs[pick(aIDs.count)] }
            let side = pick(3)
            let aObjects: [[String: PredicateValue]] = aIDs.shuffled(using: &generator).map { a in
                var object: [String: PredicateValue] = ["id": .int(a), "x": .int(a)]
                if side != 1 {
                    var targets = owner.filter { $0.value == a }.map(\.key)
                    if let first = targets.first, pick(2) == 0 { targets.append(first) }
                    object["bs"] = .array(targets.shuffled(using: &generator).map { .int($0) })
                }
                return object
            }
            let bObjects: [[String: PredicateValue]] = bIDs.shuffled(using: &generator).map { b in
                var object: [String: PredicateValue] = ["id": .int(b)]
                if side != 0 { object["a"] = owner[b].map { .int($0) } ?? .null }
                return object
            }
            let set: DataSet
            do {
                set = try DataSet(model: Self.model, objects: ["A": aObjects, "B": bObjects])
            } catch {
                Issue.record("seed \(seed): \(error)")
                return
            }
            let nodes = Self.nodes(set)
            #expect(set.nodes.count == aIDs.count + bIDs.count)
            for a in aIDs {
                let expected = owner.filter { $0.value == a }.map(\.key).sorted()
                #expect(nodes[ObjectID(entity: 0, primaryKey: a)]?.toMany == [expected], "seed \(seed)")
            }
            for b in bIDs {
                #expect(nodes[ObjectID(entity: 1, primaryKey: b)]?.toOne == [owner[b]], "seed \(seed)")
            }
            // One link moved on one side only, when both are listed: the sides disagree.
            if side == 2, let link = owner.first, let other = aIDs.first(where: { $0 != link.value }) {
                let moved = bObjects.map { object -> [String: PredicateValue] in
                    var object = object
                    if object["id"] == .int(link.key) { object["a"] = .int(other) }
                    return object
                }
                let message = Self.message {
                    try DataSet(model: Self.model, objects: ["A": aObjects, "B": moved])
                }
                #expect(message?.contains("disagree") == true, "seed \(seed): \(String(describing: message))")
            }
        }
    }
}
