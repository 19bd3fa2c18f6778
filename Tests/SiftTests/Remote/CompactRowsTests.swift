// The compact form of rows (`application/vnd.sift.rows`, issue 51): rows of
// every attribute type cross it and come back the same, to the bit (nil,
// dates, decimals, bytes, Int64.min and .max, unicode and NUL in strings, an
// undefined attribute's values), a value in a column of another type is
// converted as the JSON form's reading converts it or refused; change sets
// and their answers cross it too. A subentity's rows come in a sorted fetch
// with their own attributes. Only a client that prefers the form gets it: a
// request without `Accept`, or one that accepts JSON as much, gets JSON, and
// the remote store gets the compact form. A hostile body (truncated, bad
// tags, huge counts, keys ≤ 0, deep nesting, bytes flipped at random) is a
// typed error, never a crash or a hang, and a server writes nothing of it.

import Foundation
import Sift
@testable import SiftHTTPAPI
@testable import SiftRemote
@testable import SiftServer
import SiftStore
import Testing

@Suite("The compact form of rows")
struct CompactRowsTests {
    static let model = try! DataModel([
        Entity("Sample", attributes: [
            Attribute("i16", .integer16, optional: true), Attribute("i32", .integer32, optional: true),
            Attribute("i64", .integer64, optional: true), Attribute("dec", .decimal, optional: true),
            Attribute("dbl", .double, optional: true), Attribute("flt", .float, optional: true),
            Attribute("str", .string, optional: true), Attribute("flag", .boolean, optional: true),
            Attribute("when", .date, optional: true), Attribute("bytes", .binary, optional: true),
            Attribute("id", .uuid, optional: true), Attribute("link", .uri, optional: true),
            Attribute("blob", .transformable, optional: true), Attribute("any", .undefined, optional: true),
        ], relationships: [
            Relationship("other", to: "Sample", inverse: "others"),
            Relationship("others", to: "Sample", toMany: true, inverse: "other"),
        ]),
        Entity("Base", abstract: true, attributes: [Attribute("rank", .integer64, optional: true)]),
        Entity("Thing", superentity: "Base", attributes: [Attribute("name", .string, optional: true)]),
        Entity("Widget", superentity: "Thing", attributes: [Attribute("size", .double, optional: true)]),
    ])

    static var sample: Entity { model.entity(named: "Sample")! }

    /// Rows of every attribute type: nil everywhere, then the edges each type must carry exactly.
    static let rows: [[String: PredicateValue]] = [
        [:],
        ["i16": .int(-32768), "i32": .int(2_147_483_647), "i64": .int(.min), "dec": .double(0.1), "dbl": .double(-0.5),
         "flt": .double(Double(Float(0.1))), "str": .string("é\u{0}x 🎉 \"q\""), "flag": .bool(false),
         "when": .date(Date(timeIntervalSinceReferenceDate: 736_250_400.123456789)), "bytes": .data(Data([0, 1, 255, 0])),
         "id": .uuid(UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!), "link": .string("https://example.com/a?b=c"),
         "blob": .data(Data()), "any": .dictionary(["a": .int(1), "b": .array([.null, .string("x"), .date(Date(timeIntervalSinceReferenceDate: 1.5))])])],
        ["i64": .int(.max), "dec": .double(1e16), "dbl": .double(-1e300), "flt": .double(.infinity), "str": .string(""),
         "flag": .bool(true), "when": .date(Date(timeIntervalSinceReferenceDate: -63_113_904_000)),
         "any": .object(ObjectReference(entity: "Sample", id: 1))],
        ["dbl": .double(-.infinity), "when": .date(Date(timeIntervalSinceReferenceDate: 3e11)), "any": .int(-7),
         "str": .string(String(repeating: "ü\u{0}", count: 1000))],
        ["dbl": .double(.leastNonzeroMagnitude), "when": .date(Date(timeIntervalSinceReferenceDate: 0.1)), "any": .string("text")],
    ]

