// The API's JSON for values (issue 54, item 8): an object's attribute values
// are plain JSON read by their types in the model — an integer64 a JSON
// integer (all 64 bits), a whole double a plain number, a date ISO 8601 text
// whose digits are exactly its stored seconds, a UUID its text, bytes Base64
// — and typed wrappers only where no attribute says what a value is
// (dictionaries, arguments). Checked on the raw text the server sends; then
// a round trip through a remote store, each way, gives exactly the values
// the local store holds; older clients' typed forms are still read.

import Foundation
import Sift
import SiftHTTPAPI
import SiftRemote
import SiftServer
import SiftStore
import Testing

@Suite("The API's JSON for values: plain where the model says what a value is")
struct WireFormatTests {
    static let model = try! DataModel([Entity("Sample", attributes: [
        Attribute("i16", .integer16, optional: true), Attribute("i32", .integer32, optional: true),
        Attribute("i64", .integer64, optional: true), Attribute("dec", .decimal, optional: true),
        Attribute("dbl", .double, optional: true), Attribute("flt", .float, optional: true),
        Attribute("str", .string, optional: true), Attribute("flag", .boolean, optional: true),
        Attribute("when", .date, optional: true), Attribute("bytes", .binary, optional: true),
        Attribute("id", .uuid, optional: true), Attribute("link", .uri, optional: true),
        Attribute("blob", .transformable, optional: true),
    ])])

    static let uuid = UUID(uuidString: "E621E1F8-C36C-495A-93FC-0C247A3E6E5F")!

    /// One object with a value of every type: whole and large numbers, a date with a fraction.
    static let sample: [String: PredicateValue] = [
        "i16": .int(-12345), "i32": .int(2_000_000_000), "i64": .int(9_007_199_254_740_993), "dec": .double(12.5),
        "dbl": .double(199_989), "flt": .double(Double(Float(0.1))), "str": .string("é\u{0}x \"q\" / ü"), "flag": .bool(true),
        "when": .date(Date(timeIntervalSinceReferenceDate: 736_250_400.25)), "bytes": .data(Data([0, 1, 255])),
        "id": .uuid(uuid), "link": .string("https://example.com/a?b=c"), "blob": .data(Data("bplist00".utf8)),
    ]

    /// Values at the edges: what a double, an integer and a date's text must carry exactly.
    static let edges: [[String: PredicateValue]] = [
        ["i64": .int(.max), "dbl": .double(0.1 + 0.2), "when": .date(Date(timeIntervalSinceReferenceDate: 736_250_400.000123))],
        ["i64": .int(.min), "dbl": .double(1e300), "when": .date(Date(timeIntervalSinceReferenceDate: 736_250_400.123456789))],
        ["i64": .int(-9_007_199_254_740_993), "dbl": .double(.leastNonzeroMagnitude), "when": .date(Date(timeIntervalSinceReferenceDate: -1.25))],
        ["dbl": .double(1_152_921_504_606_846_976), "dec": .double(1e16), "when": .date(Date(timeIntervalSinceReferenceDate: 0))],
        ["dbl": .double(-0.5), "flt": .double(3), "when": .date(Date(timeIntervalSinceReferenceDate: 1e-7))],
        ["dbl": .double(123_456_789.123_456_78), "when": .date(Date(timeIntervalSinceReferenceDate: -63_113_904_000))],
        // Beyond the year 9999: no ISO 8601 text in four digits, so the typed form.
        ["when": .date(Date(timeIntervalSinceReferenceDate: 3e11)), "str": .string("")],
        ["when": .date(Date(timeIntervalSinceReferenceDate: 252_423_993_599.999_97))],
        [:],
    ]

    /// A store with the sample and the edges (keys 1, 2, …), served.
    static func served() throws -> (SQLiteStore, TestServer) {
        let store = try SQLiteStore(inMemoryWith: model)
        let context = ObjectContext(store: store)
        for values in [sample] + edges {
            let object = try context.insert("Sample")
            for (name, value) in values { try object.setValue(value, forKey: name) }
        }
        try context.save()
        return (store, try TestServer(serving: store))
    }

