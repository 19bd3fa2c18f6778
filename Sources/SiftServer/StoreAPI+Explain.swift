// The API's explain and history operations: how a fetch runs (the plan, the
// SQL with its bindings, the database's plan and what memory evaluates), and
// the persistent history of a store that keeps it, newest first.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import OpenAPIRuntime
import Sift
import SiftHTTPAPI
import SiftStore

extension StoreAPI {
    func explain(_ input: Operations.Explain.Input) async throws -> Operations.Explain.Output {
        guard case .json(let body) = input.body else { return .default(statusCode: 415, ServerFailure(415, "bad_request", "a JSON body").response) }
        let result = await perform { () throws -> Components.Schemas.Explanation in
            let entity = try entity(body.entity)
            try checkPredicate(body.predicate)
            let request = FetchRequest(entityName: entity.name, predicate: body.predicate, arguments: try WireValue.arguments(body.arguments),
                                       sortDescriptors: (body.sort ?? []).map {
                                           FetchSortDescriptor($0.keyPath, ascending: $0.ascending ?? true, caseInsensitive: $0.caseInsensitive ?? false)
                                       })
            let bound = try store.compile(request).predicate?.outline
            guard let sqlStore = store as? any SQLPersistentStore else {
                // A store without SQL (an atomic file, a served store, a store of one's own) evaluates in memory.
                return .init(bound: bound, plan: "memory evaluates the predicate over the store's rows", bindings: [], databasePlan: [],
                             memory: bound.map { $0.split(separator: "\n").map(String.init) } ?? [], database: "none")
            }
            let plan = try sqlStore.plan(request)
            let query = plan.query(for: request, columns: .rows)
            var memory = plan.residual.map { $0.outline.split(separator: "\n").map(String.init) } ?? []
            if plan.sortKeysInMemory != nil { memory.append("memory sorts the rows") }
            memory += plan.reasons.map { "because: " + $0 }
            return .init(bound: bound, plan: plan.description, sql: query.sql, bindings: sqlStore.bindingLines(query),
                         databasePlan: try sqlStore.queryPlan(query), memory: plan.needsMemory ? memory : [],
                         database: sqlStore.databaseName)
        }
        switch result {
        case .success(let answer): return .ok(.init(body: .json(answer)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }

    func history(_ input: Operations.History.Input) async throws -> Operations.History.Output {
        let limit = Int64(min(max(input.query.limit ?? 50, 1), 500))
        let before = input.query.before
        let result = await perform { () throws -> Components.Schemas.History in
            guard let sqlite = store as? SQLiteStore, sqlite.tracksPersistentHistory else { return .init(tracked: false, transactions: []) }
            guard let last = try sqlite.currentPersistentHistoryToken() else { return .init(tracked: true, transactions: []) }
            // Below `before` (the newest when left out), at most `limit`: numbers are dense but for deleted history.
            let end = min(max(before ?? .max, 0), last.transactionNumber == .max ? .max : last.transactionNumber + 1)
            let start = end < .min + limit + 1 ? .min : end - limit - 1
            let transactions = try sqlite.persistentHistory(after: PersistentHistoryToken(storeUUID: last.storeUUID, transactionNumber: start),
                                                            before: end)
            let formatter = ISO8601DateFormatter()
            formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            let page = transactions.reversed().prefix(Int(limit)).map { transaction in
                Components.Schemas.HistoryTransaction(
                    number: transaction.transactionNumber,
                    timestamp: PredicateValue.exactISO8601Text(transaction.timestamp) ?? formatter.string(from: transaction.timestamp),
                    author: transaction.author, bundleID: transaction.bundleID, contextName: transaction.contextName,
                    processID: transaction.processID,
                    changes: transaction.changes.map { change in
                        let type: Components.Schemas.HistoryChange._TypePayload = switch change.changeType {
                        case .insert: .insert
                        case .update: .update
                        case .delete: .delete
                        }
                        // A tombstone's values are its entity's attributes': in their plain forms.
                        let tombstone = change.tombstone.isEmpty ? nil
                            : model.entity(named: change.entityName).map { WireValue.values(change.tombstone, of: $0) }
                                ?? WireValue.values(change.tombstone)
                        return .init(_type: type, entity: change.entityName, key: change.primaryKey, properties: change.updatedProperties,
                                     tombstone: tombstone)
                    })
            }
            // The next page is below this one's oldest; none after an empty page.
            let next = page.last.flatMap { $0.number > 1 ? $0.number : nil }
            return .init(tracked: true, transactions: Array(page), next: next)
        }
        switch result {
        case .success(let answer): return .ok(.init(body: .json(answer)))
        case .failure(let failure): return .default(statusCode: failure.status, failure.response)
        }
    }
}
#endif
