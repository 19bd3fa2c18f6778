// Atomic stores in a format of one's own (`AtomicStoreFormat`): Sift's JSON
// data set seen only through the protocol answers as the built-in store does;
// references of any kind (strings that start with a digit, UUIDs) map to
// object IDs and back; new objects get their references from the format; a
// missing or empty file is a new store; a file the format cannot read, or a
// write it cannot make, leaves the file byte for byte; and the
// `PeopleTextStore` example does what its usage says.

import Foundation
import Sift
import SiftStore
import Testing

/// Sift's JSON data set through the protocol's public requirements alone
/// (its numbers as text references), so the generic path is the one tested.
struct TextKeyedDataSet: AtomicStoreFormat {
    let json = DataSetFormat()

    func model(in data: Data) throws -> DataModel? { try json.model(in: data) }

    func read(_ data: Data, model: DataModel) throws -> [AtomicNode<String>] {
        try json.read(data, model: model).map { node in
            AtomicNode(entityName: node.entityName, reference: "0\(node.reference)", values: node.values,
                       toOne: node.toOne.mapValues { "0\($0)" }, toMany: node.toMany.mapValues { $0.map { "0\($0)" } })
        }
    }

    func write(_ nodes: [AtomicNode<String>], model: DataModel) throws -> Data {
        try json.write(nodes.map { node in
            AtomicNode(entityName: node.entityName, reference: Self.number(node.reference), values: node.values,
                       toOne: node.toOne.mapValues(Self.number), toMany: node.toMany.mapValues { $0.map(Self.number) })
        }, model: model)
    }

    func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> String {
        "0\(primaryKey + 1000)"
    }

    func metadata(at url: URL) throws -> [String: PredicateValue]? {
        ["format": "text-keyed data set", "bytes": .int(Int64((try? Data(contentsOf: url))?.count ?? 0))]
    }

    static func number(_ reference: String) -> Int64 { Int64(reference.dropFirst()) ?? -1 }
}

/// Objects known by UUIDs, one JSON object per line.
struct UUIDLines: AtomicStoreFormat {
    struct NoUUID: Error, CustomStringConvertible { var description: String { "no uuid" } }

    func read(_ data: Data, model: DataModel) throws -> [AtomicNode<UUID>] {
        try String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let object = try JSONDecoder().decode([String: String].self, from: Data(line.utf8))
            guard let id = object["uuid"].flatMap(UUID.init(uuidString:)) else { throw NoUUID() }
            return AtomicNode(entityName: "Note", reference: id, values: ["text": .string(object["text"] ?? "")])
        }
    }

    func write(_ nodes: [AtomicNode<UUID>], model: DataModel) throws -> Data {
        let lines = try nodes.map { node in
            String(decoding: try JSONEncoder().encode(["uuid": node.reference.uuidString,
                                                       "text": node.values["text"]?.stringValue ?? ""]), as: UTF8.self)
        }
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> UUID { UUID() }
}

@Suite("Atomic stores in a format of one's own")
struct AtomicFormatTests {
    static func notesModel() throws -> DataModel { try DataModel([Entity("Note", attributes: [Attribute("text", .string)])]) }

    @Test("Through the protocol alone, the JSON data set answers every corpus case as the built-in store")
    func protocolPathAgrees() throws {
        let folder = try ScratchFolder()
        let file = try folder.file("company.json", Fixtures.data("company.json"))
        let builtIn = ObjectContext(store: try AtomicStore(url: file))
        let genericStore = try AtomicStore(url: file, format: TextKeyedDataSet())
        let generic = ObjectContext(store: genericStore)
        var compared = 0
        func namesObjects(_ value: PredicateValue) -> Bool {
            switch value {
            case .object: true
            case .array(let members): members.contains(where: namesObjects)
            default: false
            }
        }
        // Object arguments name keys, and Sift numbered the generic store's objects itself.
        for testCase in CorpusCase.all where !(testCase.args ?? []).contains(where: namesObjects) {
            var request = FetchRequest(entityName: testCase.entity, predicate: testCase.predicate, arguments: testCase.args ?? [])
            request.sortDescriptors = [FetchSortDescriptor("name")]
            guard let expected = try? builtIn.fetch(request) else { continue }
            let found = try generic.fetch(request)
            // Sift numbered the generic store's objects itself: their references are the data set's ids.
            let ids = found.map { genericStore.reference(for: $0.objectID).map(TextKeyedDataSet.number) ?? -1 }
            #expect(ids == expected.map(\.objectID.primaryKey), "\(testCase.predicate)")
            compared += 1
        }
        #expect(compared > 100)
    }

