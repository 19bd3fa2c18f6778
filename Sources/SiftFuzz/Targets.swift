// Fuzzing: the targets. Each takes one input of bytes and runs it through a
// part of Sift; an input that breaks a law Sift keeps ends the process with
// `fatalError` (which libFuzzer reports as a crash and saves), and anything
// else — a typed error included — is a pass.
//
//   parser    text → PredicateParser; an accepted predicate must print to a
//             form that parses back to the same tree.
//   pipeline  text (+ JSON arguments, one per line after the first) →
//             parse, bind, optimize, memory and SQLite on the conformance
//             data set; both backends must give the same objects.
//   model     bytes → the JSON model, data set and Xcode model loaders, and
//             Core Data's compiled forms (keyed archives, the model cache).
//   store     bytes → a file opened as an SQLite store and as an atomic store.
//   values    text (a predicate, then a JSON value) → FormatPredicate, with no
//             model; the value as a value tree and as the dictionaries
//             JSONSerialization gives must get the same answer, and so must
//             the value as a one-row column table (`ValueColumns`).

import Foundation
import Sift
import SiftStore

/// One fuzz target: a name and what it does with an input.
struct FuzzTarget: Sendable {
    let name: String
    let run: @Sendable (Data) -> Void

    static let all: [FuzzTarget] = [
        FuzzTarget(name: "parser", run: ParserTarget.run),
        FuzzTarget(name: "pipeline", run: PipelineTarget.run),
        FuzzTarget(name: "model", run: LoaderTarget.run),
        FuzzTarget(name: "store", run: StoreTarget.run),
        FuzzTarget(name: "values", run: ValuesTarget.run),
    ]

    static func named(_ name: String) -> FuzzTarget? { all.first { $0.name == name } }
}

/// The largest input a target reads; libFuzzer's `-max_len` keeps to less.
let maximumInput = 1 << 16

enum ParserTarget {
    @Sendable static func run(_ data: Data) {
        guard data.count <= maximumInput else { return }
        let text = String(decoding: data, as: UTF8.self)
        guard let tree = try? PredicateParser.parse(text) else { return }
        let printed = tree.canonicalFormat
        let reparsed: PredicateSyntax
        do {
            reparsed = try PredicateParser.parse(printed.format, arguments: printed.arguments)
        } catch {
            fatalError("the printed form does not parse: \(text.debugDescription) printed as \(printed.format.debugDescription): \(error)")
        }
        guard reparsed == tree else {
            fatalError("round trip changed the tree: \(text.debugDescription) printed as \(printed.format.debugDescription)")
        }
    }
}

/// The conformance data set, in memory and in an SQLite store, made once.
/// Fuzzing runs on one thread.
final class World {
    let dataSet: DataSet
    let cache: RowCache
    let store: SQLiteStore
    let compiler: PredicateCompiler

    init() {
        let path = ProcessInfo.processInfo.environment["SIFT_FUZZ_DATA"] ?? "Tests/SiftTests/Fixtures/company.json"
        do {
            dataSet = try DataSet(contentsOf: URL(fileURLWithPath: path))
            cache = dataSet.makeRowCache()
            store = try SQLiteStore(inMemoryWith: dataSet.model)
            try store.importDataSet(dataSet)
        } catch {
            fatalError("cannot load the data set at \(path) (set SIFT_FUZZ_DATA): \(error)")
        }
        compiler = PredicateCompiler(model: dataSet.model)
    }

    nonisolated(unsafe) static let shared = World()
}

enum PipelineTarget {
    static let entities = ["Employee", "Department", "Tag"]

    @Sendable static func run(_ data: Data) {
        guard data.count <= maximumInput else { return }
        let world = World.shared
        var lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false)
        let text = String(lines.removeFirst())
        let arguments = lines.compactMap { try? JSONDecoder().decode(PredicateValue.self, from: Data($0.utf8)) }
        // The entity is chosen by the text, so one input always means the same.
        let entity = entities[text.utf8.reduce(0) { ($0 &+ Int($1)) & 0xFFFF } % entities.count]
        let bound: BoundPredicate
        do {
            bound = try world.compiler.bind(text, arguments: arguments, entity: entity)
        } catch {
            _ = error.rendered(in: text)
            return
        }
        var memory: [Int64]?
        do {
            memory = try world.cache.nodes(of: entity, matching: bound).map(\.id.primaryKey)
        } catch {
            memory = nil
        }
        var request = FetchRequest(entityName: entity)
        request.predicate = .bound(bound)
        let sql: [Int64]?
        do {
            sql = try ObjectContext(store: world.store).fetchObjectIDs(request).map(\.primaryKey).sorted()
        } catch StoreError.evaluation {
            sql = nil
        } catch {
            fatalError("memory answered but SQLite failed: \(text.debugDescription) \(arguments): \(error)")
        }
        let lowered = text.lowercased()
        guard let memory, let sql, !lowered.contains("random"), !lowered.contains("now") else { return }
        guard memory.sorted() == sql else {
            fatalError("""
                memory and SQLite disagree on \(text.debugDescription) \(arguments) (\(entity)):
                memory \(memory.sorted())
                sqlite \(sql)
                """)
        }
    }
}

