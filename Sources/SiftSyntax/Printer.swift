// Stage 1 (syntax): the printer.
//
// Writes the canonical text of a syntax tree: keywords in upper case,
// normalized operators, strings in double quotes, and parentheses only where
// precedence or the tree's shape needs them. The rule this file keeps:
// `parse(canonicalFormat)` gives back a tree equal to the one printed.
//
// Constants that have no literal form (dates, arrays, data, UUIDs, objects,
// dictionaries, infinities) are printed as `%@` with the value collected as an
// argument in canonical form, and in a readable form in `description`.

import Foundation
import SiftValues

/// A predicate's text with the arguments for its `%@` and `%K` specifiers.
public struct CanonicalFormat: Hashable, Sendable, CustomStringConvertible {
    /// The format string.
    public var format: String
    /// One value for each specifier of `format`, in order.
    public var arguments: [PredicateValue]

    /// Creates a format string with its arguments.
    ///
    /// - Parameters:
    ///   - format: The format string.
    ///   - arguments: One value for each `%@` or `%K` specifier of `format`, in
    ///     order (none by default).
    public init(format: String, arguments: [PredicateValue] = []) {
        self.format = format
        self.arguments = arguments
    }

    public var description: String {
        arguments.isEmpty ? format : "\(format) \(arguments.map(\.description))"
    }
}

extension PredicateSyntax: CustomStringConvertible {
    /// The canonical format string and its arguments: parsing them gives back
    /// this tree.
    ///
    /// ```swift
    /// let tree = try PredicateParser.parse("a = %@ && b IN %@", arguments: [1, [2, 3]])
    /// tree.canonicalFormat.format      // a == 1 AND b IN %@
    /// tree.canonicalFormat.arguments   // [[2, 3]]
    /// ```
    public var canonicalFormat: CanonicalFormat {
        var printer = PredicatePrinter(mode: .canonical)
        printer.print(self)
        return CanonicalFormat(format: printer.output, arguments: printer.arguments)
    }

    /// The predicate as text a person can read: the canonical form with dates
    /// shown as `CAST(…, "NSDate")` and arrays as `{…}`.
    public var description: String {
        var printer = PredicatePrinter(mode: .readable)
        printer.print(self)
        return printer.output
    }
}

extension ExpressionSyntax: CustomStringConvertible {
    /// The canonical format string and arguments of this expression.
    public var canonicalFormat: CanonicalFormat {
        var printer = PredicatePrinter(mode: .canonical)
        printer.print(self, level: 0)
        return CanonicalFormat(format: printer.output, arguments: printer.arguments)
    }

    public var description: String {
        var printer = PredicatePrinter(mode: .readable)
        printer.print(self, level: 0)
        return printer.output
    }
}

struct PredicatePrinter {
    enum Mode { case canonical, readable }
    let mode: Mode
    var output = ""
    var arguments: [PredicateValue] = []

    init(mode: Mode) { self.mode = mode }

    // MARK: Predicates

    mutating func print(_ predicate: PredicateSyntax) {
        switch predicate.kind {
        case .constant(let value):
            output += value ? "TRUEPREDICATE" : "FALSEPREDICATE"
        case .not(let operand):
            output += "NOT "
            if case .constant = operand.kind { print(operand) }
            else if case .not = operand.kind { print(operand) }
            else { parenthesized(operand) }
        case .and(let operands):
            for (i, operand) in operands.enumerated() {
                if i > 0 { output += " AND " }
                switch operand.kind {
                case .and, .or: parenthesized(operand)
                default: print(operand)
                }
            }
        case .or(let operands):
            for (i, operand) in operands.enumerated() {
                if i > 0 { output += " OR " }
                if case .or = operand.kind { parenthesized(operand) } else { print(operand) }
            }
        case .comparison(let c):
            if c.quantifier != .direct { output += c.quantifier.rawValue + " " }
            print(c.left, level: 0)
            output += " " + c.operator.rawValue + c.options.description + " "
            print(c.right, level: 0)
        }
    }

    mutating func parenthesized(_ predicate: PredicateSyntax) {
        output += "("
        print(predicate)
        output += ")"
    }

    // MARK: Expressions

    /// Binding levels: 0 assignment, 1 UNION INTERSECT MINUS, 2 + -, 3 * /, 4 **,
    /// 5 unary minus, 6 postfix and primary.
    static func level(of expression: ExpressionSyntax) -> Int {
        switch expression.kind {
        case .assignment: return 0
        case .binary(let op, _, _): return op.precedence
        case .negate: return 5
        case .constant(.int(let i)) where i < 0: return 5
        case .constant(.double(let d)) where d.sign == .minus && d.isFinite: return 5
        default: return 6
        }
    }

