// An incremental store on a backend of one's own: here a stand-in for a
// web service that keeps books by UUID and can filter only by title. Sift
// sends it the `title ==` terms of a fetch and evaluates the rest in memory;
// it keeps the row cache, faults, uniquing and conflicts; the backend
// answers fetches, rows by reference and saves, with a version per row.
import Foundation
import Sift
import SiftStore
import Synchronization

// snippet.backend
/// The service: books by reference, each with a version that changes whenever the book does.
final class BooksService: IncrementalStoreBackend {
    typealias Reference = String

    private let books = Mutex<[String: (version: Int64, values: [String: PredicateValue])]>([:])
    let requests = Mutex(0)

    /// The service filters by title only (as a `?title=` query would): Sift does the rest.
    var capabilities: BackendCapabilities { .comparisons(of: ["title"], operators: [.equalTo]) }

    /// The titles a fetch asks for: each accepted term is `title == "…"`, so a small visitor reads them.
    private func titles(in predicate: BoundPredicate?) -> [String] {
        switch predicate {
        case .comparison(let comparison)?:
            if case .constant(.string(let title)) = comparison.right.kind { return [title] }
            return []
        case .and(let terms)?: return terms.flatMap { titles(in: $0) }
        default: return []
        }
    }

    private func row(_ reference: String, _ book: (version: Int64, values: [String: PredicateValue])) -> BackendRow<String> {
        BackendRow(entityName: "Book", reference: reference, version: book.version, values: book.values)
    }

    /// The service's identity, in its objects' URIs (it keeps no model version to check).
    func loadMetadata() throws -> BackendMetadata {
        BackendMetadata(identifier: "books.example.com", modelVersionHash: nil)
    }

    func fetch(_ fetch: BackendFetch) throws -> [BackendRow<String>] {
        requests.withLock { $0 += 1 }
        let wanted = Set(titles(in: fetch.predicate))
        return books.withLock { books in
            books.filter { wanted.isEmpty || wanted.contains($0.value.values["title"]?.stringValue ?? "") }.map(row)
        }
    }

    func rows(_ references: [String], entityName: String) throws -> [BackendRow<String>] {
        requests.withLock { $0 += 1 }
        return books.withLock { books in references.compactMap { reference in books[reference].map { row(reference, $0) } } }
    }

    func destinations(of relationship: String, entityName: String, owners: [String]) throws -> [String: [String]] { [:] }

    func save(_ changes: BackendChanges<String>) throws -> BackendSaveOutcome<String> {
        requests.withLock { $0 += 1 }
        return books.withLock { books in
            // Optimistic locking: every update and delete must find the version it read.
            let moved = changes.updates.map { ($0.reference, $0.expectedVersion) } + changes.deletes.compactMap { delete in
                delete.expectedVersion.map { (delete.reference, $0) }
            }
            let conflicts = moved.filter { books[$0.0]?.version != $0.1 }
            guard conflicts.isEmpty else {
                return .conflicts(conflicts.map { reference, _ in (reference, "Book", books[reference].map { row(reference, $0) }) })
            }
            var versions: [String: Int64] = [:]
            var references: [Int64: String] = [:]
            for insert in changes.inserts {
                let reference = UUID().uuidString
                books[reference] = (1, insert.values)
                versions[reference] = 1
                references[insert.temporaryID] = reference
            }
            for update in changes.updates {
                books[update.reference] = (update.expectedVersion + 1, update.values)
                versions[update.reference] = update.expectedVersion + 1
            }
            for delete in changes.deletes { books[delete.reference] = nil }
            return .saved(versions: versions, references: references)
        }
    }
}
// snippet.end

// snippet.main
let model = try DataModel([Entity("Book", attributes: [Attribute("title", .string), Attribute("pages", .integer64)])])
let service = BooksService()
let store = try IncrementalStore(backend: service, model: model)
let context = ObjectContext(store: store)
for (title, pages) in [("Dune", 412), ("Emma", 320), ("Dune", 96)] {
    let book = try context.insert("Book")
    try book.setValue(title, forKey: "title")
    try book.setValue(pages, forKey: "pages")
}
try context.save()                                         // one change set; the service gives each book a UUID

let request = FetchRequest(entityName: "Book", predicate: "title == 'Dune' AND pages > 100")
print(try store.plan(request))                             // the split, as trees; prints:
                                                           // backend: ==
                                                           //   attribute Book.title : string
                                                           // memory: >
                                                           //   attribute Book.pages : integer
let long = try context.fetch(request)                      // the service filters by title, memory by pages
print(long.map { $0["pages", as: Int.self] ?? 0 })         // [412]
print(store.uri(for: long[0].objectID)?.host ?? "")        // books.example.com

// Another context changes the same book first: this one's save conflicts, and a merge policy decides.
let other = ObjectContext(store: store)
let theirs = try other.fetch(request)[0]
try theirs.setValue(413, forKey: "pages")
try other.save()
try long[0].setValue(500, forKey: "pages")
do {
    try context.save()
} catch {
    print(error.code)                                      // conflicts
}
context.mergePolicy = .objectTrump
try context.save()
print(service.requests.withLock { $0 })                    // 7 — every request the service answered
// snippet.end
