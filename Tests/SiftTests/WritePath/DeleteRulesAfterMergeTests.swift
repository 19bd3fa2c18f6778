// Delete rules and merge policies (issue 29, item 5): a context deletes with
// the delete rules as it read its objects; when other saves moved the rows
// since, the merge policy resolves the conflicts, and whatever it keeps, the
// store works the rules out again over its rows, so that no row is left
// pointing at a deleted row (but through a no-action rule). Every store:
// `TestStore` checks the invariants after each save too.

import Foundation
import Sift
import SiftDemo
import SiftStore
import Testing

@Suite("Delete rules after the merge policy")
struct DeleteRulesAfterMergeTests {
    /// Author —books (cascade)→ Book, Book.author (nullify) the inverse.
    static func library(booksRule: DeleteRule = .cascade, authorRequired: Bool = false) throws -> DataSet {
        let model = try DataModel([
            Entity("Author", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("books", to: "Book", toMany: true, inverse: "author", deleteRule: booksRule)]),
            Entity("Book", attributes: [Attribute("title", .string)],
                   relationships: [Relationship("author", to: "Author", optional: !authorRequired, inverse: "books",
                                                deleteRule: .nullify)]),
        ])
        return try DataSet(model: model, objects: [
            "Author": [["id": 1, "name": "Lem"], ["id": 2, "name": "Le Guin"]],
            "Book": [["id": 1, "title": "Solaris", "author": 1], ["id": 2, "title": "The Cyberiad", "author": 1],
                     ["id": 3, "title": "Fiasco", "author": 1], ["id": 4, "title": "The Dispossessed", "author": 2]],
        ])
    }

    static let lem = ObjectID(entity: 0, primaryKey: 1)
    static let leGuin = ObjectID(entity: 0, primaryKey: 2)
    static let solaris = ObjectID(entity: 1, primaryKey: 1)
    static let dispossessed = ObjectID(entity: 1, primaryKey: 4)

    /// Every book as a fresh context reads it: title and author's key (0 for none).
    func books(_ store: TestStore) throws -> [Int64: String] {
        store.rowCache.removeAll()
        let context = store.context()
        var books: [Int64: String] = [:]
        for book in try context.fetch(FetchRequest(entityName: "Book")) {
            guard case .string(let title) = try book.value(forKey: "title") else { continue }
            books[book.objectID.primaryKey] = "\(title) by \(try book.object(forKey: "author")?.objectID.primaryKey ?? 0)"
        }
        return books
    }

    func count(_ store: TestStore, _ entity: String, _ predicate: String? = nil) throws -> Int {
        try store.context().count(for: FetchRequest(entityName: entity, predicate: predicate))
    }

    /// Two saves of other contexts change `id` after `context` read it.
    func changeTwiceElsewhere(_ store: TestStore, _ id: ObjectID, key: String, values: [String]) throws {
        for value in values {
            let theirs = store.context()
            try theirs.object(for: id).setValue(.string(value), forKey: key)
            try theirs.save()
        }
    }

    @Test("Deleting an author whose stale book conflicts: the policy decides for the book, no key dangles",
          arguments: StoreKind.allCases, FailedSaveTests.policies)
    func cascadeOverAStaleBook(_ kind: StoreKind, _ policy: MergePolicy) throws {
        let store = try kind.make(try Self.library())
        let mine = store.context()
        let lem = mine.object(for: Self.lem)
        let solaris = mine.object(for: Self.solaris)
        #expect(try lem.objects(forKey: "books").count == 3)
        #expect(try solaris.value(forKey: "title") == "Solaris")
        try changeTwiceElsewhere(store, Self.solaris, key: "title", values: ["Solaris (1961)", "Solaris, 2nd ed."])
        try mine.delete(lem)
        #expect(solaris.isDeleted)
        // The default policy: the book conflicts, nothing is written.
        #expect {
            try mine.save()
        } throws: { error in
            guard case StoreError.conflicts(let conflicts) = error else { return false }
            return conflicts.map(\.objectID) == [Self.solaris]
        }
        #expect(try count(store, "Book") == 4)
        mine.mergePolicy = policy
        if policy == .error {
            #expect(throws: StoreError.self) { try mine.save() }
            #expect(try count(store, "Author") == 2 && count(store, "Book") == 4)
            return
        }
        try mine.save()
        #expect(!mine.hasChanges)
        #expect(try count(store, "Author") == 1)
        // Only Le Guin's book has an author, and every author it has is there.
        #expect(try count(store, "Book", "author != nil") == 1)
        #expect(try count(store, "Book", "author != nil AND author.name == nil") == 0)
        switch policy {
        case .storeTrump, .rollback:
            // The store's Solaris stays, as the other saves left it, without the deleted author.
            #expect(try books(store) == [1: "Solaris, 2nd ed. by 0", 4: "The Dispossessed by 2"])
            #expect(!solaris.isDeleted)
            #expect(try solaris.value(forKey: "title") == "Solaris, 2nd ed.")
            #expect(try solaris.object(forKey: "author") == nil)
            #expect(try count(store, "Book", "author == nil") == 1)
        default:
            // The context's delete wins, its cascade with it.
            #expect(try books(store) == [4: "The Dispossessed by 2"])
        }
        #expect(CoreDataInvariants.violations(of: store.store) == [])
    }

    @Test("A book another context gave the author is reached by the cascade when the delete wins",
          arguments: StoreKind.allCases, FailedSaveTests.policies)
    func cascadeReachesABookAddedElsewhere(_ kind: StoreKind, _ policy: MergePolicy) throws {
        let store = try kind.make(try Self.library())
        let mine = store.context()
        mine.mergePolicy = policy
        let lem = mine.object(for: Self.lem)
        #expect(try lem.objects(forKey: "books").count == 3)
        #expect(try mine.object(for: Self.dispossessed).object(forKey: "author")?.objectID == Self.leGuin)
        // Another context moves Le Guin's book to Lem.
        let theirs = store.context()
        try theirs.object(for: Self.dispossessed).setObject(theirs.object(for: Self.lem), forKey: "author")
        try theirs.save()
        try mine.delete(lem)
        do {
            try mine.save()
        } catch StoreError.conflicts {
            #expect(policy == .error)
            return
        }
        switch policy {
        case .objectTrump, .overwrite:
            // The delete wins, and its cascade takes the book it has now.
            #expect(try count(store, "Author") == 1)
            #expect(try books(store) == [:])
            #expect(mine.object(for: Self.dispossessed).isFault)
        default:
            // The store's Lem (who has a new book) stays; the books this context deleted go.
            #expect(try count(store, "Author") == 2)
            #expect(try books(store) == [4: "The Dispossessed by 1"])
        }
        #expect(CoreDataInvariants.violations(of: store.store) == [])
    }

    @Test("A deny rule is checked again over the store's rows when the delete wins", arguments: StoreKind.allCases)
    func denyReachesABookAddedElsewhere(_ kind: StoreKind) throws {
        let store = try kind.make(try Self.library(booksRule: .deny))
        let mine = store.context()
        mine.mergePolicy = .objectTrump
        let leGuin = mine.object(for: Self.leGuin)
        // Le Guin loses her book here: the deny rule lets the delete through.
        try mine.delete(mine.object(for: Self.dispossessed))
        try mine.delete(leGuin)
        // Elsewhere she gets one of Lem's.
        let theirs = store.context()
        try theirs.object(for: Self.solaris).setObject(theirs.object(for: Self.leGuin), forKey: "author")
        try theirs.save()
        #expect {
            try mine.save()
        } throws: { error in
            guard case StoreError.validation(let failures) = error else { return false }
            return failures.map(\.property) == ["books"] && failures[0].object == "<Author 2>"
        }
        #expect(mine.hasChanges)
        #expect(try count(store, "Author") == 2 && count(store, "Book") == 4)
    }

    @Test("A link written to a row another context deleted is cleared, or refused when required",
          arguments: StoreKind.allCases, [false, true])
    func linkToARowDeletedElsewhere(_ kind: StoreKind, _ required: Bool) throws {
        let store = try kind.make(try Self.library(authorRequired: required))
        let mine = store.context()
        mine.mergePolicy = .storeTrump
        // Here Le Guin's book goes to Lem; elsewhere Lem is deleted (his books with him).
        try mine.object(for: Self.dispossessed).setObject(mine.object(for: Self.lem), forKey: "author")
        let theirs = store.context()
        try theirs.delete(theirs.object(for: Self.lem))
        try theirs.save()
        // Lem is gone from the store and stays gone (store trump); the book must not point at him.
        if required {
            #expect {
                try mine.save()
            } throws: { error in
                guard case StoreError.validation(let failures) = error else { return false }
                return failures.map(\.property) == ["author"] && failures[0].object == "<Book 4>"
            }
            #expect(try books(store) == [4: "The Dispossessed by 2"])
        } else {
            try mine.save()
            #expect(try books(store) == [4: "The Dispossessed by 0"])
            #expect(try mine.object(for: Self.dispossessed).object(forKey: "author") == nil)
        }
        #expect(CoreDataInvariants.violations(of: store.store) == [])
    }
}

