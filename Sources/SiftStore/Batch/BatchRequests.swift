// Store stage: batch updates and batch deletes (Core Data's
// `NSBatchUpdateRequest` and `NSBatchDeleteRequest`) — change or delete
// every object a predicate selects without loading them as objects. A SQL
// store runs a batch update as one UPDATE and a batch delete as one DELETE
// per table (after reading which rows the delete rules reach); the atomic
// store, and a SQL store whose predicate needs memory, run them in memory
// and save the result. Either way it is one transaction, every changed
// row's version is incremented (so other contexts' edits of it conflict),
// and the changes are announced as a save's are.

import Foundation
import Sift

/// Changes attributes of every object of an entity that a predicate
/// selects, in the store, without loading the objects (Core Data's
/// `NSBatchUpdateRequest`).
///
/// ```swift
/// var raise = BatchUpdateRequest(entityName: "Employee", predicate: .format("department.name == %@", ["Sales"]))
/// raise.propertiesToUpdate = [ExpressionDescription(name: "salary", expression: "salary * 1.1")]
/// let result = try context.execute(raise)   // result.count objects changed
/// ```
///
/// Each expression is evaluated on the object's values before the update,
/// and its type must be one the attribute holds (an integer expression for
/// an integer attribute: Sift does not round). As in Core Data, validation
/// rules (minimum, maximum, patterns) are not checked; a nil for a required
/// attribute and an integer outside the attribute's range are errors, and
/// nothing is written.
public struct BatchUpdateRequest: Sendable {
    /// The entity whose objects (and its subentities' objects) change.
    public var entityName: String
    /// Which objects change (nil: every object of the entity).
    public var predicate: FetchPredicate?
    /// Each attribute set (`name`) and the expression of the object's
    /// current values its new value is (`expression`, with `arguments`
    /// for its `%@`).
    public var propertiesToUpdate: [ExpressionDescription]
    /// The most steps the `MATCHES` and `LIKE` tests of the predicate and
    /// the expressions may take over all the rows together, as
    /// `FetchRequest.regularExpressionStepLimit` (nil: the standard limit).
    public var regularExpressionStepLimit: Int?

