// Models from the three sources — Swift, JSON, Xcode — and the checks a
// model must pass.

import Foundation
import Sift
import Testing

@Suite("Data model")
struct ModelTests {
    static func fixtureURL(_ name: String) throws -> URL {
        try #require(Bundle.module.url(forResource: "Fixtures/" + name, withExtension: nil))
    }

    @Test func swiftAPI() throws {
        let model = try DataModel([
            Entity("Department", attributes: [Attribute("name", .string)],
                   relationships: [Relationship("employees", to: "Employee", toMany: true, inverse: "department")]),
            Entity("Employee", attributes: [Attribute("age", .integer64), Attribute("rating", .double, optional: true)],
                   relationships: [Relationship("department", to: "Department", inverse: "employees")]),
        ])
        let employee = try #require(model.entity(named: "Employee"))
        #expect(employee.index == 1)
        #expect(employee.attribute(named: "rating")?.slot == 1)
        #expect(employee.attribute(named: "rating")?.isOptional == true)
        #expect(employee.relationship(named: "department")?.isToMany == false)
        #expect(model.entity(named: "Department")?.relationship(named: "employees")?.slot == 0)
    }

    @Test func jsonFromADataSet() throws {
        let model = try DataModel(contentsOf: Self.fixtureURL("company.json"))
        #expect(model.entities.map(\.name) == ["Department", "Employee", "Tag"])
        let employee = try #require(model.entity(named: "Employee"))
        #expect(employee.attributes.map(\.name) == ["name", "nickname", "age", "salary", "rating", "isManager", "startDate"])
        #expect(employee.attribute(named: "startDate")?.type == .date)
        #expect(employee.relationship(named: "reports")?.inverse == "manager")
        #expect(employee.toOneCount == 2)
        #expect(employee.toManyCount == 2)
    }

    @Test func xcodeModelBundleAndContents() throws {
        let bundle = try DataModel(contentsOf: Self.fixtureURL("Company.xcdatamodeld"))
        let folder = try DataModel(contentsOf: Self.fixtureURL("Company.xcdatamodeld/Company.xcdatamodel"))
        #expect(bundle == folder)
        let employee = try #require(bundle.entity(named: "Employee"))
        let types = Dictionary(uniqueKeysWithValues: employee.attributes.map { ($0.name, $0.type) })
        #expect(types == ["age": .integer64, "badge": .uuid, "isManager": .boolean, "name": .string, "nickname": .string,
                          "photo": .binary, "rating": .float, "salary": .decimal, "shift": .integer16,
                          "startDate": .date, "level": .integer32])
        #expect(employee.attribute(named: "nickname")?.isOptional == true)
        #expect(employee.attribute(named: "name")?.isOptional == false)
        #expect(employee.attribute(named: "isManager")?.defaultValue == .bool(false))
        #expect(employee.relationship(named: "reports")?.deleteRule == .deny)
        #expect(employee.relationship(named: "tags")?.deleteRule == .noAction)
        #expect(bundle.entity(named: "Department")?.relationship(named: "employees")?.deleteRule == .cascade)
        #expect(employee.relationship(named: "manager")?.isToMany == false)
        #expect(employee.attribute(named: "name")?.isIndexed == true)
        #expect(employee.attribute(named: "age")?.isIndexed == false)
    }

    @Test("Invalid models are rejected with the reason", arguments: [
        ([Entity("A"), Entity("A")], ModelError.duplicateEntity("A")),
        ([Entity("A", attributes: [Attribute("x", .string)], relationships: [Relationship("x", to: "A")])],
         .duplicateProperty(entity: "A", property: "x")),
        ([Entity("A", relationships: [Relationship("b", to: "B")])],
         .unknownDestination(entity: "A", relationship: "b", destination: "B")),
        ([Entity("A", relationships: [Relationship("b", to: "B", inverse: "a")]), Entity("B")],
         .unknownInverse(entity: "A", relationship: "b", inverse: "a", destination: "B")),
        ([Entity("A", relationships: [Relationship("b", to: "B", inverse: "a")]),
          Entity("B", relationships: [Relationship("a", to: "B")])],
         .inverseMismatch(entity: "A", relationship: "b", inverse: "B.a")),
        ([Entity("A", attributes: [Attribute("Z_PK", .integer64)])], .reservedName(entity: "A", property: "Z_PK")),
    ])
    func invalidModels(_ entities: [Entity], _ expected: ModelError) {
        #expect(throws: expected) { try DataModel(entities) }
    }

    @Test func unknownAttributeTypesAreReported() {
        let json = #"{"entities": [{"name": "A", "attributes": [{"name": "x", "type": "complex"}]}]}"#
        #expect(throws: ModelError.unknownAttributeType(entity: "A", attribute: "x", type: "complex")) {
            try DataModel(json: Data(json.utf8))
        }
    }
}
