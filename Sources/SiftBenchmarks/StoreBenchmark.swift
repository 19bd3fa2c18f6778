// Store benchmark: the SQL lowering and the fetch path on a one-million-row
// store, next to hand-written SQL and raw sqlite3 calls in the same run.

import CSQLite
import Foundation
import Sift
import SiftDemo
import SiftStore
import CMalloc

/// The benchmark store: one million employees, generated once and kept in
/// the system's temporary folder.
func benchmarkStore(employees: Int) throws -> SQLiteStore {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("sift-bench-\(employees)-\(CompanyGenerator.model.versionHash)-coredata.sqlite")
    if !FileManager.default.fileExists(atPath: url.path) {
        report("(generating the \(employees)-employee store at \(url.path), once)")
        let partial = url.appendingPathExtension("partial")
        try? FileManager.default.removeItem(at: partial)
        do {
            let store = try SQLiteStore(url: partial, model: CompanyGenerator.model)
            try store.importNodes(CompanyGenerator.nodes(employees: employees))
            try store.withConnection { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE") }
        }
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial.path + suffix) }
        try FileManager.default.moveItem(at: partial, to: url)
    }
    return try SQLiteStore(url: url, model: CompanyGenerator.model)
}

/// An employee's row as a hand-written record: what a raw `sqlite3_step`
/// loop reads, the baseline of the fetch benchmarks.
struct EmployeeRecord {
    var key: Int64, version: Int64, name: String, nickname: String?, age: Int64, salary: Double, rating: Double?
    var isManager: Bool, startDate: Date, department: Int64?, manager: Int64?

    /// The SELECT of every column the record reads, from the employees' table.
    static let columns = #"SELECT "Z_PK", "Z_OPT", "ZNAME", "ZNICKNAME", "ZAGE", "ZSALARY", "ZRATING", "ZISMANAGER", "ZSTARTDATE", "ZDEPARTMENT", "ZMANAGER" FROM "ZEMPLOYEE""#

    /// The record of the statement's current row (selected by `columns`).
    init(_ statement: OpaquePointer) {
        func text(_ i: Int32) -> String? {
            sqlite3_column_type(statement, i) == SQLITE_NULL ? nil : String(cString: sqlite3_column_text(statement, i))
        }
        func integer(_ i: Int32) -> Int64? { sqlite3_column_type(statement, i) == SQLITE_NULL ? nil : sqlite3_column_int64(statement, i) }
        self.init(key: sqlite3_column_int64(statement, 0), version: sqlite3_column_int64(statement, 1), name: text(2) ?? "",
                  nickname: text(3), age: sqlite3_column_int64(statement, 4), salary: sqlite3_column_double(statement, 5),
                  rating: sqlite3_column_type(statement, 6) == SQLITE_NULL ? nil : sqlite3_column_double(statement, 6),
                  isManager: sqlite3_column_int64(statement, 7) != 0,
                  startDate: Date(timeIntervalSinceReferenceDate: sqlite3_column_double(statement, 8)),
                  department: integer(9), manager: integer(10))
    }

    init(key: Int64, version: Int64, name: String, nickname: String?, age: Int64, salary: Double, rating: Double?,
         isManager: Bool, startDate: Date, department: Int64?, manager: Int64?) {
        (self.key, self.version, self.name, self.nickname, self.age, self.salary, self.rating) =
            (key, version, name, nickname, age, salary, rating)
        (self.isManager, self.startDate, self.department, self.manager) = (isManager, startDate, department, manager)
    }
}

/// SQLite copies transient bindings.
let SQLITE_TRANSIENT = unsafeBitCast(-1, to: sqlite3_destructor_type.self)

/// Runs a query with raw sqlite3 calls and counts its rows.
func rawCount(_ db: OpaquePointer, _ sql: String, _ bind: (OpaquePointer) -> Void) -> Int {
    var statement: OpaquePointer?
    precondition(sqlite3_prepare_v2(db, sql, -1, &statement, nil) == SQLITE_OK, String(cString: sqlite3_errmsg(db)))
    defer { sqlite3_finalize(statement) }
    bind(statement!)
    var rows = 0
    while sqlite3_step(statement) == SQLITE_ROW { rows += 1 }
    return rows
}

