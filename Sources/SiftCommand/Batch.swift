// `sift batch`: run a corpus of predicates against a data set.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Batch: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run every predicate of a corpus against a data set, one JSON line per case.",
        discussion: """
            CORPUS has one JSON object a line: {"id", "entity", "predicate", "args"?}. Each output \
            line is {"id", "matches": [sorted ids]} or {"id", "error": {"kind", "message", "line", \
            "column"}}, in input order. Exit status 0 when the files could be read, whatever the \
            cases gave.
            """
    )

    enum Backend: String, ExpressibleByArgument, CaseIterable {
        /// The memory lowering over the data set's row-cache nodes.
        case memory
        /// A temporary in-memory SQLite store holding the data set.
        case sqlite
        /// The data set file opened as an atomic store (nothing is saved).
        case atomic
        /// A PostgreSQL store (`--postgres`) in a schema of its own, holding
        /// the data set, removed afterwards.
        case postgres
    }

    @Option(help: ArgumentHelp("The JSON data set (model and objects).", valueName: "dataset"))
    var data: String

    @Option(help: ArgumentHelp("The corpus, one case a line.", valueName: "corpus"))
    var corpus: String

    @Option(help: "Where predicates run.")
    var backend: Backend = .memory

    @Option(help: ArgumentHelp("The PostgreSQL server of the postgres backend: postgres://user@host[:port]/database.",
                               valueName: "url"))
    var postgres: String?

    func validate() throws {
        if backend == .postgres, postgres == nil { throw ValidationError("the postgres backend needs a server (--postgres)") }
    }

    struct Case: Decodable {
        var id: String
        var entity: String
        var predicate: String
        var args: [PredicateValue]?
    }

    func run() throws {
        let dataSet = try loadDataSet(data)
        guard let corpusData = FileManager.default.contents(atPath: corpus) else {
            throw CommandFailure(.noInput, "cannot read '\(corpus)'")
        }
        let cache = dataSet.makeRowCache()
        // Read once for every case: one snapshot, whose tables keep each entity's nodes in key
        // order and the columns the predicates read.
        let domain = RowNodeDomain(cache: cache)
        let compiler = PredicateCompiler(model: dataSet.model)
        var context: ObjectContext?
        var scratch: (any SQLPersistentStore)?
        defer { destroyServerStore(scratch) }
        do {
            switch backend {
            case .memory:
                break
            case .sqlite:
                let store = try SQLiteStore(inMemoryWith: dataSet.model)
                try store.importDataSet(dataSet)
                context = ObjectContext(store: store)
            case .atomic:
                context = ObjectContext(store: try AtomicStore(url: URL(fileURLWithPath: data)))
            case .postgres:
                let store = try openServerStore(url: postgres ?? "", model: dataSet.model,
                                                schemaName: "sift_batch_\(UUID().uuidString.prefix(12).lowercased())")
                scratch = store
                try store.importDataSet(dataSet)
                context = ObjectContext(store: store)
            }
        } catch {
            throw CommandFailure(.noInput, "\(error)")
        }
        for (number, line) in String(decoding: corpusData, as: UTF8.self).split(separator: "\n").enumerated() {
            guard let entry = try? JSONDecoder().decode(Case.self, from: Data(line.utf8)) else {
                print(BatchOutput.error(id: "line \(number + 1)", kind: "syntax", message: "not a corpus case", position: nil))
                continue
            }
            do {
                let bound = try compiler.bind(entry.predicate, arguments: entry.args ?? [], entity: entry.entity)
                if let context {
                    var request = FetchRequest(entityName: entry.entity)
                    request.predicate = .bound(bound)
                    do {
                        let ids = try context.fetchObjectIDs(request).map(\.primaryKey)
                        print(BatchOutput.matches(id: entry.id, ids: ids))
                    } catch {
                        print(BatchOutput.error(id: entry.id, kind: "evaluation", message: "\(error)", position: nil))
                    }
                } else {
                    do throws(EvaluationError) {
                        guard let entity = dataSet.model.entity(named: entry.entity) else { continue }
                        let table = domain.snapshot.table(entity: entity.index)
                        let rows = try MemoryPredicate(bound, domain: domain).matchingRows(in: table)
                        // The table is in key order: the keys come out sorted.
                        print(BatchOutput.matches(id: entry.id, sortedIDs: rows.map { table.nodes[$0].id.primaryKey }))
                    } catch {
                        print(BatchOutput.error(id: entry.id, kind: "evaluation", message: "\(error)", position: nil))
                    }
                }
            } catch {
                let position = SourcePosition(offset: error.range.lowerBound, in: entry.predicate)
                print(BatchOutput.error(id: entry.id, kind: error.kind, message: error.message, position: position))
            }
        }
    }
}

/// The JSON lines `sift batch` prints, in the one style of JSON lines:
/// compact, keys sorted.
enum BatchOutput {
    static func matches(id: String, ids: [Int64]) -> String {
        matches(id: id, sortedIDs: ids.sorted())
    }

    /// The line of a case's matches, from keys already in increasing order
    /// (written straight out: a case can match a hundred thousand objects).
    static func matches(id: String, sortedIDs ids: [Int64]) -> String {
        var bytes = Array((#"{"id":"# + JSONText.compact(.string(id)) + #","matches":["#).utf8)
        bytes.reserveCapacity(bytes.count + ids.count * 8 + 2)
        var digits = [UInt8](repeating: 0, count: 20)
        for (index, key) in ids.enumerated() {
            if index > 0 { bytes.append(UInt8(ascii: ",")) }
            if key < 0 { bytes.append(UInt8(ascii: "-")) }
            var magnitude = key.magnitude
            var end = digits.count
            repeat {
                end -= 1
                digits[end] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            bytes.append(contentsOf: digits[end...])
        }
        bytes.append(contentsOf: "]}".utf8)
        return String(decoding: bytes, as: UTF8.self)
    }

    static func error(id: String, kind: String, message: String, position: SourcePosition?) -> String {
        var fields: [String: PredicateValue] = ["kind": .string(kind), "message": .string(message)]
        if let position {
            fields["line"] = .int(Int64(position.line))
            fields["column"] = .int(Int64(position.column))
        }
        return JSONText.compact(.dictionary(["id": .string(id), "error": .dictionary(fields)]))
    }
}
