// The store API's rows: a row cache node as the server sends it (its own
// entity, key, version, attribute values and to-one keys by name), and as a
// remote store's backend reads it back.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
internal import Foundation
import Sift
import SiftStore

package enum WireRow {
    /// A node as the API sends it; nil attribute values and empty to-one
    /// relationships are left out.
    package static func row(_ node: RowNode, model: DataModel) -> Components.Schemas.Row {
        let entity = model.entities[node.id.entity]
        var values: [String: PredicateValue] = [:]
        for attribute in entity.attributes where attribute.slot < node.values.count && node.value(at: attribute.slot) != .null {
            values[attribute.name] = node.value(at: attribute.slot)
        }
        var toOne: [String: Int64] = [:]
        for relationship in entity.relationships where !relationship.isToMany && relationship.slot < node.toOne.count {
            if let key = node.toOneKey(at: relationship.slot) { toOne[relationship.name] = key }
        }
        return Components.Schemas.Row(entity: entity.name, key: node.id.primaryKey, version: node.version,
                                      values: WireValue.values(values),
                                      toOne: Components.Schemas.ToOneKeys(additionalProperties: toOne))
    }

    /// A row the API sent, as an incremental store's backend gives it.
    package static func backendRow(_ row: Components.Schemas.Row) throws(WireError) -> BackendRow<Int64> {
        BackendRow(entityName: row.entity, reference: row.key, version: row.version, values: try WireValue.values(row.values),
                   toOne: row.toOne.additionalProperties)
    }
}

/// The API's change tokens: the server run's identity and a save's number
/// in it (`"<run>.<number>"`).
package struct ChangeToken: Hashable, Sendable, CustomStringConvertible {
    package var run: String
    package var sequence: Int64

    package init(run: String, sequence: Int64) {
        self.run = run
        self.sequence = sequence
    }

    package init?(_ text: String) {
        guard let dot = text.lastIndex(of: "."), let sequence = Int64(text[text.index(after: dot)...]), sequence >= 0 else { return nil }
        run = String(text[..<dot])
        guard !run.isEmpty else { return nil }
        self.sequence = sequence
    }

    package var description: String { "\(run).\(sequence)" }
}
#endif
