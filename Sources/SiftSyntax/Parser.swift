// Stage 1 (syntax): the parser.
//
// A hand-written recursive-descent parser over the lexer's tokens. Each
// `parseX` method is named after the nonterminal `x` of Grammar/Predicate.ebnf
// and parses exactly that rule. Format arguments are substituted as their
// specifiers are met, so the tree it returns holds values, not placeholders.
//
// The grammar is LL(1) but in one place: a `(` that starts a predicate may open
// either a parenthesized predicate or a parenthesized expression, as in
// `(a > 1)` and `(a + b) > 1`. The two languages are disjoint, so the parser
// tries the predicate, and if that fails, parses a comparison from the same
// token, reporting whichever error got further.
//
// The text's length, its token count, its nesting and the length of each
// operator chain are capped by `PredicateLimits`, so hostile input gets an
// error instead of exhausting the stack or the clock; below the caps parsing is
// linear in the length of the text.

import SiftValues

/// Parses the text of a predicate into a ``PredicateSyntax`` tree.
///
/// ```swift
/// let tree = try PredicateParser.parse("ANY reports.salary > %@", arguments: [100_000])
/// print(tree)   // ANY reports.salary > 100000
/// ```
///
/// Errors are ``PredicateSyntaxError`` values with the position of the problem.
public enum PredicateParser {
    /// The deepest nesting a predicate may have.
    @available(*, deprecated, renamed: "PredicateLimits.standard.maximumDepth")
    public static var maximumDepth: Int { PredicateLimits.standard.maximumDepth }

    /// The most stack, in bytes, one parse may use. Whatever the nesting, the
    /// parser stops with ``SyntaxErrorReason/nestingTooDeep(limit:)`` before
    /// it uses more. A release build needs about 5 KiB a level, so the default
    /// ``/SiftValues/PredicateLimits/maximumDepth`` fits; a debug build needs about 16 KiB
    /// a level and may stop sooner. Threads on Linux have 8 MiB of stack by
    /// default.
    public static let stackBudget = 1024 * 1024

    /// Parses a predicate, filling its format specifiers (`%@`, `%K`, `%d`, …)
    /// from `arguments` in order, within ``/SiftValues/PredicateLimits/standard``.
    ///
    /// - Parameters:
    ///   - text: The predicate's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order (none by
    ///     default).
    /// - Returns: The predicate's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not a predicate (an
    ///   unexpected character or token, an unterminated string, a bad number),
    ///   when the arguments do not match its specifiers (too few, too many, or
    ///   of the wrong kind), or when it passes the standard limits.
    public static func parse(
        _ text: String, arguments: [PredicateValue] = []
    ) throws(PredicateSyntaxError) -> PredicateSyntax {
        try parse(text, arguments: arguments, limits: .standard)
    }

    /// Parses a predicate as ``parse(_:arguments:)`` does, within `limits`.
    ///
    /// - Parameters:
    ///   - text: The predicate's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order (none by
    ///     default).
    ///   - limits: The most length, tokens, nesting and chain length to accept.
    /// - Returns: The predicate's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not a predicate, when
    ///   the arguments do not match its specifiers, or when it passes `limits`.
    public static func parse(
        _ text: String, arguments: [PredicateValue] = [], limits: PredicateLimits
    ) throws(PredicateSyntaxError) -> PredicateSyntax {
        var warnings: [PredicateWarning] = []
        return try parse(text, arguments: arguments, limits: limits, warnings: &warnings)
    }

    /// Parses a predicate as ``parse(_:arguments:limits:)`` does, and adds to
    /// `warnings` what the text says that Apple's parser accepts but is almost
    /// always a mistake (an unknown escape such as `'\d'`, read as `d`).
    ///
    /// - Parameters:
    ///   - text: The predicate's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order (none by
    ///     default).
    ///   - limits: The most length, tokens, nesting and chain length to accept
    ///     (the standard limits by default).
    ///   - warnings: Where the text's warnings are added, in the order met.
    /// - Returns: The predicate's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not a predicate, when
    ///   the arguments do not match its specifiers, or when it passes `limits`.
    public static func parse(
        _ text: String, arguments: [PredicateValue] = [], limits: PredicateLimits = .standard,
        warnings: inout [PredicateWarning]
    ) throws(PredicateSyntaxError) -> PredicateSyntax {
        try Parser.run(text, arguments, limits, warnings: &warnings) { (parser: inout Parser) throws(SyntaxErrorAt) in
            try parser.parsePredicate()
        }
    }

    /// Parses a predicate as ``parse(_:arguments:limits:warnings:)`` does,
    /// except that the arguments at `slots` (by index) are not put in place:
    /// each `%@` (or `%d`, `%i`, `%s`) they fill becomes the variable
    /// ``argumentSlotName(_:)`` of its index, so that the tree serves every
    /// value of that argument (a compiled fetch, cached per shape). An
    /// argument whose specifier is another (`%K`, `%c`, `%f`…) is put in
    /// place as usual, and is not among the tree's variables.
    package static func parse(
        _ text: String, arguments: [PredicateValue], slots: Set<Int>
    ) throws(PredicateSyntaxError) -> PredicateSyntax {
        var warnings: [PredicateWarning] = []
        return try Parser.run(text, arguments, .standard, slots: slots, warnings: &warnings) {
            (parser: inout Parser) throws(SyntaxErrorAt) in try parser.parsePredicate()
        }
    }

    /// The name of the variable that stands for the argument at `index` in a
    /// tree parsed with slots: `%` and the index, which no `$variable` can be.
    package static func argumentSlotName(_ index: Int) -> String { "%\(index)" }

