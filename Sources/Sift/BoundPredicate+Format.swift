// Sift: a bound predicate written back in the format language — the syntax
// tree it binds from again (key paths from relationship chains, `@sum` from
// an aggregate over a collection's values, `CAST` from a conversion), then
// the syntax printer's canonical form. What a backend that takes predicate
// text (a server, another process) is sent; a form the language cannot
// write is nil, and stays with memory.

import SiftSyntax
import SiftTree
import SiftValues

extension BoundPredicate {
    /// The predicate in the format language, with its constants as format
    /// arguments: text that binds, against the same model and entity, to a
    /// predicate that selects the same objects. nil when the tree holds a
    /// form the language cannot write (an unfilled parameter, a `distinct`
    /// of values).
    ///
    /// ```swift
    /// let bound = try compiler.bind(try PredicateParser.parse("department.name == 'Sales' AND age > 30"), entity: "Employee")
    /// print(bound.canonicalFormat?.format ?? "")   // department.name == "Sales" AND age > 30
    /// ```
    public var canonicalFormat: CanonicalFormat? {
        BoundTreeWriter.predicate(self)?.canonicalFormat
    }
}

/// Bound trees back to syntax trees.
enum BoundTreeWriter {
    static func predicate(_ predicate: BoundPredicate) -> PredicateSyntax? {
        switch predicate {
        case .constant(let value):
            return PredicateSyntax(.constant(value))
        case .not(let operand):
            return self.predicate(operand).map { PredicateSyntax(.not($0)) }
        case .and(let operands):
            return all(operands).map { PredicateSyntax(.and($0)) }
        case .or(let operands):
            return all(operands).map { PredicateSyntax(.or($0)) }
        case .comparison(let comparison):
            guard let left = expression(comparison.left), let right = expression(comparison.right) else { return nil }
            return PredicateSyntax(.comparison(ComparisonSyntax(left, comparison.operator, options: comparison.options, right,
                                                                quantifier: comparison.quantifier)))
        case .exists(let collection):
            guard let members = expression(collection) else { return nil }
            return PredicateSyntax(.comparison(ComparisonSyntax(appending(["@count"], to: members), .greaterThan,
                                                                ExpressionSyntax(.constant(.int(0))))))
        }
    }

    static func all(_ predicates: [BoundPredicate]) -> [PredicateSyntax]? {
        var result: [PredicateSyntax] = []
        for predicate in predicates {
            guard let syntax = self.predicate(predicate) else { return nil }
            result.append(syntax)
        }
        return result
    }

    static func all(_ expressions: [BoundExpression]) -> [ExpressionSyntax]? {
        var result: [ExpressionSyntax] = []
        for expression in expressions {
            guard let syntax = self.expression(expression) else { return nil }
            result.append(syntax)
        }
        return result
    }

    static func expression(_ expression: BoundExpression) -> ExpressionSyntax? {
        switch expression.kind {
        case .constant(let value):
            return ExpressionSyntax(.constant(value))
        case .evaluatedObject:
            return ExpressionSyntax(.evaluatedObject)
        case .variable(let name):
            // The binder's own variables (`#1`, over a collection's members) have no name to write.
            guard !name.hasPrefix("#") else { return nil }
            return ExpressionSyntax(.variable(name))
        case .attribute(let base, let attribute):
            return self.expression(base).map { appending([attribute.name], to: $0) }
        case .toOne(let base, let relationship), .toMany(let base, let relationship):
            return self.expression(base).map { appending([relationship.name], to: $0) }
        case .key(let base, let key):
            return self.expression(base).map { appending([key], to: $0) }
        case .map(let collection, let variable, let each):
            guard let keys = keys(of: each, from: variable), let members = self.expression(collection) else { return nil }
            return appending(keys, to: members)
        case .aggregate(let op, let collection):
            if case .map(let members, let variable, let each) = collection.kind {
                guard let keys = keys(of: each, from: variable), let base = self.expression(members) else { return nil }
                // `@count` ends a key path (`employees.department.@count`); the others take the key after them.
                return appending(op == .count ? keys + ["@count"] : ["@" + op.rawValue] + keys, to: base)
            }
            return self.expression(collection).map { appending(["@" + op.rawValue], to: $0) }
        case .subquery(let collection, let variable, let predicate):
            guard let members = self.expression(collection), let test = self.predicate(predicate) else { return nil }
            return ExpressionSyntax(.subquery(collection: members, variable: variable, predicate: test))
        case .list(let elements):
            return all(elements).map { ExpressionSyntax(.aggregate($0)) }
        case .arithmetic(let op, let left, let right):
            guard let left = self.expression(left), let right = self.expression(right) else { return nil }
            return ExpressionSyntax(.binary(op, left, right))
        case .negate(let operand):
            return self.expression(operand).map { ExpressionSyntax(.negate($0)) }
        case .function(let function, let arguments):
            guard let arguments = all(arguments) else { return nil }
            switch function {
            case .castToDate, .castToNumber, .castToString:
                guard arguments.count == 1 else { return nil }
                let type = function == .castToDate ? "NSDate" : function == .castToNumber ? "NSNumber" : "NSString"
                return ExpressionSyntax(.cast(arguments[0], type: type))
            case .union, .intersect, .minus:
                guard arguments.count == 2 else { return nil }
                let op: BinaryOperator = function == .union ? .union : function == .intersect ? .intersect : .minus
                return ExpressionSyntax(.binary(op, arguments[0], arguments[1]))
            case .distinct:
                return nil
            default:
                return ExpressionSyntax(.function(name: function.rawValue, arguments: arguments))
            }
        case .ternary(let condition, let then, let otherwise):
            guard let condition = predicate(condition), let then = self.expression(then),
                  let otherwise = self.expression(otherwise) else { return nil }
            return ExpressionSyntax(.ternary(condition, then, otherwise))
        case .index(let base, let position):
            guard let base = self.expression(base), let position = self.expression(position) else { return nil }
            return ExpressionSyntax(.index(base, .expression(position)))
        case .size(let base):
            return self.expression(base).map { ExpressionSyntax(.index($0, .size)) }
        case .custom(let function, let arguments):
            return all(arguments).map { ExpressionSyntax(.function(name: function.name, arguments: $0)) }
        case .parameter:
            return nil
        }
    }

    /// The keys from `variable` to the end of a chain of key steps (`$#1.department.name`).
    static func keys(of expression: BoundExpression, from variable: String) -> [String]? {
        switch expression.kind {
        case .variable(let name):
            return name == variable ? [] : nil
        case .attribute(let base, let attribute):
            return keys(of: base, from: variable).map { $0 + [attribute.name] }
        case .toOne(let base, let relationship), .toMany(let base, let relationship):
            return keys(of: base, from: variable).map { $0 + [relationship.name] }
        case .key(let base, let key):
            return keys(of: base, from: variable).map { $0 + [key] }
        default:
            return nil
        }
    }

    /// `keys` after `base`: one key path when the base is one (`SELF` is none), a member path otherwise.
    static func appending(_ keys: [String], to base: ExpressionSyntax) -> ExpressionSyntax {
        switch base.kind {
        case .evaluatedObject: ExpressionSyntax(.keyPath(keys))
        case .keyPath(let path): ExpressionSyntax(.keyPath(path + keys))
        case .member(let inner, let path): ExpressionSyntax(.member(inner, path + keys))
        default: ExpressionSyntax(.member(base, keys))
        }
    }
}
