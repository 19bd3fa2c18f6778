// Stage 1 (syntax): `$variables`: listing the unbound ones and binding them.
//
// A SUBQUERY binds its variable inside its predicate. Every other `$name` is
// free until a value is substituted for it, as
// `NSPredicate.withSubstitutionVariables(_:)` does. The target of `$x := value`
// is a definition, not a use: it is neither listed nor replaced.

import SiftValues

extension PredicateSyntax {
    /// The names of the `$variables` the predicate uses that nothing in it binds.
    ///
    /// ```swift
    /// try PredicateParser.parse("age > $min AND SUBQUERY(reports, $r, $r.age > $min).@count > 0").variables
    /// // ["min"]
    /// ```
    public var variables: Set<String> {
        var names = Set<String>()
        collectVariables(bound: [], into: &names)
        return names
    }

    /// The key paths from free `$variables` the predicate uses, each written
    /// `name.key.path` (`$FETCH_SOURCE.name` is `FETCH_SOURCE.name`):
    /// `substituting(_:)` replaces such a key path by the value given under
    /// that name.
    public var variableKeyPaths: Set<String> {
        var names = Set<String>()
        collectVariables(bound: [], into: &names, keyPaths: true)
        return names.filter { $0.contains(".") }
    }

    /// A new tree in which each free `$variable` named in `values` is replaced by
    /// its value. Variables not named stay as they are; a SUBQUERY's own
    /// variable is never replaced inside it.
    ///
    /// ```swift
    /// let template = try PredicateParser.parse("age > $min")
    /// let tree = template.substituting(["min": 40])   // age > 40
    /// ```
    ///
    /// - Parameter values: The values of variables, by name without the `$`; a
    ///   name such as `FETCH_SOURCE.name` replaces that key path from the
    ///   variable as a whole.
    /// - Returns: The tree with those variables replaced by constants.
    public func substituting(_ values: [String: PredicateValue]) -> PredicateSyntax {
        guard !values.isEmpty else { return self }
        var copy = self
        copy.kind = kind.substituting(values)
        return copy
    }

    func collectVariables(bound: Set<String>, into names: inout Set<String>, keyPaths: Bool = false) {
        switch kind {
        case .constant: break
        case .not(let p): p.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        case .and(let ps), .or(let ps): for p in ps { p.collectVariables(bound: bound, into: &names, keyPaths: keyPaths) }
        case .comparison(let c):
            c.left.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            c.right.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        }
    }
}

extension PredicateSyntax.Kind {
    func substituting(_ values: [String: PredicateValue]) -> Self {
        switch self {
        case .constant: return self
        case .not(let p): return .not(p.substituting(values))
        case .and(let ps): return .and(ps.map { $0.substituting(values) })
        case .or(let ps): return .or(ps.map { $0.substituting(values) })
        case .comparison(var c):
            c.left = c.left.substituting(values)
            c.right = c.right.substituting(values)
            return .comparison(c)
        }
    }
}

extension ExpressionSyntax {
    /// The names of the free `$variables` of this expression.
    public var variables: Set<String> {
        var names = Set<String>()
        collectVariables(bound: [], into: &names)
        return names
    }

    /// A new expression with the free variables named in `values` replaced.
    ///
    /// - Parameter values: The values of variables, by name without the `$`; a
    ///   name such as `FETCH_SOURCE.name` replaces that key path from the
    ///   variable as a whole.
    /// - Returns: The expression with those variables replaced by constants.
    public func substituting(_ values: [String: PredicateValue]) -> ExpressionSyntax {
        guard !values.isEmpty else { return self }
        var copy = self
        switch kind {
        case .constant, .keyPath, .evaluatedObject:
            return self
        case .variable(let name):
            if let value = values[name] { copy.kind = .constant(value) }
        case .assignment(let name, let value):
            copy.kind = .assignment(variable: name, value: value.substituting(values))
        case .member(let base, let path):
            if case .variable(let name) = base.kind, let value = values[([name] + path).joined(separator: ".")] {
                // A key path from a variable, given as a whole.
                copy.kind = .constant(value)
            } else {
                copy.kind = .member(base.substituting(values), path)
            }
        case .index(let base, let index):
            if case .expression(let e) = index {
                copy.kind = .index(base.substituting(values), .expression(e.substituting(values)))
            } else {
                copy.kind = .index(base.substituting(values), index)
            }
        case .aggregate(let elements):
            copy.kind = .aggregate(elements.map { $0.substituting(values) })
        case .negate(let e):
            copy.kind = .negate(e.substituting(values))
        case .binary(let op, let l, let r):
            copy.kind = .binary(op, l.substituting(values), r.substituting(values))
        case .function(let name, let arguments):
            copy.kind = .function(name: name, arguments: arguments.map { $0.substituting(values) })
        case .functionCall(let receiver, let selector, let arguments):
            copy.kind = .functionCall(receiver: receiver.substituting(values), selector: selector,
                                      arguments: arguments.map { $0.substituting(values) })
        case .subquery(let collection, let variable, let predicate):
            var inner = values
            inner[variable] = nil
            copy.kind = .subquery(collection: collection.substituting(values), variable: variable,
                                  predicate: predicate.substituting(inner))
        case .ternary(let p, let a, let b):
            copy.kind = .ternary(p.substituting(values), a.substituting(values), b.substituting(values))
        case .cast(let e, let type):
            copy.kind = .cast(e.substituting(values), type: type)
        }
        return copy
    }

    func collectVariables(bound: Set<String>, into names: inout Set<String>, keyPaths: Bool = false) {
        switch kind {
        case .constant, .keyPath, .evaluatedObject:
            break
        case .variable(let name):
            if !bound.contains(name) { names.insert(name) }
        case .assignment(_, let value):
            value.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        case .member(let base, let path):
            base.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            if keyPaths, case .variable(let name) = base.kind, !bound.contains(name) {
                names.insert(([name] + path).joined(separator: "."))
            }
        case .index(let base, let index):
            base.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            if case .expression(let e) = index { e.collectVariables(bound: bound, into: &names, keyPaths: keyPaths) }
        case .aggregate(let elements):
            for e in elements { e.collectVariables(bound: bound, into: &names, keyPaths: keyPaths) }
        case .negate(let e), .cast(let e, _):
            e.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        case .binary(_, let l, let r):
            l.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            r.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        case .function(_, let arguments):
            for e in arguments { e.collectVariables(bound: bound, into: &names, keyPaths: keyPaths) }
        case .functionCall(let receiver, _, let arguments):
            receiver.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            for e in arguments { e.collectVariables(bound: bound, into: &names, keyPaths: keyPaths) }
        case .subquery(let collection, let variable, let predicate):
            collection.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            predicate.collectVariables(bound: bound.union([variable]), into: &names, keyPaths: keyPaths)
        case .ternary(let p, let a, let b):
            p.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            a.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
            b.collectVariables(bound: bound, into: &names, keyPaths: keyPaths)
        }
    }
}
