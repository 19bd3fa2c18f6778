// PostgreSQL benchmark: the store on a server next to hand-written SQL sent
// through postgres-nio on a connection of its own, in the same run, on the
// same tables: fetches (every row, and a selective one), an insert save, an
// update save with version checks, and saves from several writers at once.
// The server is the one SIFT_POSTGRES_URL names (`.ci/postgres` starts one:
// `source .ci/postgres && start_postgres`).

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import Logging
import PostgresNIO
import Sift
import SiftDemo
import SiftPostgres
import SiftStore

/// Hand-written statements on one connection, waited for as the store waits.
private struct RawConnection {
    let connection: PostgresConnection
    let logger = Logger(label: "sift.benchmarks")

    init(url: String, schema: String) {
        let parsed = URL(string: url)!
        let configuration = PostgresConnection.Configuration(
            host: parsed.host!, port: parsed.port ?? 5432, username: parsed.user!, password: parsed.password,
            database: String(parsed.path.dropFirst()), tls: .disable)
        connection = try! PostgresConnection.connect(on: PostgresConnection.defaultEventLoopGroup.any(), configuration: configuration,
                                                     id: 99, logger: logger).wait()
        _ = run("SET search_path TO \"\(schema)\"")
    }

    @discardableResult
    func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings()) -> PostgresQueryResult {
        try! connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger).wait()
    }

    func close() { try! connection.close().wait() }
}

/// The columns of an employee row, read as a hand-written loop reads them.
private struct EmployeeRow {
    var key: Int64, version: Int64, name: String, nickname: String?, age: Int64, salary: Double, rating: Double?
    var isManager: Bool, startDate: Date, department: Int64?, manager: Int64?
}

private let employeeColumns = #""Z_PK", "Z_OPT", "ZNAME", "ZNICKNAME", "ZAGE", "ZSALARY", "ZRATING", "ZISMANAGER", "ZSTARTDATE", "ZDEPARTMENT", "ZMANAGER""#

private func readEmployees(_ result: PostgresQueryResult) -> [EmployeeRow] {
    result.rows.map { row in
        let cells = Array(row)
        return EmployeeRow(
            key: try! cells[0].decode(Int64.self), version: try! cells[1].decode(Int64.self), name: try! cells[2].decode(String.self),
            nickname: try! cells[3].decode(String?.self), age: try! cells[4].decode(Int64.self), salary: try! cells[5].decode(Double.self),
            rating: try! cells[6].decode(Double?.self), isManager: try! cells[7].decode(Int64.self) != 0,
            startDate: Date(timeIntervalSinceReferenceDate: try! cells[8].decode(Double.self)),
            department: try! cells[9].decode(Int64?.self), manager: try! cells[10].decode(Int64?.self))
    }
}