enum LoaderTarget {
    @Sendable static func run(_ data: Data) {
        guard data.count <= maximumInput, let first = data.first else { return }
        let rest = data.dropFirst()
        switch first % 6 {
        case 0: _ = try? DataModel(json: Data(rest))
        case 1: _ = try? DataSet(json: Data(rest))
        case 2: _ = try? DataModel(xcdatamodelXML: Data(rest))
        case 3: _ = try? DataModel(compiledModel: Data(rest)).entityVersionHashes
        case 4: _ = try? DataModel(xcode3Elements: Data(rest))
        default: _ = try? DataModel(modelCache: Data(rest))
        }
    }
}

enum StoreTarget {
    /// A scratch folder in memory where there is one (/dev/shm), so a run is
    /// not bound by the disk.
    static let directory = (FileManager.default.fileExists(atPath: "/dev/shm")
        ? URL(fileURLWithPath: "/dev/shm") : FileManager.default.temporaryDirectory)
        .appendingPathComponent("sift-fuzz-\(ProcessInfo.processInfo.processIdentifier)")

    @Sendable static func run(_ data: Data) {
        guard data.count <= maximumInput * 4 else { return }
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let url = directory.appendingPathComponent("store")
        for suffix in ["", "-wal", "-shm", "-journal"] {
            try? FileManager.default.removeItem(atPath: url.path + suffix)
        }
        guard FileManager.default.createFile(atPath: url.path, contents: data) else { return }
        if let store = try? SQLiteStore(url: url) {
            let context = ObjectContext(store: store)
            for entity in store.model.entities {
                _ = try? context.fetch(FetchRequest(entityName: entity.name))
            }
        }
        if let store = try? AtomicStore(url: url) {
            let context = ObjectContext(store: store)
            for entity in store.model.entities {
                _ = try? context.fetch(FetchRequest(entityName: entity.name))
            }
        }
    }
}

enum ValuesTarget {
    @Sendable static func run(_ data: Data) {
        guard data.count <= maximumInput else { return }
        let text = String(decoding: data, as: UTF8.self)
        let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
        guard let predicate = try? FormatPredicate(format: String(lines[0])) else { return }
        let json = Data((lines.count > 1 ? String(lines[1]) : "null").utf8)
        // Sift's own JSON reader takes any bytes without crashing.
        _ = try? JSONReader.value(from: json)
        guard let tree = try? JSONDecoder().decode(PredicateValue.self, from: json),
              let foundation = try? JSONSerialization.jsonObject(with: json, options: .fragmentsAllowed),
              // The two JSON readers must have read the same value (duplicate
              // keys, numbers written as reals): otherwise there is nothing to compare.
              PredicateValue(plain: foundation) == tree else { return }
        let a = Result { () throws(PredicateEvaluationError) in try predicate.evaluate(with: tree) }
        // The value as a one-row column table: the same answer, or an error on both.
        let columns = Result { () throws(PredicateEvaluationError) in
            try predicate.matchingIndices(ValueColumns(plain: [tree])) == [0]
        }
        switch (a, columns) {
        case (.success(let x), .success(let y)) where x != y:
            fatalError("value tree and columns disagree (\(x) vs \(y)): \(text.debugDescription)")
        case (.success, .failure(let e)), (.failure(let e), .success):
            fatalError("one of value tree and columns failed (\(e)): \(text.debugDescription)")
        default:
            break
        }
        // Dates are written {"date": N}: only the value tree reads them as dates.
        guard !text.contains("\"date\"") else { return }
        let b = Result { () throws(PredicateEvaluationError) in try predicate.evaluate(with: foundation) }
        switch (a, b) {
        case (.success(let x), .success(let y)) where x != y:
            fatalError("value tree and Foundation values disagree (\(x) vs \(y)): \(text.debugDescription)")
        case (.success, .failure(let e)), (.failure(let e), .success):
            fatalError("one side failed (\(e)): \(text.debugDescription)")
        default:
            return
        }
    }
}
