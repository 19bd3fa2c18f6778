// Stage 1 (syntax): the catalog of syntax diagnostics and how they are shown.
//
// Every message the lexer, parser or argument substitution can produce is
// written here, once: lower-case, quoting the offending token, and saying what
// was expected so a person can fix the predicate.

import Foundation
import SiftValues

/// Why a predicate's text, or its format arguments, could not be parsed.
///
/// A reason that follows a token the grammar does not allow carries `found`:
/// that token as messages name it (`'x'`, `string "x"`), or nil at the end
/// of the text. Its message says what was expected (``expectation``), then
/// what was found: `expected an expression after '>', found ')'`.
public enum SyntaxErrorReason: Hashable, Sendable {
    /// The text is empty or only white space.
    case emptyPredicate
    /// A character that starts no token of the language.
    case unexpectedCharacter(String)
    /// Input continues after a complete predicate.
    case trailingInput(found: String)
    /// Where a predicate must start, a token that cannot start one
    /// (`, x`, `a == 1 AND ,`).
    case predicateExpected(found: String?)
    /// `AND`, `OR` or `NOT` (or `&&`, `||`, `!`) with no predicate after it:
    /// the text ends, or `)` comes.
    case missingPredicate(after: String, found: String?)
    /// Where an expression must start, a token that cannot start one
    /// (`a IN {,}`).
    case expressionExpected(found: String?)
    /// An operator, a quantifier, `:=`, `,` or `(` with no expression after it.
    case missingExpression(after: String, found: String?)
    /// A left operand not followed by a comparison operator.
    case comparisonOperatorExpected(found: String?)
    /// `[` after a comparison operator not followed by option letters.
    case optionsExpected(found: String?)
    /// Comparison options not closed by `]`.
    case unclosedOptions(found: String?)
    /// `.` not followed by a key or a `%K` argument.
    case keyExpected(found: String?)
    /// `[` not followed by an index, `FIRST`, `LAST` or `SIZE`.
    case indexExpected(found: String?)
    /// A `(` (opened at `column`) not closed by `)`.
    case unclosedParenthesis(column: Int, found: String?)
    /// An index's `[` (opened at `column`) not closed by `]`.
    case unclosedBracket(column: Int, found: String?)
    /// An aggregate's `{` or a function's `(` (opened at `column`) whose
    /// list goes on with neither `,` nor `close`.
    case unclosedList(open: String, close: String, column: Int, found: String?)
    /// Two arguments of `SUBQUERY`, `FUNCTION`, `TERNARY` or `CAST` (the
    /// `form`) not separated by `,`.
    case argumentSeparatorExpected(form: String, found: String?)
    /// A string literal is not closed before the end of the text.
    case unterminatedString
    /// A backslash escape inside a string literal is not one of the known ones.
    case invalidEscape(String)
    /// `\x` or `\u` not followed by `count` hexadecimal digits.
    case missingHexadecimalDigits(escape: String, count: Int)
    /// A number literal is malformed (`0b2`, `12abc`).
    case invalidNumber(String)
    /// A number literal whose exponent has no digits (`1e`, `2.5e+`).
    case missingExponentDigits(String)
    /// `0x`, `0o` or `0b` with no digits after it.
    case missingRadixDigits(String)
    /// An integer literal does not fit in 64 bits.
    case integerOverflow(String)
    /// A comparison option letter other than `c`, `d`, `n` or `l`.
    case unknownOption(String)
    /// `#` not followed by an identifier.
    case invalidEscapedIdentifier
    /// `$` not followed by a variable name.
    case invalidVariable
    /// A `%` that starts no known format specifier.
    case invalidFormatSpecifier(String)
    /// A format specifier with no argument left to fill it.
    case missingArgument(specifier: String, index: Int, given: Int)
    /// More arguments were given than the text has specifiers.
    case unusedArguments(used: Int, given: Int)
    /// An argument of the wrong kind for its specifier (`%K` given a number);
    /// `found` is the kind of value it was given ("a number").
    case wrongArgumentKind(specifier: String, expected: ArgumentKind, found: String)
    /// A key path given to `%K` that is not a dotted list of names.
    case invalidKeyPathArgument(String)
    /// The second argument of `SUBQUERY` must be a `$variable`.
    case subqueryVariableExpected
    /// The selector of `FUNCTION` must be a string.
    case functionSelectorExpected
    /// The type argument of `CAST` must be a string.
    case castTypeExpected
    /// A function written by its selector (`add:to:(…)`) with a number of
    /// arguments other than the selector takes.
    case selectorArgumentCount(selector: String, expected: Int, found: Int)
    /// Nesting deeper than ``/SiftValues/PredicateLimits/maximumDepth``.
    case nestingTooDeep(limit: Int)
    /// A chain of one operator longer than ``/SiftValues/PredicateLimits/maximumChain``.
    case chainTooLong(limit: Int)
    /// Text longer than ``/SiftValues/PredicateLimits/maximumLength``.
    case predicateTooLong(length: Int, limit: Int)
    /// More tokens than ``/SiftValues/PredicateLimits/maximumNodes``.
    case tooManyNodes(limit: Int)
    /// Parentheses that could open a predicate or an expression, nested so
    /// that trying both ways would take more than linear time.
    case tooAmbiguous

