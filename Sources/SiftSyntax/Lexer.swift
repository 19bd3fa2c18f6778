// Stage 1 (syntax): the lexer.
//
// Turns UTF-8 bytes into tokens on demand, one at a time, for the parser. It
// works on bytes, not Characters, and makes a String only for names and string
// literals. The lexical rules are those of Grammar/README.md.

/// Reserved words. Keywords are case-insensitive. FIRST, LAST and SIZE are
/// reserved only inside index brackets, and SUBQUERY, FUNCTION, TERNARY and
/// CAST only before a parenthesis, so they are not listed here.
enum Keyword: UInt8, Sendable, CaseIterable {
    case and, or, not, any, all, some, none, `in`, like, matches, beginsWith, endsWith, contains, between
    case null, `nil`, `self`, `true`, `false`, yes, no, truePredicate, falsePredicate
    case utiConformsTo, utiEquals

    /// The keyword's spelling in upper case.
    var spelling: String {
        switch self {
        case .and: "AND"
        case .or: "OR"
        case .not: "NOT"
        case .any: "ANY"
        case .all: "ALL"
        case .some: "SOME"
        case .none: "NONE"
        case .in: "IN"
        case .like: "LIKE"
        case .matches: "MATCHES"
        case .beginsWith: "BEGINSWITH"
        case .endsWith: "ENDSWITH"
        case .contains: "CONTAINS"
        case .between: "BETWEEN"
        case .null: "NULL"
        case .nil: "NIL"
        case .self: "SELF"
        case .true: "TRUE"
        case .false: "FALSE"
        case .yes: "YES"
        case .no: "NO"
        case .truePredicate: "TRUEPREDICATE"
        case .falsePredicate: "FALSEPREDICATE"
        case .utiConformsTo: "UTI-CONFORMS-TO"
        case .utiEquals: "UTI-EQUALS"
        }
    }

    /// Upper-case spellings of the words that cannot be used as names
    /// without a `#` escape.
    static let reservedNames: Set<String> = Set(allCases.map(\.spelling))
}

/// The kinds of token.
enum TokenKind: Equatable, Sendable {
    case end
    /// A name; `text` holds it. `escaped` when written `#name`.
    case identifier
    /// A keyword.
    case keyword(Keyword)
    /// `$name`; `text` holds the name.
    case variable
    /// A string literal; `text` holds its value.
    case string
    /// An integer literal; `magnitude` holds its value.
    case integer
    /// A floating-point literal; `real` holds its value.
    case real
    /// A format specifier such as `%@`, `%K`, `%d`; `text` holds it.
    case formatSpecifier
    case leftParen, rightParen, leftBracket, rightBracket, leftBrace, rightBrace
    case comma, dot, assign
    case equal, notEqual, less, lessEqual, greater, greaterEqual
    case andAnd, orOr, bang
    /// `&`, `|`, `^`: bitwise AND, OR and exclusive OR of integers.
    case ampersand, bar, caret
    case plus, minus, star, slash, starStar
}

/// One token and where it is. Plain data, so copying a token costs nothing;
/// the parser reads a token's text from the source bytes when it needs it.
struct Token: Sendable {
    var kind: TokenKind
    var start: Int
    var end: Int
    /// Where the token's text starts: after `#` or `$`, after an opening quote.
    var contentStart: Int = 0
    /// An integer's magnitude, or a real's bit pattern.
    var number: UInt64 = 0
    /// A name written `#name`.
    var escaped = false
    /// A string literal with escapes, whose value is ``Lexer/decodedString``.
    var hasEscapes = false

    init(kind: TokenKind, start: Int, end: Int) {
        self.kind = kind
        self.start = start
        self.end = end
        self.contentStart = start
    }

    var range: SourceRange { SourceRange(start, end) }
    var magnitude: UInt64 { number }
    var real: Double { Double(bitPattern: number) }
}

