// Stage 3 (tree): showing a bound tree as an outline with a type on every
// expression (`sift check`).

import SiftValues

extension BoundPredicate: CustomStringConvertible {
    /// The tree as an indented outline, one node a line.
    public var outline: String {
        var lines: [String] = []
        write(indent: "", into: &lines)
        return lines.joined(separator: "\n")
    }

    public var description: String { outline }

    func write(indent: String, into lines: inout [String]) {
        switch self {
        case .constant(let value):
            lines.append(indent + (value ? "TRUEPREDICATE" : "FALSEPREDICATE"))
        case .not(let p):
            lines.append(indent + "NOT")
            p.write(indent: indent + "  ", into: &lines)
        case .and(let ps), .or(let ps):
            if case .and = self { lines.append(indent + "AND") } else { lines.append(indent + "OR") }
            for p in ps { p.write(indent: indent + "  ", into: &lines) }
        case .exists(let collection):
            lines.append(indent + "EXISTS")
            collection.write(indent: indent + "  ", into: &lines)
        case .comparison(let c):
            let quantifier = c.quantifier == .direct ? "" : c.quantifier.rawValue + " "
            lines.append(indent + quantifier + c.operator.rawValue + c.options.description)
            c.left.write(indent: indent + "  ", into: &lines)
            c.right.write(indent: indent + "  ", into: &lines)
        }
    }
}

extension BoundExpression: CustomStringConvertible {
    /// The expression as an indented outline with types.
    public var outline: String {
        var lines: [String] = []
        write(indent: "", into: &lines)
        return lines.joined(separator: "\n")
    }

    public var description: String { outline }

    func write(indent: String, into lines: inout [String]) {
        let next = indent + "  "
        func line(_ text: String) { lines.append(indent + text + " : \(type)") }
        switch kind {
        case .constant(let value):
            line("constant \(value)")
        case .evaluatedObject:
            line("SELF")
        case .variable(let name):
            line("$\(name)")
        case .attribute(let base, let attribute):
            line("attribute \(attribute)")
            base.write(indent: next, into: &lines)
        case .toOne(let base, let relationship):
            line("to-one \(relationship)")
            base.write(indent: next, into: &lines)
        case .toMany(let base, let relationship):
            line("to-many \(relationship)")
            base.write(indent: next, into: &lines)
        case .key(let base, let key):
            line("key \(key)")
            base.write(indent: next, into: &lines)
        case .map(let collection, let variable, let each):
            line("each $\(variable) in")
            collection.write(indent: next, into: &lines)
            each.write(indent: next, into: &lines)
        case .aggregate(let op, let collection):
            line("@\(op.rawValue)")
            collection.write(indent: next, into: &lines)
        case .subquery(let collection, let variable, let predicate):
            line("SUBQUERY $\(variable)")
            collection.write(indent: next, into: &lines)
            predicate.write(indent: next, into: &lines)
        case .list(let elements):
            line("list")
            for e in elements { e.write(indent: next, into: &lines) }
        case .arithmetic(let op, let l, let r):
            line(op.rawValue)
            l.write(indent: next, into: &lines)
            r.write(indent: next, into: &lines)
        case .negate(let e):
            line("negate")
            e.write(indent: next, into: &lines)
        case .function(let function, let arguments):
            line("\(function.rawValue)()")
            for a in arguments { a.write(indent: next, into: &lines) }
        case .ternary(let condition, let a, let b):
            line("TERNARY")
            condition.write(indent: next, into: &lines)
            a.write(indent: next, into: &lines)
            b.write(indent: next, into: &lines)
        case .index(let base, let position):
            line("index")
            base.write(indent: next, into: &lines)
            position.write(indent: next, into: &lines)
        case .size(let base):
            line("SIZE")
            base.write(indent: next, into: &lines)
        case .custom(let function, let arguments):
            line("\(function.name)() [registered]")
            for a in arguments { a.write(indent: next, into: &lines) }
        case .parameter(let name):
            line("$\(name) [parameter]")
        }
    }
}