    /// What a format specifier needs its argument to be.
    public enum ArgumentKind: Hashable, Sendable, CustomStringConvertible {
        /// `%K`: a string holding a key path.
        case keyPath
        /// `%d`, `%i`, `%o`, `%u`, `%x`: a whole number.
        case integer
        /// `%c`: one character, or its code.
        case character
        /// `%s`: a string.
        case string
        /// `%f`, `%e`, `%g`, `%a`: a number.
        case number

        public var description: String {
            switch self {
            case .keyPath: "a key path string"
            case .integer: "an integer"
            case .character: "a character"
            case .string: "a string"
            case .number: "a number"
            }
        }
    }

    /// What the lexer or parser expected where it stopped, in words, when the
    /// reason says: "an expression after '>'". Messages of reasons with a
    /// `found` token start with it; for the lexer's reasons it is only
    /// ``PredicateSyntaxError/expected``.
    public var expectation: String? {
        switch self {
        case .predicateExpected: "a predicate"
        case .missingPredicate(let after, _): "a predicate after \(after)"
        case .expressionExpected: "an expression"
        case .missingExpression(let after, _): "an expression after \(after)"
        case .comparisonOperatorExpected: "a comparison operator such as '==', '<', IN or BEGINSWITH"
        case .optionsExpected: "comparison options such as c, d or cd"
        case .unclosedOptions: "']' to close the comparison options"
        case .keyExpected: "a key after '.'"
        case .indexExpected: "an index, FIRST, LAST or SIZE"
        case .unclosedParenthesis(let column, _): "')' to close the '(' at column \(column)"
        case .unclosedBracket(let column, _): "']' to close the '[' at column \(column)"
        case .unclosedList(let open, let close, let column, _): "',' or '\(close)' to close the '\(open)' at column \(column)"
        case .argumentSeparatorExpected(let form, _): "',' between the arguments of \(form)"
        // A lone `:` can only begin `:=` (or follow a selector's name), and
        // `@` only a collection operator.
        case .unexpectedCharacter(":"): "':='"
        case .unexpectedCharacter("@"): "a collection operator such as @count"
        case .unterminatedString: "a closing quote"
        case .missingHexadecimalDigits(_, let count): "\(count) hexadecimal digits"
        case .missingExponentDigits: "digits after the exponent"
        case .missingRadixDigits: "digits after the radix prefix"
        default: nil
        }
    }