    @Test("References map to object IDs and back; new objects get theirs from the format; the file reopens")
    func references() throws {
        let folder = try ScratchFolder()
        let file = try folder.file("company.json", Fixtures.data("company.json"))
        let store = try AtomicStore(url: file, format: TextKeyedDataSet())
        let id = try #require(store.objectID(for: "0101", entityName: "Employee"))
        #expect(store.reference(for: id) == "0101")
        #expect(store.objectID(for: "101", entityName: "Employee") == nil)
        let context = ObjectContext(store: store)
        let alice = context.object(for: id)
        #expect(alice["name", as: String.self] == "Alice Anderson")

        let hire = try context.insert("Employee")
        try hire.setValue("Dee", forKey: "name")
        try hire.setValue(35, forKey: "age")
        try hire.setValue(50_000.0, forKey: "salary")
        try hire.setValue(false, forKey: "isManager")
        try hire.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "startDate")
        try hire.setObject(alice.object(forKey: "department"), forKey: "department")
        try context.save()
        let reference = try #require(store.reference(for: hire.objectID))
        #expect(reference == "0\(hire.objectID.primaryKey + 1000)")
        #expect(store.objectID(for: reference, entityName: "Employee") == hire.objectID)

        // The file holds the new object under its reference, and reopens with the same answers.
        let reopened = ObjectContext(store: try AtomicStore(url: file, format: TextKeyedDataSet()))
        let dee = try reopened.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Dee'"))
        #expect(dee.count == 1 && dee.first?["age", as: Int.self] == 35)
        #expect(try dee.first?.object(forKey: "department")?["name", as: String.self]
            == alice.object(forKey: "department")?["name", as: String.self])
        let metadata = try AtomicStore.metadata(at: file, format: TextKeyedDataSet())
        #expect(metadata?["format"] == "text-keyed data set")
    }

    @Test("Metadata is read and written without opening the store, kept through saves, refused by a format with none")
    func metadata() throws {
        let folder = try ScratchFolder()
        let file = try folder.file("company.json", Fixtures.data("company.json"))
        #expect(try AtomicStore.metadata(at: file, format: DataSetFormat()) == nil)
        try AtomicStore.setMetadata(["owner": "ops", "schema": 3], at: file, format: DataSetFormat())
        #expect(try AtomicStore.metadata(at: file, format: DataSetFormat()) == ["owner": "ops", "schema": 3])

        let store = try AtomicStore(url: file)
        #expect(store.metadata["owner"] == "ops")
        let context = ObjectContext(store: store)
        let alice = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'")).first)
        try alice.setValue("Al", forKey: "nickname")
        try context.save()                                              // the whole file again, metadata kept
        #expect(try AtomicStore.metadata(at: file, format: DataSetFormat())?["schema"] == 3)
        try store.setMetadata(["owner": "dev"])
        #expect(try AtomicStore.metadata(at: file, format: DataSetFormat()) == ["owner": "dev"])
        #expect(try AtomicStore(url: file).metadata == ["owner": "dev"])

        let notes = try folder.file("notes.jsonl", Data())
        #expect { try AtomicStore.setMetadata(["a": 1], at: notes, format: UUIDLines()) } throws: {
            ($0 as? StoreError)?.code == .cannotWrite
        }
    }

    @Test("UUID references, a missing and an empty file as new stores, conflicts between contexts")
    func uuidsAndNewStores() throws {
        let notes = try Self.notesModel()
        let folder = try ScratchFolder()
        let missing = folder.url.appendingPathComponent("notes.jsonl")
        let store = try AtomicStore(url: missing, format: UUIDLines(), model: notes)
        let first = ObjectContext(store: store)
        let note = try first.insert("Note")
        try note.setValue("hello", forKey: "text")
        try first.save()
        let uuid = try #require(store.reference(for: note.objectID))
        #expect(String(decoding: try Data(contentsOf: missing), as: UTF8.self).contains(uuid.uuidString))

        // Two contexts change one note: the second save conflicts, as on every store.
        let second = ObjectContext(store: store)
        let seen = try #require(try second.fetch(FetchRequest(entityName: "Note")).first)
        #expect(seen["text", as: String.self] == "hello")                    // read: the context holds this version
        try note.setValue("first", forKey: "text")
        try first.save()
        try seen.setValue("second", forKey: "text")
        #expect { try second.save() } throws: { ($0 as? StoreError)?.code == .conflicts }

        let empty = try folder.file("empty.jsonl", Data())
        #expect(try ObjectContext(store: AtomicStore(url: empty, format: UUIDLines(), model: notes))
            .count(for: FetchRequest(entityName: "Note")) == 0)
        #expect { try AtomicStore(url: empty, format: UUIDLines()) } throws: { ($0 as? StoreError)?.code == .notAStoreFile }
        #expect { try AtomicStore(url: folder.url, format: UUIDLines(), model: notes) } throws: {
            ($0 as? StoreError)?.code == .notAStoreFile
        }
    }

    @Test("A file the format cannot read, or a write it cannot make, leaves the file byte for byte")
    func failuresLeaveTheFile() throws {
        let notes = try Self.notesModel()
        let folder = try ScratchFolder()
        let bad = try folder.file("bad.jsonl", Data("{\"uuid\": \"x\"}\n".utf8))
        #expect { try AtomicStore(url: bad, format: UUIDLines(), model: notes) } throws: { error in
            guard case .unreadableStoreFile(let path, let reason)? = error as? StoreError else { return false }
            return path == bad.path && reason.contains("no uuid")
        }
        #expect(try Data(contentsOf: bad) == Data("{\"uuid\": \"x\"}\n".utf8))

        // Two objects with one reference in the file.
        let id = UUID().uuidString
        let twice = try folder.file("twice.jsonl", Data("{\"uuid\": \"\(id)\"}\n{\"uuid\": \"\(id)\"}\n".utf8))
        #expect { try AtomicStore(url: twice, format: UUIDLines(), model: notes) } throws: {
            ($0 as? StoreError)?.code == .unreadableStoreFile
        }

        // A value the format refuses to write: the save fails, the file and the store stay as they were.
        let file = try folder.file("people.txt", Data("Person::first:Ann:last:Lee:id:12\n".utf8))
        let people = try DataModel([Entity("Person", attributes: [
            Attribute("first", .string), Attribute("last", .string), Attribute("id", .integer64),
        ])])
        let store = try AtomicStore(url: file, format: PeopleLines(), model: people)
        let context = ObjectContext(store: store)
        let ann = try #require(try context.fetch(FetchRequest(entityName: "Person")).first)
        try ann.setValue("A:nn", forKey: "first")
        #expect { try context.save() } throws: { ($0 as? StoreError)?.code == .cannotWrite }
        #expect(try Data(contentsOf: file) == Data("Person::first:Ann:last:Lee:id:12\n".utf8))
        let reader = ObjectContext(store: store)
        #expect(try reader.fetch(FetchRequest(entityName: "Person")).first?["first", as: String.self] == "Ann")

        // A new object whose reference another has: refused, nothing written.
        context.rollback()
        let copy = try context.insert("Person")
        try copy.setValue("Bo", forKey: "first")
        try copy.setValue("Lee", forKey: "last")
        try copy.setValue(12, forKey: "id")
        #expect { try context.save() } throws: { ($0 as? StoreError)?.code == .duplicateReference }
        #expect(try Data(contentsOf: file) == Data("Person::first:Ann:last:Lee:id:12\n".utf8))
    }

    @Test("PeopleTextStore adds, renames and deletes, prints by id, and refuses a malformed line")
    func peopleTextStore() throws {
        let folder = try ScratchFolder()
        let file = folder.url.appendingPathComponent("people.txt").path
        func run(_ arguments: [String]) throws -> (status: Int32, output: String, error: String) {
            try runProduct("PeopleTextStore", arguments)
        }
        #expect(try run([file, "--add", "Robert", "Tibbot", "86349382003", "TRUEPREDICATE"]).output == "Robert Tibbot 86349382003\n")
        #expect(try run([file, "--add", "Ann", "Lee", "12", "TRUEPREDICATE"]).output == "Ann Lee 12\nRobert Tibbot 86349382003\n")
        #expect(try run([file, "--rename", "12", "Anna", "last BEGINSWITH 'L'"]).output == "Anna Lee 12\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8)
            == "Person::first:Robert:last:Tibbot:id:86349382003\nPerson::first:Anna:last:Lee:id:12\n")
        #expect(try run([file, "--delete", "86349382003", "TRUEPREDICATE"]).output == "Anna Lee 12\n")
        #expect(try String(contentsOfFile: file, encoding: .utf8) == "Person::first:Anna:last:Lee:id:12\n")

        let malformed = "Person::first:Anna:last:Lee:id:12\nPerson:first:Bo\n"
        try malformed.write(toFile: file, atomically: true, encoding: .utf8)
        let refused = try run([file, "--add", "Cy", "Ng", "3", "TRUEPREDICATE"])
        #expect(refused.status != 0 && refused.error.contains("line 2"))
        #expect(try String(contentsOfFile: file, encoding: .utf8) == malformed)
    }
}

/// The guide's line format again (the snippet's own is in an executable), for the failure tests.
struct PeopleLines: AtomicStoreFormat {
    struct Unwritable: Error {}

    func read(_ data: Data, model: DataModel) throws -> [AtomicNode<String>] {
        String(decoding: data, as: UTF8.self).split(separator: "\n").map { line in
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            return AtomicNode(entityName: "Person", reference: fields[7], values: [
                "first": .string(fields[3]), "last": .string(fields[5]), "id": .int(Int64(fields[7]) ?? 0),
            ])
        }
    }

    func write(_ nodes: [AtomicNode<String>], model: DataModel) throws -> Data {
        var text = ""
        for node in nodes {
            let first = node.values["first"]?.stringValue ?? ""
            guard !first.contains(":") else { throw Unwritable() }
            text += "Person::first:\(first):last:\(node.values["last"]?.stringValue ?? ""):id:\(node.reference)\n"
        }
        return Data(text.utf8)
    }

    func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> String {
        values["id"]?.int64Value.map(String.init) ?? String(primaryKey)
    }
}
