// Damaged and hostile files: every one ends in a typed error a user can act
// on, with nothing written and the file left as it was. Never a crash, a hang
// or a silent misreading.

import Foundation
import Sift
import SiftStore
import Testing

/// A temporary folder for one test, removed with it.
final class ScratchFolder {
    let url: URL

    init() throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-damaged-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    deinit {
        chmod(url.path, 0o755)
        try? FileManager.default.removeItem(at: url)
    }

    /// A file in the folder holding `data`.
    func file(_ name: String, _ data: Data) throws -> URL {
        let file = url.appendingPathComponent(name)
        try data.write(to: file)
        return file
    }

    /// A company store in the folder, closed, so its file holds everything.
    func companyStore(_ name: String = "company.sqlite") throws -> URL {
        let file = url.appendingPathComponent(name)
        try SQLiteStore(url: file, model: Company.model).importDataSet(Company.dataSet)
        return file
    }
}

/// A file's bytes, to tell that a failure left it as it was.
func contents(_ url: URL) -> Data? { FileManager.default.contents(atPath: url.path) }

/// Opens the store at `url` and reads every entity, for the error that stops it.
func openAndRead(_ url: URL, model: DataModel?) throws(StoreError) {
    let store = try SQLiteStore(url: url, model: model, busyTimeout: 0.2)
    let context = ObjectContext(store: store)
    for entity in store.model.entities {
        _ = try context.fetch(FetchRequest(entityName: entity.name))
    }
}

/// Expects `body` to throw `expected` (`StoreError` is not `Equatable`: the
/// two must read the same).
@discardableResult
func expectStoreError(_ expected: StoreError, sourceLocation: SourceLocation = #_sourceLocation,
                      _ body: () throws -> Void) -> StoreError? {
    let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation, performing: body)
    #expect(error?.description == expected.description, sourceLocation: sourceLocation)
    return error
}

func employeeCount(_ url: URL) throws -> Int {
    try ObjectContext(store: SQLiteStore(url: url)).count(for: FetchRequest(entityName: "Employee"))
}

func integrityCheck(_ url: URL) throws -> [[SQLValue]] {
    try SQLiteStore(url: url).withConnection { try $0.query("PRAGMA integrity_check") }
}

@Suite("Damaged SQLite files")
struct DamagedStoreFileTests {
    @Test("A truncated store is a typed error and stays as it was", arguments: [0.5, 0.1, -100.0])
    func truncated(_ fraction: Double) throws {
        let folder = try ScratchFolder()
        let whole = try #require(contents(try folder.companyStore()))
        let length = fraction < 0 ? Int(-fraction) : Int(Double(whole.count) * fraction)
        for model in [Company.model, nil] {
            let cut = try folder.file("cut-\(UUID()).sqlite", whole.prefix(length))
            let error = #expect(throws: StoreError.self) { try openAndRead(cut, model: model) }
            switch error {
            case .damaged(let path, _)?, .notADatabase(let path)?: #expect(path == cut.path)
            default: Issue.record("not reported as damaged: \(String(describing: error))")
            }
            #expect(error?.description.contains(cut.path) == true)
            #expect(contents(cut) == whole.prefix(length))
        }
    }

    @Test func everyCutIsAnErrorOrReadsEverything() throws {
        let folder = try ScratchFolder()
        let whole = try #require(contents(try folder.companyStore()))
        let expected = try counts(folder.url.appendingPathComponent("company.sqlite"))
        // (An empty file is a new store: see below.)
        for length in stride(from: 512, to: whole.count, by: 512) + [whole.count - 1] {
            let cut = try folder.file("cut-\(length).sqlite", whole.prefix(length))
            do {
                try openAndRead(cut, model: Company.model)
                // Opened: then nothing may be missing.
                let found = try counts(cut)
                #expect(found == expected, "cut at \(length) of \(whole.count)")
            } catch let error as StoreError {
                switch error {
                case .damaged, .notADatabase: break
                default: Issue.record("cut at \(length): \(error)")
                }
            }
        }
    }

