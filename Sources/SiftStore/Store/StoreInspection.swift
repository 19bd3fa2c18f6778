// Store stage: what a store file holds, read without opening it for
// fetches — its layout (Core Data's or Sift's), where its model comes from,
// its entities with their row counts, and its metadata. For a store Apple's
// framework wrote, the model is the one given (a bundle's version picked by
// the store's version hashes, as Core Data picks it) or else the store's
// own model cache.

import Foundation
import Sift

/// A summary of a store file.
///
/// ```swift
/// let summary = try StoreInspection(url: storeURL)       // the model from the store's cache
/// for entity in summary.entities { print(entity.name, entity.rows) }
/// ```
public struct StoreInspection: Sendable {
    /// Who wrote the store (both write Core Data's layout).
    public enum Layout: String, Sendable {
        /// Apple's framework.
        case coreData = "Core Data"
        /// Sift, which keeps its model in the metadata too.
        case sift = "Core Data, written by Sift"
    }

    /// One entity of the store.
    public struct EntitySummary: Hashable, Sendable {
        /// The entity's name.
        public var name: String
        /// Its number (`Z_ENT`) in a Core Data store.
        public var number: Int?
        /// The entity it inherits from.
        public var superentity: String?
        /// How many objects of the entity itself (not its subentities) the store holds.
        public var rows: Int
    }

    /// Whose layout the store's tables follow.
    public var layout: Layout
    /// The store's model, when one was given or the store carries it.
    public var model: DataModel?
    /// Where the model came from, in words.
    public var modelSource: String
    /// The entities, in the store's order.
    public var entities: [EntitySummary]
    /// The metadata, each value summarized as text.
    public var metadata: [String: String]

