// The texts a command compiles and where each came from — the predicate
// argument, or an option's value (`--set`, `--select`, `--having`,
// `--sort`, `--group-by`) — so that a diagnostic is labelled with the
// option and its caret falls under the text the user typed.

import Foundation
import Sift
import SiftStore

/// A text a command compiles, and where it came from.
struct SourceText {
    /// The name diagnostics give it: `predicate`, `--set`, `--select`, ….
    var name: String
    /// The text as the user typed it (`titel=title` for `--set`).
    var given: String
    /// The part compiled (`title`).
    var compiled: String
    /// The UTF-8 offset of `compiled` in `given`.
    var offset: Int
    /// The attribute a `--set` assigns.
    var assignedName: String?
    /// Where, in `given`, the attribute a `--set` assigns is named.
    var nameRange: SourceRange?

    /// A text compiled as it was given (a predicate, `--having`), or a part
    /// of it found in it (`--select`'s expression, `--sort`'s key path).
    init(_ name: String, given: String, compiled: String? = nil) {
        self.name = name
        self.given = given
        self.compiled = compiled ?? given
        let found = given.range(of: self.compiled)
        self.offset = found.map { given.utf8.distance(from: given.startIndex, to: $0.lowerBound) } ?? 0
    }

    /// A `--set NAME=EXPRESSION`: the expression compiled, the name an attribute.
    init(assignment given: String, name: String, expression: String) {
        self.name = "--set"
        self.given = given
        self.compiled = expression
        self.assignedName = name
        let equals = given.firstIndex(of: "=") ?? given.endIndex
        self.offset = given.utf8.distance(from: given.startIndex, to: equals) + 1
        let nameStart = given[..<equals].firstIndex { !$0.isWhitespace } ?? given.startIndex
        let nameEnd = given[..<equals].lastIndex { !$0.isWhitespace }.map { given.index(after: $0) } ?? equals
        nameRange = SourceRange(given.utf8.distance(from: given.startIndex, to: nameStart),
                                given.utf8.distance(from: given.startIndex, to: max(nameStart, nameEnd)))
    }

    /// `error`, about the compiled part, shown under the text as given.
    func render(_ error: PredicateCompileError) -> String {
        switch error {
        case .syntax(let e):
            return SourceDiagnostic(message: e.message, range: shifted(e.range), in: given).rendered(sourceName: name)
        case .validation(let e):
            var range = shifted(e.range)
            // An assignment's own attribute (the binder puts its errors at 0): the name before the `=`.
            if let nameRange, e.range == .at(0) {
                switch e.reason {
                case .unknownKey(let key, _, _) where key == assignedName: range = nameRange
                case .cannotAssign(let key, _) where key == assignedName: range = nameRange
                default: break
                }
            }
            return SourceDiagnostic(message: e.message, range: range, in: given, note: e.hint).rendered(sourceName: name)
        }
    }

    private func shifted(_ range: SourceRange) -> SourceRange {
        SourceRange(range.lowerBound + offset, range.upperBound + offset)
    }
}

extension CommandFailure {
    /// A store's error, a diagnostic about one of `sources` (found by the
    /// text it is about) shown under that text as the user gave it.
    init(_ error: StoreError, sources: [SourceText]) {
        switch error {
        case .invalidPredicate(let e, let text):
            if let source = sources.first(where: { $0.compiled == text }) {
                self.init(.invalidData, diagnostic: source.render(e))
                return
            }
        case .notExpressibleInSQL(let e, let range?, let text?):
            if let source = sources.first(where: { $0.compiled == text }) {
                let shifted = SourceRange(range.lowerBound + source.offset, range.upperBound + source.offset)
                self.init(.invalidData, diagnostic: SourceDiagnostic(message: e.description, range: shifted, in: source.given)
                    .rendered(sourceName: source.name))
                return
            }
        default:
            break
        }
        self.init(error)
    }
}

/// Runs `body`; a store error about one of `sources` is shown under it.
func diagnosing<T>(_ sources: [SourceText], _ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as StoreError {
        throw CommandFailure(error, sources: sources)
    }
}

/// The did-you-mean of a name not found among `candidates`: `; did you mean 'x'?`, or nothing.
func suggestion(for name: String, among candidates: [String]) -> String {
    PredicateValidationError.suggestion(for: name, among: candidates).map { "; did you mean '\($0)'?" } ?? ""
}

/// Checks that `model` has the entity `name` (given with `option`).
func checkEntity(_ name: String, in model: DataModel) throws {
    guard model.entity(named: name) == nil else { return }
    throw CommandFailure(.invalidData, "no entity '\(name)' in the model"
                         + suggestion(for: name, among: model.entities.map(\.name)))
}
