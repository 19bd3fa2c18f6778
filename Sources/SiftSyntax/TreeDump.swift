// Stage 1 (syntax): showing a syntax tree's structure, as an indented outline
// (`sift parse --tree`) or as JSON (`sift parse --json`).

import Foundation
import SiftValues

/// One node of a tree in a neutral form, for outlines and JSON.
public struct SyntaxOutline: Encodable, Sendable {
    /// The node's kind: "and", "comparison", "keyPath", "constant", …
    public var kind: String
    /// The node's own attributes, such as the operator or the key path.
    public var attributes: [String: PredicateValue]
    /// The node's source range.
    public var range: SourceRange
    /// The node's children, in order.
    public var children: [SyntaxOutline]

    init(_ kind: String, _ attributes: [String: PredicateValue] = [:], range: SourceRange,
         _ children: [SyntaxOutline] = []) {
        self.kind = kind
        self.attributes = attributes
        self.range = range
        self.children = children
    }

    enum CodingKeys: String, CodingKey { case kind, attributes, start, end, children }

    /// Encodes the outline as an object with `kind`, `attributes`, `start`,
    /// `end` and `children`.
    ///
    /// - Parameter encoder: The encoder to write to.
    /// - Throws: What the encoder throws.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(kind, forKey: .kind)
        if !attributes.isEmpty { try container.encode(attributes, forKey: .attributes) }
        try container.encode(range.lowerBound, forKey: .start)
        try container.encode(range.upperBound, forKey: .end)
        if !children.isEmpty { try container.encode(children, forKey: .children) }
    }

    /// An indented outline, one node a line.
    public var text: String {
        var lines: [String] = []
        write(indent: "", into: &lines)
        return lines.joined(separator: "\n")
    }

    private func write(indent: String, into lines: inout [String]) {
        let details = attributes.sorted { $0.key < $1.key }
            .map { "\($0.key)=\($0.value.description)" }.joined(separator: " ")
        lines.append(indent + kind + (details.isEmpty ? "" : " " + details) + "  @\(range)")
        for child in children { child.write(indent: indent + "  ", into: &lines) }
    }

    /// The outline as pretty-printed JSON.
    public var json: String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return (try? String(decoding: encoder.encode(self), as: UTF8.self)) ?? "{}"
    }
}

extension PredicateSyntax {
    /// The tree's structure, for `--tree` and `--json` output.
    public var outline: SyntaxOutline {
        switch kind {
        case .constant(let value):
            return SyntaxOutline(value ? "truePredicate" : "falsePredicate", range: range)
        case .not(let p):
            return SyntaxOutline("not", range: range, [p.outline])
        case .and(let ps):
            return SyntaxOutline("and", range: range, ps.map(\.outline))
        case .or(let ps):
            return SyntaxOutline("or", range: range, ps.map(\.outline))
        case .comparison(let c):
            var attributes: [String: PredicateValue] = ["operator": .string(c.operator.rawValue)]
            if c.quantifier != .direct { attributes["quantifier"] = .string(c.quantifier.rawValue) }
            if !c.options.isEmpty { attributes["options"] = .string(c.options.description) }
            return SyntaxOutline("comparison", attributes, range: range, [c.left.outline, c.right.outline])
        }
    }
}

extension ExpressionSyntax {
    /// The expression's structure, for `--tree` and `--json` output.
    public var outline: SyntaxOutline {
        switch kind {
        case .constant(let value):
            return SyntaxOutline("constant", ["value": value], range: range)
        case .keyPath(let path):
            return SyntaxOutline("keyPath", ["path": .string(path.joined(separator: "."))], range: range)
        case .evaluatedObject:
            return SyntaxOutline("self", range: range)
        case .variable(let name):
            return SyntaxOutline("variable", ["name": .string(name)], range: range)
        case .assignment(let name, let value):
            return SyntaxOutline("assignment", ["variable": .string(name)], range: range, [value.outline])
        case .member(let base, let path):
            return SyntaxOutline("member", ["path": .string(path.joined(separator: "."))], range: range, [base.outline])
        case .index(let base, let index):
            switch index {
            case .first: return SyntaxOutline("index", ["index": "FIRST"], range: range, [base.outline])
            case .last: return SyntaxOutline("index", ["index": "LAST"], range: range, [base.outline])
            case .size: return SyntaxOutline("index", ["index": "SIZE"], range: range, [base.outline])
            case .expression(let e): return SyntaxOutline("index", range: range, [base.outline, e.outline])
            }
        case .aggregate(let elements):
            return SyntaxOutline("aggregate", range: range, elements.map(\.outline))
        case .negate(let e):
            return SyntaxOutline("negate", range: range, [e.outline])
        case .binary(let op, let l, let r):
            return SyntaxOutline("binary", ["operator": .string(op.rawValue)], range: range, [l.outline, r.outline])
        case .function(let name, let arguments):
            return SyntaxOutline("function", ["name": .string(name)], range: range, arguments.map(\.outline))
        case .functionCall(let receiver, let selector, let arguments):
            return SyntaxOutline("functionCall", ["selector": .string(selector)], range: range,
                                 [receiver.outline] + arguments.map(\.outline))
        case .subquery(let collection, let variable, let predicate):
            return SyntaxOutline("subquery", ["variable": .string(variable)], range: range,
                                 [collection.outline, predicate.outline])
        case .ternary(let p, let a, let b):
            return SyntaxOutline("ternary", range: range, [p.outline, a.outline, b.outline])
        case .cast(let e, let type):
            return SyntaxOutline("cast", ["type": .string(type)], range: range, [e.outline])
        }
    }
}
