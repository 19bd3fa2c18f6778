// The library: one predicate type with or without a model. A
// `FormatPredicate` is compiled for plain values; the same predicate checked
// against a model's entity is a `BoundPredicate` (what stores and row caches
// take) or a `MemoryPredicate` compiled for a domain's items — views of it,
// not other predicates to write.

import Foundation
import SiftChecking
import SiftMemory
import SiftModel
import SiftTree
import SiftValues

extension FormatPredicate {
    /// The same predicate, its arguments and substitution values in place,
    /// checked against `entity` of `model` and bound to it: what a row cache's
    /// `nodes(of:matching:)` and SQL lowering take.
    ///
    /// ```swift
    /// let managers = try FormatPredicate(format: "ANY reports.age > %@", 40)
    /// let bound = try managers.bound(to: dataSet.model, entity: "Employee")
    /// let nodes = try cache.nodes(of: "Employee", matching: bound)
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model whose entity the predicate tests.
    ///   - entity: The entity's name.
    /// - Returns: The bound, optimized predicate.
    /// - Throws: `PredicateCompileError.validation` when the predicate does not fit the entity (an unknown
    ///   key, types an operator cannot compare), with the place in ``format``.
    public func bound(to model: DataModel, entity: String) throws(PredicateCompileError) -> BoundPredicate {
        try PredicateCompiler(model: model, functions: functions)
            .bind(format, arguments: arguments, entity: entity, variables: substitutions)
    }

    /// The same predicate checked against `entity` of `model` and compiled
    /// for `domain`'s items (row-cache nodes, records of your own), as
    /// ``PredicateCompiler/memoryPredicate(_:arguments:entity:variables:domain:)`` compiles it.
    ///
    /// ```swift
    /// let adults = try FormatPredicate(format: "age >= %@", 18)
    ///     .compiled(for: peopleModel, entity: "Person", domain: KeyValueDomain())
    /// let found = try people.filter(adults.evaluate)        // people: [[String: PredicateValue]]
    /// ```
    ///
    /// - Parameters:
    ///   - model: The model whose entity the predicate tests.
    ///   - entity: The entity's name.
    ///   - domain: The domain whose items the predicate will test.
    /// - Returns: The predicate compiled for `domain`, keys resolved to handles now.
    /// - Throws: `PredicateCompileError.validation` when the predicate does not fit the entity.
    public func compiled<Domain: EvaluationDomain>(for model: DataModel, entity: String,
                                                   domain: Domain) throws(PredicateCompileError) -> MemoryPredicate<Domain> {
        MemoryPredicate(try bound(to: model, entity: entity), domain: domain)
    }
}