    /// How a message names a token: quoted, and a string literal (given
    /// with its quotes) as `string "x"`.
    static func tokenName(_ text: String, isString: Bool = false) -> String {
        isString ? "string \(text)" : "'\(text)'"
    }
}

/// An error in the text of a predicate or in its format arguments.
///
/// It carries the position of the problem, both as a UTF-8 ``range`` and as a
/// ``location`` (line and column), what the parser ``expected`` there, and the
/// source line, so it can be shown the way compilers show errors:
///
/// ```
/// error: expected an expression after '>'
///  --> predicate:1:6
/// 1 | age >
///   |      ^
/// ```
public struct PredicateSyntaxError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var reason: SyntaxErrorReason
    /// Where it went wrong, in UTF-8 offsets of the source text.
    public var range: SourceRange
    /// The line and column of ``range``'s start.
    public var location: SourcePosition
    /// What the parser would have accepted here, in words, if it knows.
    public var expected: String?
    /// The full line of source text the error is on.
    public var sourceLine: String

    /// Creates an error for `range` in `text`; `expected` defaults to the
    /// reason's ``SyntaxErrorReason/expectation``.
    ///
    /// - Parameters:
    ///   - reason: What went wrong.
    ///   - range: Where it went wrong, in UTF-8 offsets of `text`.
    ///   - expected: What the parser would have accepted there, in words; nil
    ///     (the default) for the reason's own.
    ///   - text: The source text, for the error's line and column.
    public init(_ reason: SyntaxErrorReason, range: SourceRange, expected: String? = nil, in text: String) {
        self.reason = reason
        self.range = range
        self.expected = expected ?? reason.expectation
        self.location = SourcePosition(offset: range.lowerBound, in: text)
        self.sourceLine = String(text.line(containing: range.lowerBound))
    }

    /// The message, in one line.
    public var message: String {
        switch reason {
        case .emptyPredicate:
            return "empty predicate: expected a comparison, TRUEPREDICATE or FALSEPREDICATE"
        case .unexpectedCharacter(let c):
            return "unexpected character '\(c)'"
        case .trailingInput(let found):
            return "unexpected \(found) after the end of the predicate"
        case .predicateExpected(let found), .missingPredicate(_, let found), .expressionExpected(let found),
             .missingExpression(_, let found), .comparisonOperatorExpected(let found), .optionsExpected(let found),
             .unclosedOptions(let found), .keyExpected(let found), .indexExpected(let found),
             .unclosedParenthesis(_, let found), .unclosedBracket(_, let found), .unclosedList(_, _, _, let found),
             .argumentSeparatorExpected(_, let found):
            let expected = "expected \(reason.expectation!)"
            return found.map { "\(expected), found \($0)" } ?? expected
        case .unterminatedString:
            return "unterminated string literal: add the closing quote"
        case .invalidEscape(let e), .missingHexadecimalDigits(let e, _):
            return "invalid escape '\(e)' in string literal: use \\\\ \\' \\\" \\n \\t \\r \\0, \\ooo, \\xhh or \\uhhhh"
        case .invalidNumber(let text), .missingExponentDigits(let text), .missingRadixDigits(let text):
            return "invalid number '\(text)'"
        case .integerOverflow(let text):
            return "integer literal '\(text)' does not fit in 64 bits"
        case .unknownOption(let letters):
            return "unknown comparison option '\(letters)': options are the letters c, d, n and l, as in [cd]"
        case .invalidEscapedIdentifier:
            return "'#' must be followed by a name, as in #size"
        case .invalidVariable:
            return "'$' must be followed by a variable name, as in $limit"
        case .invalidFormatSpecifier(let text):
            return "unknown format specifier '\(text)': use %@, %K, %d, %f, %s or %% for a literal '%'"
        case .missingArgument(let specifier, let index, let given):
            return "format specifier '\(specifier)' needs argument \(index + 1), but only \(given) "
                + (given == 1 ? "was" : "were") + " given"
        case .unusedArguments(let used, let given):
            return "\(given) format arguments were given but the predicate uses only \(used)"
        case .wrongArgumentKind(let specifier, let expected, let found):
            return "format specifier '\(specifier)' needs \(expected), but its argument is \(found)"
        case .invalidKeyPathArgument(let text):
            return "'%K' needs a key path such as \"department.name\", but its argument is \"\(text)\""
        case .subqueryVariableExpected:
            return "the second argument of SUBQUERY must be a variable, as in SUBQUERY(reports, $r, $r.age < 30)"
        case .functionSelectorExpected:
            return "the selector of FUNCTION must be a quoted string"
        case .castTypeExpected:
            return "the type of CAST must be a quoted string"
        case .selectorArgumentCount(let selector, let expected, let found):
            return "'\(selector)' takes \(expected) argument\(expected == 1 ? "" : "s"), but \(found) "
                + (found == 1 ? "was" : "were") + " given"
        case .nestingTooDeep(let limit):
            return "predicate is nested too deeply (more than \(limit) levels)"
        case .chainTooLong(let limit):
            return "too many operands in one chain of arithmetic or set operators (the limit is \(limit)): "
                + "sum a collection with @sum or sum({…}) instead"
        case .predicateTooLong(let length, let limit):
            return "predicate is \(length) bytes long; the limit is \(limit) (PredicateLimits.maximumLength)"
        case .tooAmbiguous:
            return "the parentheses here could each open a predicate or an expression, and trying both ways "
                + "takes too long: remove parentheses that group nothing"
        case .tooManyNodes(let limit):
            return "predicate has more than \(limit) tokens (PredicateLimits.maximumNodes): "
                + "pass long lists of values as one argument, as in 'x IN %@'"
        }
    }

    /// The error as a compiler would show it, with the source line and a caret
    /// under the problem.
    ///
    /// - Parameters:
    ///   - sourceName: The name shown for the source, such as a file's path.
    ///   - firstLine: The line number of the predicate's first line in that
    ///     source, for a predicate read from a line of a file.
    /// - Returns: The diagnostic: `error:` and the message, the source name,
    ///   line and column, the source line and carets under the problem.
    public func rendered(sourceName: String = "predicate", firstLine: Int = 1) -> String {
        SourceDiagnostic(message: message, range: range, location: location, sourceLine: sourceLine)
            .rendered(sourceName: sourceName, firstLine: firstLine)
    }

    public var description: String {
        "\(location.line):\(location.column): error: \(message)"
    }
}