func postgresBenchmark() {
    guard let url = ProcessInfo.processInfo.environment["SIFT_POSTGRES_URL"] else {
        report("== PostgreSQL: skipped (SIFT_POSTGRES_URL is not set; `source .ci/postgres && start_postgres` starts a server)")
        return
    }
    let employees = Int(ProcessInfo.processInfo.environment["SIFT_BENCH_EMPLOYEES"] ?? "") ?? 100_000
    report("== PostgreSQL: the store vs hand-written SQL through postgres-nio, same server, same tables (\(employees) employees)")
    let schema = "sift_bench_\(UUID().uuidString.prefix(8).lowercased())"
    let store = try! PostgresStore(url: url, model: CompanyGenerator.model, schemaName: schema, observesOtherProcesses: false)
    defer { try! store.destroy() }
    try! store.importNodes(CompanyGenerator.nodes(employees: employees))
    let raw = RawConnection(url: url, schema: schema)
    defer { raw.close() }
    let clock = ContinuousClock()
    let rounds = 3

    // 1. Queries: a selective indexed fetch, a scan with a [cd] predicate
    //    (the canonical name's folded companion column), every employee.
    //    Each side reads every value of every row: the raw loop into a
    //    struct, Sift from the fetched objects by name. Sift's row path alone
    //    (rows into row-cache nodes) is reported beside it.
    let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
    func binds(_ values: [any PostgresEncodable & Sendable]) -> PostgresBindings {
        var binds = PostgresBindings()
        for value in values {
            switch value {
            case let v as Int64: binds.append(v)
            case let v as Double: binds.append(v)
            case let v as String: binds.append(v)
            default: fatalError("unexpected binding")
            }
        }
        return binds
    }
    let queries: [(label: String, predicate: String, sql: String, binds: PostgresBindings)] = [
        ("selective indexed fetch: age BETWEEN {30, 31} AND salary > 190000", "age BETWEEN {30, 31} AND salary > 190000",
         "SELECT \(employeeColumns) FROM \"ZEMPLOYEE\" WHERE \"ZAGE\" BETWEEN $1 AND $2 AND \"ZSALARY\" > $3 ORDER BY \"Z_PK\"",
         binds([Int64(30), Int64(31), Double(190_000)])),
        ("scan with [cd]: name CONTAINS[cd] 'zoe'", "name CONTAINS[cd] 'zoe'",
         "SELECT \(employeeColumns) FROM \"ZEMPLOYEE\" WHERE strpos(\"Z_FOLD3_ZNAME\", $1) > 0 ORDER BY \"Z_PK\"", binds(["zoe"])),
        ("fetch all \(employees) objects", "TRUEPREDICATE",
         "SELECT \(employeeColumns) FROM \"ZEMPLOYEE\" ORDER BY \"Z_PK\"", PostgresBindings()),
    ]
    for query in queries {
        var bestRaw = Double.infinity, bestSift = Double.infinity, bestRows = Double.infinity
        var rawCount = 0, siftCount = 0
        for _ in 0..<rounds {
            bestRaw = min(bestRaw, seconds(clock.measure {
                let rows = readEmployees(raw.run(query.sql, query.binds))
                rawCount = rows.count
                blackHole(rows)
            }))
            let request = FetchRequest(entityName: "Employee", predicate: query.predicate)
            store.rowCache.removeAll()
            bestRows = min(bestRows, seconds(clock.measure { blackHole(try! store.rows(for: store.compile(request))) }))
            store.rowCache.removeAll()
            bestSift = min(bestSift, seconds(clock.measure {
                let context = ObjectContext(store: store)
                var objects = request
                objects.returnsObjectsAsFaults = false
                let fetched = try! context.fetch(objects)
                siftCount = fetched.count
                for object in fetched {
                    for name in names { blackHole(object[name]) }
                    blackHole(try! object.object(forKey: "department"))
                }
            }))
        }
        precondition(rawCount == siftCount, "\(query.label): raw \(rawCount) rows, Sift \(siftCount)")
        report(query.label + " (\(rawCount) rows)", "raw \(formatted(bestRaw * 1000)) ms",
               "Sift rows \(formatted(bestRows * 1000)) ms = \(formatted(bestRows / bestRaw, digits: 2))x",
               "objects read by name \(formatted(bestSift * 1000)) ms = \(formatted(bestSift / bestRaw, digits: 2))x (target ≤ 1.2x)")
    }

    // 2. Inserting objects in one save: the same rows written by hand in one transaction.
    let inserted = employees
    var bestRawInsert = Double.infinity, bestSiftInsert = Double.infinity
    let insertColumns = ["Z_PK", "Z_ENT", "Z_OPT", "ZNAME"] + SQLSchema.companionFlags.map { "Z_FOLD\($0)_ZNAME" }
        + ["ZAGE", "ZSALARY", "ZISMANAGER", "ZSTARTDATE", "ZDEPARTMENT"]
    let insertSQL = "INSERT INTO \"ZEMPLOYEE\" (" + insertColumns.map { "\"\($0)\"" }.joined(separator: ", ") + ") VALUES ("
        + (1...insertColumns.count).map { "$\($0)" }.joined(separator: ", ") + ")"
    /// The largest key in the table: hand-written inserts take keys after it, as Sift's do.
    func largestKey() -> Int64 {
        try! raw.run("SELECT COALESCE(MAX(\"Z_PK\"), 0) FROM \"ZEMPLOYEE\"").rows[0].decode(Int64.self)
    }
    for round in 0..<rounds {
        var nextRawKey = largestKey()
        bestRawInsert = min(bestRawInsert, seconds(clock.measure {
            raw.run("BEGIN")
            for i in 0..<inserted {
                nextRawKey += 1
                let name = "Raw \(round) \(i)"
                var binds = PostgresBindings()
                binds.append(nextRawKey)
                binds.append(Int64(2))
                binds.append(Int64(1))
                binds.append(name)
                for flags in SQLSchema.companionFlags { binds.append(StringFolding.fold(name, ComparisonOptions(foldingFlags: flags))) }
                binds.append(Int64(20 + i % 45))
                binds.append(Double(30_000 + i))
                binds.append(Int64(i % 10 == 0 ? 1 : 0))
                binds.append(Double(i * 1000))
                binds.append(Int64(1 + i % 7))
                raw.run(insertSQL, binds)
            }
            raw.run("COMMIT")
        }))
        let context = ObjectContext(store: store)
        let departments = (1...7).map { context.object(for: ObjectID(entity: 0, primaryKey: Int64($0))) }
        for i in 0..<inserted {
            let e = try! context.insert("Employee")
            try! e.setValue(.string("Sift \(round) \(i)"), forKey: "name")
            try! e.setValue(.int(Int64(20 + i % 45)), forKey: "age")
            try! e.setValue(.double(Double(30_000 + i)), forKey: "salary")
            try! e.setValue(.bool(i % 10 == 0), forKey: "isManager")
            try! e.setValue(.date(Date(timeIntervalSinceReferenceDate: Double(i * 1000))), forKey: "startDate")
            try! e.setObject(departments[i % 7], forKey: "department")
        }
        bestSiftInsert = min(bestSiftInsert, seconds(clock.measure { try! context.save() }))
    }
    report("insert \(inserted) objects in one save",
           "raw \(formatted(bestRawInsert * 1000)) ms",
           "save \(formatted(bestSiftInsert * 1000)) ms = \(formatted(bestSiftInsert / bestRawInsert, digits: 2))x (target ≤ 1.5x)")

    // 3. Updating objects with version checks.
    let updated = employees / 10
    let keys = (1...updated).map { Int64($0 * (employees / updated)) }
    var bestRawUpdate = Double.infinity, bestSiftUpdate = Double.infinity
    for round in 0..<rounds {
        var versionBinds = PostgresBindings()
        versionBinds.append(keys)
        var versions: [Int64: Int64] = [:]
        for row in raw.run("SELECT \"Z_PK\", \"Z_OPT\" FROM \"ZEMPLOYEE\" WHERE \"Z_PK\" = ANY($1)", versionBinds).rows {
            let cells = Array(row)
            versions[try! cells[0].decode(Int64.self)] = try! cells[1].decode(Int64.self)
        }
        bestRawUpdate = min(bestRawUpdate, seconds(clock.measure {
            raw.run("BEGIN")
            for key in keys {
                var binds = PostgresBindings()
                binds.append(Double(round * 1000) + Double(key))
                binds.append(key)
                binds.append(versions[key]!)
                let result = raw.run("UPDATE \"ZEMPLOYEE\" SET \"ZSALARY\" = $1, \"Z_OPT\" = \"Z_OPT\" + 1 WHERE \"Z_PK\" = $2 AND \"Z_OPT\" = $3", binds)
                precondition(result.metadata.rows == 1)
            }
            raw.run("COMMIT")
        }))
        store.rowCache.removeAll()
        let context = ObjectContext(store: store)
        var request = FetchRequest(entityName: "Employee", predicate: "SELF IN %@",
                                   arguments: [.array(keys.map { .object(ObjectReference(entity: "Employee", id: $0)) })])
        request.returnsObjectsAsFaults = false
        let objects = try! context.fetch(request)
        precondition(objects.count == updated)
        bestSiftUpdate = min(bestSiftUpdate, seconds(clock.measure {
            for object in objects { try! object.setValue(.double(Double(round * 1000 + 1) + Double(object.objectID.primaryKey)), forKey: "salary") }
            try! context.save()
        }))
    }
    report("update \(updated) objects with version checks",
           "raw \(formatted(bestRawUpdate * 1000)) ms",
           "save \(formatted(bestSiftUpdate * 1000)) ms = \(formatted(bestSiftUpdate / bestRawUpdate, digits: 2))x (target ≤ 1.5x)")

    // 4. Writers at once: each its own store (a process of its own, as far
    //    as the server knows) saving small batches of new employees (no
    //    department: a shared department would make every save a conflict);
    //    the same transactions written by hand on as many connections.
    let saves = 200
    let perSave = 5
    let statementsPerSave = Atomic64(0)
    for writers in [1, 4] {
        let rawKeys = Atomic64(largestKey())
        let rawTime = seconds(clock.measure {
            DispatchQueue.concurrentPerform(iterations: writers) { _ in
                let connection = RawConnection(url: url, schema: schema)
                defer { connection.close() }
                for _ in 0..<saves {
                    connection.run("BEGIN")
                    for i in 0..<perSave {
                        let name = "w \(i)"
                        var binds = PostgresBindings()
                        binds.append(rawKeys.next())
                        binds.append(Int64(2))
                        binds.append(Int64(1))
                        binds.append(name)
                        for flags in SQLSchema.companionFlags { binds.append(StringFolding.fold(name, ComparisonOptions(foldingFlags: flags))) }
                        binds.append(Int64(30))
                        binds.append(Double(50_000))
                        binds.append(Int64(0))
                        binds.append(Double(0))
                        binds.appendNull()
                        connection.run(insertSQL, binds)
                    }
                    connection.run("COMMIT")
                }
            }
        })
        let siftTime = seconds(clock.measure {
            DispatchQueue.concurrentPerform(iterations: writers) { _ in
                let writer = try! PostgresStore(url: url, schemaName: schema, maximumConnections: 1, observesOtherProcesses: false)
                defer { writer.close() }
                let context = ObjectContext(store: writer)
                for _ in 0..<saves {
                    for i in 0..<perSave {
                        let e = try! context.insert("Employee")
                        try! e.setValue(.string("w \(i)"), forKey: "name")
                        try! e.setValue(.int(30), forKey: "age")
                        try! e.setValue(.double(50_000), forKey: "salary")
                        try! e.setValue(.bool(false), forKey: "isManager")
                        try! e.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
                    }
                    let before = writer.statementCount
                    try! context.save()
                    if writers == 1 { statementsPerSave.set(Int64(writer.statementCount - before)) }
                    context.reset()
                }
            }
        })
        let total = Double(writers * saves)
        report("\(writers) writer\(writers == 1 ? "" : "s") at once, \(saves) saves of \(perSave) inserts each",
               "raw \(formatted(total / rawTime, digits: 0)) saves/s",
               "Sift \(formatted(total / siftTime, digits: 0)) saves/s = \(formatted(siftTime / rawTime, digits: 2))x the time",
               "(\(statementsPerSave.get() + 1) statements a save with the key reservation, raw \(perSave + 2))")
    }
}

/// Keys for the hand-written writers.
private final class Atomic64: Sendable {
    private let value: LockedState<Int64>
    init(_ value: Int64) { self.value = LockedState(value) }
    func next() -> Int64 { value.withLock { $0 += 1; return $0 } }
    func set(_ newValue: Int64) { value.withLock { $0 = newValue } }
    func get() -> Int64 { value.withLock { $0 } }
}
#else
/// Built without the package's PostgreSQL trait: there is no server store to measure.
func postgresBenchmark() {
    print("postgres: built without the PostgreSQL trait (swift build --traits PostgreSQL)")
}
#endif