@Suite("Random saves from stale contexts")
struct StaleContextRandomSaveTests {
    /// Three contexts that never merge edit, link and delete objects of
    /// the random world with random delete rules, each under its own merge
    /// policy, and save: their saves conflict, the policies resolve them
    /// (or a save fails, and the context rolls back). After every save the
    /// store keeps its invariants (`TestStore` checks them): no key points
    /// at a deleted row but through a no-action rule, inverses in step.
    @Test("Stale contexts under every merge policy keep the store's invariants, on random rules",
          arguments: StoreKind.allCases, 0..<12 as Range<UInt64>)
    func staleContexts(_ kind: StoreKind, _ seed: UInt64) throws {
        var generator = RandomWorld.Generator(rng: SplitMix(seed: seed &+ 1_000))
        var objects = generator.data()
        // PostgreSQL's text holds no U+0000.
        objects["Thing"] = objects["Thing"]!.map { object in
            var object = object
            if case .string(let s) = object["s"] { object["s"] = .string(s.replacingOccurrences(of: "\u{0}", with: "0")) }
            return object
        }
        objects["Label"] = objects["Label"]!.map { object in
            var object = object
            if case .string(let s) = object["name"] { object["name"] = .string(s.replacingOccurrences(of: "\u{0}", with: "0")) }
            return object
        }
        let store = try kind.make(try DataSet(model: BatchChangeTests.rulesWorld(seed), objects: objects))
        let policies: [MergePolicy] = [.error, .storeTrump, .objectTrump, .overwrite, .rollback]
        let contexts = (0..<3).map { index in
            let context = store.context()
            context.mergePolicy = policies[Int((seed + UInt64(index)) % 5)]
            return context
        }
        var saved = 0
        for step in 0..<30 {
            let context = contexts[generator.int(3)]
            let things = (try? context.fetch(FetchRequest(entityName: "Thing"))) ?? []
            let labels = (try? context.fetch(FetchRequest(entityName: "Label"))) ?? []
            for _ in 0..<(1 + generator.int(3)) {
                guard !things.isEmpty else { break }
                let thing = generator.pick(things)
                // A stale object whose row is gone fails here: that change is simply not made.
                switch generator.int(7) {
                case 0: try? context.delete(thing)
                case 1: if !labels.isEmpty { try? context.delete(generator.pick(labels)) }
                case 2: try? thing.setObject(generator.chance(20) ? nil : generator.pick(things), forKey: "parent")
                case 3: if !labels.isEmpty { try? thing.addObject(generator.pick(labels), forKey: "labels") }
                case 4: if !labels.isEmpty { try? thing.removeObject(generator.pick(labels), forKey: "labels") }
                case 5:
                    if let child = try? context.insert("Thing") {
                        try? child.setObject(thing, forKey: "parent")
                        if !labels.isEmpty { try? child.addObject(generator.pick(labels), forKey: "labels") }
                    }
                default: try? thing.setValue(PredicateValue.int(Int64(step)), forKey: "i")
                }
            }
            do {
                try context.save()
                saved += 1
            } catch {
                context.rollback()
            }
            // Now and then a context catches up with the store.
            if generator.chance(15) { contexts[generator.int(3)].reset() }
        }
        #expect(CoreDataInvariants.violations(of: store.store) == [], "seed \(seed)")
        #expect(saved > 0)
    }
}
