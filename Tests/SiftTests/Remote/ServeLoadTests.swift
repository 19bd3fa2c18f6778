// The load benchmark's promises, in short: `sift-benchmarks serve-load` (the debug build, beside the
// tests) runs its clients against a `sift serve` on SQLite and, when PostgreSQL is there, one and three
// servers on one database; every configuration ends with no error and no lost update. Its speed
// figures are the benchmark's business, not asserted here.

import Foundation
import Testing

@Suite("Load held")
struct ServeLoadTests {
    static let binaries = Bundle.module.bundleURL.deletingLastPathComponent()

    @Test("Concurrent fetches and incrementing saves through sift serve: no error, no lost update, on every configuration")
    func loadHeld() throws {
        let process = Process()
        process.executableURL = Self.binaries.appendingPathComponent("sift-benchmarks")
        process.arguments = ["serve-load"]
        var environment = ProcessInfo.processInfo.environment
        environment["SIFT_LOAD_SECONDS"] = "2"
        environment["SIFT_LOAD_CLIENTS"] = "16"
        environment["SIFT_BENCH_EMPLOYEES"] = "2000"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        // A hung run fails the test instead of holding the suite: killed after 5 minutes.
        let pid = process.processIdentifier
        let watchdog = DispatchWorkItem { kill(pid, SIGKILL) }
        DispatchQueue.global().asyncAfter(deadline: .now() + 300, execute: watchdog)
        defer { watchdog.cancel() }
        let text = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 0, "\(text)")

        let lines = text.split(separator: "\n").map(String.init)
        var expected = ["SQLite, 1 server", "sift serve, reads only"]
        if ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"] != nil {
            expected += ["PostgreSQL, 1 server", "PostgreSQL, 3 servers"]
        }
        for name in expected {
            let line = try #require(lines.first { $0.hasPrefix(name) }, "no line for \(name) in:\n\(text)")
            #expect(line.contains("errors 0 "), "\(line)")
            #expect(!line.contains(" 0 requests/s"), "\(line)")
            if name != "sift serve, reads only" {
                #expect(line.contains("lost updates 0 "), "\(line)")
                #expect(!line.contains("increments 0 "), "\(line)")
            }
        }
    }
}
