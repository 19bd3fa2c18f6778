// Helpers shared by the front-end tests: fixture files and the corpus format.

import Foundation
import Sift

/// Files the tests read.
enum Fixtures {
    /// A file copied into the test bundle (Tests/SiftTests/Fixtures).
    static func data(_ name: String) throws -> Data {
        guard let url = Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil) else {
            throw FixtureError.missing(name)
        }
        return try Data(contentsOf: url)
    }

    /// The repository's top folder, found from this file's path.
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// A file of the repository, such as `Grammar/Corpus/valid.txt`.
    static func repositoryFile(_ path: String) throws -> String {
        try String(contentsOf: repositoryRoot.appendingPathComponent(path), encoding: .utf8)
    }

    /// `../shared/peers/predicate-formats.jsonl`, when it is beside the checkout.
    static let peersURL = repositoryRoot.deletingLastPathComponent()
        .appendingPathComponent("shared/peers/predicate-formats.jsonl")
}

enum FixtureError: Error { case missing(String) }

/// One line of `corpus.jsonl`.
struct CorpusCase: Decodable, Sendable, CustomTestStringConvertible {
    enum Expectation: Decodable, Sendable, Equatable {
        case matches([Int64])
        case error(String)

        init(from decoder: any Decoder) throws {
            if let ids = try? [Int64](from: decoder) {
                self = .matches(ids)
            } else {
                struct ErrorForm: Decodable { var error: String }
                self = .error(try ErrorForm(from: decoder).error)
            }
        }
    }

    var id: String
    var entity: String
    var predicate: String
    var args: [PredicateValue]?
    var expect: Expectation

    var testDescription: String { id }

    /// Every case of the corpus fixture.
    static let all: [CorpusCase] = {
        guard let data = try? Fixtures.data("corpus.jsonl") else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode(CorpusCase.self, from: Data($0.utf8))
        }
    }()
}

import Testing

extension CustomTestStringConvertible {}

/// The conformance data set, loaded once.
enum Company {
    static let dataSet: DataSet = {
        do {
            return try DataSet(json: Fixtures.data("company.json"))
        } catch {
            fatalError("company.json does not load: \(error)")
        }
    }()
    static var model: DataModel { dataSet.model }
    static let cache: RowCache = dataSet.makeRowCache()
}

import SiftStore

/// The conformance data set in an in-memory SQLite store, loaded once.
enum CompanyStore {
    static let store: SQLiteStore = {
        do {
            let store = try SQLiteStore(inMemoryWith: Company.model)
            try store.importDataSet(Company.dataSet)
            return store
        } catch {
            fatalError("company.json does not import: \(error)")
        }
    }()
}
