// Fetched results controllers: the changes reported for known edits, and
// the law that after every save or merge a controller's sections equal a
// fresh fetch's, and equal its previous sections with the reported
// difference applied — random saves from three contexts, on every store.

import Foundation
import Sift
@testable import SiftStore
import Synchronization
import Testing

/// Sections as IDs: what a controller shows, in a form tests compare.
typealias SectionList = [(name: String, ids: [ObjectID])]

/// Collects what a controller reports.
final class DifferenceRecorder: FetchedResultsControllerDelegate {
    var differences: [FetchedResultsDifference] = []
    var failures: [StoreError] = []
    func controller(_ controller: FetchedResultsController, didChange difference: FetchedResultsDifference) {
        differences.append(difference)
    }
    func controller(_ controller: FetchedResultsController, didFailWith error: StoreError) {
        failures.append(error)
    }
}

enum ResultsLaw {
    static func sections(of controller: FetchedResultsController) -> SectionList {
        controller.sections.map { ($0.name, $0.objects.map(\.objectID)) }
    }

    /// Sections as a fresh fetch gives them: the objects in the store's
    /// order, grouped by consecutive section names.
    static func freshSections(_ request: FetchRequest, _ context: ObjectContext, sectionKeyPath: String?) throws -> SectionList {
        let objects = try context.fetch(request)
        guard let sectionKeyPath else { return [("", objects.map(\.objectID))] }
        var result: SectionList = []
        for object in objects {
            var holder: ManagedObject? = object
            let keys = sectionKeyPath.split(separator: ".").map(String.init)
            for key in keys.dropLast() { holder = try holder?.object(forKey: key) }
            let name = FetchedResultsController.sectionName(try holder?.value(forKey: keys.last!) ?? .null)
            if result.last?.name == name { result[result.count - 1].ids.append(object.objectID) } else { result.append((name, [object.objectID])) }
        }
        return result
    }

    /// `sections` with `difference` applied as a table view applies a batch:
    /// removals at old positions, then insertions at new ones, ascending.
    static func apply(_ difference: FetchedResultsDifference, to sections: SectionList) -> SectionList? {
        var result = sections
        let removals = difference.objectChanges.filter { $0.kind == .delete || $0.kind == .move }.map { $0.indexPath! }
        for path in removals.sorted(by: >) {
            guard path.section < result.count, path.item < result[path.section].ids.count else { return nil }
            result[path.section].ids.remove(at: path.item)
        }
        for change in difference.sectionChanges.filter({ $0.kind == .delete }).sorted(by: { $0.sectionIndex > $1.sectionIndex }) {
            guard change.sectionIndex < result.count, result[change.sectionIndex].ids.isEmpty else { return nil }
            result.remove(at: change.sectionIndex)
        }
        for change in difference.sectionChanges.filter({ $0.kind == .insert }).sorted(by: { $0.sectionIndex < $1.sectionIndex }) {
            guard change.sectionIndex <= result.count else { return nil }
            result.insert((change.name, []), at: change.sectionIndex)
        }
        let insertions = difference.objectChanges.filter { $0.kind == .insert || $0.kind == .move }
        for change in insertions.sorted(by: { $0.newIndexPath! < $1.newIndexPath! }) {
            let path = change.newIndexPath!
            guard path.section < result.count, path.item <= result[path.section].ids.count else { return nil }
            result[path.section].ids.insert(change.objectID, at: path.item)
        }
        for change in difference.objectChanges where change.kind == .update {
            let path = change.newIndexPath!
            guard path.section < result.count, path.item < result[path.section].ids.count,
                  result[path.section].ids[path.item] == change.objectID else { return nil }
        }
        return result
    }

    static func same(_ a: SectionList, _ b: SectionList) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.name == $1.name && $0.ids == $1.ids }
    }

    static func show(_ list: SectionList) -> String {
        list.map { "\($0.name): \($0.ids.map { String($0.primaryKey) }.joined(separator: ","))" }.joined(separator: " | ")
    }
}

