// Other processes' saves, with real processes: two and four `sift` processes
// saving to one store for 30 seconds (each with its own context and merge
// policy, merging what the others save) end with views equal to a fresh
// fetch and no increment lost; `kill -9` in the middle of a save leaves no
// half transaction in history; `sift watch` shows another process's save
// within a second.

import Foundation
import Sift
@testable import SiftStore
import Synchronization
import Testing

@Suite("Other processes' saves")
struct OtherProcessTests {
    static func sift() -> URL { Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift") }

    /// A company store in a folder of its own, keeping history or not.
    static func companyStore(history: Bool) throws -> (URL, URL) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-processes-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("company.sqlite")
        try SQLiteStore(url: url, model: Company.model, historyTracking: history ? .on : .asStored).importDataSet(Company.dataSet)
        return (folder, url)
    }

    struct Sharing: Sendable, CustomTestStringConvertible {
        let policies: [String]
        let history: Bool
        let seconds: Double
        var testDescription: String { "\(policies.count) processes, \(history ? "history" : "no history"), \(Int(seconds)) s" }
    }

    @Test("Processes sharing a store: every merged view equals a fresh fetch, no increment is lost, no lock error leaks",
          arguments: [Sharing(policies: ["error", "storeTrump"], history: true, seconds: 30),
                      Sharing(policies: ["error", "storeTrump", "objectTrump", "rollback"], history: true, seconds: 30),
                      Sharing(policies: ["overwrite", "error"], history: false, seconds: 5)])
    func sharing(_ sharing: Sharing) throws {
        let (folder, url) = try Self.companyStore(history: sharing.history)
        defer { try? FileManager.default.removeItem(at: folder) }
        let before = ObjectContext(store: try SQLiteStore(url: url))
        let tagsBefore = try before.count(for: FetchRequest(entityName: "Tag"))
        let department = try before.fetch(FetchRequest(entityName: "Department", sortDescriptors: [FetchSortDescriptor("name")]))[0]
        let budgetBefore = department["budget"]?.doubleValue ?? 0
        let tokenBefore = sharing.history ? try SQLiteStore(url: url).currentPersistentHistoryToken() : nil

        var processes: [(Process, Pipe, Pipe)] = []
        for (index, policy) in sharing.policies.enumerated() {
            let process = Process()
            process.executableURL = Self.sift()
            process.arguments = ["stress-share", "--store", url.path, "--name", "p\(index)", "--processes", String(sharing.policies.count),
                                 "--seconds", String(sharing.seconds), "--policy", policy]
            let output = Pipe(), error = Pipe()
            process.standardOutput = output
            process.standardError = error
            try process.run()
            processes.append((process, output, error))
        }
        var increments: Int64 = 0, inserted: Int64 = 0
        for (process, output, error) in processes {
            let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            let problem = String(decoding: error.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0, "\(problem)")
            guard let report = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
                Issue.record("no report: \(text) \(problem)")
                continue
            }
            // Its view, merged as the others saved, is what a fresh fetch reads.
            #expect(report["sameTags"] as? Bool == true, "\(report)")
            #expect(report["seenBudget"] as? Double == report["freshBudget"] as? Double, "\(report)")
            increments += (report["increments"] as? NSNumber)?.int64Value ?? 0
            inserted += (report["inserted"] as? NSNumber)?.int64Value ?? 0
        }
        let after = ObjectContext(store: try SQLiteStore(url: url))
        #expect(increments > 0 && inserted > 0)
        #expect(try after.count(for: FetchRequest(entityName: "Tag")) == tagsBefore + Int(inserted))
        #expect(after.object(for: department.objectID)["budget"]?.doubleValue == budgetBefore + Double(increments))
        if sharing.history {
            // One transaction per save, none empty, none twice.
            let history = try SQLiteStore(url: url).persistentHistory(after: tokenBefore)
            #expect(history.count == Int(inserted + increments))
            #expect(history.allSatisfy { !$0.changes.isEmpty })
            #expect(Set(history.map(\.transactionNumber)).count == history.count)
        }
    }

    @Test("kill -9 in the middle of a save to a store with history: all of it (its transaction whole) or none of it")
    func killedWriterLeavesNoHalfTransaction() throws {
        let (folder, url) = try Self.companyStore(history: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let count = 20_000
        let employeesBefore = try ObjectContext(store: try SQLiteStore(url: url)).count(for: FetchRequest(entityName: "Employee"))
        let transactionsBefore = try SQLiteStore(url: url).persistentHistory().count
        for delay in [0.05, 0.3, 1.0] {
            let finished = try killInTheMiddleOfASave(store: url.path, count: count, after: delay)

            let store = try SQLiteStore(url: url)
            let employees = try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee"))
            let history = try store.persistentHistory()
            #expect(employees == employeesBefore || employees == employeesBefore + count, "\(employees) employees after a kill")
            if employees == employeesBefore {
                #expect(history.count == transactionsBefore && !finished)
            } else {
                #expect(history.count == transactionsBefore + 1)
                #expect(history.last?.changes.filter { $0.changeType == .insert && $0.entityName == "Employee" }.count == count)
            }
            // No change outside a transaction, and the file whole.
            let orphans = try store.withConnection {
                try $0.query("SELECT COUNT(*) FROM ACHANGE WHERE ZTRANSACTIONID NOT IN (SELECT Z_PK FROM ATRANSACTION)")
            }
            #expect(orphans == [[.integer(0)]])
            #expect(try store.withConnection { try $0.query("PRAGMA integrity_check") }.first?.first == .text("ok"))
            if employees != employeesBefore { break }
        }
    }

    @Test("sift watch prints the results (of --entity, or of every entity the predicate fits), then another process's save within a second",
          arguments: [true, false])
    func watch(_ history: Bool) throws {
        let (folder, url) = try Self.companyStore(history: history)
        defer { try? FileManager.default.removeItem(at: folder) }
        let watcher = Process()
        watcher.executableURL = Self.sift()
        // (Without history, without --entity: every entity the predicate fits, Employee alone here.)
        watcher.arguments = ["watch", "--store", url.path] + (history ? ["--entity", "Employee"] : []) + ["--sort", "name",
                                                                                                       "--interval", "0.05", "age > 60"]
        let output = Pipe()
        watcher.standardOutput = output
        // What the watcher printed so far, read as it comes.
        let printed = Mutex("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            printed.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
        }
        try watcher.run()
        defer {
            // (SIGKILL: a child of a test thread may have SIGTERM blocked.)
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
        }
        var text: String { printed.withLock { $0 } }
        func waitFor(_ needle: String, seconds: Double) -> Bool {
            let deadline = Date().addingTimeInterval(seconds)
            while !text.contains(needle), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
            return text.contains(needle)
        }
        #expect(waitFor("watching (", seconds: 30), "\(text)")
        let listed = text.split(separator: "\n").filter { $0.contains("  Employee ") }.count
        let expected = try ObjectContext(store: try SQLiteStore(url: url)).count(for: FetchRequest(entityName: "Employee",
                                                                                                    predicate: "age > 60"))
        #expect(listed == expected && expected > 0)
        // Another process: one employee into the results, the oldest out.
        let start = Date()
        let update = try runSift(["update", "--store", url.path, "--entity", "Employee", "--set", "age=70", "name == 'Alice Anderson'"])
        #expect(update.status == 0, "\(update.error)")
        #expect(waitFor("insert Employee", seconds: 5), "\(text)")
        let latency = Date().timeIntervalSince(start)
        #expect(latency < 1 + 0.5, "seen after \(latency) s (the update's own process included)")
        #expect(text.contains("name=Alice Anderson"))
        let removal = try runSift(["update", "--store", url.path, "--entity", "Employee", "--set", "age=20", "name == 'Alice Anderson'"])
        #expect(removal.status == 0)
        #expect(waitFor("delete Employee", seconds: 5), "\(text)")
    }

    /// Issue 49: `sift watch` printed its results and then nothing of a save another process made while it
    /// started (the store was listened to only after the first fetch, and only as long as the optimizer kept
    /// the context alive). Saves made at every moment of its start, a pipe for its output: each one shows,
    /// in the list it prints or as a line after it.
    @Test("sift watch misses no save made while it starts", arguments: [0.0, 0.02, 0.05, 0.1, 0.2])
    func watchFromItsStart(_ delay: Double) throws {
        let (folder, url) = try Self.companyStore(history: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let watcher = Process()
        watcher.executableURL = Self.sift()
        watcher.arguments = ["watch", "--store", url.path, "--entity", "Employee", "--interval", "0.05", "age > 40"]
        let output = Pipe()
        watcher.standardOutput = output
        let printed = Mutex("")
        output.fileHandleForReading.readabilityHandler = { handle in
            let chunk = handle.availableData
            printed.withLock { $0 += String(decoding: chunk, as: UTF8.self) }
        }
        try watcher.run()
        defer {
            kill(watcher.processIdentifier, SIGKILL)
            watcher.waitUntilExit()
            output.fileHandleForReading.readabilityHandler = nil
        }
        Thread.sleep(forTimeInterval: delay)
        let young = try ObjectContext(store: try SQLiteStore(url: url)).count(for: FetchRequest(entityName: "Employee",
                                                                                               predicate: "age < 30"))
        let update = try runSift(["update", "--store", url.path, "--entity", "Employee", "--set", "age=age + 100", "age < 30"])
        #expect(update.status == 0, "\(update.error)")
        // Every young employee ends up shown as over 100: listed at the start, or inserted after.
        let deadline = Date().addingTimeInterval(10)
        func shown() -> Int {
            let lines = printed.withLock { $0 }.split(separator: "\n")
            // (Ages start under 100: one of 1xx is an updated employee's. Lines name "Employee <key>".)
            let keys = lines.filter { $0.contains(" age=1") && $0.split(separator: " ").contains { $0.hasPrefix("age=") && $0.count == 7 } }
                .compactMap { line in line.firstMatch(of: /Employee (\d+)/).map { String($0.1) } }
            return Set(keys).count
        }
        while shown() < young, Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        #expect(young > 0)
        #expect(shown() == young, "\(printed.withLock { $0 })")
    }

    @Test("Two stores on one file, as two processes: a save through one is merged by the other's context and moves its results",
          arguments: [true, false])
    func twoConnections(_ history: Bool) throws {
        let (folder, url) = try Self.companyStore(history: history)
        defer { try? FileManager.default.removeItem(at: folder) }
        let watched = try SQLiteStore(url: url)
        watched.otherProcessesPollingInterval = 0.02
        let context = ObjectContext(store: watched)
        let controller = try context.performAndWait { context in
            let controller = try FetchedResultsController(
                fetchRequest: FetchRequest(entityName: "Employee", predicate: "age > 60", sortDescriptors: [FetchSortDescriptor("name")]),
                context: context)
            try controller.performFetch()
            return controller
        }
        let alice = try context.performAndWait { context in
            try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == 'Alice Anderson'"))[0]
        }
        let before = context.performAndWait { _ in controller.fetchedObjects.count }
        context.automaticallyMergesChangesFromStore = true
        // The other "process": a store of its own on the same file.
        let other = ObjectContext(store: try SQLiteStore(url: url))
        let copy = other.object(for: alice.objectID)
        try copy.setValue(.int(70), forKey: "age")
        let start = Date()
        try other.save()
        var seen = false
        while !seen, Date().timeIntervalSince(start) < 5 {
            Thread.sleep(forTimeInterval: 0.005)
            seen = context.performAndWait { _ in controller.fetchedObjects.count == before + 1 }
        }
        #expect(seen)
        #expect(Date().timeIntervalSince(start) < 1)
        // The merged object holds the new value.
        #expect(context.performAndWait { _ in alice["age"] } == .int(70))
        // The watched store does not announce its own saves twice.
        let heard = Mutex<[StoreChanges]>([])
        let observation = watched.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        try context.performAndWait { context in
            try alice.setValue(.int(20), forKey: "age")
            try context.save()
        }
        Thread.sleep(forTimeInterval: 0.3)
        #expect(heard.withLock { $0.count } == 1)
        #expect(context.performAndWait { _ in controller.fetchedObjects.count } == before)
        // A writer that keeps no history (raw SQL): announced as changes to refetch, and the results follow.
        try SQLiteConnection(path: url.path).execute(
            #"UPDATE "ZEMPLOYEE" SET "ZAGE" = 71, "Z_OPT" = "Z_OPT" + 1 WHERE "Z_PK" = "# + String(alice.objectID.primaryKey))
        let rawStart = Date()
        seen = false
        while !seen, Date().timeIntervalSince(rawStart) < 5 {
            Thread.sleep(forTimeInterval: 0.005)
            seen = context.performAndWait { _ in controller.fetchedObjects.count == before + 1 }
        }
        #expect(seen && Date().timeIntervalSince(rawStart) < 1)
        // (Observers hear an announcement one after another: the context may
        // have merged it before this test's observer is called.)
        var heardUnknown = false
        while !heardUnknown, Date().timeIntervalSince(rawStart) < 5 {
            heardUnknown = heard.withLock { $0.last?.includesUnknownChanges } == true
            if !heardUnknown { Thread.sleep(forTimeInterval: 0.005) }
        }
        #expect(heardUnknown)
        #expect(context.performAndWait { _ in alice["age"] } == .int(71))
    }
}
