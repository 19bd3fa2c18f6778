// Stage 0 (values): the limits that keep hostile predicates cheap.
//
// Every stage reads its bounds from here, so a server that takes predicates
// from its clients sets them in one place. Below the limits, each stage's
// work grows linearly (or as n log n) with the predicate's size.

import Synchronization

/// How large, deep and costly a predicate may be.
///
/// The parser refuses text past ``maximumLength`` or ``maximumNodes`` and
/// nesting past ``maximumDepth`` with a `PredicateSyntaxError`; a regular
/// expression (`MATCHES`) that takes more than ``regularExpressionSteps`` on
/// one value, or the patterns of one fetch that take more than
/// ``regularExpressionStepsPerFetch`` over all its rows, end its evaluation
/// with an error naming the pattern.
///
/// ```swift
/// var limits = PredicateLimits.standard
/// limits.maximumLength = 4_096          // what a client may send
/// PredicateLimits.standard = limits     // for every parse from now on
/// let tree = try PredicateParser.parse(text, limits: limits)
/// ```
public struct PredicateLimits: Hashable, Sendable {
    /// The longest predicate text, in UTF-8 bytes. Default: 1 MiB.
    public var maximumLength: Int
    /// The most tokens (names, literals, operators, punctuation) a predicate
    /// may have; every node of its tree holds at least one, so this bounds
    /// the tree too. Default: 262 144.
    public var maximumNodes: Int
    /// The deepest real nesting: parentheses, `NOT`, unary minus, `**`,
    /// function calls, indexes, aggregates and `SUBQUERY`. A flat chain
    /// (`a AND b AND …`, `x + y + …`) is not nesting and does not count.
    /// Default: 100.
    public var maximumDepth: Int
    /// The most operands one chain of `+ -`, `* /` or `UNION INTERSECT
    /// MINUS` may have. Such a chain is a left-leaning tree as deep as it is
    /// long, which every stage walks, so its length is capped with a clear
    /// message (a chain SQLite finds too deep runs in memory). `AND` and `OR`
    /// chains have no such limit (only ``maximumNodes``). Default: 1 000.
    public var maximumChain: Int
    /// The most work one `MATCHES` may do on one value, in the regular
    /// expression engine's steps (about 10 000 steps take 0.1 ms). Past it
    /// the evaluation ends with an error. Default: 10 000 000, which no
    /// pattern without catastrophic backtracking reaches on a value of less
    /// than a megabyte.
    public var regularExpressionSteps: Int
    /// The most work the `MATCHES` and `LIKE` tests of one fetch (a fetch,
    /// count, dictionary fetch or batch change, or one filter of a
    /// collection in memory) may do over all the values they test together,
    /// in the same steps as ``regularExpressionSteps`` (which bounds one
    /// value). Past it the fetch ends with
    /// `EvaluationError.fetchTooCostly`, naming the pattern, wherever Sift
    /// evaluates it (in memory, and in SQLite through Sift's functions; what
    /// PostgreSQL runs itself is outside it); a request may set its own
    /// (`regularExpressionStepLimit`). Only work the engine reports is
    /// counted (a regular expression reports every 10 000 steps on one value;
    /// LIKE counts the places it tries pieces longer than 64 characters that
    /// hold a `?`). Default: 100 000 000, a few seconds of backtracking at most.
    public var regularExpressionStepsPerFetch: Int
    /// The longest one fetch (a fetch, count, dictionary fetch or batch
    /// change, or one filter of a collection in memory) may work. Its loops
    /// over collections count their steps and read the clock every few
    /// thousand (in memory; SQLite through its progress handler), and
    /// PostgreSQL is given what is left as its `statement_timeout`; past it
    /// the fetch ends with `EvaluationError.fetchTooCostly`, naming the loop
    /// it was in where known. A store may set its own (`fetchTimeLimit`), a
    /// request too (`timeLimit`). Default: 5 seconds.
    public var fetchTimeLimit: Duration

    /// Limits with the given values; the defaults are those of ``standard``
    /// as shipped.
    ///
    /// - Parameters:
    ///   - maximumLength: The longest predicate text, in UTF-8 bytes (1 MiB by
    ///     default).
    ///   - maximumNodes: The most tokens a predicate may have (262 144 by
    ///     default).
    ///   - maximumDepth: The deepest nesting (100 by default).
    ///   - maximumChain: The most operands of one chain of arithmetic or set
    ///     operators (1 000 by default).
    ///   - regularExpressionSteps: The most steps one `MATCHES` or `LIKE` may
    ///     take on one value (10 000 000 by default).
    ///   - regularExpressionStepsPerFetch: The most steps the `MATCHES` and
    ///     `LIKE` tests of one fetch may take over all its values together
    ///     (100 000 000 by default).
    ///   - fetchTimeLimit: The longest one fetch may work (5 seconds by default).
    public init(maximumLength: Int = 1 << 20, maximumNodes: Int = 1 << 18, maximumDepth: Int = 100,
                maximumChain: Int = 1_000, regularExpressionSteps: Int = 10_000_000,
                regularExpressionStepsPerFetch: Int = 100_000_000, fetchTimeLimit: Duration = .seconds(5)) {
        self.fetchTimeLimit = fetchTimeLimit
        self.maximumLength = maximumLength
        self.maximumNodes = maximumNodes
        self.maximumDepth = maximumDepth
        self.maximumChain = maximumChain
        self.regularExpressionSteps = regularExpressionSteps
        self.regularExpressionStepsPerFetch = regularExpressionStepsPerFetch
    }

    private static let current = LockedState(PredicateLimits())

    /// The limits every parse and evaluation uses unless given others.
    /// Setting it affects what starts afterwards, on every thread.
    public static var standard: PredicateLimits {
        get { current.withLock { $0 } }
        set { current.withLock { $0 = newValue } }
    }
}
