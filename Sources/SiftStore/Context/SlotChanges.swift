// Store stage: the values an object's unsaved changes set, by slot.
//
// Laid out by slot, as a row is: a set is an array store and a bit, not a
// hashed insert, and an inserted object's values are already the row its
// save writes (no row to build from a table of changes).

/// Values set by slot: an array indexed by slot (a slot not set holds the
/// filler value) and which slots are set. Iterates the set slots in order.
@usableFromInline
struct SlotChanges<Value>: Sequence {
    /// Every slot's value up to the last one set; `filler` where not set.
    @usableFromInline private(set) var values: [Value]
    /// Which of the slots 0 to 63 are set.
    @usableFromInline private(set) var low: UInt64 = 0
    /// Which slots from 64 on are set (models rarely have that many).
    private(set) var high: Set<Int> = []
    /// What a slot not set holds.
    private let filler: Value

    /// No slot set.
    init(filler: Value) {
        values = []
        self.filler = filler
    }

    /// `count` slots, none set, laid out already (filled with `filler`).
    init(count: Int, filler: Value) {
        values = Array(repeating: filler, count: count)
        self.filler = filler
    }

    /// Every slot of `values` set to its value.
    init(all values: [Value], filler: Value) {
        self.values = values
        self.filler = filler
        low = values.count >= 64 ? .max : (1 << UInt64(values.count)) &- 1
        if values.count > 64 { high = Set(64..<values.count) }
    }

    /// The value set in `slot`, or nil when it is not set; setting nil unsets it.
    @usableFromInline
    subscript(slot: Int) -> Value? {
        @inline(__always) get { isSet(slot) ? values[slot] : nil }
        set {
            guard let newValue else {
                guard isSet(slot) else { return }
                mark(slot, false)
                values[slot] = filler
                return
            }
            if slot >= values.count { values.append(contentsOf: repeatElement(filler, count: slot - values.count + 1)) }
            values[slot] = newValue
            mark(slot, true)
        }
    }

    @inline(__always) @usableFromInline
    func isSet(_ slot: Int) -> Bool {
        slot < 64 ? slot >= 0 && low & (1 << UInt64(slot)) != 0 : high.contains(slot)
    }

    private mutating func mark(_ slot: Int, _ set: Bool) {
        if slot < 64 {
            if set { low |= 1 << UInt64(slot) } else { low &= ~(1 << UInt64(slot)) }
        } else if set {
            high.insert(slot)
        } else {
            high.remove(slot)
        }
    }

    /// Whether no slot is set.
    var isEmpty: Bool { low == 0 && high.isEmpty }

    /// How many slots are set.
    var count: Int { low.nonzeroBitCount + high.count }

    /// Whether every slot of a row of `count` slots is set: the values are that row.
    func setsEvery(_ count: Int) -> Bool { values.count == count && self.count == count }

    /// The set slots, in order.
    var keys: [Int] { map(\.key) }

    @usableFromInline
    func makeIterator() -> Iterator { Iterator(changes: self) }

    /// The set slots and their values, in slot order.
    @usableFromInline
    struct Iterator: IteratorProtocol {
        let changes: SlotChanges
        var remaining: UInt64
        var high: [Int]
        var position = 0

        init(changes: SlotChanges) {
            self.changes = changes
            remaining = changes.low
            high = changes.high.isEmpty ? [] : changes.high.sorted()
        }

        @usableFromInline
        mutating func next() -> (key: Int, value: Value)? {
            if remaining != 0 {
                let slot = remaining.trailingZeroBitCount
                remaining &= remaining &- 1
                return (slot, changes.values[slot])
            }
            guard position < high.count else { return nil }
            position += 1
            return (high[position - 1], changes.values[high[position - 1]])
        }
    }
}
