// The table of Grammar/README.md, "Values without a model", row by row: each
// predicate against its value gives its result, or a typed evaluation error
// with a place in the text. The table is read from the grammar's README, so a
// row added there is tested here.

import Foundation
import Sift
import SiftStore
import Testing

struct DynamicSemanticsRow: Sendable, CustomTestStringConvertible {
    var predicate: String
    var value: String
    var result: String

    var testDescription: String { "\(predicate) with \(value)" }

    /// The rows of the table, from Grammar/README.md.
    static let all: [DynamicSemanticsRow] = {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Grammar/README.md")
        guard let text = try? String(contentsOf: url, encoding: .utf8),
              let start = text.range(of: "## Values without a model") else { return [] }
        var rows: [DynamicSemanticsRow] = []
        for line in text[start.upperBound...].split(separator: "\n") {
            if line.hasPrefix("## ") { break }
            guard line.hasPrefix("| `") else { continue }
            let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count == 3 else { continue }
            func code(_ cell: String) -> String { String(cell.dropFirst().dropLast()) }
            rows.append(DynamicSemanticsRow(predicate: code(cells[0]), value: code(cells[1]), result: cells[2]))
        }
        return rows
    }()
}

@Suite("Values without a model: the semantics table")
struct DynamicSemanticsTests {
    @Test func theTableIsThere() {
        #expect(DynamicSemanticsRow.all.count >= 40)
    }

    @Test("Every row of the table", arguments: DynamicSemanticsRow.all)
    func row(_ row: DynamicSemanticsRow) throws {
        let value = PredicateValue(commandLineArgument: row.value)
        let predicate = try FormatPredicate(format: row.predicate)
        switch row.result {
        case "true", "false":
            #expect(try predicate.evaluate(with: value) == (row.result == "true"))
        default:
            #expect(row.result == "error")
            let error = #expect(throws: PredicateEvaluationError.self) { try predicate.evaluate(with: value) }
            guard case .evaluation(let reason)? = error?.reason else { Issue.record("\(String(describing: error))"); return }
            // The message names the types, and the error points into the text.
            #expect(error?.range != nil, "\(reason)")
            #expect(error?.rendered().contains("^") == true)
        }
    }
}

@Suite("Run-time type checks stay out of model-bound predicates")
struct ModelBoundTypesTests {
    /// A template's `$variable` of another type compares false in memory, as
    /// SQL compares it, rather than stopping the evaluation: the two backends
    /// of a model must agree.
    @Test func aTemplateValueOfAnotherTypeComparesFalse() throws {
        let syntax = try PredicateParser.parse("age > $min")
        let bound = try Binder(model: Company.model, allowsParameters: true).bind(syntax, entity: "Employee")
        let filter = MemoryPredicate(bound, domain: RowNodeDomain(cache: Company.cache))
        let nodes = Company.cache.snapshot().nodes(entity: Company.model.entity(named: "Employee")!.index)
        let matching = try nodes.filter { try filter.evaluate($0, parameters: ["min": "old"]) }
        let template = try PredicateTemplate(store: CompanyStore.store, entityName: "Employee", predicate: "age > $min")
        #expect(matching.count == (try template.fetchObjectIDs(["min": "old"])).count)
    }
}
