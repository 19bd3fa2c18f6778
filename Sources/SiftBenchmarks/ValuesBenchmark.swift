// Values benchmark: predicates against plain values with no model
// (`FormatPredicate`), next to hand-written Swift closures over the same
// values in the same run: 100 000 dictionaries as JSONSerialization gives
// them, and 100 000 Encodable structs (converted once into `ValueColumns`,
// as an application converts them before filtering; that conversion is
// timed on its own). Both sides return the matching elements.

import Foundation
import Sift

struct BenchPerson: Encodable {
    var name: String
    var age: Int
    var email: String
    var tags: [String]
}

func valuesBenchmark() {
    let count = 100_000
    var generator = SystemRandomNumberGenerator()
    let people = (0..<count).map { i in
        BenchPerson(name: "person\(i)", age: Int.random(in: 18...80, using: &generator),
                    email: i % 3 == 0 ? "p\(i)@example.com" : "p\(i)-at-example",
                    tags: i % 5 == 0 ? ["admin", "x"] : ["x"])
    }
    let json = try! JSONEncoder().encode(people)
    let dictionaries = try! JSONSerialization.jsonObject(with: json) as! [[String: Any]]
    let pattern = "[a-z0-9]+@[a-z]+\\.com"
    let regex = try! NSRegularExpression(pattern: "^(?:" + pattern + ")$")
    func handMatches(_ text: String) -> Bool {
        regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)) != nil
    }
    let olderThan = try! FormatPredicate(format: "age > %d", 40)
    let matches = try! FormatPredicate(format: "email MATCHES %@", pattern)

    report("== Values without a model: \(count) values, one core")
    // Converted once, as an application would (timed once: it is not what is compared).
    let clock = ContinuousClock()
    func microseconds(_ duration: Duration) -> String {
        formatted((Double(duration.components.seconds) * 1e6 + Double(duration.components.attoseconds) / 1e12) / Double(count),
                  digits: 2)
    }
    var trees: [PredicateValue] = []
    var columns: ValueColumns<BenchPerson>?
    report("Encodable structs to value trees, once: \(microseconds(clock.measure { trees = people.map { try! PredicateValue(encoding: $0) } })) us/value")
    report("Encodable structs to ValueColumns, once: \(microseconds(clock.measure { columns = try! ValueColumns(people) })) us/value")
    let table = columns!

    func row(_ name: String, _ baseline: () -> Int, _ candidate: () -> Int, target: String) {
        var (a, b) = (0, 0)
        let (hand, sift) = Measurement.compare(operations: count, rounds: 5, baseline: { a = baseline() },
                                               candidate: { b = candidate() })
        precondition(a == b, "\(name): \(a) vs \(b) matches")
        report(name.padding(toLength: 40, withPad: " ", startingAt: 0),
               "hand \(formatted(hand.nanosecondsPerOperation)) ns",
               "Sift \(formatted(sift.nanosecondsPerOperation)) ns",
               "= \(formatted(sift.nanosecondsPerOperation / hand.nanosecondsPerOperation, digits: 2))x  (target \(target))",
               "\(a) match")
    }
    row("dictionaries: age > 40", { dictionaries.filter { ($0["age"] as? Int).map { $0 > 40 } ?? false }.count },
        { try! olderThan.filter(dictionaries).count }, target: "<= 3x")
    row("dictionaries: email MATCHES", { dictionaries.filter { ($0["email"] as? String).map(handMatches) ?? false }.count },
        { try! matches.filter(dictionaries).count }, target: "<= 1.5x")
    row("Encodable structs: age > 40", { people.filter { $0.age > 40 }.count },
        { try! olderThan.filter(table).count }, target: "<= 3x")
    row("Encodable structs: email MATCHES", { people.filter { handMatches($0.email) }.count },
        { try! matches.filter(table).count }, target: "<= 1.5x")
    // One value tree at a time (`evaluate(with:)`), against the same trees read by hand.
    row("value trees, one by one: age > 40", {
        trees.filter { if case .dictionary(let d) = $0, case .int(let a)? = d["age"] { a > 40 } else { false } }.count
    }, { trees.filter { try! olderThan.evaluate(with: $0) }.count }, target: "-")
}
