// Memory stage: a row cache's entries by primary key. Stores number their
// rows from 1 up (Core Data's Z_PK, a PostgreSQL sequence), so entries live
// in pages of 64 addressed by the key itself: no hashing, and a fetch in
// key order touches memory in order. Keys the pages do not cover (negative
// keys, keys far beyond the rest, keys too sparse to fill pages) go to a
// dictionary. Pages are shared by copies of the index and copied when one
// of them changes a page, so a snapshot costs one array's copy, and a
// change after it copies one page.

/// Entries of a row cache's table by primary key (see the file's comment).
@usableFromInline
package struct RowIndex: Sendable {
    /// Keys per page, as a shift.
    @usableFromInline static let pageShift = 6
    /// Keys per page.
    @usableFromInline static let pageSize = 1 << pageShift

    /// The pages by `key >> pageShift`; nil where no key of the page has an
    /// entry.
    @usableFromInline var pages: [RowIndexPage?] = []
    /// Entries whose keys the pages do not cover.
    private var overflow: [Int64: CachedRow] = [:]
    /// How many pages are not nil.
    @usableFromInline var pagesInUse = 0
    /// How many entries the index holds.
    @usableFromInline package internal(set) var count = 0
    /// How many pages are allocated.
    package var pageCount: Int { pagesInUse }

    /// An empty index.
    package init() {}

    /// The entry of `key`, if any.
    package subscript(key: Int64) -> CachedRow? {
        if key >= 0 {
            let page = Int(truncatingIfNeeded: key >> Self.pageShift)
            if page < pages.count, let held = pages[page] {
                let entry = held.entries[Int(truncatingIfNeeded: key) & (Self.pageSize - 1)]
                return entry.isEmpty ? nil : entry
            }
        }
        return overflow.isEmpty ? nil : overflow[key]
    }

    /// Changes the entry of `key` in place (nil: none, before or after).
    ///
    /// - Parameters:
    ///   - key: The primary key.
    ///   - body: Changes the entry; an entry left with no node and no
    ///     references is removed.
    /// - Returns: What `body` returns.
    @inline(__always)
    package mutating func modify<R>(_ key: Int64, _ body: (inout CachedRow?) -> R) -> R {
        var result: R?
        modify(each: 0..<1, key: { _ in key }) { _, entry in result = body(&entry) }
        return result.unsafelyUnwrapped
    }

    /// `modify` for each of many keys, in order: a key in the page of the
    /// key before it reuses that page, found and made unique once (a
    /// fetch's keys, in key order, fill pages one after another).
    ///
    /// - Parameters:
    ///   - elements: The elements' indexes, in the order to change their entries.
    ///   - key: The primary key of the element at an index.
    ///   - body: Changes the entry of the element at an index, as `modify`'s does.
    @inlinable @inline(__always)
    package mutating func modify(each elements: Range<Int>, key: (Int) -> Int64, _ body: (Int, inout CachedRow?) -> Void) {
        // The page made writable for the key before, and its number (-1: none).
        var current = -1
        var held: Unmanaged<RowIndexPage>?
        for element in elements {
            let key = key(element)
            if key < 0 || Int(truncatingIfNeeded: key >> Self.pageShift) != current {
                current = -1
                held = nil
                guard let page = pageForWriting(key) else {
                    modifyOverflow(key) { body(element, &$0) }
                    continue
                }
                current = page
                held = .passUnretained(pages[page].unsafelyUnwrapped)
            }
            // (The index holds the page: it lives while this runs.)
            let emptied = held.unsafelyUnwrapped._withUnsafeGuaranteedRef { page -> Bool in
                let slot = page.entries + (Int(truncatingIfNeeded: key) & (Self.pageSize - 1))
                let moved = slot.move()
                let existed = !moved.isEmpty
                var entry: CachedRow? = existed ? moved : nil
                body(element, &entry)
                let kept = entry.map { !$0.isEmpty } ?? false
                slot.initialize(to: kept ? entry.unsafelyUnwrapped : CachedRow(node: nil))
                if kept != existed {
                    let change = kept ? 1 : -1
                    count &+= change
                    page.occupied &+= change
                }
                return page.occupied == 0
            }
            if emptied {
                pages[current] = nil
                pagesInUse -= 1
                current = -1
                held = nil
            }
        }
    }

    @usableFromInline mutating func modifyOverflow<R>(_ key: Int64, _ body: (inout CachedRow?) -> R) -> R {
        // In place: one hashed operation.
        var change = 0
        func apply(_ entry: inout CachedRow?) -> R {
            let existed = entry != nil
            let result = body(&entry)
            if entry?.isEmpty == true { entry = nil }
            change = (entry == nil ? 0 : 1) - (existed ? 1 : 0)
            return result
        }
        let result = apply(&overflow[key])
        count += change
        return result
    }

    /// The page of `key`, unique to this index and allocated, when the pages
    /// cover the key or can grow to; nil when it belongs in the overflow.
    @usableFromInline
    mutating func pageForWriting(_ key: Int64) -> Int? {
        guard key >= 0 else { return nil }
        let page = Int(truncatingIfNeeded: key >> Self.pageShift)
        if page >= pages.count {
            guard grow(toCover: page) else { return nil }
        }
        if pages[page] == nil {
            guard allocate(page) else { return nil }
        } else if !isKnownUniquelyReferenced(&pages[page]) {
            pages[page] = RowIndexPage(copying: pages[page].unsafelyUnwrapped)
        }
        return page
    }

    /// Grows the pages to cover `page` when they would stay at least a
    /// quarter used (past the first 64). Keys of pages not allocated stay
    /// in the overflow.
    private mutating func grow(toCover page: Int) -> Bool {
        let limit = max(64, 4 * (pagesInUse + 1))
        guard page < limit else { return false }
        let newCount = min(limit, max(page + 1, 2 * pages.count))
        pages.append(contentsOf: repeatElement(nil, count: newCount - pages.count))
        return true
    }

    /// Allocates a page when the entries are dense enough to fill pages (on
    /// average a sixteenth of each, past the first eight pages), so sparse
    /// keys cost a dictionary's entry each, not a page each; moves the
    /// overflow's entries of the page into it.
    private mutating func allocate(_ page: Int) -> Bool {
        guard pagesInUse < 8 || count >= pagesInUse &* (Self.pageSize / 16) else { return false }
        pages[page] = RowIndexPage()
        pagesInUse += 1
        guard !overflow.isEmpty else { return true }
        let held = pages[page].unsafelyUnwrapped
        let moving = overflow.filter { $0.key >= 0 && Int(truncatingIfNeeded: $0.key >> Self.pageShift) == page }
        for (key, entry) in moving {
            overflow[key] = nil
            held.entries[Int(truncatingIfNeeded: key) & (Self.pageSize - 1)] = entry
            held.occupied += 1
        }
        return true
    }

    /// Calls `body` with every entry, in primary-key order.
    ///
    /// - Parameter body: Called with each key and its entry.
    package func forEach(_ body: (Int64, CachedRow) throws -> Void) rethrows {
        // The overflow's keys come before, among (keys of pages not
        // allocated) and after the pages' keys.
        let outside = overflow.sorted { $0.key < $1.key }
        var next = outside.startIndex
        for (index, held) in pages.enumerated() {
            guard let held else { continue }
            let base = Int64(index) << Self.pageShift
            while next < outside.endIndex, outside[next].key < base {
                try body(outside[next].key, outside[next].value)
                next += 1
            }
            for offset in 0..<Self.pageSize where !held.entries[offset].isEmpty {
                try body(base + Int64(offset), held.entries[offset])
            }
        }
        for (key, entry) in outside[next...] { try body(key, entry) }
    }

    /// Every node, in primary-key order.
    package var nodes: [RowNode] {
        var nodes: [RowNode] = []
        nodes.reserveCapacity(count)
        forEach { _, entry in if let node = entry.node { nodes.append(node) } }
        return nodes
    }
}

/// A page of a `RowIndex`: an entry for each of 64 keys, empty or not.
@usableFromInline
final class RowIndexPage: @unchecked Sendable {
    /// The entries, by the key's low bits.
    @usableFromInline let entries: UnsafeMutablePointer<CachedRow>
    /// How many entries are not empty.
    @usableFromInline @exclusivity(unchecked) var occupied = 0

    init() {
        entries = .allocate(capacity: RowIndex.pageSize)
        entries.initialize(repeating: CachedRow(node: nil), count: RowIndex.pageSize)
    }

    init(copying other: RowIndexPage) {
        entries = .allocate(capacity: RowIndex.pageSize)
        entries.initialize(from: other.entries, count: RowIndex.pageSize)
        occupied = other.occupied
    }

    deinit {
        entries.deinitialize(count: RowIndex.pageSize)
        entries.deallocate()
    }
}

extension CachedRow {
    /// Whether the entry holds nothing: no node and no registration.
    @inlinable @inline(__always)
    var isEmpty: Bool { node == nil && references == 0 }
}
