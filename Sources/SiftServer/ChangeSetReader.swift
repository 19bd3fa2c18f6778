// A change set as the API receives it (names, keys, temporary numbers),
// checked against the model and read into the store's `SaveRequest`: values
// converted to their attributes' types, to-one targets to keys (negative
// for objects the same change set inserts). The store applies it in one
// transaction with its own delete rules and optimistic locking.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

struct SaveRequestReader {
    let model: DataModel

    /// The most changes a change set holds.
    static let changeLimit = 100_000

    func request(_ changes: Components.Schemas.ChangeSet) throws -> SaveRequest {
        var request = SaveRequest()
        let total = (changes.inserts?.count ?? 0) + (changes.updates?.count ?? 0) + (changes.deletes?.count ?? 0)
            + (changes.links?.count ?? 0)
        try checkTotal(total)
        var inserted = Set<Int64>()
        for insert in changes.inserts ?? [] { try checkTemporaryID(insert.temporaryID, inserted: &inserted) }
        for insert in changes.inserts ?? [] {
            let entity = try self.entity(insert.entity, concrete: true)
            request.inserts.append(SaveRequest.Insert(
                id: ObjectID(entity: entity, primaryKey: insert.temporaryID),
                values: try values(insert.values, of: entity), toOne: try toOne(insert.toOne, of: entity, inserted: inserted)))
        }
        for update in changes.updates ?? [] {
            let entity = try self.entity(update.entity, concrete: true)
            try checkKey(update.key)
            request.updates.append(SaveRequest.Update(
                id: ObjectID(entity: entity, primaryKey: update.key), expectedVersion: update.expectedVersion,
                attributeSlots: entity.attributes.map(\.slot), toOneSlots: Self.toOneSlots(of: entity),
                values: try values(update.values, of: entity), toOne: try toOne(update.toOne, of: entity, inserted: inserted)))
        }
        for delete in changes.deletes ?? [] {
            let entity = try self.entity(delete.entity, concrete: false)
            try checkKey(delete.key)
            request.deletes.append(SaveRequest.Delete(id: ObjectID(entity: entity, primaryKey: delete.key),
                                                      expectedVersion: delete.expectedVersion))
        }
        for link in changes.links ?? [] {
            let entity = try self.entity(link.entity, concrete: false)
            let relationship = try toMany(link.relationship, of: entity)
            var added: [Int64] = []
            for target in link.added ?? [] { added.append(try key(of: target, inserted: inserted)) }
            for key in link.removed ?? [] { try checkKey(key) }
            request.links.append(SaveRequest.LinkChange(owner: ObjectID(entity: entity, primaryKey: try key(of: link.owner, inserted: inserted)),
                                                        relationship: relationship, added: added, removed: link.removed ?? []))
        }
        for kept in changes.kept ?? [] {
            try checkKey(kept.key)
            request.kept.insert(ObjectID(entity: try self.entity(kept.entity, concrete: false), primaryKey: kept.key))
        }
        return request
    }

    func entity(_ name: String, concrete: Bool) throws(ServerFailure) -> Entity {
        guard let entity = model.entity(named: name) else { throw ServerFailure(404, "unknown_entity", "the model has no entity '\(name)'") }
        if concrete { try checkConcrete(entity) }
        return entity
    }

    func checkConcrete(_ entity: Entity) throws(ServerFailure) {
        if entity.isAbstract { throw ServerFailure.badRequest("\(entity.name) is abstract: its objects are of its subentities") }
    }

    func checkKey(_ key: Int64) throws(ServerFailure) {
        guard key > 0 else { throw ServerFailure.badRequest("an object's key is positive (\(key))") }
    }

    func checkTotal(_ total: Int) throws(ServerFailure) {
        guard total <= Self.changeLimit else { throw ServerFailure.tooLarge("a change set holds at most 100 000 changes") }
    }

    /// Checks an insert's temporary ID, and notes it.
    func checkTemporaryID(_ temporaryID: Int64, inserted: inout Set<Int64>) throws(ServerFailure) {
        guard temporaryID != 0, inserted.insert(temporaryID).inserted else {
            throw ServerFailure.badRequest("temporary IDs are nonzero and each names one insert (\(temporaryID))")
        }
    }

    /// A target that names an inserted object by a temporary ID no insert has.
    func noInsert(_ temporaryID: Int64) -> ServerFailure {
        ServerFailure.badRequest("no insert has the temporary ID \(temporaryID)")
    }

    /// The to-many relationship a link change names.
    func toMany(_ name: String, of entity: Entity) throws(ServerFailure) -> Relationship {
        guard let relationship = entity.relationship(named: name), relationship.isToMany else {
            throw ServerFailure.badRequest("'\(name)' is not a to-many relationship of \(entity.name)")
        }
        return relationship
    }

    /// The slots an update writes the to-one relationships of.
    static func toOneSlots(of entity: Entity) -> [Int] {
        entity.relationships.filter { !$0.isToMany }.map(\.slot)
    }

