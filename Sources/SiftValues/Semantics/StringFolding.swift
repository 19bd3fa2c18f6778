// Stage 0 (values): what comparison options mean for strings.
//
// Both lowerings fold with this one function: the memory lowering calls it,
// and the SQLite store registers it as `sift_fold`, so `[c]` and `[d]` give
// the same answers in memory and in SQL.

import Foundation

/// String folding for comparison options.
public enum StringFolding {
    /// The text as options compare it: `[d]` decomposes (NFD) and drops
    /// combining marks; with `[c]` or `[d]` the text is then composed (NFC);
    /// `[c]` then lower-cases. Without `[c]` or `[d]`, the text is unchanged.
    ///
    /// - Parameters:
    ///   - text: The string to fold.
    ///   - options: The comparison options; only `[c]` and `[d]` fold.
    /// - Returns: The folded text.
    public static func fold(_ text: String, _ options: ComparisonOptions) -> String {
        let caseInsensitive = options.contains(.caseInsensitive)
        let diacriticInsensitive = options.contains(.diacriticInsensitive)
        guard caseInsensitive || diacriticInsensitive else { return text }
        // ASCII text needs no normalization: fold it directly.
        if text.utf8.allSatisfy({ $0 < 0x80 }) {
            return caseInsensitive ? text.lowercased() : text
        }
        var result = text
        if diacriticInsensitive {
            var scalars = String.UnicodeScalarView()
            for scalar in result.decomposedStringWithCanonicalMapping.unicodeScalars
            where scalar.properties.generalCategory != .nonspacingMark {
                scalars.append(scalar)
            }
            result = String(scalars)
        }
        result = result.precomposedStringWithCanonicalMapping
        if caseInsensitive { result = result.lowercased() }
        return result
    }
}


extension ComparisonOptions {
    /// The options that fold strings (`[c]` and `[d]`) as the flags `sift_fold`
    /// takes: 1 for `[c]`, 2 for `[d]`.
    public var foldingFlags: Int {
        (contains(.caseInsensitive) ? 1 : 0) | (contains(.diacriticInsensitive) ? 2 : 0)
    }

    /// The options `foldingFlags` stands for.
    ///
    /// - Parameter foldingFlags: 1 for `[c]`, 2 for `[d]`, 3 for both; other
    ///   bits are ignored.
    public init(foldingFlags: Int) {
        self = []
        if foldingFlags & 1 != 0 { insert(.caseInsensitive) }
        if foldingFlags & 2 != 0 { insert(.diacriticInsensitive) }
    }
}