/// Byte classes used by the lexer.
extension UInt8 {
    @inline(__always) var isASCIILetter: Bool { (self | 0x20) >= 0x61 && (self | 0x20) <= 0x7A }
    @inline(__always) var isDigit: Bool { self >= 0x30 && self <= 0x39 }
    @inline(__always) var isIdentifierHead: Bool { isASCIILetter || self == 0x5F || self >= 0x80 }
    @inline(__always) var isIdentifierBody: Bool { isIdentifierHead || isDigit }
    @inline(__always) var isSpace: Bool { self == 0x20 || (self >= 0x09 && self <= 0x0D) }
    @inline(__always) var lowercased: UInt8 { isASCIILetter ? self | 0x20 : self }
}

/// The lexer: a cursor over the UTF-8 bytes of the text.
///
/// It reads the string's own storage, which is valid only inside
/// ``withUTF8(of:_:)``; a lexer never outlives that call.
struct Lexer {
    let bytes: UnsafeBufferPointer<UInt8>
    /// The offset of the next byte to read.
    var position: Int = 0
    /// The value of the last string literal read that had escapes.
    var decodedString = ""
    /// What the text holds that Apple's parser accepts but is almost always a
    /// mistake (an unknown escape), in the order met.
    var warnings: [PredicateWarning] = []

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// Calls `body` with the UTF-8 bytes of `text`, without copying them when
    /// the string is stored as contiguous UTF-8 (native Swift strings are).
    static func withUTF8<R>(of text: String, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        if let result = text.utf8.withContiguousStorageIfAvailable(body) { return result }
        return Array(text.utf8).withUnsafeBufferPointer(body)
    }

    /// The offset of the next byte that is not white space.
    func skippingSpace(from offset: Int) -> Int {
        var i = offset
        while i < bytes.count, bytes[i].isSpace { i += 1 }
        return i
    }

    /// The next byte that is not white space, without moving.
    func nextSignificantByte() -> UInt8? {
        let i = skippingSpace(from: position)
        return i < bytes.count ? bytes[i] : nil
    }

