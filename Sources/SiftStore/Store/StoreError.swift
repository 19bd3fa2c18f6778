// Store stage: why a store operation failed — one typed error for every
// backend, with SQLite's failures that a user can act on given cases of
// their own.

import CSQLite
import Foundation
import Sift

/// Why a store operation failed: a case per kind of failure, with what a
/// caller needs to act on it (paths, names, objects, the predicate error and
/// where it is), and a message built from those. ``code`` names the case
/// alone, for logs and for callers that only branch on the kind.
///
/// ```swift
/// let hire = try context.insert("Employee")
/// try hire.setValue(.string("Dee"), forKey: "name")     // no age, which the model requires
/// do {
///     try context.save()                                 // save() throws(StoreError): so `error` is one
/// } catch {
///     print(error)        // the save was refused: <Employee -1 (inserted)>.age: is required but has no value
///     if case .validation(let failures) = error { print(failures.map(\.property)) }   // ["age"]
/// }
/// ```
public enum StoreError: Error, CustomStringConvertible {
    /// SQLite reported an error.
    case sqlite(SQLiteError)
    /// The store was made for another model.
    case modelMismatch(path: String, storeHash: String, modelHash: String)
    /// The file is not a Sift store and no model was given to make one.
    case noModel(path: String)
    /// The predicate or a sort key does not parse or fit the model.
    case invalidPredicate(PredicateCompileError, text: String)
    /// The predicate uses something SQL cannot express; the range is where,
    /// in the predicate's text, when it is known.
    case notExpressibleInSQL(SQLLoweringError, range: SourceRange?, text: String?)
    /// An entity the model does not have.
    case unknownEntity(String)
    /// A key path that is not a relationship of the entity (prefetching, faults).
    case unknownRelationship(String, entity: String)
    /// An attribute or relationship the entity does not have.
    case unknownKey(String, entity: String)
    /// A derived attribute was set: the store computes its value.
    case readOnlyAttribute(String, entity: String)
    /// A data set that cannot be imported.
    case invalidDataSet(DataSetError)
    /// A change to an object deleted in this context.
    case objectDeleted(ObjectReference)
    /// A value set on an attribute that cannot keep it (another type, or
    /// outside its range); nothing was changed.
    case invalidValue(SaveValidationFailure)
    /// An attribute read as a Swift type that does not hold its value.
    case wrongType(property: String, entity: String, expected: String, found: String)
    /// A record type that an object does not decode as, or a record that
    /// does not encode as attribute values; the reason names the key.
    case recordMismatch(type: String, reason: String)
    /// A save refused before it touched the store: each failure names the
    /// object and the property.
    case validation([SaveValidationFailure])
    /// A save that found rows changed or deleted since this context read them,
    /// under the `.error` merge policy; nothing was written.
    case conflicts([SaveConflict])
    /// A fault whose row is no longer in the store (deleted by another
    /// context or process since the object was first seen).
    case objectNotFound(ObjectReference)
    /// A store file that could not be written; the old file is intact.
    case cannotWrite(path: String, reason: String)
    /// A store file its format cannot read (a malformed line, an object of
    /// an entity the model lacks, a link to an object not in the file); the
    /// reason is the format's, and the file was left as it was.
    case unreadableStoreFile(path: String, reason: String)
    /// A store's format gave a new object a reference another object of its
    /// entity has; nothing was written.
    case duplicateReference(entity: String, reference: String)
    /// The file is not an SQLite database (a damaged file, or another kind of
    /// file); it was left as it was.
    case notADatabase(path: String)
    /// The path names no store file that can be opened: a folder, a file in
    /// a folder that does not exist, a missing file (when no store is to be
    /// made), or an empty file (when there is no model to make a store with).
    /// ``FileProblem`` says which; nothing was created.
    case notAStoreFile(path: String, problem: FileProblem)
    /// A write (an import, usually) of objects whose primary keys the store
    /// already holds: the store has data already. `entity` is the entity
    /// (the root of its hierarchy) whose table refused the key, when known;
    /// nothing was written.
    case keysInUse(path: String, entity: String?)
    /// An SQLite database of another application: it has tables but no Sift
    /// metadata. Sift neither reads nor changes it.
    case foreignDatabase(path: String, tables: [String])
    /// The store's file is damaged (truncated, overwritten, or its metadata
    /// unreadable); the reason is SQLite's or Sift's.
    case damaged(path: String, reason: String)
    /// Another connection or process held a lock on the store for longer
    /// than the busy timeout; nothing was written.
    case locked(path: String)
    /// The store's file (or its folder) cannot be written, or it was opened
    /// read-only; nothing was written.
    case readOnly(path: String)
    /// The store ran out of room (a full disk, or the database's page limit);
    /// the transaction was rolled back and nothing was written.
    case full(path: String)
    /// A table whose largest primary key is the largest integer: no new key
    /// is left for an insert.
    case keysExhausted(entity: String)
    /// An object used after the context that held it was released.
    case contextGone(ObjectReference)
    /// A model the store cannot hold (yet).
    case unsupportedModel(String)
    /// A model given for a store that it did not make.
    case modelDoesNotMatchStore(path: String, reason: String)
    /// A store that exists whose join table for one of the model's
    /// many-to-many relationships cannot be found or does not fit: the
    /// table (the store's, or the name Core Data gives it) and why. Nothing
    /// was read or written. Its code is `.modelDoesNotMatchStore`.
    case unmatchedJoinTable(path: String, table: String, reason: String)
    /// A fetch request template the model does not have.
    case unknownTemplate(String, available: [String])
    /// `$variables` of a template that were given no value.
    case missingVariables(template: String, [String])
    /// A database server (PostgreSQL) could not be reached, or refused a
    /// statement; the message is the server's, with the statement when one ran.
    case server(String, sql: String?)
    /// A failure Sift did not expect, with its description: please report it.
    case unexpected(String)
    /// A request that cannot run as asked: a dictionary fetch's property
    /// neither grouped nor aggregated, a sort key that names no result, a
    /// batch update without values, … (``RequestProblem`` says which).
    case invalidRequest(RequestProblem)
    /// Evaluating the predicate ran out of a budget (a regular expression
    /// that backtracks without end); nothing was returned.
    case evaluation(EvaluationError)
    /// A store that must be migrated to open with the model asked for, and
    /// cannot be: the reasons, each change it could not make (the store is
    /// left as it was).
    case cannotMigrate(path: String, reasons: [String])
    /// A store on a server that cannot be reached now (the connection
    /// failed or dropped, the server answered 5xx or did not answer in time):
    /// nothing was written, a context keeps its changes, and the same
    /// request can be tried again (``isRetryable``).
    case unavailable(String)
    /// A store on a server that was not reached at all (no server listens
    /// at its address, its host is unknown, no connection in time): the
    /// server's address and why, in words. Nothing was written; like
    /// ``unavailable(_:)`` it is retryable, but it says the server is not
    /// there rather than that it answered it cannot serve now.
    case unreachable(server: String, reason: String)

