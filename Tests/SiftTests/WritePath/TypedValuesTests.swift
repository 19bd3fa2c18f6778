// Values in and out as Swift types: typed reads of objects and values,
// `setValue` taking any value Sift converts and checking it against the
// attribute's type and range when it is set, and predicates written as
// string literals or with arguments of any convertible type.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Typed values")
struct TypedValuesTests {
    static func dataSet() throws -> DataSet {
        let model = try DataModel([Entity("Book", attributes: [
            Attribute("title", .string), Attribute("subtitle", .string, optional: true),
            Attribute("pages", .integer16), Attribute("price", .decimal, optional: true),
            Attribute("published", .date, optional: true), Attribute("code", .uuid, optional: true),
        ])])
        return try DataSet(model: model, objects: ["Book": [
            ["id": 1, "title": "Dune", "pages": 412, "price": 9.5],
            ["id": 2, "title": "Emma", "pages": 320],
        ]])
    }

    @Test("Typed reads, checked writes, on every store", arguments: StoreKind.allCases)
    func readsAndWrites(_ kind: StoreKind) throws {
        let store = try kind.make(try Self.dataSet())
        let context = store.context()
        var request = FetchRequest(entityName: "Book", sortDescriptors: [FetchSortDescriptor("title")])
        request.predicate = "pages > 300"
        let books = try context.fetch(request)
        #expect(books.count == 2)
        let dune = books[0]
        #expect(try dune.value(forKey: "title", as: String.self) == "Dune")
        #expect(try dune.value(forKey: "pages", as: Int.self) == 412)
        #expect(try dune.value(forKey: "price", as: Decimal.self) == Decimal(9.5))
        #expect(try dune.value(forKey: "subtitle", as: String.self) == nil)
        #expect(dune["pages", as: Int16.self] == 412)
        #expect(dune["title", as: Int.self] == nil)
        #expect {
            _ = try dune.value(forKey: "title", as: Int.self)
        } throws: { error in
            guard case StoreError.wrongType(let property, _, let expected, _) = error else { return false }
            return property == "title" && expected == "Int"
        }

