// Stage 3 (tree): the bound tree.
//
// What the binder makes of a syntax tree once it knows the model: key paths
// resolved to attributes and relationships, a type at every node, constants
// converted, `SOME`/`ANY` and friends made explicit. It carries no source
// text or ranges, is Hashable and Sendable, and is what the optimizer and both
// lowerings (SQL and memory) consume.
//
// AND and OR are n-ary. Comparisons never hold a to-many operand without a
// quantifier, and operator/operand types always fit: the binder has checked.

import SiftModel
import SiftValues

/// The type of a bound expression's value.
public indirect enum ValueType: Hashable, Sendable, CustomStringConvertible {
    /// The `nil` literal: fits any type.
    case null
    /// A boolean.
    case boolean
    /// An integer (a 64-bit signed integer when evaluated).
    case integer
    /// A floating-point number (decimal, double and float attributes).
    case double
    /// A string (string and URI attributes).
    case string
    /// A date.
    case date
    /// Binary data (binary and transformable attributes).
    case data
    /// A UUID.
    case uuid
    /// An object of the named entity (possibly nil).
    case object(String)
    /// A collection whose members have the given type.
    case collection(ValueType)
    /// Not known before evaluation (a `%@` array of mixed values, a dictionary).
    case any

    /// The type of an attribute's values.
    ///
    /// - Parameter type: The attribute's type, as the model declares it: integer
    ///   types give `.integer`; decimal, double and float `.double`; string and
    ///   URI `.string`; binary and transformable `.data`; object IDs, composites
    ///   and undefined values `.any`.
    public init(_ type: AttributeType) {
        switch type {
        case .integer16, .integer32, .integer64: self = .integer
        case .decimal, .double, .float: self = .double
        case .string, .uri: self = .string
        case .boolean: self = .boolean
        case .date: self = .date
        case .binary, .transformable: self = .data
        case .uuid: self = .uuid
        // An object ID, a composite (a dictionary of its elements) and an
        // undefined value are known only when the predicate runs.
        case .objectID, .composite, .undefined: self = .any
        }
    }

    /// Whether values of this type are numbers (booleans are 0 and 1).
    public var isNumeric: Bool { self == .integer || self == .double || self == .boolean }

    /// Whether this is a collection.
    public var isCollection: Bool {
        if case .collection = self { return true }
        return false
    }

    /// The type of a collection's members, or the type itself.
    public var elementType: ValueType {
        if case .collection(let element) = self { return element }
        return self
    }

    public var description: String {
        switch self {
        case .null: "nil"
        case .boolean: "boolean"
        case .integer: "integer"
        case .double: "double"
        case .string: "string"
        case .date: "date"
        case .data: "binary data"
        case .uuid: "UUID"
        case .object(let entity): entity
        case .collection(let element): "collection of \(element)"
        case .any: "any"
        }
    }
}

/// A resolved attribute: which entity, which one, where its value lives.
public struct AttributeReference: Hashable, Sendable, CustomStringConvertible {
    /// The name of the entity the attribute belongs to.
    public var entity: String
    /// The attribute's name.
    public var name: String
    /// The attribute's index among the entity's attributes: the slot that
    /// holds its value.
    public var slot: Int
    /// The attribute's type, as the model declares it.
    public var type: AttributeType
    /// Whether the attribute may be nil.
    public var isOptional: Bool
    /// Whether the store keeps folded companion columns of it.
    public var isCanonical: Bool

    /// Creates a reference to an attribute of an entity.
    ///
    /// - Parameters:
    ///   - entity: The name of the entity the attribute belongs to.
    ///   - attribute: The attribute, from the model, whose name, slot, type
    ///     and optionality the reference copies.
    public init(entity: String, attribute: Attribute) {
        self.entity = entity
        self.name = attribute.name
        self.slot = attribute.slot
        self.type = attribute.type
        self.isOptional = attribute.isOptional
        self.isCanonical = attribute.isCanonical
    }

    public var description: String { "\(entity).\(name)" }
}

/// A resolved relationship.
public struct RelationshipReference: Hashable, Sendable, CustomStringConvertible {
    /// The name of the entity the relationship belongs to.
    public var entity: String
    /// The relationship's name.
    public var name: String
    /// The name of the entity at the other end.
    public var destination: String
    /// Whether the relationship holds a collection of objects rather than one.
    public var isToMany: Bool
    /// The relationship's index among the entity's to-one (or, for a
    /// to-many relationship, to-many) relationships.
    public var slot: Int
    /// The name of the destination's relationship that points back, if any.
    public var inverse: String?

    /// Creates a reference to a relationship of an entity.
    ///
    /// - Parameters:
    ///   - entity: The name of the entity the relationship belongs to.
    ///   - relationship: The relationship, from the model, whose name,
    ///     destination, cardinality, slot and inverse the reference copies.
    public init(entity: String, relationship: Relationship) {
        self.entity = entity
        self.name = relationship.name
        self.destination = relationship.destination
        self.isToMany = relationship.isToMany
        self.slot = relationship.slot
        self.inverse = relationship.inverse
    }

    public var description: String { "\(entity).\(name)" }
}

