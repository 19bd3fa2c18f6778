// An object does not keep its context alive. After the context is gone an
// object a fetch returned still reads the values it was fetched with (issue
// 54); anything else it needs the context for is a typed error, never
// undefined behaviour and never a made-up value.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Context lifetime")
struct ContextLifetimeTests {
    @Test(arguments: StoreKind.allCases)
    func anObjectWhoseContextIsGoneSaysSo(_ kind: StoreKind) throws {
        let store = try kind.make()
        var fault: ManagedObject?
        var realized: ManagedObject?
        var unread: ManagedObject?
        var name: PredicateValue?
        do {
            let context = store.context()
            let employees = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 50",
                                                           sortDescriptors: [FetchSortDescriptor("name")]))
            fault = employees.first
            realized = employees.last
            _ = try realized?.value(forKey: "age")
            // A fault no fetch returned: reached through a relationship, never read.
            unread = try employees.first { try $0.object(forKey: "department") != nil }?.object(forKey: "department")
            name = try ObjectContext(store: store.store).fetch(FetchRequest(entityName: "Employee", predicate: "age > 50",
                                                                             sortDescriptors: [FetchSortDescriptor("name")]))
                .first?.value(forKey: "name")
        }
        let object = try #require(fault)
        #expect(try object.value(forKey: "name") == name)
        #expect(object["name"] == name && name != nil)
        let department = try #require(unread)
        #expect(throws: StoreError.self) { try department.value(forKey: "name") }
        #expect(department["name"] == nil)
        let error = #expect(throws: StoreError.self) { try realized?.setValue(1, forKey: "age") }
        guard case .contextGone(let object)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(object.entity == "Employee")
        #expect(error?.code == .contextGone)
        #expect(error?.description.contains("keep the context") == true)
    }
}
