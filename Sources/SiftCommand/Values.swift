// Values given on the command line (`--arg`, `--var`, `eval --value`): a
// value that starts as JSON does is JSON, and must be valid; anything
// else is a plain string.

import Foundation
import Sift

/// A value given on the command line with `option`: JSON when it starts as
/// JSON does (`{`, `[`, `"`, a digit, `-`, or is `true`, `false` or
/// `null`), and then it must parse (else a failure with where it stops
/// parsing); a plain string otherwise (`Legal`, `department.name`).
func commandLineValue(_ text: String, option: String) throws -> PredicateValue {
    let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
    guard let first = trimmed.first,
          "{[\"-0123456789".contains(first) || ["true", "false", "null"].contains(trimmed) else {
        return .string(text)
    }
    if let problem = jsonSyntaxProblem(in: trimmed) {
        throw CommandFailure(.invalidData, "\(option) '\(text)' starts as JSON but is not valid JSON: \(problem) "
                             + "(give a string as JSON, in double quotes, to keep it as text)")
    }
    do {
        return try JSONDecoder().decode(PredicateValue.self, from: Data(trimmed.utf8))
    } catch {
        throw CommandFailure(.invalidData, "\(option) '\(text)' is not a value: \(jsonProblem(error, in: trimmed))")
    }
}

/// Where `text` breaks JSON's grammar (RFC 8259), in the words of Sift's
/// JSON reader (`message at line L, column C`); nil when it is one valid value.
func jsonSyntaxProblem(in text: String) -> String? {
    do {
        _ = try JSONReader.value(from: Data(text.utf8))
        return nil
    } catch {
        return "\(error.message) at line \(error.line), column \(error.column)"
    }
}

/// What is wrong with `text` as JSON, in the decoder's words.
func jsonProblem(_ error: any Error, in text: String) -> String {
    if let problem = jsonSyntaxProblem(in: text) { return problem }
    var messages: [String] = []
    var next: (any Error)? = error
    while let current = next {
        next = nil
        switch current {
        case DecodingError.dataCorrupted(let context):
            messages.append(context.debugDescription)
            next = context.underlyingError
        case DecodingError.typeMismatch(_, let context), DecodingError.valueNotFound(_, let context),
             DecodingError.keyNotFound(_, let context):
            messages.append(context.debugDescription)
            next = context.underlyingError
        default:
            let nsError = current as NSError
            messages.append(nsError.userInfo[NSDebugDescriptionErrorKey] as? String ?? "\(current)")
            next = nsError.userInfo[NSUnderlyingErrorKey] as? any Error
        }
    }
    var sentence = (messages.last { $0 != "The given data was not valid JSON." } ?? messages.first ?? "not JSON")
        .trimmingCharacters(in: .whitespaces)
    if sentence.hasSuffix(".") { sentence.removeLast() }
    return sentence.prefix(1).lowercased() + sentence.dropFirst()
}