    /// Whether the same request may succeed if tried again later, unchanged:
    /// a store that was locked or could not be reached.
    public var isRetryable: Bool {
        switch self {
        case .locked, .unavailable, .unreachable: true
        default: false
        }
    }

    /// Runs an evaluation, its budget errors as `.evaluation`.
    static func evaluating<T>(_ body: () throws(EvaluationError) -> T) throws(StoreError) -> T {
        do {
            return try body()
        } catch {
            throw .evaluation(error)
        }
    }

    /// `error` as a store error: store and evaluation errors as they are,
    /// SQLite's as ``init(_:path:)`` classifies them for the store at `path`
    /// (or as `.sqlite` without one), anything else as `.unexpected`.
    package init(_ error: any Error, path: String? = nil, sql: String? = nil) {
        switch error {
        case let error as StoreError: self = error
        case let error as SQLiteError: self = path.map { StoreError(error, path: $0) } ?? .sqlite(error)
        case let error as EvaluationError: self = .evaluation(error)
        default: self = .unexpected("\(error)" + (sql.map { " (in: \($0))" } ?? ""))
        }
    }

    public var description: String {
        switch self {
        case .sqlite(let e): "\(e)"
        case .evaluation(let e): "\(e)"
        case .keysExhausted(let entity):
            "the table of '\(entity)' holds the largest primary key there is (\(Int64.max)): no new object can get a key"
        case .contextGone(let object): "\(object) was used after its context was released: keep the context while you use its objects"
        case .unsupportedModel(let reason): "this model cannot be used with a store: \(reason)"
        case .modelDoesNotMatchStore(let path, let reason): "the model given is not the model of '\(path)': \(reason)"
        case .unmatchedJoinTable(let path, let table, let reason):
            "the store '\(path)' does not fit its model: its join table \(table) cannot be matched to the model (\(reason)); "
                + "it was left unchanged"
        case .unknownTemplate(let name, let available):
            "the model has no fetch request template named '\(name)'"
                + (available.isEmpty ? " (it has none)" : " (it has \(available.map { "'\($0)'" }.joined(separator: ", ")))")
        case .missingVariables(let template, let names):
            "the template '\(template)' needs values for \(names.map { "$" + $0 }.joined(separator: ", "))"
        case .server(let message, let sql): "the database server: \(message)" + (sql.map { " (in: \($0))" } ?? "")
        case .unavailable(let reason): "the store's server cannot be reached now (try again): \(reason)"
        case .unreachable(let server, let reason): "the store's server \(server) was not reached: \(reason)"
        case .unexpected(let message): "an unexpected failure (please report it): \(message)"
        case .invalidRequest(let problem): "this request cannot run: \(problem)"
        case .cannotMigrate(let path, let reasons):
            "'\(path)' cannot be migrated (it is left as it was): " + reasons.joined(separator: "; ")
        case .modelMismatch(let path, let storeHash, let modelHash):
            "the store '\(path)' was made for another model (store \(storeHash), model \(modelHash)): "
                + "open it with the model it was made with, or migrate it"
        case .noModel(let path): "'\(path)' is not a Sift store, and no model was given to create one"
        case .invalidPredicate(let e, let text): e.rendered(in: text)
        case .notExpressibleInSQL(let e, let range?, let text?):
            SourceDiagnostic(message: e.description, range: range, in: text).rendered()
        case .notExpressibleInSQL(let e, _, _): "\(e)"
        case .unknownEntity(let name): "the model has no entity named '\(name)'"
        case .unknownRelationship(let path, let entity): "'\(path)' is not a relationship key path of '\(entity)'"
        case .unknownKey(let key, let entity): "'\(entity)' has no attribute or relationship named '\(key)'"
        case .readOnlyAttribute(let key, let entity): "'\(key)' of '\(entity)' is derived: the store computes it, and it cannot be set"
        case .invalidDataSet(let e): "\(e)"
        case .objectDeleted(let object): "\(object) was deleted in this context"
        case .invalidValue(let failure): "the value was not set: \(failure)"
        case .recordMismatch(let type, let reason): "the record type \(type) does not fit: \(reason)"
        case .wrongType(let property, let entity, let expected, let found):
            "'\(property)' of '\(entity)' holds \(found), which does not read as \(expected)"
        case .validation(let failures): "the save was refused: " + failures.map(\.description).joined(separator: "; ")
        case .conflicts(let conflicts):
            "the save found \(conflicts.count) conflict\(conflicts.count == 1 ? "" : "s") and wrote nothing: "
                + conflicts.map(\.description).joined(separator: "; ")
        case .objectNotFound(let object): "\(object) is no longer in the store"
        case .cannotWrite(let path, let reason): "cannot write '\(path)': \(reason); the old file is unchanged"
        case .unreadableStoreFile(let path, let reason): "the store file '\(path)' cannot be read: \(reason); it was left unchanged"
        case .duplicateReference(let entity, let reference):
            "a new \(entity) was given the reference \(reference), which another \(entity) has; nothing was written"
        case .notADatabase(let path):
            "'\(path)' is not an SQLite database (it may be damaged, or another kind of file); it was left unchanged"
        case .notAStoreFile(let path, let problem): problem.message(path)
        case .keysInUse(let path, let entity):
            "'\(path)' already holds \(entity.map { "\($0) objects" } ?? "objects") with the keys being written "
                + "(the store has data already); nothing was written: import into a new file, or into an empty store"
        case .foreignDatabase(let path, let tables) where tables.isEmpty:
            "'\(path)' is an SQLite database with no tables, not a store; it was left unchanged"
        case .foreignDatabase(let path, let tables):
            "'\(path)' is an SQLite database of another application (tables: \(tables.prefix(5).joined(separator: ", "))"
                + (tables.count > 5 ? ", …" : "") + "), not a Sift store; it was left unchanged: give a new file for the store"
        case .damaged(let path, let reason):
            "the store '\(path)' is damaged (\(reason)); it was left as it is: restore it from a backup"
        case .locked(let path):
            "the store '\(path)' is locked by another connection or process; nothing was written: try again when it is done"
        case .readOnly(let path):
            "the store '\(path)' is read-only (the file or its folder cannot be written); nothing was written"
        case .full(let path):
            "the store '\(path)' has no room left (the disk is full, or the store reached its size limit); nothing was written"
        }
    }
}

