// Demo data: a synthetic company of any size, generated deterministically
// (the same size always gives the same objects). Used by `sift demo` and the
// benchmarks.

import Foundation
import Sift

/// Generates a company: departments, employees with managers, reports and
/// tags, with the awkward values real data has (nil ratings and nicknames,
/// accents, case twins).
public enum CompanyGenerator {
    /// The company model: the conformance model, with indexes on the
    /// attributes the showcase searches.
    public static let model: DataModel = try! DataModel([
        Entity("Department", attributes: [Attribute("name", .string, indexed: true), Attribute("budget", .double)],
               relationships: [Relationship("employees", to: "Employee", toMany: true, inverse: "department")]),
        Entity("Employee", attributes: [
            Attribute("name", .string, indexed: true, canonical: true), Attribute("nickname", .string, optional: true),
            Attribute("age", .integer64, indexed: true), Attribute("salary", .double),
            Attribute("rating", .double, optional: true), Attribute("isManager", .boolean),
            Attribute("startDate", .date),
        ], relationships: [
            Relationship("department", to: "Department", inverse: "employees"),
            Relationship("manager", to: "Employee", inverse: "reports"),
            Relationship("reports", to: "Employee", toMany: true, inverse: "manager"),
            Relationship("tags", to: "Tag", toMany: true, inverse: "employees"),
        ]),
        Entity("Tag", attributes: [Attribute("name", .string)],
               relationships: [Relationship("employees", to: "Employee", toMany: true, inverse: "tags")]),
    ])

    static let departments = ["Engineering", "Sales", "Marketing", "Research & Development", "Opérations", "Legal",
                              "Human_Resources", "Support", "Finance", "Empty Dept"]
    static let tags = ["remote", "lead", "café", "new", "senior", "part-time", "mentor", "oncall", "travel", "intern", "alumni"]
    static let firstNames = ["Alice", "alice", "Bob", "Chloé", "Dmitri", "Eve", "Ana", "Zoë", "Zoe", "Émile", "Grace",
                             "Hal", "Ivy", "José", "Renée", "Ångström", "李", "O'Brien"]

    /// Every node of a company with `employees` employees, in primary-key
    /// order within each entity: departments, then employees, then tags.
    public static func nodes(employees: Int) -> [RowNode] {
        let (departmentIndex, employeeIndex, tagIndex) = (0, 1, 2)
        var generator = SplitMix(seed: 42)
        var nodes: [RowNode] = []
        nodes.reserveCapacity(employees + departments.count + tags.count)
        var departmentMembers = Array(repeating: [Int64](), count: departments.count)
        var tagMembers = Array(repeating: [Int64](), count: tags.count)
        let employee = model.entities[employeeIndex]
        let employeeRows = RowBatchBuilder(entity: employeeIndex, root: employeeIndex, attributeCount: employee.attributes.count,
                                           toOneCount: employee.toOneCount, toManyCount: employee.toManyCount, storesToMany: true)
        for i in 1...max(1, employees) where employees > 0 {
            let id = Int64(i)
            // The last department has no employees.
            let department = Int(generator.next() % UInt64(departments.count - 1))
            departmentMembers[department].append(id)
            // Employee i reports to i / 10, so i's reports are 10i ..< 10i + 10.
            let manager: Int64? = i > 10 ? Int64(i / 10) : nil
            let reports = i * 10 > employees ? [] : (i * 10..<min(i * 10 + 10, employees + 1)).filter { $0 > 10 }.map(Int64.init)
            var myTags: [Int64] = []
            for _ in 0..<Int(generator.next() % 4) {
                let t = Int(generator.next() % UInt64(tags.count))
                if !myTags.contains(Int64(t + 1)) {
                    myTags.append(Int64(t + 1))
                    tagMembers[t].append(id)
                }
            }
            let rating: PredicateValue = generator.next() % 5 == 0 ? .null : .double(Double(generator.next() % 50) / 10)
            let name = firstNames[Int(generator.next() % UInt64(firstNames.count))] + " \(i)"
            employeeRows.append(
                key: id, version: 1,
                values: [.string(name), generator.next() % 3 == 0 ? .null : .string("n\(i % 100)"),
                         .int(Int64(20 + generator.next() % 45)), .double(Double(30_000 + generator.next() % 170_000)),
                         rating, .bool(i <= employees / 10),
                         .date(Date(timeIntervalSinceReferenceDate: Double(generator.next() % 800_000_000)))],
                toOne: [Int64(department + 1), manager], toMany: [reports, myTags.sorted()])
        }
        // The employees in one batch, by column, as a fetch or a data set lays rows out.
        let employeeBatch = employeeRows.batch(fetchTimestamp: 0)
        let employeeNodes = (0..<employeeBatch.count).map(employeeBatch.node(at:))
        for (d, name) in departments.enumerated() {
            nodes.append(RowNode(id: ObjectID(entity: departmentIndex, primaryKey: Int64(d + 1)), version: 1, fetchTimestamp: 0,
                                 values: [.string(name), .double(Double(100_000 * (d + 1)))], toMany: [departmentMembers[d]]))
        }
        nodes += employeeNodes
        for (t, name) in tags.enumerated() {
            nodes.append(RowNode(id: ObjectID(entity: tagIndex, primaryKey: Int64(t + 1)), version: 1, fetchTimestamp: 0,
                                 values: [.string(name)], toMany: [tagMembers[t]]))
        }
        return nodes
    }
}

/// A small, fast, seedable generator (SplitMix64).
public struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
