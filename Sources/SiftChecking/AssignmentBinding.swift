// Stage 4 (checking): binding a batch update's assignments — each names a
// stored attribute of the entity, and its expression gives one value per
// object of a type the attribute holds. What a value turns out to be when
// the update runs (nil for a required attribute, an integer out of the
// attribute's range) is the store's check; the types are checked here.

import SiftModel
import SiftSyntax
import SiftTree
import SiftValues

extension Binder {
    /// Binds `name = syntax` for a batch update of `entity`'s objects.
    ///
    /// - Parameters:
    ///   - name: The name of the attribute the update sets.
    ///   - syntax: The expression whose value the attribute gets, evaluated
    ///     for each object.
    ///   - entityName: The name of the entity whose objects are updated.
    /// - Returns: The attribute, resolved, and the bound expression.
    /// - Throws: `PredicateValidationError` when the entity is unknown, `name`
    ///   is not an attribute of it (or is a relationship), the attribute is
    ///   derived, not stored or required while the expression is nil, or the
    ///   expression does not bind, is a collection, or has a type the attribute
    ///   does not hold.
    public func bindAssignment(to name: String, _ syntax: ExpressionSyntax,
                               entity entityName: String) throws(PredicateValidationError) -> BoundAssignment {
        guard let entity = model.entity(named: entityName) else {
            throw PredicateValidationError(.unknownEntity(entityName), range: .at(0))
        }
        guard let attribute = entity.attribute(named: name) else {
            if entity.relationship(named: name) != nil {
                throw PredicateValidationError(.cannotAssign(name, reason: "it is a relationship (a batch update sets attributes)"),
                                               range: .at(0))
            }
            throw PredicateValidationError(.unknownKey(name, entity: entityName,
                                                       suggestion: BindingState.closest(to: name, in: entity.attributes.map(\.name))),
                                           range: .at(0))
        }
        if attribute.isReadOnly {
            throw PredicateValidationError(.cannotAssign(name, reason: "it is derived (the store computes it)"), range: .at(0))
        }
        if !attribute.isStored {
            throw PredicateValidationError(.cannotAssign(name, reason: "it is not stored (transient, or a composite)"), range: .at(0))
        }
        let value = try bind(syntax, entity: entityName)
        if value.type.isCollection {
            throw PredicateValidationError(.needsOneValue(syntax.description, context: "an assignment"), range: syntax.range)
        }
        guard Self.accepts(attribute.type, value.type) else {
            throw PredicateValidationError(.assignmentType(name, holds: attribute.type, found: value.type), range: syntax.range)
        }
        if value.type == .null, !attribute.isOptional {
            throw PredicateValidationError(.cannotAssign(name, reason: "it is required, and the expression is nil"),
                                           range: syntax.range)
        }
        return BoundAssignment(attribute: AttributeReference(entity: entityName, attribute: attribute), value: value)
    }

    /// Whether an attribute of `type` holds values of `value`'s type: the
    /// same kind of value, or an integer for a double (it becomes one).
    static func accepts(_ type: AttributeType, _ value: ValueType) -> Bool {
        switch (type, value) {
        case (_, .null): true
        case (.integer16, .integer), (.integer32, .integer), (.integer64, .integer): true
        case (.double, .integer), (.double, .double), (.float, .integer), (.float, .double),
             (.decimal, .integer), (.decimal, .double): true
        case (.string, .string), (.uri, .string): true
        case (.boolean, .boolean): true
        case (.date, .date): true
        case (.binary, .data), (.transformable, .data): true
        case (.uuid, .uuid): true
        default: false
        }
    }
}
