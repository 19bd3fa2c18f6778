// Row batches: rows laid out by column give back exactly the values they
// were given, whatever the order of types and nils; and a fetch's nodes are
// views of one batch per entity.

import Foundation
import SiftMemory
import Sift
import SiftStore
import Testing

@Suite("Row batches")
struct RowBatchTests {
    /// A value of a random kind, often nil, sometimes of another type than
    /// the column's first.
    static func randomValue(_ kind: Int, _ generator: inout SystemRandomNumberGenerator) -> PredicateValue {
        let pick = Int.random(in: 0..<20, using: &generator)
        if pick < 4 { return .null }
        let kind = pick == 19 ? Int.random(in: 0..<7, using: &generator) : kind
        switch kind {
        case 0: return .int(Int64.random(in: .min ... .max, using: &generator))
        case 1: return .double([0, -0.0, .nan, .infinity, 1.5, Double.random(in: -1e9...1e9, using: &generator)].randomElement(using: &generator)!)
        case 2: return .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: -1_000_000...1_000_000, using: &generator)) / 7))
        case 3: return .bool(Bool.random(using: &generator))
        case 4: return .string(["", "a", "Ünïcödé", String(repeating: "long text ", count: Int.random(in: 1...5, using: &generator))]
            .randomElement(using: &generator)!)
        case 5: return .data(Data([1, 2, 3]))
        default: return .uuid(UUID())
        }
    }

    /// Two values the same in every respect: case, payload, NaN as NaN.
    static func same(_ a: PredicateValue, _ b: PredicateValue) -> Bool { String(reflecting: a) == String(reflecting: b) }

    /// Adds `value` to `column` the way a store that knows its type does
    /// (or, at random, as a plain value).
    static func add(_ value: PredicateValue, to column: ColumnBuilder, _ generator: inout SystemRandomNumberGenerator) {
        guard Bool.random(using: &generator) else { return column.append(value) }
        switch value {
        case .null: column.appendNull()
        case .int(let v): column.appendInteger(v)
        case .double(let v): column.appendDouble(v)
        case .date(let v): column.appendDate(secondsSinceReferenceDate: v.timeIntervalSinceReferenceDate)
        case .bool(let v): column.appendBool(v)
        case .string(let v): column.appendString(v)
        default: column.append(value)
        }
    }

    @Test("Every value read back as given: typed columns, leading and trailing nils, a type change midway, rows whole or by column")
    func valuesReadBackAsGiven() {
        var generator = SystemRandomNumberGenerator()
        for round in 0..<200 {
            let columns = Int.random(in: 0...6, using: &generator)
            let kinds = (0..<columns).map { _ in Int.random(in: 0..<7, using: &generator) }
            let builder = RowBatchBuilder(entity: 0, root: 0, attributeCount: columns, toOneCount: 1, toManyCount: 1)
            // One builder makes batch after batch, as a fetch's collector does.
            for _ in 0..<(round % 4 == 0 ? 3 : 1) {
                let rows = Int.random(in: 0...150, using: &generator)
                var given: [([PredicateValue], Int64?)] = []
                // Keys counting up by one and one version for all are kept as one
                // number each: keys and versions that keep to that, that never
                // do, and that do for a while and then stop (at `breakRow`).
                let keyPattern = Int.random(in: 0..<3, using: &generator)
                let versionPattern = Int.random(in: 0..<3, using: &generator)
                let breakRow = Int.random(in: 1...max(rows, 1), using: &generator)
                func key(_ row: Int) -> Int64 {
                    switch keyPattern {
                    case 0: return 100 + Int64(row)
                    case 1: return Int64(row) * 3
                    default: return row < breakRow ? 100 + Int64(row) : 1_000 + Int64(row) * 2
                    }
                }
                func version(_ row: Int) -> Int64 {
                    switch versionPattern {
                    case 0: return 7
                    case 1: return Int64(row) + 1
                    default: return row < breakRow ? 7 : 8
                    }
                }
                for row in 0..<rows {
                    let values = kinds.map { Self.randomValue($0, &generator) }
                    let toOne: Int64? = Bool.random(using: &generator) ? Int64.random(in: .min ... .max, using: &generator) : nil
                    if Bool.random(using: &generator) {
                        builder.beginRow(key: key(row), version: version(row))
                        for slot in values.indices { Self.add(values[slot], to: builder.column(slot).takeUnretainedValue(), &generator) }
                        builder.appendToOne(0, toOne)
                    } else {
                        builder.append(key: key(row), version: version(row), values: values, toOne: [toOne])
                    }
                    given.append((values, toOne))
                }
                let batch = builder.batch(fetchTimestamp: 42)
                #expect(batch.count == rows)
                for (row, (values, toOne)) in given.enumerated() {
                    let node = batch.node(at: row)
                    #expect(node.id == ObjectID(entity: 0, primaryKey: key(row)))
                    #expect(node.version == version(row))
                    #expect(node.fetchTimestamp == 42)
                    #expect(node.toOneKey(at: 0) == toOne)
                    #expect(node.toManyKeys(at: 0) == nil)
                    for slot in values.indices where !Self.same(node.value(at: slot), values[slot]) {
                        Issue.record("row \(row) slot \(slot): \(node.value(at: slot)) for \(values[slot])")
                    }
                    #expect(node.values.count == values.count)
                    #expect(node.value(at: columns) == .null)   // a slot the rows do not have
                    #expect(node.value(at: -1) == .null)
                }
            }
        }
    }

    @Test("A batch of rows given with their to-many keys keeps them; one read from a store has none loaded")
    func toManyKept() {
        var generator = SystemRandomNumberGenerator()
        let lists: [[[Int64]?]] = (0..<50).map { _ in
            (0..<3).map { _ in Bool.random(using: &generator) ? nil : (0..<Int.random(in: 0...4, using: &generator)).map { _ in Int64.random(in: 1...99, using: &generator) } }
        }
        let kept = RowBatchBuilder(entity: 0, root: 0, attributeCount: 1, toOneCount: 0, toManyCount: 3, storesToMany: true)
        let fetched = RowBatchBuilder(entity: 0, root: 0, attributeCount: 1, toOneCount: 0, toManyCount: 3)
        for (row, toMany) in lists.enumerated() {
            kept.append(key: Int64(row) + 1, version: 1, values: [.int(Int64(row))], toOne: [], toMany: toMany)
            fetched.append(key: Int64(row) + 1, version: 1, values: [.int(Int64(row))], toOne: [], toMany: toMany)
        }
        let keptBatch = kept.batch(fetchTimestamp: 1)
        let fetchedBatch = fetched.batch(fetchTimestamp: 1)
        for (row, toMany) in lists.enumerated() {
            #expect(keptBatch.node(at: row).toMany == toMany)
            #expect(keptBatch.node(at: row).toManyKeys(at: 3) == nil)
            #expect(fetchedBatch.node(at: row).toMany == [nil, nil, nil])
        }
    }

    @Test("A data set's nodes are one batch per entity, to-many keys included")
    func dataSetBatches() {
        let dataSet = Company.dataSet
        let employees = dataSet.nodes.filter { $0.batch.entity == dataSet.model.entity(named: "Employee")!.index }
        #expect(employees.count > 1)
        #expect(employees.allSatisfy { $0.batch === employees[0].batch })
        #expect(employees.contains { ($0.toManyKeys(at: 0)?.isEmpty == false) || ($0.toManyKeys(at: 1)?.isEmpty == false) })
        #expect(employees.allSatisfy { node in (0..<node.batch.toManyCount).allSatisfy { node.toManyKeys(at: $0) != nil } })
    }

    @Test("A node made alone is a batch of one row holding the arrays it was made from")
    func nodeMadeAlone() {
        let node = RowNode(id: ObjectID(entity: 1, primaryKey: 7), version: 3, fetchTimestamp: 5,
                           values: [.int(1), .null, .string("x")], toOne: [nil, 4], toMany: [[1, 2], nil])
        #expect(node.batch.count == 1)
        #expect(node.values == [.int(1), .null, .string("x")])
        #expect(node.toOne == [nil, 4])
        #expect(node.toMany == [[1, 2], nil])
        #expect(node.toOneKey(at: 5) == nil && node.toManyKeys(at: 5) == nil)
        let replaced = node.replacingToMany([nil, [9]])
        #expect(replaced.toMany == [nil, [9]])
        #expect(replaced.values == node.values && replaced.version == 3 && replaced.id == node.id)
    }

    @Test("A fetch's nodes share one batch per entity, in the order the store returned them",
          arguments: SQLStoreKind.allCases)
    func fetchedNodesShareABatch(_ kind: SQLStoreKind) throws {
        let tested = try kind.fresh()
        let store = tested.test.store
        let request = FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")])
        let fetch = try store.compile(request)
        let nodes = try store.rows(for: fetch)
        #expect(nodes.count > 10)
        #expect(Set(nodes.map { ObjectIdentifier($0.batch) }).count == 1)
        let context = tested.context()
        let objects = try context.fetch(request)
        #expect(nodes.map { $0.id } == objects.map { $0.objectID })
        for (node, object) in zip(nodes, objects) {
            #expect(node.value(at: 0) == (try object.value(forKey: store.model.entities[node.id.entity].attributes[0].name)))
        }
        withExtendedLifetime(context) {}
        // A few rows are nodes of their own; past a few, the first ones join the batch's columns.
        let few = RowCollector.fewRows
        for limit in [1, few, few + 1, 2 * few + 4] {
            var limited = request
            limited.fetchLimit = limit
            let rows = try store.rows(for: try store.compile(limited))
            #expect(rows.map { $0.id } == nodes.prefix(limit).map { $0.id })
            #expect(Set(rows.map { ObjectIdentifier($0.batch) }).count == (limit <= few ? limit : 1))
            for (node, full) in zip(rows, nodes) {
                #expect(String(reflecting: node.values) == String(reflecting: full.values))
                #expect(node.toOne == full.toOne && node.version == full.version)
            }
        }
    }
}