    /// Prints `expression`, in parentheses if it binds less tightly than `level`.
    mutating func print(_ expression: ExpressionSyntax, level: Int) {
        if Self.level(of: expression) < level {
            output += "("
            print(expression, level: 0)
            output += ")"
            return
        }
        switch expression.kind {
        case .constant(let value):
            print(value)
        case .keyPath(let path):
            printKeyPath(path)
        case .evaluatedObject:
            output += "SELF"
        case .variable(let name):
            output += "$" + name
        case .assignment(let name, let value):
            output += "$" + name + " := "
            print(value, level: 0)
        case .member(let base, let path):
            switch base.kind {
            case .keyPath, .member:
                output += "("
                print(base, level: 0)
                output += ")"
            default:
                print(base, level: 6)
            }
            for key in path { output += "." + Self.escapedName(key) }
        case .index(let base, let index):
            print(base, level: 6)
            output += "["
            switch index {
            case .first: output += "FIRST"
            case .last: output += "LAST"
            case .size: output += "SIZE"
            case .expression(let e):
                if case .keyPath(let path) = e.kind, path.count == 1,
                   ["FIRST", "LAST", "SIZE"].contains(path[0].uppercased()) {
                    output += "#" + path[0]
                } else {
                    print(e, level: 0)
                }
            }
            output += "]"
        case .aggregate(let elements):
            output += "{"
            printList(elements)
            output += "}"
        case .negate(let operand):
            output += "-"
            switch operand.kind {
            case .constant(.int), .constant(.double):
                if Self.level(of: operand) == 6 {
                    output += "("
                    print(operand, level: 0)
                    output += ")"
                } else {
                    print(operand, level: 5)
                }
            default:
                print(operand, level: 5)
            }
        case .binary(let op, let left, let right):
            let p = op.precedence
            // Every binary operator associates to the left but **.
            print(left, level: op == .power ? p + 1 : p)
            output += " " + op.rawValue + " "
            print(right, level: op == .power ? p : p + 1)
        case .function(let name, let arguments):
            // A function named like a special form (`cast:(x)`) prints by
            // its selector, which reads back as a function, not the form.
            output += name + (Self.specialForms.contains(name.lowercased()) ? ":(" : "(")
            printList(arguments)
            output += ")"
        case .functionCall(let receiver, let selector, let arguments):
            output += "FUNCTION("
            print(receiver, level: 0)
            output += ", "
            print(.string(selector))
            for argument in arguments {
                output += ", "
                print(argument, level: 0)
            }
            output += ")"
        case .subquery(let collection, let variable, let predicate):
            output += "SUBQUERY("
            print(collection, level: 0)
            output += ", $" + variable + ", "
            print(predicate)
            output += ")"
        case .ternary(let condition, let then, let otherwise):
            output += "TERNARY("
            print(condition)
            output += ", "
            print(then, level: 0)
            output += ", "
            print(otherwise, level: 0)
            output += ")"
        case .cast(let value, let type):
            output += "CAST("
            print(value, level: 0)
            output += ", "
            print(.string(type))
            output += ")"
        }
    }

    mutating func printList(_ expressions: [ExpressionSyntax]) {
        for (i, e) in expressions.enumerated() {
            if i > 0 { output += ", " }
            print(e, level: 0)
        }
    }

    mutating func printKeyPath(_ path: [String]) {
        if mode == .canonical, !path.allSatisfy(Self.isPrintableName), !path.contains(where: { $0.contains(".") }) {
            output += "%K"
            arguments.append(.string(path.joined(separator: ".")))
            return
        }
        output += path.map(Self.escapedName).joined(separator: ".")
    }

    // MARK: Names

    /// Whether `name` can be written as it is, or with a `#`, as a key.
    static func isPrintableName(_ name: String) -> Bool {
        var scalars = name.unicodeScalars[...]
        if scalars.first == "@" { scalars = scalars.dropFirst() }
        guard let head = scalars.first else { return false }
        guard head == "_" || (head.isASCII ? head.properties.isAlphabetic : head.properties.isXIDStart) else {
            return false
        }
        return scalars.dropFirst().allSatisfy {
            $0 == "_" || ($0.isASCII ? ($0.properties.isAlphabetic || ("0"..."9").contains($0)) : $0.properties.isXIDContinue)
        }
    }

    /// The names that are special forms directly before `(`.
    static let specialForms: Set<String> = ["subquery", "function", "ternary", "cast"]

    /// A key as it must be written: with `#` when it is a reserved word.
    static func escapedName(_ name: String) -> String {
        Keyword.reservedNames.contains(name.uppercased()) ? "#" + name : name
    }

    // MARK: Values

    mutating func print(_ value: PredicateValue) {
        if let literal = value.literal {
            output += literal
        } else if mode == .canonical {
            output += "%@"
            arguments.append(value)
        } else {
            output += value.description
        }
    }
}