/// An error about a place in a predicate's text: a syntax error, a
/// validation error, a compile error that is either, or an evaluation error.
///
/// One `catch` shows any of them under its line, whichever stage raised it:
///
/// ```swift
/// let format = "name BEGINSWITH 3"
/// do {
///     try FormatPredicate(format: format).evaluate(with: ["name": "Ann"])
/// } catch let error as any PredicateTextError {
///     print(error.rendered(in: format))
/// }
/// ```
public protocol PredicateTextError: Error, CustomStringConvertible {
    /// The error shown under the line of `text` it is about.
    ///
    /// - Parameters:
    ///   - text: The predicate's text the error is about (an error that kept its line or its format
    ///     shows that one).
    ///   - sourceName: The name shown for the source, such as a file's path.
    /// - Returns: The diagnostic: `error:` and the message, the source name, line and column, the
    ///   line and carets under the place when it is known.
    func rendered(in text: String, sourceName: String) -> String
}

extension PredicateTextError {
    /// The error shown under the line of `text` it is about, the source named `predicate`.
    ///
    /// - Parameter text: The predicate's text the error is about.
    /// - Returns: The diagnostic, as ``rendered(in:sourceName:)`` gives it.
    public func rendered(in text: String) -> String { rendered(in: text, sourceName: "predicate") }
}