    /// Values the form carries that no store keeps.
    static let unstored: [String: PredicateValue] = ["dbl": .double(.nan), "dec": .double(-0.0), "when": .date(Date(timeIntervalSinceReferenceDate: .nan))]

    /// Whether two values are the same, doubles and dates to the bit.
    static func same(_ a: PredicateValue, _ b: PredicateValue) -> Bool {
        switch (a, b) {
        case (.double(let x), .double(let y)): x.bitPattern == y.bitPattern
        case (.date(let x), .date(let y)): x.timeIntervalSinceReferenceDate.bitPattern == y.timeIntervalSinceReferenceDate.bitPattern
        case (.array(let x), .array(let y)): x.count == y.count && zip(x, y).allSatisfy { same($0, $1) }
        case (.dictionary(let x), .dictionary(let y)): x.count == y.count && x.allSatisfy { key, value in y[key].map { same(value, $0) } ?? false }
        default: a == b
        }
    }

    /// A node of Sample `key` with `values` by name, and a to-one key.
    static func node(_ key: Int64, _ values: [String: PredicateValue], other: Int64? = nil) -> RowNode {
        var slots = [PredicateValue](repeating: .null, count: sample.attributes.count)
        for (name, value) in values { slots[sample.attribute(named: name)!.slot] = value }
        var toOne = [Int64?](repeating: nil, count: sample.toOneCount)
        toOne[sample.relationship(named: "other")!.slot] = other
        return RowNode(id: ObjectID(entity: sample, primaryKey: key), version: key &* 3, values: slots, toOne: toOne,
                       toMany: [[Int64]?](repeating: nil, count: sample.toManyCount))
    }

    /// Nodes written by the encoder and read back.
    static func roundTrip(_ nodes: [RowNode]) throws(WireError) -> CompactAnswer {
        var encoder = CompactRowEncoder(model: model)
        for node in nodes { encoder.add(node) }
        encoder.addPage(complete: true, next: "cursor é")
        let body = encoder.finish()
        return try read(body)
    }

    static func read(_ body: [UInt8]) throws(WireError) -> CompactAnswer {
        let result = body.withUnsafeBytes { bytes in Result { () throws(WireError) in try CompactAnswer(bytes, model: model) } }
        return try result.get()
    }

    // MARK: Values

    @Test("Rows of every attribute type come back the same, to the bit: nil, dates, decimals, bytes, Int64.min and .max, NUL, undefined")
    func everyType() throws {
        let nodes = (Self.rows + [Self.unstored]).enumerated().map { Self.node(Int64($0.offset + 1), $0.element, other: $0.offset == 0 ? nil : 1) }
        let answer = try Self.roundTrip(nodes)
        #expect(answer.objects.count == nodes.count)
        #expect(answer.complete == true && answer.next == "cursor é")
        for (sent, read) in zip(nodes, answer.objects) {
            #expect(read.id == sent.id && read.version == sent.version)
            #expect(read.toOneKey(at: 0) == sent.toOneKey(at: 0))
            for attribute in Self.sample.attributes {
                let (a, b) = (read.value(at: attribute.slot), sent.value(at: attribute.slot))
                #expect(Self.same(a, b), "\(attribute.name): \(a) read, \(b) sent")
            }
        }
    }

    @Test("A value in a column of another type is converted as the JSON form's reading converts it, or refused with a typed error")
    func mismatchedColumn() throws {
        let answer = try Self.roundTrip([Self.node(1, ["dbl": .int(5), "i64": .double(7), "when": .int(12), "flag": .int(1)])])
        let node = try #require(answer.objects.first)
        #expect(node.value(at: Self.sample.attribute(named: "dbl")!.slot) == .double(5))
        #expect(node.value(at: Self.sample.attribute(named: "i64")!.slot) == .int(7))
        #expect(node.value(at: Self.sample.attribute(named: "when")!.slot) == .date(Date(timeIntervalSinceReferenceDate: 12)))
        #expect(node.value(at: Self.sample.attribute(named: "flag")!.slot) == .bool(true))
        for values: [String: PredicateValue] in [["i64": .string("x")], ["i16": .int(70_000)], ["id": .int(3)], ["str": .data(Data([1]))]] {
            #expect(throws: WireError.self, "\(values)") { try Self.roundTrip([Self.node(1, values)]) }
        }
    }

