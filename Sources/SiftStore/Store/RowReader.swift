// Store stage: reading a row statement's columns into a row-cache node, as
// the schema's row layout says — the attributes and to-one keys of the
// entity the row is (one of several when the fetched entity has subentities).
// Every SQL backend reads its rows through it: SQLite from its statement,
// PostgreSQL from the values a row came back with.

import Foundation
import Sift

/// One row of a result, as a SQL backend reads it: columns by index.
package protocol StoreRow {
    /// Column `index` as a value of an attribute of `type`.
    func value(_ index: Int, as type: AttributeType) -> PredicateValue
    /// Column `index` as an integer (0 when NULL).
    func integer(_ index: Int) -> Int64
    /// Whether column `index` is NULL.
    func isNull(_ index: Int) -> Bool
}

/// A row of values, as a network database gives them.
package struct ValueRow: StoreRow {
    package let columns: [SQLValue]

    package init(_ columns: [SQLValue]) { self.columns = columns }

    package func value(_ index: Int, as type: AttributeType) -> PredicateValue {
        index < columns.count ? PredicateValue(sqlValue: columns[index], type: type) : .null
    }

    package func integer(_ index: Int) -> Int64 {
        guard index < columns.count else { return 0 }
        switch columns[index] {
        case .integer(let i): return i
        case .real(let d): return Int64(exactly: d.rounded(.towardZero)) ?? 0
        default: return 0
        }
    }

    package func isNull(_ index: Int) -> Bool {
        index >= columns.count || columns[index] == .null
    }
}

extension SQLiteStatement: StoreRow {}

/// Reads the rows of one entity from a row statement. A class: a row's
/// reader is picked per row, and copying a struct of this many arrays
/// cost a dozen reference-count operations a row.
package final class RowReader {
    package let member: RowLayout.Member
    /// Columns before the row's own (a link query's owner key).
    let base: Int
    /// Whether the stored attributes are every attribute, in slot order.
    let everyAttributeInOrder: Bool
    /// Shared by every node read: to-many relationships not loaded.
    let unloaded: [[Int64]?]
    /// Whether some attribute is in Core Data's external storage form.
    let hasExternal: Bool
    /// Where the files of external binary data are.
    let externalData: URL?
    /// The registered value transformers of transformable attributes, by slot.
    let transformers: [(slot: Int, transformer: AttributeValueTransformer)]

    /// Each stored attribute's column (offset by `base`), slot and type, in
    /// plain arrays: the loop over a row's columns copies nothing that counts references.
    let columns: [Int32]
    let slots: [Int32]
    let types: [AttributeType]

    package init(_ member: RowLayout.Member, base: Int, externalData: URL?, transformers: ValueTransformerRegistry) {
        self.member = member
        self.base = base
        columns = member.attributes.map { Int32(clamping: base + $0.column) }
        slots = member.attributes.map { Int32(clamping: $0.slot) }
        types = member.attributes.map(\.type)
        self.externalData = externalData
        hasExternal = member.attributes.contains(where: \.external)
        self.transformers = member.attributes.compactMap { attribute in
            attribute.transformer.flatMap(transformers.transformer(named:)).map { (attribute.slot, $0) }
        }
        everyAttributeInOrder = member.attributes.count == member.attributeCount
            && member.attributes.enumerated().allSatisfy { $0.offset == $0.element.slot }
        unloaded = Array(repeating: nil, count: member.toManyCount)
    }

    /// The node of the current row.
    package func node<Row: StoreRow>(_ row: Row, primaryKey: Int64, version: Int64, now: Double) -> RowNode {
        var values: [PredicateValue]
        if everyAttributeInOrder {
            values = []
            values.reserveCapacity(types.count)
            for i in types.indices { values.append(row.value(Int(columns[i]), as: types[i])) }
        } else {
            values = member.initialValues
            for i in types.indices { values[Int(slots[i])] = row.value(Int(columns[i]), as: types[i]) }
        }
        if hasExternal {
            for attribute in member.attributes where attribute.external {
                guard case .data(let column) = values[attribute.slot] else { continue }
                values[attribute.slot] = SQLSchema.externalStorageValue(column, in: externalData).map(PredicateValue.data) ?? .null
            }
        }
        for (slot, transformer) in transformers {
            // Bytes the transformer cannot read stay bytes: nothing is lost.
            guard case .data(let bytes) = values[slot], let value = try? transformer.transformedValue(bytes) else { continue }
            values[slot] = value
        }
        var toOne = [Int64?](repeating: nil, count: member.toOneCount)
        for (column, slot) in member.toOne {
            toOne[slot] = row.isNull(base + column) ? nil : row.integer(base + column)
        }
        return RowNode(id: ObjectID(entity: member.entity, root: member.root, primaryKey: primaryKey), version: version,
                       fetchTimestamp: now, values: values, toOne: toOne, toMany: unloaded)
    }
}

/// Reads the rows of a fetch whose entity may have subentities: the row's
/// entity column says which member's reader takes it.
package struct RowReaders {
    let readers: [RowReader]
    let entityColumn: Int?
    /// Columns before the row's own (a link query's owner key).
    package let base: Int

    package init(_ layout: RowLayout, base: Int, externalData: URL?, transformers: ValueTransformerRegistry) {
        readers = layout.members.map { RowReader($0, base: base, externalData: externalData, transformers: transformers) }
        entityColumn = layout.entityColumn.map { base + $0 }
        self.base = base
    }

    /// The node of the current row; nil for a row of an entity the model
    /// does not know (not an object of this fetch).
    @inline(__always)
    package func node<Row: StoreRow>(_ row: Row, now: Double) -> RowNode? {
        var which = 0
        if let entityColumn {
            let number = row.integer(entityColumn)
            guard let found = readers.firstIndex(where: { $0.member.number == number }) else { return nil }
            which = found
        }
        return readers[which].node(row, primaryKey: row.integer(base), version: row.integer(base + 1), now: now)
    }
}
