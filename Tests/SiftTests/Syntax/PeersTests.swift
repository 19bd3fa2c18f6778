// Agreement with Apple's parser on 2 225 format strings from public test
// suites (../shared/peers). The file is test data that stays outside the
// repository: without it beside the checkout, this test is skipped.

import Foundation
import Sift
import Testing

struct PeerFormat: Decodable, Sendable {
    var source: String
    var file: String
    var line: Int
    var format: String
    var specifiers: [String]
    var arg_kinds: [String]
    var expect: String

    /// An argument of the kind the original test passed.
    static func argument(kind: String, specifier: String) -> PredicateValue {
        switch specifier {
        case "%d", "%i": return .int(1)
        case "%f", "%lf", "%e": return .double(1.5)
        case "%K": return .string("name")
        default: break
        }
        switch kind {
        case "number", "decimal128": return .int(1)
        case "string", "objectid", "url": return .string("text")
        case "nil", "unknown": return .null
        case "array", "collection": return .array([.int(1), .int(2)])
        case "dictionary": return .dictionary(["key": .int(1)])
        case "data": return .data(Data([1, 2, 3]))
        case "date": return .date(Date(timeIntervalSinceReferenceDate: 0))
        case "uuid": return .uuid(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
        case "object": return .object(ObjectReference(entity: "Object", id: 1))
        default: return .null
        }
    }

    var arguments: [PredicateValue] {
        zip(arg_kinds, specifiers).map { Self.argument(kind: $0, specifier: $1) }
    }
}

@Suite("Peer format strings")
struct PeersTests {
    static let formats: [PeerFormat]? = {
        guard let data = try? Data(contentsOf: Fixtures.peersURL) else { return nil }
        return String(decoding: data, as: UTF8.self).split(separator: "\n").compactMap {
            try? JSONDecoder().decode(PeerFormat.self, from: Data($0.utf8))
        }
    }()

    @Test("Sift accepts what Apple accepts and rejects what Apple rejects",
          .enabled(if: formats != nil, "../shared/peers is not beside the checkout"))
    func agreement() throws {
        let formats = try #require(Self.formats)
        #expect(formats.count == 2225)
        var disagreements: [String] = []
        for peer in formats {
            let result = Result { () throws(PredicateSyntaxError) in
                try PredicateParser.parse(peer.format, arguments: peer.arguments)
            }
            switch (peer.expect, result) {
            case ("parse", .failure(let error)):
                disagreements.append("rejected \(peer.source) \(peer.file):\(peer.line): \(peer.format)\n\(error.rendered())")
            case ("parse-error", .success(let tree)):
                disagreements.append("accepted \(peer.source) \(peer.file):\(peer.line): \(peer.format) as \(tree)")
            case ("parse", .success(let tree)):
                // Everything accepted also round-trips through the printer.
                let canonical = tree.canonicalFormat
                let again = try PredicateParser.parse(canonical.format, arguments: canonical.arguments)
                if again != tree { disagreements.append("round trip: \(peer.format) printed as \(canonical)") }
            default:
                break
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.count) disagreements:\n\(disagreements.prefix(40).joined(separator: "\n"))")
    }
}
