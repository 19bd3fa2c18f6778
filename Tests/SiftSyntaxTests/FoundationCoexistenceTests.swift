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
        // NSPredicate exists on Linux even though its format parsing does
        // not. (Naming NSExpression here would compile too, with a warning
        // that swift-corelibs-foundation does not implement it.)
        let _: NSPredicate.Type = NSPredicate.self
        let _: Expression<Int, Int>.Type = Expression<Int, Int>.self
    }
}
