// Small promises of the public API that a user leans on: sort descriptors
// read from text refuse what they do not understand, and every error type's
// localizedDescription is its message (Foundation's generic text otherwise,
// on Linux).

import Foundation
import Sift
import SiftPostgres
import SiftRemote
import SiftServer
import SiftStore
import Testing


@Suite("Public API")
struct PublicAPITests {
    /// A record for Foundation's own generic types below.
    struct Book { var title: String; var pages: Int }

    /// Issue 49: `SortDescriptor` was both Foundation's type and Sift's, so a file importing both had to
    /// qualify it. Here Foundation's names are used unqualified beside every Sift module: if a Sift
    /// module declared one of them again, this file would not compile.
    @Test("No public type shares a name with Foundation's")
    func foundationNamesAreFoundations() {
        let byTitle = SortDescriptor(\Book.title)
        let long = #Predicate<Book> { $0.pages > 300 }
        let books = [Book(title: "B", pages: 400), Book(title: "A", pages: 500), Book(title: "C", pages: 10)]
        let sorted = books.filter { (try? long.evaluate($0)) == true }.sorted(using: byTitle)
        #expect(sorted.map(\.title) == ["A", "B"])
        #expect(FetchSortDescriptor("title") == FetchSortDescriptor(parsing: "title:asc"))
    }

    /// Issue 54: the README teaches `error.rendered(in:)`, and a fetch's error had no such member.
    @Test("A store's error about a predicate is rendered as the predicate's errors are")
    func storeErrorsRender() throws {
        let context = ObjectContext(store: CompanyStore.store)
        let typo = "departmnt.name == 'Sales'"
        do {
            _ = try context.fetch(FetchRequest(entityName: "Employee", predicate: typo))
            Issue.record("the fetch succeeded")
        } catch let error as any PredicateTextError {
            #expect(error.rendered(in: typo) == """
                error: 'Employee' has no attribute or relationship named 'departmnt'
                 --> predicate:1:1
                1 | departmnt.name == 'Sales'
                  | ^^^^^^^^^^^^^^
                  = note: did you mean 'department'?
                """, "\(error.rendered(in: typo))")
        }
        let other = StoreError.unknownEntity("Nope")
        #expect(other.rendered(in: "x > 1", sourceName: "query.txt") == "error: the model has no entity named 'Nope'")
    }

    @Test("A sort descriptor is read from its text form", arguments: [
        ("name", "name", true, false),
        ("name:asc", "name", true, false),
        ("age:desc", "age", false, false),
        ("name:ci", "name", true, true),
        ("department.name:desc:ci", "department.name", false, true),
        ("name:ci:desc", "name", false, true),
        ("name:descending", "name", false, false),
        ("name:ascending:ci", "name", true, true),
    ])
    func sortDescriptorText(_ text: String, keyPath: String, ascending: Bool, caseInsensitive: Bool) throws {
        let descriptor = try #require(FetchSortDescriptor(parsing: text))
        #expect(descriptor.keyPath == keyPath)
        #expect(descriptor.ascending == ascending)
        #expect(descriptor.caseInsensitive == caseInsensitive)
    }

    @Test("A sort descriptor's text with an unknown or contradictory option is refused",
          arguments: ["name:down", "name:", "", ":desc", "name:asc:desc", "name:desc:desc", "name:DESC", "name:desc:descending",
                     "name:ascending:descending"])
    func sortDescriptorRefusals(_ text: String) {
        #expect(FetchSortDescriptor(parsing: text) == nil)
    }

    @Test("Every error's localizedDescription is its message")
    func localizedDescriptions() throws {
        let store = try SQLiteStore(inMemoryWith: Company.model)
        let context = ObjectContext(store: store)
        do {
            _ = try context.fetch(FetchRequest(entityName: "Nobody"))
            Issue.record("a fetch of an unknown entity succeeded")
        } catch {
            #expect(error.localizedDescription == error.description)
            #expect(error.localizedDescription.contains("Nobody"))
        }
        do {
            _ = try FormatPredicate(format: "age >")
            Issue.record("an unfinished predicate compiled")
        } catch {
            #expect(error.localizedDescription == error.description)
        }
        do {
            _ = try FormatPredicate(format: "age > 3").evaluate(with: ["age": "forty"])
            Issue.record("a string compared with a number")
        } catch {
            #expect(error.localizedDescription == "\(error)")
            #expect(error.localizedDescription.contains("cannot compare"))
        }
    }
}
