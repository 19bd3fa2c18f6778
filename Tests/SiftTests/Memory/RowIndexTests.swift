// The row cache's index by primary key: random changes give what a
// dictionary gives, entries come back in key order, and a copy taken before
// a change keeps what it saw.

import Foundation
import SiftMemory
import Sift
import Testing

@Suite("Row index")
struct RowIndexTests {
    /// A node for `key` whose single value tells the nodes apart.
    static func node(_ key: Int64, _ tag: Int64) -> RowNode {
        RowNode(id: ObjectID(entity: 0, primaryKey: key), values: [.int(tag)], toOne: [])
    }

    /// Keys dense from 1, a few negative, a few far beyond, and some in the
    /// gap the pages grow into later (so entries move out of the overflow).
    static func randomKey(_ generator: inout SystemRandomNumberGenerator) -> Int64 {
        switch Int.random(in: 0..<10, using: &generator) {
        case 0: return -Int64.random(in: 1...5_000, using: &generator)
        case 1: return Int64.random(in: 1 << 40 ... 1 << 41, using: &generator)
        case 2: return [Int64.min, Int64.max, 0].randomElement(using: &generator)!
        case 3: return Int64.random(in: 60_000...400_000, using: &generator)
        default: return Int64.random(in: 1...20_000, using: &generator)
        }
    }

    static func contents(_ index: RowIndex) -> [(Int64, Int64?, Int32)] {
        var seen: [(Int64, Int64?, Int32)] = []
        index.forEach { key, entry in
            if case .int(let tag)? = entry.node?.value(at: 0) { seen.append((key, tag, entry.references)) } else { seen.append((key, nil, entry.references)) }
        }
        return seen
    }

    static func expected(_ model: [Int64: (tag: Int64?, references: Int32)]) -> [(Int64, Int64?, Int32)] {
        model.sorted { $0.key < $1.key }.map { ($0.key, $0.value.tag, $0.value.references) }
    }

    @Test("random changes give what a dictionary gives, in key order; copies keep what they saw")
    func randomChanges() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20 {
            var index = RowIndex()
            var model: [Int64: (tag: Int64?, references: Int32)] = [:]
            var copies: [(RowIndex, [(Int64, Int64?, Int32)])] = []
            for step in 0..<4_000 {
                let key = Self.randomKey(&generator)
                switch Int.random(in: 0..<4, using: &generator) {
                case 0:   // store a node
                    let tag = Int64(step)
                    index.modify(key) { entry in
                        if entry == nil { entry = CachedRow(node: nil) }
                        entry?.node = Self.node(key, tag)
                    }
                    model[key, default: (nil, 0)].tag = tag
                case 1:   // register
                    index.modify(key) { entry in
                        if entry == nil { entry = CachedRow(node: nil, references: 1) } else { entry?.references += 1 }
                    }
                    model[key, default: (nil, 0)].references += 1
                case 2:   // unregister: the last one purges
                    index.modify(key) { entry in
                        guard let references = entry?.references, references > 0 else { return }
                        if references == 1 { entry = nil } else { entry?.references = references - 1 }
                    }
                    if let references = model[key]?.references, references > 0 {
                        if references == 1 { model[key] = nil } else { model[key]?.references = references - 1 }
                    }
                default:  // remove the node, keep the references
                    index.modify(key) { $0?.node = nil }
                    model[key]?.tag = nil
                    if model[key]?.references == 0 { model[key] = nil }
                }
                if step % 500 == 0 { copies.append((index, Self.contents(index))) }
                #expect(index[key]?.references == model[key]?.references)
            }
            let seen = Self.contents(index)
            let wanted = Self.expected(model)
            #expect(seen.map(\.0) == wanted.map(\.0))
            #expect(seen.map(\.1) == wanted.map(\.1))
            #expect(seen.map(\.2) == wanted.map(\.2))
            #expect(index.count == model.count)
            for (copy, then) in copies {
                let now = Self.contents(copy)
                #expect(now.map(\.0) == then.map(\.0) && now.map(\.1) == then.map(\.1) && now.map(\.2) == then.map(\.2))
            }
        }
    }

    @Test("keys too sparse to fill pages go to the dictionary: a page is not spent on each")
    func sparseKeys() {
        var index = RowIndex()
        for step in Int64(1)...10_000 { index.modify(step * 1_024) { $0 = CachedRow(node: Self.node(step * 1_024, step)) } }
        #expect(index.count == 10_000)
        #expect(index.pageCount <= 8)
        // Dense keys among them still fill pages, and every key is found, in order.
        for key in Int64(1)...30_000 { index.modify(key) { $0 = $0 ?? CachedRow(node: Self.node(key, key)) } }
        #expect(index.pageCount >= 29)
        #expect(index[5 * 1_024]?.node?.value(at: 0) == .int(5))
        #expect(index[9_000 * 1_024]?.node?.value(at: 0) == .int(9_000))
        #expect(index[29_999]?.node?.value(at: 0) == .int(29_999))
        let keys = Self.contents(index).map(\.0)
        #expect(keys == keys.sorted() && Set(keys).count == keys.count && keys.count == index.count)
    }

    @Test("an emptied index holds no pages' entries and reads nil everywhere")
    func emptied() {
        var index = RowIndex()
        for key in Int64(1)...5_000 { index.modify(key) { $0 = CachedRow(node: nil, references: 1) } }
        #expect(index.count == 5_000)
        for key in Int64(1)...5_000 { index.modify(key) { $0 = nil } }
        #expect(index.count == 0)
        #expect(index[1] == nil && index[4_999] == nil && index[-1] == nil)
        #expect(Self.contents(index).isEmpty)
    }
}
