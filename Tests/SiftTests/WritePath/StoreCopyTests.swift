// A store copied into a store of another type (Core Data's
// migratePersistentStore): every pair of kinds, the copy holding the same
// objects with the same keys, values and relationships, and answering the
// corpus as the source does; a destination that is not empty, or of
// another model, refused with nothing written.

import Foundation
import Sift
import SiftPostgres
import SiftStore
import Testing

@Suite("Copying a store into another type")
struct StoreCopyTests {
    /// Every object as comparable text: entity, key, values, to-one keys, to-many members (sorted unless ordered).
    static func contents(_ store: any PersistentStore) throws -> [String] {
        let dataSet = try store.allObjects()
        return dataSet.nodes.map { node in
            let entity = dataSet.model.entities[node.id.entity]
            let toMany = entity.relationships.filter(\.isToMany).map { relationship in
                let members = node.toMany[relationship.slot] ?? []
                return "\(relationship.name)=\(relationship.isOrdered ? members : members.sorted())"
            }
            return "\(entity.name) \(node.id.primaryKey) \(node.values) \(node.toOne) \(toMany)"
        }.sorted()
    }

    /// An empty store of `kind` for the company model.
    static func empty(_ kind: StoreKind) throws -> TestStore {
        try kind.make(DataSet(model: Company.dataSet.model, nodes: []))
    }

    @Test("Every kind copies into every other, objects and relationships as they were",
          arguments: StoreKind.allCases.filter { $0 != .incrementalEverything }.flatMap { from in StoreKind.allCases.filter { $0 != .incremental && $0 != .incrementalEverything && $0 != .remote }.map { (from, $0) } })
    func copies(_ kinds: (StoreKind, StoreKind)) throws {
        let source = try kinds.0.make()
        let destination = try Self.empty(kinds.1)
        guard let importing = destination.store as? any ImportingStore else {
            Issue.record("\(kinds.1) does not import")
            return
        }
        try source.store.copy(to: importing)
        let expected = try Self.contents(source.store)
        #expect(expected.count == Company.dataSet.nodes.count)
        #expect(try Self.contents(destination.store) == expected)
        // The copy answers as the source does.
        for testCase in CorpusCase.all.prefix(120) {
            var request = FetchRequest(entityName: testCase.entity, predicate: testCase.predicate, arguments: testCase.args ?? [])
            request.sortDescriptors = [FetchSortDescriptor("name")]
            guard let answer = try? source.context().fetchObjectIDs(request) else { continue }
            #expect(try destination.context().fetchObjectIDs(request) == answer, "\(testCase.predicate)")
        }
        // A destination with objects already is refused, and keeps what it had.
        #expect { try source.store.copy(to: importing) } throws: { ($0 as? StoreError)?.code == .keysInUse }
        #expect(try Self.contents(destination.store) == expected)
    }

    @Test("A destination of another model is refused")
    func anotherModel() throws {
        let source = try StoreKind.sqlite.make()
        let other = try SQLiteStore(inMemoryWith: DataModel([Entity("Note", attributes: [Attribute("text", .string)])]))
        #expect { try source.store.copy(to: other) } throws: { ($0 as? StoreError)?.code == .modelMismatch }
    }
}
