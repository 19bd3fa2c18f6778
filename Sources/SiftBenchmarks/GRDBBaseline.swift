// The record-library baseline of the fetch benchmarks: GRDB 7 records read
// from the same file, the same rows and columns, in the same run. GRDB is a
// dependency of the benchmarks alone, behind the `Benchmarks` trait:
// `swift run -c release --enable-all-traits sift-benchmarks store`.

#if Benchmarks
import GRDB
import Foundation

/// An employee as a GRDB record: the columns `EmployeeRecord.columns` selects,
/// decoded by position in `init(row:)`, GRDB's fastest way to read a record.
struct GRDBEmployee: FetchableRecord {
    var key: Int64, version: Int64, name: String, nickname: String?, age: Int64, salary: Double, rating: Double?
    var isManager: Bool, startDate: Date, department: Int64?, manager: Int64?

    init(row: Row) {
        key = row[0]
        version = row[1]
        name = row[2]
        nickname = row[3]
        age = row[4]
        salary = row[5]
        rating = row[6]
        isManager = row[7]
        startDate = Date(timeIntervalSinceReferenceDate: row[8])
        department = row[9]
        manager = row[10]
    }
}

/// The first `limit` employees of the store at `path`, in key order, as
/// GRDB records read through a new read-only database queue.
func grdbEmployees(path: String, limit: Int) -> [GRDBEmployee] {
    var configuration = Configuration()
    configuration.readonly = true
    let queue = try! DatabaseQueue(path: path, configuration: configuration)
    return try! queue.read { db in
        try GRDBEmployee.fetchAll(db, sql: EmployeeRecord.columns + #" ORDER BY "Z_PK" LIMIT ?"#, arguments: [limit])
    }
}

/// Reads every field of each record, as the application's path reads every attribute.
func readEveryField(_ records: [GRDBEmployee]) {
    for record in records {
        blackHole((record.name, record.nickname, record.age, record.salary, record.rating, record.isManager,
                   record.startDate, record.department))
    }
}
#endif
