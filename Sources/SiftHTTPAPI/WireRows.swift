// The store API's rows: a row cache node as the server sends it (its own
// entity, key, version, attribute values and to-one keys by name), and as a
// remote store's backend reads it back.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
internal import Foundation
import Sift
import SiftStore

package enum WireRow {
    /// A node as the API sends it, its values in their plain forms (by
    /// their attributes' types); nil attribute values and empty to-one
    /// relationships are left out.
    package static func row(_ node: RowNode, model: DataModel) -> Components.Schemas.Row {
        let entity = model.entities[node.id.entity]
        var values: [String: Components.Schemas.AttributeValue?] = [:]
        for attribute in entity.attributes where attribute.slot < node.values.count {
            let value = node.value(at: attribute.slot)
            if value != .null { values[attribute.name] = WireValue.container(json: WireValue.encode(value, as: attribute.type)) }
        }
        var toOne: [String: Int64] = [:]
        for relationship in entity.relationships where !relationship.isToMany && relationship.slot < node.toOne.count {
            if let key = node.toOneKey(at: relationship.slot) { toOne[relationship.name] = key }
        }
        return Components.Schemas.Row(entity: entity.name, key: node.id.primaryKey, version: node.version,
                                      values: Components.Schemas.Values(additionalProperties: values),
                                      toOne: Components.Schemas.ToOneKeys(additionalProperties: toOne))
    }

    /// A row the API sent, as an incremental store's backend gives it: its
    /// values read by their attributes' types in `model` (all of them in the
    /// typed form for an entity the model does not have).
    package static func backendRow(_ row: Components.Schemas.Row, model: DataModel) throws(WireError) -> BackendRow<Int64> {
        let values: [String: PredicateValue]
        if let entity = model.entity(named: row.entity) {
            values = try WireValue.values(row.values, of: entity)
        } else {
            values = try WireValue.values(row.values)
        }
        return BackendRow(entityName: row.entity, reference: row.key, version: row.version, values: values,
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
