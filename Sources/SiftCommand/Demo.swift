// `sift demo`: a generated company store and a tour of what Sift does with it.

import ArgumentParser
import Foundation
import Sift
import SiftDemo
import SiftStore

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create (once) a demo store and run showcase predicates: SQL, plan, rows, time.",
        discussion: """
            The store is generated deterministically in $XDG_CACHE_HOME/sift (or ~/.cache/sift) on \
            first use, so later runs start at once.
            """
    )

    @Option(help: "How many employees the demo company has.")
    var employees = 200_000

    @Option(help: ArgumentHelp("Where to keep the demo store (a folder).", valueName: "folder"))
    var cache: String?

    static let showcase: [(entity: String, predicate: String, note: String)] = [
        ("Employee", "age BETWEEN {30, 40} AND salary > 190000", "a range on an indexed column"),
        ("Employee", "name BEGINSWITH 'Zo'", "BEGINSWITH becomes an index range"),
        ("Employee", "name BEGINSWITH[cd] 'zoe'", "folded: Zoë and Zoe, any case"),
        ("Employee", "department.name == 'Sales' AND rating > 4.5", "a to-one path is a LEFT JOIN"),
        ("Employee", "ANY tags.name == 'café' AND age < 25", "ANY over a many-to-many is EXISTS"),
        ("Employee", "reports.@count > 9 AND isManager == YES", "@count is a correlated COUNT"),
        ("Employee", "isManager == YES AND SUBQUERY(reports, $r, $r.rating == nil).@count == 0", "SUBQUERY"),
        ("Employee", "NOT (rating > 1) AND age == 20", "two-valued logic: nil ratings count"),
        ("Employee", "name MATCHES '.*[ée] 1[0-9]{3}'", "MATCHES runs a cached regular expression"),
        ("Department", "employees.@avg.salary > 114000", "aggregates over a to-many"),
    ]

    func run() throws {
        let folder = cache.map { URL(fileURLWithPath: $0) } ?? Self.defaultFolder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("demo-\(employees)-\(CompanyGenerator.model.versionHash).sqlite")
        let store: SQLiteStore
        do {
            if !FileManager.default.fileExists(atPath: url.path) {
                print("Creating the demo store (\(employees) employees) at \(url.path)…")
                let start = Date()
                let partial = url.appendingPathExtension("partial")
                try? FileManager.default.removeItem(at: partial)
                let progress = Progress("importing")
                do {
                    let target = try SQLiteStore(url: partial, model: CompanyGenerator.model)
                    try target.importNodes(CompanyGenerator.nodes(employees: employees)) { progress.report($0, of: $1) }
                    try target.withConnection { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE") }
                }
                progress.finish()
                for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial.path + suffix) }
                try FileManager.default.moveItem(at: partial, to: url)
                print(String(format: "Created in %.1f s.\n", Date().timeIntervalSince(start)))
            }
            store = try SQLiteStore(url: url, model: CompanyGenerator.model)
        } catch {
            printError("error: \(error)")
            throw ExitStatus.noInput
        }
        print("Sift \(SQLiteConnection.libraryVersion.isEmpty ? "" : "on SQLite \(SQLiteConnection.libraryVersion)") — demo store \(url.lastPathComponent)\n")
        for (entity, predicate, note) in Self.showcase {
            let request = FetchRequest(entityName: entity, predicate: predicate)
            do {
                let query = try store.sqlQuery(for: request, columns: .identifiers)
                let plan = try store.queryPlan(query)
                let context = ObjectContext(store: store)
                let start = Date()
                let count = try context.fetchObjectIDs(request).count
                let elapsed = Date().timeIntervalSince(start) * 1000
                print("▸ \(entity): \(predicate)")
                print("  (\(note))")
                print("  sql:  \(query.sql)")
                if !query.bindings.isEmpty {
                    print("  bind: " + query.bindings.enumerated().map { "?\($0 + 1)=\($1)" }.joined(separator: " "))
                }
                for line in plan { print("  plan: \(line)") }
                print(String(format: "  → %d rows in %.1f ms\n", count, elapsed))
            } catch {
                printError("\(predicate): \(error)")
                throw ExitStatus.dataError
            }
        }
        print("Next: sift query --store \(url.path) --entity Employee \"age > 60\" --sort name --limit 10")
    }

    static var defaultFolder: URL {
        if let xdg = ProcessInfo.processInfo.environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("sift")
        }
        return FileManager.default.homeDirectoryForCurrentUser.appendingPathComponent(".cache/sift")
    }
}