    func key(of target: Components.Schemas.Target, inserted: Set<Int64>) throws(ServerFailure) -> Int64 {
        switch (target.key, target.inserted) {
        case (let key?, nil):
            try checkKey(key)
            return key
        case (nil, let temporary?):
            guard inserted.contains(temporary) else { throw noInsert(temporary) }
            return temporary
        default:
            throw ServerFailure.badRequest("a target names a key or an inserted object's temporary ID, one of them")
        }
    }

    func values(_ wire: Components.Schemas.Values?, of entity: Entity) throws -> [PredicateValue] {
        var values = [PredicateValue](repeating: .null, count: entity.attributes.count)
        for (name, raw) in try WireValue.values(wire) {
            let attribute = try self.attribute(name, of: entity)
            values[attribute.slot] = try value(raw, for: attribute, of: entity)
        }
        try checkRequired(values, of: entity)
        return values
    }

    /// The stored attribute a change set names.
    func attribute(_ name: String, of entity: Entity) throws(StoreError) -> Attribute {
        guard let attribute = entity.attribute(named: name), !attribute.isTransient else {
            throw StoreError.unknownKey(name, entity: entity.name)
        }
        return attribute
    }

    /// A value as `attribute` holds it.
    func value(_ raw: PredicateValue, for attribute: Attribute, of entity: Entity) throws(ServerFailure) -> PredicateValue {
        guard let value = DataSet.convert(raw, to: attribute.type) else {
            throw ServerFailure.badRequest("\(entity.name).\(attribute.name) cannot hold \(raw): \(attribute.type.mismatch(raw))")
        }
        return value
    }

    /// What a context refuses before saving, refused here too: a required attribute left nil.
    func checkRequired(_ values: [PredicateValue], of entity: Entity) throws(StoreError) {
        let missing = entity.attributes.filter { !$0.isOptional && $0.isStored && values[$0.slot] == .null }
        if !missing.isEmpty {
            throw StoreError.validation(missing.map {
                SaveValidationFailure(object: entity.name, property: $0.name, reason: "is required but has no value")
            })
        }
    }

    func toOne(_ wire: Components.Schemas.TargetsByName?, of entity: Entity, inserted: Set<Int64>) throws -> [Int64?] {
        var keys = [Int64?](repeating: nil, count: entity.toOneCount)
        for (name, target) in wire?.additionalProperties ?? [:] {
            keys[try toOne(name, of: entity).slot] = try key(of: target, inserted: inserted)
        }
        return keys
    }

    /// The to-one relationship a change set names.
    func toOne(_ name: String, of entity: Entity) throws(ServerFailure) -> Relationship {
        guard let relationship = entity.relationship(named: name), !relationship.isToMany else {
            throw ServerFailure.badRequest("'\(name)' is not a to-one relationship of \(entity.name)")
        }
        return relationship
    }
}
/// A change set read from the compact form (`application/vnd.sift.rows`): its request and identity.
struct ReceivedChangeSet {
    var request = SaveRequest()
    var origin: String?
    var sequence: Int64?
}

extension SaveRequestReader {
    /// An entity a compact change set declares, as its cells are read into the entity's slots.
    private struct Layout {
        let entity: Entity
        /// Each declared column: its type, the stored attribute it fills (nil: none), and the name declared.
        let columns: [(kind: CompactRows.Kind, attribute: Attribute?, name: String)]
        /// Each declared to-one relationship: its slot (nil: not a to-one relationship of the entity), and its name.
        let toOne: [(slot: Int?, name: String)]
        /// What every update of the entity writes: all its attributes and to-one relationships.
        let attributeSlots: [Int]
        let toOneSlots: [Int]

        init(_ reader: inout CompactReader, model: SaveRequestReader) throws {
            entity = try model.entity(try reader.string(), concrete: false)
            var columns: [(kind: CompactRows.Kind, attribute: Attribute?, name: String)] = []
            for _ in 0..<(try reader.count(of: 5)) {
                let name = try reader.string()
                let kind = try reader.kind()
                guard kind.rawValue <= CompactRows.Kind.uuid.rawValue else { throw WireError("a column's type is \(kind.rawValue), not a column type") }
                let attribute = entity.attribute(named: name)
                columns.append((kind, attribute.flatMap { $0.isTransient ? nil : $0 }, name))
            }
            var toOne: [(slot: Int?, name: String)] = []
            for _ in 0..<(try reader.count(of: 4)) {
                let name = try reader.string()
                let relationship = entity.relationship(named: name)
                toOne.append((relationship.flatMap { $0.isToMany ? nil : $0.slot }, name))
            }
            self.columns = columns
            self.toOne = toOne
            attributeSlots = entity.attributes.map(\.slot)
            toOneSlots = SaveRequestReader.toOneSlots(of: entity)
        }
    }

    /// A change set in the compact form, read straight into a save request with the checks a JSON change
    /// set's reading makes (``request(_:)``), and its identity.
    ///
    /// - Throws: `ServerFailure` (400) for a body that is not a change set in the compact form, and what
    ///   ``request(_:)`` throws for one that does not fit the model.
    func request(compact body: UnsafeRawBufferPointer) throws -> ReceivedChangeSet {
        do {
            return try readCompact(body)
        } catch let error as WireError {
            throw ServerFailure.badRequest("the change set cannot be read: \(error.description)")
        }
    }

