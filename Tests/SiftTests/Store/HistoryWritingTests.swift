// Writing Core Data's persistent history: every save, batch change and
// import of a store that keeps history writes one transaction with one
// change per row, laid out as Core Data lays them out (checked in the raw
// tables), read back by Sift's reader; opting in and out; the context's
// author and name; deleting old history; a save that fails writes none; and
// the SampleModel2 fixtures, written by Sift with their first transaction intact.

import Foundation
import Sift
@testable import SiftStore
import Testing

@Suite("Persistent history written by Sift")
struct HistoryWritingTests {
    static let model = PersistentHistoryTests.model

    /// A new notes store that keeps history, with a folder and two notes saved by `importer`.
    static func notesStore(_ folder: ScratchFolder) throws -> (SQLiteStore, URL) {
        let url = folder.url.appendingPathComponent("notes.sqlite")
        let store = try SQLiteStore(url: url, model: model, historyTracking: .on)
        let context = ObjectContext(store: store)
        context.transactionAuthor = "importer"
        context.name = "main"
        let box = try context.insert("Folder")
        try box.setValue(.string("inbox"), forKey: "name")
        for title in ["a", "b"] {
            let note = try context.insert("Note")
            try note.setValue(.string(title), forKey: "title")
        }
        try context.save()
        return (store, url)
    }

    static func rows(_ url: URL, _ sql: String) throws -> [[SQLValue]] {
        try SQLiteConnection(path: url.path, readOnly: true).query(sql)
    }

