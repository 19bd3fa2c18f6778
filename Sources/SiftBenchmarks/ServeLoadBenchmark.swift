// Load held (`sift-benchmarks serve-load`): many concurrent clients against `sift serve` processes,
// for a fixed time. 90 % of the operations are small fetches (one employee by name), 10 % saves that
// increment a counter (a department's budget: read the row and its version, write budget + 1 with that
// version, read again and retry when another save moved it first). Printed per configuration: requests
// per second, p50 and p99 latency, errors (goal 0), lost updates (what the counters gained against the
// increments the servers acknowledged; goal 0) and each server's resident memory after a warm-up and at
// the end (goal: flat). Configurations: one server on an SQLite file; one and three servers on one
// PostgreSQL database (when SIFT_POSTGRES_URL is set), clients spread over the servers.
//
// Beside it, in the same run: the same filtered reads, reads only, against `sift serve` and against
// Datasette (from PyPI: `python3 -m pip install datasette`) serving the same SQLite file, its reads as
// SQL through its JSON API. Goal: `sift serve` reads at least as many requests per second.
//
// The servers are `sift` processes: build the `sift` product in the same configuration first
// (`swift build -c release --product sift`). Settings from the environment: SIFT_LOAD_SECONDS (10 per
// phase), SIFT_LOAD_CLIENTS (64), SIFT_BENCH_EMPLOYEES (100 000).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import AsyncHTTPClient
import Foundation
import NIOCore
import Sift
import SiftDemo
import SiftHTTPAPI
import SiftPostgres
import SiftStore

func serveLoadBenchmark() {
    let environment = ProcessInfo.processInfo.environment
    let seconds = Double(environment["SIFT_LOAD_SECONDS"] ?? "") ?? 10
    let clients = max(1, Int(environment["SIFT_LOAD_CLIENTS"] ?? "") ?? 64)
    let employees = max(10, Int(environment["SIFT_BENCH_EMPLOYEES"] ?? "") ?? 100_000)
    let sift = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("sift")
    guard FileManager.default.isExecutableFile(atPath: sift.path) else {
        report("== Serve load: skipped (no `sift` beside the benchmarks: build it too, `swift build -c release --product sift`)")
        return
    }
    report("== Serve load: \(clients) clients, \(formatted(seconds, digits: 0)) s a phase, \(employees) employees;",
           "90 % fetches of one employee by name, 10 % saves incrementing a department's budget")
    let nodes = CompanyGenerator.nodes(employees: employees)
    var generator = SplitMix(seed: 7)
    let names: [String] = (0..<1_000).compactMap { _ in
        nodes[Int(generator.next() % UInt64(employees)) + 10].values[0].stringValue
    }
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-bench-load-\(UUID().uuidString)")
    try! FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("company.sqlite")
    try! SQLiteStore(url: file, model: CompanyGenerator.model).importNodes(nodes)

    let load = LoadRun(names: names, clients: clients, seconds: seconds)
    do {
        let servers = try [ServerProcess(sift, ["serve", "--store", file.path, "--port", "0", "--writable"])]
        let reads = try load.run(servers, saveShare: 0, kind: .sift)
        report(LoadRun.line("sift serve, reads only", reads, servers: servers))
        let mixed = try load.run(servers, saveShare: 0.1, kind: .sift)
        report(LoadRun.line("SQLite, 1 server", mixed, servers: servers))
        for server in servers { server.stop() }
        if let datasette = try ServerProcess.datasette(serving: file) {
            let theirs = try load.run([datasette], saveShare: 0, kind: .datasette(database: "company"))
            report(LoadRun.line("Datasette, reads only", theirs, servers: [datasette]))
            report("sift serve reads \(formatted(reads.requestsPerSecond / theirs.requestsPerSecond, digits: 2))x Datasette's requests per second (goal: at least 1x)")
            datasette.stop()
        } else {
            report("Datasette: skipped (not installed: python3 -m pip install datasette)")
        }
    } catch {
        report("SQLite: failed: \(error)")
    }

    guard let postgres = environment["SIFT_POSTGRES_URL"] else {
        report("PostgreSQL: skipped (SIFT_POSTGRES_URL is not set; `source .ci/postgres && start_postgres` starts a server)")
        return
    }
    let schema = "sift_load_\(UUID().uuidString.prefix(8).lowercased())"
    let store = try! PostgresStore(url: postgres, model: CompanyGenerator.model, schemaName: schema, observesOtherProcesses: false)
    defer { try? store.destroy() }
    try! store.importNodes(nodes)
    for count in [1, 3] {
        do {
            let servers = try (0..<count).map { _ in
                try ServerProcess(sift, ["serve", "--postgres", postgres, "--schema", schema, "--port", "0", "--writable"])
            }
            defer { for server in servers { server.stop() } }
            let mixed = try load.run(servers, saveShare: 0.1, kind: .sift)
            report(LoadRun.line("PostgreSQL, \(count) server\(count == 1 ? "" : "s")", mixed, servers: servers))
        } catch {
            report("PostgreSQL, \(count) servers: failed: \(error)")
        }
    }
}

