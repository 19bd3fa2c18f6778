// Stage 2 (schema): reading an NSKeyedArchiver archive (a binary property
// list) as a graph of objects, without the classes that wrote it — how
// compiled models (`.mom`), a store's model cache and Xcode 3's `elements`
// file are kept.
//
// The property list is read by Foundation. An archive is a flat list of
// objects (`$objects`) that refer to each other by UID; an object is a
// dictionary of its fields with a `$class` naming its class. The graph may
// have cycles (an entity's properties point back at it), so nothing here
// follows references on its own: readers ask for the fields they need, and
// every index is checked.

import Foundation

/// An NSKeyedArchiver archive, read as a graph of objects.
struct KeyedArchive {
    /// The archived objects; index 0 is `$null`.
    let objects: [Any]
    /// The top-level objects, by key.
    private let top: [String: Any]

    /// Reads `data` as a keyed archive; nil when it is not one.
    init?(_ data: Data) {
        guard let plist = PropertyLists.read(data) as? [String: Any],
              plist["$archiver"] as? String == "NSKeyedArchiver",
              let objects = plist["$objects"] as? [Any], let top = plist["$top"] as? [String: Any] else { return nil }
        self.objects = objects
        self.top = top
    }

    /// The object archived at the top under `key` (`root`).
    func topObject(_ key: String) -> Int? { reference(top[key]) }

    /// The index a UID value refers to, when it is a UID within the archive.
    func reference(_ value: Any?) -> Int? {
        guard let value, let index = Self.uid(value), index > 0, index < objects.count else { return nil }
        return index
    }

    /// The number a property-list UID holds. Foundation keeps it in a class
    /// of its own with no public accessor: read through reflection, or else
    /// from its description (`{value = 7}`).
    static func uid(_ value: Any) -> Int? {
        guard type(of: value) is AnyClass, !(value is NSString), !(value is NSNumber), !(value is NSArray),
              !(value is NSDictionary), !(value is NSData) else { return nil }
        let typeName = String(describing: type(of: value))
        guard typeName.contains("UID") else { return nil }
        for child in Mirror(reflecting: value).children where child.label == "value" {
            if let n = child.value as? UInt32 { return Int(n) }
            if let n = child.value as? UInt64 { return Int(exactly: n) }
            if let n = child.value as? Int { return n }
        }
        let text = String(describing: value)
        if let range = text.range(of: "value = ") {
            return Int(text[range.upperBound...].prefix { $0.isNumber })
        }
        return nil
    }

    /// The fields of the object at `index`, when it is an object.
    func fields(_ index: Int?) -> [String: Any]? {
        guard let index, index > 0, index < objects.count else { return nil }
        if let dictionary = objects[index] as? [String: Any] { return dictionary }
        if let dictionary = objects[index] as? [AnyHashable: Any] {
            return Dictionary(dictionary.compactMap { key, value in (key.base as? String).map { ($0, value) } },
                              uniquingKeysWith: { a, _ in a })
        }
        return nil
    }

    /// The class name of the object at `index`.
    func className(_ index: Int?) -> String? {
        guard let classFields = fields(reference(fields(index)?["$class"])) else { return nil }
        return classFields["$classname"] as? String
    }

    /// The object a field refers to.
    func object(_ index: Int?, _ key: String) -> Int? { reference(fields(index)?[key]) }

    /// A field's value as a string: a referenced string (or `NSString`
    /// object), or an inline one.
    func string(_ index: Int?, _ key: String) -> String? {
        guard let value = fields(index)?[key] else { return nil }
        if let text = value as? String { return text }
        return string(at: reference(value))
    }

    /// The string at `index`.
    func string(at index: Int?) -> String? {
        guard let index, index > 0, index < objects.count else { return nil }
        if let text = objects[index] as? String { return text }
        if let text = fields(index)?["NS.string"] as? String { return text }
        if let bytes = fields(index)?["NS.bytes"] as? Data { return String(data: bytes, encoding: .utf8) }
        return nil
    }

    /// A field's value as a number or boolean: inline, or referenced.
    func number(_ index: Int?, _ key: String) -> Int? {
        guard let value = fields(index)?[key] else { return nil }
        if let number = Self.integer(value) { return number }
        guard let target = reference(value) else { return nil }
        return Self.integer(objects[target])
    }

    private static func integer(_ value: Any) -> Int? {
        if let n = value as? Int { return n }
        if let b = value as? Bool { return b ? 1 : 0 }
        if let n = value as? NSNumber { return Int(exactly: n.int64Value) }
        return nil
    }

    /// A boolean field: absent is false.
    func flag(_ index: Int?, _ key: String) -> Bool { (number(index, key) ?? 0) != 0 }

    /// A scalar value (string, number, boolean, date, data) a field holds.
    func scalar(_ index: Int?, _ key: String) -> Any? {
        guard let value = fields(index)?[key] else { return nil }
        guard let target = reference(value) else { return value }
        if let text = string(at: target) { return text }
        let object = objects[target]
        return object is [String: Any] || object is [AnyHashable: Any] ? nil : object
    }

    /// The members of an array or set object (`NS.objects`), as indexes.
    func members(_ index: Int?) -> [Int] {
        guard let values = fields(index)?["NS.objects"] as? [Any] else { return [] }
        return values.compactMap(reference)
    }

    /// The entries of a dictionary object, keys as strings: an
    /// `NSDictionary` (`NS.keys`, `NS.objects`) or Core Data's
    /// `NSKnownKeysDictionary1` (`searchMapping.keys`, `values`).
    func entries(_ index: Int?) -> [(key: String, value: Int)] {
        var keys: [Int] = []
        var values: [Int] = []
        if let fields = fields(index), let k = fields["NS.keys"] as? [Any], let v = fields["NS.objects"] as? [Any] {
            keys = k.compactMap(reference)
            values = v.compactMap(reference)
        } else if className(index) == "NSKnownKeysDictionary1" {
            keys = members(object(object(index, "searchMapping"), "keys"))
            values = members(object(index, "values"))
        }
        return zip(keys, values).compactMap { key, value in string(at: key).map { ($0, value) } }
    }
}