    @Test("A save writes one transaction: its author, context, bundle and process, and an insert per row")
    func inserts() throws {
        let folder = try ScratchFolder()
        let (store, url) = try Self.notesStore(folder)
        #expect(store.writesPersistentHistory && store.tracksPersistentHistory && store.writesRefused == nil)
        let history = try store.persistentHistory()
        #expect(history.count == 1)
        let transaction = try #require(history.first)
        #expect(transaction.transactionNumber == 1)
        #expect(transaction.author == "importer" && transaction.contextName == "main")
        let process = ProcessInfo.processInfo.processName
        #expect(transaction.processID == process && transaction.bundleID == (Bundle.main.bundleIdentifier ?? process))
        #expect(abs(transaction.timestamp.timeIntervalSinceNow) < 60)
        #expect(transaction.changes.map(\.changeType) == [.insert, .insert, .insert])
        #expect(Set(transaction.changes.map(\.entityName)) == ["Folder", "Note"])
        #expect(transaction.changes.allSatisfy { $0.updatedProperties == nil && $0.tombstone.isEmpty })
        // The raw rows, as Core Data lays them out.
        #expect(try Self.rows(url, "SELECT Z_ENT, Z_NAME, Z_SUPER, Z_MAX FROM Z_PRIMARYKEY WHERE Z_ENT > 16000 ORDER BY Z_ENT") == [
            [.integer(16001), .text("CHANGE"), .integer(0), .integer(3)],
            [.integer(16002), .text("TRANSACTION"), .integer(0), .integer(1)],
            [.integer(16003), .text("TRANSACTIONSTRING"), .integer(0), .integer(Bundle.main.bundleIdentifier == nil ? 3 : 4)],
        ])
        #expect(try Self.rows(url, "SELECT Z_ENT, Z_OPT, ZAUTHOR, ZBUNDLEID, ZCONTEXTNAME, ZPROCESSID, ZQUERYGEN FROM ATRANSACTION")
            == [[.integer(16002), .null, .null, .null, .null, .null, .null]])
        #expect(try Self.rows(url, "SELECT DISTINCT Z_ENT, Z_OPT, ZCOLUMNS, ZTOMBSTONE0 FROM ACHANGE")
            == [[.integer(16001), .null, .null, .null]])
        // Each string once, in the order Core Data interns them: author, bundle, context, process.
        var strings: [String] = []
        for name in ["importer", Bundle.main.bundleIdentifier ?? process, "main", process] where !strings.contains(name) {
            strings.append(name)
        }
        #expect(try Self.rows(url, "SELECT ZNAME FROM ATRANSACTIONSTRING ORDER BY Z_PK") == strings.map { [.text($0)] })
    }

    @Test("An update records the properties it changed (bitmap by name), a delete the preserved values")
    func updatesAndDeletes() throws {
        let folder = try ScratchFolder()
        let (store, url) = try Self.notesStore(folder)
        let token = try #require(try store.currentPersistentHistoryToken())
        let context = ObjectContext(store: store)
        let notes = try context.fetch(FetchRequest(entityName: "Note", sortDescriptors: [FetchSortDescriptor("title")]))
        let box = try #require(try context.fetch(FetchRequest(entityName: "Folder")).first)
        try notes[0].setValue(.int(4), forKey: "stars")
        try notes[0].setObject(box, forKey: "folder")
        try context.delete(notes[1])
        try context.save()
        let history = try store.persistentHistory(after: token)
        #expect(history.count == 1)
        let changes = try #require(history.first).changes
        let update = try #require(changes.first { $0.primaryKey == notes[0].objectID.primaryKey && $0.entityName == "Note" })
        #expect(update.changeType == .update)
        // Note's properties by name: body, folder, stars, title: folder and stars are the second and third bits.
        #expect(update.updatedProperties == ["folder", "stars"])
        let delete = try #require(changes.first { $0.changeType == .delete })
        #expect(delete.entityName == "Note" && delete.tombstone == ["title": .string("b")])
        #expect(try Self.rows(url, "SELECT ZCOLUMNS FROM ACHANGE WHERE ZCHANGETYPE = 1 AND ZENTITYPK = \(notes[0].objectID.primaryKey) "
                                  + "AND ZENTITY = (SELECT Z_ENT FROM Z_PRIMARYKEY WHERE Z_NAME = 'Note')")
            == [[.blob(Data([0x60]))]])
        #expect(try Self.rows(url, "SELECT ZTOMBSTONE0 FROM ACHANGE WHERE ZCHANGETYPE = 2") == [[.text("b")]])
        // No change of a row twice in one transaction; keys after the first transaction's.
        let keys = changes.map(\.changeID)
        #expect(Set(keys).count == keys.count && keys.allSatisfy { $0 > 3 })
        #expect(Set(changes.map { "\($0.entityName) \($0.primaryKey)" }).count == changes.count)
    }

    @Test("Batch updates and deletes write history: the attributes set, the values preserved, the context's author")
    func batchChanges() throws {
        let folder = try ScratchFolder()
        let (store, _) = try Self.notesStore(folder)
        let context = ObjectContext(store: store)
        context.transactionAuthor = "batch"
        var token = try #require(try store.currentPersistentHistoryToken())
        try context.execute(BatchUpdateRequest(entityName: "Note", predicate: "title == 'a'", setting: ["stars": "stars + 1"]))
        var history = try store.persistentHistory(after: token)
        #expect(history.count == 1 && history[0].author == "batch" && history[0].contextName == nil)
        #expect(history[0].changes.map(\.changeType) == [.update])
        #expect(history[0].changes.first?.updatedProperties == ["stars"])
        token = try #require(history.last?.token)
        try context.execute(BatchDeleteRequest(entityName: "Note", predicate: "title == 'b'"))
        history = try store.persistentHistory(after: token)
        #expect(history.count == 1)
        #expect(history[0].changes.map(\.changeType) == [.delete])
        #expect(history[0].changes.first?.tombstone == ["title": .string("b")])
        // A batch change that changes nothing writes no transaction.
        token = try #require(history.last?.token)
        try context.execute(BatchDeleteRequest(entityName: "Note", predicate: "title == 'nobody'"))
        #expect(try store.persistentHistory(after: token).isEmpty)
    }

    @Test("A save that fails writes no history; an import writes inserts under the names set around it")
    func failuresAndImports() throws {
        let folder = try ScratchFolder()
        let (store, url) = try Self.notesStore(folder)
        let token = try #require(try store.currentPersistentHistoryToken())
        let context = ObjectContext(store: store)
        _ = try context.insert("Note")  // no title: a required attribute
        #expect(throws: StoreError.self) { try context.save() }
        #expect(try store.persistentHistory(after: token).isEmpty)
        context.rollback()
        // A conflict: another writer moved the row under the context, and its save is refused with nothing written.
        let note = try #require(try context.fetch(FetchRequest(entityName: "Note")).first)
        try SQLiteConnection(path: url.path).execute(
            "UPDATE ZNOTE SET ZSTARS = 9, Z_OPT = Z_OPT + 1 WHERE Z_PK = \(note.objectID.primaryKey)")
        try note.setValue(.int(1), forKey: "stars")
        #expect(throws: StoreError.self) { try context.save() }
        #expect(try store.persistentHistory(after: token).isEmpty)
        let afterOther = token
        // An import, with names set around it.
        let entity = try #require(store.model.entity(named: "Folder"))
        let node = RowNode(id: ObjectID(entity: entity, primaryKey: 1000), version: 1, fetchTimestamp: 0,
                           values: [.string("imported")], toOne: [], toMany: [nil])
        try TransactionNames.$current.withValue(TransactionNames(author: "seed")) {
            try store.importNodes([node], progress: nil)
        }
        let last = try #require(try store.persistentHistory(after: afterOther).last)
        #expect(last.author == "seed" && last.changes.map(\.changeType) == [.insert] && last.changes.first?.primaryKey == 1000)
    }

    @Test("History tracking opted into, kept as stored, and turned off (the store then refuses saves)")
    func optingIn() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("plain.sqlite")
        do {
            let store = try SQLiteStore(url: url, model: Self.model)
            #expect(!store.writesPersistentHistory && !store.tracksPersistentHistory)
            let context = ObjectContext(store: store)
            try context.insert("Folder").setValue(.string("before"), forKey: "name")
            try context.save()
        }
        do {
            // Turned on for an existing store: the tables are added, and the next save is its first transaction.
            let store = try SQLiteStore(url: url, historyTracking: .on)
            #expect(store.writesPersistentHistory && store.tracksPersistentHistory)
            #expect(try store.persistentHistory().isEmpty)
            let context = ObjectContext(store: store)
            try context.insert("Folder").setValue(.string("after"), forKey: "name")
            try context.save()
            #expect(try store.persistentHistory().map(\.changes.count) == [1])
        }
        do {
            // As stored: history kept.
            let store = try SQLiteStore(url: url)
            #expect(store.writesPersistentHistory)
        }
        // Off: the store reads, and refuses saves rather than leave its history incomplete.
        let store = try SQLiteStore(url: url, historyTracking: .off)
        #expect(!store.writesPersistentHistory && store.writesRefused != nil)
        let context = ObjectContext(store: store)
        try context.insert("Folder").setValue(.string("refused"), forKey: "name")
        let error = #expect(throws: StoreError.self) { try context.save() }
        #expect(error.map { "\($0)" }?.contains("persistent history") == true)
        #expect(try store.persistentHistory().count == 1)
    }

    @Test("Deleting history before a token or a date keeps the rest")
    func deletingHistory() throws {
        let folder = try ScratchFolder()
        let (store, url) = try Self.notesStore(folder)
        let context = ObjectContext(store: store)
        for title in ["c", "d", "e"] {
            try context.insert("Note").setValue(.string(title), forKey: "title")
            try context.save()
        }
        let history = try store.persistentHistory()
        #expect(history.map(\.transactionNumber) == [1, 2, 3, 4])
        #expect(try store.deleteHistory(before: history[2].token) == 2)
        #expect(try store.persistentHistory().map(\.transactionNumber) == [3, 4])
        #expect(try Self.rows(url, "SELECT COUNT(*) FROM ACHANGE") == [[.integer(2)]])
        #expect(try store.deleteHistory(before: history[3].timestamp.addingTimeInterval(1)) == 2)
        #expect(try store.persistentHistory().isEmpty)
        #expect(throws: StoreError.self) {
            try store.deleteHistory(before: PersistentHistoryToken(storeUUID: "another store", transactionNumber: 5))
        }
        // Numbers go on after the deleted ones; the strings stay.
        try context.insert("Note").setValue(.string("f"), forKey: "title")
        try context.save()
        #expect(try store.persistentHistory().map(\.transactionNumber) == [5])
        #expect(try Self.rows(url, "SELECT COUNT(*) FROM ATRANSACTIONSTRING") != [[.integer(0)]])
    }
}