/// A server in a process of its own: `sift serve`, or Datasette.
final class ServerProcess: @unchecked Sendable {
    let process = Process()
    let url: String
    /// Resident memory after the first phase's warm-up, in bytes.
    var warmMemory: Int64 = 0

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }

    /// Starts `executable` with `arguments` and waits (at most 30 s) for the line that names its address:
    /// `listening on <url>` (sift) or `Uvicorn running on <url>` (Datasette).
    init(_ executable: URL, _ arguments: [String], environment: [String: String]? = nil) throws {
        process.executableURL = executable
        process.arguments = arguments
        if let environment { process.environment = environment }
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        try process.run()
        var text = ""
        let deadline = ContinuousClock.now + .seconds(30)
        let reader = output.fileHandleForReading
        while ContinuousClock.now < deadline {
            let chunk = reader.availableData
            if chunk.isEmpty { break }
            text += String(decoding: chunk, as: UTF8.self)
            if let found = Self.address(in: text) {
                url = found
                // Keep reading (and dropping) what it prints, so a full pipe never blocks it.
                DispatchQueue.global().async { while !reader.availableData.isEmpty {} }
                return
            }
        }
        process.terminate()
        throw Failure(description: "\(executable.lastPathComponent) did not start: \(text.suffix(2_000))")
    }

    private static func address(in text: String) -> String? {
        for line in text.split(separator: "\n") {
            for marker in ["listening on ", "Uvicorn running on "] {
                guard let range = line.range(of: marker) else { continue }
                let rest = line[range.upperBound...]
                let address = String(rest.prefix { !$0.isWhitespace })
                return address.hasSuffix("/") ? String(address.dropLast()) : address
            }
        }
        return nil
    }

    /// Datasette serving `file` on a free port, or nil when it is not installed.
    static func datasette(serving file: URL) throws -> ServerProcess? {
        let python = URL(fileURLWithPath: "/usr/bin/env")
        let check = Process()
        check.executableURL = python
        check.arguments = ["python3", "-c", "import datasette"]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        try check.run()
        check.waitUntilExit()
        guard check.terminationStatus == 0 else { return nil }
        return try ServerProcess(python, ["python3", "-m", "datasette", "serve", file.path, "--host", "127.0.0.1", "--port", "0"])
    }

    /// The process's resident memory, in bytes (Linux: /proc/<pid>/status).
    var residentMemory: Int64 {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
              let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
              let kilobytes = Int64(line.split(separator: " ").dropFirst().first ?? "") else { return 0 }
        return kilobytes * 1024
    }

    /// Asks the server to stop (SIGTERM), and kills it when it has not stopped within 5 seconds (a
    /// graceful shutdown can wait on a connection that never closes).
    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(5)
        while process.isRunning, ContinuousClock.now < deadline { usleep(20_000) }
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        process.waitUntilExit()
    }
}

/// One phase of load: `clients` tasks, each looping over operations until the time is up.
struct LoadRun: Sendable {
    let names: [String]
    let clients: Int
    let seconds: Double

    enum Kind: Sendable {
        case sift
        /// Datasette, its reads as SQL on the database named so.
        case datasette(database: String)
    }

    struct Result: Sendable {
        var requests = 0
        var errors = 0
        /// Increments acknowledged (a 200 to the save), and saves refused because another moved the row first.
        var increments = 0
        var conflicts = 0
        var latencies: [Double] = []
        var elapsed: Double = 0
        /// What the counters gained, less the increments acknowledged (nil when the phase saved nothing).
        var lostUpdates: Int?
        var firstError: String?

        var requestsPerSecond: Double { Double(requests) / max(elapsed, 1e-9) }

