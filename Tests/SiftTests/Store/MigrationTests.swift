// Lightweight migration: every Bookmarks store (versions 1 to 5) migrated
// to the bundle's newest version, and the SampleModel stores to later
// versions, keep every object, value, relationship and order (read through
// a context before and after), answer their fixture queries that the new
// version can still ask, keep Core Data's invariants and their metadata; a
// Sift store migrated to a generated version with renames, a new entity, a
// widened type and a to-one turned to-many; and refusals that leave the
// store byte for byte as it was.

import Foundation
import Sift
@testable import SiftStore
import Testing

/// One object as a context reads it, in the destination version's names.
struct MigratedObject: Equatable, CustomStringConvertible {
    var entity: String
    var attributes: [String: PredicateValue]
    var relationships: [String: [Int64]]
    var description: String { "\(entity) \(attributes) \(relationships)" }
}

enum MigrationSnapshot {
    /// What the store should hold after migrating with `mapping`: each
    /// object of `store` read through a context, in destination terms.
    static func expected(_ store: SQLiteStore, _ mapping: MappingModel) throws -> [String: MigratedObject] {
        let context = ObjectContext(store: store)
        let destination = mapping.destination
        var result: [String: MigratedObject] = [:]
        for root in store.model.entities where root.superentity == nil {
            for object in try context.fetch(FetchRequest(entityName: root.name)) {
                guard let name = mapping.destination(of: object.entity.name), let entity = destination.entity(named: name),
                      let entityMapping = mapping.mapping(for: name) else { continue }
                var attributes: [String: PredicateValue] = [:]
                for attribute in entity.attributes where attribute.isStored {
                    switch entityMapping.attributes[attribute.name]! {
                    case .copy(let from): attributes[attribute.name] = try object.value(forKey: from)
                    case .convert(let from, _):
                        let value = try object.value(forKey: from)
                        if case .int(let i) = value { attributes[attribute.name] = .double(Double(i)) } else { attributes[attribute.name] = value }
                    case .defaultValue(let value): attributes[attribute.name] = value ?? .null
                    }
                }
                var relationships: [String: [Int64]] = [:]
                for relationship in entity.relationships where !relationship.isTransient {
                    var keys: [Int64] = []
                    switch entityMapping.relationships[relationship.name]! {
                    case .copy(let from), .toMany(let from), .toOne(let from):
                        let old = object.entity.relationship(named: from)!
                        let related = old.isToMany ? try object.objects(forKey: from) : try object.object(forKey: from).map { [$0] } ?? []
                        keys = related.filter { mapping.destination(of: $0.entity.name) != nil }.map(\.objectID.primaryKey)
                    case .empty:
                        break
                    }
                    if !relationship.isToMany { keys = Array(keys.prefix(1)) } else if !relationship.isOrdered { keys.sort() }
                    relationships[relationship.name] = keys
                }
                result["\(destination.root(of: entity).name)/\(object.objectID.primaryKey)"] =
                    MigratedObject(entity: name, attributes: attributes, relationships: relationships)
            }
        }
        return result
    }

    /// What a store holds, read through a context.
    static func actual(_ store: SQLiteStore) throws -> [String: MigratedObject] {
        let context = ObjectContext(store: store)
        var result: [String: MigratedObject] = [:]
        for root in store.model.entities where root.superentity == nil {
            for object in try context.fetch(FetchRequest(entityName: root.name)) {
                let entity = object.entity
                var attributes: [String: PredicateValue] = [:]
                for attribute in entity.attributes where attribute.isStored { attributes[attribute.name] = try object.value(forKey: attribute.name) }
                var relationships: [String: [Int64]] = [:]
                for relationship in entity.relationships where !relationship.isTransient {
                    var keys = relationship.isToMany ? try object.objects(forKey: relationship.name).map(\.objectID.primaryKey)
                        : try object.object(forKey: relationship.name).map { [$0.objectID.primaryKey] } ?? []
                    if relationship.isToMany && !relationship.isOrdered { keys.sort() }
                    relationships[relationship.name] = keys
                }
                result["\(root.name)/\(object.objectID.primaryKey)"] = MigratedObject(entity: entity.name, attributes: attributes,
                                                                                       relationships: relationships)
            }
        }
        return result
    }

