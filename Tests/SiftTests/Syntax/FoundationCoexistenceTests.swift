// Sift's public names must not collide with Foundation's when a file imports
// both: this file compiles only if `Predicate`, `Expression`, `NSPredicate`
// and `NSExpression` still mean Foundation's types here.

import Foundation
import Sift
import SiftStore
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
        // Every public Sift type, named plainly in a file that imports Foundation.
        let _: [Any.Type] = [
            PredicateSyntax.self, ExpressionSyntax.self, ComparisonSyntax.self, PredicateValue.self,
            ObjectReference.self, SourceRange.self, SourcePosition.self, SourceDiagnostic.self,
            PredicateSyntaxError.self, CanonicalFormat.self, PredicateParser.self, PredicateTokenizer.self,
            DataModel.self, Entity.self, Attribute.self, Relationship.self, Property.self, AttributeType.self,
            DeleteRule.self, ModelError.self, BoundPredicate.self, BoundExpression.self, BoundComparison.self,
            ValueType.self, AttributeReference.self, RelationshipReference.self, AggregateOperator.self,
            BuiltinFunction.self, Binder.self, PredicateValidationError.self, ValidationErrorReason.self,
            PredicateCompileError.self, PredicateCompiler.self, RowCache.self, RowNode.self, RowSnapshot.self,
            ObjectID.self, DataSet.self, DataSetError.self, RowNodeDomain.self, KeyValueDomain.self,
            KeyValueItem.self, StringFolding.self, ValueComparison.self, StringMatching.self,
            Quantifier.self, ComparisonOperator.self, ComparisonOptions.self, BinaryOperator.self, IndexSyntax.self,
        ]
        let _: Expression<Int, Int>.Type = Expression<Int, Int>.self
    }
}
