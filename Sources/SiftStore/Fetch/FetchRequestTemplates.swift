// Store stage: fetch requests made from a model's fetch request templates
// (Xcode's "Fetch Requests"), their `$variables` given when one is made.

import Foundation
import Sift

extension DataModel {
    /// A fetch request from the template called `name`, its `$variables`
    /// replaced by `substitutionVariables`; every variable needs a value.
    ///
    /// Replaces `model.fetchRequestFromTemplate(withName: name, substitutionVariables: variables)`.
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
