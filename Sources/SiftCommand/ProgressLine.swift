// Progress on a terminal: one line on standard error, rewritten in place
// (`\r`) while a command works and cleared when it is done, so that only the
// command's result stays on the screen:
//
//     importing  45 000 / 200 000 objects  12 300/s  13 s left
//     copying: reading  0 / 20 021 objects
//     querying…  3 s
//
// It shows only when standard output and standard error are both a
// terminal (someone is watching: a pipe, a file or a log gets nothing), and
// not with `--quiet`. The work only records how far it has got; a thread of
// the line's own draws it, ten times a second at most, and only what changed.

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// `--quiet`, for the commands that show progress on long work (`import`,
/// `copy`, `migrate`, `demo`, `history --delete-before`).
struct QuietOption: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Show no progress line, and print nothing but the command's result.")
    var quiet = false

    /// A progress line for `label`, shown unless `--quiet` was given.
    func progress(_ label: String, main step: WorkProgress.Step? = nil) -> ProgressLine {
        ProgressLine(label, main: step, shown: !quiet && ProgressLine.isWatched)
    }

    /// Prints `text` on standard output unless `--quiet` was given: what a command
    /// says along the way, not its result.
    func remark(_ text: String) {
        if !quiet { print(text) }
    }
}

/// A progress line on standard error, while a command works: how far it
/// has got (done / total, the rate, the time left) as the work reports it,
/// or the time elapsed while it reports nothing; also the command's timing.
final class ProgressLine: Sendable {
    /// Whether a progress line shows: standard output and standard error are both a terminal.
    static let isWatched = isatty(STDOUT_FILENO) == 1 && isatty(STDERR_FILENO) == 1

    /// How often the line is redrawn, at most.
    static let redrawInterval = 0.1
    /// How long work goes before a line shows for it: quicker work shows none.
    static let firstCountAfter = 0.25
    /// How long work that reports no count goes before its elapsed time shows.
    static let firstTimeAfter = 1.0

    private struct State {
        /// The last report, and when its step began.
        var latest: WorkProgress?
        var stepStart = Date()
        /// When ``finish()`` was called.
        var end: Date?
        /// What the terminal shows now, and how many columns it takes.
        var shown = ""
        var shownWidth = 0
    }

    private let label: String
    private let mainStep: WorkProgress.Step?
    private let start = Date()
    private let state = LockedState(State())
    private let isShown: Bool

    /// Starts a line for `label` (`"importing"`): the work's steps show after
    /// it (`copying: reading`), but for `main`, which is the label's own.
    /// Shown only when `shown` (by default: when the output is watched).
    init(_ label: String, main: WorkProgress.Step? = nil, shown: Bool = ProgressLine.isWatched) {
        self.label = label
        self.mainStep = main
        self.isShown = shown
        guard shown else { return }
        Thread.detachNewThread { [self] in
            while true {
                Thread.sleep(forTimeInterval: Self.redrawInterval)
                guard draw() else { return }
            }
        }
    }

    /// Records how far the work has got (drawn on the line's own schedule).
    func report(_ progress: WorkProgress) {
        guard isShown else { return }
        state.withLock { state in
            if state.latest?.step != progress.step { state.stepStart = Date() }
            state.latest = progress
        }
    }

    /// Stops, clearing the line; the elapsed time stops here.
    func finish() {
        state.withLock { state in
            guard state.end == nil else { return }
            state.end = Date()
            if state.shownWidth > 0 { Self.write("\r" + String(repeating: " ", count: state.shownWidth) + "\r") }
            state.shown = ""
            state.shownWidth = 0
        }
    }

    /// The milliseconds from the start to ``finish()`` (or to now, before it):
    /// the work timed, not the printing after it.
    var elapsedMilliseconds: Double { ((state.withLock { $0.end }) ?? Date()).timeIntervalSince(start) * 1000 }

    /// The elapsed time as messages print it: `in 12.3 ms`.
    var elapsed: String { "in \(String(format: "%.1f", elapsedMilliseconds)) ms" }

    /// Draws the line when it changed; false once the work is finished.
    private func draw() -> Bool {
        state.withLock { state in
            guard state.end == nil else { return false }
            let now = Date()
            guard let text = line(state, now: now), text != state.shown else { return true }
            let columns = Self.columns()
            let fitted = text.count >= columns ? String(text.prefix(max(0, columns - 2))) + "…" : text
            let width = fitted.count
            Self.write("\r" + fitted + String(repeating: " ", count: max(0, state.shownWidth - width)))
            state.shown = text
            state.shownWidth = width
            return true
        }
    }

    /// The line for the work's state now; nil while the work is too young to show one.
    private func line(_ state: State, now: Date) -> String? {
        let running = now.timeIntervalSince(start)
        guard let progress = state.latest else {
            guard running >= Self.firstTimeAfter else { return nil }
            return "\(label)…  \(Int(running)) s"
        }
        guard running >= Self.firstCountAfter else { return nil }
        var text = progress.step == mainStep ? label : "\(label): \(Self.name(progress.step))"
        text += "  \(Self.grouped(progress.done)) / \(Self.grouped(progress.total)) \(Self.unit(progress.step))"
        let seconds = now.timeIntervalSince(state.stepStart)
        if progress.done > 0, seconds >= Self.firstCountAfter {
            let rate = Double(progress.done) / seconds
            text += "  \(Self.grouped(Int(rate.rounded())))/s"
            if progress.done < progress.total {
                text += "  " + Self.duration(Double(progress.total - progress.done) / rate) + " left"
            }
        }
        return text
    }

    /// What a step is called on the line.
    static func name(_ step: WorkProgress.Step) -> String {
        switch step {
        case .readingObjects: "reading"
        case .writingObjects: "writing"
        case .copyingHistory: "copying history"
        case .deletingHistory: "deleting history"
        }
    }

    /// What a step counts.
    static func unit(_ step: WorkProgress.Step) -> String {
        switch step {
        case .readingObjects, .writingObjects: "objects"
        case .copyingHistory: "changes"
        case .deletingHistory: "transactions"
        }
    }

    /// A count with its thousands apart: `45 000`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text += " " }
            text.append(digit)
        }
        return (number < 0 ? "-" : "") + text
    }

    /// A time left, as precise as it is worth: `13 s`, `2 min 5 s`, `1 h 3 min`.
    static func duration(_ seconds: Double) -> String {
        guard seconds.isFinite else { return "?" }
        let whole = Int(seconds.rounded(.up))
        if whole < 60 { return "\(whole) s" }
        if whole < 3600 { return "\(whole / 60) min \(whole % 60) s" }
        return "\(whole / 3600) h \(whole % 3600 / 60) min"
    }

    /// The terminal's width in columns (80 when it does not say).
    private static func columns() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        return 80
    }

    private static func write(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
