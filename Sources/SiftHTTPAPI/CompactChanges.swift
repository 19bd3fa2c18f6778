// A save in the compact form of rows (`application/vnd.sift.rows`,
// openapi.yaml's `CompactRows`): the change set the remote store sends with
// that `Content-Type`, and the answer a server gives a client that prefers
// the form in `Accept`. Each entity is declared once, as in an answer of
// rows; each insert and update then gives every attribute's cell in that
// order and every to-one relationship's target, so that the server reads
// them by slot into its `SaveRequest` (SiftServer's ChangeSetReader.swift,
// with the checks it makes of a JSON change set), with no value container
// between. The identity (origin and sequence) comes last, so that the bytes
// before it are the change set's own: what a client keys its unanswered
// change sets by. Measured on the benchmarks' `remote` section: encoding and
// decoding the JSON change set and its answer were two thirds of a save's
// time through the server.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
internal import Foundation
import Sift
import SiftStore

/// A change set in the compact form (the client's side).
package enum CompactChangeSet {
    /// The change set's records, without its identity and end: nil when it names an entity, attribute or
    /// relationship `model` does not have (then sent as JSON, whose answer names what is wrong).
    package static func records(_ changes: BackendChanges<Int64>, model: DataModel) -> [UInt8]? {
        var writer = CompactWriter(capacity: 64 &+ 32 &* (changes.inserts.count &+ changes.updates.count))
        var declarations = CompactDeclarations()
        func declared(_ name: String) -> (Entity, UInt32)? {
            guard let entity = model.entity(named: name) else { return nil }
            return (entity, declarations.number(of: entity, in: &writer))
        }
        func target(_ object: BackendObject<Int64>?) {
            switch object {
            case nil: writer.u8(0)
            case .existing(let key): writer.u8(1); writer.i64(key)
            case .inserted(let temporary): writer.u8(2); writer.i64(temporary)
            }
        }
        /// Every attribute's cell and every to-one relationship's target; false when a name is not the entity's.
        func row(_ entity: Entity, number: UInt32, values: [String: PredicateValue], toOne: [String: BackendObject<Int64>]) -> Bool {
            var written = 0
            for (attribute, kind) in zip(entity.attributes, declarations.kinds[Int(number)]) {
                if let value = values[attribute.name] {
                    written &+= 1
                    // A transient attribute's value stays with the context, as a local store's save leaves it.
                    if attribute.isTransient { writer.u8(0) } else { writer.cell(value, kind) }
                } else {
                    writer.u8(0)
                }
            }
            var targets = 0
            for relationship in entity.relationships where !relationship.isToMany {
                let destination = toOne[relationship.name]
                if destination != nil { targets &+= 1 }
                target(destination)
            }
            return written == values.count && targets == toOne.count
        }
        for insert in changes.inserts {
            guard let (entity, number) = declared(insert.entityName) else { return nil }
            writer.record(.insert)
            writer.u32(number)
            writer.i64(insert.temporaryID)
            guard row(entity, number: number, values: insert.values, toOne: insert.toOne) else { return nil }
        }
        for update in changes.updates {
            guard let (entity, number) = declared(update.entityName) else { return nil }
            writer.record(.update)
            writer.u32(number)
            writer.i64(update.reference)
            writer.i64(update.expectedVersion)
            guard row(entity, number: number, values: update.values, toOne: update.toOne) else { return nil }
        }
        for delete in changes.deletes {
            guard let (_, number) = declared(delete.entityName) else { return nil }
            writer.record(.delete)
            writer.u32(number)
            writer.i64(delete.reference)
            if let version = delete.expectedVersion {
                writer.u8(1)
                writer.i64(version)
            } else {
                writer.u8(0)
            }
        }
        for link in changes.links {
            guard let (_, number) = declared(link.entityName) else { return nil }
            writer.record(.linkChange)
            writer.u32(number)
            writer.string(link.relationship)
            target(link.owner)
            writer.count(link.added.count)
            for added in link.added { target(added) }
            writer.count(link.removed.count)
            for removed in link.removed { writer.i64(removed) }
        }
        for kept in changes.kept {
            guard let (_, number) = declared(kept.entityName) else { return nil }
            writer.record(.kept)
            writer.u32(number)
            writer.i64(kept.reference)
        }
        return writer.bytes
    }

    /// A body: the change set's records (``records(_:model:)``), its identity, the end.
    package static func body(_ records: [UInt8], origin: String?, sequence: Int64?) -> [UInt8] {
        var writer = CompactWriter(capacity: 0)
        writer.bytes = records
        writer.record(.identity)
        if let origin {
            writer.u8(1)
            writer.string(origin)
        } else {
            writer.u8(0)
        }
        if let sequence {
            writer.u8(1)
            writer.i64(sequence)
        } else {
            writer.u8(0)
        }
        writer.record(.end)
        return writer.bytes
    }
}

/// A save's answer in the compact form: new versions, the keys of inserted objects, the change feed's token.
package struct CompactSaveAnswer: Sendable {
    /// Each written object's new version, by its key.
    package var versions: [Int64: Int64] = [:]
    /// Each inserted object's key, by its temporary ID.
    package var keys: [Int64: Int64] = [:]
    /// The change feed's token after the save.
    package var token = ""

    /// The body of an answer (the server's side).
    ///
    /// - Parameters:
    ///   - versions: The written objects: entity name, key, new version.
    ///   - keys: The inserted objects: temporary ID, key.
    ///   - token: The change feed's token after the save.
    package static func body(versions: [(entity: String, key: Int64, version: Int64)], keys: [(temporaryID: Int64, key: Int64)],
                             token: String) -> [UInt8] {
        var writer = CompactWriter(capacity: 64 &+ 16 &* (versions.count &+ keys.count))
        // Each entity's objects as one record (the versions come grouped by entity, or nearly).
        var start = versions.startIndex
        while start < versions.endIndex {
            let entity = versions[start].entity
            let end = versions[start...].firstIndex { $0.entity != entity } ?? versions.endIndex
            writer.record(.versions)
            writer.string(entity)
            writer.count(end &- start)
            for version in versions[start..<end] {
                writer.i64(version.key)
                writer.i64(version.version)
            }
            start = end
        }
        writer.record(.keys)
        writer.count(keys.count)
        for key in keys {
            writer.i64(key.temporaryID)
            writer.i64(key.key)
        }
        writer.record(.token)
        writer.string(token)
        writer.record(.end)
        return writer.bytes
    }

    /// Reads an answer (the client's side).
    ///
    /// - Throws: `WireError` for a body that is not a save's answer in the compact form.
    package init(_ body: UnsafeRawBufferPointer) throws(WireError) {
        var reader = CompactReader(body)
        try reader.magic()
        reading: while true {
            let record = try reader.record()
            switch record {
            case .end:
                break reading
            case .versions:
                _ = try reader.string()
                let count = try reader.count(of: 16)
                versions.reserveCapacity(versions.count &+ count)
                for _ in 0..<count { versions[try reader.i64()] = try reader.i64() }
            case .keys:
                let count = try reader.count(of: 16)
                keys.reserveCapacity(keys.count &+ count)
                for _ in 0..<count { keys[try reader.i64()] = try reader.i64() }
            case .token:
                token = try reader.string()
            default:
                throw WireError("a save's answer holds no record \(record.rawValue)")
            }
        }
        guard reader.remaining == 0 else { throw WireError("the compact rows go on after their end") }
    }
}
#endif