extension StoreError {
    /// The kind of a store error, without what it carries.
    public enum Code: String, Hashable, Sendable, CaseIterable {
        /// SQLite reported an error.
        case sqlite
        /// The store was made for another model.
        case modelMismatch
        /// No model to make a store with.
        case noModel
        /// A predicate or sort key that does not parse or fit the model.
        case invalidPredicate
        /// Something SQL cannot express.
        case notExpressibleInSQL
        /// An entity the model does not have.
        case unknownEntity
        /// A key path that is not a relationship.
        case unknownRelationship
        /// A property the entity does not have.
        case unknownKey
        /// A derived attribute was set.
        case readOnlyAttribute
        /// A data set that cannot be imported.
        case invalidDataSet
        /// A change to an object deleted in the context.
        case objectDeleted
        /// A value an attribute cannot keep.
        case invalidValue
        /// An attribute read as a type that does not hold its value.
        case wrongType
        /// A record type that does not fit the objects.
        case recordMismatch
        /// A save refused before it touched the store.
        case validation
        /// A save that found rows changed since they were read.
        case conflicts
        /// A fault whose row is gone.
        case objectNotFound
        /// A store file that could not be written.
        case cannotWrite
        /// A store file its format cannot read.
        case unreadableStoreFile
        /// A reference given to two objects of an entity.
        case duplicateReference
        /// A file that is not an SQLite database.
        case notADatabase
        /// A path that names no store file that can be opened.
        case notAStoreFile
        /// Primary keys the store already holds.
        case keysInUse
        /// Another application's database.
        case foreignDatabase
        /// A damaged store.
        case damaged
        /// A store locked by another connection.
        case locked
        /// A store that cannot be written.
        case readOnly
        /// A store out of room.
        case full
        /// A table with no primary key left.
        case keysExhausted
        /// An object used after its context was released.
        case contextGone
        /// A model a store cannot hold.
        case unsupportedModel
        /// A model given for a store it did not make.
        case modelDoesNotMatchStore
        /// A fetch request template the model lacks.
        case unknownTemplate
        /// Template variables without values.
        case missingVariables
        /// A database server failed or refused.
        case server
        /// A failure Sift did not expect.
        case unexpected
        /// A request that cannot run as asked.
        case invalidRequest
        /// Evaluation ran out of a budget.
        case evaluation
        /// A store that cannot be migrated.
        case cannotMigrate
        /// A store's server that cannot be reached now.
        case unavailable
        /// A store's server that was not reached at all.
        case unreachable
    }

