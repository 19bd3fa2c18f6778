// The row cache and the data-set loader.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Row cache")
struct RowCacheTests {
    static let model = try! DataModel([
        Entity("A", attributes: [Attribute("x", .integer64)],
               relationships: [Relationship("bs", to: "B", toMany: true, inverse: "a")]),
        Entity("B", relationships: [Relationship("a", to: "A", inverse: "bs")]),
    ])

    @Test func nodesHoldSlotsVersionsAndTimestamps() throws {
        let set = try DataSet(model: Self.model, objects: ["A": [["id": 1, "x": 5, "bs": [10, 11]]], "B": [["id": 10], ["id": 11]]])
        let cache = set.makeRowCache()
        let a = try #require(cache.node(ObjectID(entity: 0, primaryKey: 1)))
        #expect(a.values == [.int(5)])
        #expect(a.toMany == [[10, 11]])
        #expect(a.version == 1)
        #expect(a.fetchTimestamp <= Date().timeIntervalSinceReferenceDate)
        let b = try #require(cache.node(ObjectID(entity: 1, primaryKey: 11)))
        #expect(b.toOne == [1])  // derived from the inverse
    }

    @Test func unregisteringTheLastReferencePurges() {
        let cache = RowCache(model: Self.model)
        let id = ObjectID(entity: 0, primaryKey: 1)
        cache.store([RowNode(id: id, values: [.int(1)], toMany: [[]])])
        cache.register(id)
        cache.register(id)
        #expect(cache.referenceCount(id) == 2)
        cache.unregister(id)
        #expect(cache.node(id) != nil)
        cache.unregister(id)
        #expect(cache.node(id) == nil)
        #expect(cache.referenceCount(id) == 0)
    }

    @Test func concurrentUseIsSafe() async {
        let cache = RowCache(model: Self.model)
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<500 {
                        let id = ObjectID(entity: 0, primaryKey: Int64(worker * 1000 + i))
                        cache.store([RowNode(id: id, values: [.int(Int64(i))], toMany: [[]])])
                        cache.register(id)
                        _ = cache.snapshot()
                    }
                }
            }
        }
        #expect(cache.count == 4000)
    }

    @Test("Loader: either side, or both when they agree", arguments: [
        ["A": [["id": 1, "x": 0, "bs": [10]]], "B": [["id": 10]]],
        ["A": [["id": 1, "x": 0]], "B": [["id": 10, "a": 1]]],
        ["A": [["id": 1, "x": 0, "bs": [10]]], "B": [["id": 10, "a": 1]]],
    ] as [[String: [[String: PredicateValue]]]])
    func eitherSide(_ objects: [String: [[String: PredicateValue]]]) throws {
        let set = try DataSet(model: Self.model, objects: objects)
        let nodes = Dictionary(uniqueKeysWithValues: set.nodes.map { ($0.id, $0) })
        #expect(nodes[ObjectID(entity: 0, primaryKey: 1)]?.toMany == [[10]])
        #expect(nodes[ObjectID(entity: 1, primaryKey: 10)]?.toOne == [1])
    }

    @Test("Loader rejects bad data", arguments: [
        (["A": [["id": 1, "x": 0, "bs": [10]]], "B": [["id": 10, "a": nil], ["id": 11, "a": 1]]], "disagree"),
        (["A": [["id": 1, "x": 0, "bs": [99]]], "B": []], "missing 'B' 99"),
        (["A": [["id": 1, "x": "five"]]], "must be integer64"),
        (["A": [["id": 1]]], "is not optional"),
        (["A": [["id": 1, "x": 0], ["id": 1, "x": 1]]], "two objects"),
        (["A": [["x": 0]]], "no integer \"id\""),
        (["C": []], "not an entity"),
        (["A": [["id": 1, "x": 0, "y": 2]]], "not a property"),
    ] as [([String: [[String: PredicateValue]]], String)])
    func rejects(_ objects: [String: [[String: PredicateValue]]], _ reason: String) {
        do {
            _ = try DataSet(model: Self.model, objects: objects)
            Issue.record("loaded, but should fail with \(reason)")
        } catch {
            #expect(error.message.contains(reason), "\(error.message)")
        }
    }

    @Test func companyDataSetLoads() {
        #expect(Company.dataSet.nodes.count == 8 + 60 + 11)
    }
}
