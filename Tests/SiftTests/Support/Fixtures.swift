// Helpers shared by the tests: fixture files, the corpus format, the company
// data set and stores made from it.

import Foundation
import Sift
import SiftPostgres
import SiftRemote
import SiftStore
import Testing

/// Files the tests read.
enum Fixtures {
    /// A file copied into the test bundle (Tests/SiftTests/Fixtures).
    static func data(_ name: String) throws -> Data {
        guard let url = Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil) else {
            throw FixtureError.missing(name)
        }
        return try Data(contentsOf: url)
    }

    /// The repository's top folder, found from this file's path
    /// (Tests/SiftTests/Support/Fixtures.swift).
    static let repositoryRoot = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

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

    /// Every case of the conformance corpus (`corpus.jsonl`, from
    /// `../shared/conformance`) and of the Apple-parity cases
    /// (`parity.jsonl`: integer division, LIKE escapes, options on numbers,
    /// collection equality, SUBQUERY scope, dates as strings, nil members,
    /// functions by selector; expected results worked out from the data set
    /// by an independent script), which every backend runs.
    static let all: [CorpusCase] = conformance + parity

    /// The conformance corpus alone.
    static let conformance: [CorpusCase] = load("corpus.jsonl")

    /// The Apple-parity cases alone.
    static let parity: [CorpusCase] = load("parity.jsonl")

    static func load(_ fixture: String) -> [CorpusCase] {
        guard let data = try? Fixtures.data(fixture) else { return [] }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode(CorpusCase.self, from: Data($0.utf8))
        }
    }
}


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

/// The kinds of store a context works on, for tests that must hold on each:
/// SQLite, atomic, incremental stores on a backend of one's own (a server
/// that evaluates only `name ==` itself, and one that evaluates everything),
/// and PostgreSQL when a server is configured (`SIFT_POSTGRES_URL`; `.ci/run`
/// starts one).
enum StoreKind: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case sqlite, atomic, incremental, incrementalEverything, remote, postgres

    static let postgresURL = ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"]

    /// Every kind this run can make.
    static var allCases: [StoreKind] {
        let local: [StoreKind] = [.sqlite, .atomic, .incremental, .incrementalEverything, .remote]
        return postgresURL == nil ? local : local + [.postgres]
    }

    /// The kinds kept in a local file (or memory).
    static let local: [StoreKind] = [.sqlite, .atomic]

    var testDescription: String { rawValue }

    /// A new store of this kind holding `dataSet` (the company data set when not given).
    func make(_ dataSet: DataSet = Company.dataSet) throws -> TestStore {
        switch self {
        case .sqlite:
            let store = try SQLiteStore(inMemoryWith: dataSet.model)
            try store.importDataSet(dataSet)
            return TestStore(store, file: nil)
        case .atomic:
            let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-test-\(UUID().uuidString).json")
            let store = try AtomicStore(url: url, model: dataSet.model)
            try store.importDataSet(dataSet)
            return TestStore(store, file: url)
        case .incremental, .incrementalEverything:
            let backend = try ServerBackend(dataSet, capabilities: self == .incremental
                ? .comparisons(of: ["name"], operators: [.equalTo]) : .everything)
            return TestStore(try IncrementalStore(backend: backend, model: dataSet.model), file: nil)
        case .remote:
            let served = try SQLiteStore(inMemoryWith: dataSet.model)
            try served.importDataSet(dataSet)
            let server = try TestServer(serving: served)
            return TestStore(try RemoteStore(url: server.url), file: nil, server: server)
        case .postgres:
            let store = try Self.makePostgres(dataSet.model)
            try store.importDataSet(dataSet)
            return TestStore(store, file: nil)
        }
    }

    /// A new PostgreSQL store for `model`, in a schema of its own (dropped with its `TestStore`).
    static func makePostgres(_ model: DataModel, schemaName: String? = nil, observesOtherProcesses: Bool = true) throws
        -> PostgresStore
    {
        guard let url = postgresURL else { throw StoreError.server("SIFT_POSTGRES_URL is not set", sql: nil) }
        return try PostgresStore(url: url, model: model,
                                 schemaName: schemaName ?? "sift_t_\(UUID().uuidString.prefix(12).lowercased())",
                                 maximumConnections: 2, observesOtherProcesses: observesOtherProcesses)
    }
}

/// Runs a store's invariant checks one at a time, none after `stop()`.
final class InvariantChecks: @unchecked Sendable {
    private let lock = NSLock()
    private var stopped = false

    func run(_ check: () -> Void) {
        lock.lock()
        defer { lock.unlock() }
        if !stopped { check() }
    }

    func stop() {
        lock.lock()
        stopped = true
        lock.unlock()
    }
}

/// A store made for one test; its file, if any, goes with it.
final class TestStore: Sendable {
    let store: any PersistentStore
    let file: URL?

    /// Checks the store's invariants after each save and batch change
    /// (`CoreDataInvariants`): Core Data's for an SQLite store, and for every
    /// store no key pointing at a deleted row, and inverses in step.
    let observation: StoreObservation?
    /// Keeps a check (which may run on PostgreSQL's listening thread, for a
    /// save another store announced) from overlapping the store's end.
    let checks = InvariantChecks()

    /// The server of a remote store, stopped with it.
    let server: TestServer?

    init(_ store: any PersistentStore, file: URL?, server: TestServer? = nil) {
        self.store = store
        self.file = file
        self.server = server
        let checks = self.checks
        observation = store.addObserver { [weak store] _ in
            checks.run {
                guard let store else { return }
                for problem in CoreDataInvariants.violations(of: store) { Issue.record("after a save: \(problem)") }
            }
        }
    }

    deinit {
        checks.stop()
        observation?.cancel()
        if let file { try? FileManager.default.removeItem(at: file) }
        if let postgres = store as? PostgresStore { try? postgres.destroy() }
        (store as? RemoteStore)?.backend.stopFollowingChanges()
    }

    /// A new context on the store.
    func context() -> ObjectContext {
        ObjectContext(store: store)
    }

    var rowCache: RowCache { store.rowCache }
}