    /// The error's kind: which case it is, without what it carries.
    ///
    /// ```swift
    /// do { try context.save() } catch { log(error.code.rawValue, error.description) }
    /// ```
    public var code: Code {
        switch self {
        case .sqlite: .sqlite
        case .modelMismatch: .modelMismatch
        case .noModel: .noModel
        case .invalidPredicate: .invalidPredicate
        case .notExpressibleInSQL: .notExpressibleInSQL
        case .unknownEntity: .unknownEntity
        case .unknownRelationship: .unknownRelationship
        case .unknownKey: .unknownKey
        case .readOnlyAttribute: .readOnlyAttribute
        case .invalidDataSet: .invalidDataSet
        case .objectDeleted: .objectDeleted
        case .invalidValue: .invalidValue
        case .wrongType: .wrongType
        case .recordMismatch: .recordMismatch
        case .validation: .validation
        case .conflicts: .conflicts
        case .objectNotFound: .objectNotFound
        case .cannotWrite: .cannotWrite
        case .unreadableStoreFile: .unreadableStoreFile
        case .duplicateReference: .duplicateReference
        case .notADatabase: .notADatabase
        case .notAStoreFile: .notAStoreFile
        case .keysInUse: .keysInUse
        case .foreignDatabase: .foreignDatabase
        case .damaged: .damaged
        case .locked: .locked
        case .readOnly: .readOnly
        case .full: .full
        case .keysExhausted: .keysExhausted
        case .contextGone: .contextGone
        case .unsupportedModel: .unsupportedModel
        case .modelDoesNotMatchStore, .unmatchedJoinTable: .modelDoesNotMatchStore
        case .unknownTemplate: .unknownTemplate
        case .missingVariables: .missingVariables
        case .server: .server
        case .unexpected: .unexpected
        case .invalidRequest: .invalidRequest
        case .evaluation: .evaluation
        case .cannotMigrate: .cannotMigrate
        case .unavailable: .unavailable
        case .unreachable: .unreachable
        }
    }

