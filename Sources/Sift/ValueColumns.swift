// The library: a collection of values converted once into the form a
// predicate filters fastest. Dictionaries and `Encodable` structs are laid
// out as columns, one per key (`ColumnTable`), so a predicate compiled for
// them reads a key's column by index instead of hashing the key in every
// value; other values are kept as value trees.

import SiftMemory
import SiftValues

/// Values converted once for filtering: the elements themselves, and their
/// values as predicates read them, laid out by key.
///
/// Convert a collection once and filter it with many predicates; each
/// filter gives back the matching elements themselves:
///
/// ```swift
/// struct Person: Encodable { var name: String; var age: Int }
/// let people = try ValueColumns(loadPeople())        // converted once
/// let adults = try FormatPredicate(format: "age >= 18").filter(people)   // [Person]
/// ```
public struct ValueColumns<Element>: RandomAccessCollection {
    /// The elements, in order.
    public let elements: [Element]
    let storage: Storage

    enum Storage {
        /// Every element is a dictionary.
        case columns(ColumnTable)
        /// Some element is not: each as its value tree.
        case values([PredicateValue])
    }

    /// Converts `elements` with their `Encodable` conformance.
    ///
    /// - Parameter elements: The elements to convert.
    /// - Throws: Whatever error an element's `encode(to:)` throws; the conversion itself throws none.
    public init(_ elements: some Sequence<Element>) throws where Element: Encodable {
        let elements = Array(elements)
        self.init(elements, values: try elements.map { try ValueTreeEncoder.encode($0) })
    }

    /// Converts `elements` as `PredicateValue(plain:)` reads them: strings,
    /// numbers, dates, arrays, `[String: Any]` dictionaries as
    /// `JSONSerialization` gives them, `Encodable` values.
    ///
    /// - Parameter elements: The elements to convert.
    /// - Throws: `PredicateEvaluationError` with reason `.unsupportedValue` when an element is of a type
    ///   predicates do not read.
    public init(plain elements: some Sequence<Element>) throws(PredicateEvaluationError) {
        let elements = Array(elements)
        var values: [PredicateValue] = []
        values.reserveCapacity(elements.count)
        for element in elements {
            guard let value = PredicateValue(plain: element) else {
                throw PredicateEvaluationError(.unsupportedValue(String(describing: type(of: element))), range: nil,
                                               format: "")
            }
            values.append(value)
        }
        self.init(elements, values: values)
    }

    private init(_ elements: [Element], values: [PredicateValue]) {
        self.elements = elements
        storage = ColumnTable(values).map(Storage.columns) ?? .values(values)
    }

    /// The position of the first element: always 0.
    public var startIndex: Int { 0 }
    /// The position just past the last element: the number of elements.
    public var endIndex: Int { elements.count }
    /// Accesses the element at a position.
    ///
    /// - Parameter position: The position of the element, from `startIndex`
    ///   up to, but not including, `endIndex`.
    /// - Returns: The element itself, as it was given when converted.
    public subscript(position: Int) -> Element { elements[position] }

    /// The value of the element at `position` as predicates read it.
    ///
    /// - Parameter position: The position of the element, from `startIndex` up to, but not including,
    ///   `endIndex`.
    /// - Returns: The element's value tree.
    public func value(at position: Int) -> PredicateValue {
        switch storage {
        case .columns(let table): table.dictionary(at: position)
        case .values(let values): values[position]
        }
    }
}

extension ValueColumns: Sendable where Element: Sendable {}
