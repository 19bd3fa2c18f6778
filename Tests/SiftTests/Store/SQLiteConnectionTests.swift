// The SQLite layer: values round-trip through bound parameters, errors carry
// SQLite's code, message and SQL.

import Foundation
import SiftStore
import Testing

@Suite("SQLite connection")
struct SQLiteConnectionTests {
    @Test func valuesRoundTripThroughBoundParameters() throws {
        let db = try SQLiteConnection()
        try db.execute("CREATE TABLE t (a)")
        let values: [SQLiteValue] = [.null, .integer(.min), .real(-0.5), .text("it's; -- \"quoted\""), .blob(Data([0, 255]))]
        for value in values { _ = try db.query("INSERT INTO t (a) VALUES (?)", [value]) }
        let rows = try db.query("SELECT a FROM t ORDER BY rowid")
        #expect(rows.map { $0[0] } == values)
    }

    @Test func errorsCarryCodeMessageAndSQL() throws {
        let db = try SQLiteConnection()
        let error = try #require(throws: SQLiteError.self) { try db.query("SELECT * FROM missing") }
        #expect(error.code == 1)
        #expect(error.message == "no such table: missing")
        #expect(error.sql == "SELECT * FROM missing")
    }

    @Test func libraryIsTheSystemSQLite() {
        #expect(SQLiteConnection.libraryVersion.hasPrefix("3."))
    }
}
