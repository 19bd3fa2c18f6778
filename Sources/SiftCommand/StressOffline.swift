// `sift stress-offline`: saves made offline through a remote store with a disk
// cache, for the test that kills the client outright before the server comes
// back (hidden). With the server away, it opens the store on the cache of a
// company store and saves, each through a context of its own policy: a new
// department and a new employee in it ("Olive Offline", error), that
// employee's age (error: an insert then an update of one object), the age of
// the employee `--trump` names (objectTrump) and of the one `--refuse` names
// (error). It prints one JSON line (how many saves wait, whether its own
// fetches see them) and waits to be killed.

import ArgumentParser
import Foundation
import Sift
import SiftStore
#if HTTP
import SiftRemote
#endif

struct StressOffline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stress-offline",
        abstract: "Save through a remote store whose server is away, then wait to be killed (for crash tests).",
        shouldDisplay: false
    )

    @Option(help: "The server's address (away).")
    var server: String

    @Option(help: "The disk cache file (of a company store).")
    var cache: String

    @Option(help: "The employee whose age a context with the objectTrump policy changes.")
    var trump: String

    @Option(help: "The employee whose age a context with the error policy changes.")
    var refuse: String

    func run() throws {
        #if HTTP
        guard let url = URL(string: server) else { throw CommandFailure(.usage, "'\(server)' is not a server's address") }
        var configuration = RemoteStoreConfiguration()
        configuration.cacheURL = URL(fileURLWithPath: cache)
        configuration.followsChanges = false
        let store = try RemoteStore(url: url, configuration: configuration)
        let first = ObjectContext(store: store)
        let department = try first.insert("Department")
        try department.setValue(.string("Offline"), forKey: "name")
        try department.setValue(.double(1), forKey: "budget")
        let olive = try first.insert("Employee")
        for (key, value) in [("name", PredicateValue.string("Olive Offline")), ("age", .int(30)), ("salary", .double(1)),
                             ("isManager", .bool(false)), ("startDate", .date(Date(timeIntervalSinceReferenceDate: 0)))] {
            try olive.setValue(value, forKey: key)
        }
        try olive.setObject(department, forKey: "department")
        try first.save()
        try olive.setValue(.int(31), forKey: "age")
        try first.save()
        for (name, policy, age) in [(trump, MergePolicy.objectTrump, Int64(50)), (refuse, .error, 60)] {
            let context = ObjectContext(store: store)
            context.mergePolicy = policy
            guard let employee = try context.fetch(FetchRequest(entityName: "Employee", predicate: "name == %@", arguments: [.string(name)])).first
            else { throw CommandFailure(.noInput, "no employee '\(name)' in the disk cache") }
            try employee.setValue(.int(age), forKey: "age")
            try context.save()
        }
        let seen = try ObjectContext(store: store).count(for: FetchRequest(
            entityName: "Employee", predicate: "name == 'Olive Offline' AND age == 31 AND department.name == 'Offline'"))
        let report: PredicateValue = .dictionary(["waiting": .int(Int64(store.backend.status.waitingSaves)), "seen": .int(Int64(seen))])
        FileHandle.standardOutput.write(Data((JSONText.compact(report) + "\n").utf8))
        while true { Thread.sleep(forTimeInterval: 60) }
        #else
        throw CommandFailure(.usage, "this sift was built without the HTTP trait")
        #endif
    }
}
