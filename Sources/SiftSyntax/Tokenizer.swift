// Stage 1 (syntax): the lexer on its own, for tools that colour or measure
// predicate text without parsing it.

/// Splits predicate text into tokens without parsing it.
///
/// ```swift
/// try PredicateTokenizer.tokenRanges(in: "age > 40")   // [0..<3, 4..<5, 6..<8]
/// ```
public enum PredicateTokenizer {
    /// The source ranges of the tokens of `text`, in order.
    ///
    /// - Parameter text: The predicate's text.
    /// - Returns: The range of each token, in UTF-8 offsets; white space is in
    ///   none.
    /// - Throws: `PredicateSyntaxError` when the text holds something no token
    ///   is made of, such as an unexpected character, an unterminated string or
    ///   a bad number.
    public static func tokenRanges(in text: String) throws(PredicateSyntaxError) -> [SourceRange] {
        let result = Lexer.withUTF8(of: text) { bytes -> Result<[SourceRange], SyntaxErrorAt> in
            var lexer = Lexer(bytes: bytes)
            var ranges: [SourceRange] = []
            do throws(SyntaxErrorAt) {
                while true {
                    let token = try lexer.next()
                    if token.kind == .end { return .success(ranges) }
                    ranges.append(token.range)
                }
            } catch {
                return .failure(error)
            }
        }
        switch result {
        case .success(let ranges): return ranges
        case .failure(let error):
            throw PredicateSyntaxError(error.reason, range: error.range, in: text)
        }
    }
}