/// A controller's fetch, described for a test's arguments.
struct ControllerCase: Sendable, CustomTestStringConvertible {
    var name: String
    var predicate: String?
    var sort: [FetchSortDescriptor]
    var sectionKeyPath: String?
    /// Whether changes refetch (the key paths read related objects).
    var refetches: Bool

    var testDescription: String { name }

    var request: FetchRequest {
        var request = FetchRequest(entityName: "Employee", predicate: predicate)
        request.sortDescriptors = sort
        return request
    }

    static let all: [ControllerCase] = [
        ControllerCase(name: "one section, sorted by salary descending", predicate: "age > 30 AND salary < 120000",
                       sort: [FetchSortDescriptor("salary", ascending: false), FetchSortDescriptor("name")], refetches: false),
        ControllerCase(name: "sections by age", predicate: "name BEGINSWITH[c] 'a' OR isManager == YES",
                       sort: [FetchSortDescriptor("age"), FetchSortDescriptor("name", caseInsensitive: true)], sectionKeyPath: "age",
                       refetches: false),
        ControllerCase(name: "sections by isManager, every employee", predicate: nil,
                       sort: [FetchSortDescriptor("isManager"), FetchSortDescriptor("startDate", ascending: false)],
                       sectionKeyPath: "isManager", refetches: false),
        ControllerCase(name: "sections by department name (refetches)", predicate: "department.budget > 0 OR nickname != nil",
                       sort: [FetchSortDescriptor("department.name"), FetchSortDescriptor("age")], sectionKeyPath: "department.name",
                       refetches: true),
    ]
}

@Suite("Fetched results controllers")
struct FetchedResultsControllerTests {
    @Test("Known edits are reported as inserts, deletes, moves, updates and section changes")
    func knownEdits() throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        var request = FetchRequest(entityName: "Employee", predicate: "age >= 40")
        request.sortDescriptors = [FetchSortDescriptor("age"), FetchSortDescriptor("name")]
        let controller = try FetchedResultsController(fetchRequest: request, context: context, sectionNameKeyPath: "age")
        let recorder = DifferenceRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        var shown = ResultsLaw.sections(of: controller)
        #expect(!shown.isEmpty)
        #expect(controller.sections.map(\.name) == shown.map(\.name))
        #expect(try ResultsLaw.same(shown, ResultsLaw.freshSections(request, context, sectionKeyPath: "age")))

        func step(_ edit: () throws -> Void) throws -> FetchedResultsDifference {
            recorder.differences.removeAll()
            try edit()
            try context.save()
            #expect(recorder.differences.count == 1)
            let difference = try #require(recorder.differences.first)
            let applied = try #require(ResultsLaw.apply(difference, to: shown), "\(difference)")
            shown = ResultsLaw.sections(of: controller)
            #expect(ResultsLaw.same(applied, shown), "\(difference)")
            #expect(try ResultsLaw.same(shown, ResultsLaw.freshSections(request, context, sectionKeyPath: "age")))
            return difference
        }