        // Any convertible value, checked when set: nothing changes on a refusal.
        let pages = 500
        try dune.setValue(pages, forKey: "pages")
        try dune.setValue(Optional<String>.none, forKey: "subtitle")
        try dune.setValue(Decimal(12), forKey: "price")
        try dune.setValue(Date(timeIntervalSinceReferenceDate: 0), forKey: "published")
        let code = UUID()
        try dune.setValue(code.uuidString, forKey: "code")                 // a UUID's text is a UUID
        #expect(dune["code", as: UUID.self] == code)
        #expect {
            try dune.setValue(100_000, forKey: "pages")
        } throws: { error in
            guard case StoreError.invalidValue(let failure) = error else { return false }
            return failure.property == "pages" && failure.reason.contains("-32768...32767")
        }
        #expect(throws: StoreError.self) { try dune.setValue(7, forKey: "title") }
        #expect(throws: StoreError.self) { try dune.setValue("soon", forKey: "published") }
        #expect(dune["pages", as: Int.self] == 500)
        #expect(dune["title", as: String.self] == "Dune")
        try context.save()

        let fresh = store.context()
        let saved = try fresh.fetch(FetchRequest(entityName: "Book", predicate: "pages == %@", arguments: [500]))
        #expect(saved.count == 1 && saved.first?["price", as: Double.self] == 12)
        #expect(saved.first?["published", as: Date.self] == Date(timeIntervalSinceReferenceDate: 0))
        let minimum = 400
        let title = "Dune"
        #expect(try fresh.count(for: FetchRequest(entityName: "Book")) == 2)
        var byArguments = FetchRequest(entityName: "Book")
        byArguments.predicate = FetchPredicate("pages > %@ AND title == %@", minimum, title)
        #expect(try fresh.fetch(byArguments).count == 1)
    }

    /// Issue 54: `object["pages", as: Int.self]` answered nil once the context of the fetch was released (a
    /// temporary `ObjectContext(store:)` in one expression), where `value(forKey:as:)` threw. The objects a
    /// fetch returned read every value they were fetched with; what needs the context says so.
    @Test("Objects of a released context read the values they were fetched with", arguments: StoreKind.allCases)
    func readsAfterTheContextIsGone(_ kind: StoreKind) throws {
        let store = try kind.make(try Self.dataSet())
        let books = try store.context().fetch(FetchRequest(entityName: "Book", sortDescriptors: [FetchSortDescriptor("title")]))
        #expect(books.count == 2)
        #expect(books.map { $0["title", as: String.self] } == ["Dune", "Emma"])
        #expect(books.map { $0["pages", as: Int.self] } == [412, 320])
        #expect(try books[0].value(forKey: "price", as: Double.self) == 9.5)
        #expect(books[1]["price"] == .null)
        #expect(try books[1].value(forKey: "price", as: Double.self) == nil)
        // A change needs the context: a typed error, not a silent nothing.
        #expect(throws: StoreError.self) { try books[0].setValue(1, forKey: "pages") }
    }

    @Test("A value reads as the Swift types that hold it")
    func valueAccessors() {
        let pages: PredicateValue = 320
        #expect(pages.intValue == 320 && pages.int64Value == 320 && pages.doubleValue == 320)
        #expect(pages.stringValue == nil && pages.as(String.self) == nil && pages.as(Int.self) == 320)
        #expect(PredicateValue.double(2.0).intValue == 2 && PredicateValue.double(2.5).intValue == nil)
        #expect(PredicateValue.int(Int64.max).as(Int32.self) == nil)
        #expect(PredicateValue.string("a").as(String?.self) == .some("a"))
        #expect(PredicateValue.null.as(String?.self) == .some(nil))
        #expect(PredicateValue.null.as(String.self) == nil && PredicateValue.null.isNil)
        #expect(PredicateValue.bool(true).boolValue == true)
        #expect(PredicateValue.double(.infinity).decimalValue == nil)
        #expect(Decimal(2.5).predicateValue == .double(2.5))
    }

    struct Book: Codable, Equatable {
        var title: String
        var pages: Int
        var price: Decimal?
        var subtitle: String?
    }

    enum Genre: String, Codable { case fiction, poetry }

    struct Titled: Decodable { var title: String; var kind: Genre? }

    @Test("Records: fetched into Decodable types, inserted and updated from Encodable ones", arguments: StoreKind.allCases)
    func records(_ kind: StoreKind) throws {
        let store = try kind.make(try Self.dataSet())
        let context = store.context()
        let books = try context.fetch(Book.self, FetchRequest(entityName: "Book", sortDescriptors: [FetchSortDescriptor("title")]))
        #expect(books == [Book(title: "Dune", pages: 412, price: Decimal(9.5), subtitle: nil),
                          Book(title: "Emma", pages: 320, price: nil, subtitle: nil)])
        let inserted = try context.insert(Book(title: "Kim", pages: 368, price: 7, subtitle: "A Novel"), into: "Book")
        #expect(inserted["subtitle", as: String.self] == "A Novel")
        try context.save()
        let other = store.context()
        let kim = try #require(try other.fetch(FetchRequest(entityName: "Book", predicate: "title == 'Kim'")).first)
        try kim.update(from: Book(title: "Kim", pages: 400, price: nil, subtitle: nil))
        #expect(kim["pages", as: Int.self] == 400 && kim["subtitle", as: String.self] == "A Novel")   // nil keys left out
        // A record that does not fit: nothing inserted or changed, and the message names the key.
        struct Wrong: Codable { var title: String; var pages: String }
        #expect {
            try context.insert(Wrong(title: "X", pages: "many"), into: "Book")
        } throws: { error in
            guard case StoreError.invalidValue(let failure) = error else { return false }
            return failure.property == "pages"
        }
        // A record's values get the same check setValue makes (not-a-number included).
        struct Priced: Codable { var title: String; var pages: Int; var price: Double }
        #expect {
            try context.insert(Priced(title: "X", pages: 1, price: .nan), into: "Book")
        } throws: { error in
            guard case StoreError.invalidValue(let failure) = error else { return false }
            return failure.property == "price" && failure.reason.contains("NaN")
        }
        struct Extra: Codable { var title: String; var author: String }
        #expect(throws: StoreError.self) { try context.insert(Extra(title: "X", author: "Y"), into: "Book") }
        #expect(context.insertedObjects.isEmpty)
        #expect {
            _ = try context.fetch(Wrong.self, FetchRequest(entityName: "Book"))
        } throws: { error in
            guard case StoreError.recordMismatch(_, let reason) = error else { return false }
            return reason.contains("pages")
        }
        #expect {
            _ = try context.fetch(Extra.self, FetchRequest(entityName: "Book"))
        } throws: { error in
            guard case StoreError.recordMismatch(_, let reason) = error else { return false }
            return reason.contains("'author'")
        }
    }

    struct Person: Decodable {
        struct Department: Decodable { var name: String }
        struct Report: Decodable { var name: String; var age: Int }
        var name: String
        var department: Department?
        var reports: [Report]
    }

    @Test("Records follow relationships: a to-one as a nested record, a to-many as an array", arguments: StoreKind.allCases)
    func nestedRecords(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let people = try context.fetch(Person.self, FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")]))
        let objects = try context.fetch(FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")]))
        #expect(people.count == objects.count && !people.isEmpty)
        for (person, object) in zip(people, objects) {
            #expect(person.name == object["name", as: String.self])
            #expect(person.department?.name == (try object.object(forKey: "department"))?["name", as: String.self])
            #expect(person.reports.count == (try object.objects(forKey: "reports")).count)
        }
        #expect(people.contains { !$0.reports.isEmpty })
    }
}


@Suite("A model of one's own")
struct ModelOfOnesOwnTests {
    @Test("Dates are read from ISO 8601 text, in data sets and when set")
    func iso8601Dates() throws {
        #expect(AttributeType.iso8601("2024-05-01T09:30:00Z") == Date(timeIntervalSince1970: 1_714_555_800))
        #expect(AttributeType.iso8601("2024-05-01T09:30:00.250Z") == Date(timeIntervalSince1970: 1_714_555_800.25))
        #expect(AttributeType.iso8601("2024-05-01T11:30:00+02:00") == Date(timeIntervalSince1970: 1_714_555_800))
        #expect(AttributeType.iso8601("2024-05-01") == Date(timeIntervalSince1970: 1_714_521_600))
        #expect(AttributeType.iso8601("May 1") == nil && AttributeType.iso8601("") == nil)
        #expect(AttributeType.date.convert(.string("2024-05-01")) == .date(Date(timeIntervalSince1970: 1_714_521_600)))
        #expect(AttributeType.date.mismatch(.string("soon")).contains("ISO 8601"))
    }

    @Test("An unknown attribute type lists the valid ones")
    func unknownType() {
        let json = #"{"entities": [{"name": "Book", "attributes": [{"name": "pages", "type": "int"}]}]}"#
        #expect {
            _ = try DataModel(json: Data(json.utf8))
        } throws: { error in
            "\(error)".contains("'int'") && "\(error)".contains("integer64") && "\(error)".contains("boolean")
        }
    }

    /// The article's JSON example loads as it is written, and the model its snippet builds in code
    /// (`Snippets/ModelOfYourOwn.swift`, repeated here) is the same model.
    @Test("The model article's examples are what they say")
    func articleExamples() throws {
        let article = try Fixtures.repositoryFile("Sources/SiftStore/SiftStore.docc/DefiningAModel.md")
        let json = try #require(article.components(separatedBy: "```json\n").dropFirst().first?.components(separatedBy: "```").first)
        let dataSet = try DataSet(json: Data(json.utf8))
        let inCode = try DataModel([
            Entity("Author", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("books", to: "Book", toMany: true, inverse: "author", deleteRule: .cascade)]),
            Entity("Book", attributes: [
                Attribute("title", .string, indexed: true),
                Attribute("pages", .integer16),
                Attribute("price", .decimal, optional: true),
                Attribute("published", .date, optional: true),
            ], relationships: [Relationship("author", to: "Author", optional: true, inverse: "books")]),
        ])
        #expect(dataSet.model.entityVersionHashes == inCode.entityVersionHashes)
        let store = try SQLiteStore(inMemoryWith: dataSet.model)
        try store.importDataSet(dataSet)
        let context = ObjectContext(store: store)
        struct Book: Codable { var title: String; var pages: Int; var published: Date? }
        let books = try context.fetch(Book.self, FetchRequest(entityName: "Book", predicate: "author.name BEGINSWITH 'Frank'"))
        #expect(books.count == 1 && books.first?.published == AttributeType.iso8601("1965-08-01"))
        try context.insert(Book(title: "Emma", pages: 320, published: nil), into: "Book")
        try context.save()
        #expect(try context.fetch(Book.self, FetchRequest(entityName: "Book", predicate: "pages > 300")).count == 2)
        let book = try context.insert("Book")
        try book.setValue("Kim", forKey: "title")
        try book.setValue(368, forKey: "pages")
        #expect(try book.value(forKey: "pages", as: Int.self) == 368)
        #expect {
            try book.setValue(100_000, forKey: "pages")
        } throws: { error in
            (error as? StoreError)?.code == .invalidValue
        }
    }
}