    /// The store's metadata.
    static func metadata(_ url: URL) throws -> [String: Any] {
        let connection = try SQLiteConnection(path: url.path, readOnly: true)
        let row = try connection.query("SELECT Z_PLIST, Z_UUID FROM Z_METADATA").first
        guard case .blob(let data)? = row?.first,
              var metadata = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else { return [:] }
        // The column is Core Data's record of the store's UUID.
        if case .text(let uuid)? = row?.last { metadata["Z_UUID"] = uuid }
        return metadata
    }

    /// The files of a folder, with their bytes.
    static func files(_ folder: URL) throws -> [String: Data] {
        var result: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
            result[name] = try Data(contentsOf: folder.appendingPathComponent(name))
        }
        return result
    }
}

@Suite("Lightweight migration", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct MigrationTests {
    static let bookmarks = CoreDataFixture.all.filter { $0.name.hasPrefix("bsk-bookmarks-") }

    /// Migrates a copy of `fixture` to `version` of its bundle and checks
    /// everything it kept; returns the number of fixture queries asked.
    @discardableResult
    static func migrate(_ fixture: CoreDataFixture, to version: String?) throws -> Int {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let bundle = try ModelBundle(contentsOf: fixture.modelURL)
        let migration = try StoreMigration(storeAt: url, bundle: bundle, version: version)
        #expect(migration.sourceVersion == fixture.createdBy)
        #expect(migration.isNeeded)
        let before = try MigrationSnapshot.metadata(url)
        let expected = try MigrationSnapshot.expected(try SQLiteStore(url: url, model: migration.mapping.source, readOnly: true),
                                                      migration.mapping)
        #expect(!expected.isEmpty)
        let store = try SQLiteStore(url: url, bundle: bundle, version: version)
        // Everything kept, and the store as Core Data's layout wants it.
        let actual = try MigrationSnapshot.actual(store)
        #expect(actual.count == expected.count)
        for (key, object) in expected {
            #expect(actual[key] == object, "\(fixture.name) \(key)")
        }
        #expect(CoreDataInvariants.violations(of: store).isEmpty, "\(CoreDataInvariants.violations(of: store))")
        let after = try MigrationSnapshot.metadata(url)
        #expect(after["Z_UUID"] as? String == before["Z_UUID"] as? String)
        #expect(after["NSStoreUUID"] as? String == before["Z_UUID"] as? String)
        #expect(before["Z_UUID"] != nil)
        #expect(StoreCatalogTestsHelper.hashes(after) == migration.mapping.destination.entityVersionHashes)
        // Nothing left beside the store but its own files.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: url.deletingLastPathComponent().path).filter { $0.contains("migrating") }
        #expect(leftovers.isEmpty)
        // The fixture's queries the new version can still ask give the same objects.
        let context = ObjectContext(store: store)
        var asked = 0
        for query in CoreDataQuery.all(of: fixture) {
            let ids: [ObjectID]
            do {
                ids = try context.fetchObjectIDs(FetchRequest(entityName: query.entity, predicate: query.predicate))
            } catch {
                if namesWhatIsGone(error) { continue }  // names what the new version no longer has
                throw error
            }
            asked += 1
            #expect(ids.map(\.primaryKey).sorted() == query.expect, "\(fixture.name) \(query.id): \(query.predicate)")
        }
        // And it opens with the new version's model alone, as Core Data would check it.
        _ = try SQLiteStore(url: url, model: migration.mapping.destination)
        return asked
    }

    @Test("A Bookmarks store of each version migrates to the newest, keeping every object, value, link and order",
          arguments: bookmarks)
    func bookmarksToNewest(_ fixture: CoreDataFixture) throws {
        let asked = try Self.migrate(fixture, to: nil)
        #expect(asked >= 5)
    }

    @Test("The SampleModel stores migrate to later versions (an entity renamed, attributes dropped, relationships and an entity added)",
          arguments: [("coredataplus-samplemodel-v1", "SampleModel2"), ("coredataplus-samplemodel-v1", "SampleModel3"),
                      ("coredataplus-samplemodel-v2", "SampleModel3")])
    func sampleModel(_ name: String, _ version: String) throws {
        let fixture = try #require(CoreDataFixture(name: name))
        let asked = try Self.migrate(fixture, to: version)
        #expect(asked >= 5)
    }

    @Test("The inferred mapping of the Bookmarks versions")
    func bookmarksMapping() throws {
        let fixture = try #require(Self.bookmarks.first)
        let bundle = try ModelBundle(contentsOf: fixture.modelURL)
        let mapping = try MappingModel.inferred(from: try bundle.model(version: "BookmarksModel 3"), to: try bundle.model())
        let entity = try #require(mapping.mapping(for: "BookmarkEntity"))
        #expect(entity.relationships["favoriteFolders"] == .toMany(from: "favoriteFolder"))
        #expect(entity.relationships["favorites"] == .copy(from: "favorites"))
        #expect(entity.attributes["isStub"] == .defaultValue(nil))
        #expect(entity.attributes["title"] == .copy(from: "title"))
        #expect(mapping.summary == [
            "BookmarkEntity:", "  isStub: added, nil", "  lastChildrenPayloadReceivedFromSync: added, nil",
            "  favoriteFolders: renamed from favoriteFolder, to-one becomes to-many",
        ])
        let same = try MappingModel.inferred(from: try bundle.model(), to: try bundle.model())
        #expect(same.summary == ["BookmarkEntity: unchanged"])
    }

    @Test("A migration that fails, or is not allowed, leaves the store byte for byte as it was")
    func refusals() throws {
        let fixture = try #require(CoreDataFixture(name: "coredataplus-samplemodel-v2"))
        let url = try fixture.copy()
        let folder = url.deletingLastPathComponent()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bundle = try ModelBundle(contentsOf: fixture.modelURL)
        let original = try MigrationSnapshot.files(folder)
        // Turned off.
        #expect { try SQLiteStore(url: url, bundle: bundle, version: "SampleModel3", migratesAutomatically: false) } throws: { error in
            guard case StoreError.cannotMigrate(_, let reasons) = error else { return false }
            return reasons.joined().contains("turned off") && reasons.joined().contains("SampleModel2")
        }
        // Back to version 1: Person.id is required there and no object has one. Fails after reading every row.
        #expect { try SQLiteStore(url: url, bundle: bundle, version: "SampleModel") } throws: { error in
            guard case StoreError.cannotMigrate(_, let reasons) = error else { return false }
            return reasons == ["20 objects would have no value for the required attribute 'Person.id', which has no default value"]
        }
        // Read-only stores are not migrated.
        #expect(throws: StoreError.self) { try SQLiteStore(url: url, bundle: bundle, version: "SampleModel3", readOnly: true) }
        let now = try MigrationSnapshot.files(folder).filter { !$0.key.hasSuffix("-shm") && !$0.key.hasSuffix("-wal") }
        #expect(now == original.filter { !$0.key.hasSuffix("-shm") && !$0.key.hasSuffix("-wal") })
        #expect(now.keys.allSatisfy { !$0.contains("migrating") })
    }

    @Test("A store with persistent history migrates: its transactions carried, each change renamed into the new version")
    func historyMigrates() throws {
        let v1 = try #require(CoreDataFixture(name: "coredataplus-samplemodel2-v1"))
        let v2 = try #require(CoreDataFixture(name: "coredataplus-samplemodel2-v2"))
        let url = try v1.copy()
        let v2URL = try v2.copy()
        defer {
            try? FileManager.default.removeItem(at: url.deletingLastPathComponent())
            try? FileManager.default.removeItem(at: v2URL.deletingLastPathComponent())
        }
        let target = try SQLiteStore(url: v2URL, readOnly: true).model
        // A save by Sift first, so that an update's bitmap is carried too.
        var book: ObjectID
        do {
            let store = try SQLiteStore(url: url)
            let context = ObjectContext(store: store)
            let first = try #require(try context.fetch(FetchRequest(entityName: "Book")).first { $0.entity.name == "Book" })
            try first.setValue(.string("Migrated"), forKey: "title")
            try first.setValue(.double(2.5), forKey: "price")
            try context.save()
            book = first.objectID
        }
        let before = try SQLiteStore(url: url, readOnly: true).persistentHistory()
        #expect(before.count == 2)
        let migration = try StoreMigration(storeAt: url, to: target)
        #expect(migration.isNeeded)
        let report = try migration.run()
        let store = try SQLiteStore(url: url)
        #expect(store.writesPersistentHistory)
        let after = try store.persistentHistory()
        #expect(after.map(\.transactionNumber) == before.map(\.transactionNumber))
        #expect(after.map(\.timestamp) == before.map(\.timestamp) && after.map(\.processID) == before.map(\.processID))
        let kept = before.flatMap(\.changes).filter { target.entity(named: $0.entityName) != nil }
        #expect(after.flatMap(\.changes).count == kept.count)
        #expect(report.droppedHistoryChanges == before.flatMap(\.changes).count - kept.count)
        #expect(after.flatMap(\.changes).map { "\($0.changeID) \($0.entityName) \($0.primaryKey) \($0.changeType)" }
            == kept.map { "\($0.changeID) \($0.entityName) \($0.primaryKey) \($0.changeType)" })
        let update = try #require(after.last?.changes.first { $0.changeType == .update && $0.primaryKey == book.primaryKey })
        #expect(update.updatedProperties == ["price", "title"])
        // The migrated store goes on writing history after it.
        let context = ObjectContext(store: store)
        let object = try #require(try context.fetch(FetchRequest(entityName: "Book")).first)
        try object.setValue(.string("After"), forKey: "title")
        try context.save()
        #expect(try store.persistentHistory().map(\.transactionNumber) == before.map(\.transactionNumber) + [3])
    }
}

