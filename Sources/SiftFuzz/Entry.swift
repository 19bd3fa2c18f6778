// Fuzzing: the entry point.
//
// Built with `--sanitize fuzzer` and `-DSIFT_FUZZING` (Fuzz/run does both),
// libFuzzer's own `main` runs, and calls `LLVMFuzzerTestOneInput` with each
// input for the target SIFT_FUZZ_TARGET names. Built normally, the binary
// replays inputs instead, so an input libFuzzer saved can be run in a debugger:
//
//     sift-fuzz TARGET FILE…     runs each file (or each file of a folder)

import Foundation

#if SIFT_FUZZING
nonisolated(unsafe) var selectedTarget: FuzzTarget?

/// Called by libFuzzer once, before the first input.
@_cdecl("LLVMFuzzerInitialize")
public func fuzzerInitialize(_ argc: UnsafeMutablePointer<CInt>?, _ argv: UnsafeMutableRawPointer?) -> CInt {
    let name = ProcessInfo.processInfo.environment["SIFT_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget.named(name) else { usage() }
    selectedTarget = target
    if name == "pipeline" { _ = World.shared }
    return 0
}

/// Called by libFuzzer with each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzerTestOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    selectedTarget?.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}
#else
@main
struct FuzzMain {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        guard let name = arguments.first, let target = FuzzTarget.named(name) else { usage() }
        var count = 0
        for path in arguments.dropFirst() {
            var isDirectory: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory)
            let files = isDirectory.boolValue
                ? ((try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []).sorted().map { path + "/" + $0 }
                : [path]
            for file in files {
                guard let data = FileManager.default.contents(atPath: file) else { continue }
                target.run(data)
                count += 1
            }
        }
        print("\(name): \(count) inputs replayed, no law broken")
    }
}
#endif

func usage() -> Never {
    let names = FuzzTarget.all.map(\.name).joined(separator: ", ")
    FileHandle.standardError.write(Data("""
        usage: sift-fuzz TARGET FILE…  (replays inputs; Fuzz/run builds the fuzzer)
        targets: \(names); the fuzzer reads its target from SIFT_FUZZ_TARGET

        """.utf8))
    exit(64)
}
