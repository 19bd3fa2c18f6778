// Sift's public names must not collide with Foundation's when a file imports
// both: this file compiles only if `Predicate`, `Expression`, `NSPredicate`
// and `NSExpression` still mean Foundation's types here.

import Foundation
import Sift
import Testing

@Suite("Foundation coexistence")
struct FoundationCoexistenceTests {
    @Test func foundationNamesStillResolve() throws {
        let siftTree: PredicateSyntax = try PredicateParser.parse("age > 40")
        let siftExpression: ExpressionSyntax = try PredicateParser.parseExpression("salary * 12")
        let foundationPredicate: Predicate<Int> = .true
        #expect(try foundationPredicate.evaluate(41))
        #expect(siftTree.description == "age > 40")
        #expect(siftExpression.description == "salary * 12")
        // The Objective-C classes exist on Linux even though their format
        // parsing does not.
        let _: NSPredicate.Type = NSPredicate.self
        let _: NSExpression.Type = NSExpression.self
        let _: Expression<Int, Int>.Type = Expression<Int, Int>.self
    }
}
