// Every input that once crashed a fuzz target (Fixtures/FuzzCrashes/TARGET/),
// run through that target again: a law broken again ends the test process,
// as it ended the fuzzer. Fuzz/run saves new crashes under
// .build-fuzz/crashes/; each one found is copied here with a name that says
// what it was.

import Foundation
@testable import SiftFuzz
import Testing

@Suite("Inputs that crashed the fuzzers")
struct FuzzCrashTests {
    static let folder = Fixtures.repositoryRoot.appendingPathComponent("Tests/SiftTests/Fixtures/FuzzCrashes")

    static var inputs: [String] {
        let targets = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return targets.sorted().flatMap { target in
            ((try? FileManager.default.contentsOfDirectory(atPath: folder.appendingPathComponent(target).path)) ?? [])
                .sorted().map { "\(target)/\($0)" }
        }
    }

    @Test("Replayed through their target", arguments: inputs)
    func replay(_ input: String) throws {
        let target = try #require(FuzzTarget.named(String(input.split(separator: "/")[0])))
        let data = try Data(contentsOf: Self.folder.appendingPathComponent(input))
        target.run(data)
    }

    @Test func everyTargetHasItsSeeds() throws {
        for target in FuzzTarget.all {
            let seeds = Fixtures.repositoryRoot.appendingPathComponent("Fuzz/Corpus/\(target.name)").path
            #expect(((try? FileManager.default.contentsOfDirectory(atPath: seeds)) ?? []).count > 0, "\(target.name)")
        }
    }
}
