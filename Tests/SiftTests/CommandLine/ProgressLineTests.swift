// Progress on long work (issue 53): `sift import`, `copy`, `demo` (its first
// generation), `migrate` and `history --delete-before` show one line on a
// terminal — done / total, a rate, the time left — rewritten with `\r` and
// cleared at the end; nothing when standard output is not a terminal, and
// nothing with --quiet. The terminal is a pseudo-terminal the test opens;
// the stores report their steps to a closure (WorkProgress) as the work goes.

import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Sift
@testable import SiftStore
import Testing

/// A pseudo-terminal, 120 columns wide: `sift` writes to its terminal side,
/// the test reads what a terminal would show from the other.
final class PseudoTerminal {
    let controller: Int32
    let terminal: Int32

    /// A C library function the Glibc module leaves out (the pseudo-terminal
    /// calls need `_XOPEN_SOURCE`), found in the process's libraries.
    private static func libc<Function>(_ name: String, _ type: Function.Type) throws -> Function {
        guard let symbol = dlsym(dlopen(nil, RTLD_NOW), name) else { throw CocoaError(.featureUnsupported) }
        return unsafeBitCast(symbol, to: type)
    }

    init() throws {
        let openpt = try Self.libc("posix_openpt", (@convention(c) (Int32) -> Int32).self)
        let grantpt = try Self.libc("grantpt", (@convention(c) (Int32) -> Int32).self)
        let unlockpt = try Self.libc("unlockpt", (@convention(c) (Int32) -> Int32).self)
        let ptsname = try Self.libc("ptsname_r", (@convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32).self)
        controller = openpt(O_RDWR | O_NOCTTY | O_CLOEXEC)
        var name = [CChar](repeating: 0, count: 128)
        guard controller >= 0, grantpt(controller) == 0, unlockpt(controller) == 0, ptsname(controller, &name, name.count) == 0 else {
            throw CocoaError(.fileReadUnknown)
        }
        // Close-on-exec, so that no other test's process keeps it open (the child gets its own copies as 1 and 2).
        terminal = open(String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self),
                        O_RDWR | O_NOCTTY | O_CLOEXEC)
        guard terminal >= 0 else { throw CocoaError(.fileReadUnknown) }
        var size = winsize(ws_row: 40, ws_col: 120, ws_xpixel: 0, ws_ypixel: 0)
        _ = ioctl(terminal, UInt(TIOCSWINSZ), &size)
    }

    /// Runs `sift` with standard error on the terminal, and standard output
    /// too unless `pipingOutput`; returns its status, what the terminal
    /// received (line ends as a terminal gets them: `\r\n`) and what the pipe did.
    static func runSift(_ arguments: [String], pipingOutput: Bool = false) throws -> (status: Int32, terminal: String, piped: String) {
        let pty = try PseudoTerminal()
        defer { close(pty.controller) }
        let process = Process()
        process.executableURL = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift")
        process.arguments = arguments
        let handle = FileHandle(fileDescriptor: pty.terminal, closeOnDealloc: false)
        let pipe = Pipe()
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = pipingOutput ? pipe : handle
        process.standardError = handle
        try process.run()
        close(pty.terminal)
        // Read while it runs (a full terminal would stop it), until it is gone and nothing is left.
        var received: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            var poller = pollfd(fd: pty.controller, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 100)
            if ready > 0 {
                let count = read(pty.controller, &buffer, buffer.count)
                if count <= 0 { break }  // EIO: every copy of the terminal side is closed
                received += buffer[..<count]
            } else if !process.isRunning {
                break
            }
        }
        let piped = pipingOutput ? pipe.fileHandleForReading.readDataToEndOfFile() : Data()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: received, as: UTF8.self), String(decoding: piped, as: UTF8.self))
    }
}

/// A data set of `count` items (one entity, two attributes) in a scratch folder: work long enough to show progress.
func writeItemDataSet(_ count: Int, to url: URL) throws {
    var text = #"{"model": {"entities": [{"name": "Item", "attributes": [{"name": "name", "type": "string"}, "#
        + #"{"name": "n", "type": "integer64"}]}]}, "objects": {"Item": ["#
    text.reserveCapacity(count * 40)
    for n in 1...count {
        if n > 1 { text += "," }
        text += #"{"id": \#(n), "name": "item \#(n)", "n": \#(n)}"#
    }
    text += "]}}"
    try Data(text.utf8).write(to: url)
}

@Suite("sift's progress lines")
struct ProgressLineTests {
    /// Enough objects for a progress line with a rate and a time left (the
    /// line shows after a quarter of a second; a debug build writes about
    /// 100 000 simple objects a second).
    #if DEBUG
    static let itemCount = 100_000
    #else
    static let itemCount = 1_000_000
    #endif
    /// Enough for the work to outlast the line's first quarter of a second, where it must not show.
    static let fewerItems = itemCount / 4

