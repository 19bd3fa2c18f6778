// Stage 2 (schema): predicates and expressions kept in a compiled model
// (fetched properties, fetch request templates, derived attributes) as
// archived `NSPredicate`/`NSExpression` objects, turned back into text.
//
// Two renderings: the format language (what Sift parses), and Apple's
// `predicateFormat` of an expression, which a derived attribute's version
// hash covers (`count:(pages)` for `pages.@count`).

import Foundation

/// Renders archived predicates and expressions of a keyed archive.
struct ArchivedPredicates {
    let archive: KeyedArchive
    /// How deep rendering may go: an archive is data, and may be hostile.
    private static let maximumDepth = 64

    /// A predicate as format-language text; nil for a class it does not know.
    func predicate(_ index: Int?, depth: Int = 0) -> String? {
        guard let index, depth < Self.maximumDepth else { return nil }
        switch archive.className(index) {
        case "NSTruePredicate": return "TRUEPREDICATE"
        case "NSFalsePredicate": return "FALSEPREDICATE"
        case "NSCompoundPredicate":
            let parts = archive.members(archive.object(index, "NSSubpredicates")).map { predicate($0, depth: depth + 1) }
            guard !parts.contains(where: { $0 == nil }) else { return nil }
            let texts = parts.map { "(\($0!))" }
            switch archive.number(index, "NSCompoundPredicateType") {
            case 0: return texts.count == 1 ? "NOT " + texts[0] : nil
            case 1: return texts.isEmpty ? "TRUEPREDICATE" : texts.joined(separator: " AND ")
            case 2: return texts.isEmpty ? "FALSEPREDICATE" : texts.joined(separator: " OR ")
            default: return nil
            }
        case "NSComparisonPredicate":
            let op = archive.object(index, "NSPredicateOperator")
            guard let left = expression(archive.object(index, "NSLeftExpression"), depth: depth + 1),
                  let right = expression(archive.object(index, "NSRightExpression"), depth: depth + 1),
                  let symbol = Self.operators[archive.number(op, "NSOperatorType") ?? -1] else { return nil }
            let flags = archive.number(op, "NSOptions") ?? archive.number(op, "NSFlags") ?? 0
            let options = (flags & 1 != 0 ? "c" : "") + (flags & 2 != 0 ? "d" : "")
            let modifier = switch archive.number(op, "NSModifier") ?? 0 {
            case 1: "ALL "
            case 2: "ANY "
            default: ""
            }
            let negated = archive.flag(op, "NSNegate")
            let text = modifier + left + " " + symbol + (options.isEmpty ? "" : "[\(options)]") + " " + right
            return negated ? "NOT (\(text))" : text
        default:
            return nil
        }
    }

    /// `NSPredicateOperatorType` values and their symbols.
    static let operators: [Int: String] = [
        0: "<", 1: "<=", 2: ">", 3: ">=", 4: "==", 5: "!=", 6: "MATCHES", 7: "LIKE", 8: "BEGINSWITH",
        9: "ENDSWITH", 10: "IN", 99: "CONTAINS", 100: "BETWEEN",
    ]

    /// Aggregate selectors and the key-path operators they are.
    private static let aggregates = ["count:": "@count", "sum:": "@sum", "average:": "@avg", "min:": "@min", "max:": "@max"]

    /// An expression as format-language text; nil for one it does not know.
    func expression(_ index: Int?, depth: Int = 0) -> String? {
        guard let index, depth < Self.maximumDepth else { return nil }
        switch archive.className(index) {
        case "NSSelfExpression": return "SELF"
        case "NSVariableExpression": return archive.string(index, "NSVariable").map { "$" + $0 }
        case "NSKeyPathSpecifierExpression": return archive.string(index, "NSKeyPath")
        case "NSKeyPathExpression":
            let operand = archive.object(index, "NSOperand")
            let path = archive.members(archive.object(index, "NSArguments")).compactMap { expression($0, depth: depth + 1) }
            guard !path.isEmpty else { return nil }
            if archive.className(operand) == "NSSelfExpression" || operand == nil { return path.joined(separator: ".") }
            guard let base = expression(operand, depth: depth + 1) else { return nil }
            return ([base] + path).joined(separator: ".")
        case "NSConstantValueExpression":
            return Self.constant(archive.scalar(index, "NSConstantValue"))
        case "NSFunctionExpression":
            let arguments = archive.members(archive.object(index, "NSArguments")).map { expression($0, depth: depth + 1) }
            guard let selector = archive.string(index, "NSSelectorName"), !arguments.contains(where: { $0 == nil }) else {
                return nil
            }
            if let aggregate = Self.aggregates[selector], arguments.count == 1 {
                // `count:(pages)` is `pages.@count`; `sum:(items.price)` is `items.@sum.price`.
                let path = arguments[0]!.split(separator: ".").map(String.init)
                return path.count == 1 ? path[0] + "." + aggregate
                    : ([path[0], aggregate] + path.dropFirst()).joined(separator: ".")
            }
            return "FUNCTION(SELF, '\(selector)'\(arguments.map { ", " + $0! }.joined()))"
        default:
            return nil
        }
    }

    /// Apple's `predicateFormat` of an expression, for version hashes.
    func appleFormat(_ index: Int?, depth: Int = 0) -> String? {
        guard let index, depth < Self.maximumDepth else { return nil }
        guard archive.className(index) == "NSFunctionExpression" else { return expression(index, depth: depth) }
        let arguments = archive.members(archive.object(index, "NSArguments")).map { appleFormat($0, depth: depth + 1) }
        guard let selector = archive.string(index, "NSSelectorName"), !arguments.contains(where: { $0 == nil }) else {
            return nil
        }
        return selector + "(" + arguments.map { $0! }.joined(separator: ", ") + ")"
    }

    static func constant(_ value: Any?) -> String? {
        switch value {
        case nil: return "nil"
        case let text as String:
            return "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
        case let flag as Bool: return flag ? "YES" : "NO"
        case let number as Int: return String(number)
        case let number as Double: return String(number)
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }
}

/// Apple's `predicateFormat` of a derivation written in the format language,
/// for the shapes Xcode writes (`pages.@count` is `count:(pages)`, `items.@sum.price`
/// is `sum:(items.price)`); other text as written.
package func appleFormatOfDerivation(_ text: String) -> String {
    let names = ["@count": "count:", "@sum": "sum:", "@avg": "average:", "@min": "min:", "@max": "max:"]
    let parts = text.split(separator: ".").map(String.init)
    guard parts.count >= 2, let i = parts.firstIndex(where: { names[$0] != nil }), i > 0 else { return text }
    let path = parts[..<i] + parts[(i + 1)...]
    return names[parts[i]]! + "(" + path.joined(separator: ".") + ")"
}
