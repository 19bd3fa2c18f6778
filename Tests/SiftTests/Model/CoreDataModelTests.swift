// Models as Core Data keeps them: the model cache of the stores Apple's
// framework wrote (../shared/coredata-stores), their Xcode models (XML
// bundles with several versions, and Xcode 3's `elements`), and the version
// hashes that tie a store to the model version that made it. The stores
// are read on copies and the suite skips when the fixtures are absent.

import Foundation
import SiftModel
import SiftStore
import Testing

/// One store of `../shared/coredata-stores`, with its manifest.
struct CoreDataFixture: Sendable, CustomTestStringConvertible {
    static let folder = Fixtures.repositoryRoot.deletingLastPathComponent().appendingPathComponent("shared/coredata-stores")
    static let isPresent = FileManager.default.fileExists(atPath: folder.path)

    /// Every fixture, by folder name.
    static let all: [CoreDataFixture] = {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return names.sorted().compactMap { CoreDataFixture(name: $0) }
    }()

    let name: String
    let storeFile: String
    let companions: [String]
    let modelFile: String
    /// The model version that made the store, when it is one of a bundle's.
    let createdBy: String?
    var testDescription: String { name }

    init?(name: String) {
        let folder = Self.folder.appendingPathComponent(name)
        guard let data = FileManager.default.contents(atPath: folder.appendingPathComponent("manifest.json").path),
              let manifest = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
              let files = manifest["files"] as? [String: Any], let store = files["store"] as? String,
              let model = files["model"] as? String else { return nil }
        self.name = name
        storeFile = store
        companions = files["companions"] as? [String] ?? []
        modelFile = model
        createdBy = (manifest["model_version_that_created_store"] as? String).flatMap {
            $0.hasSuffix(".xcdatamodel") ? String($0.dropLast(".xcdatamodel".count)) : nil
        }
    }

    var modelURL: URL { Self.folder.appendingPathComponent(name).appendingPathComponent(modelFile) }

    /// The manifest's row count of each entity (its own rows, not its subentities').
    var rowsPerEntity: [String: Int] {
        let url = Self.folder.appendingPathComponent(name).appendingPathComponent("manifest.json")
        guard let data = FileManager.default.contents(atPath: url.path),
              let manifest = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return [:] }
        return (manifest["rows_per_entity"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Int }
    }

    /// A writable copy of the store and its companion files in a new temporary folder.
    func copy() throws -> URL {
        let destination = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cd-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        for file in [storeFile] + companions {
            try FileManager.default.copyItem(at: Self.folder.appendingPathComponent(name).appendingPathComponent(file),
                                            to: destination.appendingPathComponent(file))
            // The fixtures may be read-only; their copies are written to.
            try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: destination.appendingPathComponent(file).path)
        }
        return destination.appendingPathComponent(storeFile)
    }

    /// The store's metadata property list and model cache, read from a copy.
    func metadataAndModelCache() throws -> (metadata: [String: Any], modelCache: Data?) {
        let url = try copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let connection = try SQLiteConnection(path: url.path)
        guard case .blob(let plist)? = try connection.query("SELECT Z_PLIST FROM Z_METADATA").first?.first,
              let metadata = try PropertyListSerialization.propertyList(from: plist, format: nil) as? [String: Any] else {
            throw FixtureError.missing("\(name): Z_METADATA")
        }
        let hasCache = try !connection.query("SELECT name FROM sqlite_master WHERE name = 'Z_MODELCACHE'").isEmpty
        var cache: Data?
        if hasCache, case .blob(let blob)? = try connection.query("SELECT Z_CONTENT FROM Z_MODELCACHE").first?.first {
            cache = blob
        }
        return (metadata, cache)
    }
}

