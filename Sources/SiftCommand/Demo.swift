// `sift demo`: a generated company store and a tour of what Sift does with it.

import ArgumentParser
import Foundation
import Sift
import SiftDemo
import SiftStore
import Synchronization

struct Demo: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Create (once) a demo store and run showcase predicates: SQL, plan, rows, time.",
        discussion: """
            The store is generated deterministically in $XDG_CACHE_HOME/sift (or $HOME/.cache/sift, or \
            the folder --cache names) on first use, so later runs start at once; every run prints its \
            full path.
            """
    )

    @Option(parsing: .unconditional, help: "How many employees the demo company has.")
    var employees = 200_000

    @Option(help: ArgumentHelp("Where to keep the demo store (a folder).", valueName: "folder"))
    var cache: String?

    @Option(help: ArgumentHelp("Keep the demo store on a PostgreSQL server instead (schema sift_demo_<employees>): "
                               + "postgres://user@host[:port]/database.", valueName: "url"))
    var postgres: String?

    @OptionGroup var output: QuietOption

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

    func validate() throws {
        guard (1...10_000_000).contains(employees) else {
            throw ValidationError("--employees takes a count from 1 to 10000000, not \(employees)")
        }
    }

    func run() throws {
        let store: any SQLPersistentStore
        let location: String
        do {
            if let postgres {
                (store, location) = try openOnServer(postgres)
            } else {
                (store, location) = try openFile()
            }
        } catch let failure as CommandFailure {
            throw failure
        } catch {
            throw CommandFailure(.noInput, "the demo store: " + CommandFailure(error).text.replacingOccurrences(of: "error: ", with: ""))
        }
        defer { store.close() }
        let engine = postgres == nil
            ? "SQLite \(SQLiteConnection.libraryVersion)" : "PostgreSQL"
        print("Sift on \(engine) — demo store \(location)\n")
        for (entity, predicate, note) in Self.showcase {
            let request = FetchRequest(entityName: entity, predicate: predicate)
            do {
                let plan = try store.plan(request)
                let query = plan.query(for: request, columns: .identifiers)
                let databasePlan = try store.queryPlan(query)
                let context = ObjectContext(store: store)
                let start = Date()
                let count = try context.fetchObjectIDs(request).count
                let elapsed = Date().timeIntervalSince(start) * 1000
                print("▸ \(entity): \(predicate)")
                print("  (\(note))")
                print("  sql:  \(query.sql)")
                if !query.bindings.isEmpty {
                    print("  bind: " + query.bindings.enumerated().map { "\(store.schema.dialect.placeholder($0 + 1))=\($1)" }.joined(separator: " "))
                }
                if plan.needsMemory { print("  memory: \(plan.reasons.joined(separator: "; "))") }
                for line in databasePlan { print("  plan: \(line)") }
                print("  → \(counted(count, "row")) in \(String(format: "%.1f", elapsed)) ms\n")
            } catch {
                throw CommandFailure(.software, "the showcase predicate \(predicate): \(error)")
            }
        }
        do {
            try writePathTour()
        } catch {
            throw CommandFailure(.software, "the write path tour: \(error)")
        }
        let sift = Self.invocation()
        if let postgres {
            print("Next: \(sift) query --postgres \(postgres) --schema \(Self.schemaName(employees)) --entity Employee \"age > 60\" --sort name --limit 10")
        } else {
            print("Next: \(sift) query --store \(Self.shellQuoted(location)) --entity Employee \"age > 60\" --sort name --limit 10")
        }
    }

    /// How to run this `sift` again from the current folder: `sift` when it is the one the PATH finds,
    /// `swift run sift` when it is this folder's package's build (after `swift run sift demo`, `sift`
    /// is on no PATH), its full path otherwise.
    static func invocation() -> String {
        guard let executable = Bundle.main.executableURL?.resolvingSymlinksInPath() else { return "sift" }
        let onPath = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").contains { folder in
            URL(fileURLWithPath: String(folder)).appendingPathComponent("sift").resolvingSymlinksInPath() == executable
        }
        if onPath { return "sift" }
        let here = URL(fileURLWithPath: FileManager.default.currentDirectoryPath).resolvingSymlinksInPath().path
        let path = executable.path
        if path.hasPrefix(here + "/.build/"), FileManager.default.fileExists(atPath: here + "/Package.swift") {
            return path.contains("/release/") ? "swift run -c release sift" : "swift run sift"
        }
        return shellQuoted(path)
    }

    /// The demo store's file, made on first use.
    func openFile() throws -> (any SQLPersistentStore, String) {
        let folder = try cache.map { URL(fileURLWithPath: $0) } ?? Self.defaultFolder()
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("demo-\(employees)-\(CompanyGenerator.model.versionHash)-coredata.sqlite")
        if !FileManager.default.fileExists(atPath: url.path) {
            output.remark("Creating the demo store (\(employees) employees) at \(url.path)…")
            let start = Date()
            let partial = url.appendingPathExtension("partial")
            try? FileManager.default.removeItem(at: partial)
            let progress = output.progress("creating the demo store", main: .writingObjects)
            do {
                defer { progress.finish() }
                let target = try SQLiteStore(url: partial, model: CompanyGenerator.model)
                try target.importNodes(CompanyGenerator.nodes(employees: employees), progress: progress.report)
                try target.withConnection { try $0.execute("PRAGMA wal_checkpoint(TRUNCATE); ANALYZE") }
            }
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: partial.path + suffix) }
            try FileManager.default.moveItem(at: partial, to: url)
            output.remark(String(format: "Created in %.1f s.\n", Date().timeIntervalSince(start)))
        }
        return (try SQLiteStore(url: url, model: CompanyGenerator.model), url.standardizedFileURL.path)
    }

    static func schemaName(_ employees: Int) -> String { "sift_demo_\(employees)" }

    /// The demo store on a server, in a schema of its own, filled on first use.
    func openOnServer(_ url: String) throws -> (any SQLPersistentStore, String) {
        let schemaName = Self.schemaName(employees)
        let store = try openServerStore(url: url, model: CompanyGenerator.model, schemaName: schemaName)
        if try ObjectContext(store: store).count(for: FetchRequest(entityName: "Employee")) == 0 {
            output.remark("Creating the demo store (\(employees) employees) in schema \(schemaName)…")
            let start = Date()
            let progress = output.progress("creating the demo store", main: .writingObjects)
            do {
                defer { progress.finish() }
                try store.importNodes(CompanyGenerator.nodes(employees: employees), progress: progress.report)
            }
            output.remark(String(format: "Created in %.1f s.\n", Date().timeIntervalSince(start)))
        }
        return (store, "schema \(schemaName)")
    }

    /// Two contexts on a scratch store (the demo store is left as it is):
    /// unsaved changes in fetches, a conflicting save, a merge policy, an
    /// announcement merged into the other context.
    func writePathTour() throws {
        let store: any SQLPersistentStore
        if let postgres {
            print("■ Write path (on a scratch schema holding 1 000 employees, removed afterwards)")
            let scratch = try openServerStore(url: postgres, model: CompanyGenerator.model,
                                              schemaName: "sift_demo_scratch_\(UUID().uuidString.prefix(8).lowercased())")
            store = scratch
            try scratch.importNodes(CompanyGenerator.nodes(employees: 1000))
        } else {
            print("■ Write path (on a scratch in-memory copy of 1 000 employees)")
            let scratch = try SQLiteStore(inMemoryWith: CompanyGenerator.model)
            try scratch.importNodes(CompanyGenerator.nodes(employees: 1000))
            store = scratch
        }
        defer { destroyServerStore(store) }
        let mine = ObjectContext(store: store)
        let theirs = ObjectContext(store: store)
        let id = ObjectID(entity: 1, primaryKey: 1)
        let employee = mine.object(for: id)
        guard case .string(let name) = try employee.value(forKey: "name") else { return }
        let observer = ObjectContext(store: store)  // reads now, merges later
        let observed = observer.object(for: id)
        let originalAge = try observed.value(forKey: "age")
        let seniors = FetchRequest(entityName: "Employee", predicate: "age > 60")
        let before = try mine.count(for: seniors)
        try employee.setValue(99, forKey: "age")
        print("  \(name): age set to 99 in one context, not saved")
        print("  fetch age > 60 in that context: \(before) → \(try mine.count(for: seniors)) (unsaved changes included)")

        let announced = Announcements()
        let observation = store.addObserver { changes in announced.list.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        try theirs.object(for: id).setValue(123_456.0, forKey: "salary")
        try theirs.save()
        print("  another context changed the salary and saved (row version 1 → 2)")
        do {
            try mine.save()
        } catch {
            guard case .conflicts(let conflicts) = error else { throw error }
            print("  save with .error policy: refused, \(conflicts[0])")
        }
        mine.mergePolicy = .storeTrump
        try mine.save()
        print("  save with .storeTrump: age \(try employee.value(forKey: "age")), "
              + "salary \(try employee.value(forKey: "salary")) (each side's change kept)")
        let saves = announced.list.withLock { $0 }
        for changes in saves { try observer.mergeChanges(from: changes) }
        print("  a third context merged the \(counted(saves.count, "announced save")): age \(originalAge) → "
              + "\(try observed.value(forKey: "age")), salary \(try observed.value(forKey: "salary"))\n")
    }

    /// The folder of the demo store: `$XDG_CACHE_HOME/sift`, else `$HOME/.cache/sift`.
    static func defaultFolder(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> URL {
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            return URL(fileURLWithPath: xdg).appendingPathComponent("sift")
        }
        guard let home = environment["HOME"], !home.isEmpty else {
            throw CommandFailure(.usage, "neither $XDG_CACHE_HOME nor $HOME is set: give the demo store's folder with --cache")
        }
        return URL(fileURLWithPath: home).appendingPathComponent(".cache/sift")
    }

    /// `path` as a shell reads it back: as it is when it holds only safe
    /// characters, else in single quotes.
    static func shellQuoted(_ path: String) -> String {
        let safe = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+,:@%=")
        guard !path.isEmpty, !path.allSatisfy(safe.contains) else { return path.isEmpty ? "''" : path }
        return "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}

/// Store announcements, collected from whichever thread makes them.
private final class Announcements: Sendable {
    let list = LockedState<[StoreChanges]>([])
}
