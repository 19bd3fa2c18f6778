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
// A fetch's budget is also one of time (issue 49): `PredicateLimits.fetchTimeLimit`,
// a store's own or a request's. Work that could grow without bound counts its
// steps against it: the memory lowering each member of every loop over a
// collection (a subquery, a key path through a to-many relationship), SQLite
// a step of its progress handler (every `sqliteStepsPerCheck` instructions of
// its virtual machine); every few thousand steps the clock is read, and the
// fetch past its time ends with `EvaluationError.fetchTooCostly` naming the
// loop it was in. PostgreSQL, which runs its statements itself, is given what
// is left as its `statement_timeout` (`remainingTime`).
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
        /// When the fetch must have ended; nil for no time limit.
        let deadline: ContinuousClock.Instant?
        /// The time limit the deadline was set from, for the error.
        let timeLimit: Duration?
        /// The steps of loops (and of SQLite's progress handler) so far.
        var loopSteps = 0
        /// The loop steps at which the clock is read next.
        var nextCheck = EvaluationBudget.stepsPerClockCheck
        /// Whether the time ran out: every later step stops at once.
        var expired = false
        init(limit: Int, deadline: ContinuousClock.Instant? = nil, timeLimit: Duration? = nil) {
            self.limit = limit
            self.deadline = deadline
            self.timeLimit = timeLimit
        }

        /// The steps left (none once it is spent).
        var remaining: Int { max(0, limit - used) }

        @inline(__always)
        func chargeLoop(_ steps: Int, term: () -> String) -> Bool {
            if expired { return false }
            let (sum, overflow) = loopSteps.addingReportingOverflow(max(0, steps))
            loopSteps = overflow ? .max : sum
            guard loopSteps >= nextCheck, let deadline else { return true }
            let (next, over) = loopSteps.addingReportingOverflow(EvaluationBudget.stepsPerClockCheck)
            nextCheck = over ? .max : next
            guard ContinuousClock.now >= deadline else { return true }
            expired = true
            EvaluationFailure.record(.fetchTooCostly(term: term(), steps: loopSteps))
            return false
        }
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
        try run(steps: steps, timeLimit: nil, body)
    }

    /// Runs `body` as one fetch with a budget of pattern steps and of time:
    /// every `MATCHES` and `LIKE` it evaluates on this thread shares `steps`
    /// steps, and every loop over a collection (in memory, or SQLite's
    /// statements) stops once `timeLimit` has passed since `body` began, or
    /// when the fetch this one runs inside must end, if that is sooner.
    ///
    /// ```swift
    /// let rows = try EvaluationBudget.run(steps: 100_000_000, timeLimit: .seconds(5)) { () throws(EvaluationError) in
    ///     try predicate.filter(rows)   // ends with .fetchTooCostly after about 5 s at most
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - steps: The most steps of pattern matching `body` may take, over
    ///     every value it tests.
    ///   - timeLimit: The longest `body`'s loops may run; nil for no limit of
    ///     its own (an enclosing fetch's still holds).
    ///   - body: The evaluation. A loop still running past the time records
    ///     ``EvaluationError/fetchTooCostly(term:steps:)`` naming itself, and
    ///     the evaluation then throws it.
    /// - Returns: What `body` returned.
    /// - Throws: What `body` threw.
    public static func run<T, E: Error>(steps: Int, timeLimit: Duration?, _ body: () throws(E) -> T) throws(E) -> T {
        let outer = pthread_getspecific(key)
        var deadline = timeLimit.map { ContinuousClock.now.advanced(by: max($0, .zero)) }
        var limit = timeLimit
        if let enclosing = current, let outerDeadline = enclosing.deadline, deadline.map({ outerDeadline < $0 }) ?? true {
            deadline = outerDeadline
            limit = enclosing.timeLimit
        }
        let budget = Unmanaged.passRetained(Budget(limit: max(0, steps), deadline: deadline, timeLimit: limit))
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
        return try run(steps: steps, timeLimit: PredicateLimits.standard.fetchTimeLimit, body)
    }

    /// How many loop steps pass between two readings of the clock.
    static let stepsPerClockCheck = 4_096

    /// How many instructions of SQLite's virtual machine one call of its
    /// progress handler stands for (``chargeLoop(_:term:)`` is charged that).
    public static let sqliteStepsPerCheck: Int32 = 1_000

    /// Charges `steps` steps of a loop over a collection to the fetch this
    /// thread runs (nothing outside one), reading the clock every few
    /// thousand steps.
    ///
    /// - Parameters:
    ///   - steps: The members the loop is about to visit (or the instructions
    ///     SQLite ran).
    ///   - term: The loop, as an error names it (built only when the time has
    ///     run out).
    /// - Returns: False when the fetch is past its time: the loop stops (as
    ///   if it had no members), and ``EvaluationError/fetchTooCostly(term:steps:)``
    ///   is recorded (``EvaluationFailure``) for the evaluation to throw.
    @inline(__always)
    public static func chargeLoop(_ steps: Int, term: @autoclosure () -> String) -> Bool {
        guard let budget = current else { return true }
        return budget.chargeLoop(steps, term: term)
    }

    /// The time left of the fetch this thread runs: nil outside a fetch, or
    /// when it has no time limit; zero once it has passed. A backend that
    /// runs statements itself (PostgreSQL's `statement_timeout`) is given it.
    public static var remainingTime: Duration? {
        guard let deadline = current?.deadline else { return nil }
        return max(.zero, ContinuousClock.now.duration(to: deadline))
    }

    /// The error of a fetch this thread runs that ran out of its time in
    /// `term`, for a backend that stopped its statement when told the time
    /// was up (PostgreSQL cancels a statement past its `statement_timeout`)
    /// to throw; later loops of the fetch stop at once.
    ///
    /// - Parameter term: What was running, as the error names it.
    /// - Returns: ``EvaluationError/fetchTooCostly(term:steps:)`` with the
    ///   loop steps taken so far.
    public static func timedOut(in term: String) -> EvaluationError {
        current?.expired = true
        return .fetchTooCostly(term: term, steps: current?.loopSteps ?? 0)
    }

    /// The steps the budget this thread runs under has used so far; nil
    /// outside a fetch.
    public static var usedSteps: Int? { current?.used }

    /// The steps the budget this thread runs under has left (what a
    /// backend that matches patterns itself may take); nil outside a fetch.
    public static var remainingSteps: Int? { current.map { max($0.limit - $0.used, 0) } }
}
