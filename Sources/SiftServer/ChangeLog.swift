// The server's change feed: every change its store's observers hear — saves
// and batch changes through the API, saves of contexts in the same process,
// another process's saves a PostgreSQL store hears of — numbered in order
// under a token (`<run>.<number>`). A client asks for the changes after its
// token and waits (long poll) for the next; a token of another run of the
// server, or older than the changes kept, answers `reset`: refetch.

import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

final class ChangeLog: Sendable {
    /// One change, as the store's observers heard it.
    struct Entry: Sendable {
        var sequence: Int64
        var changes: StoreChanges
    }

    /// This run of the server: tokens of other runs are unknown.
    let run: String
    /// How many changes are kept.
    let capacity: Int
    private let state = LockedState<(entries: [Entry], last: Int64)>(([], 0))

    init(capacity: Int = 10_000) {
        run = String(UUID().uuidString.prefix(8)).lowercased()
        self.capacity = capacity
    }

    /// The token of the last change.
    var token: ChangeToken { ChangeToken(run: run, sequence: state.withLock { $0.last }) }

    /// Records a change; returns its token.
    @discardableResult
    func append(_ changes: StoreChanges) -> ChangeToken {
        state.withLock { state in
            state.last += 1
            state.entries.append(Entry(sequence: state.last, changes: changes))
            if state.entries.count > capacity { state.entries.removeFirst(state.entries.count - capacity) }
            return ChangeToken(run: run, sequence: state.last)
        }
    }

    /// The changes after `token`, oldest first, and whether the token is
    /// unknown (another run's, newer than the last, or older than those kept).
    func changes(after token: ChangeToken?) -> (entries: [Entry], last: Int64, reset: Bool) {
        state.withLock { state in
            guard let token else { return ([], state.last, false) }
            guard token.run == run, token.sequence <= state.last else { return ([], state.last, true) }
            if let first = state.entries.first, token.sequence < first.sequence - 1 { return ([], state.last, true) }
            return (state.entries.filter { $0.sequence > token.sequence }, state.last, false)
        }
    }
}
