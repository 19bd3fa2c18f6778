// `sift parse` as a user runs it: a real process, its output and exit status.

import Foundation
import SiftPostgres
import Testing

/// Runs an executable the package built beside the test bundle (`sift`, a
/// snippet), in `directory` when given, with `environment` added to the
/// test's own; returns its exit status and what it printed on standard
/// output and standard error.
func runProduct(_ name: String, _ arguments: [String], in directory: URL? = nil,
                environment: [String: String] = [:]) throws -> (status: Int32, output: String, error: String) {
    let process = Process()
    process.executableURL = Bundle.module.bundleURL.deletingLastPathComponent().appendingPathComponent(name)
    process.arguments = arguments
    if let directory { process.currentDirectoryURL = directory }
    if !environment.isEmpty {
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { _, new in new }
    }
    let output = Pipe()
    let error = Pipe()
    process.standardOutput = output
    process.standardError = error
    try process.run()
    let outputData = output.fileHandleForReading.readDataToEndOfFile()
    let errorData = error.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: outputData, as: UTF8.self), String(decoding: errorData, as: UTF8.self))
}

/// Runs the `sift` executable built beside the test bundle (with
/// `environment` added to the test's own).
func runSift(_ arguments: [String], environment: [String: String] = [:]) throws -> (status: Int32, output: String, error: String) {
    try runProduct("sift", arguments, environment: environment)
}

@Suite("sift parse")
struct CommandLineTests {
    @Test func printsTheCanonicalForm() throws {
        let result = try runSift(["parse", "--arg", "department.name", "--arg", "Legal", "--arg", "30",
                                  "%K = %@ && age => %@"])
        #expect(result.status == 0)
        #expect(result.output == "department.name == \"Legal\" AND age >= 30\n")
    }