    /// Parses a predicate, converting each argument with ``/SiftValues/PredicateValueConvertible``.
    ///
    /// - Parameters:
    ///   - text: The predicate's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order.
    /// - Returns: The predicate's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not a predicate, when
    ///   the arguments do not match its specifiers, or when it passes the
    ///   standard limits.
    public static func parse(
        _ text: String, _ arguments: any PredicateValueConvertible...
    ) throws(PredicateSyntaxError) -> PredicateSyntax {
        try parse(text, arguments: arguments.map(\.predicateValue))
    }

    /// Parses an expression on its own, such as `department.name` or `salary * 12`
    /// (the key of a sort descriptor, the value of a `$variable`).
    ///
    /// - Parameters:
    ///   - text: The expression's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order (none by
    ///     default).
    ///   - limits: The most length, tokens, nesting and chain length to accept
    ///     (the standard limits by default).
    /// - Returns: The expression's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not an expression,
    ///   when the arguments do not match its specifiers, or when it passes
    ///   `limits`.
    public static func parseExpression(
        _ text: String, arguments: [PredicateValue] = [], limits: PredicateLimits = .standard
    ) throws(PredicateSyntaxError) -> ExpressionSyntax {
        var warnings: [PredicateWarning] = []
        return try parseExpression(text, arguments: arguments, limits: limits, warnings: &warnings)
    }

    /// Parses an expression as ``parseExpression(_:arguments:limits:)`` does,
    /// and adds the text's warnings to `warnings`.
    ///
    /// - Parameters:
    ///   - text: The expression's text, in the format language.
    ///   - arguments: The values of its format specifiers, in order (none by
    ///     default).
    ///   - limits: The most length, tokens, nesting and chain length to accept
    ///     (the standard limits by default).
    ///   - warnings: Where the text's warnings are added, in the order met.
    /// - Returns: The expression's syntax tree, with the arguments in place.
    /// - Throws: `PredicateSyntaxError` when the text is not an expression,
    ///   when the arguments do not match its specifiers, or when it passes
    ///   `limits`.
    public static func parseExpression(
        _ text: String, arguments: [PredicateValue] = [], limits: PredicateLimits = .standard,
        warnings: inout [PredicateWarning]
    ) throws(PredicateSyntaxError) -> ExpressionSyntax {
        try Parser.run(text, arguments, limits, warnings: &warnings) { (parser: inout Parser) throws(SyntaxErrorAt) in
            try parser.parseExpression()
        }
    }
}

/// An address in the caller's stack frame: the stack grows down on every
/// platform Swift runs on, so the difference of two such addresses is the stack
/// used between them.
@inline(never)
func currentStackAddress() -> UInt {
    var marker: UInt8 = 0
    return withUnsafeMutablePointer(to: &marker) { UInt(bitPattern: $0) }
}

/// How many tokens a parse has read, backtracking included.
final class WorkCounter {
    var tokens = 0
}

struct Parser {
    let text: String
    var lexer: Lexer
    /// The current token.
    var token = Token(kind: .end, start: 0, end: 0)
    /// The end of the token before the current one.
    var previousEnd = 0
    let arguments: [PredicateValue]
    /// The indices of the arguments that become variables instead of values.
    var slots: Set<Int> = []
    var argumentIndex = 0
    var depth = 0
    /// The tokens read so far.
    var tokenCount = 0
    /// Whether the current `(` directly follows `NOT`: `NOT (…)` is one
    /// level of nesting, as the printer writes `NOT` before a comparison.
    var parenthesisAfterNot = false
    let limits: PredicateLimits
    /// The tokens read so far counting those read again after backing off
    /// (shared by the copies a backtrack restores, so it only grows), and the
    /// most allowed: each level of nesting may read the text once more.
    let work = WorkCounter()
    let workLimit: Int
    /// The stack address where parsing started.
    let stackBase = currentStackAddress()

    init(text: String, bytes: UnsafeBufferPointer<UInt8>, arguments: [PredicateValue], limits: PredicateLimits) {
        self.text = text
        self.lexer = Lexer(bytes: bytes)
        self.arguments = arguments
        self.limits = limits
        let (product, overflow) = (max(limits.maximumDepth, 0) + 4).multipliedReportingOverflow(by: bytes.count + 16)
        self.workLimit = overflow ? .max : product
    }

    /// Parses the whole of `text` with `rule`, then checks that nothing is left
    /// over and every argument was used.
    static func run<T>(
        _ text: String, _ arguments: [PredicateValue], _ limits: PredicateLimits, slots: Set<Int> = [],
        warnings: inout [PredicateWarning], _ rule: (inout Parser) throws(SyntaxErrorAt) -> T
    ) throws(PredicateSyntaxError) -> T {
        let length = text.utf8.count
        guard length <= limits.maximumLength else {
            throw PredicateSyntaxError(.predicateTooLong(length: length, limit: limits.maximumLength),
                                       range: SourceRange(limits.maximumLength, length), in: text)
        }
        let result = Lexer.withUTF8(of: text) { bytes -> Result<(T, [PredicateWarning]), SyntaxErrorAt> in
            var parser = Parser(text: text, bytes: bytes, arguments: arguments, limits: limits)
            parser.slots = slots
            do throws(SyntaxErrorAt) {
                let value = try parser.parseAll(rule)
                return .success((value, parser.lexer.warnings))
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let (value, found)):
            warnings += found
            return value
        case .failure(let error):
            throw PredicateSyntaxError(error.reason, range: error.range, in: text)
        }
    }

