// Store stage: how far long store work has got — an import, a copy, a
// migration, deleting history — told to a closure as the work goes: at the
// start and end of each step and every thousand units or so between, on
// the thread doing the work; nothing is counted when no closure is given.

/// How far a long piece of store work has got: the step it is in, and how
/// many of that step's units are done.
///
/// Work of several steps reports each from zero to its own total, in
/// order: a copy reads every object, then writes them; a migration reads,
/// writes, then copies the store's history.
///
/// ```swift
/// try source.copy(to: destination) { progress in
///     print("\(progress.step): \(progress.done) of \(progress.total)")
/// }
/// ```
///
/// A store reports at the start of each step, every ``interval`` units (or,
/// for a step done in batches, after each batch: reading a table at a
/// time, deleting history about a hundredth at a time) and at the step's
/// end, on the thread doing the work: keep the closure quick (a progress
/// bar keeps the last report and draws it on its own schedule).
public struct WorkProgress: Sendable, Hashable {
    /// A step of long store work, and what it counts.
    public enum Step: String, Sendable, Hashable, CaseIterable {
        /// Reading every object of a store (a copy's or a migration's
        /// source): counts objects, reported a table at a time.
        case readingObjects
        /// Writing objects into a store (an import, a copy, a migration): counts objects.
        case writingObjects
        /// Copying a store's persistent history into its migrated file: counts changes.
        case copyingHistory
        /// Deleting persistent history: counts transactions.
        case deletingHistory
    }

    /// The step under way.
    public var step: Step
    /// How many of the step's units are done.
    public var done: Int
    /// How many units the step has in all.
    public var total: Int

    /// How far a step has got.
    ///
    /// - Parameters:
    ///   - step: The step under way.
    ///   - done: How many of its units are done.
    ///   - total: How many units it has in all.
    public init(step: Step, done: Int, total: Int) {
        self.step = step
        self.done = done
        self.total = total
    }

    /// The part of the step done, from 0 to 1 (1 for a step with nothing to do).
    public var fractionDone: Double {
        total > 0 ? min(1, Double(max(0, done)) / Double(total)) : 1
    }

    /// How many units a store does between two reports of a step done a
    /// unit at a time (writing objects, copying history changes).
    public static let interval = 1_000
}

/// Reports one step of work to a closure: at its start, every `interval`
/// units, and at its end. Costs a comparison per unit when there is no
/// closure.
struct ProgressReporter {
    private let report: ((WorkProgress) -> Void)?
    private let step: WorkProgress.Step
    private let total: Int
    private let interval: Int
    private(set) var done = 0
    private var next: Int

    /// Starts a step of `total` units, reporting that none is done. A step
    /// done a batch at a time (a table, a hundredth of the history) passes
    /// an `interval` of 1, so that it reports after each batch.
    init(_ report: ((WorkProgress) -> Void)?, _ step: WorkProgress.Step, total: Int, interval: Int = WorkProgress.interval) {
        self.report = report
        self.step = step
        self.total = total
        self.interval = max(1, interval)
        next = self.interval
        report?(WorkProgress(step: step, done: 0, total: total))
    }

    /// Counts `count` more units done; reports when another interval is done.
    mutating func advance(by count: Int = 1) {
        guard let report else { return }
        done += count
        if done >= next, done < total {
            report(WorkProgress(step: step, done: done, total: total))
            next = done + interval
        }
    }

    /// Reports the step done (a step of no units was, at its start).
    func finish() {
        if total > 0 { report?(WorkProgress(step: step, done: total, total: total)) }
    }
}