    private func readCompact(_ body: UnsafeRawBufferPointer) throws -> ReceivedChangeSet {
        var reader = CompactReader(body)
        try reader.magic()
        var changes = ReceivedChangeSet()
        var layouts: [Layout] = []
        var inserted = Set<Int64>()
        // Targets naming inserted objects, checked at the end: an insert may name one that comes after it.
        var named: [Int64] = []
        var total = 0
        func layout() throws -> Layout {
            let number = Int(try reader.u32())
            guard number < layouts.count else { throw WireError("a change names an entity not declared before it") }
            return layouts[number]
        }
        func target() throws -> Int64? {
            switch try reader.u8() {
            case 0: return nil
            case 1:
                let key = try reader.i64()
                try checkKey(key)
                return key
            case 2:
                let temporary = try reader.i64()
                named.append(temporary)
                return temporary
            case let other: throw WireError("a target starts with 0, 1 or 2, not \(other)")
            }
        }
        func row(_ layout: Layout) throws -> (values: [PredicateValue], toOne: [Int64?]) {
            let entity = layout.entity
            var values = [PredicateValue](repeating: .null, count: entity.attributes.count)
            for (kind, attribute, name) in layout.columns {
                let raw: PredicateValue
                switch try reader.u8() {
                case 0: continue
                case 1: raw = try reader.plain(kind)
                case 2: raw = try reader.typed()
                case let other: throw WireError("a cell starts with 0, 1 or 2, not \(other)")
                }
                if raw == .null { continue }
                guard let attribute else { throw StoreError.unknownKey(name, entity: entity.name) }
                values[attribute.slot] = try value(raw, for: attribute, of: entity)
            }
            try checkRequired(values, of: entity)
            var toOne = [Int64?](repeating: nil, count: entity.toOneCount)
            for (slot, name) in layout.toOne {
                guard let key = try target() else { continue }
                guard let slot else { throw ServerFailure.badRequest("'\(name)' is not a to-one relationship of \(entity.name)") }
                toOne[slot] = key
            }
            return (values, toOne)
        }
        reading: while true {
            let record = try reader.record()
            switch record {
            case .end:
                break reading
            case .entity:
                guard try reader.u32() == layouts.count else { throw WireError("a change set numbers its entities 0, 1, … in order") }
                layouts.append(try Layout(&reader, model: self))
                continue reading
            case .identity:
                changes.origin = try reader.bool() ? try reader.string() : nil
                changes.sequence = try reader.bool() ? try reader.i64() : nil
                continue reading
            case .insert, .update, .delete, .linkChange:
                total &+= 1
                try checkTotal(total)
            case .kept:
                break
            default:
                throw WireError("a change set holds no record \(record.rawValue)")
            }
            let layout = try layout()
            let entity = layout.entity
            switch record {
            case .insert:
                try checkConcrete(entity)
                let temporaryID = try reader.i64()
                try checkTemporaryID(temporaryID, inserted: &inserted)
                let (values, toOne) = try row(layout)
                changes.request.inserts.append(SaveRequest.Insert(id: ObjectID(entity: entity, primaryKey: temporaryID),
                                                                  values: values, toOne: toOne))
            case .update:
                try checkConcrete(entity)
                let key = try reader.i64()
                try checkKey(key)
                let expectedVersion = try reader.i64()
                let (values, toOne) = try row(layout)
                changes.request.updates.append(SaveRequest.Update(
                    id: ObjectID(entity: entity, primaryKey: key), expectedVersion: expectedVersion,
                    attributeSlots: layout.attributeSlots, toOneSlots: layout.toOneSlots, values: values, toOne: toOne))
            case .delete:
                let key = try reader.i64()
                try checkKey(key)
                let expectedVersion = try reader.bool() ? try reader.i64() : nil
                changes.request.deletes.append(SaveRequest.Delete(id: ObjectID(entity: entity, primaryKey: key),
                                                                  expectedVersion: expectedVersion))
            case .linkChange:
                let relationship = try toMany(try reader.string(), of: entity)
                guard let owner = try target() else { throw ServerFailure.badRequest("a link change names its owner") }
                var added: [Int64] = []
                for _ in 0..<(try reader.count(of: 1)) {
                    guard let key = try target() else { throw ServerFailure.badRequest("a link change adds objects, not none") }
                    added.append(key)
                }
                var removed: [Int64] = []
                for _ in 0..<(try reader.count(of: 8)) {
                    let key = try reader.i64()
                    try checkKey(key)
                    removed.append(key)
                }
                changes.request.links.append(SaveRequest.LinkChange(owner: ObjectID(entity: entity, primaryKey: owner),
                                                                    relationship: relationship, added: added, removed: removed))
            default:  // .kept
                let key = try reader.i64()
                try checkKey(key)
                changes.request.kept.insert(ObjectID(entity: entity, primaryKey: key))
            }
        }
        guard reader.remaining == 0 else { throw WireError("the change set goes on after its end") }
        for temporary in named where !inserted.contains(temporary) { throw noInsert(temporary) }
        return changes
    }
}
#endif