    @Test("Through a server, a remote store reads every value as the local store holds it, and reads it in the compact form")
    func throughServer() async throws {
        try await offThePool {
            let store = try SQLiteStore(inMemoryWith: Self.model)
            let context = ObjectContext(store: store)
            var inserted: [ManagedObject] = []
            for values in Self.rows {
                let object = try context.insert("Sample")
                for (name, value) in values { try object.setValue(value, forKey: name) }
                if let first = inserted.first { try object.setObject(first, forKey: "other") }
                inserted.append(object)
            }
            try context.save()
            let server = try TestServer(serving: store)
            defer { server.stop() }
            var configuration = RemoteStoreConfiguration()
            configuration.followsChanges = false
            let remote = try RemoteStore(url: server.url, configuration: configuration)
            var request = FetchRequest(entityName: "Sample", sortDescriptors: [FetchSortDescriptor("i64")])
            request.relationshipKeyPathsForPrefetching = ["other"]
            let (localContext, remoteContext) = (ObjectContext(store: store), ObjectContext(store: remote))
            let local = try localContext.fetch(request)
            let fetched = try remoteContext.fetch(request)
            #expect(fetched.map(\.objectID.primaryKey) == local.map(\.objectID.primaryKey))
            for (there, here) in zip(fetched, local) {
                for attribute in Self.sample.attributes {
                    let (a, b) = (try there.value(forKey: attribute.name), try here.value(forKey: attribute.name))
                    #expect(Self.same(a, b), "\(attribute.name): \(a) from the server, \(b) in the store")
                }
                #expect(try there.object(forKey: "other")?.objectID.primaryKey == here.object(forKey: "other")?.objectID.primaryKey)
            }
            // The prefetched rows came in the compact form (the JSON form's are kept apart).
            #expect(remote.backend.state.withLock { !$0.stashedNodes.isEmpty && $0.stashedRows.isEmpty })
        }
    }

    @Test("A subentity's rows come in a sorted fetch of its parent, with their own attributes and in the fetch's order")
    func subentitySorted() async throws {
        try await offThePool {
            let store = try SQLiteStore(inMemoryWith: Self.model)
            let context = ObjectContext(store: store)
            for index in 0..<30 {
                let object = try context.insert(index % 3 == 0 ? "Widget" : "Thing")
                try object.setValue(.int(Int64((index * 7) % 30)), forKey: "rank")
                try object.setValue(.string("thing \(index)"), forKey: "name")
                if index % 3 == 0 { try object.setValue(.double(Double(index) / 4), forKey: "size") }
            }
            try context.save()
            let server = try TestServer(serving: store)
            defer { server.stop() }
            var configuration = RemoteStoreConfiguration()
            configuration.followsChanges = false
            let remote = try RemoteStore(url: server.url, configuration: configuration)
            for entity in ["Base", "Thing"] {
                let request = FetchRequest(entityName: entity, predicate: "rank >= 3",
                                           sortDescriptors: [FetchSortDescriptor("rank", ascending: false)])
                let (localContext, remoteContext) = (ObjectContext(store: store), ObjectContext(store: remote))
                let local = try localContext.fetch(request)
                let fetched = try remoteContext.fetch(request)
                #expect(fetched.count == 27)
                #expect(fetched.map(\.objectID.primaryKey) == local.map(\.objectID.primaryKey))
                #expect(fetched.map(\.entity.name) == local.map(\.entity.name))
                #expect(fetched.filter { $0.entity.name == "Widget" }.count == 9)
                for (there, here) in zip(fetched, local) {
                    for name in there.entity.attributes.map(\.name) {
                        #expect(try there.value(forKey: name) == here.value(forKey: name), "\(name)")
                    }
                }
            }
        }
    }

