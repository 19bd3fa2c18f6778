// Store stage: loading a data set into the SQLite store, in one transaction,
// with the statements the SQL stage builds.

import Foundation
import Sift

extension SQLiteStore {
    /// Loads every object of a data set, in one transaction.
    public func importDataSet(_ dataSet: DataSet, progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        guard dataSet.model.versionHash == model.versionHash else {
            throw .modelMismatch(path: url?.path ?? ":memory:", storeHash: model.versionHash, modelHash: dataSet.model.versionHash)
        }
        try importNodes(dataSet.nodes, progress: progress)
    }

    /// Inserts nodes of this store's model as new rows, with their
    /// relationships, in one transaction.
    public func importNodes(_ nodes: [RowNode], progress: ((Int, Int) -> Void)? = nil) throws(StoreError) {
        do {
            try insert(nodes, progress: progress)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    private func insert(_ nodes: [RowNode], progress: ((Int, Int) -> Void)?) throws {
        try withConnection { connection in
            try connection.transaction {
                var inserts: [Int: (RowInsert, SQLiteStatement)] = [:]
                var links: [String: SQLiteStatement] = [:]
                var largest: [Int: Int64] = [:]
                // Which entity each imported row is, for to-one columns that
                // say which entity a key points at (models with inheritance).
                var numbers: [ObjectID: Int64] = [:]
                if model.entities.contains(where: { $0.superentity != nil }) {
                    for node in nodes { numbers[node.id] = Int64(schema.entityNumber(model.entities[node.id.entity])) }
                }
                for (index, node) in nodes.enumerated() {
                    let entity = model.entities[node.id.entity]
                    largest[entity.rootIndex] = max(largest[entity.rootIndex] ?? 0, node.id.primaryKey)
                    if inserts[entity.index] == nil {
                        let insert = schema.insertRow(entity)
                        inserts[entity.index] = (insert, try connection.statement(insert.query.sql))
                    }
                    let (insert, statement) = inserts[entity.index]!
                    try connection.run(statement, insert.bindings(key: node.id.primaryKey, version: node.version,
                                                                  values: node.values, toOne: node.toOne) { slot, key in
                        guard let relationship = entity.relationships.first(where: { !$0.isToMany && $0.slot == slot }),
                              let destination = self.model.entity(named: relationship.destination) else { return nil }
                        return numbers[ObjectID(entity: destination, primaryKey: key)]
                    })
                    for relationship in entity.relationships where relationship.isToMany {
                        // Join tables are written from one side only.
                        guard schema.writesLinks(of: relationship, in: entity), let targets = node.toMany[relationship.slot],
                              let link = schema.insertLink(relationship, in: entity) else { continue }
                        let statement = try links[link.sql] ?? connection.statement(link.sql)
                        links[link.sql] = statement
                        for target in targets { try connection.run(statement, [.integer(node.id.primaryKey), .integer(target)]) }
                    }
                    if index % 10_000 == 9_999 { progress?(index + 1, nodes.count) }
                }
                // Order keys of ordered relationships, once every member's row is there.
                var orderKeys: [String: SQLiteStatement] = [:]
                for node in nodes {
                    let entity = model.entities[node.id.entity]
                    for relationship in entity.relationships where relationship.isToMany && relationship.isOrdered {
                        guard let members = node.toMany[relationship.slot], !members.isEmpty,
                              let update = schema.updateOrderKey(relationship, in: entity) else { continue }
                        let statement = try orderKeys[update.sql] ?? connection.statement(update.sql)
                        orderKeys[update.sql] = statement
                        for (index, member) in members.enumerated() {
                            try connection.run(statement, [.integer(SQLSchema.orderKeyValue(at: index)), .integer(member),
                                                           .integer(node.id.primaryKey)])
                        }
                    }
                }
                // The largest keys, recorded as Core Data records them.
                for (index, key) in largest {
                    var current: Int64 = 0
                    if case .integer(let m)? = try connection.query(schema.selectKeyMaximum(model.entities[index])).first?.first {
                        current = m
                    }
                    if key > current { try connection.run(schema.updateKeyMaximum(model.entities[index], to: key)) }
                }
                progress?(nodes.count, nodes.count)
            }
        }
    }
}