    /// `label  done / total unit  rate/s  time left`, as the line is drawn (after a `\r`).
    static func progressLine(_ label: String, unit: String = "objects") -> String {
        #"\r"# + NSRegularExpression.escapedPattern(for: label)
            + #"  [0-9][0-9 ]* / [0-9][0-9 ]* \#(unit)  [0-9][0-9 ]*/s  [0-9]+ (s|min|h)( [0-9]+ (s|min))? left"#
    }

    static func holds(_ text: String, _ pattern: String) -> Bool {
        text.range(of: pattern, options: .regularExpression) != nil
    }

    /// A scratch folder with the items data set (`items.json`) and a smaller one (`fewer.json`).
    static func itemData() throws -> (scratch: CommandLineScratch, data: URL, fewer: URL) {
        let scratch = try CommandLineScratch(imported: false)
        let data = scratch.folder.appendingPathComponent("items.json")
        try writeItemDataSet(Self.itemCount, to: data)
        let fewer = scratch.folder.appendingPathComponent("fewer.json")
        try writeItemDataSet(Self.fewerItems, to: fewer)
        return (scratch, data, fewer)
    }

    @Test("import: a progress line on a terminal, cleared at the end; none to a pipe, none with --quiet")
    func importing() throws {
        let (scratch, data, fewer) = try Self.itemData()
        let store = scratch.folder.appendingPathComponent("items.sqlite").path
        let imported = try PseudoTerminal.runSift(["import", "--data", data.path, "--store", store])
        #expect(imported.status == 0, "\(imported.terminal)")
        #expect(Self.holds(imported.terminal, Self.progressLine("importing")), "\(imported.terminal.debugDescription)")
        #expect(imported.terminal.contains(" / \(ProgressLineTestsFormat.grouped(Self.itemCount)) objects"))
        // The last state drawn is cleared with spaces before the result prints, alone on its line.
        #expect(Self.holds(imported.terminal, #"\r +\rimported \#(Self.itemCount) objects into [^\r\n]+\r\n$"#),
                "\(imported.terminal.debugDescription)")

        // Standard output to a pipe: the terminal (standard error) gets nothing, the pipe only the result.
        let pipedStore = scratch.folder.appendingPathComponent("piped.sqlite").path
        let piped = try PseudoTerminal.runSift(["import", "--data", fewer.path, "--store", pipedStore], pipingOutput: true)
        #expect(piped.status == 0)
        #expect(piped.terminal.isEmpty, "\(piped.terminal.debugDescription)")
        #expect(piped.piped == "imported \(Self.fewerItems) objects into \(pipedStore)\n")

