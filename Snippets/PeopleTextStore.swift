// An atomic store in a file format of one's own: the text file of Apple's
// guide to atomic stores, one person per line,
//
//     Person::first:Robert:last:Tibbot:id:86349382003
//
// The format reads and writes the lines; Sift does the rest (fetching,
// predicates, uniquing, saves, an atomic write).
//
//     swift run PeopleTextStore FILE [--add FIRST LAST ID] [--delete ID] [--rename ID FIRST] PREDICATE
//
// prints every person the predicate selects, `first last id`, ordered by id,
// after the change (if any) is saved. A missing or empty file is a new store;
// a malformed line is an error naming its line, and the file is left as it is.
import Foundation
import Sift
import SiftStore

// snippet.format
/// The guide's text format: references are the people's ids, as text.
struct PeopleText: AtomicStoreFormat {
    /// A line that is not `Person::first:<first>:last:<last>:id:<id>`.
    struct MalformedLine: Error, CustomStringConvertible {
        var number: Int
        var line: String
        var description: String { "line \(number) is not 'Person::first:<first>:last:<last>:id:<id>': \(line)" }
    }

    /// A name with a ':' or a line break, which the format cannot write.
    struct UnwritableName: Error, CustomStringConvertible {
        var name: String
        var description: String { "the name '\(name)' has a ':' or a line break, which a line cannot hold" }
    }

    func read(_ data: Data, model: DataModel) throws -> [AtomicNode<String>] {
        var people: [AtomicNode<String>] = []
        for (index, line) in String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
        where !line.isEmpty {
            let fields = line.split(separator: ":", omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 8, fields[0] == "Person", fields[1].isEmpty, fields[2] == "first", fields[4] == "last",
                  fields[6] == "id", let id = Int64(fields[7]) else {
                throw MalformedLine(number: index + 1, line: String(line))
            }
            people.append(AtomicNode(entityName: "Person", reference: fields[7],
                                     values: ["first": .string(fields[3]), "last": .string(fields[5]), "id": .int(id)]))
        }
        return people
    }

    func write(_ nodes: [AtomicNode<String>], model: DataModel) throws -> Data {
        var text = ""
        for person in nodes {
            let first = person.values["first"]?.stringValue ?? ""
            let last = person.values["last"]?.stringValue ?? ""
            for name in [first, last] where name.contains(":") || name.contains("\n") { throw UnwritableName(name: name) }
            text += "Person::first:\(first):last:\(last):id:\(person.reference)\n"
        }
        return Data(text.utf8)
    }

    func newReference(entityName: String, values: [String: PredicateValue], primaryKey: Int64) throws -> String {
        values["id"]?.int64Value.map(String.init) ?? String(primaryKey)
    }
}
// snippet.end

var arguments = Array(CommandLine.arguments.dropFirst())
guard arguments.count >= 2, let path = arguments.first, let predicate = arguments.last else {
    print("usage: PeopleTextStore FILE [--add FIRST LAST ID] [--delete ID] [--rename ID FIRST] PREDICATE")
    exit(0)
}
arguments = Array(arguments.dropFirst().dropLast())

do {
    // snippet.main
    let people = try DataModel([Entity("Person", attributes: [
        Attribute("first", .string), Attribute("last", .string), Attribute("id", .integer64),
    ])])
    let store = try AtomicStore(url: URL(fileURLWithPath: path), format: PeopleText(), model: people)
    let context = ObjectContext(store: store)
    func person(_ id: String) throws -> ManagedObject? {
        try context.fetch(FetchRequest(entityName: "Person", predicate: "id == %@", arguments: [.int(Int64(id) ?? -1)])).first
    }
    switch arguments.first {
    case "--add" where arguments.count == 4:
        let person = try context.insert("Person")
        try person.setValue(arguments[1], forKey: "first")
        try person.setValue(arguments[2], forKey: "last")
        try person.setValue(Int64(arguments[3]) ?? 0, forKey: "id")
    case "--delete" where arguments.count == 2:
        if let gone = try person(arguments[1]) { try context.delete(gone) }
    case "--rename" where arguments.count == 3:
        try person(arguments[1])?.setValue(arguments[2], forKey: "first")
    case nil:
        break
    default:
        print("usage: PeopleTextStore FILE [--add FIRST LAST ID] [--delete ID] [--rename ID FIRST] PREDICATE")
        exit(64)
    }
    try context.save()                                   // the whole file, written atomically
    let selected = try context.fetch(FetchRequest(entityName: "Person", predicate: predicate,
                                                  sortDescriptors: [FetchSortDescriptor("id")]))
    for person in selected {
        print(person["first", as: String.self] ?? "", person["last", as: String.self] ?? "", person["id", as: Int64.self] ?? 0)
    }
    // snippet.end
} catch {
    FileHandle.standardError.write(Data("error: \(error)\n".utf8))
    exit(65)
}
