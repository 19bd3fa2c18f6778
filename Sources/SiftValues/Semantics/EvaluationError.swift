// Stage 0 (values): what can stop an evaluation that has started.
//
// Evaluating a predicate is a tree of small non-throwing closures (memory)
// or SQL functions called by SQLite. The one thing that can stop it half way
// is a budget running out (a regular expression that backtracks without end).
// The code that notices records the error on its thread with
// `EvaluationFailure.record`; whoever started the evaluation collects it with
// `EvaluationFailure.take()` and throws it. Each thread has its own slot, so
// evaluations on different threads never see each other's errors.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Why an evaluation that had started was stopped.
public enum EvaluationError: Error, Hashable, Sendable, CustomStringConvertible {
    /// A `MATCHES` pattern needed more than `steps` steps of the regular
    /// expression engine on one value (``PredicateLimits/regularExpressionSteps``).
    case regularExpressionTooCostly(pattern: String, steps: Int)
    /// A `LIKE` pattern needed more than `steps` steps on one value: a long
    /// piece holding `?` (between two `*`s), tried at each place of a long
    /// value.
    case likeTooCostly(pattern: String, steps: Int)
    /// A key looked up in a value that has none (a string, a number), in a
    /// predicate bound without a model: Apple's `value(forKey:)` raises.
    /// `location` is the key path's place in the predicate's text (UTF-8
    /// offsets), when known.
    case notKeyValueCoding(key: String, type: String, location: Range<Int>?)
    /// An operator between values of types it cannot work on (a number
    /// ordered against a string, a substring of a number), in a predicate
    /// bound without a model: Apple raises.
    case incompatibleTypes(operation: String, left: String, right: String, location: Range<Int>?)
    /// A sum of integers beyond 64 bits (SQL databases refuse it too).
    case integerOverflow(operation: String)
    /// The `MATCHES` and `LIKE` tests of one fetch, over all its rows
    /// together, needed more than `steps` steps
    /// (``PredicateLimits/regularExpressionStepsPerFetch``, or the request's
    /// own limit; see ``EvaluationBudget``). `term` is the test that passed
    /// the budget, as `MATCHES '(.*)*x'` or `LIKE '*a?b*'`.
    ///
    /// Also a fetch that worked past its time limit
    /// (``PredicateLimits/fetchTimeLimit``, a store's or a request's own):
    /// then `term` is the loop it was in (`SUBQUERY(reports, $a, …)`, or the
    /// SQL statement), and `steps` the steps its loops had taken.
    case fetchTooCostly(term: String, steps: Int)

    /// Where in the predicate's text the error arose, as UTF-8 offsets.
    public var location: Range<Int>? {
        switch self {
        case .notKeyValueCoding(_, _, let location), .incompatibleTypes(_, _, _, let location): location
        case .regularExpressionTooCostly, .likeTooCostly, .integerOverflow, .fetchTooCostly: nil
        }
    }

    public var description: String {
        switch self {
        case .notKeyValueCoding(let key, let type, _):
            return "the key '\(key)' was looked up in \(type), which has no keys: only dictionaries, arrays of them "
                + "and key-value records have keys"
        case .incompatibleTypes(let operation, let left, let right, _):
            return "\(operation) cannot compare \(left) with \(right)"
        case .integerOverflow(let operation):
            return "\(operation) of integers is beyond 64 bits: convert the values to doubles, as in sum(x * 1.0)"
        case .likeTooCostly(let pattern, let steps):
            return "the LIKE pattern '\(Self.shortened(pattern))' needed more than \(steps) steps on one value "
                + "(PredicateLimits.regularExpressionSteps): shorten the pieces that hold '?' between its '*'s, "
                + "or raise the limit"
        case .fetchTooCostly(let term, let steps) where !term.hasPrefix("MATCHES ") && !term.hasPrefix("LIKE "):
            return "the fetch worked past its time limit (PredicateLimits.fetchTimeLimit, the store's fetchTimeLimit "
                + "or the request's timeLimit) after \(steps) steps of its loops, in \(Self.shortened(term)): "
                + "it visits too many objects (a subquery inside a subquery that reads the outer variable, over "
                + "large collections, costs the product of their sizes); select fewer objects, or raise the limit"
        case .fetchTooCostly(let term, let steps):
            return "the fetch's pattern matching needed more than \(steps) steps over all its rows "
                + "(PredicateLimits.regularExpressionStepsPerFetch, or the request's regularExpressionStepLimit), "
                + "and \(Self.shortened(term)) passed it: it costs many steps on each value; rewrite the pattern "
                + "so that it tries less (no nested repetition), select fewer rows, or raise the limit"
        case .regularExpressionTooCostly(let pattern, let steps):
            return "the regular expression '\(Self.shortened(pattern))' needed more than \(steps) steps on one value "
                + "(PredicateLimits.regularExpressionSteps): it backtracks too much; "
                + "rewrite it without nested repetition, or raise the limit"
        }
    }

    /// A pattern as a message shows it: its first 80 characters.
    static func shortened(_ pattern: String) -> String {
        pattern.count > 80 ? String(pattern.prefix(80)) + "…" : pattern
    }
}

/// The per-thread slot where an evaluation's error waits to be thrown.
/// Lowerings use it; applications see only the errors it carries.
public enum EvaluationFailure {
    private final class Box {
        let error: EvaluationError
        init(_ error: EvaluationError) { self.error = error }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key) { pointer in
            #if canImport(Darwin)
            Unmanaged<Box>.fromOpaque(pointer).release()
            #else
            if let pointer { Unmanaged<Box>.fromOpaque(pointer).release() }
            #endif
        }
        return key
    }()

    /// Records `error` for this thread, unless one is waiting already (the
    /// first error is the one reported).
    ///
    /// - Parameter error: The error that stops the evaluation.
    public static func record(_ error: EvaluationError) {
        guard pthread_getspecific(key) == nil else { return }
        pthread_setspecific(key, Unmanaged.passRetained(Box(error)).toOpaque())
    }

    /// The error waiting on this thread, left in place.
    public static var pending: EvaluationError? {
        pthread_getspecific(key).map { Unmanaged<Box>.fromOpaque($0).takeUnretainedValue().error }
    }

    /// Runs `body` as one evaluation: it starts with an empty slot, throws
    /// what `body` recorded, and gives back what was waiting before it (an
    /// outer evaluation's error, when a custom function evaluates another
    /// predicate).
    ///
    /// - Parameter body: The evaluation, which records an error rather than
    ///   throwing it.
    /// - Returns: What `body` returned, when it recorded no error.
    /// - Throws: `EvaluationError`: the first error `body` recorded on this
    ///   thread.
    @inlinable
    public static func scoped<T>(_ body: () -> T) throws(EvaluationError) -> T {
        let outer = take()
        let result = body()
        let failure = take()
        if let outer { record(outer) }
        if let failure { throw failure }
        return result
    }

    /// The error recorded on this thread since the last call, if any; the
    /// slot is empty afterwards.
    ///
    /// - Returns: The error recorded, or nil when there is none.
    public static func take() -> EvaluationError? {
        guard let pointer = pthread_getspecific(key) else { return nil }
        pthread_setspecific(key, nil)
        return Unmanaged<Box>.fromOpaque(pointer).takeRetainedValue().error
    }
}

extension EvaluationError: LocalizedError {
    /// The error's message, as `description` gives it, so that
    /// `localizedDescription` says what went wrong.
    public var errorDescription: String? { description }
}