        // A new employee of an age no one has: a new section and an insert.
        let hire = try context.insert("Employee")
        let difference1 = try step {
            try hire.setValue(.string("Aaron"), forKey: "name")
            try hire.setValue(.int(99), forKey: "age")
            try hire.setValue(.double(1000), forKey: "salary")
            try hire.setValue(.bool(false), forKey: "isManager")
            try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: 0)), forKey: "startDate")
        }
        #expect(difference1.sectionChanges == [FetchedSectionChange(kind: .insert, sectionIndex: shown.count - 1, name: "99")])
        #expect(difference1.objectChanges.map(\.kind) == [.insert])
        #expect(difference1.objectChanges.first?.newIndexPath == FetchedIndexPath(item: 0, section: shown.count - 1))
        #expect(controller.indexPath(forObject: hire) == FetchedIndexPath(item: 0, section: shown.count - 1))
        #expect(controller.object(at: FetchedIndexPath(item: 0, section: shown.count - 1)) === hire)

        // A salary change the sort does not read: an update in place.
        let difference2 = try step { try hire.setValue(.double(2000), forKey: "salary") }
        #expect(difference2.sectionChanges.isEmpty)
        #expect(difference2.objectChanges.map(\.kind) == [.update])

        // Younger, into the first section: a move, and the old section goes.
        let first = shown[0].name
        let difference3 = try step { try hire.setValue(.int(Int64(first)!), forKey: "age") }
        #expect(difference3.objectChanges.map(\.kind) == [.move])
        #expect(difference3.sectionChanges.map(\.kind) == [.delete])
        #expect(difference3.objectChanges.first?.newIndexPath?.section == 0)

        // Too young for the predicate: a delete.
        let difference4 = try step { try hire.setValue(.int(20), forKey: "age") }
        #expect(difference4.objectChanges.map(\.kind) == [.delete])
        #expect(difference4.objectChanges.first?.indexPath?.section == 0)

        // Back, then deleted.
        _ = try step { try hire.setValue(.int(50), forKey: "age") }
        let difference6 = try step { try context.delete(hire) }
        #expect(difference6.objectChanges.map(\.kind) == [.delete])
        #expect(controller.refetchCount == 0)

        // An edit that changes nothing the controller shows reports nothing.
        recorder.differences.removeAll()
        let young = try #require(try context.fetch(FetchRequest(entityName: "Employee", predicate: "age < 30")).first)
        try young.setValue(.string("Renamed"), forKey: "name")
        try context.save()
        #expect(recorder.differences.isEmpty)
    }

    @Test("Requests a controller cannot follow are refused")
    func refusals() throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        #expect(throws: StoreError.self) {
            try FetchedResultsController(fetchRequest: FetchRequest(entityName: "Employee"), context: context)
        }
        var sorted = FetchRequest(entityName: "Employee")
        sorted.sortDescriptors = [FetchSortDescriptor("name")]
        #expect(throws: StoreError.self) {
            try FetchedResultsController(fetchRequest: sorted, context: context, sectionNameKeyPath: "age")
        }
        var limited = sorted
        limited.fetchLimit = 3
        #expect(throws: StoreError.self) { try FetchedResultsController(fetchRequest: limited, context: context) }
        var typo = sorted
        typo.sortDescriptors = [FetchSortDescriptor("nmae")]
        #expect(throws: StoreError.self) { try FetchedResultsController(fetchRequest: typo, context: context) }
    }

    @Test("Differences arrive as an asynchronous sequence")
    func asyncSequence() async throws {
        let store = try StoreKind.sqlite.make()
        let context = store.context()
        var request = FetchRequest(entityName: "Employee", predicate: "age >= 40")
        request.sortDescriptors = [FetchSortDescriptor("name")]
        let controller = try FetchedResultsController(fetchRequest: request, context: context)
        try controller.performFetch()
        let differences = controller.differences
        let employee = try #require(controller.fetchedObjects.first)
        try employee.setValue(.int(18), forKey: "age")
        try context.save()
        var iterator = differences.makeAsyncIterator()
        let difference = await iterator.next()
        #expect(difference?.objectChanges.map(\.kind) == [.delete])
        #expect(difference?.objectChanges.first?.objectID == employee.objectID)
    }

    @Test("After every random save, the sections equal a fresh fetch's and the reported differences lead to them",
          arguments: StoreKind.allCases, ControllerCase.all)
    func randomSaves(_ kind: StoreKind, _ controllerCase: ControllerCase) throws {
        for seed in 1...6 as ClosedRange<UInt64> {
            try Self.run(kind, controllerCase, seed: seed)
        }
    }

    static func run(_ kind: StoreKind, _ controllerCase: ControllerCase, seed: UInt64) throws {
        let store = try kind.make()
        let contexts = (0..<3).map { _ in store.context() }
        for context in contexts { context.mergePolicy = .overwrite }
        let heard = Mutex<[StoreChanges]>([])
        let observation = store.store.addObserver { changes in heard.withLock { $0.append(changes) } }
        defer { observation.cancel() }
        let watcher = contexts[0]
        let request = controllerCase.request
        let controller = try FetchedResultsController(fetchRequest: request, context: watcher,
                                                      sectionNameKeyPath: controllerCase.sectionKeyPath)
        let recorder = DifferenceRecorder()
        controller.delegate = recorder
        try controller.performFetch()
        var shown = ResultsLaw.sections(of: controller)
        var rng = SplitMix64(seed: seed &* 0x51_7CC1 &+ 3)
        let names = ["ann", "Bob", "cara", "Dan", "eve", "Abe", "al"]
        for step in 0..<25 {
            let saver = contexts[Int.random(in: 0..<3, using: &rng)]
            let employees = try saver.fetch(FetchRequest(entityName: "Employee"))
            let departments = try saver.fetch(FetchRequest(entityName: "Department"))
            for _ in 0..<Int.random(in: 1...3, using: &rng) {
                switch Int.random(in: 0..<10, using: &rng) {
                case 0..<2:
                    let hire = try saver.insert("Employee")
                    try hire.setValue(.string(names.randomElement(using: &rng)!), forKey: "name")
                    try hire.setValue(.int(Int64.random(in: 20...70, using: &rng)), forKey: "age")
                    try hire.setValue(.double(Double(Int.random(in: 20...200, using: &rng)) * 1000), forKey: "salary")
                    try hire.setValue(.bool(Bool.random(using: &rng)), forKey: "isManager")
                    try hire.setValue(.date(Date(timeIntervalSinceReferenceDate: Double.random(in: 0...1e9, using: &rng).rounded())),
                                      forKey: "startDate")
                    if Bool.random(using: &rng) { try hire.setObject(departments.randomElement(using: &rng), forKey: "department") }
                case 2:
                    if let victim = employees.randomElement(using: &rng), !victim.isDeleted { try saver.delete(victim) }
                case 3:
                    // A department renamed: only a controller reading related objects sees it.
                    if let department = departments.randomElement(using: &rng) {
                        try department.setValue(.string(names.randomElement(using: &rng)!.uppercased()), forKey: "name")
                    }
                default:
                    guard let employee = employees.randomElement(using: &rng), !employee.isDeleted else { continue }
                    switch Int.random(in: 0..<5, using: &rng) {
                    case 0: try employee.setValue(.int(Int64.random(in: 20...70, using: &rng)), forKey: "age")
                    case 1: try employee.setValue(.double(Double(Int.random(in: 20...200, using: &rng)) * 1000), forKey: "salary")
                    case 2: try employee.setValue(.string(names.randomElement(using: &rng)!), forKey: "name")
                    case 3: try employee.setValue(.bool(Bool.random(using: &rng)), forKey: "isManager")
                    default: try employee.setObject(departments.randomElement(using: &rng), forKey: "department")
                    }
                }
            }
            try saver.save()
            // Every other context merges what was saved.
            let changes = heard.withLock { list in defer { list.removeAll() }; return list }
            for context in contexts where context !== saver {
                for change in changes { try context.mergeChanges(from: change) }
            }
            let now = ResultsLaw.sections(of: controller)
            let label = "seed \(seed) step \(step)"
            let fresh = try ResultsLaw.freshSections(request, watcher, sectionKeyPath: controllerCase.sectionKeyPath)
            #expect(ResultsLaw.same(now, fresh), "\(label): controller \(ResultsLaw.show(now)) fetch \(ResultsLaw.show(fresh))")
            var applied: SectionList? = shown
            for difference in recorder.differences { applied = applied.flatMap { ResultsLaw.apply(difference, to: $0) } }
            #expect(applied.map { ResultsLaw.same($0, now) } == true, "\(label): \(recorder.differences)")
            #expect(recorder.failures.isEmpty, "\(label): \(recorder.failures)")
            recorder.differences.removeAll()
            shown = now
        }
        #expect((controller.refetchCount > 0) == controllerCase.refetches)
    }
}
