// A save applied once, however often its change set is sent. A change set
// that names its origin and sequence has an identity (`SaveIdentity`); the
// answer the server gave it is remembered, and a change set sent again (its
// answer lost: a dropped connection, a 5xx) is answered as it was the first
// time, with nothing written. A SQL store (SQLite, PostgreSQL) remembers the
// answers in a table beside its rows, written in the save's own transaction
// (SQLStoreBackend+SaveAnswers.swift), so they outlive the server and never
// disagree with what was committed; any other store's are remembered in
// memory, for this run of the server. The change feed's token of an answer
// is this run's: remembered in memory, and for an answer an earlier run gave,
// the current token.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

final class SaveAnswers: Sendable {
    /// How many answers are kept in memory (tokens, and the answers of a store without tables).
    static let capacity = 10_000

    /// An answer given in this run: its token, and for a store without tables the whole answer.
    struct Entry: Sendable {
        var token: String
        var answer: Components.Schemas.SaveAnswer?
    }

    /// Whether the store's table of answers is made.
    private let prepared = LockedState(false)
    /// The answers given in this run, oldest first in `order`.
    private let recent = LockedState<(entries: [SaveIdentity: Entry], order: [SaveIdentity])>(([:], []))
    /// Saves with an identity on a store without tables, one at a time (looked for, applied, remembered).
    private let inMemory = LockedState(())

    /// The identity a change set names (its origin and sequence, in JSON or the compact form): nil when it
    /// names no sequence.
    ///
    /// - Throws: `ServerFailure` (400) for a sequence without an origin, a sequence below 1, or an origin
    ///   longer than 64 bytes.
    func identity(origin: String?, sequence: Int64?) throws(ServerFailure) -> SaveIdentity? {
        guard let sequence else { return nil }
        guard let origin, !origin.isEmpty else {
            throw .badRequest("a change set's 'sequence' is counted per 'origin': name the origin too")
        }
        guard sequence >= 1 else { throw .badRequest("a change set's 'sequence' is at least 1; this one is \(sequence)") }
        guard origin.utf8.count <= 64 else {
            throw .badRequest("an origin is at most 64 bytes; this one is \(origin.utf8.count)")
        }
        return SaveIdentity(origin: origin, sequence: sequence)
    }

    /// Applies a change set with an identity once: answered as before when it was, applied otherwise.
    ///
    /// - Returns: The outcome, `remembered` when the change set was answered before.
    /// - Throws: What applying the request throws (nothing written).
    func save(_ request: SaveRequest, identity: SaveIdentity, api: StoreAPI) throws -> SaveOutcome {
        guard let backend = api.store as? any SQLStoreBackend else {
            return try inMemory.withLock { _ in try saveInMemory(request, identity: identity, api: api) }
        }
        try prepare(backend)
        let model = api.model
        var made: Components.Schemas.SaveAnswer?
        let response = try backend.apply(request, identity: identity) { result in
            let answer = StoreAPI.answer(result, model: model, token: "")
            made = answer
            return Self.text(answer)
        }
        switch response {
        case .remembered(let text):
            var answer: Components.Schemas.SaveAnswer
            do {
                answer = try JSONDecoder().decode(Components.Schemas.SaveAnswer.self, from: Data(text.utf8))
            } catch {
                throw ServerFailure(500, "internal", "the answer remembered for change set \(identity.sequence) of "
                                    + "'\(identity.origin)' cannot be read: \(error)")
            }
            answer.token = token(for: identity) ?? api.log.token.description
            return .saved(answer, remembered: true)
        case .applied(.committed(let saved)):
            var answer = made ?? StoreAPI.answer(saved, model: model, token: "")
            answer.token = api.announce(saved, origin: identity.origin)
            remember(identity, Entry(token: answer.token, answer: nil))
            return .saved(answer, remembered: false)
        case .applied(.conflicts(let conflicts)):
            return .conflicts(api.conflicts(conflicts))
        }
    }

    /// An answer as the store's table keeps it: `SaveAnswer`'s JSON, written here rather than by
    /// `JSONEncoder` (which took half a large save's time on the server, measured on the benchmarks'
    /// `remote` section); read back by `JSONDecoder`, as answers kept by earlier runs are.
    static func text(_ answer: Components.Schemas.SaveAnswer) -> String {
        var text = #"{"versions":["#
        text.reserveCapacity(64 + 48 * answer.versions.count + 40 * answer.keys.count)
        for (index, version) in answer.versions.enumerated() {
            if index > 0 { text += "," }
            text += #"{"entity":"#
            quote(version.entity, into: &text)
            text += #","key":\#(version.key),"version":\#(version.version)}"#
        }
        text += #"],"keys":["#
        for (index, key) in answer.keys.enumerated() {
            if index > 0 { text += "," }
            text += #"{"temporaryID":\#(key.temporaryID),"key":\#(key.key)}"#
        }
        text += #"],"token":"#
        quote(answer.token, into: &text)
        text += "}"
        return text
    }

    /// A JSON string: `"`, `\` and control characters escaped.
    private static func quote(_ string: String, into text: inout String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case _ where scalar.value < 0x20: text += String(format: "\\u%04x", scalar.value)
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }

    /// A store without tables: the answers are this run's, in memory.
    private func saveInMemory(_ request: SaveRequest, identity: SaveIdentity, api: StoreAPI) throws -> SaveOutcome {
        if let answer = recent.withLock({ $0.entries[identity]?.answer }) { return .saved(answer, remembered: true) }
        switch try api.store.apply(request) {
        case .committed(let saved):
            var answer = StoreAPI.answer(saved, model: api.model, token: "")
            answer.token = api.announce(saved, origin: identity.origin)
            remember(identity, Entry(token: answer.token, answer: answer))
            return .saved(answer, remembered: false)
        case .conflicts(let conflicts):
            return .conflicts(api.conflicts(conflicts))
        }
    }

    /// Makes the store's table of answers, once.
    private func prepare(_ backend: any SQLStoreBackend) throws(StoreError) {
        if prepared.withLock({ $0 }) { return }
        do {
            try backend.prepareSaveAnswers()
        } catch {
            // Another server may have been making it at the same time (PostgreSQL): once more, then it is there.
            try backend.prepareSaveAnswers()
        }
        prepared.withLock { $0 = true }
    }

    /// The token this run gave with a change set's answer.
    private func token(for identity: SaveIdentity) -> String? {
        recent.withLock { $0.entries[identity]?.token }
    }

    private func remember(_ identity: SaveIdentity, _ entry: Entry) {
        recent.withLock { recent in
            if recent.entries.updateValue(entry, forKey: identity) == nil { recent.order.append(identity) }
            if recent.order.count > Self.capacity {
                let dropped = recent.order.count - Self.capacity / 2
                for old in recent.order.prefix(dropped) { recent.entries[old] = nil }
                recent.order.removeFirst(dropped)
            }
        }
    }
}
#endif