    /// The raw JSON text of member `name` of the first object whose member it is, in `text` (the server's
    /// pretty-printed answer): a scalar token, or an object's text up to its closing brace.
    static func token(_ name: String, in text: String) -> String? {
        guard let range = text.range(of: "\"\(name)\" : ") else { return nil }
        let rest = text[range.upperBound...]
        if rest.first == "{" { return rest.firstIndex(of: "}").map { String(rest[...$0]) } }
        if rest.first == "\"" {
            var index = rest.index(after: rest.startIndex)
            while index < rest.endIndex, rest[index] != "\"" {
                if rest[index] == "\\" { index = rest.index(after: index) }
                index = rest.index(after: index)
            }
            return String(rest[...index])
        }
        return String(rest.prefix { !",\n}] ".contains($0) })
    }

    @Test("An object's values are plain JSON by their types: integers, numbers, ISO 8601 dates, UUIDs, Base64")
    func rawJSON() async throws {
        try await offThePool { try self.run_rawJSON() }
    }

    func run_rawJSON() throws {
        let (_, server) = try Self.served()
        defer { server.stop() }
        let answer = try exchange(server.url.appendingPathComponent("v1/objects"), body: Data(#"{"entity": "Sample", "keys": [1]}"#.utf8))
        #expect(answer.status == 200)
        let text = String(decoding: answer.data, as: UTF8.self)
        #expect(Self.token("i16", in: text) == "-12345")
        #expect(Self.token("i32", in: text) == "2000000000")
        #expect(Self.token("i64", in: text) == "9007199254740993")        // beyond 2^53, exact
        #expect(Self.token("dbl", in: text) == "199989")                  // a whole double, a plain number
        #expect(Self.token("dec", in: text) == "12.5")
        #expect(Self.token("flt", in: text).flatMap(Double.init) == Double(Float(0.1)))
        #expect(Self.token("flag", in: text) == "true")
        #expect(Self.token("when", in: text) == #""2024-05-01T10:00:00.250Z""#)
        #expect(Self.token("bytes", in: text) == #""AAH\/""#)  // (the server's JSON escapes a slash)
        #expect(Self.token("id", in: text) == #""E621E1F8-C36C-495A-93FC-0C247A3E6E5F""#)
        #expect(Self.token("blob", in: text) == "\"\(Data("bplist00".utf8).base64EncodedString())\"")
        #expect(!text.contains(#""double""#) && !text.contains(#""date""#) && !text.contains(#""data""#) && !text.contains(#""uuid""#))
        let row = try #require((json(answer.data)["objects"] as? [[String: Any]])?.first)
        let values = try #require(row["values"] as? [String: Any])
        #expect(values["str"] as? String == "é\u{0}x \"q\" / ü")
        #expect(values["link"] as? String == "https://example.com/a?b=c")
        #expect(values["bytes"] as? String == "AAH/")
        #expect(values.count == 13)

        // The edges: sub-millisecond digits, a date before 2001, the typed form beyond the year 9999.
        let edges = try exchange(server.url.appendingPathComponent("v1/objects"), body: Data(#"{"entity": "Sample", "keys": [2, 3, 4, 5, 6, 7, 8, 9, 10]}"#.utf8))
        let parts: [String] = String(decoding: edges.data, as: UTF8.self).components(separatedBy: "\"entity\" : \"Sample\"")
        let objects = Array(parts.dropFirst())
        #expect(objects.count == 9)
        guard objects.count == 9 else { return }
        #expect(Self.token("i64", in: objects[0]) == "9223372036854775807")
        #expect(Self.token("when", in: objects[0]) == #""2024-05-01T10:00:00.000123Z""#)
        #expect(Self.token("i64", in: objects[1]) == "-9223372036854775808")
        #expect(Self.token("when", in: objects[1]) == #""2024-05-01T10:00:00.123456800Z""#)
        #expect(Self.token("when", in: objects[2]) == #""2000-12-31T23:59:58.750Z""#)
        #expect(Self.token("when", in: objects[3]) == #""2001-01-01T00:00:00Z""#)
        #expect(Self.token("when", in: objects[4]) == #""2001-01-01T00:00:00.000000100Z""#)
        #expect(Self.token("when", in: objects[5]) == #""0001-01-01T00:00:00Z""#)
        #expect(Self.token("when", in: objects[6])?.hasPrefix(#"{"#) == true)
        #expect(Self.token("date", in: objects[6]) == "300000000000")
        #expect(Self.token("when", in: objects[7]) == #""9999-12-31T23:59:59.999970Z""#)
    }

    @Test("Where no attribute says what a value is (a dictionary's), the typed wrappers stay; dates in them are ISO 8601")
    func typedForm() async throws {
        try await offThePool { try self.run_typedForm() }
    }

    func run_typedForm() throws {
        let (_, server) = try Self.served()
        defer { server.stop() }
        let body = #"""
        {"entity": "Sample", "predicate": "SELF == %@", "arguments": [{"object": {"entity": "Sample", "id": 1}}], "result": "dictionaries",
         "select": [{"name": "when", "expression": "when"}, {"name": "dbl", "expression": "dbl"}, {"name": "i64", "expression": "i64"},
                    {"name": "id", "expression": "id"}, {"name": "bytes", "expression": "bytes"}]}
        """#
        let answer = try exchange(server.url.appendingPathComponent("v1/fetch"), body: Data(body.utf8))
        #expect(answer.status == 200)
        let text = String(decoding: answer.data, as: UTF8.self)
        let dictionary = try #require((json(answer.data)["dictionaries"] as? [[String: Any]])?.first)
        #expect((dictionary["when"] as? [String: Any])?["date"] as? String == "2024-05-01T10:00:00.250Z")
        #expect((dictionary["id"] as? [String: Any])?["uuid"] as? String == Self.uuid.uuidString)
        #expect((dictionary["bytes"] as? [String: Any])?["data"] as? String == "AAH/")
        #expect(Self.token("double", in: text) == "199989")
        #expect(Self.token("i64", in: text) == "9007199254740993")
        // A date argument as ISO 8601 text, exact; as seconds since 2001 (the older form) too.
        for argument in [#"{"date": "2024-05-01T10:00:00.250Z"}"#, #"{"date": 736250400.25}"#, #"{"date": "2024-05-01T12:00:00.25+02:00"}"#] {
            let count = try exchange(server.url.appendingPathComponent("v1/fetch"), body: Data(
                #"{"entity": "Sample", "predicate": "when == %@", "arguments": [\#(argument)], "result": "count"}"#.utf8))
            #expect(json(count.data)["count"] as? Int == 1, "\(argument)")
        }
    }

    @Test("Through a remote store each way, every value is exactly the local store's: large integers, doubles, dates to the bit")
    func roundTrip() async throws {
        try await offThePool { try self.run_roundTrip() }
    }

    func run_roundTrip() throws {
        let (store, server) = try Self.served()
        defer { server.stop() }
        let remote = try RemoteStore(url: server.url, configuration: { var c = RemoteStoreConfiguration(); c.followsChanges = false; return c }())
        let request = FetchRequest(entityName: "Sample")
        let byKey = { (objects: [ManagedObject]) in objects.sorted { $0.objectID.primaryKey < $1.objectID.primaryKey } }
        let local = byKey(try ObjectContext(store: store).fetch(request))
        let fetched = byKey(try ObjectContext(store: remote).fetch(request))
        #expect(fetched.count == 1 + Self.edges.count)
        var compared = 0
        for (there, here) in zip(fetched, local) {
            for attribute in Self.model.entities[0].attributes {
                let (a, b) = (try there.value(forKey: attribute.name), try here.value(forKey: attribute.name))
                #expect(a == b, "\(attribute.name): \(a) from the server, \(b) in the store")
                if case .date(let d) = a, case .date(let e) = b {
                    #expect(d.timeIntervalSinceReferenceDate.bitPattern == e.timeIntervalSinceReferenceDate.bitPattern)
                }
                compared += 1
            }
        }
        #expect(compared == 13 * fetched.count)
        // The other way: saved through the remote store, stored exactly as given.
        let context = ObjectContext(store: remote)
        var keys: [Int64] = []
        for values in [Self.sample] + Self.edges {
            let object = try context.insert("Sample")
            for (name, value) in values { try object.setValue(value, forKey: name) }
            keys.append(0)
        }
        try context.save()
        let saved = byKey(try ObjectContext(store: store).fetch(request)).suffix(keys.count)
        for (object, values) in zip(saved, [Self.sample] + Self.edges) {
            for attribute in Self.model.entities[0].attributes {
                #expect(try object.value(forKey: attribute.name) == values[attribute.name] ?? .null, "\(attribute.name)")
            }
        }
    }

    @Test("A save's values are read in the plain forms and in the older typed forms; a malformed value is a 400 naming its place")
    func savedForms() async throws {
        try await offThePool { try self.run_savedForms() }
    }

    func run_savedForms() throws {
        let (store, server) = try Self.served()
        defer { server.stop() }
        let plain = #"""
        {"inserts": [{"temporaryID": -1, "entity": "Sample", "values": {"i64": 9007199254740993, "dbl": 3, "dec": 0.1,
          "when": "2024-05-01T10:00:00.000123Z", "id": "e621e1f8-c36c-495a-93fc-0c247a3e6e5f", "bytes": "AAH/", "flag": false}},
                     {"temporaryID": -2, "entity": "Sample", "values": {"i64": 5, "dbl": {"double": 3}, "dec": {"double": 0.1},
          "when": {"date": 736250400.000123}, "id": {"uuid": "E621E1F8-C36C-495A-93FC-0C247A3E6E5F"}, "bytes": {"data": "AAH/"}, "flag": false}}]}
        """#
        let answer = try exchange(server.url.appendingPathComponent("v1/save"), body: Data(plain.utf8))
        #expect(answer.status == 200, "\(String(decoding: answer.data, as: UTF8.self))")
        let keys = (json(answer.data)["keys"] as? [[String: Any]] ?? []).compactMap { $0["key"] as? Int }
        #expect(keys.count == 2)
        let context = ObjectContext(store: store)
        let objects = try context.fetch(FetchRequest(entityName: "Sample", predicate: "SELF IN %@",
                                                     arguments: [.array(keys.map { .object(ObjectReference(entity: "Sample", id: Int64($0))) })]))
            .sorted { $0.objectID.primaryKey < $1.objectID.primaryKey }
        #expect(objects.count == 2)
        for object in objects {
            #expect(try object.value(forKey: "dbl") == .double(3))
            #expect(try object.value(forKey: "dec") == .double(0.1))
            #expect(try object.value(forKey: "when") == .date(Date(timeIntervalSinceReferenceDate: 736_250_400.000123)))
            #expect(try object.value(forKey: "id") == .uuid(Self.uuid))
            #expect(try object.value(forKey: "bytes") == .data(Data([0, 1, 255])))
        }
        #expect(try objects.first?.value(forKey: "i64") == .int(9_007_199_254_740_993))
        // Not a value's form: a 400 naming the place, wherever it is (havingArguments without having too).
        for (path, body, field) in [
            ("v1/fetch", #"{"entity": "Sample", "predicate": "i64 == %@", "arguments": [{"when": 1}]}"#, "'arguments[0]'"),
            ("v1/fetch", #"{"entity": "Sample", "result": "count", "havingArguments": [1, {"double": "x"}]}"#, "'havingArguments[1]'"),
            ("v1/fetch", #"{"entity": "Sample", "result": "count", "arguments": [{"object": {"entity": "Sample", "id": 1, "x": 2}}]}"#, "'arguments[0]'"),
            ("v1/explain", #"{"entity": "Sample", "arguments": [{"date": "yesterday"}]}"#, "'arguments[0]'"),
            ("v1/save", #"{"inserts": [{"temporaryID": -1, "entity": "Sample", "values": {"when": "yesterday"}}]}"#, "when"),
            ("v1/save", #"{"inserts": [{"temporaryID": -1, "entity": "Sample", "values": {"id": {"uuid": "x"}}}]}"#, "UUID"),
        ] {
            let refused = try exchange(server.url.appendingPathComponent(path), body: Data(body.utf8))
            #expect(refused.status == 400, "\(body)")
            #expect((json(refused.data)["message"] as? String)?.contains(field) == true, "\(String(decoding: refused.data, as: UTF8.self))")
        }
    }

    @Test("ISO 8601 text of a date reads back as the same date, to the bit, across the years 1 to 9999")
    func exactDates() {
        let known: [(Double, String)] = [
            (0, "2001-01-01T00:00:00Z"), (700_000_000, "2023-03-08T20:26:40Z"), (736_250_400.25, "2024-05-01T10:00:00.250Z"),
            (-1.25, "2000-12-31T23:59:58.750Z"), (-978_307_200, "1970-01-01T00:00:00Z"), (-63_113_904_000, "0001-01-01T00:00:00Z"),
            (951_696_000, "2031-02-28T00:00:00Z"), (-31_622_400 + 86_400 * 59, "2000-02-29T00:00:00Z"),
            (0.001, "2001-01-01T00:00:00.001Z"), (-0.001, "2000-12-31T23:59:59.999Z"),
        ]
        for (seconds, text) in known {
            #expect(PredicateValue.exactISO8601Text(Date(timeIntervalSinceReferenceDate: seconds)) == text, "\(seconds)")
            #expect(PredicateValue.iso8601Date(text) == Date(timeIntervalSinceReferenceDate: seconds), "\(text)")
        }
        #expect(PredicateValue.exactISO8601Text(Date(timeIntervalSinceReferenceDate: 252_423_993_600)) == nil)  // 10000-01-01
        #expect(PredicateValue.exactISO8601Text(Date(timeIntervalSinceReferenceDate: -63_113_904_000.5)) == nil)
        #expect(PredicateValue.exactISO8601Text(Date(timeIntervalSinceReferenceDate: .nan)) == nil)
        #expect(PredicateValue.iso8601Date("2024-05-01T12:00:00.25+02:00") == Date(timeIntervalSinceReferenceDate: 736_250_400.25))
        #expect(PredicateValue.iso8601Date("2024-05-01T10:00:00.250000000000000000001Z") == Date(timeIntervalSinceReferenceDate: 736_250_400.25))
        #expect(PredicateValue.exactISO8601Date("2024-02-30T10:00:00Z") == nil)
        // Random dates in the range, of every precision a double has there: each text reads back as its date.
        var generator = SystemRandomNumberGenerator()
        for round in 0..<20_000 {
            let seconds: Double = switch round % 4 {
            case 0: Double.random(in: -63_113_904_000..<252_423_993_600, using: &generator)
            case 1: Double.random(in: -1_000_000_000..<1_000_000_000, using: &generator)
            case 2: Double.random(in: -2...2, using: &generator)
            default: (Double(Int64.random(in: -1_000_000_000_000...1_000_000_000_000, using: &generator)) / 1000)
            }
            let date = Date(timeIntervalSinceReferenceDate: seconds)
            guard let text = PredicateValue.exactISO8601Text(date) else {
                Issue.record("no text for \(seconds)")
                continue
            }
            let back = PredicateValue.iso8601Date(text)
            #expect(back?.timeIntervalSinceReferenceDate.bitPattern == seconds.bitPattern, "\(seconds) \(text)")
        }
    }

    @Test("The encoder and decoder by type: plain where the type says how to read it back, typed otherwise, older forms read")
    func byType() throws {
        func roundTrip(_ value: PredicateValue, _ type: AttributeType) throws -> PredicateValue {
            let data = try JSONEncoder().encode(WireValue.container(json: WireValue.encode(value, as: type)))
            return try WireValue.decode(try JSONDecoder().decode(OpenAPIValueContainerProxy.self, from: data).value, as: type)
        }
        let cases: [(PredicateValue, AttributeType)] = [
            (.int(9_007_199_254_740_993), .integer64), (.int(.min), .integer64), (.double(199_989), .double), (.double(.nan), .double),
            (.double(-.infinity), .float), (.double(1e300), .decimal), (.double(2.5), .integer64), (.double(2), .integer32),
            (.date(Date(timeIntervalSinceReferenceDate: 1e12)), .date), (.date(Date(timeIntervalSinceReferenceDate: 0.1)), .date),
            (.string("2024-05-01"), .string), (.data(Data()), .binary), (.uuid(Self.uuid), .uuid), (.bool(false), .boolean),
            (.int(1), .boolean), (.array([.int(1), .date(Date(timeIntervalSinceReferenceDate: 3))]), .undefined),
            (.dictionary(["a": .double(1)]), .undefined), (.object(ObjectReference(entity: "E", id: 3)), .objectID),
        ]
        for (value, type) in cases {
            let back = try roundTrip(value, type)
            if case .double(let d) = value, d.isNaN {
                guard case .double(let e) = back, e.isNaN else { Issue.record("nan came back as \(back)"); continue }
            } else {
                #expect(back == value, "\(value) as \(type)")
            }
        }
        // The older typed forms, read where an attribute's plain form is.
        #expect(try WireValue.decode(["double": 3] as [String: (any Sendable)?], as: .double) == .double(3))
        #expect(try WireValue.decode(["date": 10] as [String: (any Sendable)?], as: .date) == .date(Date(timeIntervalSinceReferenceDate: 10)))
        #expect(try WireValue.decode(3, as: .double) == .double(3))
        #expect(throws: WireError.self) { try WireValue.decode("not a date", as: .date) }
        #expect(throws: WireError.self) { try WireValue.decode("&&&", as: .binary) }
    }
}

/// A JSON value decoded as the generated code decodes a `Value`.
private struct OpenAPIValueContainerProxy: Decodable {
    let value: (any Sendable)?
    init(from decoder: any Decoder) throws {
        value = try Components.Schemas.Value(from: decoder).value
    }
}
