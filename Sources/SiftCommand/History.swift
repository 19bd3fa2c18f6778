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
            you read to see only what came since. With --delete-before, deletes the transactions (and their changes) \
            every reader has read instead, as Core Data's deleteHistory(before:) does, and prints how many.
            """)

    @Option(help: ArgumentHelp("The store file.", valueName: "file"))
    var store: String

    @Option(help: ArgumentHelp("The model bundle or file, for a store without a model cache.", valueName: "model"))
    var model: String?

    @Option(parsing: .unconditional, help: ArgumentHelp("Only transactions after this transaction number.", valueName: "number"))
    var after: Int64?

    @Option(help: ArgumentHelp("Only transactions at or after this time: ISO 8601 (2024-05-10T18:00:00Z).", valueName: "date"))
    var since: String?

    @Flag(help: "One line per transaction: the changes counted by type and entity, not listed.")
    var counts = false

    @Option(help: ArgumentHelp("How to print: table (the default: a line per transaction, then its changes), json (an array "
                               + "of transactions), jsonl (one transaction a line) or csv (one row per change).", valueName: "format"))
    var format: OutputFormat = .table

    @Option(parsing: .unconditional, help: ArgumentHelp(
        "Delete the transactions before this one instead, with their changes: a transaction number (those numbered "
            + "below it go), or an ISO 8601 time (those made before it go). Prints how many were deleted.",
        valueName: "number|date"))
    var deleteBefore: String?

    @OptionGroup var output: QuietOption

    /// Where `--delete-before` stops: before a transaction number, or before a time.
    enum Boundary {
        case transaction(Int64)
        case date(Date)
    }

    /// The `--delete-before` boundary; nil when it is not given (or is neither a number nor a date).
    var boundary: Boundary? {
        guard let deleteBefore else { return nil }
        if let number = Int64(deleteBefore) { return .transaction(number) }
        return ISO8601DateFormatter().date(from: deleteBefore).map(Boundary.date)
    }

    func validate() throws {
        if let since, ISO8601DateFormatter().date(from: since) == nil {
            throw ValidationError("--since '\(since)' is not an ISO 8601 date such as 2024-05-10T18:00:00Z")
        }
        if let deleteBefore {
            guard boundary != nil else {
                throw ValidationError("--delete-before takes a transaction number or an ISO 8601 date such as "
                                      + "2024-05-10T18:00:00Z, not '\(deleteBefore)'")
            }
            if after != nil || since != nil || counts {
                throw ValidationError("--delete-before deletes, it lists nothing: give it without --after, --since or --counts")
            }
        }
    }

    func run() throws {
        if let boundary { return try delete(before: boundary) }
        let sqlite = try openStore(store, model: model, readOnly: true)
        defer { sqlite.close() }
        let progress = ProgressLine("reading")
        let transactions = try storeFailure {
            defer { progress.finish() }
            let token = try after.map { PersistentHistoryToken(storeUUID: try sqlite.identifier, transactionNumber: $0) }
            return try sqlite.persistentHistory(after: token, since: since.flatMap(ISO8601DateFormatter().date(from:)))
        }
        let out = OutputBuffer()
        switch format {
        case .table:
            for transaction in transactions { table(transaction, out) }
        case .json:
            out.line(JSONText.pretty(.array(transactions.map(value))))
        case .jsonl:
            for transaction in transactions { out.line(JSONText.compact(value(transaction))) }
        case .csv:
            let columns = ["transaction", "timestamp", "author", "bundleID", "contextName", "processID", "type", "entity", "key",
                           "updatedProperties"]
            let rows = transactions.flatMap { transaction in
                transaction.changes.map { change -> [PredicateValue] in
                    [.int(transaction.transactionNumber), .date(transaction.timestamp),
                     transaction.author.map(PredicateValue.string) ?? .null, transaction.bundleID.map(PredicateValue.string) ?? .null,
                     transaction.contextName.map(PredicateValue.string) ?? .null,
                     transaction.processID.map(PredicateValue.string) ?? .null,
                     .string("\(change.changeType)"), .string(change.entityName), .int(change.primaryKey),
                     change.updatedProperties.map { .string($0.joined(separator: " ")) } ?? .null]
                }
            }
            ResultRows(columns: columns, rows: rows).print(.csv)
        }
    }

    /// Deletes the history before `boundary`, printing how many transactions
    /// went (and, unless `--quiet`, a sentence saying so on standard error).
    private func delete(before boundary: Boundary) throws {
        let sqlite = try openStore(store, model: model)
        defer { sqlite.close() }
        let progress = output.progress("deleting history", main: .deletingHistory)
        let deleted: Int
        do {
            defer { progress.finish() }
            switch boundary {
            case .transaction(let number):
                let token = PersistentHistoryToken(storeUUID: try sqlite.identifier, transactionNumber: number)
                deleted = try sqlite.deleteHistory(before: token, progress: progress.report)
            case .date(let date):
                deleted = try sqlite.deleteHistory(before: date, progress: progress.report)
            }
        } catch {
            throw CommandFailure(error).naming(URL(fileURLWithPath: store), as: store)
        }
        printCount(deleted, format)
        if !output.quiet {
            let before = switch boundary {
            case .transaction(let number): "numbered below \(number)"
            case .date(let date): "made before \(ISODate.string(date))"
            }
            printError("deleted \(counted(deleted, "history transaction")) \(before), with their changes, \(progress.elapsed)")
        }
    }

    /// A transaction as lines: the transaction, then its changes (or their counts).
    private func table(_ transaction: PersistentHistoryTransaction, _ out: OutputBuffer) {
        let who = [("author", transaction.author), ("bundle", transaction.bundleID), ("context", transaction.contextName),
                   ("process", transaction.processID)].compactMap { label, value in value.map { "\(label) \($0)" } }
        out.line((["transaction \(transaction.transactionNumber)", ISODate.string(transaction.timestamp)] + who
                  + [counted(transaction.changes.count, "change")]).joined(separator: "  "))
        if counts {
            var tally: [String: Int] = [:]
            for change in transaction.changes { tally["\(change.changeType) \(change.entityName)", default: 0] += 1 }
            for (key, count) in tally.sorted(by: { $0.key < $1.key }) { out.line("  \(key): \(count)") }
            return
        }
        for change in transaction.changes {
            var line = "  \(change.changeType) \(change.entityName) \(change.primaryKey)"
            if let properties = change.updatedProperties { line += " (" + properties.joined(separator: ", ") + ")" }
            if !change.tombstone.isEmpty {
                line += " " + change.tombstone.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
            }
            out.line(line)
        }
    }

    /// A transaction as one JSON object, its changes in an array.
    private func value(_ transaction: PersistentHistoryTransaction) -> PredicateValue {
        var object: [String: PredicateValue] = ["transaction": .int(transaction.transactionNumber),
                                                "timestamp": .date(transaction.timestamp)]
        object["author"] = transaction.author.map(PredicateValue.string)
        object["bundleID"] = transaction.bundleID.map(PredicateValue.string)
        object["contextName"] = transaction.contextName.map(PredicateValue.string)
        object["processID"] = transaction.processID.map(PredicateValue.string)
        object["changes"] = .array(transaction.changes.map { change in
            var item: [String: PredicateValue] = ["id": .int(change.changeID), "type": .string("\(change.changeType)"),
                                                  "entity": .string(change.entityName), "key": .int(change.primaryKey)]
            item["updatedProperties"] = change.updatedProperties.map { .array($0.map(PredicateValue.string)) }
            if !change.tombstone.isEmpty { item["tombstone"] = .dictionary(change.tombstone.mapValues { .string($0.description) }) }
            return .dictionary(item)
        })
        return .dictionary(object)
    }
}
