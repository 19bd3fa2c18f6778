// SQL stage: the statements of the table where a store served over HTTP
// remembers what it answered recent change sets (`Z_SIFTSAVEANSWER`: origin,
// sequence, when, the answer's JSON), so that a change set sent again after
// its answer was lost is answered as it was, and written once. The table sits
// beside Core Data's (which ignores it); its rows are written in the save's
// own transaction. Names are quoted by the dialect, every value is bound.

import Foundation

/// The statements of the table of remembered save answers.
package enum SaveAnswerStatements {
    /// The table's name.
    package static let table = "Z_SIFTSAVEANSWER"

    /// Creates the table and its index, unless they are there.
    ///
    /// - Parameter dialect: The dialect the statements are written in.
    /// - Returns: The statements, in order.
    package static func createTable(in dialect: any SQLDialect) -> [SQLQuery] {
        let q = dialect.quote
        return [
            SQLQuery(sql: "CREATE TABLE IF NOT EXISTS \(q(table)) (\(q("ZORIGIN")) TEXT NOT NULL, \(q("ZSEQUENCE")) BIGINT NOT NULL, "
                + "\(q("ZTIMESTAMP")) DOUBLE PRECISION NOT NULL, \(q("ZANSWER")) TEXT NOT NULL, "
                + "PRIMARY KEY (\(q("ZORIGIN")), \(q("ZSEQUENCE"))))"),
            SQLQuery(sql: "CREATE INDEX IF NOT EXISTS \(q(table + "_ZTIMESTAMP")) ON \(q(table)) (\(q("ZTIMESTAMP")))"),
        ]
    }

    /// The answer remembered for a change set: one row of one text column, or none.
    ///
    /// - Parameters:
    ///   - origin: The change set's origin.
    ///   - sequence: Its sequence number.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The SELECT.
    package static func selectAnswer(origin: String, sequence: Int64, in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        return SQLQuery(sql: "SELECT \(q("ZANSWER")) FROM \(q(table)) WHERE \(q("ZORIGIN")) = \(dialect.placeholder(1)) "
                            + "AND \(q("ZSEQUENCE")) = \(dialect.placeholder(2))",
                        bindings: [.text(origin), .integer(sequence)])
    }

    /// Remembers an answer.
    ///
    /// - Parameters:
    ///   - origin: The change set's origin.
    ///   - sequence: Its sequence number.
    ///   - timestamp: When it was answered, in seconds since 2001.
    ///   - answer: The answer's text.
    ///   - dialect: The dialect the statement is written in.
    /// - Returns: The INSERT (which fails when the change set has an answer already).
    package static func insertAnswer(origin: String, sequence: Int64, timestamp: Double, answer: String,
                                     in dialect: any SQLDialect) -> SQLQuery {
        let q = dialect.quote
        let columns = ["ZORIGIN", "ZSEQUENCE", "ZTIMESTAMP", "ZANSWER"].map(q).joined(separator: ", ")
        let placeholders = (1...4).map(dialect.placeholder).joined(separator: ", ")
        return SQLQuery(sql: "INSERT INTO \(q(table)) (\(columns)) VALUES (\(placeholders))",
                        bindings: [.text(origin), .integer(sequence), .real(timestamp), .text(answer)])
    }

    /// Forgets the answers of an origin's change sets numbered at most
    /// `sequence`, and every answer older than `timestamp`.
    ///
    /// - Parameters:
    ///   - origin: The origin.
    ///   - sequence: The last sequence number forgotten.
    ///   - timestamp: The oldest time kept, in seconds since 2001.
    ///   - dialect: The dialect the statements are written in.
    /// - Returns: The DELETEs, in order.
    package static func deleteAnswers(origin: String, through sequence: Int64, before timestamp: Double,
                                      in dialect: any SQLDialect) -> [SQLQuery] {
        let q = dialect.quote
        return [
            SQLQuery(sql: "DELETE FROM \(q(table)) WHERE \(q("ZORIGIN")) = \(dialect.placeholder(1)) "
                        + "AND \(q("ZSEQUENCE")) <= \(dialect.placeholder(2))",
                     bindings: [.text(origin), .integer(sequence)]),
            SQLQuery(sql: "DELETE FROM \(q(table)) WHERE \(q("ZTIMESTAMP")) < \(dialect.placeholder(1))",
                     bindings: [.real(timestamp)]),
        ]
    }
}
