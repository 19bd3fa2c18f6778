// Store stage: what an object needs of its entity, resolved once per
// context: the entity itself, shared by every object of it (an object holds
// one reference, not a copy of the entity's arrays and dictionaries), and
// name lookups that a read by name does with one hash.

import Foundation
import Sift

/// An entity of the context's model, with its lookups.
@usableFromInline
final class EntityDescription {
    /// The context whose objects these are (the context makes its own
    /// descriptions): an object reaches its context through its description.
    /// Unowned, not weak: an object does not keep its context alive, and
    /// the context sets this to nil as it goes (`ObjectContext.deinit`). A
    /// weak reference would give the context a side table, which made every
    /// retain and release of it, and every read through it, slower.
    @exclusivity(unchecked) unowned(safe) var context: ObjectContext? {
        didSet { unretainedContext = context.map { .passUnretained($0) } }
    }
    /// The same context, for the read path to call without retaining and
    /// releasing it (the context's count is one word every read would
    /// write): set and cleared with `context`, so it is nil once the
    /// context is gone.
    @exclusivity(unchecked) var unretainedContext: Unmanaged<ObjectContext>?
    /// The entity's index and its root's: every object's ID is made of them and its key.
    @usableFromInline let entityIndex: Int32
    @usableFromInline let rootIndex: Int32
    let entity: Entity
    /// Each attribute's slot, by name (inherited attributes included).
    let attributeSlots: [String: Int]
    /// Each attribute's name, by slot: a resolved `Attribute` is checked against it.
    let attributeNames: [String]
    /// The attributes by slot: an attribute found by name without copying the entity.
    let attributesBySlot: [Attribute?]
    /// Each attribute's name and its length in UTF-8, by slot: a read by
    /// name compares lengths first, and names only of equal length.
    let namesBySlot: [(length: Int, name: String)]
    /// Each attribute's name as the two machine words of the `String` in
    /// `namesBySlot`, by slot (`2 * slot`, `2 * slot + 1`). A read by name
    /// compares its key's words with these first: equal words are the same
    /// string (the same inline bytes, or the same storage, which
    /// `namesBySlot` keeps alive), so a name written as a literal is found
    /// without comparing characters. A key with other words (the same name
    /// made another way) is compared by characters.
    @usableFromInline let nameWords: UnsafeMutablePointer<UInt64>
    @usableFromInline let nameCount: Int
    /// The slot a name's words most likely are, by a hash of them
    /// (`nameBucket`): 64 entries, -1 where no name falls. A read checks
    /// the words of the slot it names, and scans `nameWords` when they differ.
    @usableFromInline let nameTable: UnsafeMutablePointer<Int8>
    /// The multiplier of the hash, one that sends the names to distinct entries when one tried does.
    @usableFromInline let nameSeed: UInt64
    /// Each relationship's destination entity (index and root), by relationship name.
    let destinations: [String: (index: Int, root: Int, hasSubentities: Bool)]
    /// Each relationship's inverse, by relationship name (none for one without):
    /// keeping both sides in step finds it with one hash, no entity copied.
    let inverses: [String: Relationship]
    /// The relationships, by name (inherited ones included).
    let relationships: [String: Relationship]
    /// The numbers of to-one and to-many slots.
    let toOneCount: Int
    let toManyCount: Int
    /// The to-one relationships, in a plain array a read by name scans:
    /// slot and destination, without copying the relationship.
    let toOneLinks: [ToOneLink]
    /// What a save checks of each attribute, by slot.
    let checks: [(slot: Int, name: String, type: AttributeType, required: Bool)]
    /// The to-one relationships a save requires, and the to-many ones it writes links of.
    let requiredToOne: [(slot: Int, name: String)]
    let toMany: [Relationship]
    /// An inserted object's values before anything is set: each attribute's default.
    let defaultValues: [PredicateValue]