    /// Where a function's selector name ends, when the name just read is
    /// followed by one, as NSExpression prints a function: `sum:(…)`,
    /// `add:to:(…)`. The selector is the name, then `:`-terminated parts
    /// written without spaces, then (spaces allowed) `(`. Nil when no
    /// selector follows (`:=` is assignment).
    func selectorEnd() -> Int? {
        var i = position
        guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
        while true {
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { return nil }
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "=") { return nil }
            let part = i
            while i < bytes.count, bytes[i].isIdentifierBody { i += 1 }
            if i == part { break }
        }
        let next = skippingSpace(from: i)
        return next < bytes.count && bytes[next] == UInt8(ascii: "(") ? i : nil
    }

    /// Reads the next token.
    mutating func next() throws(SyntaxErrorAt) -> Token {
        position = skippingSpace(from: position)
        let start = position
        guard start < bytes.count else { return Token(kind: .end, start: start, end: start) }
        let byte = bytes[start]
        position += 1

        func token(_ kind: TokenKind) -> Token { Token(kind: kind, start: start, end: position) }
        func followedBy(_ b: UInt8) -> Bool {
            if position < bytes.count, bytes[position] == b {
                position += 1
                return true
            }
            return false
        }

        switch byte {
        case UInt8(ascii: "("): return token(.leftParen)
        case UInt8(ascii: ")"): return token(.rightParen)
        case UInt8(ascii: "["): return token(.leftBracket)
        case UInt8(ascii: "]"): return token(.rightBracket)
        case UInt8(ascii: "{"): return token(.leftBrace)
        case UInt8(ascii: "}"): return token(.rightBrace)
        case UInt8(ascii: ","): return token(.comma)
        case UInt8(ascii: "+"): return token(.plus)
        case UInt8(ascii: "-"): return token(.minus)
        case UInt8(ascii: "/"): return token(.slash)
        case UInt8(ascii: "*"): return token(followedBy(UInt8(ascii: "*")) ? .starStar : .star)
        case UInt8(ascii: "="):
            if followedBy(UInt8(ascii: "=")) { return token(.equal) }
            if followedBy(UInt8(ascii: "<")) { return token(.lessEqual) }
            if followedBy(UInt8(ascii: ">")) { return token(.greaterEqual) }
            return token(.equal)
        case UInt8(ascii: "!"):
            return token(followedBy(UInt8(ascii: "=")) ? .notEqual : .bang)
        case UInt8(ascii: "<"):
            if followedBy(UInt8(ascii: "=")) { return token(.lessEqual) }
            if followedBy(UInt8(ascii: ">")) { return token(.notEqual) }
            return token(.less)
        case UInt8(ascii: ">"):
            return token(followedBy(UInt8(ascii: "=")) ? .greaterEqual : .greater)
        case UInt8(ascii: "&"):
            return token(followedBy(UInt8(ascii: "&")) ? .andAnd : .ampersand)
        case UInt8(ascii: "|"):
            return token(followedBy(UInt8(ascii: "|")) ? .orOr : .bar)
        case UInt8(ascii: "^"):
            return token(.caret)
        case UInt8(ascii: ":"):
            if followedBy(UInt8(ascii: "=")) { return token(.assign) }
            throw SyntaxErrorAt(.unexpectedCharacter(":"), SourceRange(start, position))
        case UInt8(ascii: "."):
            if position < bytes.count, bytes[position].isDigit {
                position = start
                return try number()
            }
            return token(.dot)
        case UInt8(ascii: "'"), UInt8(ascii: "\""):
            return try string(quote: byte, start: start)
        case UInt8(ascii: "$"):
            guard position < bytes.count, bytes[position].isIdentifierHead else {
                throw SyntaxErrorAt(.invalidVariable, SourceRange(start, position))
            }
            let nameStart = position
            try scanIdentifierBody()
            var t = token(.variable)
            t.contentStart = nameStart
            return t
        case UInt8(ascii: "#"):
            guard position < bytes.count, startsName(at: position) || bytes[position] == UInt8(ascii: "@")
            else {
                throw SyntaxErrorAt(.invalidEscapedIdentifier, SourceRange(start, position))
            }
            let nameStart = position
            if bytes[position] == UInt8(ascii: "@") {
                // `#@count`: the `@` must start a name, as it must unescaped.
                position += 1
                guard position < bytes.count, startsName(at: position) else {
                    throw SyntaxErrorAt(.invalidEscapedIdentifier, SourceRange(start, position))
                }
            }
            try scanIdentifierBody()
            var t = token(.identifier)
            t.contentStart = nameStart
            t.escaped = true
            return t
        case UInt8(ascii: "@"):
            guard position < bytes.count, startsName(at: position) else {
                throw SyntaxErrorAt(.unexpectedCharacter("@"), SourceRange(start, position))
            }
            try scanIdentifierBody()
            return token(.identifier)
        case UInt8(ascii: "%"):
            return try formatSpecifier(start: start)
        default:
            if byte.isDigit {
                position = start
                return try number()
            }
            if byte.isIdentifierHead {
                position = start
                return try identifierOrKeyword()
            }
            let character = String(decoding: bytes[start..<min(bytes.count, start + 1)], as: UTF8.self)
            throw SyntaxErrorAt(.unexpectedCharacter(character), SourceRange(start, position))
        }
    }

    /// Whether a name may start at `offset`: a letter or `_`, or a non-ASCII
    /// scalar Unicode allows to start an identifier (the rule for every
    /// name, escaped or not, so that each prints back as it was read).
    private func startsName(at offset: Int) -> Bool {
        let b = bytes[offset]
        guard b >= 0x80 else { return b.isIdentifierHead }
        let scalar = decodeScalar(at: offset).0
        return scalar.properties.isXIDStart || scalar == "_"
    }

    /// Advances over the rest of a name. Non-ASCII scalars count as name
    /// characters when Unicode says they may continue an identifier.
    private mutating func scanIdentifierBody() throws(SyntaxErrorAt) {
        while position < bytes.count {
            let b = bytes[position]
            if b < 0x80 {
                guard b.isIdentifierBody else { return }
                position += 1
            } else {
                let (scalar, length) = decodeScalar(at: position)
                guard scalar.properties.isXIDContinue else {
                    if position == 0 || !(bytes[position - 1].isIdentifierBody) {
                        throw SyntaxErrorAt(.unexpectedCharacter(String(scalar)),
                                            SourceRange(position, position + length))
                    }
                    return
                }
                position += length
            }
        }
    }

    /// Decodes the scalar starting at `offset` (the text came from a `String`,
    /// so it is valid UTF-8).
    func decodeScalar(at offset: Int) -> (Unicode.Scalar, Int) {
        let b0 = bytes[offset]
        let length = b0 < 0xE0 ? 2 : b0 < 0xF0 ? 3 : 4
        let end = min(bytes.count, offset + length)
        let scalar = String(decoding: bytes[offset..<end], as: UTF8.self).unicodeScalars.first ?? "\u{FFFD}"
        return (scalar, end - offset)
    }

    private mutating func identifierOrKeyword() throws(SyntaxErrorAt) -> Token {
        let start = position
        let b = bytes[start]
        if b >= 0x80 {
            let (scalar, length) = decodeScalar(at: start)
            guard scalar.properties.isXIDStart || scalar == "_" else {
                position = start + length
                throw SyntaxErrorAt(.unexpectedCharacter(String(scalar)), SourceRange(start, position))
            }
            position += length
        } else {
            position += 1
        }
        try scanIdentifierBody()
        if let keyword = keyword(start, position) {
            // UTI-CONFORMS-TO and UTI-EQUALS are the only keywords with hyphens.
            return Token(kind: .keyword(keyword), start: start, end: position)
        }
        if position - start == 3, hasPrefix("uti", at: start) {
            if matchesWord("-conforms-to", at: position) {
                position += 12
                return Token(kind: .keyword(.utiConformsTo), start: start, end: position)
            }
            if matchesWord("-equals", at: position) {
                position += 7
                return Token(kind: .keyword(.utiEquals), start: start, end: position)
            }
        }
        return Token(kind: .identifier, start: start, end: position)
    }

    /// Whether the bytes at `offset` begin with `word` (lower-case ASCII), ignoring case.
    func hasPrefix(_ word: StaticString, at offset: Int) -> Bool {
        let count = word.utf8CodeUnitCount
        guard offset >= 0, offset + count <= bytes.count else { return false }
        let w = word.utf8Start
        for i in 0..<count where bytes[offset + i].lowercased != w[i] { return false }
        return true
    }

    /// Whether the bytes at `offset` spell the whole word `word`, ignoring case:
    /// no name character follows it.
    func matchesWord(_ word: StaticString, at offset: Int) -> Bool {
        let after = offset + word.utf8CodeUnitCount
        return hasPrefix(word, at: offset) && (after >= bytes.count || !bytes[after].isIdentifierBody)
    }

    /// The keyword spelled by `bytes[start..<end]`, if any.
    private func keyword(_ start: Int, _ end: Int) -> Keyword? {
        let length = end - start
        guard length >= 2, length <= 15 else { return nil }
        func eq(_ word: StaticString) -> Bool {
            let w = word.utf8Start
            for i in 0..<length where bytes[start + i].lowercased != w[i] { return false }
            return true
        }
        switch (length, bytes[start].lowercased) {
        case (2, UInt8(ascii: "o")): return eq("or") ? .or : nil
        case (2, UInt8(ascii: "i")): return eq("in") ? .in : nil
        case (2, UInt8(ascii: "n")): return eq("no") ? .no : nil
        case (3, UInt8(ascii: "a")): return eq("and") ? .and : eq("any") ? .any : eq("all") ? .all : nil
        case (3, UInt8(ascii: "n")): return eq("not") ? .not : eq("nil") ? .nil : nil
        case (3, UInt8(ascii: "y")): return eq("yes") ? .yes : nil
        case (4, UInt8(ascii: "s")): return eq("some") ? .some : eq("self") ? .self : nil
        case (4, UInt8(ascii: "n")): return eq("none") ? Keyword.none : eq("null") ? .null : nil
        case (4, UInt8(ascii: "l")): return eq("like") ? .like : nil
        case (4, UInt8(ascii: "t")): return eq("true") ? .true : nil
        case (5, UInt8(ascii: "f")): return eq("false") ? .false : nil
        case (7, UInt8(ascii: "m")): return eq("matches") ? .matches : nil
        case (7, UInt8(ascii: "b")): return eq("between") ? .between : nil
        case (8, UInt8(ascii: "e")): return eq("endswith") ? .endsWith : nil
        case (8, UInt8(ascii: "c")): return eq("contains") ? .contains : nil
        case (10, UInt8(ascii: "b")): return eq("beginswith") ? .beginsWith : nil
        case (13, UInt8(ascii: "t")): return eq("truepredicate") ? .truePredicate : nil
        case (14, UInt8(ascii: "f")): return eq("falsepredicate") ? .falsePredicate : nil
        default: return nil
        }
    }

    // MARK: Numbers

    private mutating func number() throws(SyntaxErrorAt) -> Token {
        let start = position
        if bytes[start] == UInt8(ascii: "0"), start + 1 < bytes.count {
            let radix: UInt64? = switch bytes[start + 1].lowercased {
            case UInt8(ascii: "x"): 16
            case UInt8(ascii: "o"): 8
            case UInt8(ascii: "b"): 2
            default: nil
            }
            if let radix { return try radixInteger(start: start, radix: radix) }
        }
        var sawDot = false
        var sawExponent = false
        var magnitude: UInt64 = 0
        var overflow = false
        while position < bytes.count, bytes[position].isDigit {
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: 10)
            let (m2, o2) = m1.addingReportingOverflow(UInt64(bytes[position] &- 0x30))
            magnitude = m2
            overflow = overflow || o1 || o2
            position += 1
        }
        if position + 1 < bytes.count, bytes[position] == UInt8(ascii: "."), bytes[position + 1].isDigit {
            sawDot = true
            position += 1
            while position < bytes.count, bytes[position].isDigit { position += 1 }
        }
        if position < bytes.count, bytes[position].lowercased == UInt8(ascii: "e") {
            var i = position + 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "+") || bytes[i] == UInt8(ascii: "-") { i += 1 }
            guard i < bytes.count, bytes[i].isDigit else {
                position = i
                throw SyntaxErrorAt(.missingExponentDigits(text(start, position)), SourceRange(start, position))
            }
            sawExponent = true
            position = i
            while position < bytes.count, bytes[position].isDigit { position += 1 }
        }
        if position < bytes.count, bytes[position].isIdentifierHead {
            while position < bytes.count, bytes[position].isIdentifierBody { position += 1 }
            throw SyntaxErrorAt(.invalidNumber(text(start, position)), SourceRange(start, position))
        }
        if sawDot || sawExponent || overflow {
            guard let value = Double(text(start, position)), value.isFinite else {
                throw SyntaxErrorAt(.invalidNumber(text(start, position)), SourceRange(start, position))
            }
            var t = Token(kind: .real, start: start, end: position)
            t.number = value.bitPattern
            return t
        }
        var t = Token(kind: .integer, start: start, end: position)
        t.number = magnitude
        return t
    }

    private mutating func radixInteger(start: Int, radix: UInt64) throws(SyntaxErrorAt) -> Token {
        position = start + 2
        var magnitude: UInt64 = 0
        var digits = 0
        var overflow = false
        while position < bytes.count {
            let b = bytes[position].lowercased
            let digit: UInt64
            if b.isDigit { digit = UInt64(b - 0x30) }
            else if b >= UInt8(ascii: "a"), b <= UInt8(ascii: "f") { digit = UInt64(b - 0x61 + 10) }
            else if b.isIdentifierBody { digit = 99 }
            else { break }
            guard digit < radix else {
                while position < bytes.count, bytes[position].isIdentifierBody { position += 1 }
                throw SyntaxErrorAt(.invalidNumber(text(start, position)), SourceRange(start, position))
            }
            let (m1, o1) = magnitude.multipliedReportingOverflow(by: radix)
            let (m2, o2) = m1.addingReportingOverflow(digit)
            magnitude = m2
            overflow = overflow || o1 || o2
            digits += 1
            position += 1
        }
        guard digits > 0 else {
            throw SyntaxErrorAt(.missingRadixDigits(text(start, position)), SourceRange(start, position))
        }
        guard !overflow, magnitude <= UInt64(Int64.max) else {
            throw SyntaxErrorAt(.integerOverflow(text(start, position)), SourceRange(start, position))
        }
        var t = Token(kind: .integer, start: start, end: position)
        t.number = magnitude
        return t
    }

    func text(_ start: Int, _ end: Int) -> String {
        String(decoding: bytes[start..<min(end, bytes.count)], as: UTF8.self)
    }

    // MARK: Strings

    private mutating func string(quote: UInt8, start: Int) throws(SyntaxErrorAt) -> Token {
        let contentStart = position
        // Fast path: no escapes.
        while position < bytes.count {
            let b = bytes[position]
            if b == quote {
                var t = Token(kind: .string, start: start, end: position + 1)
                t.contentStart = contentStart
                position += 1
                return t
            }
            if b == UInt8(ascii: "\\") { break }
            position += 1
        }
        var buffer = Array(bytes[contentStart..<position])
        while position < bytes.count {
            let b = bytes[position]
            if b == quote {
                position += 1
                var t = Token(kind: .string, start: start, end: position)
                t.contentStart = contentStart
                t.hasEscapes = true
                decodedString = String(decoding: buffer, as: UTF8.self)
                return t
            }
            if b != UInt8(ascii: "\\") {
                buffer.append(b)
                position += 1
                continue
            }
            try escape(into: &buffer)
        }
        throw SyntaxErrorAt(.unterminatedString, SourceRange(start, position))
    }

    /// Reads one backslash escape and appends its UTF-8 bytes.
    private mutating func escape(into buffer: inout [UInt8]) throws(SyntaxErrorAt) {
        let start = position
        position += 1
        guard position < bytes.count else {
            throw SyntaxErrorAt(.unterminatedString, SourceRange(start, position))
        }
        let b = bytes[position]
        position += 1
        switch b {
        case UInt8(ascii: "\\"), UInt8(ascii: "'"), UInt8(ascii: "\""): buffer.append(b)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "0")...UInt8(ascii: "7"):
            // \0 alone is NUL; \ooo is up to three octal digits.
            var value = UInt32(b - 0x30)
            var count = 1
            while count < 3, position < bytes.count, bytes[position] >= 0x30, bytes[position] <= 0x37 {
                value = value * 8 + UInt32(bytes[position] - 0x30)
                position += 1
                count += 1
            }
            append(Unicode.Scalar(value)!, to: &buffer)
        case UInt8(ascii: "x"):
            let value = try hexDigits(count: 2, escapeStart: start)
            append(Unicode.Scalar(value)!, to: &buffer)
        case UInt8(ascii: "u"):
            var value = try hexDigits(count: 4, escapeStart: start)
            if (0xD800...0xDBFF).contains(value), hasPrefix("\\u", at: position) {
                // A surrogate pair written as two escapes.
                let save = position
                position += 2
                let low = try hexDigits(count: 4, escapeStart: save)
                if (0xDC00...0xDFFF).contains(low) {
                    value = 0x10000 + ((value - 0xD800) << 10) + (low - 0xDC00)
                } else {
                    position = save
                }
            }
            guard let scalar = Unicode.Scalar(value) else {
                throw SyntaxErrorAt(.invalidEscape(text(start, position)), SourceRange(start, position))
            }
            append(scalar, to: &buffer)
        default:
            // Apple's parser keeps the character and drops the backslash
            // (`'a\?'` is `a?`, `'\d+'` is `d+`); so does Sift, with a warning,
            // since a pattern meant for MATCHES or LIKE lost its backslash.
            if b >= 0x80 { position = start + 1 + decodeScalar(at: start + 1).1 }
            buffer.append(contentsOf: bytes[(start + 1)..<position])
            warnings.append(PredicateWarning(.unknownEscape(text(start, position)), range: SourceRange(start, position)))
        }
    }

    private mutating func hexDigits(count: Int, escapeStart: Int) throws(SyntaxErrorAt) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<count {
            guard position < bytes.count, let digit = hexValue(bytes[position]) else {
                throw SyntaxErrorAt(.missingHexadecimalDigits(escape: text(escapeStart, min(position + 1, bytes.count)),
                                                              count: count),
                                    SourceRange(escapeStart, min(position + 1, bytes.count)))
            }
            value = value * 16 + digit
            position += 1
        }
        return value
    }

    private func hexValue(_ b: UInt8) -> UInt32? {
        if b.isDigit { return UInt32(b - 0x30) }
        let l = b.lowercased
        if l >= UInt8(ascii: "a"), l <= UInt8(ascii: "f") { return UInt32(l - 0x61 + 10) }
        return nil
    }

    private func append(_ scalar: Unicode.Scalar, to buffer: inout [UInt8]) {
        buffer.append(contentsOf: UTF8.encode(scalar)!)
    }

    // MARK: Format specifiers

    /// `%@`, `%K`, `%%`, or a printf-style conversion with optional flags,
    /// width, precision and length modifier (`%5.2lf`, `%lld`).
    private mutating func formatSpecifier(start: Int) throws(SyntaxErrorAt) -> Token {
        while position < bytes.count, "-+ #0".utf8.contains(bytes[position]) { position += 1 }
        while position < bytes.count, bytes[position].isDigit { position += 1 }
        if position < bytes.count, bytes[position] == UInt8(ascii: ".") {
            position += 1
            while position < bytes.count, bytes[position].isDigit { position += 1 }
        }
        while position < bytes.count, "hlqLzjt".utf8.contains(bytes[position]) { position += 1 }
        guard position < bytes.count, "@K%diouxXfFeEgGaAscCp".utf8.contains(bytes[position]) else {
            let end = min(position + 1, bytes.count)
            throw SyntaxErrorAt(.invalidFormatSpecifier(text(start, end)), SourceRange(start, end))
        }
        position += 1
        // %@, %K and %% take no flags, width, precision or length.
        if "@K%".utf8.contains(bytes[position - 1]), position - start != 2 {
            throw SyntaxErrorAt(.invalidFormatSpecifier(text(start, position)), SourceRange(start, position))
        }
        return Token(kind: .formatSpecifier, start: start, end: position)
    }
}

/// An error found before the source text is at hand; the parser adds the text.
///
/// A class, so that the slot each `try` reserves for a typed error is one
/// pointer: a struct here made every parser frame kilobytes larger.
final class SyntaxErrorAt: Error, Sendable {
    let reason: SyntaxErrorReason
    let range: SourceRange

    init(_ reason: SyntaxErrorReason, _ range: SourceRange) {
        self.reason = reason
        self.range = range
    }

    /// Whether trying another way to parse must not hide this error.
    var isFatal: Bool {
        switch reason {
        case .nestingTooDeep, .chainTooLong, .tooManyNodes, .tooAmbiguous: return true
        default: return false
        }
    }
}
