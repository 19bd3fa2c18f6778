// `sift` speaks Sift, not SQLite: every failure a sentence about the
// user's store or text, one exit status per kind of failure in every
// command, `error:` and did-you-mean everywhere, carets under the option
// the text came from, JSON values checked, and the output options
// (--format, --dry-run, --all, --version) as CommandLine.md shows them.

import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// A scratch folder holding the company data set imported into `company.sqlite`.
final class CommandLineScratch {
    let folder: URL
    var store: String { folder.appendingPathComponent("company.sqlite").path }
    var data: String { CheckAndBatchTests.fixture("company.json") }

    init(imported: Bool = true) throws {
        folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if imported {
            let result = try runSift(["import", "--data", CheckAndBatchTests.fixture("company.json"), "--store", store])
            guard result.status == 0 else { throw CocoaError(.fileWriteUnknown) }
        }
    }

    /// A file in the folder holding `data`.
    func file(_ name: String, _ data: Data) throws -> String {
        let url = folder.appendingPathComponent(name)
        try data.write(to: url)
        return url.path
    }

    deinit { try? FileManager.default.removeItem(at: folder) }
}

@Suite("sift's failures")
struct CommandLineFailureTests {
    /// A store failure a user can cause: the command, its exit status and the sentence it prints.
    struct StoreCase: Sendable, CustomTestStringConvertible {
        var name: String
        var arguments: @Sendable (CommandLineScratch) throws -> [String]
        var status: Int32
        var message: String
        var testDescription: String { name }
    }

    static let storeCases: [StoreCase] = [
        StoreCase(name: "import onto a store holding the data", arguments: { ["import", "--data", $0.data, "--store", $0.store] },
                  status: 73, message: "already holds Department objects with the keys being written (the store has data already)"),
        StoreCase(name: "a folder as the store", arguments: { _ in ["count", "--store", "/tmp", "--entity", "Employee"] },
                  status: 66, message: "error: '/tmp' is a folder, not a store file"),
        StoreCase(name: "import into a folder", arguments: { ["import", "--data", $0.data, "--store", $0.folder.path] },
                  status: 66, message: "is a folder, not a store file"),
        StoreCase(name: "a store in a missing folder", arguments: { ["import", "--data", $0.data, "--store", "/nonexistent/dir/x.sqlite"] },
                  status: 66, message: "error: there is no folder '/nonexistent/dir' for the store '/nonexistent/dir/x.sqlite'"),
        StoreCase(name: "no store", arguments: { ["query", "--store", $0.folder.path + "/none.sqlite", "--entity", "Employee"] },
                  status: 66, message: "error: there is no store at '"),
        StoreCase(name: "an empty file inspected", arguments: { ["inspect", "--store", try $0.file("empty.sqlite", Data())] },
                  status: 66, message: "empty.sqlite' is an empty file, not a store"),
        StoreCase(name: "an empty file queried", arguments: { ["query", "--store", try $0.file("empty.sqlite", Data()), "--entity", "A"] },
                  status: 66, message: "empty.sqlite' is an empty file, not a store"),
    ]

    @Test("A store failure is a sentence about the store, with its kind's status", arguments: storeCases)
    func storeFailures(_ testCase: StoreCase) throws {
        let scratch = try CommandLineScratch()
        let result = try runSift(try testCase.arguments(scratch))
        #expect(result.status == testCase.status, "\(result.error)")
        #expect(result.error.contains(testCase.message), "\(result.error)")
        #expect(result.error.hasPrefix("error: "))
        #expect(!result.error.contains("SQLite error"))
    }