    // MARK: Saves

    @Test("A change set of every attribute type, links and deletes crosses the compact form, and the store holds exactly its values")
    func changeSets() async throws {
        try await offThePool {
            let store = try SQLiteStore(inMemoryWith: Self.model)
            let server = try TestServer(serving: store)
            defer { server.stop() }
            var configuration = RemoteStoreConfiguration()
            configuration.followsChanges = false
            let remote = try RemoteStore(url: server.url, configuration: configuration)
            let context = ObjectContext(store: remote)
            var objects: [ManagedObject] = []
            for values in Self.rows {
                let object = try context.insert("Sample")
                for (name, value) in values { try object.setValue(value, forKey: name) }
                objects.append(object)
            }
            // To-one targets of objects the change set inserts, one of them inserted after the object naming it.
            try objects[1].setObject(objects[4], forKey: "other")
            try objects[2].setObject(objects[1], forKey: "other")
            try context.save()
            #expect(remote.backend.state.withLock { $0.readsCompactChanges })
            try objects[3].setValue(.int(42), forKey: "i64")
            try objects[3].setObject(objects[1], forKey: "other")
            try context.delete(objects[0])
            try context.save()

            let reading = ObjectContext(store: store)
            let stored = try reading.fetch(FetchRequest(entityName: "Sample"))
                .sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
            #expect(stored.count == Self.rows.count - 1)
            // (The undefined attribute is transient: its values stay with the context.)
            var expected = Array(Self.rows.dropFirst()).map { $0.filter { $0.key != "any" } }
            expected[2]["i64"] = .int(42)
            for (object, values) in zip(stored, expected) {
                for attribute in Self.sample.attributes {
                    let value = try object.value(forKey: attribute.name)
                    #expect(Self.same(value, values[attribute.name] ?? .null), "\(attribute.name): \(value) stored")
                }
            }
            let key = { (object: ManagedObject) in try object.object(forKey: "other")?.objectID.primaryKey }
            #expect(try key(stored[0]) == stored[3].objectID.primaryKey)
            #expect(try key(stored[1]) == stored[0].objectID.primaryKey)
            #expect(try key(stored[2]) == stored[0].objectID.primaryKey)
        }
    }

    /// A change set's body in the compact form: one insert of Sample with `values`, its to-one target, and an identity.
    static func changeSet(_ values: [String: PredicateValue] = ["str": .string("a")], temporaryID: Int64 = -1,
                          other: BackendObject<Int64>? = nil, sequence: Int64? = nil) -> [UInt8] {
        var changes = BackendChanges<Int64>()
        changes.inserts = [.init(temporaryID: temporaryID, entityName: "Sample", values: values, toOne: other.map { ["other": $0] } ?? [:])]
        return CompactChangeSet.body(CompactChangeSet.records(changes, model: model)!, origin: sequence.map { _ in "client" }, sequence: sequence)
    }

    static func readChangeSet(_ body: [UInt8]) throws -> ReceivedChangeSet {
        try body.withUnsafeBytes { try SaveRequestReader(model: model).request(compact: $0) }
    }

    @Test("A compact change set is read with the JSON change set's checks: temporary IDs, targets, keys, types, required values")
    func changeSetChecks() throws {
        let read = try Self.readChangeSet(Self.changeSet(["i64": .int(.min), "when": .date(Date(timeIntervalSinceReferenceDate: 0.1))],
                                                         sequence: 9))
        #expect(read.origin == "client" && read.sequence == 9)
        #expect(read.request.inserts.count == 1)
        #expect(read.request.inserts.first?.values[Self.sample.attribute(named: "i64")!.slot] == .int(.min))
        func refused(_ body: [UInt8], _ words: String) {
            do {
                _ = try Self.readChangeSet(body)
                Issue.record("read: \(words)")
            } catch {
                #expect("\(error)".contains(words), "\(error)")
            }
        }
        refused(Self.changeSet(temporaryID: 0), "temporary IDs are nonzero")
        refused(Self.changeSet(other: .inserted(-5)), "no insert has the temporary ID -5")
        refused(Self.changeSet(other: .existing(0)), "positive")
        refused(Self.changeSet(other: .existing(-3)), "positive")
        refused(Self.changeSet(["i16": .int(1 << 20)]), "cannot hold")
        refused(Self.changeSet(["str": .int(3)]), "cannot hold")
        refused(Array(Self.changeSet().prefix(20)), "cannot be read")
    }

