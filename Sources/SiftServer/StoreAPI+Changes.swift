// The change feed's operation (`GET /v1/changes`): the changes after a
// token, waiting up to `wait` seconds (a long poll) when there are none yet.
// The feed (ChangeLog.swift) answers from memory when it can; a durable feed
// reads its store's history first when it must, on a store thread.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import OpenAPIRuntime
import Sift
import SiftHTTPAPI
import SiftStore

extension StoreAPI {
    func changes(_ input: Operations.Changes.Input) async throws -> Operations.Changes.Output {
        var after: ChangeToken?
        if let text = input.query.after {
            guard let token = ChangeToken(text) else {
                return .default(statusCode: 400, ServerFailure.badRequest("'\(text)' is not a change token").response)
            }
            after = token
        }
        let wait = min(max(input.query.wait ?? 0, 0), 30)
        let deadline = ContinuousClock.now + .seconds(wait)
        var answer: ChangeLog.Answer
        switch await feed(after: after) {
        case .success(let first): answer = first
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
        while answer.entries.isEmpty, !answer.reset, after != nil, ContinuousClock.now < deadline {
            if Task.isCancelled || stopping.withLock({ $0 }) { break }
            let left = deadline - ContinuousClock.now
            await log.waitForChange(seconds: min(Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18, 0.5))
            switch await feed(after: after) {
            case .success(let next): answer = next
            case .failure(let failure): return .default(statusCode: failure.status, failure.response)
            }
        }
        let model = self.model
        func keys(_ ids: Set<ObjectID>) -> [Components.Schemas.ObjectKey] {
            ids.sorted { ($0.entity, $0.primaryKey) < ($1.entity, $1.primaryKey) }
                .map { .init(entity: model.entities[$0.entity].name, key: $0.primaryKey) }
        }
        let feed = Components.Schemas.ChangeFeed(
            token: ChangeToken(run: answer.run, sequence: answer.last).description, reset: answer.reset,
            changes: answer.entries.map { entry in
                .init(token: ChangeToken(run: answer.run, sequence: entry.sequence).description, origin: entry.origin,
                      inserted: keys(entry.changes.inserted), updated: keys(entry.changes.updated), deleted: keys(entry.changes.deleted))
            })
        return .ok(.init(body: .json(feed)))
    }

    /// The feed after `token`: from memory, or (a durable feed whose history
    /// must be read) on a store thread.
    func feed(after token: ChangeToken?) async -> Result<ChangeLog.Answer, ServerFailure> {
        if let answer = log.changesInMemory(after: token) { return .success(answer) }
        let log = self.log
        return await perform { () throws -> ChangeLog.Answer in try log.changes(after: token) }
    }
}
#endif
