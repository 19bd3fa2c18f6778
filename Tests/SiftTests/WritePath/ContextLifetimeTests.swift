// An object does not keep its context alive, and using it after the context
// is gone is a typed error, never undefined behaviour.

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
        do {
            let context = store.context()
            let employees = try context.fetch(FetchRequest(entityName: "Employee", predicate: "age > 50"))
            fault = employees.first
            realized = employees.last
            _ = try realized?.value(forKey: "age")
        }
        let object = try #require(fault)
        #expect(throws: StoreError.self) { try object.value(forKey: "name") }
        #expect(object["name"] == nil)
        let error = #expect(throws: StoreError.self) { try realized?.setValue(1, forKey: "age") }
        guard case .contextGone(let object)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(object.entity == "Employee")
        #expect(error?.code == .contextGone)
        #expect(error?.description.contains("keep the context") == true)
    }
}
