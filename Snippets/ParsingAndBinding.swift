// Parsing, templates, and predicates bound to a model: the syntax tree a
// format string becomes, its $variables, and a predicate checked against a
// model's entity and evaluated over a data set's rows in memory. Run from
// the package's folder: it reads the conformance data set of the tests.
import Foundation
import Sift
import SiftStore

// snippet.main
let tree = try PredicateParser.parse("%K == %@ AND age > %d", arguments: ["department.name", "Legal", 30])
print(tree)                                     // department.name == "Legal" AND age > 30

let template = try PredicateParser.parse("age > $minimum")
print(template.variables)                       // ["minimum"]
print(template.substituting(["minimum": 40]))   // age > 40

// The same predicate type against a model: checked and bound to an entity, then evaluated over a
// data set's rows in memory (a store's fetch takes it too).
let dataSet = try DataSet(contentsOf: URL(fileURLWithPath: "Tests/SiftTests/Fixtures/company.json"))
let managers = try FormatPredicate(format: "ANY reports.age > %@ AND department.name BEGINSWITH[cd] 'eng'", 40)
let bound = try managers.bound(to: dataSet.model, entity: "Employee")
print(try dataSet.makeRowCache().nodes(of: "Employee", matching: bound).count)   // 2

// A key path the entity does not have is an error with its place and a suggestion.
let typo = "departmnt.name == 'Sales'"
do {
    _ = try FormatPredicate(format: typo).bound(to: dataSet.model, entity: "Employee")
} catch {
    print(error.rendered(in: typo))             // prints:
                                                // error: 'Employee' has no attribute or relationship named 'departmnt'
                                                //  --> predicate:1:1
                                                // 1 | departmnt.name == 'Sales'
                                                //   | ^^^^^^^^^^^^^^
                                                //   = note: did you mean 'department'?
}
// snippet.end
