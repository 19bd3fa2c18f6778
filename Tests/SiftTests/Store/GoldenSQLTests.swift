// The SQL each construct lowers to, exactly: the documentation of the SQL
// mapping, and a guard against changes nobody meant.

import Foundation
import Sift
import Testing

@Suite("Golden SQL")
struct GoldenSQLTests {
    static let lowering = SQLLowering(schema: SQLSchema(model: Company.model))

    static func sql(_ predicate: String, _ arguments: [PredicateValue] = [], entity: String = "Employee") throws -> SQLQuery {
        // Unoptimized: these pin the lowering itself.
        let bound = try PredicateCompiler(model: Company.model, optimizer: nil)
            .bind(predicate, arguments: arguments, entity: entity)
        return try lowering.select(entity, where: bound, columns: .identifiers)
    }

    @Test("Where clauses", arguments: [
        ("age > 30", #"t0."ZAGE" > ?1"#),
        ("age == 30.0", #"t0."ZAGE" = ?1"#),
        ("rating > 2", #"t0."ZRATING" > ?1"#),
        ("NOT (rating > 2)", #"((t0."ZRATING" > ?1) IS NOT 1)"#),
        ("NOT (age > 2)", #"(NOT (t0."ZAGE" > ?1))"#),
        ("nickname == nil", #"t0."ZNICKNAME" IS NULL"#),
        ("nickname != 'Ace'", #"t0."ZNICKNAME" IS NOT ?1"#),
        ("name != 'Ace'", #"t0."ZNAME" <> ?1"#),
        ("name ==[cd] 'jose'", #"sift_fold(t0."ZNAME", 3) = ?1"#),
        ("name BEGINSWITH 'Al'", #"(t0."ZNAME" >= ?1 AND t0."ZNAME" < ?2)"#),
        ("name ENDSWITH 'er'", #"(substr(CAST(t0."ZNAME" AS BLOB), -length(CAST(?1 AS BLOB))) = CAST(?1 AS BLOB))"#),
        ("name CONTAINS 'an'", #"(instr(t0."ZNAME", ?1) > 0)"#),
        ("name CONTAINS ''", "0"),
        ("name LIKE 'A?[*'", #"(CASE WHEN instr(t0."ZNAME", char(0)) > 0 THEN sift_like(t0."ZNAME", ?1) ELSE t0."ZNAME" GLOB ?2 END)"#),
        ("name MATCHES '^A.*'", #"sift_matches(t0."ZNAME", ?1, 0)"#),
        ("age IN {1, 2}", #"t0."ZAGE" IN (?1, ?2)"#),
        ("age IN %@", #"t0."ZAGE" IN (SELECT value FROM json_each(?1))"#),
        ("age BETWEEN {30, 40}", #"t0."ZAGE" BETWEEN ?1 AND ?2"#),
        ("department.name == 'Sales'", #"t1."ZNAME" = ?1"#),
        ("manager == nil", #"t0."ZMANAGER" IS NULL"#),
        ("ANY reports.age > 60", #"EXISTS (SELECT 1 FROM "ZEMPLOYEE" AS t1 WHERE t1."ZMANAGER" = t0."Z_PK" AND t1."ZAGE" > ?1)"#),
        ("ALL reports.age > 60",
         #"NOT EXISTS (SELECT 1 FROM "ZEMPLOYEE" AS t1 WHERE t1."ZMANAGER" = t0."Z_PK" AND (NOT (t1."ZAGE" > ?1)))"#),
        ("reports.@count > 4", #"(SELECT COUNT(*) FROM "ZEMPLOYEE" AS t1 WHERE t1."ZMANAGER" = t0."Z_PK") > ?1"#),
        ("salary / 1000 < 35", #"(CAST(t0."ZSALARY" AS REAL) / ?1) < ?2"#),
    ])
    func whereClause(_ predicate: String, _ condition: String) throws {
        let query = try Self.sql(predicate, predicate.contains("%@") ? [[1, 2]] : [])
        let whereText = query.sql.components(separatedBy: " WHERE ").dropFirst().joined(separator: " WHERE ")
            .components(separatedBy: " ORDER BY ").first ?? ""
        #expect(whereText == condition, "\(query.sql)")
    }

    @Test func joinsAreSharedBetweenTerms() throws {
        let query = try Self.sql("department.name == 'Sales' OR department.budget > 5")
        #expect(query.sql.components(separatedBy: "LEFT JOIN").count == 2)
    }

    @Test func manyToManyGoesThroughTheJoinTable() throws {
        let query = try Self.sql("ANY tags.name == 'lead'")
        // Core Data's join table: Z_<entity number><RELATIONSHIP>, a column per side.
        #expect(query.sql.contains(#"JOIN "Z_2TAGS" AS t2 ON t2."Z_3TAGS" = t1."Z_PK" WHERE t2."Z_2EMPLOYEES" = t0."Z_PK""#))
    }

    @Test func constantsAreAlwaysBound() throws {
        let query = try Self.sql("name == %@ AND age > 3 AND name IN %@", ["x'); DROP TABLE Employee; --", ["a", "b"]])
        #expect(!query.sql.contains("DROP"))
        #expect(!query.sql.contains("'a'"))
        #expect(query.bindings.count == 3)
    }

    @Test func unsupportedConstructsAreTypedErrors() throws {
        let bound = try PredicateCompiler(model: Company.model, optimizer: nil).bind("median({age, salary}) > 3", entity: "Employee")
        #expect(throws: SQLLoweringError.self) { try Self.lowering.select("Employee", where: bound) }
    }

    // MARK: PostgreSQL

    static let postgres = SQLLowering(schema: SQLSchema(model: Company.model, dialect: .postgreSQL))

    @Test("Where clauses in PostgreSQL's dialect", arguments: [
        ("age > 30", #"t0."ZAGE" > $1"#),
        ("NOT (rating > 2)", #"((t0."ZRATING" > $1) IS NOT TRUE)"#),
        ("nickname != 'Ace'", #"t0."ZNICKNAME" IS DISTINCT FROM $1"#),
        ("name ENDSWITH 'er'", #"(right(t0."ZNAME", length($1)) = $1)"#),
        ("name CONTAINS 'an'", #"(strpos(t0."ZNAME", $1) > 0)"#),
        ("name LIKE 'A?_*'", #"(t0."ZNAME" LIKE $1 ESCAPE '\')"#),
        ("age IN %@", #"(t0."ZAGE" = ANY($1))"#),
        ("salary / 1000 < 35", #"(CAST(t0."ZSALARY" AS DOUBLE PRECISION) / NULLIF($1, 0)) < $2"#),
        ("name MATCHES 'A.*'", #"(t0."ZNAME" ~ $1)"#),
    ])
    func postgresWhereClause(_ predicate: String, _ condition: String) throws {
        let bound = try PredicateCompiler(model: Company.model, optimizer: nil)
            .bind(predicate, arguments: predicate.contains("%@") ? [[1, 2]] : [], entity: "Employee")
        let query = try Self.postgres.select("Employee", where: bound, columns: .identifiers)
        let whereText = query.sql.components(separatedBy: " WHERE ").dropFirst().joined(separator: " WHERE ")
            .components(separatedBy: " ORDER BY ").first ?? ""
        #expect(whereText == condition, "\(query.sql)")
        if predicate.contains("LIKE") { #expect(query.bindings == [.text("A_\\_%")]) }
        if predicate.contains("%@") { #expect(query.bindings == [.array([.integer(1), .integer(2)])]) }
        if predicate.contains("MATCHES") { #expect(query.bindings == [.text(#"^(?:A[^\n\v\f\r\u0085\u2028\u2029]*)$"#)]) }
    }

    @Test("MATCHES runs on PostgreSQL only in the subset of patterns both engines read alike", arguments: [
        // (pattern, runs on the server)
        ("abc", true), ("a.c", true), ("[a-z]+", true), ("[^0-9]*x", true), ("(ab|cd)e", true), ("(?:a|b)c", true),
        ("a{2,5}", true), ("a{3}b{1,}", true), ("a+?b", true), ("\\.\\*\\[", true), ("a\\nb", true), ("é.ü", true),
        ("(ab)+", false), ("a*+", false), ("a{256}", false), ("^abc", false), ("abc$", false), ("\\d+", false),
        ("\\w", false), ("[[:alpha:]]", false), ("[a-z&&[^m]]", false), ("(?i)abc", false), ("a|", false),
        ("[-a]", false), ("(a)\\1", false), ("[a-\\x{7A}]", false), ("\\Qa.b\\E", false), ("a{2}+", false),
    ])
    func postgresMatchesSubset(_ pattern: String, _ onServer: Bool) throws {
        let bound = try PredicateCompiler(model: Company.model, optimizer: nil)
            .bind("name MATCHES %@", arguments: [.string(pattern)], entity: "Employee")
        let fetch = try Self.postgres.lower("Employee", where: bound, splitting: false)
        #expect(fetch.terms.allSatisfy { $0.sql != nil } == onServer, "\(pattern)")
    }

    @Test func postgresRunsInMemoryWhatNeedsSiftsFunctionsOrTextWithNUL() throws {
        let compiler = PredicateCompiler(model: Company.model, optimizer: nil)
        for predicate in ["name ==[cd] 'jose'", "name MATCHES '(A)+.*'", "name MATCHES[c] 'a.*'", "uppercase(name) == 'A'", "name == 'a\u{0}b'"] {
            let bound = try compiler.bind(predicate, entity: "Employee")
            let fetch = try Self.postgres.lower("Employee", where: bound, splitting: false)
            #expect(fetch.terms.allSatisfy { $0.sql == nil }, "\(predicate)")
        }
        // No limit with an offset: LIMIT NULL (a negative limit is an error there).
        let query = try Self.postgres.lower("Employee", where: nil).query(terms: [], columns: .identifiers, offset: 5)
        #expect(query.sql.hasSuffix("LIMIT NULL OFFSET $1") && query.bindings == [.integer(5)], "\(query.sql)")
        // Text compares by code point whatever the server's locale.
        #expect(SQLSchema(model: Company.model, dialect: .postgreSQL).createStatements
                    .contains { $0.sql.contains(#""ZNAME" TEXT COLLATE "C""#) })
    }
}
