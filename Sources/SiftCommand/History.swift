// `sift history`: what each save recorded in a store's persistent history —
// transactions in order, with their changes — after a transaction number
// or since a date.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct History: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List the transactions and changes Core Data's persistent history records in a store.",
        discussion: """
            Reads the history a Core Data app wrote with history tracking on (the ATRANSACTION and ACHANGE tables): \
            one line per transaction (number, time, author, bundle, context, process, change count), then one per change \
            (type, entity, key, and the properties an update changed). Pass --after with the last transaction number \
            you read to see only what came since.
            """)

    @Option(help: ArgumentHelp("The store file.", valueName: "file"))
    var store: String

    @Option(help: ArgumentHelp("The model bundle or file, for a store without a model cache.", valueName: "model"))
    var model: String?

    @Option(help: ArgumentHelp("Only transactions after this transaction number.", valueName: "number"))
    var after: Int64?

    @Option(help: ArgumentHelp("Only transactions at or after this time: ISO 8601 (2024-05-10T18:00:00Z).", valueName: "date"))
    var since: String?

    @Flag(help: "One line per transaction: the changes counted by type and entity, not listed.")
    var counts = false

    @Option(help: ArgumentHelp("text (the default) or json (one transaction per line).", valueName: "format"))
    var format: String = "text"

    func validate() throws {
        guard ["text", "json"].contains(format) else { throw ValidationError("--format is text or json") }
        if let since, ISO8601DateFormatter().date(from: since) == nil {
            throw ValidationError("--since '\(since)' is not an ISO 8601 date such as 2024-05-10T18:00:00Z")
        }
    }

    func run() throws {
        let sqlite = try openStore(store, model: model, readOnly: true)
        try storeFailure {
            let token = try after.map { PersistentHistoryToken(storeUUID: try sqlite.identifier, transactionNumber: $0) }
            let transactions = try sqlite.persistentHistory(after: token, since: since.flatMap(ISO8601DateFormatter().date(from:)))
            let dates = ISO8601DateFormatter()
            dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for transaction in transactions {
                if format == "json" {
                    print(try json(transaction, dates))
                    continue
                }
                let who = [("author", transaction.author), ("bundle", transaction.bundleID), ("context", transaction.contextName),
                           ("process", transaction.processID)].compactMap { label, value in value.map { "\(label) \($0)" } }
                print((["transaction \(transaction.transactionNumber)", dates.string(from: transaction.timestamp)] + who
                       + ["\(transaction.changes.count) change\(transaction.changes.count == 1 ? "" : "s")"]).joined(separator: "  "))
                if counts {
                    var tally: [String: Int] = [:]
                    for change in transaction.changes { tally["\(change.changeType) \(change.entityName)", default: 0] += 1 }
                    for (key, count) in tally.sorted(by: { $0.key < $1.key }) { print("  \(key): \(count)") }
                } else {
                    for change in transaction.changes {
                        var line = "  \(change.changeType) \(change.entityName) \(change.primaryKey)"
                        if let properties = change.updatedProperties { line += " (" + properties.joined(separator: ", ") + ")" }
                        if !change.tombstone.isEmpty {
                            line += " " + change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
                        }
                        print(line)
                    }
                }
            }
        }
    }

    private func json(_ transaction: PersistentHistoryTransaction, _ dates: ISO8601DateFormatter) throws -> String {
        var object: [String: Any] = ["transaction": transaction.transactionNumber, "timestamp": dates.string(from: transaction.timestamp)]
        object["author"] = transaction.author
        object["bundleID"] = transaction.bundleID
        object["contextName"] = transaction.contextName
        object["processID"] = transaction.processID
        object["changes"] = transaction.changes.map { change -> [String: Any] in
            var item: [String: Any] = ["id": change.changeID, "type": "\(change.changeType)", "entity": change.entityName,
                                       "key": change.primaryKey]
            item["updatedProperties"] = change.updatedProperties
            if !change.tombstone.isEmpty { item["tombstone"] = change.tombstone.mapValues(\.description) }
            return item
        }
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        return String(decoding: data, as: UTF8.self)
    }
}