    mutating func parseAll<T>(_ rule: (inout Parser) throws(SyntaxErrorAt) -> T) throws(SyntaxErrorAt) -> T {
        try advance()
        if token.kind == .end {
            throw SyntaxErrorAt(.emptyPredicate, token.range)
        }
        let result = try rule(&self)
        guard token.kind == .end else {
            throw SyntaxErrorAt(.trailingInput(found: describe(token)), token.range)
        }
        if argumentIndex < arguments.count {
            throw SyntaxErrorAt(.unusedArguments(used: argumentIndex, given: arguments.count),
                                SourceRange(0, lexer.bytes.count))
        }
        return result
    }

    // MARK: Tokens

    /// The text of a name, variable, string literal or format specifier token.
    func text(of t: Token) -> String {
        switch t.kind {
        case .string:
            return t.hasEscapes ? lexer.decodedString : lexer.text(t.contentStart, t.end - 1)
        default:
            return lexer.text(t.contentStart, t.end)
        }
    }

    mutating func advance() throws(SyntaxErrorAt) {
        previousEnd = token.end
        token = try lexer.next()
        tokenCount += 1
        if tokenCount > limits.maximumNodes {
            throw SyntaxErrorAt(.tooManyNodes(limit: limits.maximumNodes), token.range)
        }
        work.tokens += 1
        if work.tokens > workLimit {
            throw SyntaxErrorAt(.tooAmbiguous, token.range)
        }
    }

    /// How a message names a token other than the end of the text.
    func describe(_ t: Token) -> String {
        SyntaxErrorReason.tokenName(lexer.text(t.start, t.end), isString: t.kind == .string)
    }

    /// The current token as a message names what it found instead of what
    /// was expected, or nil at the end of the text.
    var found: String? { token.kind == .end ? nil : describe(token) }

    /// The text of the token that was just consumed, quoted, for "after X".
    func previousTokenText(_ t: Token) -> String { SyntaxErrorReason.tokenName(lexer.text(t.start, t.end)) }

    /// An error at the current token, for the reason `reason` gives when
    /// told what was found there.
    ///
    /// The reason is made in the closure's frame rather than the caller's:
    /// the parser's methods recurse once a level of nesting, and in a debug
    /// build the temporaries of a reason made in each would be on the stack at
    /// every level (``PredicateParser/stackBudget``).
    func unexpected(_ reason: (_ found: String?) -> SyntaxErrorReason) -> SyntaxErrorAt {
        SyntaxErrorAt(reason(found), token.range)
    }

    /// Consumes a token of `kind`, or fails with the reason `reason` makes of
    /// the token found instead.
    mutating func expect(_ kind: TokenKind, or reason: (_ found: String?) -> SyntaxErrorReason) throws(SyntaxErrorAt) {
        guard token.kind == kind else { throw unexpected(reason) }
        try advance()
    }

    /// Enters one level of nesting.
    mutating func nest() throws(SyntaxErrorAt) {
        depth += 1
        if depth > limits.maximumDepth
            || stackBase &- currentStackAddress() > UInt(PredicateParser.stackBudget)
        {
            throw SyntaxErrorAt(.nestingTooDeep(limit: limits.maximumDepth), token.range)
        }
    }

    /// Counts one more operator of a left-leaning chain (`+ -`, `* /`, the
    /// set operators): its length is capped, its nesting is not counted.
    func extendChain(_ length: inout Int, at op: Token) throws(SyntaxErrorAt) {
        length += 1
        if length >= limits.maximumChain {
            throw SyntaxErrorAt(.chainTooLong(limit: limits.maximumChain), op.range)
        }
    }

    /// Whether the current token is the unescaped name `word` (any case).
    func isName(_ word: StaticString) -> Bool {
        token.kind == .identifier && !token.escaped && lexer.matchesWord(word, at: token.start)
            && token.end - token.start == word.utf8CodeUnitCount
    }

    // MARK: Predicates

    /// predicate = or-predicate
    mutating func parsePredicate() throws(SyntaxErrorAt) -> PredicateSyntax {
        try parseOrPredicate()
    }

    /// or-predicate = and-predicate { ("OR" | "||") and-predicate }
    mutating func parseOrPredicate() throws(SyntaxErrorAt) -> PredicateSyntax {
        let first = try parseAndPredicate()
        guard isOr else { return first }
        var operands = [first]
        while isOr {
            let op = token
            try advance()
            guard startsPredicate else {
                throw unexpected { .missingPredicate(after: previousTokenText(op), found: $0) }
            }
            operands.append(try parseAndPredicate())
        }
        return PredicateSyntax(.or(operands), range: first.range.union(operands.last!.range))
    }

    var isOr: Bool { token.kind == .keyword(.or) || token.kind == .orOr }
    var isAnd: Bool { token.kind == .keyword(.and) || token.kind == .andAnd }
    /// Whether the current token can start a predicate (for better messages).
    var startsPredicate: Bool { token.kind != .end && token.kind != .rightParen }

    /// and-predicate = not-predicate { ("AND" | "&&") not-predicate }
    mutating func parseAndPredicate() throws(SyntaxErrorAt) -> PredicateSyntax {
        let first = try parseNotPredicate()
        guard isAnd else { return first }
        var operands = [first]
        while isAnd {
            let op = token
            try advance()
            guard startsPredicate else {
                throw unexpected { .missingPredicate(after: previousTokenText(op), found: $0) }
            }
            operands.append(try parseNotPredicate())
        }
        return PredicateSyntax(.and(operands), range: first.range.union(operands.last!.range))
    }

    /// not-predicate = ("NOT" | "!") not-predicate | primary-predicate
    mutating func parseNotPredicate() throws(SyntaxErrorAt) -> PredicateSyntax {
        guard token.kind == .keyword(.not) || token.kind == .bang else { return try parsePrimaryPredicate() }
        let op = token
        try nest()
        defer { depth -= 1 }
        try advance()
        guard startsPredicate else { throw unexpected { .missingPredicate(after: previousTokenText(op), found: $0) } }
        parenthesisAfterNot = token.kind == .leftParen
        let operand = try parseNotPredicate()
        return PredicateSyntax(.not(operand), range: op.range.union(operand.range))
    }

