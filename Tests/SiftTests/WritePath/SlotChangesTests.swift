// The table of an object's unsaved values by slot: random sets and unsets,
// slots past 64 included, read back as a dictionary holding the same
// changes reads them.

@testable import SiftStore
import Testing

@Suite("Unsaved values by slot")
struct SlotChangesTests {
    @Test("Random sets and unsets read back as a dictionary's: values, count, slots in order", arguments: [1, 2, 3, 4])
    func agreesWithADictionary(seed: UInt64) {
        var random = SplitMix64(seed: seed)
        var changes = SlotChanges<Int?>(filler: nil)
        var model: [Int: Int?] = [:]
        for step in 0..<2_000 {
            let slot = Int.random(in: 0..<100, using: &random)
            switch Int.random(in: 0..<3, using: &random) {
            case 0:
                changes[slot] = nil
                model[slot] = nil
            case 1:
                changes[slot] = .some(nil)  // set to nil: a to-one emptied
                model[slot] = .some(nil)
            default:
                changes[slot] = step
                model[slot] = step
            }
            #expect(changes[slot] == model[slot])
        }
        #expect(changes.count == model.count)
        #expect(changes.isEmpty == model.isEmpty)
        #expect(changes.keys == model.keys.sorted())
        #expect(changes.map(\.key) == model.keys.sorted())
        #expect(changes.map(\.value) == model.keys.sorted().map { model[$0]! })
        for slot in 0..<100 { #expect(changes[slot] == model[slot]) }
    }

    @Test("A row of every slot set is taken as it is; unsetting one slot of it makes it a row no longer")
    func everySlotSet() {
        for count in [0, 1, 63, 64, 65, 130] {
            let row = Array(0..<count)
            var changes = SlotChanges(all: row, filler: -1)
            #expect(changes.setsEvery(count))
            #expect(changes.values == row)
            #expect(changes.keys == row)
            guard count > 0 else { continue }
            changes[count - 1] = nil
            #expect(!changes.setsEvery(count))
            #expect(changes.count == count - 1)
            #expect(changes[count - 1] == nil)
        }
    }
}
