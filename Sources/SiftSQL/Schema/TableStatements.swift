// Stage 6b (SQL lowering): the statements that create a store's tables —
// each root entity's table with its columns (foreign keys, order keys,
// companion columns of canonical attributes), its indexes, the join tables
// and Core Data's catalog tables — named by the schema mapping (SQLSchema).

import SiftModel
import SiftValues

extension SQLSchema {
    /// The statements that create the store's tables and indexes, as Core
    /// Data names them, and its catalog tables (`Z_PRIMARYKEY` with a row
    /// per entity, `Z_METADATA` and `Z_MODELCACHE` empty).
    package var createStatements: [SQLQuery] { createStatementTrees.map(render) }

    /// Every table of the layout, catalog tables included.
    package var tableNames: [String] {
        createStatementTrees.compactMap { if case .createTable(let table) = $0 { table.name } else { nil } }
    }

    private var createStatementTrees: [SQLStatement] {
        var statements: [SQLStatement] = []
        var joinTables = Set<String>()
        for root in model.entities where root.superentity == nil {
            let family = model.descendants(of: root)
            let table = table(root)
            var columns = [SQLColumnDefinition(primaryKey(root), .integer, primaryKey: true),
                           SQLColumnDefinition(entityColumn(root), .integer),
                           SQLColumnDefinition(version(root), .integer, nullable: false, default: .integer(1))]
            var seen = Set<String>()
            for entity in family {
                for relationship in toOneRelationships(entity) where seen.insert(foreignKey(relationship, of: entity)).inserted {
                    columns.append(SQLColumnDefinition(foreignKey(relationship, of: entity), .integer))
                    if let key = entityKey(relationship, of: entity) { columns.append(SQLColumnDefinition(key, .integer)) }
                    if let order = orderKey(relationship, of: entity), seen.insert(order).inserted {
                        columns.append(SQLColumnDefinition(order, .integer))
                    }
                }
                for attribute in storedAttributes(entity) where seen.insert(column(attribute, of: entity)).inserted {
                    // Subentities' columns are NULL in other entities' rows.
                    columns.append(SQLColumnDefinition(column(attribute, of: entity), SQLColumnType(attribute.type),
                                                       nullable: attribute.isOptional || entity.name != root.name))
                    for companion in companionColumns(attribute, of: entity) { columns.append(SQLColumnDefinition(companion, .text)) }
                }
            }
            statements.append(.createTable(SQLCreateTable(name: table, columns: columns, compositeKey: [])))
            func index(_ name: String, _ columns: [String]) {
                statements.append(.createIndex(SQLCreateIndex(name: name, table: table, columns: columns)))
            }
            index("\(table)_Z_ENT_INDEX", [entityColumn(root)])
            var indexed = Set<String>()
            for entity in family {
                for relationship in toOneRelationships(entity) where indexed.insert(foreignKey(relationship, of: entity)).inserted {
                    index("\(table)_\(foreignKey(relationship, of: entity))_INDEX", [foreignKey(relationship, of: entity)])
                }
                for attribute in storedAttributes(entity) {
                    for companion in companionColumns(attribute, of: entity) where indexed.insert(companion).inserted {
                        index("\(table)_\(companion)_INDEX", [companion])
                    }
                    if attribute.isIndexed, indexed.insert(column(attribute, of: entity)).inserted {
                        index("Z_\(entity.name)_\(attribute.name)", [column(attribute, of: entity)])
                    }
                }
                for fetchIndex in entity.indexes where fetchIndex.properties.count > 1 {
                    let names = fetchIndex.properties.compactMap { property -> String? in
                        if let attribute = entity.attribute(named: property), attribute.isStored { return column(attribute, of: entity) }
                        if let relationship = entity.relationship(named: property), !relationship.isToMany {
                            return foreignKey(relationship, of: entity)
                        }
                        return nil
                    }
                    if names.count == fetchIndex.properties.count { index("Z_\(entity.name)_\(fetchIndex.name)", names) }
                }
                for relationship in entity.declaredRelationships {
                    guard case .joinTable(let name, let source, let target) = storage(of: relationship, in: entity),
                          joinTables.insert(name).inserted else { continue }
                    let (first, second) = writesLinks(of: relationship, in: entity) ? (source, target) : (target, source)
                    var joinColumns = [SQLColumnDefinition(first, .integer, nullable: false),
                                       SQLColumnDefinition(second, .integer, nullable: false)]
                    // Order keys for the members an ordered side orders.
                    let inverse = relationship.inverse.flatMap { model.entity(named: relationship.destination)?.relationship(named: $0) }
                    if relationship.isOrdered { joinColumns.append(SQLColumnDefinition(orderKey(ofJoinColumn: target), .integer)) }
                    if inverse?.isOrdered == true { joinColumns.append(SQLColumnDefinition(orderKey(ofJoinColumn: source), .integer)) }
                    statements.append(.createTable(SQLCreateTable(name: name, columns: joinColumns, compositeKey: [first, second])))
                    statements.append(.createIndex(SQLCreateIndex(name: "\(name)_\(second)_INDEX", table: name,
                                                                  columns: [second, first])))
                }
            }
        }
        statements.append(.createTable(SQLCreateTable(
            name: "Z_PRIMARYKEY", columns: [SQLColumnDefinition("Z_ENT", .integer, primaryKey: true),
                                            SQLColumnDefinition("Z_NAME", .text), SQLColumnDefinition("Z_SUPER", .integer),
                                            SQLColumnDefinition("Z_MAX", .integer)],
            compositeKey: [])))
        statements.append(.createTable(SQLCreateTable(
            name: CoreDataCatalog.modelCacheTable, columns: [SQLColumnDefinition("Z_CONTENT", .blob)], compositeKey: [])))
        statements.append(.createTable(SQLCreateTable(
            name: "Z_METADATA", columns: [SQLColumnDefinition("Z_VERSION", .integer, primaryKey: true),
                                          SQLColumnDefinition("Z_UUID", .text), SQLColumnDefinition("Z_PLIST", .blob)],
            compositeKey: [])))
        for entity in model.entities.sorted(by: { entityNumber($0) < entityNumber($1) }) {
            let parent = entity.superentity.flatMap { model.entity(named: $0) }.map(entityNumber) ?? 0
            statements.append(.insert(SQLInsert(
                table: "Z_PRIMARYKEY", columns: ["Z_ENT", "Z_NAME", "Z_SUPER", "Z_MAX"],
                values: [.value(.integer(Int64(entityNumber(entity)))), .value(.text(entity.name)),
                         .value(.integer(Int64(parent))), .value(.integer(0))],
                ignoringDuplicates: false)))
        }
        return statements
    }
}
