// The store layout lives in one place: the SQL stage's schema mapping
// (Sources/SiftSQL). No other library source spells a table or column name
// of the layout, or writes an SQL statement of its own; swapping the mapping
// swaps the layout.

import Foundation
import Testing

@Suite("Layout names")
struct LayoutNamesTests {
    /// The repository's Sources folder, from this file's path.
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    /// Names of Sift's layout (as words: `SIFT_FUZZ_TARGET` is not one), and
    /// the start of every statement that touches tables.
    static let forbidden = try! NSRegularExpression(pattern: #"(?<![A-Za-z0-9_])Z_(PK|OPT|METADATA|KEY|VALUE|SOURCE|TARGET|FOLD)"#
        + #"|sqlite_master|"(SELECT|INSERT|UPDATE|DELETE|CREATE) | JOIN "#)

    static func offends(_ line: String) -> String? {
        let range = NSRange(line.startIndex..., in: line)
        return forbidden.firstMatch(in: line, range: range).flatMap { Range($0.range, in: line).map { String(line[$0]) } }
    }

    /// Modules that may spell them: the SQL stage, and the benchmarks'
    /// hand-written SQL baselines.
    static let allowed: Set<String> = ["SiftSQL", "SiftBenchmarks"]

    @Test func noLayoutNameOutsideTheSQLStage() throws {
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).filter { !Self.allowed.contains($0) }
        #expect(modules.contains("SiftStore"))
        var offenders: [String] = []
        for module in modules {
            let folder = Self.sources.appendingPathComponent(module)
            guard let files = FileManager.default.enumerator(atPath: folder.path) else { continue }
            for case let file as String in files where file.hasSuffix(".swift") {
                let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
                    let code = line.trimmingCharacters(in: .whitespaces)
                    guard !code.hasPrefix("//") else { continue }
                    if let name = Self.offends(code) { offenders.append("\(module)/\(file):\(number + 1): \(name)") }
                }
            }
        }
        #expect(offenders.isEmpty, "layout names outside the SQL stage:\n\(offenders.joined(separator: "\n"))")
    }

    /// The check sees what it looks for.
    @Test func theCheckFindsANameWhenThereIsOne() {
        #expect(Self.offends(#"let key = "\"Z_PK\"""#) == "Z_PK")
        #expect(Self.offends(#"sql = "DELETE FROM t""#) == "\"DELETE ")
        #expect(Self.offends(#"environment["SIFT_FUZZ_TARGET"]"#) == nil)
    }
}