/// The application's path: a fresh context, the request's objects (faults
/// by default), every attribute read by name and the department's object,
/// the context released at the end (kept alive until then, as an
/// application keeps its context while it uses the objects). Every read
/// must succeed.
func applicationPath(_ store: SQLiteStore, _ request: FetchRequest, _ names: [String]) {
    let context = ObjectContext(store: store)
    withExtendedLifetime(context) {
        var read = 0
        let objects = try! context.fetch(request)
        for object in objects {
            for name in names where object[name] != nil { read += 1 }
            blackHole(try! object.object(forKey: "department"))
        }
        precondition(read == objects.count * names.count, "a read failed")
    }
}

func storeBenchmark() {
    let employees = 1_000_000
    let store = try! benchmarkStore(employees: employees)
    var db: OpaquePointer?
    // The raw loops' connection is opened as Sift's store and GRDB open
    // theirs: in multi-thread mode, with no lock taken at each sqlite3 call.
    sqlite3_open_v2(store.url!.path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nil)
    defer { sqlite3_close_v2(db) }
    // The store's functions, for the generated SQL run through raw calls too.
    report("== SQL lowering and fetch path: \(employees) employees, one core")

    // 1. Compile time, and the generated SQL next to the same query written by hand.
    let cases: [(String, String, (OpaquePointer) -> Void)] = [
        ("age BETWEEN {30, 32} AND salary > 190000",
         #"SELECT e."Z_PK" FROM "ZEMPLOYEE" AS e WHERE e."ZAGE" BETWEEN ?1 AND ?2 AND e."ZSALARY" > ?3 ORDER BY e."Z_PK""#,
         { sqlite3_bind_int64($0, 1, 30); sqlite3_bind_int64($0, 2, 32); sqlite3_bind_double($0, 3, 190000) }),
        ("name BEGINSWITH 'Zo'",
         #"SELECT e."Z_PK" FROM "ZEMPLOYEE" AS e WHERE e."ZNAME" >= ?1 AND e."ZNAME" < ?2 ORDER BY e."Z_PK""#,
         { sqlite3_bind_text($0, 1, "Zo", -1, SQLITE_TRANSIENT); sqlite3_bind_text($0, 2, "Zp", -1, SQLITE_TRANSIENT) }),
        ("department.name == 'Sales' AND age == 40",
         #"SELECT e."Z_PK" FROM "ZEMPLOYEE" AS e JOIN "ZDEPARTMENT" AS d ON d."Z_PK" = e."ZDEPARTMENT" WHERE d."ZNAME" = ?1 AND e."ZAGE" = ?2 ORDER BY e."Z_PK""#,
         { sqlite3_bind_text($0, 1, "Sales", -1, SQLITE_TRANSIENT); sqlite3_bind_int64($0, 2, 40) }),
        ("ANY tags.name == 'mentor' AND age == 33",
         #"SELECT e."Z_PK" FROM "ZEMPLOYEE" AS e WHERE e."ZAGE" = ?2 AND EXISTS (SELECT 1 FROM "Z_2TAGS" AS j JOIN "ZTAG" AS t ON t."Z_PK" = j."Z_3TAGS" WHERE j."Z_2EMPLOYEES" = e."Z_PK" AND t."ZNAME" = ?1) ORDER BY e."Z_PK""#,
         { sqlite3_bind_text($0, 1, "mentor", -1, SQLITE_TRANSIENT); sqlite3_bind_int64($0, 2, 33) }),
        ("reports.@count > 9 AND age == 50",
         #"SELECT e."Z_PK" FROM "ZEMPLOYEE" AS e WHERE (SELECT COUNT(*) FROM "ZEMPLOYEE" AS r WHERE r."ZMANAGER" = e."Z_PK") > ?1 AND e."ZAGE" = ?2 ORDER BY e."Z_PK""#,
         { sqlite3_bind_int64($0, 1, 9); sqlite3_bind_int64($0, 2, 50) }),
    ]
    let part = ProcessInfo.processInfo.environment["SIFT_BENCH_PART"]
    for (predicate, handWritten, bind) in cases where part == nil || part == "sql" {
        let request = FetchRequest(entityName: "Employee", predicate: predicate)
        let compile = Measurement.run("compile", operations: 200, rounds: 5) {
            for _ in 0..<200 { blackHole(try! store.sqlQuery(for: request, columns: .identifiers)) }
        }
        let query = try! store.sqlQuery(for: request, columns: .identifiers)
        var generatedRows = 0
        var handRows = 0
        let (hand, generated) = Measurement.compare(operations: 1, rounds: 5, baseline: {
            handRows = rawCount(db!, handWritten, bind)
        }, candidate: {
            generatedRows = try! store.withConnection { connection in
                var rows = 0
                try connection.forEachRow(query.sql, query.bindings) { _ in rows += 1; return true }
                return rows
            }
        })
        precondition(generatedRows == handRows, "\(predicate): \(generatedRows) vs \(handRows)")
        let samePlan = (try? store.queryPlan(query)) ?? []
        report(predicate.padding(toLength: 44, withPad: " ", startingAt: 0),
               "compile \(formatted(compile.nanosecondsPerOperation / 1000)) us",
               "sql \(formatted(generated.nanosecondsPerOperation / 1e6, digits: 2)) ms vs hand-written \(formatted(hand.nanosecondsPerOperation / 1e6, digits: 2)) ms",
               "= \(formatted(generated.nanosecondsPerOperation / hand.nanosecondsPerOperation, digits: 2))x",
               "(\(generatedRows) rows; plan: \(samePlan.joined(separator: "; ")))")
    }

    // 2. Fetching 200 000 rows into objects, next to a raw sqlite3_step loop
    //    reading the same columns into Swift values (a struct per row); then
    //    reading every attribute of every object, by name and by a resolved
    //    attribute; and the memory the fetched objects hold.
    let count = 200_000
    if part == "app" {
        // The application's path alone, for a profiler: SIFT_BENCH_PART=app.
        var application = FetchRequest(entityName: "Employee")
        application.fetchLimit = count
        let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
        let app = Measurement.run("app", operations: count, rounds: 10) {
            store.rowCache.removeAll()
            applicationPath(store, application, names)
        }
        report("the application's path alone: \(formatted(app.nanosecondsPerOperation)) ns/object")
    }
    if part == nil || part == "fetch" {
    let rawSQL = EmployeeRecord.columns + #" ORDER BY "Z_PK" LIMIT ?1"#
    func rawRecords() -> [EmployeeRecord] {
        var statement: OpaquePointer?
        sqlite3_prepare_v2(db, rawSQL, -1, &statement, nil)
        sqlite3_bind_int64(statement, 1, Int64(count))
        var rows: [EmployeeRecord] = []
        rows.reserveCapacity(count)
        while sqlite3_step(statement) == SQLITE_ROW { rows.append(EmployeeRecord(statement!)) }
        sqlite3_finalize(statement)
        return rows
    }
    var request = FetchRequest(entityName: "Employee")
    request.fetchLimit = count
    request.returnsObjectsAsFaults = false
    let names = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"]
    let entity = store.model.entity(named: "Employee")!
    let handles = names.map { entity.handle(forAttribute: $0)! }
    var kept: (ObjectContext, [ManagedObject])?
    var keptRows: [EmployeeRecord] = []
    func clear() {
        kept = nil
        keptRows = []
        store.rowCache.removeAll()
    }
    // The fetch alone; then the fetch and every value read by name.
    let (raw, fetched) = Measurement.compare(operations: count, rounds: 5, setUp: clear, baseline: {
        keptRows = rawRecords()
    }, candidate: {
        let context = ObjectContext(store: store)
        kept = (context, try! context.fetch(request))
    })
    precondition(kept!.1.count == count && rawRecords().count == count)
    let (_, fetchedAndRead) = Measurement.compare(operations: count, rounds: 5, setUp: clear, baseline: {}, candidate: {
        let context = ObjectContext(store: store)
        let objects = try! context.fetch(request)
        for object in objects {
            for name in names { blackHole(object[name]) }
            blackHole(try! object.object(forKey: "department"))
        }
        kept = (context, objects)
    })
    report("fetch \(count) rows into objects: \(formatted(fetched.nanosecondsPerOperation)) ns/row vs raw sqlite3_step loop \(formatted(raw.nanosecondsPerOperation)) ns/row",
           "= \(formatted(fetched.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x (target ≤ 1.5x)")
    report("fetch and read every attribute by name: \(formatted(fetchedAndRead.nanosecondsPerOperation)) ns/row",
           "= \(formatted(fetchedAndRead.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x the raw loop (target ≤ 2.0x)")
    // The application's path: a fresh context, a request with its defaults (objects as faults),
    // every attribute read by name, the context released; next to GRDB records read and released.
    var application = FetchRequest(entityName: "Employee")
    application.fetchLimit = count
    let (grdb, app) = Measurement.compare(operations: count, rounds: 5, setUp: clear, baseline: {
        #if Benchmarks
        readEveryField(grdbEmployees(path: store.url!.path, limit: count))
        #endif
    }, candidate: {
        applicationPath(store, application, names)
    })
    #if Benchmarks
    let (_, grdbFetched) = Measurement.compare(operations: count, rounds: 5, setUp: clear, baseline: {}, candidate: {
        blackHole(grdbEmployees(path: store.url!.path, limit: count))
    })
    report("GRDB 7 records, fetched: \(formatted(grdbFetched.nanosecondsPerOperation)) ns/row = \(formatted(grdbFetched.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x raw;",
           "fetched and every field read \(formatted(grdb.nanosecondsPerOperation)) ns/row;",
           "Sift's fetch and read \(formatted(fetchedAndRead.nanosecondsPerOperation / grdb.nanosecondsPerOperation, digits: 2))x GRDB (target < 1x)")
    report("the application's path (fresh context, faults, reads by name, context released): \(formatted(app.nanosecondsPerOperation)) ns/object",
           "= \(formatted(app.nanosecondsPerOperation / grdb.nanosecondsPerOperation, digits: 2))x GRDB records (target < 1x),",
           "\(formatted(app.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x the raw loop (target ≤ 2x)")
    #else
    report("the application's path (fresh context, faults, reads by name, context released): \(formatted(app.nanosecondsPerOperation)) ns/object",
           "= \(formatted(app.nanosecondsPerOperation / raw.nanosecondsPerOperation, digits: 2))x the raw loop",
           "(GRDB's figures: build with --enable-all-traits)")
    _ = grdb
    #endif
    // Reads alone, over objects already fetched.
    clear()
    let context = ObjectContext(store: store)
    let objects = try! context.fetch(request)
    let reads = count * names.count
    let byName = Measurement.run("by name", operations: reads, rounds: 5) {
        var present = 0
        for object in objects { for name in names where object[name] != nil { present += 1 } }
        blackHole(present)
    }
    let byHandle = Measurement.run("by handle", operations: reads, rounds: 5) {
        var present = 0
        for object in objects { for handle in handles where object[handle] != nil { present += 1 } }
        blackHole(present)
    }
    // Typed reads by handle: each attribute read as the Swift type its column stores.
    func typedReads(_ objects: [ManagedObject]) -> Int {
        var present = 0
        for object in objects {
            if object[handles[0], as: String.self] != nil { present &+= 1 }
            if object[handles[1], as: String.self] != nil { present &+= 1 }
            if object[handles[2], as: Int.self] != nil { present &+= 1 }
            if object[handles[3], as: Double.self] != nil { present &+= 1 }
            if object[handles[4], as: Double.self] != nil { present &+= 1 }
            if object[handles[5], as: Bool.self] != nil { present &+= 1 }
            if object[handles[6], as: Date.self] != nil { present &+= 1 }
        }
        return present
    }
    let byTypedHandle = Measurement.run("by typed handle", operations: reads, rounds: 5) { blackHole(typedReads(objects)) }
    // Every typed read found its value, as the untyped read did (nil nicknames and ratings aside).
    precondition(typedReads(objects) == objects.reduce(0) { count, object in
        count + handles.count(where: { object[$0].map { $0 != .null } ?? false })
    })
    // The same reads over 1 000 objects read again and again: what a read
    // costs when the objects are in the processor's cache.
    let hot = Array(objects.prefix(1000))
    let hotReads = 200 * hot.count * names.count
    let hotByName = Measurement.run("hot by name", operations: hotReads, rounds: 5) {
        var present = 0
        for _ in 0..<200 { for object in hot { for name in names where object[name] != nil { present += 1 } } }
        blackHole(present)
    }
    let hotByHandle = Measurement.run("hot by handle", operations: hotReads, rounds: 5) {
        var present = 0
        for _ in 0..<200 { for object in hot { for handle in handles where object[handle] != nil { present += 1 } } }
        blackHole(present)
    }
    let hotByTypedHandle = Measurement.run("hot by typed handle", operations: hotReads, rounds: 5) {
        var present = 0
        for _ in 0..<200 { present &+= typedReads(hot) }
        blackHole(present)
    }
    report("read an attribute of a fetched object: by name \(formatted(byName.nanosecondsPerOperation)) ns (target ≤ 20 ns)",
           "by an AttributeHandle \(formatted(byHandle.nanosecondsPerOperation)) ns,",
           "by an AttributeHandle as its Swift type \(formatted(byTypedHandle.nanosecondsPerOperation)) ns (target ≤ 5 ns)",
           "(1 000 objects in cache: by name \(formatted(hotByName.nanosecondsPerOperation)) ns,",
           "by handle \(formatted(hotByHandle.nanosecondsPerOperation)) ns, typed \(formatted(hotByTypedHandle.nanosecondsPerOperation)) ns)")
    // Memory: what holding the fetched objects costs, next to their values' bytes.
    var valueBytes = 0
    for record in rawRecords() {
        valueBytes += 8 * 7 + record.name.utf8.count + (record.nickname?.utf8.count ?? 0) + 8 + 8
    }
    clear()
    let before = Int(mallinfo2().uordblks)
    let held = ObjectContext(store: store)
    let heldObjects = try! held.fetch(request)
    let after = Int(mallinfo2().uordblks)
    let perObject = Double(after - before) / Double(heldObjects.count)
    report("holding \(count) fetched objects: \(formatted(perObject, digits: 0)) bytes each",
           "vs \(formatted(Double(valueBytes) / Double(count), digits: 0)) bytes of values = \(formatted(perObject / (Double(valueBytes) / Double(count)), digits: 2))x (target ≤ 2x)")
    _ = (kept, keptRows, heldObjects)
    clear()
    #if Benchmarks
    // The same rows held as GRDB records.
    let beforeRecords = Int(mallinfo2().uordblks)
    let records = grdbEmployees(path: store.url!.path, limit: count)
    let perRecord = Double(Int(mallinfo2().uordblks) - beforeRecords) / Double(records.count)
    report("holding them as GRDB 7 records: \(formatted(perRecord, digits: 0)) bytes each;",
           "Sift's objects \(formatted(perObject / perRecord, digits: 2))x (target ≤ 1x)")
    blackHole(records)
    #endif
    // Growth: the fetch alone and the memory each held object costs, at 200 000 and 1 000 000.
    var perObjectAt: [(Int, Double, Double)] = []
    for size in [200_000, 1_000_000] {
        var sized = request
        sized.fetchLimit = size
        var held: (ObjectContext, [ManagedObject])?
        let fetch = Measurement.run("fetch \(size)", operations: size, rounds: 3) {
            held = nil
            store.rowCache.removeAll()
            let context = ObjectContext(store: store)
            held = (context, try! context.fetch(sized))
        }
        held = nil
        store.rowCache.removeAll()
        let before = Int(mallinfo2().uordblks)
        let context = ObjectContext(store: store)
        let objects = try! context.fetch(sized)
        let bytes = Double(Int(mallinfo2().uordblks) - before) / Double(objects.count)
        perObjectAt.append((size, fetch.nanosecondsPerOperation, bytes))
        _ = (held, objects)
    }
    for (size, nanoseconds, bytes) in perObjectAt {
        report("fetch \(size) objects: \(formatted(nanoseconds)) ns/object, \(formatted(bytes, digits: 0)) bytes held each")
    }
    report("time per object at 1 000 000 / at 200 000: \(formatted(perObjectAt[1].1 / perObjectAt[0].1, digits: 2))x (target ≤ 1.2x)")
    clear()
    }

    // 3. Prefetching a to-one and a to-many for 10 000 objects, next to
    //    firing their faults one by one.
    let many = 10_000
    func touchAll(_ objects: [ManagedObject]) {
        for object in objects {
            blackHole(try! object.object(forKey: "department")?.value(forKey: "name"))
            for report in try! object.objects(forKey: "reports") { blackHole(try! report.value(forKey: "age")) }
        }
    }
    guard part == nil || part == "prefetch" else { return }
    var prefetchedStatements = 0
    var faultingStatements = 0
    let (oneByOne, prefetched) = Measurement.compare(operations: many, rounds: 3, baseline: {
        store.rowCache.removeAll()
        let context = ObjectContext(store: store)
        let before = store.statementCount
        let objects = try! context.fetch(FetchRequest(entityName: "Employee", predicate: "age >= 0", fetchLimit: many))
        touchAll(objects)
        faultingStatements = store.statementCount - before
    }, candidate: {
        store.rowCache.removeAll()
        let context = ObjectContext(store: store)
        let before = store.statementCount
        var request = FetchRequest(entityName: "Employee", predicate: "age >= 0", fetchLimit: many)
        request.relationshipKeyPathsForPrefetching = ["department", "reports"]
        touchAll(try! context.fetch(request))
        prefetchedStatements = store.statementCount - before
    })
    report("prefetch department + reports for \(many) objects: \(prefetchedStatements) statements, \(formatted(prefetched.nanosecondsPerOperation / 1e3, digits: 2)) us/object",
           "vs faults one by one: \(faultingStatements) statements, \(formatted(oneByOne.nanosecondsPerOperation / 1e3, digits: 2)) us/object",
           "= \(formatted(prefetched.nanosecondsPerOperation / oneByOne.nanosecondsPerOperation, digits: 2))x")

    // 4. Opening the store: Core Data's metadata read and checked against the
    //    model (its version hashes), next to opening the file and reading that
    //    metadata row with raw sqlite3 calls.
    let opens = 50
    let path = store.url!.path
    let (rawOpen, siftOpen) = Measurement.compare(operations: opens, rounds: 5, baseline: {
        for _ in 0..<opens {
            var handle: OpaquePointer?
            sqlite3_open_v2(path, &handle, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nil)
            blackHole(rawCount(handle!, #"SELECT "Z_PLIST" FROM "Z_METADATA""#) { _ in })
            sqlite3_close_v2(handle)
        }
    }, candidate: {
        for _ in 0..<opens { blackHole(try! SQLiteStore(url: store.url!, model: CompanyGenerator.model)) }
    })
    report("open the store with its model: \(formatted(siftOpen.nanosecondsPerOperation / 1e3, digits: 1)) us",
           "vs raw open and metadata read \(formatted(rawOpen.nanosecondsPerOperation / 1e3, digits: 1)) us",
           "= \(formatted(siftOpen.nanosecondsPerOperation / rawOpen.nanosecondsPerOperation, digits: 2))x")
}