    func counts(_ url: URL) throws -> [Int] {
        let context = ObjectContext(store: try SQLiteStore(url: url))
        return try context.model.entities.map { try context.count(for: FetchRequest(entityName: $0.name)) }
    }

    @Test("A file that is not SQLite is a typed error and stays as it was", arguments: ["random", "text"])
    func notSQLite(_ kind: String) throws {
        let folder = try ScratchFolder()
        var generator = SystemRandomNumberGenerator()
        let data = kind == "random" ? Data((0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) })
            : Data("name,age\nAda,36\n".utf8)
        for model in [Company.model, nil] {
            let file = try folder.file("\(kind).sqlite", data)
            expectStoreError(StoreError.notADatabase(path: file.path)) { try openAndRead(file, model: model) }
            #expect(contents(file) == data)
        }
    }

    @Test func anEmptyFileIsANewStoreOnlyWhenAModelIsGiven() throws {
        let folder = try ScratchFolder()
        let file = try folder.file("empty.sqlite", Data())
        expectStoreError(StoreError.notAStoreFile(path: file.path, problem: .empty)) { try openAndRead(file, model: nil) }
        #expect(contents(file) == Data())
        // A missing or empty file becomes a new store for the model given.
        try openAndRead(file, model: Company.model)
        #expect(try employeeCount(file) == 0)
    }

    @Test func anotherApplicationsDatabaseIsNotTouched() throws {
        let folder = try ScratchFolder()
        let file = folder.url.appendingPathComponent("notes.db")
        do {
            let connection = try SQLiteConnection(path: file.path)
            try connection.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('x')")
        }
        let before = try #require(contents(file))
        for model in [Company.model, nil] {
            let error = expectStoreError(StoreError.foreignDatabase(path: file.path, tables: ["notes"])) {
                try openAndRead(file, model: model)
            }
            #expect(error?.description.contains("another application") == true)
            #expect(contents(file) == before)
        }
        let connection = try SQLiteConnection(path: file.path)
        #expect(try connection.query("SELECT name FROM sqlite_master WHERE type = 'table'") == [[.text("notes")]])
    }

    /// Rewrites a store's metadata property list.
    static func editMetadata(of file: URL, _ edit: (inout [String: Any]) -> Void) throws {
        let connection = try SQLiteConnection(path: file.path)
        guard case .blob(let data)? = try connection.query("SELECT Z_PLIST FROM Z_METADATA").first?.first,
              var metadata = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any] else {
            throw FixtureError.missing("metadata")
        }
        edit(&metadata)
        let edited = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        try connection.forEachRow("UPDATE Z_METADATA SET Z_PLIST = ?1", [.blob(edited)])
    }

    @Test func aStoreWithoutItsModelRecordIsDamaged() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        try Self.editMetadata(of: file) { $0["SiftModel"] = "{\"entities\": 7}" }
        let before = try #require(contents(file))
        let error = #expect(throws: StoreError.self) { try openAndRead(file, model: nil) }
        guard case .damaged? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(contents(file) == before)
    }

    @Test func aStoreWhoseModelWasEditedIsDamaged() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let other = try DataModel([Entity("Employee", attributes: [Attribute("secret", .string)])])
        try Self.editMetadata(of: file) { $0["SiftModel"] = String(decoding: other.jsonData, as: UTF8.self) }
        let before = try #require(contents(file))
        let error = #expect(throws: StoreError.self) { try openAndRead(file, model: nil) }
        guard case .damaged? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(contents(file) == before)
    }

    @Test func aLockedStoreWaitsThenFailsAndSavesLater() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let store = try SQLiteStore(url: file, busyTimeout: 0.3)
        let context = ObjectContext(store: store)
        let ada = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Ada Lovelace'")).first
                               ?? context.fetch(FetchRequest(entityName: "Employee")).first)
        try ada.setValue(.int(99), forKey: "age")

        let holder = try SQLiteConnection(path: file.path)
        try holder.execute("BEGIN EXCLUSIVE")
        let start = Date()
        expectStoreError(StoreError.locked(path: file.path)) { try context.save() }
        #expect(Date().timeIntervalSince(start) >= 0.25, "the store waits for the lock before it gives up")
        // Reading goes on while the other connection writes.
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
        try holder.execute("ROLLBACK")
        // Nothing was lost: the change saves once the lock is gone.
        try context.save()
        let fresh = ObjectContext(store: try SQLiteStore(url: file))
        #expect(try fresh.object(for: ada.objectID).value(forKey: "age") == .int(99))
    }

    @Test func aReadOnlyFileFetchesButDoesNotSave() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let before = try #require(contents(file))
        #expect(chmod(file.path, 0o444) == 0)
        let store = try SQLiteStore(url: file)
        let context = ObjectContext(store: store)
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
        let first = try #require(try context.fetch(FetchRequest(entityName: "Employee")).first)
        try first.setValue(.int(99), forKey: "age")
        expectStoreError(StoreError.readOnly(path: file.path)) { try context.save() }
        #expect(contents(file) == before)
        chmod(file.path, 0o644)
    }

    @Test func aStoreOpenedReadOnlyDoesNotSave() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let before = try #require(contents(file))
        let context = ObjectContext(store: try SQLiteStore(url: file, readOnly: true))
        _ = try newEmployee(context, "Nobody")
        expectStoreError(StoreError.readOnly(path: file.path)) { try context.save() }
        #expect(contents(file) == before)
        #expect(try employeeCount(file) == 60)
        // A read-only store never creates a file.
        let missing = folder.url.appendingPathComponent("missing.sqlite")
        #expect(throws: StoreError.self) { try SQLiteStore(url: missing, model: Company.model, readOnly: true) }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test(.enabled(if: geteuid() != 0, "root writes into any folder"))
    func aStoreInAReadOnlyFolderDoesNotSave() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let before = try #require(contents(file))
        #expect(chmod(folder.url.path, 0o555) == 0)
        defer { chmod(folder.url.path, 0o755) }
        do {
            let context = ObjectContext(store: try SQLiteStore(url: file))
            _ = try newEmployee(context, "Nobody")
            #expect(throws: StoreError.self) { try context.save() }
        } catch {
            // Opening may already fail: SQLite cannot make its -shm file.
            #expect(error is StoreError)
        }
        #expect(contents(file) == before)
    }

    @Test func aFullDiskRollsTheSaveBack() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let before = try #require(contents(file))
        let store = try SQLiteStore(url: file)
        try store.withConnection { connection in
            let pages = try connection.query("PRAGMA page_count")
            guard case .integer(let count)? = pages.first?.first else { return }
            _ = try connection.query("PRAGMA max_page_count = \(count + 2)")
        }
        let context = ObjectContext(store: store)
        for i in 0..<2_000 {
            _ = try newEmployee(context, "Employee \(i) " + String(repeating: "x", count: 200))
        }
        expectStoreError(StoreError.full(path: file.path)) { try context.save() }
        var committed = FetchRequest(entityName: "Employee")
        committed.includesPendingChanges = false
        #expect(try context.count(for: committed) == 60)
        #expect(contents(file) == before)
        #expect(try employeeCount(file) == 60)
        #expect(try integrityCheck(file) == [[.text("ok")]])
    }

    @Test func textWithANulIsKeptWhole() throws {
        let folder = try ScratchFolder()
        let file = try folder.companyStore()
        let context = ObjectContext(store: try SQLiteStore(url: file))
        let text = "before\u{0}after; DROP TABLE Employee; --"
        _ = try newEmployee(context, text)
        try context.save()
        let fresh = ObjectContext(store: try SQLiteStore(url: file))
        let found = try fresh.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(text)]))
        #expect(try found.map { try $0.value(forKey: "name") } == [.string(text)])
        #expect(try fresh.count(for: FetchRequest(entityName: "Employee", predicate: "name == 'before'")) == 0)
    }

    @Test func anAtomicStoreThatCannotBeWrittenKeepsItsData() throws {
        let folder = try ScratchFolder()
        let file = folder.url.appendingPathComponent("company.json")
        try AtomicStore(url: file, model: Company.model).importDataSet(Company.dataSet)
        let store = try AtomicStore(url: file)
        let context = ObjectContext(store: store)
        _ = try newEmployee(context, "Nobody")
        // The folder goes away under the store: no temporary file, no rename.
        try FileManager.default.removeItem(at: folder.url)
        let error = #expect(throws: StoreError.self) { try context.save() }
        guard case .cannotWrite(let path, _)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(path == file.path)
        #expect(try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee")) == 60)
    }

    func newEmployee(_ context: ObjectContext, _ name: String) throws -> ManagedObject {
        let e = try context.insert("Employee")
        try e.setValue(.string(name), forKey: "name")
        try e.setValue(.int(30), forKey: "age")
        try e.setValue(.double(50_000), forKey: "salary")
        try e.setValue(.bool(false), forKey: "isManager")
        try e.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        return e
    }
}