    @Test func argumentsAreJSONWhenTheyCanBe() throws {
        let result = try runSift(["parse", "--arg", "[1, 2]", "--arg", "\"30\"", "--arg", "null",
                                  "--arg", #"{"date": 700000000}"#, "a IN %@ AND b == %@ AND c == %@ AND d > %@"])
        #expect(result.output == #"a IN {1, 2} AND b == "30" AND c == nil AND d > CAST(700000000.0, "NSDate")"# + "\n")
    }

    @Test func printsTheTreeAndJSON() throws {
        let tree = try runSift(["parse", "--tree", "age > 40"])
        #expect(tree.output == """
            comparison operator=">"  @0..<8
              keyPath path="age"  @0..<3
              constant value=40  @6..<8

            """)
        let json = try runSift(["parse", "--json", "age > 40"])
        let object = try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [String: Any]
        #expect(object?["kind"] as? String == "comparison")
    }

    @Test func invalidPredicatesExit65WithTheDiagnostic() throws {
        let result = try runSift(["parse", "age >"])
        #expect(result.status == 65)
        #expect(result.output.isEmpty)
        #expect(result.error.contains("error: expected an expression after '>'"))
        #expect(result.error.contains(" --> predicate:1:6"))
    }

    @Test func badUsageExits64() throws {
        #expect(try runSift(["parse"]).status == 64)
        #expect(try runSift(["parse", "--tree", "--json", "a == 1"]).status == 64)
        #expect(try runSift(["parse", "--bogus", "a == 1"]).status == 64)
    }

    @Test func fileModeSummarizes() throws {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sift-parse-\(UUID()).txt")
        try "age > 30\nage >\n\nname == 'x' AND\nTRUEPREDICATE\n".write(to: url, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: url) }
        let result = try runSift(["parse", "--file", url.path])
        #expect(result.status == 65)
        #expect(result.output.hasSuffix("2 parsed, 2 failed\n"))
        #expect(result.output.contains("\(url.path):2:6"))
        #expect(result.output.contains("4 | name == 'x' AND"))

        try "age > 30\n".write(to: url, atomically: true, encoding: .utf8)
        let good = try runSift(["parse", "--file", url.path])
        #expect(good.status == 0)
        #expect(good.output == "1 parsed, 0 failed\n")
    }
}

@Suite("sift check and sift batch")
struct CheckAndBatchTests {
    static func fixture(_ name: String) -> String {
        Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil)!.path
    }

    @Test func checkPrintsTheBoundTree() throws {
        let result = try runSift(["check", "--model", Self.fixture("company.json"), "--entity", "Employee",
                                  "--var", "min=40", "age > $min"])
        #expect(result.status == 0)
        #expect(result.output == """
            >
              attribute Employee.age : integer
                SELF : Employee
              constant 40 : integer

            """)
    }

    @Test func checkReportsValidationErrors() throws {
        let result = try runSift(["check", "--model", Self.fixture("Company.xcdatamodeld"), "--entity", "Employee",
                                  "salry > 3"])
        #expect(result.status == 65)
        #expect(result.error.contains("'Employee' has no attribute or relationship named 'salry'"))
        #expect(result.error.contains("= note: did you mean 'salary'?"))
    }

    @Test func checkReportsUnreadableModels() throws {
        #expect(try runSift(["check", "--model", "/nonexistent.json", "--entity", "A", "a == 1"]).status == 66)
    }

    @Test(arguments: ["memory", "sqlite", "atomic"] + (StoreKind.postgresURL == nil ? [] : ["postgres"]))
    func batchMatchesTheCorpus(_ backend: String) throws {
        let server = backend == "postgres" ? ["--postgres", StoreKind.postgresURL!] : []
        let result = try runSift(["batch", "--data", Self.fixture("company.json"), "--corpus", Self.fixture("corpus.jsonl"),
                                  "--backend", backend] + server)
        #expect(result.status == 0)
        let lines = result.output.split(separator: "\n")
        #expect(lines.count == CorpusCase.conformance.count)
        for (line, testCase) in zip(lines, CorpusCase.conformance) {
            let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            #expect(object["id"] as? String == testCase.id)
            switch testCase.expect {
            case .matches(let ids):
                #expect((object["matches"] as? [Int])?.map(Int64.init) == ids, "\(testCase.id)")
            case .error(let kind):
                let error = object["error"] as? [String: Any]
                #expect(error?["kind"] as? String == kind, "\(testCase.id)")
                #expect(error?["line"] as? Int == 1)
            }
        }
    }
}

@Suite("sift import, sql, explain, query, demo")
struct StoreCommandTests {
    static func fixture(_ name: String) -> String {
        Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil)!.path
    }

    @Test func sqlPrintsTheQueryAndBindings() throws {
        let result = try runSift(["sql", "--model", Self.fixture("company.json"), "--entity", "Employee",
                                  "--arg", "Sales", "department.name == %@ AND age > 30"])
        #expect(result.status == 0)
        #expect(result.output.contains(#"LEFT JOIN "ZDEPARTMENT" AS t1 ON t1."Z_PK" = t0."ZDEPARTMENT""#))
        #expect(result.output.contains(#"-- bindings: ?1 = 30, ?2 = "Sales""#))
    }

    @Test func importExplainAndQuery() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.appendingPathComponent("company.sqlite").path
        let imported = try runSift(["import", "--data", Self.fixture("company.json"), "--store", store])
        #expect(imported.status == 0)
        #expect(imported.output == "imported 79 objects into \(store)\n")

        let explain = try runSift(["explain", "--store", store, "--entity", "Employee", "--sort", "name",
                                   "department.name == 'Sales'"])
        #expect(explain.status == 0)
        for section in ["parsed:", "bound:", "plan:", "sql:", "bindings:", "sqlite plan:"] {
            #expect(explain.output.contains(section))
        }

        let json = try runSift(["query", "--store", store, "--entity", "Employee", "--sort", "age:desc", "--limit", "2",
                                "--prefetch", "department", "--format", "json", "department.name == 'Sales'"])
        #expect(json.status == 0)
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["id"] as? Int } == [160, 112])
        #expect(json.error.contains("2 objects"))

        let table = try runSift(["query", "--store", store, "--entity", "Tag", "--sort", "name", "name BEGINSWITH 'l'"])
        #expect(table.output.split(separator: "\n").first?.hasPrefix("id  name") == true)

        // Dictionary fetches: one JSON object per result, keys in the order selected.
        let grouped = try runSift(["query", "--store", store, "--entity", "Employee", "--select", "department.name",
                                   "--select", "sum(salary) as payroll", "--select", "@count as n", "--group-by", "department.name",
                                   "--having", "n >= 10", "--sort", "n:desc", "--format", "jsonl"])
        #expect(grouped.status == 0)
        let lines = grouped.output.split(separator: "\n")
        #expect(!lines.isEmpty && lines.allSatisfy { $0.hasPrefix("{\"department.name\":\"") && $0.contains(",\"payroll\":") })
        let counts = lines.compactMap { line in
            (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["n"] as? Int
        }
        #expect(counts.count == lines.count && counts == counts.sorted(by: >) && counts.allSatisfy { $0 >= 10 })
        // NSExpression's printed form of an aggregate, as Core Data code writes it (issue 29): the same results,
        // and the same form in a batch update's value.
        let bySelector = try runSift(["query", "--store", store, "--entity", "Employee", "--select", "department.name",
                                      "--select", "sum:(salary) as payroll", "--select", "count:(name) as n",
                                      "--group-by", "department.name", "--having", "n >= 10", "--sort", "n:desc", "--format", "jsonl"])
        #expect(bySelector.status == 0, "\(bySelector.error)")
        #expect(bySelector.output == grouped.output)
        let selectorUpdate = try runSift(["update", "--store", store, "--entity", "Employee",
                                          "--set", "age=add:to:(divide:by:(age, 1), 0)", "age > 1000"])
        #expect(selectorUpdate.status == 0, "\(selectorUpdate.error)")
        let ungrouped = try runSift(["query", "--store", store, "--entity", "Employee", "--select", "name", "--group-by", "isManager"])
        #expect(ungrouped.status == 65)
        #expect(ungrouped.error.contains("neither grouped by nor an aggregate"))

        let inspect = try runSift(["inspect", "--store", store])
        #expect(inspect.status == 0)
        #expect(inspect.output.contains("written by Sift") && inspect.output.contains("the model Sift keeps"))
        #expect(inspect.output.contains("2   Employee    60 rows"), "\(inspect.output)")
        #expect(try runSift(["count", "--store", store, "--entity", "Employee", "age > 40"]).output == "22\n")

        // `explain` shows a grouped fetch's one statement.
        let explained = try runSift(["explain", "--store", store, "--entity", "Employee", "--select", "department.name",
                                     "--select", "sum(salary) as payroll", "--group-by", "department.name",
                                     "--having", "payroll > 100000", "age > 30"])
        #expect(explained.status == 0)
        #expect(explained.output.contains("GROUP BY") && explained.output.contains("HAVING") && explained.output.contains("?2 = 100000"))

        // Batch changes print the count; the store has them after.
        let raised = try runSift(["update", "--store", store, "--entity", "Employee", "--set", "age=age + 1", "age > 40"])
        #expect(raised.status == 0 && raised.output == "22\n")
        #expect(raised.error.contains("updated 22 Employee objects") && raised.error.contains("(SQL)"))
        #expect(try runSift(["count", "--store", store, "--entity", "Employee", "age > 41"]).output == "22\n")
        let refused = try runSift(["update", "--store", store, "--entity", "Employee", "--set", "age=salary"])
        #expect(refused.status == 65 && refused.error.contains("holds integer values"))
        let deleted = try runSift(["delete", "--store", store, "--entity", "Employee", "age > 41"])
        #expect(deleted.status == 0 && deleted.output == "22\n")
        #expect(try runSift(["count", "--store", store, "--entity", "Employee"]).output == "38\n")

        let bad = try runSift(["query", "--store", store, "--entity", "Employee", "agee > 3"])
        #expect(bad.status == 65)
        #expect(bad.error.contains("did you mean 'age'?"))
        #expect(try runSift(["query", "--store", folder.appendingPathComponent("none.sqlite").path,
                             "--entity", "Employee"]).status == 66)
    }

    @Test func fetchRequestTemplatesWithVariables() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cli-\(UUID())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        // The company data set, its model given a template.
        var dataSet = try #require(try JSONSerialization.jsonObject(with: Fixtures.data("company.json")) as? [String: Any])
        var model = try #require(dataSet["model"] as? [String: Any])
        model["fetchRequestTemplates"] = [["name": "olderIn", "entity": "Employee",
                                          "predicate": "age > $AGE AND department.name == $DEPT"]]
        dataSet["model"] = model
        let data = folder.appendingPathComponent("company.json")
        try JSONSerialization.data(withJSONObject: dataSet).write(to: data)
        let store = folder.appendingPathComponent("company.sqlite").path
        #expect(try runSift(["import", "--data", data.path, "--store", store]).status == 0)

        let json = try runSift(["query", "--store", store, "--template", "olderIn", "--var", "AGE=30", "--var", "DEPT=Sales",
                                "--sort", "age:desc", "--format", "json"])
        #expect(json.status == 0, "\(json.error)")
        let rows = try #require(try JSONSerialization.jsonObject(with: Data(json.output.utf8)) as? [[String: Any]])
        #expect(rows.map { $0["id"] as? Int } == [160, 112, 116])
        let explain = try runSift(["explain", "--store", store, "--template", "olderIn", "--var", "AGE=50", "--var", "DEPT=Sales"])
        #expect(explain.output.contains("age > 50"))

        let missing = try runSift(["query", "--store", store, "--template", "olderIn", "--var", "AGE=50"])
        #expect(missing.status == 65 && missing.error.contains("$DEPT"))
        let unknown = try runSift(["query", "--store", store, "--template", "younger"])
        #expect(unknown.status == 65 && unknown.error.contains("'olderIn'"))
        #expect(try runSift(["query", "--store", store]).status == 64)
    }

    @Test func demoBuildsItsStoreOnceAndRunsTheTour() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-demo-\(UUID())")
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = try runSift(["demo", "--employees", "2000", "--cache", folder.path])
        #expect(first.status == 0)
        #expect(first.output.contains("Creating the demo store"))
        #expect(first.output.components(separatedBy: "▸ ").count == 11)
        #expect(first.output.contains("plan: SEARCH"))
        #expect(first.output.contains("save with .error policy: refused"))
        #expect(first.output.contains("save with .storeTrump: age 99, salary 123456.0"))
        let second = try runSift(["demo", "--employees", "2000", "--cache", folder.path])
        #expect(!second.output.contains("Creating the demo store"))
    }
}

@Suite("sift eval")
struct EvalCommandTests {
    @Test func aValueIsTrueOrFalse() throws {
        // A pattern that starts as JSON does is given as a JSON string.
        let yes = try runSift(["eval", "--value", #""ann@example.com""#, "--arg", #""[^@]+@[^@]+""#, "SELF MATCHES %@"])
        #expect(yes.status == 0)
        #expect(yes.output == "true\n")
        let no = try runSift(["eval", "--value", #"{"age": 12}"#, "--var", "min=18", "age >= $min"])
        #expect(no.status == 0)
        #expect(no.output == "false\n")
        let date = try runSift(["eval", "--value", #"{"start": {"date": 10}}"#, "start > CAST(0, 'NSDate')"])
        #expect(date.output == "true\n")
    }

    @Test func dataPrintsTheMatchingElements() throws {
        let folder = try ScratchFolder()
        let array = folder.url.appendingPathComponent("people.json")
        try Data(#"[{"name": "Ann", "age": 31}, {"name": "Bo", "age": 17}, {"name": "Cy", "age": 45}]"#.utf8).write(to: array)
        let result = try runSift(["eval", "--data", array.path, "age > %@", "--arg", "18"])
        #expect(result.status == 0)
        #expect(result.output == "{\"age\":31,\"name\":\"Ann\"}\n{\"age\":45,\"name\":\"Cy\"}\n")
        let lines = folder.url.appendingPathComponent("people.jsonl")
        try Data("{\"name\": \"Ann\", \"tags\": [\"a\"]}\n\n{\"name\": \"Bo\", \"tags\": []}\n".utf8).write(to: lines)
        let tagged = try runSift(["eval", "--data", lines.path, "ANY tags == 'a'"])
        #expect(tagged.output == "{\"name\":\"Ann\",\"tags\":[\"a\"]}\n")
    }

    @Test func errorsExitAsElsewhere() throws {
        let invalid = try runSift(["eval", "--value", "1", "SELF >"])
        #expect(invalid.status == 65)
        let mismatch = try runSift(["eval", "--value", #"{"age": "old"}"#, "age > 3"])
        #expect(mismatch.status == 65)
        #expect(mismatch.error.contains("cannot compare a string with a number"))
        #expect(mismatch.error.contains("^"))
        #expect(try runSift(["eval", "SELF == 1"]).status == 64)
        #expect(try runSift(["eval", "--data", "/nonexistent/file.json", "SELF == 1"]).status == 66)
    }
}

@Suite("sift with --postgres", .enabled(if: StoreKind.postgresURL != nil,
                                        "SIFT_POSTGRES_URL is not set: no PostgreSQL server to test against"))
struct PostgresCommandTests {
    @Test func importQueryExplainCountOnAServer() throws {
        let url = StoreKind.postgresURL!
        let schema = "sift_cli_\(UUID().uuidString.prefix(8).lowercased())"
        defer { try? PostgresStore(url: url, schemaName: schema, observesOtherProcesses: false).destroy() }
        let data = CheckAndBatchTests.fixture("company.json")
        let imported = try runSift(["import", "--data", data, "--postgres", url, "--schema", schema])
        #expect(imported.status == 0, "\(imported.error)")
        #expect(imported.output.contains("imported"))
        // Importing again: the server's unique violation, as a sentence about the schema.
        let again = try runSift(["import", "--data", data, "--postgres", url, "--schema", schema])
        #expect(again.status == 73)
        #expect(again.error == "error: '\(schema)' already holds Department objects with the keys being written (the store has "
                + "data already); nothing was written: import into a new file, or into an empty store\n")
        // The same objects as from a SQLite file.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("sift-cli-\(UUID()).sqlite")
        defer { try? FileManager.default.removeItem(at: file) }
        #expect(try runSift(["import", "--data", data, "--store", file.path]).status == 0)
        let fetch = ["--entity", "Employee", "--sort", "name:ci", "--limit", "7", "--format", "json", "age > 40 AND name MATCHES 'A.*'"]
        let onServer = try runSift(["query", "--postgres", url, "--schema", schema] + fetch)
        #expect(onServer.status == 0, "\(onServer.error)")
        #expect(onServer.output == (try runSift(["query", "--store", file.path] + fetch)).output)
        #expect(onServer.output.contains("\"id\""))
        let explained = try runSift(["explain", "--postgres", url, "--schema", schema, "--entity", "Employee",
                                     "department.name == 'Sales'"])
        #expect(explained.status == 0)
        #expect(explained.output.contains("$1 = \"Sales\""))
        #expect(explained.output.contains("postgresql plan:"))
        let count = try runSift(["count", "--postgres", url, "--schema", schema, "--entity", "Employee", "age > 40"])
        #expect(count.output == (try runSift(["count", "--store", file.path, "--entity", "Employee", "age > 40"])).output)
        // Neither or both of --store and --postgres: a usage error.
        #expect(try runSift(["count", "--entity", "Employee"]).status == 64)
        #expect(try runSift(["count", "--store", file.path, "--postgres", url, "--entity", "Employee"]).status == 64)
        let noServer = try runSift(["count", "--postgres", "postgres://sift@127.0.0.1:1/x", "--entity", "Employee"])
        #expect(noServer.status == 66 && noServer.error.contains("cannot connect"))
    }

    @Test func demoOnAServer() throws {
        let url = StoreKind.postgresURL!
        defer { try? PostgresStore(url: url, schemaName: "sift_demo_300", observesOtherProcesses: false).destroy() }
        let result = try runSift(["demo", "--postgres", url, "--employees", "300"])
        #expect(result.status == 0, "\(result.error)")
        #expect(result.output.contains("Sift on PostgreSQL"))
        #expect(result.output.contains("save with .storeTrump"))
        #expect(result.output.contains("plan: "))
    }
}