    /// A request changing the objects of `entityName` that `predicate`
    /// selects (every one when nil), setting `propertiesToUpdate`.
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects (and subentities' objects) change.
    ///   - predicate: Which objects change; nil for every one.
    ///   - propertiesToUpdate: Each attribute to set (`name`) and the expression of its new value.
    public init(entityName: String, predicate: FetchPredicate? = nil, propertiesToUpdate: [ExpressionDescription] = []) {
        self.entityName = entityName
        self.predicate = predicate
        self.propertiesToUpdate = propertiesToUpdate
    }

    /// A request setting each attribute named to its expression (in the
    /// format language, without arguments): `["salary": "salary * 1.1"]`.
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects (and subentities' objects) change.
    ///   - predicate: Which objects change; nil for every one.
    ///   - properties: Each attribute's name, with the expression of its new value.
    public init(entityName: String, predicate: FetchPredicate? = nil, setting properties: [String: String]) {
        self.init(entityName: entityName, predicate: predicate,
                  propertiesToUpdate: properties.sorted { $0.key < $1.key }.map { ExpressionDescription(name: $0.key, expression: $0.value) })
    }
}

/// Deletes every object of an entity that a predicate selects, in the
/// store, without loading the objects (Core Data's `NSBatchDeleteRequest`).
///
/// ```swift
/// let request = BatchDeleteRequest(entityName: "Employee", predicate: .format("startDate < %@", [.date(cutoff)]))
/// let result = try context.execute(request)
/// ```
///
/// The relationships' delete rules apply as a context's delete applies
/// them: objects a cascade rule reaches are deleted too, the inverse
/// to-one relationships a nullify rule names are cleared (and those
/// objects' versions incremented), and an object a deny rule protects
/// (a deny relationship that still holds an object the batch does not
/// delete) fails the whole request with a validation error, deleting
/// nothing. (Core Data's own batch delete checks no validation rules; Sift
/// applies every delete rule, in SQL.)
public struct BatchDeleteRequest: Sendable {
    /// The entity whose objects (and its subentities' objects) are deleted.
    public var entityName: String
    /// Which objects are deleted (nil: every object of the entity).
    public var predicate: FetchPredicate?
    /// The objects to delete, when the request names them rather than
    /// selecting them with a predicate.
    public var objectIDs: [ObjectID]?
    /// The most steps the `MATCHES` and `LIKE` tests of the predicate may
    /// take over all the rows together, as
    /// `FetchRequest.regularExpressionStepLimit` (nil: the standard limit).
    public var regularExpressionStepLimit: Int?

    /// A request deleting the objects of `entityName` that `predicate`
    /// selects (every one when nil).
    ///
    /// - Parameters:
    ///   - entityName: The entity whose objects (and subentities' objects) are deleted.
    ///   - predicate: Which objects are deleted; nil for every one.
    public init(entityName: String, predicate: FetchPredicate? = nil) {
        self.entityName = entityName
        self.predicate = predicate
    }

    /// A request deleting the objects with these IDs, all objects of
    /// `entityName` or its subentities (those already gone are skipped; an
    /// ID of another entity is an error).
    ///
    /// - Parameters:
    ///   - objectIDs: The objects to delete.
    ///   - entityName: The entity they are all objects of (or of its subentities).
    public init(objectIDs: [ObjectID], entityName: String) {
        self.entityName = entityName
        self.objectIDs = objectIDs
    }
}

/// What a batch update or delete did.
public struct BatchResult: Sendable {
    /// The objects the request selected and changed (or deleted), in
    /// primary key order.
    public var objectIDs: [ObjectID]
    /// Everything it changed, as observers hear it: for a delete, the
    /// objects cascade rules deleted too, and those whose relationships
    /// lost the deleted objects.
    public var changes: StoreChanges
    /// Whether the store ran it in SQL (false: it was evaluated in memory).
    public var ranInSQL: Bool

    /// How many objects the request changed (or deleted).
    public var count: Int { objectIDs.count }
}

/// A batch update, parsed and bound: the objects it changes and the value
/// each attribute gets.
public struct BoundBatchUpdate: Sendable {
    /// The objects the update changes, compiled.
    public var fetch: CompiledFetch
    /// The entity of those objects.
    public var entity: Entity { fetch.entity }
    /// Each attribute set, with its new value's expression.
    public var assignments: [BoundAssignment]
    /// The expression texts, by assignment, for messages.
    public var texts: [String]
}

extension PersistentStore {
    /// Parses and binds a batch update's assignments.
    package func bindBatchUpdate(_ request: BatchUpdateRequest) throws(StoreError) -> BoundBatchUpdate {
        let entity = try self.entity(request.entityName)
        guard !request.propertiesToUpdate.isEmpty else { throw .invalidRequest(.noPropertiesToUpdate) }
        var seen: Set<String> = []
        var assignments: [BoundAssignment] = []
        for property in request.propertiesToUpdate {
            guard seen.insert(property.name).inserted else {
                throw .invalidRequest(.attributeSetTwice(property.name))
            }
            let syntax: ExpressionSyntax
            do {
                syntax = try PredicateParser.parseExpression(property.expression, arguments: property.arguments)
            } catch {
                throw .invalidPredicate(.syntax(error), text: property.expression)
            }
            do {
                assignments.append(try binder.bindAssignment(to: property.name, syntax, entity: entity.name))
            } catch {
                throw .invalidPredicate(.validation(error), text: property.expression)
            }
        }
        var fetch = FetchRequest(entityName: entity.name)
        fetch.predicate = request.predicate
        return BoundBatchUpdate(fetch: try compile(fetch), assignments: assignments,
                                texts: request.propertiesToUpdate.map(\.expression))
    }

    /// Checks new values of one object, `values[i]` being the value of
    /// assignment `indices[i]`: a required attribute is not nil, an integer
    /// fits its attribute (and did not overflow into a double).
    package func checkAssigned(_ values: [PredicateValue], _ indices: [Int], of id: ObjectID,
                               _ update: BoundBatchUpdate) -> [SaveValidationFailure] {
        var failures: [SaveValidationFailure] = []
        for (index, value) in zip(indices, values) {
            let attribute = update.assignments[index].attribute
            var reason: String?
            switch value {
            case .null where !attribute.isOptional:
                reason = "gives nil, and the attribute is required"
            case .double(let number) where attribute.type.isInteger:
                reason = "gives \(number), past the 64-bit integers (an integer overflow)"
            case .int(let number):
                if let range = attribute.type.integerRange, !range.contains(number) {
                    reason = "gives \(number), outside what \(attribute.type) holds (\(range.lowerBound)...\(range.upperBound))"
                }
            default:
                break
            }
            if let reason {
                failures.append(SaveValidationFailure(object: "<\(model.entities[id.entity].name) \(id.primaryKey)>",
                                                      property: attribute.name, reason: "'\(update.texts[index])' \(reason)"))
            }
        }
        return failures
    }
}

extension ObjectContext {
    /// Runs a batch update in the store: every object the request selects
    /// gets the new values, in one transaction, without being loaded. The
    /// changes are merged into this context (its objects refreshed, under
    /// its merge policy) and announced to the store's observers, as a
    /// save's are. Unsaved changes of this context are not read.
    ///
    /// - Parameter request: The entity, the predicate selecting its objects, and the attributes to set.
    /// - Returns: The objects changed, everything the update changed, and whether it ran in SQL.
    /// - Throws: `StoreError`, nothing written: `.unknownEntity` when the model has no such entity;
    ///   `.invalidRequest` when the request sets no property or one twice; `.invalidPredicate` when an expression
    ///   or the predicate does not parse or fit the model; `.validation` when a new value is nil for a required
    ///   attribute or an integer out of range; `.evaluation` when a `MATCHES` or `LIKE` runs out of its budget,
    ///   on one value or over all the rows (`regularExpressionStepLimit`: `.fetchTooCostly`); `.conflicts`
    ///   when other saves kept changing the rows;
    ///   `.cannotWrite` or the store's error (such as `.locked` or `.sqlite`) when writing fails. An error while
    ///   merging the committed update into this context (`.objectNotFound`, or the store's error while reading)
    ///   comes after the store has written it; observers are told of the update all the same.
    @discardableResult
    public func execute(_ request: BatchUpdateRequest) throws(StoreError) -> BatchResult {
        let update = try store.bindBatchUpdate(request)
        let result = try EvaluationBudget.run(
            steps: request.regularExpressionStepLimit ?? PredicateLimits.standard.regularExpressionStepsPerFetch,
            timeLimit: store.fetchTimeLimit ?? PredicateLimits.standard.fetchTimeLimit
        ) { () throws(StoreError) in try writing { () throws(StoreError) in try store.batchUpdate(update) } }
        // Committed: observers hear of it even if merging it here fails.
        defer { announceOwn(result.changes) }
        try mergeChanges(from: result.changes)
        return result
    }

    /// Runs a batch delete in the store: every object the request selects
    /// is deleted with the objects its delete rules reach, in one
    /// transaction, without being loaded. The changes are merged into this
    /// context (deleted objects dropped, unless they hold unsaved changes,
    /// which then conflict at save) and announced to the store's observers.
    ///
    /// - Parameter request: The entity and the predicate, or the IDs, selecting its objects.
    /// - Returns: The objects deleted, everything the delete changed (cascades and nullified relationships
    ///   included), and whether it ran in SQL.
    /// - Throws: `StoreError`, nothing deleted: `.unknownEntity` when the model has no such entity;
    ///   `.invalidRequest` when an ID is of another entity; `.invalidPredicate` when the predicate does not parse
    ///   or fit the model; `.validation` when a deny rule protects an object; `.evaluation` when a `MATCHES`
    ///   or `LIKE` runs out of its budget, on one value or over all the rows (`regularExpressionStepLimit`:
    ///   `.fetchTooCostly`); `.conflicts` when other saves
    ///   kept changing the rows; `.cannotWrite` or the store's error (such as `.locked` or `.sqlite`) when
    ///   writing fails. An error while merging the committed delete into this context (`.objectNotFound`, or
    ///   the store's error while reading) comes after the store has written it; observers are told of the
    ///   delete all the same.
    @discardableResult
    public func execute(_ request: BatchDeleteRequest) throws(StoreError) -> BatchResult {
        let entity = try store.entity(request.entityName)
        let result = try EvaluationBudget.run(
            steps: request.regularExpressionStepLimit ?? PredicateLimits.standard.regularExpressionStepsPerFetch,
            timeLimit: store.fetchTimeLimit ?? PredicateLimits.standard.fetchTimeLimit
        ) { () throws(StoreError) in
            try writing { () throws(StoreError) in try store.batchDelete(request, entity: entity) }
        }
        // Committed: observers hear of it even if merging it here fails.
        defer { announceOwn(result.changes) }
        try mergeChanges(from: result.changes)
        return result
    }
}