@Suite("Persistent history written into Core Data's stores",
       .enabled(if: CoreDataFixture.isPresent, "../shared/coredata-stores is not beside the checkout"))
struct HistoryWritingFixtureTests {
    @Test("A SampleModel2 store takes a save: its history gains a transaction, bitmaps as Core Data numbers them, the first intact",
          arguments: ["coredataplus-samplemodel2-v1", "coredataplus-samplemodel2-v2"])
    func fixture(_ name: String) throws {
        let fixture = try #require(CoreDataFixture(name: name))
        let url = try fixture.copy()
        defer { try? FileManager.default.removeItem(at: url.deletingLastPathComponent()) }
        let store = try SQLiteStore(url: url)
        #expect(store.writesPersistentHistory && store.writesRefused == nil)
        let before = try store.persistentHistory()
        let context = ObjectContext(store: store)
        context.transactionAuthor = "sift"
        let book = try #require(try context.fetch(FetchRequest(entityName: "Book")).first { $0.entity.name == "Book" })
        try book.setValue(.string("Retitled"), forKey: "title")
        try book.setValue(.double(1.5), forKey: "price")
        let feedback = try #require(try context.fetch(FetchRequest(entityName: "Feedback")).first)
        try context.delete(feedback)
        try context.save()
        let after = try store.persistentHistory()
        #expect(after.count == before.count + 1)
        #expect(after.first?.changes.count == before.first?.changes.count)
        #expect(after.first?.changes.map(\.changeID) == before.first?.changes.map(\.changeID))
        let transaction = try #require(after.last)
        #expect(transaction.transactionNumber == (before.last?.transactionNumber ?? 0) + 1 && transaction.author == "sift")
        let update = try #require(transaction.changes.first { $0.changeType == .update && $0.entityName == "Book" })
        #expect(update.primaryKey == book.objectID.primaryKey)
        #expect(update.updatedProperties == ["price", "title"])
        // Book's properties by name: author, cover, pages, pagesCount, price, publishedAt, title, uniqueID.
        #expect(try SQLiteConnection(path: url.path, readOnly: true).query(
            "SELECT ZCOLUMNS FROM ACHANGE WHERE ZTRANSACTIONID = \(transaction.transactionNumber) AND ZCHANGETYPE = 1 AND ZENTITY = 1")
            == [[.blob(Data([0x0A]))]])
        #expect(transaction.changes.contains { $0.changeType == .delete && $0.entityName == "Feedback"
            && $0.primaryKey == feedback.objectID.primaryKey })
        // Batch changes are transactions too: the attributes set; the rows deleted.
        let updated = try context.execute(BatchUpdateRequest(entityName: "Book", predicate: "TRUEPREDICATE", setting: ["price": "2.5"]))
        let batchDelete = try context.execute(BatchDeleteRequest(entityName: "Feedback", predicate: "rating < 3"))
        let batches = try store.persistentHistory(after: transaction.token)
        #expect(batches.count == (batchDelete.objectIDs.isEmpty ? 1 : 2))
        #expect(batches.first?.changes.count == updated.objectIDs.count)
        #expect(batches.first?.changes.allSatisfy { $0.changeType == .update && $0.updatedProperties == ["price"] } == true)
        #expect(Set(batches.dropFirst().flatMap(\.changes).map(\.objectID)) == Set(batchDelete.objectIDs))
        #expect(CoreDataInvariants.violations(of: store) == [], "\(name)")
    }
}
