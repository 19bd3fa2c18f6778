// The HTTP API's document and its generated code stay together: the code in
// Sources/SiftHTTPAPI/Generated was made from the document as it is
// (Scripts/generate-openapi records the document's SHA-256 beside it), and
// every operation the document names is one the server implements.

import Foundation
import Testing

@Suite("HTTP API document")
struct HTTPAPIDocumentTests {
    static let folder = Fixtures.repositoryRoot.appendingPathComponent("Sources/SiftHTTPAPI")

    @Test("The generated code was made from the document as it is (run Scripts/generate-openapi after changing it)")
    func generatedFromTheDocument() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum", Self.folder.appendingPathComponent("openapi.yaml").path]
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        process.waitUntilExit()
        let digest = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self).split(separator: " ").first
        let recorded = try String(contentsOf: Self.folder.appendingPathComponent("Generated/openapi.yaml.sha256"), encoding: .utf8)
        #expect(digest.map(String.init) == recorded.trimmingCharacters(in: .whitespacesAndNewlines))
    }

    @Test("Every operation of the document is in the generated server protocol")
    func operations() throws {
        let document = try String(contentsOf: Self.folder.appendingPathComponent("openapi.yaml"), encoding: .utf8)
        let operations = document.split(separator: "\n").compactMap { line -> String? in
            let text = line.trimmingCharacters(in: .whitespaces)
            return text.hasPrefix("operationId: ") ? String(text.dropFirst("operationId: ".count)) : nil
        }
        #expect(operations.count == 10)
        let server = try String(contentsOf: Self.folder.appendingPathComponent("Generated/Types.swift"), encoding: .utf8)
        for operation in operations { #expect(server.contains("func \(operation)(_ input:"), "\(operation)") }
    }
}