    @Test("A save's answer in the compact form reads back; the server answers a compact change set in it, and in JSON to a JSON-only Accept")
    func saveAnswer() async throws {
        let body = CompactSaveAnswer.body(versions: [("Sample", 1, 2), ("Sample", 3, 4), ("Thing", 5, 6)], keys: [(-1, 7), (-2, 8)], token: "t.1")
        let answer = try body.withUnsafeBytes { try CompactSaveAnswer($0) }
        #expect(answer.versions == [1: 2, 3: 4, 5: 6] && answer.keys == [-1: 7, -2: 8] && answer.token == "t.1")
        for cut in 0..<body.count {
            #expect(throws: WireError.self) { try Array(body.prefix(cut)).withUnsafeBytes { try CompactSaveAnswer($0) } }
        }
        try await offThePool {
            let store = try SQLiteStore(inMemoryWith: Self.model)
            let server = try TestServer(serving: store)
            defer { server.stop() }
            let save = server.url.appendingPathComponent("v1/save")
            let compact = ["Content-Type": CompactRows.contentType, "Accept": CompactRows.accept]
            let first = try exchange(save, body: Data(Self.changeSet(sequence: 1)), headers: compact)
            #expect(first.status == 200 && CompactRows.isCompact(first.headers["content-type"]))
            let read = try first.data.withUnsafeBytes { try CompactSaveAnswer($0) }
            #expect(read.keys.count == 1 && read.keys[-1] != nil && !read.token.isEmpty, "\(read)")
            // The same identity again: answered as the first time, nothing written.
            let again = try exchange(save, body: Data(Self.changeSet(sequence: 1)), headers: compact)
            #expect(try again.data.withUnsafeBytes { try CompactSaveAnswer($0) }.keys == read.keys)
            let json = try exchange(save, body: Data(Self.changeSet(sequence: 2)),
                                    headers: ["Content-Type": CompactRows.contentType, "Accept": "application/json"])
            #expect(json.status == 200 && json.headers["content-type"]?.hasPrefix("application/json") == true)
            #expect((SiftTests.json(json.data)["keys"] as? [Any])?.count == 1)
            #expect(try store.count(for: store.compile(FetchRequest(entityName: "Sample"))) == 2)
        }
    }

    @Test("The answer a server keeps for a retried save, written without JSONEncoder, reads back as the same answer")
    func rememberedAnswer() throws {
        let answer = Components.Schemas.SaveAnswer(
            versions: [.init(entity: "Sample", key: 1, version: 2), .init(entity: "Thé \"x\" \\ y", key: .max, version: .min)],
            keys: [.init(temporaryID: -1, key: 7), .init(temporaryID: .min, key: .max)], token: "r\u{1}n.\u{7F}1\n")
        let text = SaveAnswers.text(answer)
        #expect(try JSONDecoder().decode(Components.Schemas.SaveAnswer.self, from: Data(text.utf8)) == answer)
        let empty = Components.Schemas.SaveAnswer(versions: [], keys: [], token: "")
        #expect(try JSONDecoder().decode(Components.Schemas.SaveAnswer.self, from: Data(SaveAnswers.text(empty).utf8)) == empty)
    }

    // MARK: Negotiation

