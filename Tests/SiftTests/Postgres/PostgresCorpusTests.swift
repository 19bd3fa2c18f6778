// The conformance corpus on a real PostgreSQL server, through the SQL stage's
// PostgreSQL dialect: the company's tables created from the schema mapping,
// its rows written with the store's row statements, and each case's SELECT
// giving exactly the expected ids. A case that needs what PostgreSQL lacks
// (Sift's SQL functions, arrays bound as one parameter) is one the split
// planner runs in memory: it is counted, and must stay a minority.
//
// The server is the one SIFT_POSTGRES_URL names (.ci/run starts one);
// without it these tests are skipped, with that reason shown.

import Foundation
import Sift
import SiftDemo
import SiftPostgres
import SiftStore
import Testing

/// The server the tests use, and the company loaded into a schema of its own.
enum PostgresCompany {
    static let url = ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"]
    static let schema = SQLSchema(model: Company.model, dialect: .postgreSQL)

    /// Connected once, with the company in a new schema, for every test.
    static let database = Task { () throws -> PostgresDatabase in
        guard let url else { throw PostgresDatabaseError(message: "SIFT_POSTGRES_URL is not set") }
        let database = try await PostgresDatabase.connect(url: url)
        do {
            let name = "sift_test_\(UUID().uuidString.prefix(8).lowercased())"
            try await database.execute("CREATE SCHEMA \(name)")
            try await database.execute("SET search_path TO \(name)")
            for statement in schema.createStatements { try await database.run(statement) }
            try await load(Company.dataSet, schema: schema, into: database)
            return database
        } catch {
            try? await database.close()
            throw error
        }
    }

    /// Writes a data set's rows and join-table links with the store's row statements.
    static func load(_ dataSet: DataSet, schema: SQLSchema, into database: PostgresDatabase) async throws {
        let model = dataSet.model
        for node in dataSet.nodes {
            let entity = model.entities[node.id.entity]
            let insert = schema.insertRow(entity)
            try await database.run(insert.query, insert.bindings(key: node.id.primaryKey, version: node.version, values: node.values,
                                                                 toOne: node.toOne) { _, _ in nil })
            for relationship in entity.relationships where relationship.isToMany {
                guard schema.writesLinks(of: relationship, in: entity), let link = schema.insertLink(relationship, in: entity) else {
                    continue
                }
                for target in node.toMany[relationship.slot] ?? [] {
                    try await database.run(link, [.integer(node.id.primaryKey), .integer(target)])
                }
            }
        }
    }

    /// The ids a corpus case selects on the server; nil when its predicate
    /// has a term PostgreSQL cannot run (the planner would run it in memory).
    static func ids(_ testCase: CorpusCase, bound: BoundPredicate) async throws -> [Int64]? {
        let fetch = try SQLLowering(schema: schema).lower(testCase.entity, where: bound, splitting: false)
        guard fetch.terms.allSatisfy({ $0.sql != nil }) else { return nil }
        let query = fetch.query(terms: fetch.terms.indices, columns: .identifiers)
        return try await database.value.rows(query).compactMap { if case .integer(let id) = $0[0] { id } else { nil } }
    }
}

@Suite("Conformance corpus (PostgreSQL)",
       .enabled(if: PostgresCompany.url != nil, "SIFT_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresCorpusTests {
    @Test("Every corpus case through the PostgreSQL store: the server's part and memory's residual give the expected ids")
    func corpusThroughTheStore() throws {
        let store = try StoreKind.postgres.make()
        let context = store.context()
        for testCase in CorpusCase.all { try SQLCorpusTests.check(testCase, context: context, cache: Company.cache) }
    }

    @Test("The PostgreSQL dialect gives the corpus's answers on a real server, for most of it")
    func corpus() async throws {
        var ran = 0
        var inMemory = 0
        for testCase in CorpusCase.all {
            let bound: BoundPredicate
            do {
                bound = try PredicateCompiler(model: Company.model).bind(testCase.predicate, arguments: testCase.args ?? [],
                                                                         entity: testCase.entity)
            } catch {
                continue  // a validation error: the same on every backend, checked by the other suites
            }
            do {
                guard let ids = try await PostgresCompany.ids(testCase, bound: bound) else {
                    inMemory += 1
                    continue
                }
                ran += 1
                #expect(testCase.expect == .matches(ids), "\(testCase.id): \(testCase.predicate)")
            } catch {
                Issue.record("\(testCase.id): \(testCase.predicate): \(error)")
            }
        }
        print("PostgreSQL corpus: \(ran) cases ran on the server, \(inMemory) would run in memory")
        #expect(ran > 2 * inMemory, "\(ran) cases ran on PostgreSQL, \(inMemory) would run in memory")
    }
}

@Suite("SQL and memory agree (PostgreSQL)",
       .enabled(if: PostgresCompany.url != nil, "SIFT_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresDifferentialTests {
    /// The random world of the SQLite differential test on the server:
    /// random data (nils, empty collections, awkward strings; none holding
    /// U+0000, which PostgreSQL's text cannot) and random predicates, each
    /// selecting on PostgreSQL what memory selects.
    @Test("Random predicates over random data, on PostgreSQL")
    func randomPredicates() async throws {
        // A connection of its own: each schema is made the search path in turn.
        let database = try await PostgresDatabase.connect(url: try #require(PostgresCompany.url))
        do {
            try await compare(on: database)
        } catch {
            Issue.record(error)
        }
        try await database.close()
    }

    func compare(on database: PostgresDatabase) async throws {
        let schema = SQLSchema(model: RandomWorld.model, dialect: .postgreSQL)
        var compared = 0
        for seed in 0..<UInt64(40) {
            var generator = RandomWorld.Generator(rng: SplitMix(seed: seed &* 0x9E37_79B9 &+ 7))
            let objects = generator.data().mapValues { list in
                list.map { object in
                    object.mapValues { value -> PredicateValue in
                        if case .string(let s) = value, s.unicodeScalars.contains("\u{0}") { return .string("nul") }
                        return value
                    }
                }
            }
            let dataSet = try DataSet(model: RandomWorld.model, objects: objects)
            let cache = dataSet.makeRowCache()
            let name = "sift_random_\(seed)_\(UUID().uuidString.prefix(6).lowercased())"
            try await database.execute("CREATE SCHEMA \(name)")
            try await database.execute("SET search_path TO \(name)")
            for statement in schema.createStatements { try await database.run(statement) }
            try await PostgresCompany.load(dataSet, schema: schema, into: database)
            for _ in 0..<25 {
                let text = generator.predicate(depth: 3)
                // Constants holding U+0000 stay in the predicates: such terms run in memory.
                guard let bound = try? PredicateCompiler(model: RandomWorld.model).bind(text, entity: "Thing") else { continue }
                let fetch = try SQLLowering(schema: schema).lower("Thing", where: bound, splitting: false)
                guard fetch.terms.allSatisfy({ $0.sql != nil }) else { continue }
                let query = fetch.query(terms: fetch.terms.indices, columns: .identifiers)
                do {
                    let sql = try await database.rows(query).compactMap { if case .integer(let id) = $0[0] { id } else { nil } }
                    let memory = try cache.nodes(of: "Thing", matching: bound).map(\.id.primaryKey)
                    #expect(sql == memory, "\(text)\nSQL: \(query.sql)")
                    compared += 1
                } catch {
                    Issue.record("\(text): \(error)")
                }
            }
            try await database.execute("DROP SCHEMA \(name) CASCADE")
        }
        #expect(compared > 300, "only \(compared) predicates ran on PostgreSQL")
    }
}
