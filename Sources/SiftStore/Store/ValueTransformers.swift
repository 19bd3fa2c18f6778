// Store stage: value transformers for transformable attributes, registered
// by name as Core Data registers them (`ValueTransformer.setValueTransformer(
// _:forName:)`): the store keeps the attribute's bytes, objects and
// predicates see the value the transformer makes of them.

import Foundation
import Sift
import Synchronization

/// Turns the bytes a store keeps for a transformable attribute into the
/// value objects and predicates see, and that value back into bytes — what
/// a Core Data value transformer does.
///
/// ```swift
/// store.valueTransformers.register(AttributeValueTransformer(
///     name: "ColorTransformer",
///     transformedValue: { data in .string(String(decoding: data, as: UTF8.self)) },
///     reverseTransformedValue: { value in
///         if case .string(let name) = value { Data(name.utf8) } else { Data() }
///     }))
/// ```
public struct AttributeValueTransformer: Sendable {
    /// The name the model's attributes give (`valueTransformerName`).
    public let name: String
    /// The value of stored bytes.
    public let transformedValue: @Sendable (Data) throws -> PredicateValue
    /// The bytes to store for a value.
    public let reverseTransformedValue: @Sendable (PredicateValue) throws -> Data

    /// A transformer for the attributes whose `valueTransformerName` is `name`.
    ///
    /// - Parameters:
    ///   - name: The name the model's attributes give.
    ///   - transformedValue: Makes a value of stored bytes; when it throws, the attribute's value is the
    ///     stored bytes, as they are (nothing is lost).
    ///   - reverseTransformedValue: Makes the bytes to store for a value; an error fails the save.
    public init(name: String, transformedValue: @escaping @Sendable (Data) throws -> PredicateValue,
                reverseTransformedValue: @escaping @Sendable (PredicateValue) throws -> Data) {
        self.name = name
        self.transformedValue = transformedValue
        self.reverseTransformedValue = reverseTransformedValue
    }
}

/// The value transformers of a store, by name. Attributes whose transformer
/// is not registered hold their bytes as they are.
///
/// ```swift
/// store.valueTransformers.register(AttributeValueTransformer(
///     name: "JSONTransformer",                                    // the name the model's attributes give
///     transformedValue: { data in try JSONDecoder().decode(PredicateValue.self, from: data) },
///     reverseTransformedValue: { value in try JSONEncoder().encode(value) }))
/// let context = ObjectContext(store: store)
/// let red = try context.fetch(FetchRequest(entityName: "Car", predicate: "color == 'red'"))   // compares values, not bytes
/// print(store.valueTransformers.transformer(named: "JSONTransformer")?.name ?? "none")      // JSONTransformer
/// ```
public final class ValueTransformerRegistry: Sendable {
    private let transformers = LockedState<[String: AttributeValueTransformer]>([:])

    /// An empty registry.
    public init() {}

    /// Adds (or replaces) a transformer.
    ///
    /// - Parameter transformer: The transformer, registered under its `name`.
    public func register(_ transformer: AttributeValueTransformer) {
        transformers.withLock { $0[transformer.name] = transformer }
    }

    /// The transformer called `name`.
    ///
    /// - Parameter name: The name the model's attributes give (`valueTransformerName`).
    /// - Returns: The transformer registered under `name`, or nil when there is none.
    public func transformer(named name: String) -> AttributeValueTransformer? {
        transformers.withLock { $0[name] }
    }

    /// The transformer of an attribute, if it names one that is registered.
    func transformer(of attribute: Attribute) -> AttributeValueTransformer? {
        guard attribute.type == .transformable, let name = attribute.valueTransformerName else { return nil }
        return transformer(named: name)
    }

    /// An attribute's value as stored: the bytes its transformer makes, or
    /// the value itself when it has none (or the value is bytes already).
    func storedValue(_ value: PredicateValue, of attribute: Attribute) throws -> PredicateValue {
        guard value != .null, let transformer = transformer(of: attribute) else { return value }
        if case .data = value { return value }
        return .data(try transformer.reverseTransformedValue(value))
    }
}
