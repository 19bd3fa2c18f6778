// Store stage: templates — predicates with `$variables` compiled once.
//
// Parsing, binding, optimizing and lowering happen when the template is made;
// each execution only binds the variables' values and runs the prepared
// statement the connection keeps in its cache (its SQL text, and so the cache
// key, is the same for every execution of the same normalized tree).

import Foundation
import Sift

/// A fetch whose predicate has `$variables`, ready to run with their values.
///
/// ```swift
/// let byAge = try PredicateTemplate(store: store, entityName: "Employee",
///                                   predicate: "age > $min AND department.name == $department")
/// let objects = try byAge.fetch(in: context, ["min": 40, "department": "Sales"])
/// ```
public final class PredicateTemplate {
    /// The store the template fetches from.
    public let store: SQLiteStore
    /// The request each execution runs, its predicate filled with the values given.
    public let request: FetchRequest
    /// The bound, optimized predicate with `$variables` as parameters.
    public let predicate: BoundPredicate
    /// The names of the variables an execution must give.
    public let variables: Set<String>
    /// The SQL each execution runs, with the variables as parameters (nil
    /// when the predicate needs memory evaluation).
    public let query: SQLQuery?
    let entity: Entity
    /// The request, compiled once.
    let compiled: CompiledFetch

    /// Compiles a template. Only the predicate's unbound `$variables` wait
    /// for values; `arguments` fill its format specifiers now.
    ///
    /// - Parameters:
    ///   - store: The store the template fetches from.
    ///   - entityName: The entity whose objects (and subentities' objects) are fetched.
    ///   - text: The predicate's format string, with `$variables` for the values each execution gives.
    ///   - arguments: The values of its format specifiers, in order.
    ///   - sortDescriptors: How to order the results.
    ///   - fetchLimit: The most objects to return; nil for all.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidPredicate` when the
    ///   predicate or a sort key does not parse or fit the model; `.notExpressibleInSQL` when its plan cannot
    ///   be lowered to SQL at all.
    public init(store: SQLiteStore, entityName: String, predicate text: String, arguments: [PredicateValue] = [],
                sortDescriptors: [FetchSortDescriptor] = [], fetchLimit: Int? = nil) throws(StoreError) {
        self.store = store
        self.entity = try store.entity(entityName)
        var request = FetchRequest(entityName: entityName, sortDescriptors: sortDescriptors, fetchLimit: fetchLimit)
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(text, arguments: arguments)
        } catch {
            throw .invalidPredicate(.syntax(error), text: text)
        }
        let bound: BoundPredicate
        do {
            var binder = store.binder
            binder.allowsParameters = true
            bound = try binder.bind(syntax, entity: entityName)
        } catch {
            throw .invalidPredicate(.validation(error), text: text)
        }
        let optimized = Optimizer.standard.optimize(bound)
        self.predicate = optimized
        self.variables = syntax.variables
        request.predicate = .bound(optimized)
        self.request = request
        let compiled = try store.compile(request)
        self.compiled = compiled
        let plan = try store.plan(for: compiled)
        if !plan.needsMemory {
            query = plan.query(for: request, columns: .identifiers)
        } else {
            query = nil
        }
    }

    /// The IDs of the objects that match with these values.
    ///
    /// - Parameter values: The values of the template's `$variables`, by name without the `$`.
    /// - Returns: The IDs of the matching objects, in the request's order, its limit applied.
    /// - Throws: `StoreError`: `.invalidPredicate` when a variable has no value in `values`; `.evaluation` when
    ///   a `MATCHES` or `LIKE` runs out of its budget, on one value or over the whole fetch
    ///   (`regularExpressionStepLimit`: `.fetchTooCostly`); the store's error (such as `.sqlite` or `.locked`)
    ///   when reading fails.
    public func fetchObjectIDs(_ values: [String: PredicateValue]) throws(StoreError) -> [ObjectID] {
        // One budget for the patterns of the whole fetch (the request's `regularExpressionStepLimit`).
        try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in
            try fetchObjectIDsUnderBudget(values)
        }
    }

    func fetchObjectIDsUnderBudget(_ values: [String: PredicateValue]) throws(StoreError) -> [ObjectID] {
        for name in variables where values[name] == nil {
            throw .invalidPredicate(.validation(PredicateValidationError(.unboundVariable(name), range: .at(0))),
                                    text: "$" + name)
        }
        guard let query, let bound = query.binding(values, dialect: store.lowering.schema.dialect) else {
            // The template needs memory: evaluate every row with these values.
            let nodes = try store.fetchNodes(try store.lowering.selectAll(entity), entity: entity)
            let domain = RowNodeDomain(cache: store.rowCache)
            let filter = MemoryPredicate(predicate, domain: domain)
            var matching: [RowNode] = []
            for node in nodes {
                if try StoreError.evaluating({ () throws(EvaluationError) in try filter.evaluate(node, parameters: values) }) {
                    matching.append(node)
                }
            }
            return request.page(try store.sortedNodes(matching, compiled, domain: domain)).map(\.id)
        }
        return try store.fetchObjectIDs(bound, entity: entity)
    }

    /// The objects of `context` that match with these values.
    ///
    /// - Parameters:
    ///   - context: The context whose objects are returned.
    ///   - values: The values of the template's `$variables`, by name without the `$`.
    /// - Returns: The matching objects of `context`, fired, in the request's order.
    /// - Throws: `StoreError`: `.invalidPredicate` when a variable has no value in `values`; `.objectNotFound`
    ///   when a matching row is deleted before its object fires; `.evaluation` when evaluating in memory runs
    ///   out of a budget; the store's error (such as `.sqlite` or `.locked`) when reading fails.
    public func fetch(in context: ObjectContext, _ values: [String: PredicateValue]) throws(StoreError) -> [ManagedObject] {
        let ids = try fetchObjectIDs(values)
        let objects = ids.map(context.object(for:))
        try context.fireFaults(objects)
        return objects
    }
}

extension SQLLowering {
    /// Every row of an entity.
    func selectAll(_ entity: Entity) throws(StoreError) -> SQLQuery {
        do {
            return try select(entity.name, where: nil)
        } catch {
            throw .notExpressibleInSQL(error, range: nil, text: nil)
        }
    }
}