@Suite("Key paths that look like SQL")
struct SQLLookingKeyPathTests {
    static let keys = [#"name"; DROP TABLE "Employee"; --"#, #"name"; DROP TABLE ZEMPLOYEE; --"#, "a'b", "x]y", "`name`",
                       "name; DELETE FROM Employee", "name\u{0}x", #"department.name" = 1 OR "1"#]

    @Test("A %K argument is a key of the model or an error", arguments: keys)
    func formatArgument(_ key: String) throws {
        let compiler = PredicateCompiler(model: Company.model)
        #expect(throws: PredicateCompileError.self) {
            try compiler.bind("%K == 'Ada'", arguments: [.string(key)], entity: "Employee")
        }
        // And never as text in the SQL the store would run.
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let context = ObjectContext(store: store)
        #expect(throws: StoreError.self) {
            try context.fetch(FetchRequest(entityName: "Employee", predicate: "%K == 'Ada'", arguments: [.string(key)]))
        }
        #expect(throws: StoreError.self) {
            try context.fetch(FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor(key)]))
        }
        #expect(throws: StoreError.self) {
            var request = FetchRequest(entityName: "Employee")
            request.relationshipKeyPathsForPrefetching = [key]
            _ = try context.fetch(request)
        }
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
    }

    @Test func siftSQLRefusesAKeyThatIsNotTheModels() throws {
        let model = Fixtures.repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/company.json").path
        for key in Self.keys where !key.contains("\u{0}") {
            let result = try runSift(["sql", "--model", model, "--entity", "Employee", "--arg", key, "%K == 1"])
            #expect(result.status == 65, "\(result)")
            #expect(result.output.isEmpty)
            #expect(result.error.contains("has no attribute or relationship named"), "\(result.error)")
        }
    }

    @Test func aKeyPathInThePredicateTextIsNotSQL() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let context = ObjectContext(store: store)
        for text in [#"name; DROP TABLE Employee == 1"#, "`name` == 1", "x]y == 1", "name == 'a'; DROP TABLE Employee"] {
            #expect(throws: StoreError.self) { try context.fetch(FetchRequest(entityName: "Employee", predicate: text)) }
        }
        #expect(try context.count(for: FetchRequest(entityName: "Employee")) == 60)
    }

    @Test func namesInTheModelAreQuotedIdentifiers() throws {
        // A model may name things oddly; the SQL quotes every name.
        let odd = #"we"ird; DROP TABLE x; --"#
        let model = try DataModel([Entity(odd, attributes: [Attribute("a'b]c", .string), Attribute(odd, .integer64)])])
        let store = try SQLiteStore(inMemoryWith: model)
        try store.importDataSet(try DataSet(model: model, objects: [odd: [["id": 1, "a'b]c": "v", odd: 3]]]))
        let context = ObjectContext(store: store)
        let found = try context.fetch(FetchRequest(entityName: odd, predicate: "%K == 'v' AND %K == 3",
                                                   arguments: [.string("a'b]c"), .string(odd)]))
        #expect(found.count == 1)
        let query = try store.sqlQuery(for: FetchRequest(entityName: odd, predicate: "%K == 'v'", arguments: [.string("a'b]c")]))
        #expect(query.sql.contains(#""ZWE""IRD; DROP TABLE X; --""#))
        #expect(!query.sql.contains("'v'"))
    }
}
