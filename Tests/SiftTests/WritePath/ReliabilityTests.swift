// Reliability: a process killed in the middle of a large save leaves the
// store whole (all of the save, or none of it); contexts saving the same
// objects at once lose no update.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Reliability")
struct ReliabilityTests {
    @Test func killedInTheMiddleOfASave() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-crash-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("company.sqlite").path
        do {
            let store = try SQLiteStore(url: URL(fileURLWithPath: path), model: Company.model)
            try store.importDataSet(Company.dataSet)
        }
        let count = 30_000
        for delay in [0.05, 0.3] {
            let process = Process()
            process.executableURL = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift")
            process.arguments = ["stress-save", "--store", path, "--count", String(count)]
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

            let reopened = try SQLiteStore(url: URL(fileURLWithPath: path))
            let employees = try ObjectContext(store: reopened).count(for: FetchRequest(entityName: "Employee"))
            let before = 60
            let finished = String(decoding: seen + output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
                .contains("saved")
            #expect(employees == before || employees == before + count, "\(employees) employees after a kill")
            if !finished { #expect(employees == before) }
            let check = try reopened.withConnection { try $0.query("PRAGMA integrity_check") }
            #expect(check.first?.first == .text("ok"))
            if employees != before { break }
        }
    }

    @Test func concurrentContextsLoseNoUpdate() async throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        try store.importDataSet(Company.dataSet)
        let ids: [Int64] = [101, 102, 103]
        let workers = 4
        let increments = 25
        try await withThrowingTaskGroup(of: Int.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    // Each task has its own context, confined to it.
                    let context = ObjectContext(store: store)
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
        let check = ObjectContext(store: store)
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
}