    /// Reads the store at `url` (read-only: the file is not changed). A
    /// model file, when given, must be the store's model (or a bundle with
    /// a version that is).
    public init(url: URL, model modelURL: URL? = nil) throws(StoreError) {
        let path = url.path
        guard FileManager.default.fileExists(atPath: path) else { throw .cannotWrite(path: path, reason: "no such file") }
        let connection: SQLiteConnection
        let tables: Set<String>
        let dialect = SQLiteDialect()
        do {
            connection = try SQLiteConnection(path: path, readOnly: true)
            tables = Set(try connection.query(dialect.catalogQuery).compactMap { row -> String? in
                if case .text("table") = row[0], case .text(let name) = row[1] { return name }
                return nil
            })
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw .damaged(path: path, reason: "\(error)")
        }
        guard CoreDataCatalog.requiredTables.allSatisfy(tables.contains) else {
            if tables.contains(CoreDataCatalog.requiredTables[0]) {
                throw .damaged(path: path, reason: "it is in the layout of an earlier Sift, before Core Data's: "
                               + "import its data into a new store")
            }
            throw .foreignDatabase(path: path, tables: tables.sorted())
        }
        layout = .coreData
        do {
            let plistData: Data? = try connection.query(CoreDataCatalog.selectMetadata(in: dialect)).first.flatMap {
                if case .blob(let data) = $0[0] { data } else { nil }
            }
            let plist = plistData.flatMap { PropertyLists.read($0) as? [String: Any] }
            guard let plist else { throw StoreError.damaged(path: path, reason: "its metadata is not a property list") }
            metadata = plist.filter { $0.key != StoreMetadata.modelKey }.mapValues(Self.summary)
            let hashes = (plist["NSStoreModelVersionHashes"] as? [String: Any] ?? [:]).compactMapValues { $0 as? Data }
            var cache: Data?
            if tables.contains(CoreDataCatalog.modelCacheTable),
               case .blob(let blob)? = try connection.query(CoreDataCatalog.selectModelCache(in: dialect)).first?.first {
                cache = blob
            }
            if modelURL == nil, let json = plist[StoreMetadata.modelKey] as? String,
               let model = try? DataModel(json: Data(json.utf8)) {
                // A store Sift wrote keeps its model in its metadata.
                self.model = model
                modelSource = "the model Sift keeps in the store's metadata"
                layout = .sift
            } else {
                (model, modelSource) = try Self.model(given: modelURL, hashes: hashes, cache: cache, path: path)
            }
            // Entities by number: rows counted in their root's table.
            var rows: [(number: Int, name: String, parent: Int)] = []
            for row in try connection.query(CoreDataCatalog.selectEntities(in: dialect)) {
                guard case .integer(let number) = row[0], case .text(let name) = row[1] else { continue }
                let parent: Int = if case .integer(let p) = row[2] { Int(p) } else { 0 }
                rows.append((Int(number), name, parent))
            }
            let byNumber = Dictionary(rows.map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
            var summaries: [EntitySummary] = []
            // Persistent history's entities (numbered from 16 000) live in tables of their own.
            for entity in rows where entity.number < 16_000 {
                var root = entity
                var steps = 0
                while root.parent != 0, let parent = byNumber[root.parent], steps < rows.count {
                    root = parent
                    steps += 1
                }
                var count = 0
                if tables.contains(CoreDataCatalog.table(ofRoot: root.name)),
                   case .integer(let n)? = try connection.query(
                       CoreDataCatalog.countRows(ofRoot: root.name, entityNumber: entity.number, in: dialect)).first?.first {
                    count = Int(n)
                }
                summaries.append(EntitySummary(name: entity.name, number: entity.number,
                                               superentity: byNumber[entity.parent]?.name, rows: count))
            }
            entities = summaries
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(error, path: path)
        } catch {
            throw .damaged(path: path, reason: "\(error)")
        }
    }

    /// The model: the one given (a bundle's version whose hashes are the
    /// store's), or the store's model cache, or none.
    static func model(given url: URL?, hashes: [String: Data], cache: Data?, path: String) throws(StoreError)
        -> (DataModel?, String)
    {
        if let url {
            let isBundle = ["xcdatamodeld", "momd"].contains(url.pathExtension)
            do {
                if isBundle {
                    let bundle = try ModelBundle(contentsOf: url)
                    guard let (name, model) = bundle.version(matching: hashes) else {
                        throw StoreError.modelDoesNotMatchStore(
                            path: path, reason: "no version of \(url.lastPathComponent) "
                                + "(\(bundle.versionNames.joined(separator: ", "))) has the store's entity version hashes")
                    }
                    return (model, "\(url.lastPathComponent), version '\(name)' (its hashes are the store's)")
                }
                let model = try DataModel(contentsOf: url)
                let differences = Self.differences(model.entityVersionHashes, hashes)
                guard differences.isEmpty else {
                    throw StoreError.modelDoesNotMatchStore(path: path, reason: differences.joined(separator: "; "))
                }
                return (model, url.lastPathComponent)
            } catch let error as ModelError {
                throw .invalidDataSet(DataSetError("\(error)"))
            } catch let error as StoreError {
                throw error
            } catch {
                throw .unexpected("\(error)")
            }
        }
        guard let cache else { return (nil, "none: the store has no model cache; give its model") }
        do {
            return (try DataModel(modelCache: cache), "the store's model cache")
        } catch {
            throw .damaged(path: path, reason: "its model cache does not read: \(error)")
        }
    }

    /// How a model's entity hashes differ from a store's, entity by entity.
    static func differences(_ model: [String: Data], _ store: [String: Data]) -> [String] {
        var result: [String] = []
        for name in Set(model.keys).union(store.keys).sorted() {
            switch (model[name], store[name]) {
            case (nil, _): result.append("the store has entity '\(name)', the model has not")
            case (_, nil): result.append("the model has entity '\(name)', the store has not")
            case (let a?, let b?) where a != b: result.append("entity '\(name)' differs")
            default: break
            }
        }
        return result
    }

    /// A metadata value as short text.
    static func summary(_ value: Any) -> String {
        switch value {
        case let text as String: return text
        case let data as Data: return "\(data.count) bytes"
        case let dictionary as [String: Any]: return "\(dictionary.count) entries"
        case let array as [Any]: return "[" + array.map(summary).joined(separator: ", ") + "]"
        case let number as NSNumber: return number.stringValue
        default: return "\(value)"
        }
    }
}
