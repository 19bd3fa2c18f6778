// Stage 1 (syntax): positions in predicate text.
//
// Every position is kept as a UTF-8 offset, which is what the lexer works in;
// lines and columns are computed only when a diagnostic is shown.

/// A half-open range of UTF-8 offsets into a predicate's source text.
///
/// ```swift
/// let tree = try PredicateParser.parse("age > 40")
/// tree.range            // 0..<8
/// ```
public struct SourceRange: Hashable, Sendable, CustomStringConvertible {
    /// The offset of the first byte.
    public var lowerBound: Int
    /// The offset just past the last byte.
    public var upperBound: Int

    /// Creates a range from `lowerBound` up to, but not including, `upperBound`.
    ///
    /// - Parameters:
    ///   - lowerBound: The offset of the first byte.
    ///   - upperBound: The offset just past the last byte; one below
    ///     `lowerBound` is raised to it, making the range empty.
    public init(_ lowerBound: Int, _ upperBound: Int) {
        self.lowerBound = lowerBound
        self.upperBound = max(lowerBound, upperBound)
    }

    /// An empty range at `offset`.
    ///
    /// - Parameter offset: A UTF-8 offset.
    /// - Returns: The range `offset..<offset`.
    public static func at(_ offset: Int) -> SourceRange { SourceRange(offset, offset) }

    /// The smallest range that covers both ranges.
    ///
    /// - Parameter other: The range to cover together with this one.
    /// - Returns: The range from the lower of the two lower bounds to the
    ///   higher of the two upper bounds.
    public func union(_ other: SourceRange) -> SourceRange {
        SourceRange(min(lowerBound, other.lowerBound), max(upperBound, other.upperBound))
    }

    public var description: String { "\(lowerBound)..<\(upperBound)" }
}

/// A line and column in predicate text, both counted from 1.
///
/// Columns count characters (extended grapheme clusters), so a caret drawn under
/// the column lines up with what a person sees.
public struct SourcePosition: Hashable, Sendable, CustomStringConvertible {
    /// The line, from 1.
    public var line: Int
    /// The column, from 1, in characters.
    public var column: Int

    /// Creates a location.
    ///
    /// - Parameters:
    ///   - line: The line, from 1.
    ///   - column: The column, from 1, in characters.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// The location of the UTF-8 `offset` in `text`. Offsets past the end map to
    /// the position just after the last character.
    ///
    /// - Parameters:
    ///   - offset: A UTF-8 offset into `text`; one inside a character counts
    ///     as that character's start.
    ///   - text: The source text.
    public init(offset: Int, in text: String) {
        var line = 1
        var lineStart = text.utf8.startIndex
        let utf8 = text.utf8
        let target = utf8.index(utf8.startIndex, offsetBy: min(max(offset, 0), utf8.count))
        var index = utf8.startIndex
        while index < target {
            if utf8[index] == UInt8(ascii: "\n") {
                line += 1
                lineStart = utf8.index(after: index)
            }
            index = utf8.index(after: index)
        }
        // Round down to a character boundary so the column is whole.
        let prefix = text[lineStart..<target]
        self.init(line: line, column: prefix.count + 1)
    }

    public var description: String { "\(line):\(column)" }
}

extension String {
    /// The text of the line that holds the UTF-8 `offset`, without its line break.
    func line(containing offset: Int) -> Substring {
        let utf8 = self.utf8
        let target = utf8.index(utf8.startIndex, offsetBy: min(max(offset, 0), utf8.count))
        var start = target
        while start > utf8.startIndex {
            let before = utf8.index(before: start)
            if utf8[before] == UInt8(ascii: "\n") { break }
            start = before
        }
        var end = target
        while end < utf8.endIndex, utf8[end] != UInt8(ascii: "\n") {
            end = utf8.index(after: end)
        }
        // Indices from the UTF-8 view at a line break are character boundaries.
        return self[start..<end]
    }
}
