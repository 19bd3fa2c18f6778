// Context stage: live objects with typed accessors — an attribute's name
// with its Swift type declared once (`AttributeKey`), and classes of one's
// own that view a context's objects with typed properties (`@Managed`), as
// NSManagedObject subclasses with `@NSManaged` properties do.

import Foundation
import Sift

/// An attribute's name with the Swift type its values are read and set as,
/// declared once.
///
/// ```swift
/// enum BookKeys {
///     static let title = AttributeKey<String>("title")
///     static let pages = AttributeKey<Int>("pages")
/// }
/// try book.setValue(412, for: BookKeys.pages)
/// let pages = try book.value(for: BookKeys.pages)    // Int?
/// let title = book[BookKeys.title]                  // String?, nil when it cannot be read
/// ```
public struct AttributeKey<Value: PredicateValueRepresentable>: Hashable, Sendable {
    /// The attribute's name in the model.
    public let name: String

    /// The key of the attribute `name`, read and set as `Value`.
    ///
    /// - Parameter name: The attribute's name in the model.
    public init(_ name: String) {
        self.name = name
    }
}

extension ManagedObject {
    /// The value of the attribute `key` names, as its type.
    ///
    /// - Parameter key: The attribute, with the type it reads as.
    /// - Returns: The value; nil when the attribute has none.
    /// - Throws: `StoreError`: `.wrongType` when the value is not one `Value` holds; otherwise as
    ///   ``value(forKey:)``.
    public func value<Value>(for key: AttributeKey<Value>) throws(StoreError) -> Value? {
        try value(forKey: key.name, as: Value.self)
    }

    /// Sets the attribute `key` names, checked against the attribute's type and range now.
    ///
    /// - Parameters:
    ///   - value: The new value; nil to clear it.
    ///   - key: The attribute, with the type it is set as.
    /// - Throws: `StoreError`: `.invalidValue` when the value does not fit the attribute (100 000 for an
    ///   `integer16`); otherwise as ``setValue(_:forKey:)-(PredicateValue,_)``.
    public func setValue<Value>(_ value: Value?, for key: AttributeKey<Value>) throws(StoreError) {
        try setValue(value.map(\.predicateValue) ?? .null, forKey: key.name)
    }

    /// The value of the attribute `key` names, or nil when it has none or
    /// cannot be read (a fault that fails, a value of another type).
    ///
    /// - Parameter key: The attribute, with the type it reads as.
    /// - Returns: The value, or nil.
    public subscript<Value>(key: AttributeKey<Value>) -> Value? {
        (try? value(for: key)) ?? nil
    }
}

/// A class of your own that views a context's object with typed
/// properties, as an `NSManagedObject` subclass does in Core Data.
///
/// Declare the object it views and an initializer, then each attribute as a
/// ``Managed`` property; fetch and insert through the context by type:
///
/// ```swift
/// final class Book: ManagedObjectView {
///     let object: ManagedObject
///     init(_ object: ManagedObject) { self.object = object }
///
///     @Managed("title") var title: String?
///     @Managed("pages") var pages: Int?
/// }
///
/// let books = try context.fetch(Book.self, FetchRequest(entityName: "Book", predicate: "pages > 300"))
/// books[0].pages = 420                             // set now; a refused value is thrown by the next save
/// try books[0].object.setValue(99_999, for: books[0].$pages)   // or throwing at once, by the property's key
/// let kim = try context.insert(Book.self)          // an object of the entity named as the class
/// ```
public protocol ManagedObjectView: AnyObject {
    /// The entity whose objects the class views; the class's name unless it says otherwise.
    static var entityName: String { get }
    /// The object viewed.
    var object: ManagedObject { get }
    /// A view of `object`.
    ///
    /// - Parameter object: An object of ``entityName`` (or of one of its subentities).
    init(_ object: ManagedObject)
}

extension ManagedObjectView {
    /// The class's own name, without its module.
    public static var entityName: String { String(describing: Self.self) }
}

/// An attribute of a ``ManagedObjectView`` class, read and set as its Swift
/// type through the viewed object.
///
/// A read gives nil when the attribute has no value or cannot be read (a fault
/// that fails, a value of another type: nothing traps). A set is checked
/// against the attribute at once; a value the attribute refuses is not set,
/// and the context's next ``ObjectContext/save()`` throws the refusal (a
/// property cannot throw). To be told at once, set through the property's key,
/// `$name`: `try view.object.setValue(value, for: view.$name)`.
@propertyWrapper
public struct Managed<Value: PredicateValueRepresentable>: Sendable {
    /// The attribute's key: `$name` on the class.
    public let projectedValue: AttributeKey<Value>

    /// The attribute `name` of the viewed object.
    ///
    /// - Parameter name: The attribute's name in the model.
    public init(_ name: String) {
        projectedValue = AttributeKey(name)
    }

    /// Not available: a `@Managed` property reads through the object of the class that declares it.
    @available(*, unavailable, message: "@Managed is for the properties of a ManagedObjectView class")
    public var wrappedValue: Value? {
        get { nil }
        // swiftlint:disable:next unused_setter_value
        set {}
    }

    /// The property of `view`, through its object.
    ///
    /// - Parameters:
    ///   - view: The instance whose property is read or set.
    ///   - wrapped: The property's key path.
    ///   - storage: The key path of this wrapper in `view`.
    public static subscript<View: ManagedObjectView>(
        _enclosingInstance view: View,
        wrapped wrapped: ReferenceWritableKeyPath<View, Value?>,
        storage storage: ReferenceWritableKeyPath<View, Managed<Value>>
    ) -> Value? {
        get { view.object[view[keyPath: storage].projectedValue] }
        set {
            let key = view[keyPath: storage].projectedValue
            do {
                try view.object.setValue(newValue, for: key)
            } catch {
                try? view.object.context().refuse(error)
            }
        }
    }
}

extension ObjectContext {
    /// Objects of `type`'s entity that `request` fetches, each seen through a
    /// new instance of `type`.
    ///
    /// - Parameters:
    ///   - type: The class that views the objects.
    ///   - request: The fetch; its entity is the one it names.
    /// - Returns: A view of each object fetched, in the request's order.
    /// - Throws: `StoreError`, as ``fetch(_:)`` does.
    public func fetch<View: ManagedObjectView>(_ type: View.Type, _ request: FetchRequest) throws(StoreError) -> [View] {
        try fetch(request).map(View.init)
    }

    /// Inserts an object of `type`'s entity (``ManagedObjectView/entityName``), seen through `type`.
    ///
    /// - Parameter type: The class that views the object.
    /// - Returns: A view of the new object, with a temporary ID until it is saved.
    /// - Throws: `StoreError.unknownEntity` when the model has no entity of that name.
    public func insert<View: ManagedObjectView>(_ type: View.Type) throws(StoreError) -> View {
        View(try insert(View.entityName))
    }
}