@Suite("One predicate type")
struct OnePredicateTests {
    @Test("A FormatPredicate filters plain values and fetched objects alike, and a fetch takes it", arguments: StoreKind.allCases)
    func oneType(_ kind: StoreKind) throws {
        let store = try kind.make()
        let context = store.context()
        let older = try FormatPredicate(format: "age > %@", 40)
        let sales = try FormatPredicate(format: "department.name == $department")
            .withSubstitutionVariables(["department": "Sales"])
        let both = try FormatPredicate.and([older, sales])
        let either = try FormatPredicate.or([older, sales])
        let neither = try FormatPredicate.not(either)
        let all = try context.fetch(FetchRequest(entityName: "Employee", sortDescriptors: [FetchSortDescriptor("name")]))
        for predicate in [older, sales, both, either, neither] {
            // The store's answer (SQL or memory) is the predicate's own over the fetched objects.
            let fetched = try context.fetch(FetchRequest(entityName: "Employee", predicate: predicate,
                                                         sortDescriptors: [FetchSortDescriptor("name")]))
            let filtered = try predicate.filter(all)
            #expect(fetched.map(\.objectID) == filtered.map(\.objectID), "\(predicate.predicateFormat)")
            // Its canonical text reads back as the same predicate.
            let again = try FormatPredicate(format: predicate.predicateFormat)
            #expect(try again.filter(all).map(\.objectID) == filtered.map(\.objectID))
        }
        #expect(try !sales.filter(all).isEmpty && !older.filter(all).isEmpty)
        #expect(try both.filter(all).count <= min(older.filter(all).count, sales.filter(all).count))
        #expect(try either.filter(all).count >= max(older.filter(all).count, sales.filter(all).count))
        #expect(try neither.filter(all).count + either.filter(all).count == all.count)
        // Plain values, through the same predicate.
        let people: [[String: Any]] = [["age": 41, "department": ["name": "Sales"]], ["age": 30, "department": ["name": "Sales"]]]
        #expect(try both.filter(people).count == 1 && either.filter(people).count == 2)
        #expect(both.predicateFormat.contains("AND") && neither.predicateFormat.hasPrefix("NOT"))
        #expect(try FormatPredicate.and([]).evaluate(with: 1) && !FormatPredicate.or([]).evaluate(with: 1))
        // Against the model, the same predicate bound (a row cache's answer) and compiled for records.
        for predicate in [older, sales, both, either, neither] {
            let bound = try predicate.bound(to: Company.dataSet.model, entity: "Employee")
            let nodes = try Company.dataSet.makeRowCache().nodes(of: "Employee", matching: bound)
            #expect(Set(nodes.map { (node: RowNode) in node.id.primaryKey }) == Set(try predicate.filter(all).map(\.objectID.primaryKey)), "\(predicate.predicateFormat)")
        }
    }

