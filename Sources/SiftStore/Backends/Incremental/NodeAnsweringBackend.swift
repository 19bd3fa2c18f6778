// A backend that answers with the row cache's own nodes: rows already laid
// out by column (`RowCollector`), so that the incremental store takes them
// as they are rather than reading rows by name (`BackendRow`) into nodes.
// The remote store reads its server's compact form this way (SiftHTTPAPI's
// CompactRows.swift). The nodes carry the backend's references as their
// keys (and to-one keys); the store makes them its own keys, which are the
// same but for objects it knows under another key (a reference renamed).

import Foundation
import Sift

/// An incremental store's backend whose references are `Int64` and whose rows come as the row cache's nodes,
/// keyed by their references.
package protocol NodeAnsweringBackend: AnyObject {
    /// The nodes of the rows a fetch selects, in its order (as `fetch(_:)` answers).
    func fetchNodes(_ fetch: BackendFetch) throws -> [RowNode]
    /// The nodes of the rows with these references that the backend holds (as `rows(_:entityName:)` answers).
    func nodes(_ references: [Int64], entityName: String) throws -> [RowNode]
}

extension IncrementalStore {
    /// Backend rows as the row cache holds them, checked against the model and keyed by their references
    /// (as ``NodeAnsweringBackend`` answers): for one that got rows by name (a server without the compact
    /// form, the disk cache).
    ///
    /// - Throws: `StoreError.server` for a row that does not fit the model.
    package func makeNodes(_ rows: [BackendRow<Backend.Reference>]) throws(StoreError) -> [RowNode] {
        try nodes(rows, byReference: true)
    }

    /// Nodes a ``NodeAnsweringBackend`` gave, keyed by its references, with the store's keys: each reference
    /// (the row's own, and its to-one destinations') given its key as ``IncrementalStore/nodes(_:)`` gives
    /// it, and a node made again only where a key differs from its reference.
    func keyed(_ nodes: [RowNode]) throws(StoreError) -> [RowNode] {
        // (Checked once: a cast per key cost more than the rest of the loop.)
        guard Backend.Reference.self == Int64.self else { throw .unexpected("a backend of nodes has Int64 references") }
        let model = self.model
        let backend = self.backend
        // Each entity's to-one slots and their destinations' roots, worked out once (not per node).
        var destinations: [Int: [(slot: Int, root: Int)]] = [:]
        func toOneDestinations(_ entity: Int) -> [(slot: Int, root: Int)] {
            if let known = destinations[entity] { return known }
            let found = model.entities[entity].relationships.compactMap { relationship -> (slot: Int, root: Int)? in
                guard !relationship.isToMany, let destination = model.entity(named: relationship.destination) else { return nil }
                return (relationship.slot, destination.rootIndex)
            }
            destinations[entity] = found
            return found
        }
        return try references.withLock { table throws(StoreError) -> [RowNode] in
            func key(_ reference: Int64, root: Int) throws(StoreError) -> Int64 {
                let reference = unsafeBitCast(reference, to: Backend.Reference.self)
                if let key = table.key(for: reference, root: root) { return key }
                guard let key = table.add(reference, root: root, preferred: backend.primaryKey(for: reference)) else {
                    throw .keysExhausted(entity: model.entities[root].name)
                }
                return key
            }
            var result = nodes
            for (index, node) in nodes.enumerated() {
                let id = node.id
                let own = try key(id.primaryKey, root: id.root)
                var toOne: [Int64?]?
                for (slot, root) in toOneDestinations(id.entity) {
                    guard let target = node.toOneKey(at: slot) else { continue }
                    let mapped = try key(target, root: root)
                    if mapped != target {
                        if toOne == nil { toOne = node.toOne }
                        toOne?[slot] = mapped
                    }
                }
                guard own != id.primaryKey || toOne != nil else { continue }
                result[index] = RowNode(id: ObjectID(entity: id.entity, root: id.root, primaryKey: own), version: node.version,
                                        fetchTimestamp: node.fetchTimestamp, values: node.values, toOne: toOne ?? node.toOne,
                                        toMany: node.toMany)
            }
            return result
        }
    }
}
