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

        /// A summary of one entity.
        ///
        /// - Parameters:
        ///   - name: The entity's name.
        ///   - number: Its number in a Core Data store, if it has one.
        ///   - superentity: The entity it inherits from.
        ///   - rows: How many objects of the entity itself the store holds.
        public init(name: String, number: Int?, superentity: String?, rows: Int) {
            self.name = name
            self.number = number
            self.superentity = superentity
            self.rows = rows
        }
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
    ///
    /// - Parameters:
    ///   - url: The store file to read.
    ///   - modelURL: A model file (JSON, `.xcdatamodel`, `.mom`) or bundle (`.xcdatamodeld`, `.momd`) to read
    ///     the store with; nil for the model the store keeps.
    /// - Throws: `StoreError`: `.notAStoreFile` when there is no file at `url` (or it is a folder, or
    ///   empty); `.foreignDatabase`,
    ///   `.notADatabase` or `.damaged` when the file is not a readable store; `.modelDoesNotMatchStore` or
    ///   `.modelMismatch` when the given model is not the store's; `.invalidDataSet` when the model file does
    ///   not load; `.locked` or `.sqlite` when SQLite fails.
    public init(url: URL, model modelURL: URL? = nil) throws(StoreError) {
        let path = url.path
        let attributes = try? FileManager.default.attributesOfItem(atPath: path)
        if let problem = StoreError.FileProblem(storeAt: url, attributes: attributes, creating: false) {
            throw .notAStoreFile(path: path, problem: problem)
        }
        let connection: SQLiteConnection
        do {
            connection = try SQLiteConnection(path: path, readOnly: true)
        } catch {
            throw StoreError(error, path: path)
        }
        guard let catalog = try StoreCatalog.read(connection, path: path) else {
            throw .foreignDatabase(path: path, tables: [])
        }
        metadata = catalog.metadata.filter { $0.key != StoreMetadata.modelKey }.mapValues(Self.summary)
        // The model: a file given (a bundle's version whose hashes are the
        // store's), else what the store holds.
        var given: DataModel?
        var source: String?
        if let modelURL {
            do {
                if ["xcdatamodeld", "momd"].contains(modelURL.pathExtension) {
                    let bundle = try ModelBundle(contentsOf: modelURL)
                    guard let (name, model) = bundle.version(matching: catalog.hashes) else {
                        throw StoreError.modelDoesNotMatchStore(
                            path: path, reason: "no version of \(modelURL.lastPathComponent) "
                                + "(\(bundle.versionNames.joined(separator: ", "))) has the store's entity version hashes")
                    }
                    (given, source) = (model, "\(modelURL.lastPathComponent), version '\(name)' (its hashes are the store's)")
                } else {
                    (given, source) = (try DataModel(contentsOf: modelURL), modelURL.lastPathComponent)
                }
            } catch let error as StoreError {
                throw error
            } catch {
                throw .invalidDataSet(DataSetError("\(error)"))
            }
        }
        model = try catalog.model(expected: given)
        let writtenBySift = catalog.metadata[StoreMetadata.modelKey] != nil
        layout = writtenBySift ? .sift : .coreData
        modelSource = source ?? (writtenBySift ? "the model Sift keeps in the store's metadata"
            : catalog.modelCache != nil ? "the store's model cache" : "none: the store has no model cache; give its model")
        // Entities by number: rows counted in their root's table.
        let byNumber = Dictionary(catalog.entities.map { ($0.number, $0) }, uniquingKeysWith: { a, _ in a })
        var summaries: [EntitySummary] = []
        do {
            // Persistent history's entities (numbered from 16 000) live in tables of their own.
            for entity in catalog.entities where entity.number < 16_000 {
                var root = entity
                var steps = 0
                while root.parent != 0, let parent = byNumber[root.parent], steps < catalog.entities.count {
                    root = parent
                    steps += 1
                }
                var count = 0
                if catalog.tables.contains(CoreDataCatalog.table(ofRoot: root.name)),
                   case .integer(let n)? = try connection.query(
                       CoreDataCatalog.countRows(ofRoot: root.name, entityNumber: entity.number, in: SQLiteDialect())).first?.first {
                    count = Int(n)
                }
                summaries.append(EntitySummary(name: entity.name, number: entity.number,
                                               superentity: byNumber[entity.parent]?.name, rows: count))
            }
        } catch {
            throw StoreError(error, path: path)
        }
        entities = summaries
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
