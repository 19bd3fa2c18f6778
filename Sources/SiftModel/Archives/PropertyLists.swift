// Stage 2 (schema): property lists from files a user hands Sift (compiled
// models, a store's metadata and model cache), read by Foundation only once
// they are known to be safe for it. Foundation's binary property-list reader
// crashes on some malformed input — a set whose members it cannot hash, a
// container that contains itself — so a binary property list is checked
// first: its trailer, offsets and references in range, no sets, dictionary
// keys that are strings, and no cycles.

import Foundation

/// Reading property lists that may be hostile.
public enum PropertyLists {
    /// `data` as a property list; nil when it is not one, or is a binary
    /// property list Foundation cannot read safely.
    ///
    /// - Parameter data: The bytes to read, XML or binary.
    /// - Returns: The property list's top object, or nil.
    public static func read(_ data: Data) -> Any? {
        if data.starts(with: Array("bplist".utf8)) {
            guard isSafeBinary([UInt8](data)) else { return nil }
        }
        return try? PropertyListSerialization.propertyList(from: data, format: nil)
    }

    /// How deep containers may nest: Foundation reads them recursively.
    static let maximumDepth = 512

    /// Whether a binary property list is well formed in the ways Foundation needs.
    static func isSafeBinary(_ bytes: [UInt8]) -> Bool {
        guard bytes.count >= 40, bytes.starts(with: Array("bplist00".utf8)) else { return false }
        let trailer = bytes.count - 32
        let offsetSize = Int(bytes[trailer + 6])
        let referenceSize = Int(bytes[trailer + 7])
        guard (1...8).contains(offsetSize), (1...8).contains(referenceSize) else { return false }
        func integer(_ at: Int, _ size: Int) -> Int? {
            guard at >= 0, size <= 8, at + size <= bytes.count else { return nil }
            var value: UInt64 = 0
            for byte in bytes[at..<at + size] { value = value << 8 | UInt64(byte) }
            return Int(exactly: value)
        }
        guard let count = integer(trailer + 8, 8), let top = integer(trailer + 16, 8),
              let table = integer(trailer + 24, 8), count > 0, count <= bytes.count, top < count,
              table >= 8, table + count * offsetSize <= trailer else {
            return false
        }
        var offsets: [Int] = []
        offsets.reserveCapacity(count)
        for i in 0..<count {
            guard let offset = integer(table + i * offsetSize, offsetSize), offset >= 8, offset < table else { return false }
            offsets.append(offset)
        }
        /// The references an object holds (members, or keys then values), and
        /// for a dictionary how many are keys; nil when malformed.
        func children(_ index: Int) -> (references: [Int], keys: Int)? {
            let offset = offsets[index]
            let marker = bytes[offset]
            let kind = marker >> 4
            guard kind == 0xA || kind == 0xD || kind == 0xC else { return ([], 0) }
            var length = Int(marker & 0x0F)
            var start = offset + 1
            if length == 0x0F {
                // The length follows as an integer object: 0x1N, then 2^N bytes.
                guard start < trailer, bytes[start] >> 4 == 0x1 else { return nil }
                let size = 1 << Int(bytes[start] & 0x0F)
                guard let n = integer(start + 1, size) else { return nil }
                length = n
                start += 1 + size
            }
            guard kind != 0xC else { return nil }  // a set: not in models, and Foundation may crash on one
            let references = kind == 0xD ? 2 * length : length
            guard references <= count * 2, start + references * referenceSize <= trailer else { return nil }
            var result: [Int] = []
            result.reserveCapacity(references)
            for r in 0..<references {
                guard let reference = integer(start + r * referenceSize, referenceSize), reference < count else { return nil }
                result.append(reference)
            }
            return (result, kind == 0xD ? length : 0)
        }
        // Every container's references in range, dictionary keys strings, no
        // cycle and no nesting past the limit: a walk from the top object.
        var state = [UInt8](repeating: 0, count: count)  // 0 unseen, 1 on the path, 2 done
        var stack: [(index: Int, references: [Int], next: Int)] = []
        func enter(_ index: Int) -> Bool {
            guard let (references, keys) = children(index) else { return false }
            for key in references.prefix(keys) where ![0x5, 0x6, 0x7].contains(bytes[offsets[key]] >> 4) { return false }
            state[index] = 1
            stack.append((index, references, 0))
            return stack.count <= maximumDepth
        }
        guard enter(top) else { return false }
        while let last = stack.last {
            if last.next == last.references.count {
                state[last.index] = 2
                stack.removeLast()
                continue
            }
            let child = last.references[last.next]
            stack[stack.count - 1].next += 1
            switch state[child] {
            case 1: return false  // a container inside itself
            case 2: continue
            default: guard enter(child) else { return false }
            }
        }
        return true
    }
}
