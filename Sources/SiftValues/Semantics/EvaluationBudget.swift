// Stage 0 (values): the budget a whole fetch's pattern matching shares.
//
// `PredicateLimits.regularExpressionSteps` bounds the work of one MATCHES or
// LIKE on one value. A fetch tests every row, so a pattern that stays just
// under that bound on each of many rows could run for minutes. So a fetch
// runs its evaluation as one budget of steps for all its rows together
// (`PredicateLimits.regularExpressionStepsPerFetch`, or the request's own):
// each match charges the steps it took, as it learns them (the regular
// expression engine reports every 10 000 steps; LIKE counts its own), and
// the match that passes what is left stops, recording
// `EvaluationError.fetchTooCostly` naming its pattern, which ends the
// evaluation as any `EvaluationFailure` does.
//
// Like `EvaluationFailure`, the budget belongs to a thread: a fetch's
// evaluation (the memory lowering's closures, or SQLite calling Sift's
// functions for each row of a statement) runs on the thread that started
// it, so one budget spans every row, every statement and the residual of
// one fetch.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The budget of pattern-matching steps that everything one fetch evaluates
/// shares, across all its rows: the stores run each fetch, count, dictionary
/// fetch and batch change under one, and the memory lowering runs each
/// filter under one when it is not inside a fetch already.
///
/// ```swift
/// let matching = try EvaluationBudget.run(steps: 50_000_000) { () throws(EvaluationError) in
///     try predicate.filter(rows)   // every MATCHES and LIKE of every row shares the 50 000 000 steps
/// }
/// ```
public enum EvaluationBudget {
    /// One fetch's budget: how many steps it may take, and how many it took.
    final class Budget {
        let limit: Int
        var used = 0
        init(limit: Int) { self.limit = limit }

        /// The steps left (none once it is spent).
        var remaining: Int { max(0, limit - used) }
    }

    private static let key: pthread_key_t = {
        var key = pthread_key_t()
        // Each budget is owned by the `run` that set it, which restores the
        // slot before it returns: nothing to release when a thread ends.
        pthread_key_create(&key, nil)
        return key
    }()

    /// The budget this thread's evaluation charges, if it runs under one.
    static var current: Budget? {
        pthread_getspecific(key).map { Unmanaged<Budget>.fromOpaque($0).takeUnretainedValue() }
    }

    /// Runs `body` as one fetch: every `MATCHES` and `LIKE` it evaluates on
    /// this thread shares `steps` steps, whatever budget ran before (which
    /// is back when `body` returns).
    ///
    /// - Parameters:
    ///   - steps: The most steps of pattern matching `body` may take, over
    ///     every value it tests.
    ///   - body: The evaluation. A pattern that passes the budget records
    ///     ``EvaluationError/fetchTooCostly(term:steps:)`` (``EvaluationFailure``)
    ///     and answers false: the evaluation then throws it.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw.
    public static func run<T, E: Error>(steps: Int, _ body: () throws(E) -> T) throws(E) -> T {
        let outer = pthread_getspecific(key)
        let budget = Unmanaged.passRetained(Budget(limit: max(0, steps)))
        pthread_setspecific(key, budget.toOpaque())
        defer {
            pthread_setspecific(key, outer)
            budget.release()
        }
        return try body()
    }

    /// Runs `body` under the budget this thread already runs under (a
    /// fetch's), or, when there is none, as one fetch with `steps` steps.
    ///
    /// - Parameters:
    ///   - steps: The budget of a new fetch, when `body` is not inside one.
    ///   - body: The evaluation.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw.
    public static func joining<T, E: Error>(orRunning steps: Int, _ body: () throws(E) -> T) throws(E) -> T {
        if pthread_getspecific(key) != nil { return try body() }
        return try run(steps: steps, body)
    }

    /// The steps the budget this thread runs under has used so far; nil
    /// outside a fetch.
    public static var usedSteps: Int? { current?.used }

    /// The steps the budget this thread runs under has left (what a
    /// backend that matches patterns itself may take); nil outside a fetch.
    public static var remainingSteps: Int? { current.map { max($0.limit - $0.used, 0) } }
}