    @Test("Bound to a model, a FormatPredicate checks keys and types, and compiles for records")
    func againstAModel() throws {
        let model = try DataModel([Entity("Person", attributes: [Attribute("name", .string), Attribute("age", .integer64)])])
        let adults = try FormatPredicate(format: "age >= %@ AND name BEGINSWITH $initial", 18)
            .withSubstitutionVariables(["initial": "A"])
        let compiled = try adults.compiled(for: model, entity: "Person", domain: KeyValueDomain())
        let people: [[String: PredicateValue]] = [["name": "Ann", "age": 31], ["name": "Bo", "age": 40], ["name": "Al", "age": 9]]
        #expect(try people.filter(compiled.evaluate).map { $0["name"] } == [.string("Ann")])
        #expect(try people.filter { try adults.evaluate(with: $0) }.map { $0["name"] } == [.string("Ann")])
        #expect {
            _ = try FormatPredicate(format: "agee > 3").bound(to: model, entity: "Person")
        } throws: { error in
            guard let error = error as? PredicateCompileError else { return false }
            return error.rendered(in: "agee > 3").contains("did you mean 'age'")
        }
        #expect(throws: PredicateCompileError.self) { try FormatPredicate(format: "name > 3").bound(to: model, entity: "Person") }
    }
}