    /// (Issue 54: no server exited 75 after 5 s, with NIO's `… (errno: 111)`; CommandLine.md says 66.)
    @Test("A server not reached exits 66 at once, in words; a server that answers 503 exits 75")
    func serverNotReached() throws {
        let started = ContinuousClock.now
        let result = try runSift(["count", "--store", "http://127.0.0.1:1", "--entity", "X"])
        #expect(ContinuousClock.now - started < .seconds(3), "it took 5 s")
        #expect(result.status == 66, "\(result.error)")
        #expect(result.error.hasPrefix("error: the store's server http://127.0.0.1:1 was not reached: the connection was refused"),
                "\(result.error)")
        #expect(!result.error.contains("errno"))
        let busy = try UnavailableServer()
        let answered = try runSift(["count", "--store", "http://127.0.0.1:\(busy.port)", "--entity", "X"])
        #expect(answered.status == 75, "\(answered.error)")
        #expect(answered.error.contains("answered 503"), "\(answered.error)")
    }

    @Test("A damaged file exits 74 from every command that reads it, with one sentence")
    func damagedFilesExitAlike() throws {
        let scratch = try CommandLineScratch(imported: false)
        var generator = SystemRandomNumberGenerator()
        let damaged = try scratch.file("random.sqlite", Data((0..<5_000).map { _ in UInt8.random(in: 0...255, using: &generator) }))
        let commands: [[String]] = [
            ["inspect", "--store", damaged], ["query", "--store", damaged, "--entity", "Employee"],
            ["count", "--store", damaged, "--entity", "Employee"], ["explain", "--store", damaged, "--entity", "Employee"],
            ["history", "--store", damaged], ["delete", "--store", damaged, "--entity", "Employee", "--all"],
            ["migrate", "--store", damaged, "--model", CheckAndBatchTests.fixture("Company.xcdatamodeld")],
        ]
        for command in commands {
            let result = try runSift(command)
            #expect(result.status == 74, "\(command[0]): \(result.error)")
            #expect(result.error == "error: '\(damaged)' is not an SQLite database (it may be damaged, or another kind of file); "
                    + "it was left unchanged\n", "\(command[0])")
        }
    }

    /// Issue 54: one exit status per kind of failure, from every command, and a message that names the file.
    /// (The same invalid data set exited 66 from `import` and 65 from `copy`, which did not name it.) Each row:
    /// a kind of file, the status it gives, and the commands given it.
    @Test("Every command gives each kind of failure its one status, naming the file")
    func oneStatusPerKind() throws {
        let scratch = try CommandLineScratch(imported: false)
        let missing = scratch.folder.appendingPathComponent("none.sqlite").path
        let empty = try scratch.file("empty.sqlite", Data())
        let damaged = try scratch.file("damaged.sqlite", Data(repeating: 0x5A, count: 4_096))
        let badJSON = try scratch.file("bad.json", Data(#"{"model": "#.utf8))
        let badObjects = try scratch.file("objects.json", Data(#"{"model": {"entities": [{"name": "A", "attributes": [{"name": "x", "type": "integer64"}]}]}, "objects": {"A": [{"id": "one"}]}}"#.utf8))
        let missingData = scratch.folder.appendingPathComponent("none.json").path
        let model = CheckAndBatchTests.fixture("Company.xcdatamodeld")
        let corpus = try scratch.file("corpus.jsonl", Data(#"{"id": "1", "entity": "A", "predicate": "x > 1"}"#.utf8))
        func storeCommands(_ store: String) -> [[String]] {
            [["count", "--store", store, "--entity", "Employee"], ["query", "--store", store, "--entity", "Employee"],
             ["explain", "--store", store, "--entity", "Employee"], ["inspect", "--store", store],
             ["update", "--store", store, "--entity", "Employee", "--set", "age=1", "age > 1"],
             ["delete", "--store", store, "--entity", "Employee", "--all"], ["history", "--store", store],
             ["migrate", "--store", store, "--model", model], ["copy", "--store", store, "--to", store + ".copy.sqlite"]]
        }
        let rows: [(String, Int32, String, [[String]])] = [
            ("a store that is not there", 66, missing, storeCommands(missing)),
            ("an empty file", 66, empty, storeCommands(empty)),
            ("a folder", 66, scratch.folder.path, storeCommands(scratch.folder.path)),
            ("a file that is not a database", 74, damaged, storeCommands(damaged)),
            ("a data set that is not there", 66, missingData, [
                ["import", "--data", missingData, "--store", missing], ["batch", "--data", missingData, "--corpus", corpus]]),
            ("a data set that is not JSON", 65, badJSON, [
                ["import", "--data", badJSON, "--store", missing], ["batch", "--data", badJSON, "--corpus", corpus],
                ["copy", "--store", badJSON, "--to", missing], ["count", "--store", badJSON, "--entity", "A"]]),
            ("a data set whose objects do not fit its model", 65, badObjects, [
                ["import", "--data", badObjects, "--store", missing], ["batch", "--data", badObjects, "--corpus", corpus],
                ["copy", "--store", badObjects, "--to", missing], ["query", "--store", badObjects, "--entity", "A"]]),
        ]
        for (kind, status, file, commands) in rows {
            for command in commands {
                let result = try runSift(command)
                #expect(result.status == status, "\(kind), \(command[0]): \(result.status) \(result.error)")
                #expect(result.error.contains("'\(file)'"), "\(kind), \(command[0]) names no file: \(result.error)")
                #expect(result.error.hasPrefix("error: ") && result.error.filter { $0 == "\n" }.count == 1, "\(result.error)")
            }
        }
        #expect(!FileManager.default.fileExists(atPath: missing), "a failed command made a store")
    }

    @Test("Unknown names: error: and a did-you-mean", arguments: [
        (["count", "--entity", "Employe"], "error: no entity 'Employe' in the model; did you mean 'Employee'?"),
        (["query", "--entity", "Employe"], "error: no entity 'Employe' in the model; did you mean 'Employee'?"),
        (["update", "--entity", "Employe", "--set", "age=1"], "error: no entity 'Employe' in the model; did you mean 'Employee'?"),
        (["delete", "--entity", "Tagg", "--all"], "error: no entity 'Tagg' in the model; did you mean 'Tag'?"),
        (["query", "--entity", "Employee", "--sort", "agee"], "= note: did you mean 'age'?"),
        (["update", "--entity", "Employee", "--set", "salry=1"], "= note: did you mean 'salary'?"),
        (["query", "--template", "olderThan"], "error: no fetch request template 'olderThan' in the model (it has none)"),
    ])
    func unknownNames(_ arguments: [String], _ message: String) throws {
        let scratch = try CommandLineScratch()
        let result = try runSift(Array(arguments.prefix(1)) + ["--store", scratch.store] + arguments.dropFirst())
        #expect(result.status == 65, "\(result.error)")
        #expect(result.error.hasPrefix("error: "))
        #expect(result.error.contains(message), "\(result.error)")
        #expect(try runSift(["check", "--model", scratch.data, "--entity", "Employe", "age > 1"]).error
                == "error: no entity 'Employe' in the model; did you mean 'Employee'?\n")
    }

    @Test("A diagnostic is labelled with its option, its caret under the text as typed", arguments: [
        (["update", "--entity", "Employee", "--set", "titel=title"], " --> --set:1:1\n1 | titel=title\n  | ^^^^^\n"),
        (["update", "--entity", "Employee", "--set", "age=agee + 1"], " --> --set:1:5\n1 | age=agee + 1\n  |     ^^^^\n"),
        (["update", "--entity", "Employee", "--set", "age=age +"], " --> --set:1:10\n"),
        (["query", "--entity", "Employee", "--select", "sum(salry) as total"], " --> --select:1:5\n1 | sum(salry) as total\n  |     ^^^^^\n"),
        (["query", "--entity", "Employee", "--select", "name", "--group-by", "name", "--having", "nme == 'x'"],
         " --> --having:1:1\n1 | nme == 'x'\n  | ^^^\n"),
        (["query", "--entity", "Employee", "--sort", "name", "--sort", "agee:desc"], " --> --sort:1:1\n1 | agee:desc\n  | ^^^^\n"),
        (["count", "--entity", "Employee", "agee > 3"], " --> predicate:1:1\n1 | agee > 3\n"),
    ])
    func caretsUnderTheirOption(_ arguments: [String], _ diagnostic: String) throws {
        let scratch = try CommandLineScratch()
        let result = try runSift(Array(arguments.prefix(1)) + ["--store", scratch.store] + arguments.dropFirst())
        #expect(result.status == 65)
        #expect(result.error.hasPrefix("error: "))
        #expect(result.error.contains(diagnostic), "\(result.error)")
    }

    @Test("A value that starts as JSON must be JSON; others are strings", arguments: [
        (["eval", "--value", #"{"age":41"#, "age > 3"], 65, "error: --value '{\"age\":41' starts as JSON but is not valid JSON: "
            + "expected ',' or '}' in an object, found the end of the text at line 1, column 10"),
        (["eval", "--value", "[1, 2,", "SELF == 1"], 65, "expected a value, found the end of the text at line 1, column 7"),
        (["parse", "--arg", "2024-05-01", "a == %@"], 65, "error: --arg '2024-05-01' starts as JSON but is not valid JSON: "
            + "expected the end of the text, found '-' at line 1, column 5"),
        (["parse", "--var", #"x={"a" 1}"#, "a == $x"], 65, "expected ':' after a member name, found '1' at line 1, column 6"),
        (["parse", "--arg", "department.name", "--arg", "Legal", "%K == %@"], 0, ""),
        (["eval", "--value", "Legal", "SELF == 'Legal'"], 0, ""),
    ] as [([String], Int32, String)])
    func jsonValues(_ arguments: [String], _ status: Int32, _ message: String) throws {
        let result = try runSift(arguments)
        #expect(result.status == status, "\(result.error)")
        if !message.isEmpty { #expect(result.error.contains(message), "\(result.error)") }
        if status == 0 { #expect(result.output == (arguments[0] == "eval" ? "true\n" : "department.name == \"Legal\"\n")) }
    }

    /// Issue 54: `--limit -1` was read as an unknown option `-1` ("Missing value for '--limit <limit>'"),
    /// only `--limit=-1` reached Sift's own check. A negative number reaches it in either spelling.
    @Test("A negative number reaches the command's own check, in either spelling", arguments: [
        (["query", "--entity", "Employee", "--limit"], "-1", "--limit takes a count of 0 or more, not -1"),
        (["query", "--entity", "Employee", "--offset"], "-3", "--offset takes a count of 0 or more, not -3"),
        (["watch", "--entity", "Employee", "--interval"], "-0.5", "--interval must be between 0.01 and 10 seconds"),
        (["serve", "--port"], "-80", "--port takes 0 to 65535, not -80"),
        (["demo", "--employees"], "-5", "--employees takes a count from 1 to 10000000, not -5"),
    ])
    func negativeNumbers(_ command: [String], _ value: String, _ message: String) throws {
        let scratch = try CommandLineScratch()
        let needsStore = command[0] != "demo"
        let prefix = [command[0]] + (needsStore ? ["--store", scratch.store] : [])
        for arguments in [prefix + command.dropFirst() + [value], prefix + command.dropFirst().dropLast() + ["\(command.last!)=\(value)"]] {
            let result = try runSift(arguments)
            #expect(result.status == 64, "\(arguments): \(result.error)")
            #expect(result.error.contains(message), "\(arguments): \(result.error)")
        }
    }

    /// Issue 54: `sift count --store company.json` (an atomic store, which `copy` writes and reads) said
    /// "not an SQLite database" and exited 74. Every command that reads a store reads it; one that needs SQL
    /// says so.
    @Test("The command line reads the atomic stores it writes")
    func atomicStores() throws {
        let scratch = try CommandLineScratch()
        let atomic = scratch.folder.appendingPathComponent("company.json").path
        let copied = try runSift(["copy", "--store", scratch.store, "--to", atomic])
        #expect(copied.status == 0, "\(copied.error)")
        let expected = try runSift(["count", "--store", scratch.store, "--entity", "Employee", "age > 40"])
        let counted = try runSift(["count", "--store", atomic, "--entity", "Employee", "age > 40"])
        #expect(counted.status == 0, "\(counted.error)")
        #expect(counted.output == expected.output && !expected.output.isEmpty)
        let queried = try runSift(["query", "--store", atomic, "--entity", "Employee", "--sort", "name", "--limit", "2", "age > 40"])
        let queriedSQL = try runSift(["query", "--store", scratch.store, "--entity", "Employee", "--sort", "name", "--limit", "2", "age > 40"])
        #expect(queried.status == 0 && queried.output == queriedSQL.output, "\(queried.error)")
        // Written through, and read back.
        let updated = try runSift(["update", "--store", atomic, "--entity", "Employee", "--set", "age=age + 100", "age < 30"])
        #expect(updated.status == 0, "\(updated.error)")
        #expect(try runSift(["count", "--store", atomic, "--entity", "Employee", "age >= 100"]).output.hasPrefix("11"))
        // Only explain, which shows SQL, refuses it, in words.
        let explained = try runSift(["explain", "--store", atomic, "--entity", "Employee", "age > 40"])
        #expect(explained.status == 64)
        #expect(explained.error.contains("explain shows the SQL of a store file or a PostgreSQL schema"), "\(explained.error)")
    }

    /// Issue 54: a model file without entities ended in a dangling "missing 'entities' at ".
    @Test("A model file's error says where in the file")
    func modelFileErrors() throws {
        let scratch = try CommandLineScratch(imported: false)
        let top = try scratch.file("model.json", Data(#"{"name": "x"}"#.utf8))
        let result = try runSift(["check", "--model", top, "--entity", "A", "x > 1"])
        #expect(result.status == 66)
        #expect(result.error == "error: cannot read the model '\(top)': missing 'entities' at the top level\n", "\(result.error)")
        let inner = try scratch.file("inner.json", Data(#"{"entities": [{"attributes": []}]}"#.utf8))
        let nested = try runSift(["check", "--model", inner, "--entity", "A", "x > 1"])
        #expect(nested.error.hasSuffix("missing 'name' at entities[0]\n"), "\(nested.error)")
    }

    @Test func sortOptionsAndVariables() throws {
        let scratch = try CommandLineScratch()
        let long = try runSift(["query", "--store", scratch.store, "--entity", "Employee", "--sort", "age:descending", "--limit", "1",
                                "--format", "jsonl"])
        let short = try runSift(["query", "--store", scratch.store, "--entity", "Employee", "--sort", "age:desc", "--limit", "1",
                                 "--format", "jsonl"])
        #expect(long.status == 0 && long.output == short.output && !long.output.isEmpty)
        let wrong = try runSift(["query", "--store", scratch.store, "--entity", "Employee", "--sort", "age:down"])
        #expect(wrong.status == 64)
        #expect(wrong.error == "error: --sort takes a key path, then :asc or :desc (:ascending, :descending) and :ci "
                + "(name:desc:ci), not 'age:down'\n")
        let substituted = try runSift(["parse", "--var", "min=3", "age > $min"])
        #expect(substituted.status == 0 && substituted.output == "age > 3\n")
        let unused = try runSift(["parse", "--var", "mni=3", "age > $min"])
        #expect(unused.status == 64 && unused.error == "error: --var mni=…: the predicate has no variable $mni; did you mean 'min'?\n")
    }

    @Test func versionAndCompletion() throws {
        let version = try runSift(["--version"])
        #expect(version.status == 0 && version.output == "0.9.0\n")
        let help = try runSift(["--help"])
        #expect(help.output.contains("--generate-completion-script"))
        let script = try runSift(["--generate-completion-script", "bash"])
        #expect(script.status == 0 && script.output.contains("_sift"))
        // The argument parser's own errors say error: in lowercase too.
        #expect(try runSift(["parse", "--bogus", "a == 1"]).error.hasPrefix("error: "))
    }

    @Test func dryRunsAndDeletingEverything() throws {
        let scratch = try CommandLineScratch()
        let update = try runSift(["update", "--store", scratch.store, "--entity", "Employee", "--set", "age=age + 1", "--dry-run",
                                  "--format", "json", "age > 60"])
        #expect(update.status == 0, "\(update.error)")
        let object = try #require(try JSONSerialization.jsonObject(with: Data(update.output.utf8)) as? [String: Any])
        #expect(object["count"] as? Int == 4 && object["dryRun"] as? Bool == true && (object["ids"] as? [Int]) == [114, 120, 136, 143])
        #expect(update.error.hasPrefix("dry run: would have updated 4 Employee objects (keys 114, 120, 136, 143), selected in "))
        #expect(update.error.hasSuffix("; nothing was written\n"))
        // A dry run checks the assignments as the update does.
        let refused = try runSift(["update", "--store", scratch.store, "--entity", "Employee", "--set", "age=salary", "--dry-run"])
        #expect(refused.status == 65 && refused.error.contains("holds integer values"))
        #expect(try runSift(["count", "--store", scratch.store, "--entity", "Employee", "age > 60"]).output == "4\n")
        let delete = try runSift(["delete", "--store", scratch.store, "--entity", "Tag", "--dry-run", "name == 'intern'"])
        #expect(delete.status == 0 && delete.output == "1\n")
        #expect(delete.error.hasPrefix("dry run: would have deleted 1 Tag object (keys "))
        #expect(try runSift(["count", "--store", scratch.store, "--entity", "Tag"]).output == "11\n")

        let everything = try runSift(["delete", "--store", scratch.store, "--entity", "Tag"])
        #expect(everything.status == 64)
        #expect(everything.error.contains("error: delete needs a predicate selecting the objects, or --all to delete every Tag object"))
        let all = try runSift(["delete", "--store", scratch.store, "--entity", "Tag", "--all"])
        #expect(all.status == 0 && all.output == "11\n")
        #expect(all.error.hasPrefix("deleted 11 Tag objects"))
        let one = try runSift(["delete", "--store", scratch.store, "--entity", "Employee", "name == 'Alice Anderson'"])
        #expect(one.error.hasPrefix("deleted 1 Employee object"), "\(one.error)")
    }

    @Test func everyFormat() throws {
        let scratch = try CommandLineScratch()
        let base = ["--store", scratch.store]
        let count = try runSift(["count"] + base + ["--entity", "Employee", "--format", "json", "age > 40"])
        #expect(count.output == "{\n  \"count\": 22\n}\n")
        #expect(try runSift(["count"] + base + ["--entity", "Employee", "--format", "jsonl", "age > 40"]).output == "{\"count\":22}\n")
        #expect(try runSift(["count"] + base + ["--entity", "Employee", "--format", "csv", "age > 40"]).output == "count\r\n22\r\n")

        // CSV quotes a field with a comma or a quote, doubling quotes.
        let names = try runSift(["query"] + base + ["--entity", "Employee", "--select", "name", "--select", "nickname",
                                                     "--sort", "name", "--limit", "200", "--format", "csv"])
        #expect(names.status == 0)
        #expect(names.output.hasPrefix("name,nickname\r\n"))
        for line in names.output.components(separatedBy: "\r\n") where line.contains("\"") {
            #expect(line.hasPrefix("\"") || line.contains(",\""), "\(line)")
        }
        // JSON lines: compact, keys sorted; JSON: one array; the same rows.
        let jsonl = try runSift(["query"] + base + ["--entity", "Employee", "--sort", "age:desc", "--limit", "3", "--format", "jsonl"])
        let lines = jsonl.output.split(separator: "\n")
        #expect(lines.count == 3 && lines.allSatisfy { $0.hasPrefix("{\"age\":") && !$0.contains("\": ") })
        let json = try runSift(["query"] + base + ["--entity", "Employee", "--sort", "age:desc", "--limit", "3", "--format", "json"])
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
        #expect(rows.count == 3)
        for (row, line) in zip(rows, lines) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(Set(object.keys) == Set(row.keys))
            #expect(object.keys.allSatisfy { "\(object[$0] ?? "")" == "\(row[$0] ?? "")" })
        }
        #expect((rows.first?["startDate"] as? String)?.hasSuffix("Z") == true)
        let table = try runSift(["query"] + base + ["--entity", "Tag", "--sort", "name", "--limit", "1", "--format", "csv"])
        #expect(table.output.hasPrefix("id,name"))

        // inspect, explain, eval --data and sql print the forms they have.
        let inspect = try runSift(["inspect"] + base + ["--format", "json"])
        let summary = try #require(try JSONSerialization.jsonObject(with: Data(inspect.output.utf8)) as? [String: Any])
        #expect((summary["entities"] as? [[String: Any]])?.count == 3)
        #expect(try runSift(["inspect"] + base + ["--format", "csv"]).output.hasPrefix("number,name,superentity,rows\r\n"))
        let explain = try runSift(["explain"] + base + ["--entity", "Employee", "--format", "jsonl", "age > 3"])
        let sections = try #require(try JSONSerialization.jsonObject(with: Data(explain.output.utf8)) as? [String: Any])
        #expect(sections["sql"] is String && sections["bindings"] as? [String] == ["?1 = 3"])
        #expect(try runSift(["explain"] + base + ["--entity", "Employee", "--format", "csv"]).status == 64)
        let sql = try runSift(["sql", "--model", scratch.data, "--entity", "Employee", "--format", "jsonl", "age > 3"])
        #expect(sql.output.hasPrefix("{\"bindings\":[\"?1 = 3\"],\"sql\":\"SELECT "))
        let people = try scratch.file("people.json", Data(#"[{"name": "Ann, \"A\"", "age": 41}, {"name": "Bo", "age": 17}, 5]"#.utf8))
        let evaluated = try runSift(["eval", "--data", people, "--format", "csv", "SELF == 5 OR age > 18"])
        #expect(evaluated.output == "age,name,value\r\n41,\"Ann, \"\"A\"\"\",\r\n,,5\r\n")
        let evaluatedTable = try runSift(["eval", "--data", people, "--format", "table", "SELF != 5 AND age > 18"])
        #expect(evaluatedTable.output == "age  name\n---  --------\n41   Ann, \"A\"\n")
        let evaluatedJSON = try runSift(["eval", "--data", people, "--format", "json", "SELF != 5 AND age > 18"])
        #expect(evaluatedJSON.output == "[\n  {\n    \"age\": 41,\n    \"name\": \"Ann, \\\"A\\\"\"\n  }\n]\n")
    }

    @Test func progressOnlyOnATerminalAndTimingsWithoutPrinting() throws {
        let scratch = try CommandLineScratch()
        // Standard error is a pipe here: no progress line, only the summary.
        let count = try runSift(["count", "--store", scratch.store, "--entity", "Employee"])
        #expect(count.error.isEmpty)
        let inspect = try runSift(["inspect", "--store", scratch.store])
        #expect(inspect.error.isEmpty)
        let query = try runSift(["query", "--store", scratch.store, "--entity", "Tag"])
        #expect(query.error.range(of: #"^11 objects in [0-9]+\.[0-9] ms\n$"#, options: .regularExpression) != nil, "\(query.error)")
        let one = try runSift(["query", "--store", scratch.store, "--entity", "Tag", "--limit", "1"])
        #expect(one.error.hasPrefix("1 object in "))
        let imported = try runSift(["import", "--data", scratch.data, "--store", scratch.folder.appendingPathComponent("b.sqlite").path])
        #expect(imported.error.isEmpty && imported.output.hasPrefix("imported 79 objects into "))
    }

    @Test func theDemoNamesItsStoreInFullAndHonoursTheEnvironment() throws {
        let scratch = try CommandLineScratch(imported: false)
        let cache = scratch.folder.appendingPathComponent("xdg")
        let result = try runProduct("sift", ["demo", "--employees", "300"], in: scratch.folder, environment: ["XDG_CACHE_HOME": cache.path])
        #expect(result.status == 0, "\(result.error)")
        let files = try FileManager.default.contentsOfDirectory(atPath: cache.appendingPathComponent("sift").path)
        let store = try #require(files.first { $0.hasSuffix(".sqlite") })
        let path = cache.appendingPathComponent("sift").appendingPathComponent(store).path
        #expect(result.output.contains("demo store \(path)\n"))
        // Issue 54: the hint named `sift`, which is on no PATH after `swift run`. It names the command as it
        // can be run: the binary's path from elsewhere (here: the test's folder), `sift` when the PATH finds it.
        let binary = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent("sift").resolvingSymlinksInPath().path
        #expect(result.output.contains("Next: \(binary) query --store \(path) --entity Employee"), "\(result.output)")
        let onPath = try runSift(["demo", "--employees", "300"], environment: [
            "XDG_CACHE_HOME": cache.path, "PATH": (binary as NSString).deletingLastPathComponent + ":/usr/bin:/bin"])
        #expect(onPath.output.contains("Next: sift query --store \(path) --entity Employee"), "\(onPath.output)")
        // In the package's folder, when the binary is its build: `swift run sift`.
        let package = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        if binary.hasPrefix(package.resolvingSymlinksInPath().path + "/.build/") {
            let inPackage = try runProduct("sift", ["demo", "--employees", "300"], in: package, environment: ["XDG_CACHE_HOME": cache.path])
            #expect(inPackage.output.contains("Next: swift run sift query --store \(path) --entity Employee"), "\(inPackage.output)")
        }
        // $HOME without $XDG_CACHE_HOME: $HOME/.cache/sift.
        let home = scratch.folder.appendingPathComponent("home")
        let again = try runSift(["demo", "--employees", "300"], environment: ["XDG_CACHE_HOME": "", "HOME": home.path])
        #expect(again.status == 0, "\(again.error)")
        #expect(again.output.contains("demo store \(home.path)/.cache/sift/"))
    }
}

/// A server on 127.0.0.1 that answers every request 503 and closes the connection.
final class UnavailableServer: @unchecked Sendable {
    let port: Int
    private let socket: Int32

    init() throws {
        #if canImport(Glibc)
        let listener = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let listener = Darwin.socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard listener >= 0 else { throw CocoaError(.fileWriteUnknown) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address in
                bind(listener, address, length) == 0 && listen(listener, 16) == 0 && getsockname(listener, address, &length) == 0
            }
        }
        guard bound else { close(listener); throw CocoaError(.fileWriteUnknown) }
        socket = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread {
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                var buffer = [UInt8](repeating: 0, count: 65_536)
                _ = read(connection, &buffer, buffer.count)
                let answer = Array("HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
                _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
                close(connection)
            }
        }.start()
    }

    deinit {
        shutdown(socket, Int32(SHUT_RDWR))
        close(socket)
    }
}