/// Whether a fetch failed for naming an entity or key the model lacks.
func namesWhatIsGone(_ error: any Error) -> Bool {
    guard let error = error as? StoreError else { return false }
    switch error {
    case .unknownEntity, .invalidPredicate, .unknownKey: return true
    default: return false
    }
}

/// Entity version hashes of a metadata property list.
enum StoreCatalogTestsHelper {
    static func hashes(_ metadata: [String: Any]) -> [String: Data] {
        (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
    }
}

@Suite("Lightweight migration of a Sift store")
struct GeneratedMigrationTests {
    /// The company model's next version: a renamed attribute, a widened
    /// type, a removed attribute, a new attribute with a default, a to-one
    /// made to-many (many-to-many with its inverse), a renamed entity and a new one.
    static let nextVersion: DataModel = {
        let json = #"""
        {"entities": [
          {"name": "Department", "attributes": [{"name": "name", "type": "string"}, {"name": "budget", "type": "double"},
                                                {"name": "floor", "type": "integer16", "optional": true}],
           "relationships": [{"name": "employees", "destination": "Employee", "toMany": true, "inverse": "department"}]},
          {"name": "Employee", "attributes": [{"name": "name", "type": "string"},
                                              {"name": "alias", "type": "string", "optional": true, "renamingIdentifier": "nickname"},
                                              {"name": "age", "type": "double"}, {"name": "salary", "type": "double"},
                                              {"name": "isManager", "type": "boolean"}, {"name": "startDate", "type": "date"},
                                              {"name": "level", "type": "integer32", "default": 1}],
           "relationships": [{"name": "department", "destination": "Department", "optional": true, "inverse": "employees"},
                             {"name": "managers", "destination": "Employee", "toMany": true, "inverse": "reports",
                              "renamingIdentifier": "manager"},
                             {"name": "reports", "destination": "Employee", "toMany": true, "inverse": "managers"},
                             {"name": "labels", "destination": "Label", "toMany": true, "inverse": "employees",
                              "renamingIdentifier": "tags"}]},
          {"name": "Label", "renamingIdentifier": "Tag", "attributes": [{"name": "name", "type": "string"}],
           "relationships": [{"name": "employees", "destination": "Employee", "toMany": true, "inverse": "labels"}]},
          {"name": "Project", "attributes": [{"name": "title", "type": "string"}]}
        ]}
        """#
        return try! DataModel(json: Data(json.utf8))
    }()

    @Test("Every object, value and link survives, and the same questions get the same answers")
    func companyToNextVersion() throws {
        let folder = try ScratchFolder()
        let url = try folder.companyStore()
        let source = try SQLiteStore(url: url, readOnly: true)
        let migration = try StoreMigration(storeAt: url, to: Self.nextVersion)
        #expect(migration.sourceVersion == "the model Sift keeps in the store")
        #expect(migration.mapping.mapping(for: "Employee")?.attributes["age"] == .convert(from: "age", .integer64))
        #expect(migration.mapping.mapping(for: "Employee")?.relationships["managers"] == .toMany(from: "manager"))
        #expect(migration.mapping.mapping(for: "Label")?.source == "Tag")
        #expect(migration.mapping.summary.contains("  alias: renamed from nickname"))
        #expect(migration.mapping.summary.contains("  rating: removed"))
        #expect(migration.mapping.summary.contains("Project: new entity, empty"))
        let expected = try MigrationSnapshot.expected(source, migration.mapping)
        let before = try ObjectContext(store: source).fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: "manager.age > 40 AND ANY tags.name == 'remote'"))
        #expect(!before.isEmpty)
        let report = try migration.run()
        #expect(report.objects["Employee"] == Company.dataSet.nodes.filter { $0.id.entity == Company.model.entity(named: "Employee")!.index }.count)
        let store = try SQLiteStore(url: url, model: Self.nextVersion)
        let actual = try MigrationSnapshot.actual(store)
        #expect(actual.count == expected.count)
        for (key, object) in expected { #expect(actual[key] == object, "\(key)") }
        #expect(CoreDataInvariants.violations(of: store).isEmpty, "\(CoreDataInvariants.violations(of: store))")
        let after = try ObjectContext(store: store).fetchObjectIDs(FetchRequest(entityName: "Employee", predicate: "ANY managers.age > 40 AND ANY labels.name == 'remote'"))
        #expect(after.map(\.primaryKey) == before.map(\.primaryKey))
        // New objects get keys past the old ones, and the new attribute its default.
        let context = ObjectContext(store: store)
        let hire = try context.insert("Employee")
        #expect(try hire.value(forKey: "level") == .int(1))
    }

    @Test("A change an inferred mapping cannot make is refused with every reason")
    func notInferable() throws {
        let folder = try ScratchFolder()
        let url = try folder.companyStore()
        let json = Company.model.jsonData
        var text = String(decoding: json, as: UTF8.self)
        text = text.replacingOccurrences(of: #"{"name":"age","type":"integer64"}"#, with: #"{"name":"age","type":"string"}"#)
        let changed = try DataModel(json: Data(text.utf8))
        #expect(changed.entity(named: "Employee")?.attribute(named: "age")?.type == .string)
        let bytes = try Data(contentsOf: url)
        #expect { try StoreMigration(storeAt: url, to: changed) } throws: { error in
            guard case StoreError.cannotMigrate(_, let reasons) = error else { return false }
            return reasons == ["attribute 'Employee.age' changes type from integer64 to string, which an inferred mapping does not convert"]
        }
        #expect(try Data(contentsOf: url) == bytes)
    }
}