    /// primary-predicate = "TRUEPREDICATE" | "FALSEPREDICATE" | "(" predicate ")" | comparison
    mutating func parsePrimaryPredicate() throws(SyntaxErrorAt) -> PredicateSyntax {
        switch token.kind {
        case .keyword(.truePredicate), .keyword(.falsePredicate):
            let t = token
            try advance()
            return PredicateSyntax(.constant(t.kind == .keyword(.truePredicate)), range: t.range)
        case .leftParen:
            let saved = self
            let counted = !parenthesisAfterNot
            parenthesisAfterNot = false
            do throws(SyntaxErrorAt) {
                let open = token
                if counted { try nest() }
                try advance()
                var inner = try parsePredicate()
                guard token.kind == .rightParen else {
                    throw unexpected { .unclosedParenthesis(column: column(of: open), found: $0) }
                }
                inner.range = open.range.union(token.range)
                try advance()
                if counted { depth -= 1 }
                return inner
            } catch let asPredicate where !asPredicate.isFatal {
                // Perhaps the parenthesis opens an expression: `(a + b) > 1`.
                self = saved
                parenthesisAfterNot = false
                do throws(SyntaxErrorAt) {
                    return try parseComparison()
                } catch let asComparison {
                    throw asComparison.isFatal || asComparison.range.lowerBound > asPredicate.range.lowerBound
                        ? asComparison : asPredicate
                }
            }
        default:
            return try parseComparison()
        }
    }

    func column(of t: Token) -> Int { SourcePosition(offset: t.start, in: text).column }

    /// comparison = [ quantifier ] expression comparison-operator [ options ] expression
    /// quantifier = "ANY" | "SOME" | "ALL" | "NONE"
    mutating func parseComparison() throws(SyntaxErrorAt) -> PredicateSyntax {
        let start = token
        var quantifier = Quantifier.direct
        switch token.kind {
        case .keyword(.any), .keyword(.some): quantifier = .any
        case .keyword(.all): quantifier = .all
        case .keyword(.none): quantifier = .none
        default: break
        }
        if quantifier != .direct { try advance() }
        guard startsExpression else {
            throw unexpected {
                quantifier == .direct ? .predicateExpected(found: $0)
                    : .missingExpression(after: previousTokenText(start), found: $0)
            }
        }
        let left = try parseExpression()
        let (op, opToken) = try parseComparisonOperator()
        let options = try parseOptions()
        let right = try parseOperand(after: opToken)
        let comparison = ComparisonSyntax(left, op, options: options, right, quantifier: quantifier)
        return PredicateSyntax(.comparison(comparison), range: start.range.union(right.range))
    }

    /// comparison-operator = "==" | "=" | "!=" | "<>" | "<" | "<=" | "=<" | ">" | ">=" | "=>"
    ///                     | "BETWEEN" | "IN" | "CONTAINS" | "BEGINSWITH" | "ENDSWITH"
    ///                     | "LIKE" | "MATCHES" | "UTI-CONFORMS-TO" | "UTI-EQUALS"
    mutating func parseComparisonOperator() throws(SyntaxErrorAt) -> (ComparisonOperator, Token) {
        let op: ComparisonOperator
        switch token.kind {
        case .equal: op = .equalTo
        case .notEqual: op = .notEqualTo
        case .less: op = .lessThan
        case .lessEqual: op = .lessThanOrEqualTo
        case .greater: op = .greaterThan
        case .greaterEqual: op = .greaterThanOrEqualTo
        case .keyword(.between): op = .between
        case .keyword(.in): op = .in
        case .keyword(.contains): op = .contains
        case .keyword(.beginsWith): op = .beginsWith
        case .keyword(.endsWith): op = .endsWith
        case .keyword(.like): op = .like
        case .keyword(.matches): op = .matches
        case .keyword(.utiConformsTo): op = .conformsTo
        case .keyword(.utiEquals): op = .utiEquals
        default:
            throw unexpected { .comparisonOperatorExpected(found: $0) }
        }
        let t = token
        try advance()
        return (op, t)
    }

    /// options = "[" option-letters "]"
    mutating func parseOptions() throws(SyntaxErrorAt) -> ComparisonOptions {
        guard token.kind == .leftBracket else { return [] }
        try advance()
        guard token.kind == .identifier, !token.escaped else {
            throw unexpected { .optionsExpected(found: $0) }
        }
        var options: ComparisonOptions = []
        for letter in text(of: token) {
            switch letter {
            case "c", "C": options.insert(.caseInsensitive)
            case "d", "D": options.insert(.diacriticInsensitive)
            case "n", "N": options.insert(.normalized)
            case "l", "L": options.insert(.localeSensitive)
            default: throw SyntaxErrorAt(.unknownOption(text(of: token)), token.range)
            }
        }
        try advance()
        try expect(.rightBracket) { .unclosedOptions(found: $0) }
        return options
    }

