// The company model as view classes and records, for the Swift predicate tests.

import Foundation
import Sift
import SiftStore

/// An employee of the company data set, as a view class.
final class SPEmployee: ManagedObjectView {
    static var entityName: String { "Employee" }
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
    @Managed("nickname") var nickname: String?
    @Managed("age") var age: Int?
    @Managed("salary") var salary: Double?
    @Managed("rating") var rating: Double?
    @Managed("isManager") var isManager: Bool?
    @Managed("startDate") var startDate: Date?
    /// A property named differently from its attribute.
    @Managed("age") var years: Int?

    var department: SPDepartment? { ((try? object.object(forKey: "department")) ?? nil).map(SPDepartment.init) }
    var manager: SPEmployee? { ((try? object.object(forKey: "manager")) ?? nil).map(SPEmployee.init) }
    var reports: [SPEmployee] { ((try? object.objects(forKey: "reports")) ?? []).map(SPEmployee.init) }
    var tags: [SPTag] { ((try? object.objects(forKey: "tags")) ?? []).map(SPTag.init) }
    /// A computed property that reads no attribute: its key path names nothing.
    var shout: String { "hey" }
}

/// A department of the company data set.
final class SPDepartment: ManagedObjectView {
    static var entityName: String { "Department" }
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
    @Managed("budget") var budget: Double?
    var employees: [SPEmployee] { ((try? object.objects(forKey: "employees")) ?? []).map(SPEmployee.init) }
}

/// A tag of the company data set.
final class SPTag: ManagedObjectView {
    static var entityName: String { "Tag" }
    let object: ManagedObject
    init(_ object: ManagedObject) { self.object = object }

    @Managed("name") var name: String?
}

/// An employee as a record.
struct SPEmployeeRecord: Codable, Sendable, Equatable {
    var name: String
    var nickname: String?
    var age: Int
    var salary: Double
    var rating: Double?
    var isManager: Bool
}