/// A bound predicate.
///
/// ```swift
/// guard let ageAttribute = model.entity(named: "Employee")?.attribute(named: "age") else { return }
/// let employee = BoundExpression(.evaluatedObject, type: .object("Employee"))
/// let age = BoundExpression(.attribute(employee, AttributeReference(entity: "Employee", attribute: ageAttribute)),
///                           type: .integer)
/// let predicate = BoundPredicate.comparison(BoundComparison(age, .greaterThan, .constant(30, type: .integer)))
/// print(predicate)              // `age > 30` for Employee, as the binder makes it: a type on every expression
/// // >
/// //   attribute Employee.age : integer
/// //     SELF : Employee
/// //   constant 30 : integer
/// ```
public indirect enum BoundPredicate: Hashable, Sendable {
    /// A predicate that always holds (`TRUEPREDICATE`) or never holds
    /// (`FALSEPREDICATE`).
    case constant(Bool)
    /// The operand does not hold (`NOT`).
    case not(BoundPredicate)
    /// Every operand holds (two or more operands).
    case and([BoundPredicate])
    /// Some operand holds (two or more operands).
    case or([BoundPredicate])
    /// A comparison of two expressions.
    case comparison(BoundComparison)
    /// The collection has at least one member (the optimizer writes
    /// `SUBQUERY(…).@count > 0` this way; SQL runs it as `EXISTS`).
    case exists(BoundExpression)
}

/// A bound comparison.
public struct BoundComparison: Hashable, Sendable {
    /// `ANY`, `ALL` or `NONE` over a collection on the left, or `.direct`.
    public var quantifier: Quantifier
    /// The left operand (the collection when a quantifier applies).
    public var left: BoundExpression
    /// The comparison operator.
    public var `operator`: ComparisonOperator
    /// The comparison options, such as `[c]` and `[d]`.
    public var options: ComparisonOptions
    /// The right operand.
    public var right: BoundExpression

    /// Creates a comparison.
    ///
    /// - Parameters:
    ///   - left: The left operand (the collection when a quantifier applies).
    ///   - operator: The comparison operator.
    ///   - options: The comparison options; none by default.
    ///   - right: The right operand.
    ///   - quantifier: `ANY`, `ALL` or `NONE` over the collection on the
    ///     left; `.direct` (no quantifier) by default.
    public init(_ left: BoundExpression, _ operator: ComparisonOperator, options: ComparisonOptions = [],
                _ right: BoundExpression, quantifier: Quantifier = .direct) {
        self.quantifier = quantifier
        self.left = left
        self.operator = `operator`
        self.options = options
        self.right = right
    }
}

/// A bound expression and the type of its value.
public struct BoundExpression: Hashable, Sendable {
    /// What a bound expression computes: its operator or leaf and operands.
    public indirect enum Kind: Hashable, Sendable {
        /// A constant value (converted to the type of what it is compared with).
        case constant(PredicateValue)
        /// The object being evaluated (`SELF`).
        case evaluatedObject
        /// A variable bound by an enclosing `SUBQUERY`, or by `map`.
        case variable(String)
        /// An attribute of one object.
        case attribute(BoundExpression, AttributeReference)
        /// A to-one relationship of one object: an object or nil.
        case toOne(BoundExpression, RelationshipReference)
        /// A to-many relationship of one object: a collection of objects.
        case toMany(BoundExpression, RelationshipReference)
        /// A key looked up when the predicate runs, in a value bound without
        /// a model: a dictionary's value for the key (nil when it has none),
        /// each member's for an array (nested arrays flattened), nil for nil.
        case key(BoundExpression, String)
        /// Each member of a collection, bound to the variable, through the
        /// expression: `reports.age` maps `reports` by `$m.age`. Collections
        /// the expression yields are flattened into the result.
        ///
        /// - Parameter variable: The name each member is bound to while the
        ///   expression after it is evaluated.
        case map(BoundExpression, variable: String, BoundExpression)
        /// `@count`, `@sum`, `@avg`, `@min`, `@max` of a collection.
        case aggregate(AggregateOperator, BoundExpression)
        /// The members of a collection of objects that satisfy the predicate.
        ///
        /// - Parameter variable: The name each member is bound to while the
        ///   predicate is evaluated (`$x` in `SUBQUERY(reports, $x, …)`).
        case subquery(BoundExpression, variable: String, BoundPredicate)
        /// `{a, b, c}`.
        case list([BoundExpression])
        /// `a + b` and the other arithmetic operators.
        case arithmetic(BinaryOperator, BoundExpression, BoundExpression)
        /// `-a`.
        case negate(BoundExpression)
        /// A built-in function.
        case function(BuiltinFunction, [BoundExpression])
        /// `TERNARY(condition, then, else)`.
        case ternary(BoundPredicate, BoundExpression, BoundExpression)
        /// `collection[index]`: FIRST is 0, LAST is -1.
        case index(BoundExpression, BoundExpression)
        /// `collection[SIZE]`.
        case size(BoundExpression)
        /// A function the application registered (`name(args)` or
        /// `FUNCTION(receiver, 'name', args)`).
        case custom(CustomFunction, [BoundExpression])
        /// A `$variable` of a template: its value comes with each execution.
        case parameter(String)
    }

    /// What the expression computes.
    public var kind: Kind
    /// The type of the expression's value.
    public var type: ValueType

    /// Creates an expression of a kind and a type.
    ///
    /// - Parameters:
    ///   - kind: What the expression computes.
    ///   - type: The type of its value.
    public init(_ kind: Kind, type: ValueType) {
        self.kind = kind
        self.type = type
    }

    /// A constant.
    ///
    /// - Parameters:
    ///   - value: The constant's value.
    ///   - type: The type of the value (for a constant of a comparison, the
    ///     type of what it is compared with).
    /// - Returns: An expression of kind `.constant` with that value and type.
    public static func constant(_ value: PredicateValue, type: ValueType) -> BoundExpression {
        BoundExpression(.constant(value), type: type)
    }
}