    init(_ entity: Entity, in model: DataModel) {
        self.entity = entity
        entityIndex = Int32(clamping: entity.index)
        rootIndex = Int32(clamping: entity.rootIndex)
        var slots: [String: Int] = [:]
        var names = Array(repeating: "", count: entity.attributes.count)
        for attribute in entity.attributes {
            slots[attribute.name] = attribute.slot
            if attribute.slot < names.count { names[attribute.slot] = attribute.name }
        }
        attributeSlots = slots
        attributeNames = names
        var bySlot: [Attribute?] = Array(repeating: nil, count: entity.attributes.count)
        for attribute in entity.attributes where attribute.slot >= 0 && attribute.slot < bySlot.count { bySlot[attribute.slot] = attribute }
        attributesBySlot = bySlot
        namesBySlot = names.map { ($0.utf8.count, $0) }
        nameCount = namesBySlot.count
        nameWords = .allocate(capacity: max(2 * namesBySlot.count, 1))
        for (slot, entry) in namesBySlot.enumerated() {
            let words = Self.words(of: entry.name)
            (nameWords + 2 * slot).initialize(to: words.0)
            (nameWords + 2 * slot + 1).initialize(to: words.1)
        }
        // The first multiplier that gives each name an entry of its own, if any does.
        let seeds: [UInt64] = [0x9E37_79B9_7F4A_7C15, 0xC2B2_AE3D_27D4_EB4F, 0x1656_67B1_9E37_79F9, 0xD6E8_FEB8_6659_FD93,
                               0xFF51_AFD7_ED55_8CCD, 0xC4CE_B9FE_1A85_EC53, 0x2545_F491_4F6C_DD1D, 0x94D0_49BB_1331_11EB]
        let named = min(namesBySlot.count, Int(Int8.max))
        let nameWords = nameWords
        let seed = seeds.first { seed in
            Set((0..<named).map { Self.nameBucket((nameWords[2 * $0], nameWords[2 * $0 + 1]), seed: seed) }).count == named
        } ?? seeds[0]
        nameSeed = seed
        nameTable = .allocate(capacity: 64)
        nameTable.initialize(repeating: -1, count: 64)
        for slot in (0..<named).reversed() {
            nameTable[Self.nameBucket((nameWords[2 * slot], nameWords[2 * slot + 1]), seed: seed)] = Int8(slot)
        }
        var destinations: [String: (Int, Int, Bool)] = [:]
        var inverses: [String: Relationship] = [:]
        for relationship in entity.relationships {
            if let destination = model.entity(named: relationship.destination) {
                destinations[relationship.name] = (destination.index, destination.rootIndex, !destination.subentities.isEmpty)
                inverses[relationship.name] = relationship.inverse.flatMap { destination.relationship(named: $0) }
            }
        }
        self.destinations = destinations
        self.inverses = inverses
        relationships = Dictionary(entity.relationships.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
        toOneCount = entity.toOneCount
        toManyCount = entity.toManyCount
        toOneLinks = entity.relationships.compactMap { relationship in
            guard !relationship.isToMany, let destination = destinations[relationship.name] else { return nil }
            return ToOneLink(name: relationship.name, length: relationship.name.utf8.count, slot: relationship.slot, destination: destination.0,
                             root: destination.1, hasSubentities: destination.2)
        }
        checks = entity.attributes.map { ($0.slot, $0.name, $0.type, !$0.isOptional && $0.isStored) }
        requiredToOne = entity.relationships.filter { !$0.isToMany && !$0.isOptional }.map { ($0.slot, $0.name) }
        toMany = entity.relationships.filter(\.isToMany)
        defaultValues = entity.attributes.map { $0.defaultValue ?? .null }
    }

    deinit {
        nameWords.deallocate()
        nameTable.deallocate()
    }

    /// The entry of `nameTable` for a name's words.
    @inlinable @inline(__always)
    static func nameBucket(_ words: (UInt64, UInt64), seed: UInt64) -> Int {
        Int(truncatingIfNeeded: ((words.0 &+ words.1) &* seed) &>> 58)
    }

    /// A string's two machine words, read without retaining it ((0, 0)
    /// where a `String` is not two 64-bit words).
    @inlinable @inline(__always)
    static func words(of string: String) -> (UInt64, UInt64) {
        withUnsafeBytes(of: string) { raw in
            raw.count == 16 ? (raw.load(as: UInt64.self), raw.load(fromByteOffset: 8, as: UInt64.self)) : (0, 0)
        }
    }

    /// The slot of the attribute whose name is `name`'s very words (see
    /// `nameWords`); nil when none is, though one may have its characters
    /// (and always where a `String` is not two 64-bit words).
    @inlinable @inline(__always)
    func slot(sameAs name: String) -> Int? {
        guard MemoryLayout<String>.size == 16 else { return nil }
        let words = Self.words(of: name)
        // The slot the hash names, most often the one; else the scan.
        let guess = Int(nameTable[Self.nameBucket(words, seed: nameSeed)])
        if guess >= 0, nameWords[2 &* guess] == words.0, nameWords[2 &* guess &+ 1] == words.1 { return guess }
        var slot = 0
        while slot < nameCount {
            if nameWords[2 &* slot] == words.0, nameWords[2 &* slot &+ 1] == words.1 { return slot }
            slot &+= 1
        }
        return nil
    }

    /// The to-one relationship called `name`, if the entity has it.
    @inline(__always)
    func toOneLink(named name: String) -> ToOneLink? {
        let length = name.utf8.count
        for link in toOneLinks where link.length == length && link.name == name { return link }
        return nil
    }

    /// The slot of the attribute called `name`, if the entity has it: a
    /// few names are scanned (lengths first), many are hashed.
    @inline(__always)
    func attributeSlot(named name: String) -> Int? {
        if let slot = slot(sameAs: name) { return slot }
        guard namesBySlot.count <= 16 else { return attributeSlots[name] }
        let length = name.utf8.count
        for slot in namesBySlot.indices where namesBySlot[slot].length == length && namesBySlot[slot].name == name {
            return slot
        }
        return nil
    }

    /// A description of every entity of `model`, by index.
    static func all(in model: DataModel) -> [EntityDescription] {
        model.entities.map { EntityDescription($0, in: model) }
    }
}

/// A to-one relationship as a read follows it.
struct ToOneLink {
    let name: String
    /// The name's length in UTF-8.
    let length: Int
    let slot: Int
    /// The destination entity's index and root, and whether it has subentities.
    let destination: Int
    let root: Int
    let hasSubentities: Bool
}