        // --quiet on a terminal: the result alone, no line drawn.
        let quietStore = scratch.folder.appendingPathComponent("quiet.sqlite").path
        let quiet = try PseudoTerminal.runSift(["import", "--quiet", "--data", fewer.path, "--store", quietStore])
        #expect(quiet.status == 0)
        #expect(quiet.terminal == "imported \(Self.fewerItems) objects into \(quietStore)\r\n", "\(quiet.terminal.debugDescription)")
    }

    /// A store of `count` items, written here (quicker than reading them from JSON).
    static func itemStore(_ count: Int, at url: URL) throws -> String {
        let json = #"{"entities": [{"name": "Item", "attributes": [{"name": "name", "type": "string"}, "#
            + #"{"name": "n", "type": "integer64"}]}]}"#
        let model = try DataModel(json: Data(json.utf8))
        let item = try #require(model.entity(named: "Item"))
        let name = try #require(item.attribute(named: "name")).slot
        let n = try #require(item.attribute(named: "n")).slot
        let nodes = (1...count).map { key in
            var values = [PredicateValue](repeating: .null, count: item.attributes.count)
            values[name] = .string("item \(key)")
            values[n] = .int(Int64(key))
            return RowNode(id: ObjectID(entity: item, primaryKey: Int64(key)), values: values)
        }
        try SQLiteStore(url: url, model: model).importNodes(nodes)
        return url.path
    }

    @Test("copy: reading, then writing on a terminal; none to a pipe, none with -q")
    func copying() throws {
        let scratch = try CommandLineScratch(imported: false)
        let store = try Self.itemStore(Self.itemCount, at: scratch.folder.appendingPathComponent("items.sqlite"))
        let smaller = try Self.itemStore(Self.fewerItems, at: scratch.folder.appendingPathComponent("fewer.sqlite"))

        let copied = try PseudoTerminal.runSift(["copy", "--store", store, "--to", scratch.folder.appendingPathComponent("copy.sqlite").path])
        #expect(copied.status == 0, "\(copied.terminal)")
        #expect(copied.terminal.contains("\rcopying: reading  0 / \(ProgressLineTestsFormat.grouped(Self.itemCount)) objects"),
                "\(copied.terminal.debugDescription)")
        #expect(Self.holds(copied.terminal, Self.progressLine("copying")), "\(copied.terminal.debugDescription)")
        #expect(Self.holds(copied.terminal, #"\r +\rcopied \#(Self.itemCount) objects from [^\r\n]+\r\n$"#))

        let piped = try PseudoTerminal.runSift(["copy", "--store", smaller, "--to", scratch.folder.appendingPathComponent("piped.sqlite").path],
                                               pipingOutput: true)
        #expect(piped.status == 0 && piped.terminal.isEmpty && piped.piped.hasPrefix("copied \(Self.fewerItems) objects from "),
                "\(piped)")
        let quiet = try PseudoTerminal.runSift(["copy", "-q", "--store", smaller, "--to", scratch.folder.appendingPathComponent("quiet.sqlite").path])
        #expect(quiet.status == 0 && quiet.terminal.hasPrefix("copied \(Self.fewerItems) objects from "), "\(quiet.terminal.debugDescription)")
    }

    @Test("demo: its first generation shows a progress line on a terminal; --quiet leaves only the tour")
    func demo() throws {
        let scratch = try CommandLineScratch(imported: false)
        let cache = scratch.folder.appendingPathComponent("cache").path
        #if DEBUG
        let employees = 30_000
        #else
        let employees = 300_000
        #endif
        let first = try PseudoTerminal.runSift(["demo", "--employees", "\(employees)", "--cache", cache])
        #expect(first.status == 0, "\(first.terminal)")
        #expect(first.terminal.contains("Creating the demo store"))
        #expect(Self.holds(first.terminal, Self.progressLine("creating the demo store")), "\(first.terminal.debugDescription)")
        let quiet = try PseudoTerminal.runSift(["demo", "--quiet", "--employees", "300", "--cache", cache])
        #expect(quiet.status == 0)
        #expect(!quiet.terminal.contains("Creating the demo store") && !quiet.terminal.contains("Created in"))
        #expect(!quiet.terminal.contains("\r ") && quiet.terminal.contains("▸ Employee"), "\(quiet.terminal.debugDescription)")
    }

    /// The tests' Xcode model in the scratch folder, with a version "Company 2" that keeps the data set's
    /// doubles (the bundle's first version has Float and Decimal, which no inferred mapping converts to).
    static func companyBundle(in scratch: CommandLineScratch) throws -> URL {
        let bundle = scratch.folder.appendingPathComponent("Company.xcdatamodeld")
        try FileManager.default.copyItem(atPath: CheckAndBatchTests.fixture("Company.xcdatamodeld"), toPath: bundle.path)
        let second = bundle.appendingPathComponent("Company 2.xcdatamodel")
        try FileManager.default.copyItem(at: bundle.appendingPathComponent("Company.xcdatamodel"), to: second)
        let contents = second.appendingPathComponent("contents")
        let text = try String(contentsOf: contents, encoding: .utf8)
            .replacingOccurrences(of: #""Float""#, with: #""Double""#).replacingOccurrences(of: #""Decimal""#, with: #""Double""#)
        try Data(text.utf8).write(to: contents)
        return bundle
    }

    @Test("migrate: --quiet prints what was migrated and nothing along the way; a dry run prints its mapping still")
    func migrateQuietly() throws {
        let scratch = try CommandLineScratch()
        let bundle = try Self.companyBundle(in: scratch)
        let base = ["migrate", "--store", scratch.store, "--model", bundle.path, "--to", "Company 2"]
        let dryRun = try runSift(base + ["--dry-run", "--quiet"])
        #expect(dryRun.status == 0, "\(dryRun.error)")
        #expect(dryRun.output.hasPrefix("store version: ") && dryRun.output.hasSuffix("dry run: nothing written\n"))
        let migrated = try PseudoTerminal.runSift(base + ["--quiet"])
        #expect(migrated.status == 0, "\(migrated.terminal)")
        #expect(Self.holds(migrated.terminal, #"^migrated 79 objects in [0-9.]+ s\r\n$"#), "\(migrated.terminal.debugDescription)")
    }

    @Test("A migration reports reading, then writing, each from none to all")
    func migrationReportsItsSteps() throws {
        let scratch = try CommandLineScratch()
        let bundle = try ModelBundle(contentsOf: try Self.companyBundle(in: scratch))
        let migration = try StoreMigration(storeAt: URL(fileURLWithPath: scratch.store), bundle: bundle, version: "Company 2")
        var reports: [WorkProgress] = []
        let report = try migration.run { reports.append($0) }
        #expect(report.objects.values.reduce(0, +) == 79)
        let steps = reports.map(\.step).reduce(into: [WorkProgress.Step]()) { if $0.last != $1 { $0.append($1) } }
        #expect(steps == [.readingObjects, .writingObjects])
        for step in steps {
            let mine = reports.filter { $0.step == step }
            #expect(mine.first?.done == 0 && mine.last?.done == 79 && mine.allSatisfy { $0.total == 79 }, "\(mine)")
            #expect(zip(mine, mine.dropFirst()).allSatisfy { $0.done <= $1.done })
        }
    }

    /// A store keeping history, with `count` transactions of one inserted item each.
    static func historyStore(_ folder: URL, transactions count: Int) throws -> String {
        let data = folder.appendingPathComponent("history-items.json")
        try writeItemDataSet(count, to: data)
        let dataSet = try DataSet(contentsOf: data)
        let url = folder.appendingPathComponent("history.sqlite")
        let store = try SQLiteStore(url: url, model: dataSet.model, historyTracking: .on)
        for node in dataSet.nodes { try store.importNodes([node]) }
        return url.path
    }

    @Test("Deleting history reports a batch at a time, from none to every transaction deleted")
    func historyDeletionReports() throws {
        let scratch = try CommandLineScratch(imported: false)
        let path = try Self.historyStore(scratch.folder, transactions: 250)
        let store = try SQLiteStore(url: URL(fileURLWithPath: path))
        var reports: [WorkProgress] = []
        let token = PersistentHistoryToken(storeUUID: try store.identifier, transactionNumber: 201)
        #expect(try store.deleteHistory(before: token) { reports.append($0) } == 200)
        #expect(reports.allSatisfy { $0.step == .deletingHistory && $0.total == 200 })
        #expect(reports.first?.done == 0 && reports.last?.done == 200)
        // About a hundredth a batch: regular reports, and a bounded number of them.
        #expect((50...102).contains(reports.count), "\(reports.count) reports")
        #expect(zip(reports, reports.dropFirst()).allSatisfy { $0.done < $1.done })
        #expect(try store.persistentHistory().map(\.transactionNumber) == Array(201...250))
        var none: [WorkProgress] = []
        #expect(try store.deleteHistory(before: Date(timeIntervalSince1970: 0)) { none.append($0) } == 0)
        #expect(none == [WorkProgress(step: .deletingHistory, done: 0, total: 0)])  // a step of nothing: done at its start
    }

    @Test("sift history --delete-before: the count on standard output, a sentence on standard error unless --quiet")
    func historyDeletionCommand() throws {
        let scratch = try CommandLineScratch(imported: false)
        let store = try Self.historyStore(scratch.folder, transactions: 30)
        let deleted = try runSift(["history", "--store", store, "--delete-before", "11"])
        #expect(deleted.status == 0, "\(deleted.error)")
        #expect(deleted.output == "10\n")
        #expect(Self.holds(deleted.error, #"^deleted 10 history transactions numbered below 11, with their changes, in [0-9.]+ ms\n$"#),
                "\(deleted.error)")
        let quiet = try runSift(["history", "--store", store, "--delete-before", "21", "--quiet", "--format", "jsonl"])
        #expect(quiet.status == 0 && quiet.output == #"{"count":10}"# + "\n" && quiet.error.isEmpty, "\(quiet)")
        let byDate = try PseudoTerminal.runSift(["history", "--store", store, "--delete-before", "2999-01-01T00:00:00Z", "-q"])
        #expect(byDate.status == 0 && byDate.terminal == "10\r\n", "\(byDate.terminal.debugDescription)")
        #expect(try runSift(["history", "--store", store, "--counts"]).output.isEmpty)
        let notABoundary = try runSift(["history", "--store", store, "--delete-before", "yesterday"])
        #expect(notABoundary.status == 64 && notABoundary.error.contains("--delete-before takes a transaction number or an ISO 8601 date"))
        #expect(try runSift(["history", "--store", store, "--delete-before", "5", "--counts"]).status == 64)
        let noHistory = try runSift(["history", "--store", scratch.folder.appendingPathComponent("history-items.json").path,
                                     "--delete-before", "5"])
        #expect(noHistory.status != 0)
    }
}

/// Helpers of the progress tests.
enum ProgressLineTestsFormat {
    /// A count as the progress line prints it: `120 000`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text += " " }
            text.append(digit)
        }
        return text
    }
}