        func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return 0 }
            let sorted = latencies.sorted()
            return sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))]
        }

        mutating func add(_ other: Result) {
            requests += other.requests
            errors += other.errors
            increments += other.increments
            conflicts += other.conflicts
            latencies += other.latencies
            if firstError == nil { firstError = other.firstError }
        }
    }

    /// Runs one phase against `servers` (client i talks to server i mod n) and reports what it measured.
    func run(_ servers: [ServerProcess], saveShare: Double, kind: Kind) throws -> Result {
        let urls = servers.map(\.url)
        let (names, clients, seconds) = (self.names, self.clients, self.seconds)
        let result = try BlockingBridge.run {
            var configuration = HTTPClient.Configuration()
            configuration.connectionPool = .init(idleTimeout: .seconds(60), concurrentHTTP1ConnectionsPerHostSoftLimit: clients)
            let http = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
            do {
                let before = saveShare > 0 ? try await Self.budgets(http, urls[0]) : 0
                // A warm-up (a second of reads), then the memory each server starts the phase with.
                _ = await Self.phase(http, urls, names: names, clients: clients, seconds: 1, saveShare: 0, kind: kind)
                for server in servers where server.warmMemory == 0 { server.warmMemory = server.residentMemory }
                var result = await Self.phase(http, urls, names: names, clients: clients, seconds: seconds,
                                              saveShare: saveShare, kind: kind)
                if saveShare > 0 {
                    let gained = try await Self.budgets(http, urls[0]) - before
                    result.lostUpdates = Int(gained.rounded()) - result.increments
                }
                try await http.shutdown()
                return result
            } catch {
                try? await http.shutdown()
                throw error
            }
        }
        return result
    }

    private static func phase(_ http: HTTPClient, _ urls: [String], names: [String], clients: Int, seconds: Double,
                              saveShare: Double, kind: Kind) async -> Result {
        let start = ContinuousClock.now
        let end = start + .milliseconds(Int64(seconds * 1000))
        // Each phase's clients are new origins: a change set's identity is never one an earlier phase used.
        let run = UUID().uuidString.prefix(8)
        var total = Result()
        await withTaskGroup(of: Result.self) { group in
            for client in 0..<clients {
                group.addTask {
                    var result = Result()
                    var generator = SplitMix(seed: UInt64(client + 1))
                    let url = urls[client % urls.count]
                    var sequence: Int64 = 0
                    while ContinuousClock.now < end {
                        let draw = Double(generator.next() % 1_000) / 1_000
                        if draw < saveShare {
                            sequence += 1
                            await increment(http, url, department: Int64(generator.next() % 10) + 1,
                                            origin: "load-\(run)-\(client)", sequence: &sequence, into: &result)
                        } else {
                            let name = names[Int(generator.next() % UInt64(names.count))]
                            await read(http, url, name: name, kind: kind, into: &result)
                        }
                    }
                    return result
                }
            }
            for await result in group { total.add(result) }
        }
        total.elapsed = SiftBenchmarks.seconds(ContinuousClock.now - start)
        return total
    }

    /// Sends one request, timing it; answers its status and body (nil, counted as an error, when it failed).
    private static func send(_ http: HTTPClient, _ request: HTTPClientRequest, into result: inout Result) async -> (UInt, Data)? {
        let clock = ContinuousClock.now
        result.requests += 1
        do {
            let response = try await http.execute(request, timeout: .seconds(30))
            let body = try await response.body.collect(upTo: 1 << 24)
            result.latencies.append(SiftBenchmarks.seconds(ContinuousClock.now - clock) * 1e3)
            return (response.status.code, Data(body.readableBytesView))
        } catch {
            result.errors += 1
            if result.firstError == nil { result.firstError = "\(error)" }
            return nil
        }
    }

    private static func post(_ url: String, _ path: String, _ body: [String: Any]) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: url + path)
        request.method = .POST
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "Accept", value: "application/json")
        request.body = .bytes(ByteBuffer(bytes: try! JSONSerialization.data(withJSONObject: body)))
        return request
    }

    private static func read(_ http: HTTPClient, _ url: String, name: String, kind: Kind, into result: inout Result) async {
        let request: HTTPClientRequest
        switch kind {
        case .sift:
            request = post(url, "/v1/fetch", ["entity": "Employee", "predicate": "name == %@", "arguments": [name], "limit": 1])
        case .datasette(let database):
            // The row a fetch of the object reads, as SQL: its key, version, attributes and to-one keys.
            var components = URLComponents(string: url + "/" + database + ".json")!
            components.queryItems = [
                URLQueryItem(name: "sql", value: "select Z_PK, Z_ENT, Z_OPT, ZNAME, ZNICKNAME, ZAGE, ZSALARY, ZRATING, ZISMANAGER, "
                             + "ZSTARTDATE, ZDEPARTMENT, ZMANAGER from ZEMPLOYEE where ZNAME = :name limit 1"),
                URLQueryItem(name: "name", value: name), URLQueryItem(name: "_shape", value: "array"),
            ]
            request = HTTPClientRequest(url: components.url!.absoluteString)
        }
        guard let (status, body) = await send(http, request, into: &result) else { return }
        if status != 200 || body.count < 3 { fail(&result, "read: \(status) \(String(decoding: body.prefix(200), as: UTF8.self))") }
    }

    /// Adds 1 to a department's budget with optimistic locking: read, write with the version read, and on a
    /// conflict read again (at most 50 times).
    private static func increment(_ http: HTTPClient, _ url: String, department: Int64, origin: String,
                                  sequence: inout Int64, into result: inout Result) async {
        for _ in 0..<50 {
            guard let (status, body) = await send(http, post(url, "/v1/objects", ["entity": "Department", "keys": [department]]), into: &result),
                  status == 200,
                  let answer = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
                  let row = (answer["objects"] as? [[String: Any]])?.first,
                  let version = (row["version"] as? NSNumber)?.int64Value,
                  var values = row["values"] as? [String: Any],
                  let budget = (values["budget"] as? NSNumber)?.doubleValue else {
                return fail(&result, "increment: could not read department \(department)")
            }
            // An update carries the object's values (every one, as a save of a context sends them).
            values["budget"] = budget + 1
            let save: [String: Any] = [
                "origin": origin, "sequence": sequence,
                "updates": [["key": department, "entity": "Department", "expectedVersion": version, "values": values,
                             "toOne": row["toOne"] ?? [String: Any]()]],
            ]
            guard let (saved, answer) = await send(http, post(url, "/v1/save", save), into: &result) else { return }
            switch saved {
            case 200:
                result.increments += 1
                return
            case 409:
                result.conflicts += 1
                sequence += 1  // a new change set: the next try writes what it reads then
            default:
                return fail(&result, "save: \(saved) \(String(decoding: answer.prefix(200), as: UTF8.self))")
            }
        }
    }

    private static func fail(_ result: inout Result, _ message: String) {
        result.errors += 1
        if result.firstError == nil { result.firstError = message }
    }

    /// The sum of every department's budget.
    private static func budgets(_ http: HTTPClient, _ url: String) async throws -> Double {
        var scratch = Result()
        guard let (status, body) = await send(http, post(url, "/v1/fetch", ["entity": "Department"]), into: &scratch), status == 200,
              let answer = try JSONSerialization.jsonObject(with: body) as? [String: Any],
              let rows = answer["objects"] as? [[String: Any]] else {
            throw ServerProcess.Failure(description: "could not read the departments' budgets: \(scratch.firstError ?? "")")
        }
        return rows.reduce(0) { $0 + ((($1["values"] as? [String: Any])?["budget"] as? NSNumber)?.doubleValue ?? 0) }
    }

    /// One configuration's line.
    static func line(_ name: String, _ result: Result, servers: [ServerProcess]) -> String {
        let megabytes = { (bytes: Int64) in formatted(Double(bytes) / 1_048_576, digits: 0) }
        let memory = servers.map { "\(megabytes($0.warmMemory))→\(megabytes($0.residentMemory)) MB" }.joined(separator: ", ")
        var columns = [name.padding(toLength: 24, withPad: " ", startingAt: 0),
                       "\(formatted(result.requestsPerSecond, digits: 0)) requests/s",
                       "p50 \(formatted(result.percentile(0.5), digits: 2)) ms", "p99 \(formatted(result.percentile(0.99), digits: 2)) ms",
                       "errors \(result.errors)"]
        if let lost = result.lostUpdates {
            columns.append("increments \(result.increments) (\(result.conflicts) conflicts retried)")
            columns.append("lost updates \(lost)")
        }
        columns.append("memory \(memory)")
        if let first = result.firstError { columns.append("first error: \(first)") }
        return columns.joined(separator: "  ")
    }
}
#else
func serveLoadBenchmark() {
    report("== Serve load: built without the HTTP trait")
}
#endif
