// Stage 6b (SQL lowering): a long OR of terms that differ only in their
// constants, as one EXISTS over a table of those constants.
//
// `(age == 1 AND name != "x1") OR (age == 2 AND name != "x2") OR …` with
// thousands of terms: SQLite plans an OR term by term, comparing terms with
// each other and numbering each parameter against the ones before, which
// grows with the square of the terms (20 000 terms took 20 s). Written as
// `EXISTS (SELECT 1 FROM json_each(?) AS v WHERE age = json_extract(v.value,
// '$[0]') AND name IS NOT json_extract(v.value, '$[1]'))`, with the terms'
// constants bound as one JSON array of rows, the shape is planned once and
// the work grows with the number of terms. Each term keeps its meaning: the
// shape is lowered as any comparison with a value known only when the query
// runs, so two-valued nil logic holds.

import SiftModel
import SiftValues
import SiftTree

extension SQLWriter {
    /// The fewest terms of one shape worth a table of values.
    static let shortestValueTable = 64

    /// `operands` joined by OR: terms of one shape, when there are enough of
    /// them, as one EXISTS over a table of their constants; the rest as they are.
    mutating func disjunction(_ operands: [BoundPredicate], _ c: SQLContext) throws(Failure) -> SQLExpression {
        var parts: [SQLExpression] = []
        parts.reserveCapacity(operands.count)
        guard usesValueTables, operands.count >= Self.shortestValueTable, schema.dialect.hasSiftFunctions else {
            for operand in operands { parts.append(try predicate(operand, c)) }
            return .or(parts)
        }
        var groups: [[BoundComparison]: [(values: [PredicateValue], operand: BoundPredicate)]] = [:]
        var shapes: [[BoundComparison]] = []
        for operand in operands {
            guard let (shape, values) = Self.shape(of: operand) else {
                parts.append(try predicate(operand, c))
                continue
            }
            if groups[shape] == nil { shapes.append(shape) }
            groups[shape, default: []].append((values, operand))
        }
        for shape in shapes {
            let rows = groups[shape] ?? []
            guard rows.count >= Self.shortestValueTable, let table = Self.jsonRows(rows.map(\.values)) else {
                for row in rows { parts.append(try predicate(row.operand, c)) }
                continue
            }
            parts.append(try valueTable(shape, table, c))
        }
        return .or(parts)
    }

    /// EXISTS over the rows of `table` (a JSON array of arrays), `shape`'s
    /// comparisons reading their constants from each row.
    mutating func valueTable(_ shape: [BoundComparison], _ table: String, _ c: SQLContext) throws(Failure) -> SQLExpression {
        var test: [SQLExpression] = []
        for comparison in shape { test.append(try self.comparison(comparison, c)) }
        let alias = newAlias()
        let row = SQLExpression.column(alias, "value", nullable: false)
        let condition = SQLExpression.and(test).replacingParameters { name in
            guard let index = Self.placeholderIndex(name) else { return nil }
            return .custom("json_extract", [row, .value(.text("$[\(index)]"))])
        }
        return .exists(SQLSelect([.literal(1)], from: .array(.value(.text(table)), alias: alias), where: [condition]))
    }

    /// The name of the placeholder of a shape's `index`th constant.
    static func placeholder(_ index: Int) -> String { "\u{1}value\(index)" }

    static func placeholderIndex(_ name: String) -> Int? {
        guard name.hasPrefix("\u{1}value") else { return nil }
        return Int(name.dropFirst(6))
    }

    /// A term as its shape (its comparisons, each constant a placeholder) and
    /// its constants; nil for a term that is not an AND of comparisons of an
    /// attribute with a constant that is not nil.
    static func shape(of term: BoundPredicate) -> ([BoundComparison], [PredicateValue])? {
        let comparisons: [BoundPredicate]
        switch term {
        case .comparison: comparisons = [term]
        case .and(let operands): comparisons = operands
        default: return nil
        }
        var shape: [BoundComparison] = []
        var values: [PredicateValue] = []
        for operand in comparisons {
            guard case .comparison(var comparison) = operand, comparison.quantifier == .direct,
                  [.equalTo, .notEqualTo, .lessThan, .lessThanOrEqualTo, .greaterThan, .greaterThanOrEqualTo]
                    .contains(comparison.operator), comparison.options.isEmpty,
                  isColumn(comparison.left), case .constant(let value) = comparison.right.kind else { return nil }
            switch value {
            case .int, .double, .string, .bool, .date: break
            default: return nil
            }
            comparison.right = BoundExpression(.parameter(placeholder(values.count)), type: comparison.right.type)
            shape.append(comparison)
            values.append(value)
        }
        return shape.isEmpty ? nil : (shape, values)
    }

    /// Whether an expression is an attribute of the evaluated object or of
    /// an object its to-one relationships reach (a column, joined).
    static func isColumn(_ e: BoundExpression) -> Bool {
        guard case .attribute(var base, _) = e.kind else { return false }
        while case .toOne(let next, _) = base.kind { base = next }
        if case .evaluatedObject = base.kind { return true }
        return false
    }

    /// The rows as a JSON array of arrays; nil when a value has no JSON form
    /// SQLite reads back as the same value (a non-finite number, text
    /// holding U+0000).
    static func jsonRows(_ rows: [[PredicateValue]]) -> String? {
        var text = "["
        for (r, row) in rows.enumerated() {
            if r > 0 { text += "," }
            text += "["
            for (i, value) in row.enumerated() {
                if i > 0 { text += "," }
                switch value {
                case .int(let n): text += String(n)
                case .bool(let b): text += b ? "1" : "0"
                case .double(let d):
                    guard d.isFinite else { return nil }
                    text += "\(d)"
                case .date(let date):
                    let d = date.timeIntervalSinceReferenceDate
                    guard d.isFinite else { return nil }
                    text += "\(d)"
                case .string(let s):
                    guard !s.utf8.contains(0) else { return nil }
                    text += "\""
                    for scalar in s.unicodeScalars {
                        switch scalar {
                        case "\"": text += "\\\""
                        case "\\": text += "\\\\"
                        case _ where scalar.value < 0x20:
                            let hex = String(scalar.value, radix: 16)
                            text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                        default: text.unicodeScalars.append(scalar)
                        }
                    }
                    text += "\""
                default:
                    return nil
                }
            }
            text += "]"
        }
        return text + "]"
    }
}
