// Store stage: fetch requests made from a model's fetch request templates
// (Xcode's "Fetch Requests"), their `$variables` given when one is made.

import Foundation
import Sift

extension DataModel {
    /// A fetch request from the template called `name`, its `$variables`
    /// replaced by `substitutionVariables`; every variable needs a value.
    ///
    /// Replaces `model.fetchRequestFromTemplate(withName: name, substitutionVariables: variables)`.
    ///
    /// - Parameters:
    ///   - name: The template's name in the model.
    ///   - substitutionVariables: The values of the predicate's `$variables`, by name without the `$`.
    /// - Returns: A request for the template's entity, with its fetch limit and its predicate, the variables
    ///   replaced.
    /// - Throws: `StoreError`: `.unknownTemplate` when the model has no template called `name`;
    ///   `.invalidPredicate` when the template's predicate does not parse; `.missingVariables` when a
    ///   `$variable` has no value.
    public func fetchRequestFromTemplate(withName name: String,
                                         substitutionVariables: [String: PredicateValue] = [:]) throws(StoreError) -> FetchRequest {
        guard let template = fetchRequestTemplates[name] else {
            throw .unknownTemplate(name, available: fetchRequestTemplates.keys.sorted())
        }
        var request = FetchRequest(entityName: template.entityName)
        if template.fetchLimit > 0 { request.fetchLimit = template.fetchLimit }
        guard let text = template.predicate else { return request }
        let syntax: PredicateSyntax
        do {
            syntax = try PredicateParser.parse(text)
        } catch {
            throw .invalidPredicate(.syntax(error), text: text)
        }
        let missing = syntax.variables.subtracting(substitutionVariables.keys)
        guard missing.isEmpty else { throw .missingVariables(template: name, missing.sorted()) }
        // The substituted tree printed prints back to the same tree.
        request.predicate = .format(syntax.substituting(substitutionVariables).description, [])
        return request
    }
}