extension PredicateSyntaxError: PredicateTextError {
    /// The error under the line it kept (`text` is not needed: a syntax
    /// error keeps its line).
    ///
    /// - Parameters:
    ///   - text: The predicate's text (unused: the error kept its line).
    ///   - sourceName: The name shown for the source.
    /// - Returns: The diagnostic, as ``rendered(sourceName:firstLine:)`` gives it.
    public func rendered(in text: String, sourceName: String) -> String { rendered(sourceName: sourceName) }
}

extension PredicateSyntaxError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}

/// A message about a place in predicate text, shown the way compilers show
/// errors. Syntax errors and the later stages' errors render through it.
public struct SourceDiagnostic: Hashable, Sendable {
    /// What is wrong, in one line, printed after `error:`.
    public var message: String
    /// The part of the text the diagnostic is about, as UTF-8 byte offsets;
    /// the carets are drawn under it.
    public var range: SourceRange
    /// The line and column where `range` starts.
    public var location: SourcePosition
    /// The text of the line that holds the start of `range`, shown above the
    /// carets.
    public var sourceLine: String
    /// A line of advice printed under the caret, if any.
    public var note: String?
    /// Whether it is an error (the default) or a warning: the word its first
    /// line starts with.
    public var severity: Severity = .error

    /// How serious a diagnostic is.
    public enum Severity: String, Hashable, Sendable {
        /// The text cannot be used as it is.
        case error
        /// The text is used, but probably does not say what was meant.
        case warning
    }

    /// Creates a diagnostic from a location already worked out.
    ///
    /// - Parameters:
    ///   - message: What is wrong, in one line.
    ///   - range: The part of the text the diagnostic is about, as UTF-8
    ///     byte offsets.
    ///   - location: The line and column where `range` starts.
    ///   - sourceLine: The text of the line that holds the start of `range`.
    ///   - note: A line of advice printed under the caret, if any.
    public init(message: String, range: SourceRange, location: SourcePosition, sourceLine: String, note: String? = nil) {
        self.message = message
        self.range = range
        self.location = location
        self.sourceLine = sourceLine
        self.note = note
    }

    /// Locates `range` in `text`.
    ///
    /// - Parameters:
    ///   - message: What is wrong, in one line.
    ///   - range: The part of `text` the diagnostic is about, as UTF-8 byte
    ///     offsets.
    ///   - text: The whole source text, for the line and column of `range`.
    ///   - note: A line of advice printed under the caret, if any.
    public init(message: String, range: SourceRange, in text: String, note: String? = nil) {
        self.init(message: message, range: range, location: SourcePosition(offset: range.lowerBound, in: text),
                  sourceLine: String(text.line(containing: range.lowerBound)), note: note)
    }

    /// The diagnostic with the source line and a caret under the problem. A
    /// line longer than ``windowWidth`` characters is shown as a window
    /// around the caret, with `…` where it was cut.
    ///
    /// - Parameters:
    ///   - sourceName: The name shown for the source, such as a file's path
    ///     (`"predicate"` by default).
    ///   - firstLine: The line number of the text's first line in that source
    ///     (1 by default).
    /// - Returns: The lines `error: message`, `--> source:line:column`, the
    ///   numbered source line and the carets, then `= note:` when there is a
    ///   note.
    public func rendered(sourceName: String = "predicate", firstLine: Int = 1) -> String {
        let line = location.line + firstLine - 1
        let lineNumber = String(line)
        let gutter = String(repeating: " ", count: lineNumber.count)
        let characters = Array(sourceLine)
        let column = max(0, min(location.column - 1, characters.count))
        let width = max(1, min(caretWidth, characters.count - column))
        // The part of the line shown: all of it, or a window around the caret.
        var start = 0
        var end = characters.count
        if characters.count > Self.windowWidth {
            let shownCaret = min(width, Self.windowWidth / 2)
            start = max(0, min(column - Self.windowWidth / 4, characters.count - Self.windowWidth))
            end = min(characters.count, max(start + Self.windowWidth, column + shownCaret))
        }
        let shown = String(characters[start..<end])
        let lead = start > 0 ? "…" : ""
        let trail = end < characters.count ? "…" : ""
        // Columns count characters; tabs are kept so the caret lines up.
        let pad = (lead.isEmpty ? "" : " ") + characters[start..<column].map { $0 == "\t" ? "\t" : " " }.joined()
        let carets = min(width, end - column)
        var text = "\(severity.rawValue): \(message)\n"
        text += "\(gutter)--> \(sourceName):\(line):\(location.column)\n"
        text += "\(lineNumber) | \(lead)\(shown)\(trail)\n"
        text += "\(gutter) | \(pad)\(String(repeating: "^", count: max(1, carets)))"
        if let note { text += "\n\(gutter) = note: \(note)" }
        return text
    }

