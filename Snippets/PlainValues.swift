// Predicates over plain Swift values, with no model: what NSPredicate(format:)
// is used for most.
import Foundation
import Sift

// snippet.main
let isEmail = try FormatPredicate(format: "SELF MATCHES %@", "[^@ ]+@[^@ ]+\\.[a-z]{2,}")
print(try isEmail.evaluate(with: "ann@example.com"))                 // true

let people: [[String: Any]] = [
    ["name": "Ann", "age": 41, "tags": ["admin", "ops"]],
    ["name": "Bob", "age": 17, "tags": ["admin"]],
]
let adults = try FormatPredicate(format: "age >= %d AND ANY tags == 'admin'", 18)
print(try adults.filter(people).compactMap { $0["name"] as? String })   // ["Ann"]

let older = try FormatPredicate(format: "age > $minimum")
print(try older.evaluate(with: people[1], substitutionVariables: ["minimum": 16]))   // true

struct Product: Encodable { var name: String; var price: Double }
let catalog = try ValueColumns([Product(name: "Green tea", price: 4), Product(name: "Coffee", price: 12)])
let teas = try FormatPredicate(format: "price < 10 AND name CONTAINS[c] 'tea'").filter(catalog)
print(teas.map(\.name))                                              // ["Green tea"]
// snippet.end

// snippet.formats
let byKey = try FormatPredicate(format: "%K BEGINSWITH[c] %@ AND %K > %d", "name", "a", "age", 30)
print(try byKey.filter(people).count)                                // 1 — %K takes a key path, %@ any value
let inRange = try FormatPredicate(format: "age BETWEEN {$low, $high}")
print(try inRange.evaluate(with: people[0], substitutionVariables: ["low": 40, "high": 50]))   // true
// snippet.end

// snippet.errors
// One `catch` shows a predicate that does not compile and one that cannot be evaluated alike.
for format in ["age >> 3", "name BEGINSWITH 3"] {
    do {
        print(try FormatPredicate(format: format).evaluate(with: people[0]))
    } catch let error as any PredicateTextError {
        print(error.rendered(in: format))   // for the two formats, prints:
                                            // error: expected an expression after '>', found '>'
                                            //  --> predicate:1:6
                                            // 1 | age >> 3
                                            //   |      ^
                                            // error: BEGINSWITH compares strings, but an operand is an integer
                                            //  --> predicate:1:1
                                            // 1 | name BEGINSWITH 3
                                            //   | ^^^^^^^^^^^^^^^^^
    }
}
// snippet.end
