// Reliability: a process killed in the middle of a large save leaves the
// store whole (all of the save, or none of it); contexts saving the same
// objects at once lose no update.

import Foundation
import Sift
import SiftStore
import Synchronization
import Testing

/// Runs `sift stress-save` (a save of `count` employees), kills it outright
/// `delay` seconds after its save began, and says whether it had said the
/// save was done.
func killInTheMiddleOfASave(store path: String, count: Int, after delay: Double, atomic: Bool = false) throws -> Bool {
    let process = Process()
    process.executableURL = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift")
    process.arguments = ["stress-save", "--store", path, "--count", String(count)] + (atomic ? ["--atomic"] : [])
    let output = Pipe()
    process.standardOutput = output
    try process.run()
    // Wait until the save has begun, then kill the process outright.
    var seen = Data()
    while !String(decoding: seen, as: UTF8.self).contains("saving") {
        let chunk = output.fileHandleForReading.availableData
        if chunk.isEmpty { break }
        seen.append(chunk)
    }
    Thread.sleep(forTimeInterval: delay)
    kill(process.processIdentifier, SIGKILL)
    process.waitUntilExit()
    return String(decoding: seen + output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).contains("saved")
}

@Suite("Reliability")
struct ReliabilityTests {
    @Test(arguments: StoreKind.local)
    func killedInTheMiddleOfASave(_ kind: StoreKind) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-crash-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let url = folder.appendingPathComponent(kind == .sqlite ? "company.sqlite" : "company.json")
        let path = url.path
        switch kind {
        case .sqlite: try SQLiteStore(url: url, model: Company.model).importDataSet(Company.dataSet)
        case .atomic: try AtomicStore(url: url, model: Company.model).importDataSet(Company.dataSet)
        case .postgres, .incremental, .incrementalEverything, .remote: Issue.record("a store in a file only")
        }
        let count = 30_000
        for delay in [0.05, 0.3] {
            let finished = try killInTheMiddleOfASave(store: path, count: count, after: delay, atomic: kind == .atomic)

            let reopened: TestStore = kind == .sqlite
                ? TestStore(try SQLiteStore(url: url), file: nil)
                : TestStore(try AtomicStore(url: url), file: nil)
            let employees = try reopened.context().count(for: FetchRequest(entityName: "Employee"))
            let before = 60
            #expect(employees == before || employees == before + count, "\(employees) employees after a kill")
            // The commit comes before the bookkeeping that precedes "saved":
            // a save that said so is there; one that did not may or may not be.
            if finished { #expect(employees == before + count) }
            if let sqlite = reopened.store as? SQLiteStore {
                let check = try sqlite.withConnection { try $0.query("PRAGMA integrity_check") }
                #expect(check.first?.first == .text("ok"))
            }
            if employees != before { break }
        }
    }

    @Test(arguments: StoreKind.allCases)
    func concurrentContextsLoseNoUpdate(_ kind: StoreKind) async throws {
        let store = try kind.make()
        let ids: [Int64] = [101, 102, 103]
        let workers = 4
        let increments = 25
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    // Each task has its own context, confined to it.
                    let context = store.context()
                    var conflicts = 0
                    for i in 0..<increments {
                        let id = ids[(worker + i) % ids.count]
                        while true {
                            let object = context.object(for: ObjectID(entity: 1, primaryKey: id))
                            context.refresh(object)
                            store.rowCache.remove([object.objectID])
                            let age = try object.value(forKey: "age")
                            guard case .int(let a) = age else { throw StoreError.unknownKey("age", entity: "Employee") }
                            try object.setValue(.int(a + 1), forKey: "age")
                            do {
                                try context.save()
                                break
                            } catch StoreError.conflicts {
                                conflicts += 1
                                context.rollback()
                            }
                        }
                        await Task.yield()
                    }
                    return conflicts
                }
            }
            for try await _ in group {}
        }
        let check = store.context()
        store.rowCache.removeAll()
        var initial: [Int64: Int64] = [:]
        for id in ids {
            if case .int(let age)? = Company.cache.node(ObjectID(entity: 1, primaryKey: id))?.values[2] { initial[id] = age }
        }
        var total: Int64 = 0
        for id in ids {
            guard case .int(let age) = try check.object(for: ObjectID(entity: 1, primaryKey: id)).value(forKey: "age") else {
                Issue.record("no age")
                continue
            }
            total += age - initial[id]!
        }
        #expect(total == Int64(workers * increments))
    }

    @Test(arguments: StoreKind.allCases)
    func readersNeverSeeASaveHalfDone(_ kind: StoreKind) throws {
        let store = try kind.make()
        let saves = 100
        let done = Synchronization.Atomic<Bool>(false)
        let wrongCounts = Synchronization.Mutex<[Int]>([])
        let reads = Synchronization.Atomic<Int>(0)
        // Two threads at once: this one saves, the other counts as fast as it can.
        let started = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let reader = Thread {
            started.signal()
            // At least one read, however fast the writer is on a busy machine.
            repeat {
                let count = (try? store.context().count(for: FetchRequest(entityName: "Employee"))) ?? -1
                reads.add(1, ordering: .relaxed)
                if count != 60 { wrongCounts.withLock { $0.append(count) } }
            } while !done.load(ordering: .acquiring)
            finished.signal()
        }
        reader.start()
        started.wait()
        let writer = store.context()
        for i in 0..<saves {
            let object = writer.object(for: ObjectID(entity: 1, primaryKey: 101 + Int64(i % 10)))
            try object.setValue(.int(Int64(i)), forKey: "age")
            try writer.save()
        }
        done.store(true, ordering: .releasing)
        finished.wait()
        #expect(wrongCounts.withLock { $0 }.isEmpty, "counts seen during saves: \(wrongCounts.withLock { Set($0) })")
        #expect(reads.load(ordering: .relaxed) > 0)
    }
}