    /// Why a path names no store file that can be opened.
    public enum FileProblem: Hashable, Sendable {
        /// The path names a folder.
        case folder
        /// The folder the file would be in does not exist (its path).
        case missingFolder(String)
        /// There is no file, and no store is to be made (no model was given,
        /// or the store is read-only).
        case missing
        /// The file is empty, and no model was given to make a store with.
        case empty

        /// What is wrong with the store file at `url`, before SQLite opens it:
        /// nil when it is a file SQLite can open, or a new store can be made
        /// there (`creating`).
        package init?(storeAt url: URL, attributes: [FileAttributeKey: Any]?, creating: Bool) {
            guard let attributes else {
                let folder = url.deletingLastPathComponent()
                var isFolder: ObjCBool = false
                if !FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder) || !isFolder.boolValue {
                    self = .missingFolder(folder.path)
                } else if creating {
                    return nil
                } else {
                    self = .missing
                }
                return
            }
            if attributes[.type] as? FileAttributeType == .typeDirectory {
                self = .folder
            } else if (attributes[.size] as? NSNumber)?.intValue == 0, !creating {
                self = .empty
            } else {
                return nil
            }
        }

        /// The sentence for the store at `path`.
        func message(_ path: String) -> String {
            switch self {
            case .folder: "'\(path)' is a folder, not a store file: give the path of a store file"
            case .missingFolder(let folder):
                "there is no folder '\(folder)' for the store '\(path)': create the folder, or give a path in an existing one"
            case .missing: "there is no store at '\(path)'"
            case .empty: "'\(path)' is an empty file, not a store"
            }
        }
    }

    /// Why a request cannot run as asked.
    public enum RequestProblem: Sendable, CustomStringConvertible {
        /// A dictionary fetch with no properties to fetch.
        case noPropertiesToFetch
        /// A batch update with no properties to update.
        case noPropertiesToUpdate
        /// A batch update that sets this attribute twice.
        case attributeSetTwice(String)
        /// A dictionary fetch's results that do not hold together (two with
        /// one name, a result no attribute type holds), or the property
        /// (its name and expression) neither grouped nor aggregated.
        case results(PredicateValidationError, property: ExpressionDescription?)
        /// A dictionary fetch's sort key that names none of its results.
        case sortKeyNotAResult(String, results: [String])
        /// A fetched results controller's request without sort descriptors.
        case noSortDescriptors
        /// A fetched results controller's request for IDs, counts or dictionaries.
        case resultTypeNotObjects
        /// A fetched results controller's request with a limit or an offset.
        case limitOrOffset
        /// A section key path that is not the first sort descriptor's.
        case sectionKeyNotFirstSortKey(String)
        /// A history token of another store (its UUID), for the store at `path` (whose UUID is `store`).
        case historyTokenOfAnotherStore(token: String, store: String, path: String)
        /// A store that keeps no persistent history.
        case noPersistentHistory(path: String)
        /// A batch delete of `entity`'s objects that names an object of another entity.
        case objectOfAnotherEntity(ObjectReference, entity: String)
        /// A Swift `#Predicate` or `SortDescriptor` with no Sift form (an expression type, a key path naming nothing).
        case swiftPredicate(PredicateConversionError)

        public var description: String {
            switch self {
            case .noPropertiesToFetch: "a dictionary fetch needs properties to fetch"
            case .noPropertiesToUpdate: "a batch update needs properties to update"
            case .attributeSetTwice(let name): "a batch update sets '\(name)' twice"
            case .results(let error, nil): error.message
            case .results(let error, let property?):
                error.message + " (" + (error.hint ?? "") + ")"
                    + (property.name == property.expression ? "" : ": '\(property.expression)'")
            case .sortKeyNotAResult(let key, let results):
                "the sort key '\(key)' is not a result of the fetch (it returns "
                    + results.map { "'\($0)'" }.joined(separator: ", ") + ")"
            case .noSortDescriptors: "a fetched results controller needs at least one sort descriptor"
            case .resultTypeNotObjects: "a fetched results controller fetches objects, not IDs, counts or dictionaries"
            case .limitOrOffset: "a fetched results controller keeps every result: it takes no fetch limit or offset"
            case .sectionKeyNotFirstSortKey(let keyPath):
                "the first sort descriptor must be the section key path '\(keyPath)', so that each section's objects come together"
            case .historyTokenOfAnotherStore(let token, let store, let path):
                "the history token is of store \(token), not of '\(path)' (\(store))"
            case .noPersistentHistory(let path):
                "'\(path)' keeps no persistent history (Core Data writes it only when history tracking is on)"
            case .objectOfAnotherEntity(let object, let entity):
                "a batch delete of \(entity) objects names \(object.entity) \(object.id)"
            case .swiftPredicate(let error): error.description
            }
        }
    }

    /// The error for an SQLite failure on the store at `path`: the failures a
    /// user can act on (a lock, a read-only or full file, a damaged file, a
    /// key the store holds already) get their own cases; the rest stay `.sqlite`.
    init(_ error: SQLiteError, path: String) {
        switch error.code & 0xFF {
        case SQLITE_BUSY, SQLITE_LOCKED: self = .locked(path: path)
        case SQLITE_READONLY: self = .readOnly(path: path)
        case SQLITE_FULL: self = .full(path: path)
        case SQLITE_CORRUPT: self = .damaged(path: path, reason: error.message)
        case SQLITE_NOTADB: self = .notADatabase(path: path)
        // Sift's tables have no unique constraint but their primary keys:
        // SQLITE_CONSTRAINT_PRIMARYKEY (1555) and SQLITE_CONSTRAINT_UNIQUE (2067).
        case SQLITE_CONSTRAINT where error.code == 1555 || error.code == 2067:
            self = .keysInUse(path: path, entity: nil)
        default: self = .sqlite(error)
        }
    }
}