/// A class of one's own that views books, as an NSManagedObject subclass would.
final class BookView: ManagedObjectView {
    static let entityName = "Book"
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("title") var title: String?
    @Managed("pages") var pages: Int?
    @Managed("published") var published: Date?
}

/// A view whose entity is its class's name.
final class Book: ManagedObjectView {
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }
    @Managed("title") var title: String?
}

@Suite("Typed live objects")
struct TypedLiveObjectTests {
    static func context() throws -> ObjectContext {
        let model = try DataModel([Entity("Book", attributes: [
            Attribute("title", .string), Attribute("pages", .integer16), Attribute("published", .date, optional: true),
        ])])
        return ObjectContext(store: try SQLiteStore(inMemoryWith: model))
    }

    @Test("Typed keys read and set an attribute as its Swift type, checked when set")
    func attributeKeys() throws {
        let context = try Self.context()
        let title = AttributeKey<String>("title")
        let pages = AttributeKey<Int>("pages")
        let book = try context.insert("Book")
        try book.setValue("Dune", for: title)
        try book.setValue(412, for: pages)
        #expect(try book.value(for: title) == "Dune")
        #expect(book[pages] == 412)
        #expect(book[AttributeKey<Int>("title")] == nil)                    // another type: nil, no trap
        #expect(throws: StoreError.self) { try book.value(for: AttributeKey<Int>("title")) }
        #expect { try book.setValue(100_000, for: pages) } throws: { ($0 as? StoreError)?.code == .invalidValue }
        #expect(book[pages] == 412)                                          // the refused value was not set
        try book.setValue(nil, for: AttributeKey<Date>("published"))
        #expect(book[AttributeKey<Date>("published")] == nil)
    }

    @Test("A class of one's own views objects with @Managed properties, fetched and inserted by type")
    func managedProperties() throws {
        let context = try Self.context()
        let dune = try context.insert(BookView.self)
        dune.title = "Dune"
        dune.pages = 412
        dune.published = AttributeType.iso8601("1965-08-01")
        let emma = try context.insert(Book.self)                             // the entity named as the class
        emma.title = "Emma"
        try emma.object.setValue(320, for: AttributeKey<Int>("pages"))
        try context.save()

        let fresh = ObjectContext(store: context.persistentStore)
        let long = try fresh.fetch(BookView.self, FetchRequest(entityName: "Book", predicate: "pages > 400"))
        #expect(long.map(\.title) == ["Dune"])
        #expect(long.first?.pages == 412 && long.first?.published == AttributeType.iso8601("1965-08-01"))
        #expect(long.first?.$pages.name == "pages")

        // A value the attribute refuses is not set, and the next save throws the refusal, writing nothing.
        let view = try #require(long.first)
        view.pages = 100_000
        view.title = "Dune Messiah"
        #expect(view.pages == 412)
        #expect { try fresh.save() } throws: { ($0 as? StoreError)?.code == .invalidValue }
        try fresh.save()                                                      // the refusal was reported once
        let reader = ObjectContext(store: context.persistentStore)       // a context outlives the objects read through it
        let reread = try reader.fetch(BookView.self, FetchRequest(entityName: "Book", predicate: "pages > 400"))
        #expect(reread.first?.title == "Dune Messiah")
        #expect(throws: StoreError.self) { try context.insert(NotAnEntity.self) }
    }
}

/// A view of an entity the model does not have.
final class NotAnEntity: ManagedObjectView {
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }
}