@Suite("Core Data models", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct CoreDataModelTests {
    static func hashes(_ metadata: [String: Any]) -> [String: Data] {
        (metadata["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
    }

    @Test("A store's model cache decodes to the model that made it: the same version hashes", arguments: CoreDataFixture.all)
    func modelCache(_ fixture: CoreDataFixture) throws {
        let (metadata, cache) = try fixture.metadataAndModelCache()
        guard let cache else { return }  // RestKit's store has none
        let model = try DataModel(modelCache: cache)
        #expect(!Self.hashes(metadata).isEmpty)
        #expect(model.entityVersionHashes == Self.hashes(metadata), "\(fixture.name)")
        if let digest = metadata["NSStoreModelVersionHashesDigest"] as? String {
            #expect(model.versionHashesDigest == digest)
        }
        if let checksum = metadata["NSStoreModelVersionChecksumKey"] as? String {
            #expect(model.versionChecksum == checksum)
        }
        #expect(model.versionIdentifiers.sorted() == ((metadata["NSStoreModelVersionIdentifiers"] as? [String]) ?? []).sorted())
    }

    @Test("A model written as a model cache reads back with the same version hashes", arguments: CoreDataFixture.all)
    func modelCacheWritten(_ fixture: CoreDataFixture) throws {
        let (metadata, cache) = try fixture.metadataAndModelCache()
        let model = try cache.map { try DataModel(modelCache: $0) } ?? DataModel(contentsOf: fixture.modelURL)
        let written = try #require(model.modelCacheData)
        // Raw DEFLATE, like Core Data's: the first two bytes are not a zlib header
        // (method 8, and a check value making them a multiple of 31).
        let header = written.prefix(2).map(Int.init)
        #expect(header.count == 2 && !(header[0] & 0x0F == 8 && (header[0] << 8 | header[1]) % 31 == 0))
        let reread = try DataModel(modelCache: written)
        #expect(reread.entityVersionHashes == Self.hashes(metadata), "\(fixture.name)")
        #expect(reread.entityVersionHashes == model.entityVersionHashes)
        #expect(reread.versionIdentifiers.sorted() == model.versionIdentifiers.sorted())
        #expect(reread.entities.map(\.name).sorted() == model.entities.map(\.name).sorted())
        for entity in model.entities {
            let other = try #require(reread.entity(named: entity.name))
            #expect(other.superentity == entity.superentity && other.isAbstract == entity.isAbstract)
            // Properties as Core Data archives them: a dictionary, in no order.
            func described(_ a: Attribute) -> String {
                "\(a.name) \(a.type) \(a.isOptional) \(String(describing: a.defaultValue)) \(a.isTransient) \(a.allowsExternalStorage) "
                    + "\(a.valueTransformerName ?? "") \(a.renamingIdentifier ?? "") \(a.versionHashModifier ?? "") \(a.minimum ?? "") "
                    + "\(a.maximum ?? "") \(a.derivation ?? "") \(a.preservesValueInHistoryOnDeletion)"
            }
            func described(_ r: Relationship) -> String {
                "\(r.name) \(r.destination) \(r.isToMany) \(r.isOptional) \(r.inverse ?? "") \(r.deleteRule) \(r.isOrdered) "
                    + "\(r.minimumCount) \(r.maximumCount) \(r.isTransient) \(r.renamingIdentifier ?? "") \(r.versionHashModifier ?? "")"
            }
            #expect(Set(other.attributes.map(described)) == Set(entity.attributes.map(described)), "\(fixture.name) \(entity.name)")
            #expect(Set(other.relationships.map(described)) == Set(entity.relationships.map(described)), "\(fixture.name) \(entity.name)")
            #expect(other.indexes.map(\.name) == entity.indexes.map(\.name))
            #expect(other.uniquenessConstraints == entity.uniquenessConstraints)
        }
    }

    @Test("The Xcode model version that made a store is found by its hashes", arguments: CoreDataFixture.all)
    func xcodeModelVersion(_ fixture: CoreDataFixture) throws {
        let (metadata, _) = try fixture.metadataAndModelCache()
        let hashes = Self.hashes(metadata)
        if fixture.modelURL.pathExtension == "xcdatamodeld" {
            let bundle = try ModelBundle(contentsOf: fixture.modelURL)
            #expect(fixture.createdBy != nil && !hashes.isEmpty)
            let found = bundle.version(matching: hashes)
            #expect(found?.name == fixture.createdBy, "\(fixture.name): \(bundle.versionNames)")
        } else if fixture.modelURL.pathExtension == "xcdatamodel" {
            // One version (RestKit's is Xcode 3's `elements`).
            #expect(!hashes.isEmpty)
            #expect(try DataModel(contentsOf: fixture.modelURL).entityVersionHashes == hashes)
        }
    }

    @Test("Inspecting a store: its entities, their rows (from the -wal too) and its model", arguments: CoreDataFixture.all)
    func inspection(_ fixture: CoreDataFixture) throws {
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let before = try Data(contentsOf: url)
        let summary = try StoreInspection(url: url)
        #expect(summary.layout == .coreData)
        let expected = fixture.rowsPerEntity.filter { name, _ in summary.entities.contains { $0.name == name } }
        #expect(!expected.isEmpty)
        #expect(Dictionary(uniqueKeysWithValues: summary.entities.map { ($0.name, $0.rows) }).filter { expected[$0.key] != nil }
                == expected)
        #expect((summary.model != nil) == (fixture.name != "restkit-rktwittercoredata-seed"))
        if fixture.modelURL.pathExtension == "xcdatamodeld" {
            let given = try StoreInspection(url: url, model: fixture.modelURL)
            #expect(given.modelSource.contains("'\(fixture.createdBy ?? "")'"))
        }
        // Read-only: the store file is as it was.
        #expect(try Data(contentsOf: url) == before)
    }

    @Test func aModelThatDidNotMakeTheStoreIsRefused() throws {
        guard let fixture = CoreDataFixture.all.first(where: { $0.name == "bsk-bookmarks-v5" }) else { return }
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let older = fixture.modelURL.appendingPathComponent("BookmarksModel 2.xcdatamodel")
        let error = #expect(throws: StoreError.self) { try StoreInspection(url: url, model: older) }
        #expect(error.map { "\($0)" }?.contains("'BookmarkEntity' differs") == true)
        let inspect = try runSift(["inspect", "--store", url.path])
        #expect(inspect.status == 0 && inspect.output.contains("BookmarkEntity  10 rows"))
    }

    @Test func everyVersionOfEveryBundleLoads() throws {
        for fixture in CoreDataFixture.all where fixture.modelURL.pathExtension == "xcdatamodeld" {
            let bundle = try ModelBundle(contentsOf: fixture.modelURL)
            for name in bundle.versionNames { _ = try bundle.model(version: name) }
            #expect(throws: ModelError.self) { try bundle.model(version: "No such version") }
        }
    }

    @Test func inheritanceFromTheCache() throws {
        guard let fixture = CoreDataFixture.all.first(where: { $0.name == "coredataplus-samplemodel-v1" }),
              let cache = try fixture.metadataAndModelCache().modelCache else { return }
        let model = try DataModel(modelCache: cache)
        let car = try #require(model.entity(named: "Car"))
        let sportCar = try #require(model.entity(named: "SportCar"))
        #expect(sportCar.superentity == "Car")
        #expect(car.subentities == ["SportCar"])
        #expect(model.descendants(of: car).map(\.name).sorted() == ["Car", "ExpensiveSportCar", "SportCar"])
        // Inherited properties first, in the same slots.
        for attribute in car.attributes {
            #expect(sportCar.attribute(named: attribute.name)?.slot == attribute.slot)
        }
        #expect(model.root(of: try #require(model.entity(named: "ExpensiveSportCar"))).name == "Car")
    }
}

@Suite("Hostile property lists")
struct HostilePropertyListTests {
    /// A binary property list built by hand: objects, then the offset table and trailer.
    static func binaryPlist(_ objects: [[UInt8]], top: Int = 0) -> Data {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects {
            offsets.append(bytes.count)
            bytes += object
        }
        let table = bytes.count
        for offset in offsets { bytes.append(UInt8(offset)) }
        func bigEndian(_ value: Int) -> [UInt8] { (0..<8).reversed().map { UInt8(truncatingIfNeeded: UInt64(value) >> ($0 * 8)) } }
        let trailer: [UInt8] = [0, 0, 0, 0, 0, 0, 1, 1]
        bytes += trailer
        bytes += bigEndian(objects.count)
        bytes += bigEndian(top)
        bytes += bigEndian(table)
        return Data(bytes)
    }

    @Test func wellFormedOnesRead() throws {
        // ["a"]: an array holding one ASCII string.
        let array = Self.binaryPlist([[0xA1, 1], [0x51, UInt8(ascii: "a")]])
        #expect(PropertyLists.read(array) as? [String] == ["a"])
    }

    @Test("Sets, cycles, non-string keys and references out of range are refused", arguments: [
        [[0xC1, 1], [0x51, UInt8(ascii: "a")]],        // a set
        [[0xA1, 0]],                                    // an array inside itself
        [[0xD1, 1, 1], [0x10, 7]],                      // a dictionary keyed by an integer
        [[0xA1, 9]],                                    // a reference past the objects
    ] as [[[UInt8]]])
    func refused(_ objects: [[UInt8]]) throws {
        #expect(PropertyLists.read(Self.binaryPlist(objects)) == nil)
        #expect(throws: ModelError.self) { try DataModel(compiledModel: Self.binaryPlist(objects)) }
    }
}
