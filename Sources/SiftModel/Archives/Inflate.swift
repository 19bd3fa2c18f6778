// Stage 2 (schema): raw DEFLATE (RFC 1951, no zlib header), as Core Data
// compresses a store's model cache, inflated by the system zlib.

import CZlib
import Foundation

enum Inflate {
    /// The most an inflated model may take: a model is kilobytes; a bomb is not.
    static let maximumSize = 64 << 20

    /// `data` inflated; nil when it is not raw DEFLATE or inflates past `maximumSize`.
    static func raw(_ data: Data) -> Data? {
        var stream = z_stream()
        guard inflateInit2_(&stream, -15, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else { return nil }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        let input = [UInt8](data)
        return input.withUnsafeBufferPointer { source -> Data? in
            stream.next_in = UnsafeMutablePointer(mutating: source.baseAddress)
            guard let available = UInt32(exactly: source.count) else { return nil }
            stream.avail_in = available
            while true {
                let status = chunk.withUnsafeMutableBufferPointer { buffer -> Int32 in
                    stream.next_out = buffer.baseAddress
                    stream.avail_out = UInt32(buffer.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                output.append(contentsOf: chunk[..<produced])
                guard output.count <= maximumSize else { return nil }
                if status == Z_STREAM_END { return output }
                guard status == Z_OK, produced > 0 || stream.avail_in > 0 else { return nil }
            }
        }
    }
}

extension DataModel {
    /// Reads a Core Data store's model cache (`Z_MODELCACHE.Z_CONTENT`): an
    /// archived model, raw-deflate compressed.
    ///
    /// - Parameter data: The compressed model cache, as the store keeps it.
    /// - Throws: `ModelError.unreadable` when the data does not inflate as raw
    ///   DEFLATE, or any `ModelError` from `init(compiledModel:path:)`.
    public init(modelCache data: Data) throws(ModelError) {
        guard let inflated = Inflate.raw(data) else {
            throw ModelError.unreadable(path: "the store's model cache", reason: "it does not inflate as raw DEFLATE")
        }
        try self.init(compiledModel: inflated, path: "the store's model cache")
    }
}