    /// An operand after an operator token: an expression, with a message that
    /// names the operator when it is missing.
    mutating func parseOperand(after op: Token) throws(SyntaxErrorAt) -> ExpressionSyntax {
        guard startsExpression else { throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) } }
        return try parseExpression()
    }

    /// Whether the current token can start an expression.
    var startsExpression: Bool {
        switch token.kind {
        case .string, .integer, .real, .identifier, .variable, .formatSpecifier, .leftParen, .leftBrace, .minus:
            return true
        case .keyword(let k):
            return [.true, .false, .yes, .no, .null, .nil, .self].contains(k)
        default:
            return false
        }
    }

    // MARK: Expressions

    /// expression = variable ":=" expression | set-expression
    mutating func parseExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        if token.kind == .variable, lexer.hasPrefix(":=", at: lexer.skippingSpace(from: token.end)) {
            let variable = token
            try advance()
            let op = token
            try advance()  // :=
            try nest()
            defer { depth -= 1 }
            let value = try parseOperand(after: op)
            return ExpressionSyntax(.assignment(variable: text(of: variable), value: value),
                                    range: variable.range.union(value.range))
        }
        return try parseSetExpression()
    }

    /// set-expression = bitwise-expression { ("UNION" | "INTERSECT" | "MINUS") bitwise-expression }
    ///
    /// The three words are operators only here, between two expressions; elsewhere
    /// they are ordinary names.
    mutating func parseSetExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        var left = try parseBitwiseExpression()
        var chain = 0
        while let op: BinaryOperator = isName("union") ? .union : isName("intersect") ? .intersect
            : isName("minus") ? .minus : nil
        {
            let opToken = token
            try advance()
            try extendChain(&chain, at: opToken)
            guard startsExpression else {
                throw unexpected { .missingExpression(after: previousTokenText(opToken), found: $0) }
            }
            let right = try parseBitwiseExpression()
            left = ExpressionSyntax(.binary(op, left, right), range: left.range.union(right.range))
        }
        return left
    }

    /// bitwise-expression = additive-expression { ("&" | "|" | "^") additive-expression }
    ///
    /// Bitwise AND, OR and exclusive OR of integers, as Apple's parser reads
    /// `(mediaSubtypes & %d) != 0`: the same tree as `bitwiseAnd(a, b)`,
    /// `bitwiseOr(a, b)` and `bitwiseXor(a, b)`.
    mutating func parseBitwiseExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        var left = try parseAdditiveExpression()
        var chain = 0
        while token.kind == .ampersand || token.kind == .bar || token.kind == .caret {
            let op = token
            try advance()
            try extendChain(&chain, at: op)
            guard startsExpression else {
                throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) }
            }
            let right = try parseAdditiveExpression()
            let name = op.kind == .ampersand ? "bitwiseAnd" : op.kind == .bar ? "bitwiseOr" : "bitwiseXor"
            left = ExpressionSyntax(.function(name: name, arguments: [left, right]), range: left.range.union(right.range))
        }
        return left
    }

    /// additive-expression = multiplicative-expression { ("+" | "-") multiplicative-expression }
    mutating func parseAdditiveExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        var left = try parseMultiplicativeExpression()
        var chain = 0
        while token.kind == .plus || token.kind == .minus {
            let op = token
            try advance()
            try extendChain(&chain, at: op)
            guard startsExpression else {
                throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) }
            }
            let right = try parseMultiplicativeExpression()
            left = ExpressionSyntax(.binary(op.kind == .plus ? .add : .subtract, left, right),
                                    range: left.range.union(right.range))
        }
        return left
    }

    /// multiplicative-expression = power-expression { ("*" | "/") power-expression }
    mutating func parseMultiplicativeExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        var left = try parsePowerExpression()
        var chain = 0
        while token.kind == .star || token.kind == .slash {
            let op = token
            try advance()
            try extendChain(&chain, at: op)
            guard startsExpression else {
                throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) }
            }
            let right = try parsePowerExpression()
            left = ExpressionSyntax(.binary(op.kind == .star ? .multiply : .divide, left, right),
                                    range: left.range.union(right.range))
        }
        return left
    }

    /// power-expression = unary-expression [ "**" power-expression ]
    mutating func parsePowerExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let base = try parseUnaryExpression()
        guard token.kind == .starStar else { return base }
        let op = token
        try advance()
        try nest()
        defer { depth -= 1 }
        guard startsExpression else { throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) } }
        let exponent = try parsePowerExpression()
        return ExpressionSyntax(.binary(.power, base, exponent), range: base.range.union(exponent.range))
    }

    /// unary-expression = "-" unary-expression | postfix-expression
    ///
    /// A minus sign directly before a number literal (not followed by `.name`
    /// or `[`) makes a negative literal rather than a negation.
    mutating func parseUnaryExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        guard token.kind == .minus else { return try parsePostfixExpression() }
        let op = token
        try advance()
        try nest()
        defer { depth -= 1 }
        if token.kind == .integer || token.kind == .real {
            let next = lexer.nextSignificantByte()
            if next != UInt8(ascii: "."), next != UInt8(ascii: "[") {
                let number = token
                try advance()
                let value: PredicateValue
                if number.kind == .real {
                    value = .double(-number.real)
                } else if number.magnitude <= UInt64(Int64.max) {
                    value = .int(-Int64(number.magnitude))
                } else if number.magnitude == UInt64(Int64.max) + 1 {
                    value = .int(.min)
                } else {
                    value = .double(-Double(number.magnitude))
                }
                return ExpressionSyntax(.constant(value), range: op.range.union(number.range))
            }
        }
        guard startsExpression else { throw unexpected { .missingExpression(after: previousTokenText(op), found: $0) } }
        let operand = try parseUnaryExpression()
        return ExpressionSyntax(.negate(operand), range: op.range.union(operand.range))
    }

    /// postfix-expression = primary-expression { "." key | "[" index "]" }
    mutating func parsePostfixExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        var (expression, extendable) = try parsePrimaryExpression()
        // Keys that extend the key path of `expression`, gathered here and
        // added once: a path of n keys costs O(n), not O(n²).
        var tail: [String] = []
        var tailEnd = expression.range
        func extended(_ expression: ExpressionSyntax) -> ExpressionSyntax {
            guard !tail.isEmpty else { return expression }
            let range = expression.range.union(tailEnd)
            switch expression.kind {
            case .keyPath(let path): return ExpressionSyntax(.keyPath(path + tail), range: range)
            case .member(let base, let path): return ExpressionSyntax(.member(base, path + tail), range: range)
            default: return ExpressionSyntax(.member(expression, tail), range: range)
            }
        }
        while true {
            if token.kind == .dot {
                try advance()
                let key = token
                let keys: [String]
                if token.kind == .identifier {
                    keys = [text(of: token)]
                    try advance()
                } else if token.kind == .formatSpecifier, text(of: token).hasSuffix("K") {
                    // `%K.%K`: a key path argument continues the key path.
                    try advance()
                    guard case .keyPath(let path) = try substitute(key).0.kind else {
                        throw SyntaxErrorAt(.invalidKeyPathArgument(text(of: key)), key.range)
                    }
                    keys = path
                } else {
                    throw unexpected { .keyExpected(found: $0) }
                }
                switch expression.kind {
                case .keyPath where extendable, .member where extendable:
                    tail.append(contentsOf: keys)
                    tailEnd = key.range
                default:
                    expression = ExpressionSyntax(.member(expression, keys), range: expression.range.union(key.range))
                }
                extendable = true
            } else if token.kind == .leftBracket {
                expression = extended(expression)
                tail = []
                let open = token
                try nest()
                defer { depth -= 1 }
                try advance()
                let index = try parseIndex()
                guard token.kind == .rightBracket else {
                    throw unexpected { .unclosedBracket(column: column(of: open), found: $0) }
                }
                expression = ExpressionSyntax(.index(expression, index), range: expression.range.union(token.range))
                try advance()
                extendable = false
            } else {
                return extended(expression)
            }
        }
    }

    /// index = "FIRST" | "LAST" | "SIZE" | expression
    mutating func parseIndex() throws(SyntaxErrorAt) -> IndexSyntax {
        if token.kind == .identifier, !token.escaped, lexer.nextSignificantByte() == UInt8(ascii: "]") {
            let special: IndexSyntax? =
                isName("first") ? .first : isName("last") ? .last : isName("size") ? .size : nil
            if let special {
                try advance()
                return special
            }
        }
        guard startsExpression else { throw unexpected { .indexExpected(found: $0) } }
        return .expression(try parseExpression())
    }

    /// primary-expression = literal | key | variable | "SELF" | format-specifier
    ///                    | aggregate | function-expression | "(" expression ")"
    ///
    /// Returns whether a following `.key` extends the result's key path (true
    /// for a bare key path; false after parentheses).
    mutating func parsePrimaryExpression() throws(SyntaxErrorAt) -> (ExpressionSyntax, Bool) {
        let t = token
        switch t.kind {
        case .string:
            try advance()
            return (ExpressionSyntax(.constant(.string(text(of: t))), range: t.range), false)
        case .integer:
            try advance()
            let value: PredicateValue = t.magnitude <= UInt64(Int64.max)
                ? .int(Int64(t.magnitude)) : .double(Double(t.magnitude))
            return (ExpressionSyntax(.constant(value), range: t.range), false)
        case .real:
            try advance()
            return (ExpressionSyntax(.constant(.double(t.real)), range: t.range), false)
        case .keyword(.true), .keyword(.yes):
            try advance()
            return (ExpressionSyntax(.constant(.bool(true)), range: t.range), false)
        case .keyword(.false), .keyword(.no):
            try advance()
            return (ExpressionSyntax(.constant(.bool(false)), range: t.range), false)
        case .keyword(.null), .keyword(.nil):
            try advance()
            return (ExpressionSyntax(.constant(.null), range: t.range), false)
        case .keyword(.self):
            try advance()
            return (ExpressionSyntax(.evaluatedObject, range: t.range), false)
        case .variable:
            try advance()
            return (ExpressionSyntax(.variable(text(of: t)), range: t.range), false)
        case .identifier:
            if !t.escaped, let end = lexer.selectorEnd() {
                return (try parseSelectorFunction(selectorEnd: end), false)
            }
            if !t.escaped, lexer.nextSignificantByte() == UInt8(ascii: "(") {
                return (try parseFunctionExpression(), false)
            }
            try advance()
            return (ExpressionSyntax(.keyPath([text(of: t)]), range: t.range), true)
        case .formatSpecifier:
            try advance()
            return try substitute(t)
        case .leftBrace:
            return (try parseAggregate(), false)
        case .leftParen:
            try nest()
            defer { depth -= 1 }
            try advance()
            var inner = try parseOperand(after: t)
            guard token.kind == .rightParen else {
                throw unexpected { .unclosedParenthesis(column: column(of: t), found: $0) }
            }
            inner.range = t.range.union(token.range)
            try advance()
            return (inner, false)
        default:
            throw unexpected { .expressionExpected(found: $0) }
        }
    }

    /// aggregate = "{" [ expression { "," expression } ] "}"
    mutating func parseAggregate() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let open = token
        try nest()
        defer { depth -= 1 }
        try advance()
        let elements = try parseExpressionList(closing: .rightBrace, open: open, closeText: "}")
        let close = token
        try advance()
        return ExpressionSyntax(.aggregate(elements), range: open.range.union(close.range))
    }

    /// Parses `[expression {"," expression}]` up to (not past) the closing token.
    mutating func parseExpressionList(
        closing: TokenKind, open: Token, closeText: String
    ) throws(SyntaxErrorAt) -> [ExpressionSyntax] {
        var elements: [ExpressionSyntax] = []
        if token.kind == closing { return elements }
        while true {
            guard startsExpression else { throw unexpected { .expressionExpected(found: $0) } }
            elements.append(try parseExpression())
            if token.kind == .comma {
                let comma = token
                try advance()
                guard startsExpression else {
                    throw unexpected { .missingExpression(after: previousTokenText(comma), found: $0) }
                }
                continue
            }
            guard token.kind == closing else {
                throw unexpected {
                    .unclosedList(open: lexer.text(open.start, open.end), close: closeText, column: column(of: open),
                                  found: $0)
                }
            }
            return elements
        }
    }

    /// function-expression = subquery | function-call | ternary | cast | function
    /// function = name "(" [ expression { "," expression } ] ")"
    mutating func parseFunctionExpression() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let name = token
        try nest()
        defer { depth -= 1 }
        if isName("subquery") { return try parseSubquery() }
        if isName("function") { return try parseFunctionCall() }
        if isName("ternary") { return try parseTernary() }
        if isName("cast") { return try parseCast() }
        try advance()
        let open = token
        try advance()
        let arguments = try parseExpressionList(closing: .rightParen, open: open, closeText: ")")
        let close = token
        try advance()
        return ExpressionSyntax(.function(name: text(of: name), arguments: arguments), range: name.range.union(close.range))
    }

    /// selector-function = name ":" { name ":" } "(" [ expression { "," expression } ] ")"
    ///
    /// A function as NSExpression prints one, by its selector: `sum:(salary)`,
    /// `count:(reports)`, `add:to:(a, b)`. Each selector is read as the
    /// function or operator it names (`add:to:` is `+`, `castObject:toType:`
    /// is CAST), so the tree is the one `sum(salary)` or `a + b` gives.
    mutating func parseSelectorFunction(selectorEnd: Int) throws(SyntaxErrorAt) -> ExpressionSyntax {
        let name = token
        try nest()
        defer { depth -= 1 }
        let selector = lexer.text(name.start, selectorEnd)
        lexer.position = selectorEnd
        try advance()
        let open = token
        try advance()
        let arguments = try parseExpressionList(closing: .rightParen, open: open, closeText: ")")
        let close = token
        try advance()
        let range = name.range.union(close.range)
        func expecting(_ count: Int) throws(SyntaxErrorAt) {
            guard arguments.count == count else {
                throw SyntaxErrorAt(.selectorArgumentCount(selector: selector, expected: count, found: arguments.count),
                                    range)
            }
        }
        if let op = Self.selectorOperators[selector] {
            try expecting(2)
            return ExpressionSyntax(.binary(op, arguments[0], arguments[1]), range: range)
        }
        switch selector {
        case "castObject:toType:":
            try expecting(2)
            guard case .constant(.string(let type)) = arguments[1].kind else {
                throw SyntaxErrorAt(.castTypeExpected, arguments[1].range)
            }
            return ExpressionSyntax(.cast(arguments[0], type: type), range: range)
        case "objectFrom:withIndex:":
            try expecting(2)
            return ExpressionSyntax(.index(arguments[0], .expression(arguments[1])), range: range)
        case "noindex:":
            try expecting(1)
            return arguments[0]
        default:
            // `name:` is the function `name`, and so are the two-argument
            // selectors NSExpression gives its built-in functions
            // (`modulus:by:`); any other selector names a function by itself
            // (`mgl_join:with:`), which the checker may not know.
            let parts = selector.split(separator: ":")
            let name = parts.count == 1 ? String(parts[0]) : Self.selectorFunctions[selector] ?? selector
            return ExpressionSyntax(.function(name: name, arguments: arguments), range: range)
        }
    }

    /// The built-in functions NSExpression names with a selector of several parts.
    static let selectorFunctions: [String: String] = [
        "modulus:by:": "modulus", "bitwiseAnd:with:": "bitwiseAnd", "bitwiseOr:with:": "bitwiseOr",
        "bitwiseXor:with:": "bitwiseXor", "leftshift:by:": "leftshift", "rightshift:by:": "rightshift",
    ]

    /// The selectors NSExpression gives the arithmetic operators.
    static let selectorOperators: [String: BinaryOperator] = [
        "add:to:": .add, "from:subtract:": .subtract, "multiply:by:": .multiply, "divide:by:": .divide,
        "raise:toPower:": .power,
    ]

    /// Consumes `NAME (` of a special form and returns the name token.
    mutating func openSpecialForm() throws(SyntaxErrorAt) -> (Token, Token) {
        let name = token
        try advance()
        let open = token
        try advance()
        return (name, open)
    }

    mutating func expectComma(in form: String) throws(SyntaxErrorAt) {
        try expect(.comma) { .argumentSeparatorExpected(form: form, found: $0) }
    }

    mutating func closeSpecialForm(_ name: Token, _ open: Token) throws(SyntaxErrorAt) -> SourceRange {
        guard token.kind == .rightParen else {
            throw unexpected { .unclosedParenthesis(column: column(of: open), found: $0) }
        }
        let range = name.range.union(token.range)
        try advance()
        return range
    }

    /// subquery = "SUBQUERY" "(" expression "," variable "," predicate ")"
    mutating func parseSubquery() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let (name, open) = try openSpecialForm()
        let collection = try parseOperand(after: open)
        try expectComma(in: "SUBQUERY")
        guard token.kind == .variable else {
            throw SyntaxErrorAt(.subqueryVariableExpected, token.range)
        }
        let variable = text(of: token)
        try advance()
        try expectComma(in: "SUBQUERY")
        let predicate = try parsePredicate()
        let range = try closeSpecialForm(name, open)
        return ExpressionSyntax(.subquery(collection: collection, variable: variable, predicate: predicate), range: range)
    }

    /// function-call = "FUNCTION" "(" expression "," string { "," expression } ")"
    mutating func parseFunctionCall() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let (name, open) = try openSpecialForm()
        let receiver = try parseOperand(after: open)
        try expectComma(in: "FUNCTION")
        let selector = try parseStringArgument(or: .functionSelectorExpected)
        var arguments: [ExpressionSyntax] = []
        while token.kind == .comma {
            let comma = token
            try advance()
            arguments.append(try parseOperand(after: comma))
        }
        let range = try closeSpecialForm(name, open)
        return ExpressionSyntax(.functionCall(receiver: receiver, selector: selector, arguments: arguments), range: range)
    }

    /// ternary = "TERNARY" "(" predicate "," expression "," expression ")"
    mutating func parseTernary() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let (name, open) = try openSpecialForm()
        let condition = try parsePredicate()
        try expectComma(in: "TERNARY")
        let then = try parseOperand(after: open)
        try expectComma(in: "TERNARY")
        let otherwise = try parseOperand(after: open)
        let range = try closeSpecialForm(name, open)
        return ExpressionSyntax(.ternary(condition, then, otherwise), range: range)
    }

    /// cast = "CAST" "(" expression "," string ")"
    mutating func parseCast() throws(SyntaxErrorAt) -> ExpressionSyntax {
        let (name, open) = try openSpecialForm()
        let value = try parseOperand(after: open)
        try expectComma(in: "CAST")
        let type = try parseStringArgument(or: .castTypeExpected)
        let range = try closeSpecialForm(name, open)
        return ExpressionSyntax(.cast(value, type: type), range: range)
    }

    /// A string literal, or a format specifier whose argument is a string;
    /// anything else fails with `reason`.
    mutating func parseStringArgument(or reason: SyntaxErrorReason) throws(SyntaxErrorAt) -> String {
        let t = token
        switch t.kind {
        case .string:
            try advance()
            return text(of: t)
        case .formatSpecifier:
            try advance()
            if case .constant(.string(let s)) = try substitute(t).0.kind { return s }
            throw SyntaxErrorAt(reason, t.range)
        default:
            throw SyntaxErrorAt(reason, t.range)
        }
    }

    // MARK: Format arguments

    /// Replaces a format specifier by the next argument.
    mutating func substitute(_ t: Token) throws(SyntaxErrorAt) -> (ExpressionSyntax, Bool) {
        let specifier = text(of: t)
        let conversion = specifier.utf8.last!
        if conversion == UInt8(ascii: "%") {
            return (ExpressionSyntax(.constant(.string("%")), range: t.range), false)
        }
        guard argumentIndex < arguments.count else {
            throw SyntaxErrorAt(.missingArgument(specifier: specifier, index: argumentIndex, given: arguments.count),
                                t.range)
        }
        let argument = arguments[argumentIndex]
        argumentIndex += 1
        func wrongKind(_ expected: SyntaxErrorReason.ArgumentKind) -> SyntaxErrorAt {
            SyntaxErrorAt(.wrongArgumentKind(specifier: specifier, expected: expected,
                                             found: argument.kindDescription), t.range)
        }
        if slots.contains(argumentIndex - 1) {
            switch (conversion, argument) {
            case (UInt8(ascii: "@"), _), (UInt8(ascii: "d"), .int), (UInt8(ascii: "i"), .int), (UInt8(ascii: "s"), .string):
                return (ExpressionSyntax(.variable(PredicateParser.argumentSlotName(argumentIndex - 1)), range: t.range), false)
            default:
                break
            }
        }
        switch conversion {
        case UInt8(ascii: "@"):
            return (ExpressionSyntax(.constant(argument), range: t.range), false)
        case UInt8(ascii: "K"):
            guard case .string(let path) = argument else { throw wrongKind(.keyPath) }
            let components = path.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            guard !components.contains(where: \.isEmpty) else {
                throw SyntaxErrorAt(.invalidKeyPathArgument(path), t.range)
            }
            return (ExpressionSyntax(.keyPath(components), range: t.range), true)
        case UInt8(ascii: "d"), UInt8(ascii: "i"), UInt8(ascii: "o"), UInt8(ascii: "u"),
             UInt8(ascii: "x"), UInt8(ascii: "X"):
            switch argument {
            case .int: return (ExpressionSyntax(.constant(argument), range: t.range), false)
            case .bool(let b): return (ExpressionSyntax(.constant(.int(b ? 1 : 0)), range: t.range), false)
            default: throw wrongKind(.integer)
            }
        case UInt8(ascii: "c"), UInt8(ascii: "C"):
            switch argument {
            case .string(let s) where s.count == 1:
                return (ExpressionSyntax(.constant(argument), range: t.range), false)
            case .int(let code):
                guard let scalar = UInt32(exactly: code).flatMap(Unicode.Scalar.init) else { throw wrongKind(.character) }
                return (ExpressionSyntax(.constant(.string(String(Character(scalar)))), range: t.range), false)
            default: throw wrongKind(.character)
            }
        case UInt8(ascii: "s"), UInt8(ascii: "S"):
            guard case .string = argument else { throw wrongKind(.string) }
            return (ExpressionSyntax(.constant(argument), range: t.range), false)
        case UInt8(ascii: "p"):
            return (ExpressionSyntax(.constant(argument), range: t.range), false)
        default:  // f F e E g G a A
            switch argument {
            case .double: return (ExpressionSyntax(.constant(argument), range: t.range), false)
            case .int(let i): return (ExpressionSyntax(.constant(.double(Double(i))), range: t.range), false)
            default: throw wrongKind(.number)
            }
        }
    }
}
