// Hostile model and data set files: JSON models, JSON data sets (and the
// atomic stores kept in them) and Xcode models that are damaged or built to
// break the loader. Each is a typed error whose message names the file, the
// entity or the key at fault; none is read wrongly.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Hostile models and data sets")
struct HostileModelTests {
    /// A data set with one entity "E" of one attribute "n" of `type`, and
    /// one object whose "n" is the JSON text `value`.
    static func dataSet(_ type: String, _ value: String) -> String {
        #"{"model": {"entities": [{"name": "E", "attributes": [{"name": "n", "type": "\#(type)"}]}]}, "#
            + #""objects": {"E": [{"id": 1, "n": \#(value)}]}}"#
    }

    /// What loading `bytes` as a data set, as a model and as an atomic store
    /// throws; each must throw, and every message must name the file and
    /// contain `fragments`.
    static func expectRejected(_ bytes: Data, _ fragments: [String], asModel: Bool = true,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let folder = try ScratchFolder()
        let file = try folder.file("hostile.json", bytes)
        var messages: [String] = []
        if let error = #expect(throws: DataSetError.self, sourceLocation: sourceLocation, performing: {
            try DataSet(contentsOf: file)
        }) { messages.append(error.description) }
        if let error = #expect(throws: StoreError.self, sourceLocation: sourceLocation, performing: {
            try AtomicStore(url: file)
        }) { messages.append(error.description) }
        if asModel, let error = #expect(throws: ModelError.self, sourceLocation: sourceLocation, performing: {
            try DataModel(contentsOf: file)
        }) { messages.append(error.description) }
        for message in messages {
            #expect(message.contains(file.path) || !message.contains("'JSON'"), "\(message)", sourceLocation: sourceLocation)
            for fragment in fragments {
                #expect(message.contains(fragment), "\(message)", sourceLocation: sourceLocation)
            }
        }
        // An atomic store that does not open leaves its file alone.
        #expect(contents(file) == bytes, sourceLocation: sourceLocation)
    }

    @Test("Values that do not fit their attribute", arguments: [
        ("integer64", #""five""#, ["'E' 1", "'n'", "integer64", "string"]),
        ("integer64", "99999999999999999999999", ["'E' 1", "'n'", "integer64"]),
        ("integer64", "-9223372036854775809", ["'E' 1", "'n'", "integer64"]),
        ("integer64", "9223372036854775808", ["'E' 1", "'n'", "integer64"]),
        ("integer16", "99999", ["'E' 1", "'n'", "99999", "integer16"]),
        ("integer32", "-2147483649", ["'E' 1", "'n'", "integer32"]),
        ("integer32", "1.5", ["'E' 1", "'n'", "integer32"]),
        ("double", #"{"x": 1}"#, ["'E' 1", "'n'", "double"]),
        ("boolean", "2", ["'E' 1", "'n'", "boolean"]),
        ("uuid", #""not-a-uuid""#, ["'E' 1", "'n'", "uuid"]),
    ])
    func valuesOfTheWrongType(_ type: String, _ value: String, _ fragments: [String]) throws {
        try Self.expectRejected(Data(Self.dataSet(type, value).utf8), fragments, asModel: false)
    }

    @Test func integersAtTheEdgesStillLoad() throws {
        for (type, value, expected) in [("integer64", "-9223372036854775808", Int64.min),
                                        ("integer64", "9223372036854775807", Int64.max),
                                        ("integer16", "-32768", -32768), ("integer32", "2147483647", 2_147_483_647),
                                        ("integer64", "1e15", 1_000_000_000_000_000)] {
            let dataSet = try DataSet(json: Data(Self.dataSet(type, value).utf8))
            #expect(dataSet.nodes.first?.values == [.int(expected)], "\(type) \(value)")
        }
    }

    @Test("Numbers no JSON reader can hold", arguments: ["1e400", "-1e400"])
    func hugeNumbers(_ value: String) throws {
        try Self.expectRejected(Data(Self.dataSet("double", value).utf8), ["not valid JSON", "1e400"])
    }

    @Test func anIdThatIsNotAnInteger() throws {
        let text = #"{"model": {"entities": [{"name": "E"}]}, "objects": {"E": [{"id": 99999999999999999999999}]}}"#
        try Self.expectRejected(Data(text.utf8), ["'E'", "\"id\"", "not a 64-bit integer"], asModel: false)
    }

    @Test("Broken models", arguments: [
        (#"{"entities": [{"name": "E"}, {"name": "E"}]}"#, ["two entities named 'E'"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n", "type": "string"}, {"name": "n", "type": "double"}]}]}"#,
         ["'E'", "two properties named 'n'"]),
        (#"{"entities": [{"name": "E", "relationships": [{"name": "r", "destination": "Nowhere"}]}]}"#,
         ["'E.r'", "'Nowhere'"]),
        (#"{"entities": [{"attributes": []}]}"#, ["missing 'name'", "at entities[0]"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n"}]}]}"#, ["missing 'type'", "at entities[0].attributes[0]"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n", "type": 5}]}]}"#, ["at entities[0].attributes[0].type"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n", "type": "complex"}]}]}"#, ["'E.n'", "'complex'"]),
        (#"{"entities": [{"name": ""}]}"#, ["entity 1", "no name"]),
        (#"{"entities": [{"name": "E\u0000x"}]}"#, ["control character"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n\u0000", "type": "string"}]}]}"#, ["control character"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n", "type": "integer64", "default": "abc"}]}]}"#,
         ["'E.n'", "default", "integer64"]),
        (#"{"entities": [{"name": "E", "attributes": [{"name": "n", "type": "integer16", "default": 70000}]}]}"#,
         ["'E.n'", "default", "integer16"]),
        (#"{"entities": "E"}"#, ["at entities"]),
        (#"[1, 2]"#, []),
    ])
    func brokenModels(_ model: String, _ fragments: [String]) throws {
        try Self.expectRejected(Data(model.utf8), fragments + [], asModel: true, modelOnly: true)
        try Self.expectRejected(Data(#"{"model": \#(model), "objects": {}}"#.utf8), fragments)
    }

    @Test func deeplyNestedJSON() throws {
        let deep = String(repeating: "[", count: 100_000)
        try Self.expectRejected(Data(deep.utf8), ["not valid JSON"])
        try Self.expectRejected(Data(#"{"model": {"entities": []}, "objects": \#(deep)}"#.utf8), ["not valid JSON"])
        let deepObjects = String(repeating: #"{"a":"#, count: 100_000)
        try Self.expectRejected(Data(deepObjects.utf8), ["not valid JSON"])
    }

    @Test func invalidUTF8() throws {
        let prefix = #"{"model": {"entities": [{"name": "E", "attributes": [{"name": "n", "type": "string"}]}]}, "objects": {"E": [{"id": 1, "n": ""#
        try Self.expectRejected(Data(prefix.utf8) + Data([0xC3, 0x28, 0xFF]) + Data(#""}]}}"#.utf8), ["not valid JSON"])
        try Self.expectRejected(Data([0xFF, 0xFE, 0x7B, 0x7D]), [])
    }

    @Test func emptyAndBlankFiles() throws {
        for text in ["", "  \n\t "] {
            try Self.expectRejected(Data(text.utf8), ["empty"])
        }
    }

    @Test func missingObjects() throws {
        try Self.expectRejected(Data(#"{"model": {"entities": []}}"#.utf8), ["objects"], asModel: false)
        try Self.expectRejected(Data(#"{"objects": {}}"#.utf8), ["model"], asModel: false)
    }
}

extension HostileModelTests {
    /// For a bare model: only `DataModel(contentsOf:)` reads it (a data set
    /// or store needs objects too, and fails on that first).
    static func expectRejected(_ bytes: Data, _ fragments: [String], asModel: Bool, modelOnly: Bool,
                               sourceLocation: SourceLocation = #_sourceLocation) throws {
        let folder = try ScratchFolder()
        let file = try folder.file("model.json", bytes)
        let error = #expect(throws: ModelError.self, sourceLocation: sourceLocation) { try DataModel(contentsOf: file) }
        for fragment in fragments {
            #expect(error?.description.contains(fragment) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
        }
        if case .unreadable(let path, _)? = error { #expect(path == file.path, sourceLocation: sourceLocation) }
    }
}

@Suite("Hostile Xcode models")
struct HostileXcodeModelTests {
    static func load(_ xml: Data) throws -> (URL, ScratchFolder) {
        let folder = try ScratchFolder()
        let bundle = folder.url.appendingPathComponent("Hostile.xcdatamodel")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        try xml.write(to: bundle.appendingPathComponent("contents"))
        return (bundle, folder)
    }

    static func expectRejected(_ xml: String, _ fragments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        try expectRejected(Data(xml.utf8), fragments, sourceLocation: sourceLocation)
    }

    static func expectRejected(_ xml: Data, _ fragments: [String], sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (bundle, folder) = try load(xml)
        let error = #expect(throws: ModelError.self, sourceLocation: sourceLocation) { try DataModel(contentsOf: bundle) }
        for fragment in fragments {
            #expect(error?.description.contains(fragment) == true, "\(String(describing: error))", sourceLocation: sourceLocation)
        }
        if case .unreadable(let path, _)? = error {
            #expect(path == bundle.appendingPathComponent("contents").path, sourceLocation: sourceLocation)
        }
        _ = folder
    }

    static func model(_ entities: String) -> String {
        #"<?xml version="1.0" encoding="UTF-8" standalone="yes"?><model type="com.apple.IDECoreDataModeler.DataModel">"#
            + entities + "</model>"
    }

    @Test("Broken Xcode models", arguments: [
        (#"<model><entity name="E">"#, ["XML"]),
        (#"<model><entity name="E"><attribute name="a" attributeType="String"/></entity>"#, ["XML"]),
        ("", ["no XML elements"]),
        (#"<?xml version="1.0"?><plist><dict/></plist>"#, ["<plist>", "not <model>"]),
        (#"<model><entity name="E"><attribute name="a" attributeType="Quux"/></entity></model>"#, ["'E.a'", "'Quux'"]),
        (#"<model><entity name="E"><attribute name="a" attributeType="Composite" composite="Gone"/></entity></model>"#,
         ["'E.a'", "Composite Gone"]),
        (#"<model><entity name="E"><attribute name="a.b" attributeType="String"/></entity></model>"#, ["'E.a.b'", "dot"]),
        (#"<model><entity><attribute name="a" attributeType="String"/></entity></model>"#, ["entity 1", "no name"]),
        (#"<model><entity name="E"><attribute attributeType="String"/></entity></model>"#, ["'E'", "empty name"]),
        (#"<model><entity name="E"/><entity name="E"/></model>"#, ["two entities named 'E'"]),
        (#"<model><entity name="E"><attribute name="a" attributeType="String"/><relationship name="a" destinationEntity="E"/></entity></model>"#,
         ["'E'", "two properties named 'a'"]),
        (#"<model><entity name="E"><relationship name="r" destinationEntity="Gone"/></entity></model>"#, ["'E.r'", "'Gone'"]),
        (#"<model><entity name="E"><relationship name="r"/></entity></model>"#, ["'E.r'"]),
        (#"<model><entity name="A" parentEntity="B"/><entity name="B" parentEntity="A"/></model>"#, ["'A'", "'B'", "inherit"]),
        (#"<model><entity name="Manager" parentEntity="Person"/><entity name="Employee"/></model>"#, ["'Manager'", "'Person'"]),
        (#"<model><entity name="A" parentEntity="A"/></model>"#, ["'A' → 'A'"]),
        (#"<model><entity name="A"><attribute name="x" attributeType="String"/></entity><entity name="B" parentEntity="A"><attribute name="x" attributeType="String"/></entity></model>"#,
         ["'B'", "two properties named 'x'"]),
        (#"<model><entity name="E"/><fetchRequest name="all" entity="Gone"/></model>"#, ["'all'", "'Gone'"]),
        (#"<model><entity name="E"/><configuration name="C"><memberEntity name="Gone"/></configuration></model>"#, ["'C'", "'Gone'"]),
        (#"<model><entity name="E&#0;"/></model>"#, ["XML"]),
        // Foundation's XMLParser dereferences nil for a processing instruction without data.
        (#"<?xml version="1.0"?><?x?><model/>"#, ["processing instruction", "offset 21"]),
        (#"<?x?>"#, ["processing instruction", "offset 0"]),
    ])
    func brokenModels(_ xml: String, _ fragments: [String]) throws {
        try Self.expectRejected(xml, fragments)
    }

    @Test func invalidUTF8() throws {
        try Self.expectRejected(Data(#"<model><entity name="E"#.utf8) + Data([0xC3, 0x28, 0xFF]) + Data(#""/></model>"#.utf8),
                                ["not UTF-8", "offset 22"])
    }

    @Test func entityExpansionIsRefused() throws {
        var entities = #"<!ENTITY l0 "lol">"#
        for level in 1...9 {
            entities += "<!ENTITY l\(level) \"" + String(repeating: "&l\(level - 1);", count: 10) + "\">"
        }
        let xml = #"<?xml version="1.0"?><!DOCTYPE model [\#(entities)]><model><entity name="&l9;"/></model>"#
        let start = Date()
        try Self.expectRejected(xml, [])
        #expect(Date().timeIntervalSince(start) < 10)
    }

    @Test func deeplyNestedXML() throws {
        let xml = "<model>" + String(repeating: "<a>", count: 100_000) + String(repeating: "</a>", count: 100_000) + "</model>"
        // Deep, but harmless: the reader keeps nothing of unknown elements.
        let (bundle, folder) = try Self.load(Data(xml.utf8))
        do {
            let model = try DataModel(contentsOf: bundle)
            #expect(model.entities.isEmpty)
        } catch {
            #expect(error.description.contains("XML"))
        }
        _ = folder
    }
}