extension StoreError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}

extension StoreError: PredicateTextError {
    /// The error as a predicate's errors are shown: under the line of the predicate it is about, with a
    /// caret under its place, when it is about a place in a predicate (`.invalidPredicate`, and
    /// `.notExpressibleInSQL` when its place is known); `error:` and its sentence otherwise.
    ///
    /// ```swift
    /// let typo = "departmnt.name == 'Sales'"
    /// do {
    ///     _ = try context.fetch(FetchRequest(entityName: "Employee", predicate: typo))
    /// } catch {
    ///     print(error.rendered(in: typo))
    ///     // error: 'Employee' has no attribute or relationship named 'departmnt'
    ///     //  --> predicate:1:1
    ///     // 1 | departmnt.name == 'Sales'
    ///     //   | ^^^^^^^^^^^^^^
    ///     //   = note: did you mean 'department'?
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - text: The predicate's text (the error's own copy of it is shown when it kept one).
    ///   - sourceName: The name shown for the source, such as `predicate` or a file's path.
    /// - Returns: The diagnostic, or `error:` and the sentence.
    public func rendered(in text: String, sourceName: String) -> String {
        switch self {
        case .invalidPredicate(let error, let kept):
            return error.rendered(in: kept.isEmpty ? text : kept, sourceName: sourceName)
        case .notExpressibleInSQL(let error, let range?, let kept):
            return SourceDiagnostic(message: error.description, range: range, in: kept ?? text).rendered(sourceName: sourceName)
        default:
            return "error: \(description)"
        }
    }
}