    /// The most characters of a source line a rendered diagnostic shows.
    public static let windowWidth = 100

    /// How many characters of the source line the range covers (at least one).
    private var caretWidth: Int {
        let length = range.upperBound - range.lowerBound
        guard length > 0 else { return 1 }
        var bytes = 0
        var characters = 0
        for character in sourceLine.dropFirst(location.column - 1) {
            if bytes >= length { break }
            bytes += character.utf8.count
            characters += 1
        }
        return max(1, characters)
    }
}

/// Something a predicate's text says that Apple's Foundation accepts, and so
/// does Sift, but that is almost always a mistake: an escape Apple reads by
/// dropping its backslash, or comparison options on values that are not
/// strings. Evaluation goes on as Apple's would; the warning says where.
///
/// ```swift
/// var warnings: [PredicateWarning] = []
/// _ = try PredicateParser.parse(#"name MATCHES '\d+'"#, warnings: &warnings)
/// print(warnings[0].message)   // unknown escape '\d' reads as 'd' (as Apple's parser reads it) …
/// ```
public struct PredicateWarning: Hashable, Sendable, CustomStringConvertible {
    /// What the warning is about.
    public enum Reason: Hashable, Sendable {
        /// A backslash escape inside a string literal that is not one of the
        /// known ones, read as the character without its backslash (the
        /// escape as written: `\d`).
        case unknownEscape(String)
        /// Comparison options (`[c]`, `[cd]`, as written) on a comparison of
        /// values that are not strings (`type` names them): they change
        /// nothing.
        case optionsIgnored(options: String, type: String)
    }

    /// What the warning is about.
    public var reason: Reason
    /// Where, in UTF-8 offsets of the source text.
    public var range: SourceRange

    /// Creates a warning.
    ///
    /// - Parameters:
    ///   - reason: What the warning is about.
    ///   - range: Where, in UTF-8 offsets of the source text.
    public init(_ reason: Reason, range: SourceRange) {
        self.reason = reason
        self.range = range
    }

    /// The warning's message, in one line.
    public var message: String {
        switch reason {
        case .unknownEscape(let escape):
            let character = String(escape.dropFirst())
            return "unknown escape '\(escape)' reads as '\(character)' (as Apple's parser reads it): "
                + "write '\\\\\(character)' for a backslash in the string"
        case .optionsIgnored(let options, let type):
            return "the options \(options) apply to strings; on \(type) they change nothing"
        }
    }

    /// The warning as a compiler shows it, with the source line and a caret
    /// under the place.
    ///
    /// - Parameters:
    ///   - text: The predicate's text the warning's range is in.
    ///   - sourceName: The name shown for the source (`"predicate"` by default).
    /// - Returns: `warning:` and the message, the source name, line and
    ///   column, the source line and carets under the place.
    public func rendered(in text: String, sourceName: String = "predicate") -> String {
        var diagnostic = SourceDiagnostic(message: message, range: range, in: text)
        diagnostic.severity = .warning
        return diagnostic.rendered(sourceName: sourceName)
    }

    public var description: String { "warning: \(message)" }
}
