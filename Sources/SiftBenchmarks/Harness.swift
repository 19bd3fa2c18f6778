// A small benchmark harness: every figure is measured next to a baseline in
// the same run and reported as a ratio, never asserted against a fixed time.

import Foundation

/// Times a closure over several rounds and keeps the fastest round, which is
/// the least disturbed by the rest of the machine.
struct Measurement {
    var name: String
    /// Nanoseconds per operation in the fastest round.
    var nanosecondsPerOperation: Double

    static func run(_ name: String, operations: Int, rounds: Int = 7, _ body: () -> Void) -> Measurement {
        body()  // warm up
        var best = Double.infinity
        let clock = ContinuousClock()
        for _ in 0..<rounds {
            let elapsed = clock.measure(body)
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            best = min(best, seconds * 1e9 / Double(operations))
        }
        return Measurement(name: name, nanosecondsPerOperation: best)
    }
}

extension Measurement {
    /// Times a baseline and a candidate in alternating rounds, so that
    /// whatever else the machine does falls on both alike; keeps each one's
    /// fastest round.
    static func compare(operations: Int, rounds: Int, setUp: () -> Void = {}, baseline: () -> Void,
                        candidate: () -> Void) -> (baseline: Measurement, candidate: Measurement)
    {
        setUp()
        baseline()
        setUp()
        candidate()
        var best = (Double.infinity, Double.infinity)
        let clock = ContinuousClock()
        func nanoseconds(_ d: Duration) -> Double {
            (Double(d.components.seconds) * 1e18 + Double(d.components.attoseconds)) / 1e9 / Double(operations)
        }
        for _ in 0..<rounds {
            setUp()
            best.0 = min(best.0, nanoseconds(clock.measure(baseline)))
            setUp()
            best.1 = min(best.1, nanoseconds(clock.measure(candidate)))
        }
        return (Measurement(name: "baseline", nanosecondsPerOperation: best.0),
                Measurement(name: "candidate", nanosecondsPerOperation: best.1))
    }
}

/// A duration in seconds.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}

/// Keeps a value alive so the optimizer cannot drop the work that made it.
@inline(never)
func blackHole<T>(_ value: T) {
    withExtendedLifetime(value) {}
}

/// Prints a table row.
func report(_ columns: String...) {
    print(columns.joined(separator: "  "))
}

func formatted(_ value: Double, digits: Int = 1) -> String {
    String(format: "%.\(digits)f", value)
}

/// The processor time this process has used so far (all its threads), in
/// seconds: unlike the wall clock, not lengthened while other processes
/// hold the cores.
func processorSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}

/// How long `body` took: on the wall clock and in processor time.
func timed(_ body: () -> Void) -> (wall: Double, processor: Double) {
    let clock = ContinuousClock()
    let start = processorSeconds()
    let wall = clock.measure(body)
    return (seconds(wall), processorSeconds() - start)
}
