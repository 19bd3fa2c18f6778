// Reading Core Data's persistent history: the SampleModel2 stores (one
// transaction of inserts each, checked against their rows and manifests),
// a generated store whose history tables hold inserts, an update with its
// bitmap and a delete with a tombstone, tokens and dates, and `sift history`.

import Foundation
import Sift
@testable import SiftStore
import Testing

@Suite("Persistent history", .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct PersistentHistoryFixtureTests {
    @Test("The SampleModel2 stores' history: one transaction inserting every object they hold",
          arguments: [("coredataplus-samplemodel2-v1", 737_057_647.288022), ("coredataplus-samplemodel2-v2", 737_057_651.681977)])
    func fixture(_ name: String, _ timestamp: Double) throws {
        let fixture = try #require(CoreDataFixture(name: name))
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try SQLiteStore(url: url)
        #expect(store.tracksPersistentHistory)
        let history = try store.persistentHistory()
        #expect(history.count == 1)
        let transaction = try #require(history.first)
        #expect(transaction.transactionNumber == 1)
        #expect(abs(transaction.timestamp.timeIntervalSinceReferenceDate - timestamp) < 1e-6)
        #expect(transaction.bundleID == "com.apple.dt.xctest.tool")
        #expect(transaction.processID == "xctest")
        #expect(transaction.author == nil && transaction.contextName == nil)
        #expect(transaction.changes.allSatisfy { $0.changeType == .insert && $0.updatedProperties == nil })
        // One insert per object the store holds, of its own entity.
        var inserted: [String: Int] = [:]
        for change in transaction.changes { inserted[change.entityName, default: 0] += 1 }
        #expect(inserted == fixture.rowsPerEntity.filter { $0.value > 0 && store.model.entity(named: $0.key) != nil })
        #expect(fixture.rowsPerEntity["CHANGE"] == transaction.changes.count)
        let context = ObjectContext(store: store)
        for (entity, count) in inserted {
            let index = try #require(store.model.entity(named: entity)).index
            let ids = Set(try context.fetchObjectIDs(FetchRequest(entityName: entity)).filter { $0.entity == index })
            #expect(ids.count == count)
            #expect(ids == Set(transaction.changes.filter { $0.entityName == entity }.compactMap(\.objectID)))
        }
        // Tokens and dates.
        let token = try #require(try store.currentPersistentHistoryToken())
        #expect(token == transaction.token)
        #expect(token.storeUUID == (try store.identifier))
        #expect(try store.persistentHistory(after: token).isEmpty)
        #expect(try store.persistentHistory(since: transaction.timestamp.addingTimeInterval(1)).isEmpty)
        #expect(try store.persistentHistory(since: transaction.timestamp).count == 1)
        #expect(throws: StoreError.self) {
            try store.persistentHistory(after: PersistentHistoryToken(storeUUID: "another store", transactionNumber: 0))
        }
    }

    @Test("sift history lists transactions and changes, counts them, and reads after a number")
    func commandLine() throws {
        let fixture = try #require(CoreDataFixture(name: "coredataplus-samplemodel2-v2"))
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let counts = try runSift(["history", "--store", url.path, "--counts"])
        #expect(counts.status == 0, "\(counts.error)")
        #expect(counts.output == """
            transaction 1  2024-05-10T18:14:11.682Z  bundle com.apple.dt.xctest.tool  process xctest  126 changes
              insert Author: 1
              insert Book: 2
              insert Feedback: 3
              insert GraphicNovel: 1
              insert Page: 119

            """)
        #expect(try runSift(["history", "--store", url.path, "--counts", "--format", "text"]).output == counts.output)
        let list = try runSift(["history", "--store", url.path])
        #expect(list.output.split(separator: "\n").count == 127)
        #expect(list.output.contains("\n  insert GraphicNovel 3\n"))
        // JSON lines: a transaction a line; JSON: one array of them; CSV: a row per change.
        let lines = try runSift(["history", "--store", url.path, "--format", "jsonl"])
        let object = try JSONSerialization.jsonObject(with: Data(lines.output.utf8)) as? [String: Any]
        #expect((object?["changes"] as? [Any])?.count == 126)
        #expect(object?["timestamp"] as? String == "2024-05-10T18:14:11.682Z")
        let json = try runSift(["history", "--store", url.path, "--format", "json"])
        let array = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]]
        #expect((array?.first?["changes"] as? [Any])?.count == 126)
        let csv = try runSift(["history", "--store", url.path, "--format", "csv"])
        #expect(csv.output.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 127)
        #expect(try runSift(["history", "--store", url.path, "--after", "1"]).output == "")
        #expect(try runSift(["history", "--store", url.path, "--since", "yesterday"]).status == 64)
    }
}

@Suite("Persistent history of a generated store")
struct PersistentHistoryTests {
    static let model = try! DataModel(json: Data(#"""
        {"entities": [{"name": "Note", "attributes": [{"name": "title", "type": "string", "preservesValueInHistory": true},
                                                      {"name": "body", "type": "string", "optional": true},
                                                      {"name": "stars", "type": "integer64", "default": 0}],
                       "relationships": [{"name": "folder", "destination": "Folder", "optional": true, "inverse": "notes"}]},
                      {"name": "Folder", "attributes": [{"name": "name", "type": "string"}],
                       "relationships": [{"name": "notes", "destination": "Note", "toMany": true, "inverse": "folder"}]}]}
        """#.utf8))

    @Test("Inserts, an update's properties, a delete's tombstone, interned and inline names")
    func generated() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("notes.sqlite")
        do {
            let store = try SQLiteStore(url: url, model: Self.model)
            #expect(!store.tracksPersistentHistory)
            #expect(throws: StoreError.self) { try store.persistentHistory() }
            let context = ObjectContext(store: store)
            for title in ["a", "b"] {
                let note = try context.insert("Note")
                try note.setValue(.string(title), forKey: "title")
            }
            try context.save()
        }
        // Core Data's history tables, as the SampleModel2 stores have them, written by hand:
        // transaction 1 inserts both notes, 2 updates note 1's stars and folder, 3 deletes note 2.
        let connection = try SQLiteConnection(path: url.path)
        try connection.execute("""
            CREATE TABLE ACHANGE ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZCHANGETYPE INTEGER, ZENTITY INTEGER, ZENTITYPK INTEGER, ZTRANSACTIONID INTEGER, ZCOLUMNS BLOB, ZTOMBSTONE0 VARCHAR );
            CREATE TABLE ATRANSACTION ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZAUTHORTS INTEGER, ZBUNDLEIDTS INTEGER, ZCONTEXTNAMETS INTEGER, ZPROCESSIDTS INTEGER, ZTIMESTAMP FLOAT, ZAUTHOR VARCHAR, ZBUNDLEID VARCHAR, ZCONTEXTNAME VARCHAR, ZPROCESSID VARCHAR, ZQUERYGEN BLOB );
            CREATE TABLE ATRANSACTIONSTRING ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            INSERT INTO ATRANSACTIONSTRING VALUES (1, 16003, NULL, 'com.example.notes'), (2, 16003, NULL, 'notes'), (3, 16003, NULL, 'sync');
            INSERT INTO ATRANSACTION VALUES (1, 16002, NULL, NULL, 1, NULL, 2, 700000000.5, NULL, NULL, NULL, NULL, NULL),
                                            (2, 16002, NULL, 3, 1, NULL, 2, 700000100.25, NULL, NULL, 'editor', NULL, NULL),
                                            (3, 16002, NULL, NULL, NULL, NULL, NULL, 700000200, 'cleanup', NULL, NULL, NULL, NULL);
            INSERT INTO ACHANGE VALUES (1, 16001, NULL, 0, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'), 1, 1, NULL, NULL),
                                       (2, 16001, NULL, 0, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'), 2, 1, NULL, NULL),
                                       (3, 16001, NULL, 1, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'), 1, 2, x'60', NULL),
                                       (4, 16001, NULL, 2, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'), 2, 3, NULL, 'b'),
                                       (5, 16001, NULL, 1, (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note'), 1, 3, x'ff', NULL);
            INSERT INTO Z_PRIMARYKEY VALUES (16001, 'CHANGE', 0, 5), (16002, 'TRANSACTION', 0, 3), (16003, 'TRANSACTIONSTRING', 0, 3);
            """)
        let store = try SQLiteStore(url: url)
        #expect(store.tracksPersistentHistory)
        #expect(store.writesRefused == nil && store.writesPersistentHistory)
        let history = try store.persistentHistory()
        #expect(history.map(\.transactionNumber) == [1, 2, 3])
        #expect(history.map(\.timestamp.timeIntervalSinceReferenceDate) == [700_000_000.5, 700_000_100.25, 700_000_200])
        #expect(history[0].bundleID == "com.example.notes" && history[0].processID == "notes" && history[0].author == nil)
        #expect(history[1].author == "sync" && history[1].contextName == "editor")
        #expect(history[2].author == "cleanup" && history[2].bundleID == nil)
        #expect(history[0].changes.map(\.changeType) == [.insert, .insert])
        #expect(history[0].changes.map(\.primaryKey) == [1, 2])
        // Note's properties by name: body, folder, stars, title; 0x60 marks the second and third.
        #expect(history[1].changes.first?.updatedProperties == ["folder", "stars"])
        #expect(history[2].changes.first?.changeType == .delete)
        #expect(history[2].changes.first?.tombstone == ["title": .string("b")])
        // A bitmap with more bits than the entity has properties is not read.
        #expect(history[2].changes.last?.changeType == .update)
        #expect(history[2].changes.last?.updatedProperties == nil)
        let model = store.model
        #expect(history[0].changes.first?.objectID == ObjectID(entity: model.entity(named: "Note")!, primaryKey: 1))
        // After a token, since a date.
        #expect(try store.persistentHistory(after: history[0].token).map(\.transactionNumber) == [2, 3])
        #expect(try store.persistentHistory(since: Date(timeIntervalSinceReferenceDate: 700_000_100.25)).map(\.transactionNumber) == [2, 3])
        #expect(try store.persistentHistory(after: history[1].token, since: Date(timeIntervalSinceReferenceDate: 0)).map(\.transactionNumber) == [3])
        #expect(try store.currentPersistentHistoryToken()?.transactionNumber == 3)
        let output = try runSift(["history", "--store", url.path, "--after", "1"])
        #expect(output.output == """
            transaction 2  2001-01-01T00:00:00.000Z  author sync  bundle com.example.notes  context editor  process notes  1 change
              update Note 1 (folder, stars)
            transaction 3  2001-01-01T00:00:00.000Z  author cleanup  2 changes
              delete Note 2 title="b"
              update Note 1

            """.replacingOccurrences(of: "2001-01-01T00:00:00.000Z  author sync", with: Self.date(700_000_100.25) + "  author sync")
               .replacingOccurrences(of: "2001-01-01T00:00:00.000Z  author cleanup", with: Self.date(700_000_200) + "  author cleanup"))
    }

    /// A date as `sift` prints every date: ISO 8601 in UTC, with milliseconds when it has a fraction of a second.
    static func date(_ seconds: Double) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSinceReferenceDate: seconds)).replacingOccurrences(of: ".000Z", with: "Z")
    }
}
