// A model of one's own, built in code, and its objects read and written as
// one's own Codable types, with values checked when they are set.
import Foundation
import Sift
import SiftStore

// snippet.model
let model = try DataModel([
    Entity("Author", attributes: [Attribute("name", .string)],
           relationships: [Relationship("books", to: "Book", toMany: true, inverse: "author", deleteRule: .cascade)]),
    Entity("Book", attributes: [
        Attribute("title", .string, indexed: true),
        Attribute("pages", .integer16),
        Attribute("price", .decimal, optional: true),
        Attribute("published", .date, optional: true),
    ], relationships: [Relationship("author", to: "Author", optional: true, inverse: "books")]),
])
let store = try SQLiteStore(inMemoryWith: model)      // or SQLiteStore(url:model:) for a file
let context = ObjectContext(store: store)
// snippet.end

// snippet.records
struct Book: Codable { var title: String; var pages: Int; var published: Date? }

try context.insert(Book(title: "Dune", pages: 412, published: nil), into: "Book")
try context.insert(Book(title: "Emma", pages: 320, published: nil), into: "Book")
try context.save()
let long = try context.fetch(Book.self, FetchRequest(entityName: "Book", predicate: "pages > %@", arguments: [400]))
print(long.map(\.title))                                           // ["Dune"]
// snippet.end

// snippet.values
let book = try context.insert("Book")
try book.setValue("Kim", forKey: "title")
try book.setValue(368, forKey: "pages")
print(try book.value(forKey: "pages", as: Int.self) ?? 0)          // 368
do {
    try book.setValue(100_000, forKey: "pages")                    // outside integer16: refused now, not at save
} catch {
    print(error.code)                                              // invalidValue
}
let count = try await context.perform { try $0.count(for: FetchRequest(entityName: "Book")) }   // on the context's queue
print(count)                                                       // 3
// snippet.end

// snippet.views
final class BookObject: ManagedObjectView {             // live objects with typed properties
    static let entityName = "Book"                      // by default, the class's name
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("title") var title: String?
    @Managed("pages") var pages: Int?
}

let books = try context.fetch(BookObject.self, FetchRequest(entityName: "Book", sortDescriptors: [FetchSortDescriptor("pages")]))
books[0].pages = 330                                    // a value the attribute refuses is thrown by the next save
print(books.map { "\($0.title ?? "?") \($0.pages ?? 0)" })   // ["Emma 330", "Kim 368", "Dune 412"]
try books[1].object.setValue(370, for: books[1].$pages) // or set through the property's key, throwing at once
try context.save()
// snippet.end