    @Test("Only a client that prefers the compact form gets it: no Accept, a JSON-only Accept and */* get JSON; the remote store's gets it")
    func negotiation() async throws {
        // The generated code reads a request without `Accept` as accepting every content type at quality 1.
        #expect(!StoreAPI.wantsCompact(Operations.Fetch.Input.Headers().accept))
        #expect(!StoreAPI.wantsCompact(Operations.Save.Input.Headers().accept))
        try await offThePool {
            let served = try ServedCompany()
            let body = Data(#"{"entity": "Employee", "limit": 3}"#.utf8)
            for (accept, compact) in [(nil, false), ("application/json", false), ("*/*", false), ("application/json, application/vnd.sift.rows", false),
                                      ("application/vnd.sift.rows;q=0.4, application/json;q=0.5", false),
                                      (CompactRows.accept, true), ("application/vnd.sift.rows", true), ("application/vnd.sift.rows, */*;q=0.1", true)] {
                for path in ["v1/fetch", "v1/objects"] {
                    let payload = path == "v1/fetch" ? body : Data(#"{"entity": "Employee", "keys": [1, 2]}"#.utf8)
                    let answer = try exchange(served.url.appendingPathComponent(path), body: payload,
                                              headers: accept.map { ["Accept": $0] } ?? [:])
                    #expect(answer.status == 200, "\(path), \(accept ?? "no Accept")")
                    #expect(CompactRows.isCompact(answer.headers["content-type"]) == compact, "\(path), \(accept ?? "no Accept")")
                    if !compact { #expect(!SiftTests.json(answer.data).isEmpty) }
                }
            }
            // A JSON body the compact form's reader refuses, and a count: JSON whatever Accept says.
            let count = try exchange(served.url.appendingPathComponent("v1/fetch"), body: Data(#"{"entity": "Employee", "result": "count"}"#.utf8),
                                     headers: ["Accept": CompactRows.accept])
            #expect(count.headers["content-type"]?.hasPrefix("application/json") == true)
            // A body in a content type the save does not read is a 415, nothing written.
            let other = try exchange(served.url.appendingPathComponent("v1/save"), body: Data("x".utf8), headers: ["Content-Type": "text/plain"])
            #expect(other.status == 415)
        }
    }

    // MARK: Hostile bodies

    @Test("A hostile answer of rows is a typed error: truncated, bad magic and tags, huge counts, keys ≤ 0, deep nesting, flipped bytes")
    func hostileRows() throws {
        var encoder = CompactRowEncoder(model: Self.model)
        for (index, values) in Self.rows.enumerated() { encoder.add(Self.node(Int64(index + 1), values, other: 1)) }
        encoder.addLinks(entity: "Sample", relationship: "others", owner: 1, members: [2, 3])
        encoder.addPage(complete: false, next: nil)
        let body = encoder.finish()
        _ = try Self.read(body)
        // Every truncation.
        for cut in 0..<body.count {
            #expect(throws: WireError.self) { try Self.read(Array(body.prefix(cut))) }
        }
        #expect(throws: WireError.self) { try Self.read(body + [0]) }
        #expect(throws: WireError.self) { try Self.read([0x53, 0x49, 0x46, 0x54, 2, 0]) }

        /// A body of the magic and then `bytes`.
        func framed(_ bytes: [UInt8]...) -> [UInt8] { CompactRows.magic + bytes.joined() }
        func u32(_ value: UInt32) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func i64(_ value: Int64) -> [UInt8] { withUnsafeBytes(of: value.littleEndian, Array.init) }
        func string(_ text: String) -> [UInt8] { u32(UInt32(text.utf8.count)) + Array(text.utf8) }
        // An entity declared with no columns: its rows are key and version.
        let thing = [1] + u32(0) + string("Thing") + u32(0) + u32(0)
        _ = try Self.read(framed(thing, [2], u32(0), i64(1), i64(1), [0]))
        let hostile: [(String, [UInt8])] = [
            ("a bad record tag", framed([99])),
            ("a huge count of columns", framed([1], u32(0), string("Thing"), u32(.max))),
            ("a huge string", framed([1], u32(0), u32(.max))),
            ("a huge count of links", framed([4], string("Sample"), string("others"), i64(1), u32(.max))),
            ("a key of 0", framed(thing, [2], u32(0), i64(0), i64(1), [0])),
            ("a negative key", framed(thing, [2], u32(0), i64(-1), i64(1), [0])),
            ("a to-one key of 0", framed([1], u32(0), string("Thing"), u32(0), u32(0), [1], u32(0), string("Sample"), u32(0), u32(1),
                                       string("other"), [2], u32(1), i64(1), i64(1), [1], i64(0), [0])),
            ("an entity not declared", framed([2], u32(0), i64(1), i64(1), [0])),
            ("entities out of order", framed([1], u32(1), string("Thing"), u32(0), u32(0), [0])),
            ("an entity not in the model", framed([1], u32(0), string("Nothing"), u32(0), u32(0), [0])),
            ("a column type that is not one", framed([1], u32(0), string("Thing"), u32(1), string("name"), [9], u32(0), [0])),
            ("a cell tag of 3", framed([1], u32(0), string("Thing"), u32(1), string("name"), [4], u32(0), [2], u32(0), i64(1), i64(1), [3], [0])),
            ("a boolean of 2", framed([5], [2], [0], [0])),
            ("a change set's record", framed([6], [0])),
            ("values nested 100 deep", framed([1], u32(0), string("Sample"), u32(1), string("any"), [0], u32(0), [2], u32(0), i64(1), i64(1), [2],
                                            Array(repeating: [9, 1, 0, 0, 0], count: 100).flatMap { $0 }, [0], [0])),
        ]
        for (name, bytes) in hostile {
            #expect(throws: WireError.self, "\(name)") { try Self.read(bytes) }
        }
        // Bytes flipped at random (a fixed seed): read or refused, never a crash or a hang.
        var random = SplitMix64(seed: 51)
        for _ in 0..<2_000 {
            var mutated = body
            for _ in 0..<(1 + Int(random.next() % 4)) {
                mutated[Int(random.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            _ = try? Self.read(mutated)
            _ = try? Self.readChangeSet(mutated)
        }
    }

    @Test("A hostile change set is refused (400, 404, 413) with nothing written; the server goes on answering")
    func hostileChangeSets() async throws {
        let valid = Self.changeSet(sequence: 1)
        var random = SplitMix64(seed: 7)
        for _ in 0..<2_000 {
            var mutated = valid
            for _ in 0..<(1 + Int(random.next() % 4)) {
                mutated[Int(random.next() % UInt64(mutated.count))] = UInt8(truncatingIfNeeded: random.next())
            }
            _ = try? Self.readChangeSet(mutated)
        }
        try await offThePool {
            let store = try SQLiteStore(inMemoryWith: Self.model)
            let server = try TestServer(serving: store)
            defer { server.stop() }
            let save = server.url.appendingPathComponent("v1/save")
            let headers = ["Content-Type": CompactRows.contentType, "Accept": CompactRows.accept]
            var unknown = Self.changeSet()
            let name = Array("Sample".utf8)
            if let place = unknown.indices.first(where: { unknown[$0...].starts(with: name) }) { unknown[place] = UInt8(ascii: "T") }
            for (body, status) in [(Array(valid.prefix(valid.count - 3)), 400), (valid + [7], 400), (Array(CompactRows.magic), 400),
                                   (Self.changeSet(temporaryID: 0), 400), (Self.changeSet(other: .existing(-1)), 400),
                                   (Self.changeSet(["str": .array([])]), 400), (unknown, 404), ([UInt8](repeating: 0, count: 16), 400)] {
                let answer = try exchange(save, body: Data(body), headers: headers)
                #expect(answer.status == status, "\(String(decoding: answer.data, as: UTF8.self))")
                #expect(answer.headers["content-type"]?.hasPrefix("application/json") == true)
            }
            #expect(try store.count(for: store.compile(FetchRequest(entityName: "Sample"))) == 0)
            #expect(try exchange(save, body: Data(valid), headers: headers).status == 200)
            #expect(try store.count(for: store.compile(FetchRequest(entityName: "Sample"))) == 1)
        }
    }
}
