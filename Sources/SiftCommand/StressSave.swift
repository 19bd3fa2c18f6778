// `sift stress-save`: one large save, for the crash test (hidden).

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct StressSave: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "stress-save",
        abstract: "Insert many employees into a company store in one save (for crash tests).",
        shouldDisplay: false
    )

    @Option(help: "The store file.")
    var store: String

    @Option(help: "How many employees to insert.")
    var count = 100_000

    @Flag(help: "The store is an atomic store (a JSON data set file), not SQLite.")
    var atomic = false

    func run() throws {
        let context = atomic
            ? ObjectContext(store: try AtomicStore(url: URL(fileURLWithPath: store)))
            : ObjectContext(store: try openStore(store))
        let department = context.object(for: ObjectID(entity: 0, primaryKey: 1))
        for i in 0..<count {
            let e = try context.insert("Employee")
            try e.setValue(.string("Stress \(i)"), forKey: "name")
            try e.setValue(.int(Int64(20 + i % 40)), forKey: "age")
            try e.setValue(.double(40_000), forKey: "salary")
            try e.setValue(.bool(false), forKey: "isManager")
            try e.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
            try e.setObject(department, forKey: "department")
        }
        FileHandle.standardOutput.write(Data("saving\n".utf8))
        try context.save()
        FileHandle.standardOutput.write(Data("saved\n".utf8))
    }
}
