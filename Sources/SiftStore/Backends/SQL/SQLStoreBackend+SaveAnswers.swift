// Store stage: a save applied once, however often it is sent. A store served
// over HTTP is sent change sets that name who sends them and their number
// (`SaveIdentity`); a client whose answer was lost sends the same change set
// again. A SQL store remembers each answer in a table beside its rows
// (`SaveAnswerStatements`), written in the save's own transaction, so that
// the save and its answer commit together or not at all: a change set whose
// answer is remembered is answered with it and writes nothing, and of two
// requests of one change set at once, one commits and the other finds its
// answer (SQLite's writes take turns; on PostgreSQL the table's key makes the
// second wait for the first, then fail, and the answer is read then).

import Foundation
import Sift

/// A change set's identity: who sends it, and its number among theirs (the
/// same for every retry of one change set).
package struct SaveIdentity: Hashable, Sendable {
    /// The sender's own identifier.
    package var origin: String
    /// The change set's number among the sender's.
    package var sequence: Int64

    /// The identity of change set `sequence` of `origin`.
    package init(origin: String, sequence: Int64) {
        self.origin = origin
        self.sequence = sequence
    }
}

/// What a save with an identity came to.
package enum IdentifiedSaveResponse: Sendable {
    /// The change set was new: applied (its answer remembered when it committed).
    case applied(SaveResponse)
    /// The change set was answered before, with this text: nothing was written.
    case remembered(String)
}

/// Runs one statement in a write transaction.
private func run<E: SQLExecutor>(_ query: SQLQuery, on executor: E) throws {
    try executor.run(try executor.prepare(query.sql), query.bindings)
}

/// A change set answered before, found inside a save's transaction.
private struct AnsweredBefore: Error {
    var answer: String
}

extension SQLStoreBackend {
    /// How many answers of one origin are remembered (its latest).
    package static var rememberedAnswersPerOrigin: Int64 { 100 }
    /// How long an answer is remembered, in seconds (a day).
    package static var rememberedAnswerLifetime: Double { 86_400 }

    /// Makes the table of remembered answers, unless the store has it.
    ///
    /// - Throws: `StoreError`: `.cannotWrite` for a store that refuses writes; the database's error.
    package func prepareSaveAnswers() throws(StoreError) {
        let statements = SaveAnswerStatements.createTable(in: schema.dialect)
        try writeTransaction { executor -> ((), StoreChanges) in
            for statement in statements { try run(statement, on: executor) }
            return ((), StoreChanges())
        }
    }

    /// The answer remembered for a change set, if there is one.
    ///
    /// - Parameter identity: The change set's identity.
    /// - Returns: The answer's text; nil when the change set has none remembered.
    /// - Throws: `StoreError`: the database's error (the table not made: ``prepareSaveAnswers()``).
    package func rememberedAnswer(for identity: SaveIdentity) throws(StoreError) -> String? {
        let query = SaveAnswerStatements.selectAnswer(origin: identity.origin, sequence: identity.sequence, in: schema.dialect)
        guard case .string(let text)? = try fetchValues(query, types: [.string]).first?.first else { return nil }
        return text
    }

    /// Applies a save request once for its identity: a change set answered
    /// before is answered as it was, and nothing is written; a new one is
    /// applied as ``apply(_:)`` applies it, and what `answer` makes of its
    /// result is remembered in the same transaction (the store's last
    /// ``rememberedAnswersPerOrigin`` of the origin, for
    /// ``rememberedAnswerLifetime`` seconds).
    ///
    /// - Parameters:
    ///   - request: The changes.
    ///   - identity: The change set's identity.
    ///   - answer: The answer to remember for the result, made inside the transaction.
    /// - Returns: `.applied` with the store's response, or `.remembered` with the answer given before.
    /// - Throws: `StoreError`, nothing written, as ``apply(_:)`` throws; the database's error when the table of
    ///   answers is not made (``prepareSaveAnswers()``).
    package func apply(_ request: SaveRequest, identity: SaveIdentity,
                       answer: (SaveResult) throws -> String) throws(StoreError) -> IdentifiedSaveResponse {
        if let remembered = try rememberedAnswer(for: identity) { return .remembered(remembered) }
        if let writesRefused { throw .cannotWrite(path: location, reason: writesRefused) }
        var counts: [Int: Int64] = [:]
        for insert in request.inserts where insert.id.primaryKey < 0 { counts[insert.id.root, default: 0] += 1 }
        let writer = self.writer
        let dialect = schema.dialect
        let result: SaveResult
        do {
            result = try inWriteTransaction(reservingKeys: counts) { executor in
                // Looked for again inside the transaction: a request of the same change set may have committed since.
                let select = SaveAnswerStatements.selectAnswer(origin: identity.origin, sequence: identity.sequence, in: dialect)
                if case .text(let text)? = try executor.rows(select.sql, select.bindings).first?.first {
                    throw AnsweredBefore(answer: text)
                }
                let result = try writer.write(request, on: executor)
                let now = Date().timeIntervalSinceReferenceDate
                let insert = SaveAnswerStatements.insertAnswer(origin: identity.origin, sequence: identity.sequence, timestamp: now,
                                                               answer: try answer(result), in: dialect)
                try run(insert, on: executor)
                for delete in SaveAnswerStatements.deleteAnswers(origin: identity.origin,
                                                                  through: identity.sequence - Self.rememberedAnswersPerOrigin,
                                                                  before: now - Self.rememberedAnswerLifetime, in: dialect) {
                    try run(delete, on: executor)
                }
                return (result, result.changes)
            }
        } catch let found as ConflictsFound {
            return .applied(.conflicts(found.conflicts))
        } catch let before as AnsweredBefore {
            return .remembered(before.answer)
        } catch {
            // A request of the same change set that committed first makes this one's answer a duplicate key.
            if let remembered = try? rememberedAnswer(for: identity) { return .remembered(remembered) }
            throw storeError(error)
        }
        // Committed: the row cache holds what was written.
        rowCache.store(result.writtenNodes)
        rowCache.remove(result.changes.deleted)
        return .applied(.committed(result))
    }
}
