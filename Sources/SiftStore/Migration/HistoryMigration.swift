// Store stage: carrying persistent history through a migration. The
// transactions and strings are copied as they are; each change is renamed
// into the new version: its entity's number, the bits of its updated
// properties and its preserved values follow the mapping by name (a
// property the new version does not have leaves its bit out; a change of an
// entity it does not have is dropped). The history tables' keys go on
// where they were.

import Foundation
import Sift

extension StoreMigration {
    /// Copies `source`'s history into `destination` (a migration's new
    /// store, holding its rows already), renamed by `mapping`; returns how
    /// many changes named entities the new version does not have.
    static func copyHistory(from source: SQLiteStore, into destination: SQLiteStore, mapping: MappingModel,
                            progress: ((WorkProgress) -> Void)? = nil) throws -> Int {
        typealias H = HistoryStatements
        let strings = try source.withConnection { try $0.query(H.selectAll(H.stringColumns, from: "ATRANSACTIONSTRING")) }
        let transactions = try source.withConnection { try $0.query(H.selectAll(H.transactionColumns, from: "ATRANSACTION")) }
        let changeColumns = try source.withConnection { try $0.query(H.changeColumns) }.compactMap { row -> String? in
            if case .text(let name)? = row.first { name } else { nil }
        }
        let sourceTombstones = H.tombstoneColumns(changeColumns)
        let changes = try source.withConnection { try $0.query(H.selectAll(H.copiedChangeColumns + sourceTombstones, from: "ACHANGE")) }
        let maxima = try source.withConnection { try $0.query(H.selectKeyMaxima) }

        let tombstoneCount = max(HistoryProperties.tombstoneCount(destination.model), 0)
        var renamings: [Int64: Renaming?] = [:]
        var dropped = 0
        try destination.withConnection { connection in
            try connection.transaction {
                for statement in HistoryStatements.createTables(tombstones: tombstoneCount) { try connection.execute(statement) }
                let insertString = try connection.statement(H.insertRow(H.stringColumns, into: "ATRANSACTIONSTRING"))
                for row in strings { try connection.run(insertString, row) }
                let insertTransaction = try connection.statement(H.insertRow(H.transactionColumns, into: "ATRANSACTION"))
                for row in transactions { try connection.run(insertTransaction, row) }
                let insertChange = try connection.statement(HistoryStatements.insertChange(tombstones: tombstoneCount))
                var copying = ProgressReporter(progress, .copyingHistory, total: changes.count)
                for row in changes {
                    copying.advance()
                    guard row.count == 6 + sourceTombstones.count, case .integer(let number) = row[2] else { continue }
                    if renamings[number] == nil {
                        renamings[number] = Renaming(source.schema.entity(number: number), mapping: mapping, into: destination)
                    }
                    guard let renaming = renamings[number] ?? nil else {
                        dropped += 1
                        continue
                    }
                    var bindings = [row[0], row[1], .integer(renaming.number), row[3], row[4], renaming.bitmap(row[5])]
                    bindings += renaming.tombstone(Array(row[6...]), columns: tombstoneCount)
                    try connection.run(insertChange, bindings)
                }
                copying.finish()
                for row in maxima {
                    guard case .integer(let entity) = row[0], case .integer(let maximum) = row[1] else { continue }
                    try connection.run(HistoryStatements.updateKeyMaximum(entity: entity, to: maximum))
                }
            }
        }
        return dropped
    }

    /// How one source entity's changes read in the new version.
    private struct Renaming {
        /// The destination entity's number.
        let number: Int64
        let sourceProperties: HistoryProperties
        let destinationProperties: HistoryProperties
        /// Each source property's name in the destination, by its source name.
        let names: [String: String]
        let sourcePreserved: [String]
        let destinationPreserved: [String]

        init?(_ entity: Entity?, mapping: MappingModel, into store: SQLiteStore) {
            guard let entity, let destinationName = mapping.destination(of: entity.name),
                  let target = store.model.entity(named: destinationName),
                  let entityMapping = mapping.mapping(for: destinationName) else { return nil }
            number = Int64(store.schema.entityNumber(target))
            sourceProperties = HistoryProperties(entity)
            destinationProperties = HistoryProperties(target)
            var names: [String: String] = [:]
            for (name, attribute) in entityMapping.attributes {
                switch attribute {
                case .copy(let from), .convert(let from, _): names[from] = name
                case .defaultValue: break
                }
            }
            for (name, relationship) in entityMapping.relationships {
                switch relationship {
                case .copy(let from), .toMany(let from), .toOne(let from): names[from] = name
                case .empty: break
                }
            }
            // A composite is mapped by its elements: its name stays.
            for attribute in target.attributes where attribute.type == .composite && names[attribute.name] == nil
                && entity.attributes.contains(where: { $0.name == attribute.name }) {
                names[attribute.name] = attribute.name
            }
            self.names = names
            sourcePreserved = HistoryProperties.preserved(entity).map(\.name)
            destinationPreserved = HistoryProperties.preserved(target).map(\.name)
        }

        /// An update's bitmap in the destination's numbering (unchanged when it cannot be read).
        func bitmap(_ value: SQLValue) -> SQLValue {
            guard case .blob(let bitmap) = value, let properties = sourceProperties.names(in: bitmap) else { return value }
            return .blob(destinationProperties.bitmap(Set(properties.compactMap { names[$0] })))
        }

        /// A delete's preserved values in the destination's columns.
        func tombstone(_ values: [SQLValue], columns: Int) -> [SQLValue] {
            var result = [SQLValue](repeating: .null, count: columns)
            for (index, name) in sourcePreserved.enumerated() where index < values.count {
                guard let renamed = names[name], let column = destinationPreserved.firstIndex(of: renamed), column < columns else { continue }
                result[column] = values[index]
            }
            return result
        }
    }
}
