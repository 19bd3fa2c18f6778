// Store stage: dictionary fetches (Core Data's `.dictionaryResultType`) —
// the request's properties to fetch, grouping, having and distinctness
// parsed and bound once, then run by the store: one SQL statement when SQL
// can run all of it, else grouped in memory over the fetched rows, with
// the same answers.

import Foundation
import OrderedCollections
import Sift

/// A property a dictionary fetch returns: an expression of the format
/// language and the name its value comes back under (Core Data's
/// `NSExpressionDescription`).
///
/// ```swift
/// var request = FetchRequest(entityName: "Employee")
/// request.propertiesToFetch = ["department.name", ExpressionDescription(name: "total", expression: "sum(salary)")]
/// request.propertiesToGroupBy = ["department.name"]
/// request.havingPredicate = .format("total > 1000000", [])
/// let rows = try context.fetchDictionaries(request)   // [["department.name": "Sales", "total": 2_450_000], …]
/// ```
///
/// An expression is evaluated for each object, or, written as an aggregate
/// (`sum(x)`, `count(x)`, `min(x)`, `max(x)`, `average(x)`, or the key path
/// forms `@sum.x`, `@avg.x`, `@count`), over the rows of each group.
public struct ExpressionDescription: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The key of the value in each result.
    public var name: String
    /// The expression, in the predicate format language's syntax.
    public var expression: String
    /// Values for the expression's `%@` placeholders.
    public var arguments: [PredicateValue]

    /// A result called `name`, the value of `expression`.
    ///
    /// - Parameters:
    ///   - name: The result's key in each fetched dictionary.
    ///   - expression: The expression, in the predicate format language (`sum(salary)`, `department.name`).
    ///   - arguments: Values for the expression's `%@` placeholders.
    public init(name: String, expression: String, arguments: [PredicateValue] = []) {
        self.name = name
        self.expression = expression
        self.arguments = arguments
    }

    /// A key path, named after itself.
    ///
    /// - Parameter keyPath: An attribute, or a key path through to-one relationships; also the result's name.
    public init(keyPath: String) {
        self.init(name: keyPath, expression: keyPath)
    }

    /// A key path, named after itself, written as a string literal.
    ///
    /// - Parameter keyPath: An attribute, or a key path through to-one relationships; also the result's name.
    public init(stringLiteral keyPath: String) {
        self.init(keyPath: keyPath)
    }

    /// Reads `EXPRESSION` or `EXPRESSION as NAME` (the command line's form).
    ///
    /// - Parameter text: An expression, optionally followed by ` as ` and a name of one word; without a name,
    ///   the expression names itself.
    public init(parsing text: String) {
        if let range = text.range(of: " as ", options: [.backwards, .caseInsensitive]) {
            let name = text[range.upperBound...].trimmingCharacters(in: .whitespaces)
            if !name.isEmpty, !name.contains(" ") {
                self.init(name: name, expression: text[..<range.lowerBound].trimmingCharacters(in: .whitespaces))
                return
            }
        }
        self.init(keyPath: text.trimmingCharacters(in: .whitespaces))
    }

    public var description: String { name == expression ? expression : "\(expression) as \(name)" }
}

/// One result of a dictionary fetch: values by name, in the order the
/// properties were asked for.
public typealias FetchedDictionary = OrderedDictionary<String, PredicateValue>

extension PersistentStore {
    /// Parses and binds a dictionary fetch: its properties, grouping,
    /// having predicate and sort keys (which name results).
    package func bindDictionaryFetch(_ request: FetchRequest) throws(StoreError) -> (BoundDictionaryFetch, [ResultSortKey]) {
        let entity = try self.entity(request.entityName)
        guard !request.propertiesToFetch.isEmpty else { throw .invalidRequest(.noPropertiesToFetch) }
        // Transient attributes are refused here as in every fetch: the store holds no value of one.
        let binder = self.binder
        func syntax(_ text: String, _ arguments: [PredicateValue]) throws(StoreError) -> ExpressionSyntax {
            do {
                return try PredicateParser.parseExpression(text, arguments: arguments)
            } catch {
                throw .invalidPredicate(.syntax(error), text: text)
            }
        }
        var columns: [BoundResultColumn] = []
        var ranges: [SourceRange] = []
        for property in request.propertiesToFetch {
            let parsed = try syntax(property.expression, property.arguments)
            do {
                columns.append(try binder.bindResultColumn(named: property.name, parsed, entity: entity.name))
            } catch {
                throw .invalidPredicate(.validation(error), text: property.expression)
            }
            ranges.append(parsed.range)
        }
        do {
            try Binder.checkNames(columns, ranges: ranges)
        } catch {
            throw .invalidRequest(.results(error, property: nil))
        }
        var groupBy: [BoundExpression] = []
        for key in request.propertiesToGroupBy {
            // A fetched property's name stands for its expression.
            if let column = columns.first(where: { $0.name == key }), case .row(let value) = column.value {
                groupBy.append(value)
                continue
            }
            let parsed = try syntax(key, [])
            do {
                groupBy.append(try binder.bindGroupKey(parsed, entity: entity.name))
            } catch {
                throw .invalidPredicate(.validation(error), text: key)
            }
        }
        let grouped = !groupBy.isEmpty || columns.contains(where: \.isAggregate)
        if grouped {
            for (column, property) in zip(columns, request.propertiesToFetch) {
                do {
                    try Binder.checkGrouping(column, groupBy: groupBy, range: .at(0))
                } catch {
                    throw .invalidRequest(.results(error, property: property))
                }
            }
        }
        let resultModel: DataModel
        do {
            resultModel = try Binder.resultModel(columns)
        } catch {
            throw .invalidRequest(.results(error, property: nil))
        }
        var having: BoundPredicate?
        if let predicate = request.havingPredicate {
            switch predicate {
            case .bound(let bound):
                having = bound
            case .format(let text, let arguments):
                let parsed: PredicateSyntax
                do {
                    parsed = try PredicateParser.parse(text, arguments: arguments)
                } catch {
                    throw .invalidPredicate(.syntax(error), text: text)
                }
                do {
                    having = try binder.bindHaving(parsed, resultModel: resultModel)
                } catch {
                    throw .invalidPredicate(.validation(error), text: text)
                }
            }
        }
        var sort: [ResultSortKey] = []
        for descriptor in request.sortDescriptors {
            guard let index = columns.firstIndex(where: { $0.name == descriptor.keyPath }) else {
                throw .invalidRequest(.sortKeyNotAResult(descriptor.keyPath, results: columns.map(\.name)))
            }
            sort.append(ResultSortKey(column: index, ascending: descriptor.ascending, caseInsensitive: descriptor.caseInsensitive))
        }
        let fetch = BoundDictionaryFetch(entity: entity.name, columns: columns, groupBy: groupBy, having: having,
                                         distinct: request.returnsDistinctResults, resultModel: resultModel)
        return (fetch, sort)
    }

    /// The request's objects, unsorted and unlimited: what a dictionary
    /// fetch reads.
    package func objectRequest(_ request: FetchRequest) -> FetchRequest {
        var objects = request
        objects.sortDescriptors = []
        objects.fetchLimit = nil
        objects.fetchOffset = 0
        objects.resultType = .objects
        return objects
    }

    /// The objects a dictionary fetch reads, compiled: unsorted (its sort
    /// keys name results), with the request's limit and offset, which apply
    /// to the results.
    package func compileObjects(of request: FetchRequest) throws(StoreError) -> CompiledFetch {
        try compile(objectRequest(request)).with {
            $0.fetchLimit = request.fetchLimit
            $0.fetchOffset = request.fetchOffset
        }
    }

    /// A dictionary fetch run in memory over the request's rows (the
    /// relationships its properties follow loaded first).
    package func resultsInMemory(_ fetch: BoundDictionaryFetch, of objects: CompiledFetch,
                                 sort: [ResultSortKey]) throws(StoreError) -> [[PredicateValue]] {
        let entity = objects.entity
        let request = objects.request
        let nodes = try rows(for: objects.with { $0.sortDescriptors = []; $0.fetchLimit = nil; $0.fetchOffset = 0 })
        var paths: Set<String> = []
        for column in fetch.columns {
            switch column.value {
            case .row(let e), .aggregate(_, let e?): paths.formUnion(RelationshipPaths.of(e, [:]))
            case .aggregate(_, nil): break
            }
        }
        for key in fetch.groupBy { paths.formUnion(RelationshipPaths.of(key, [:])) }
        for path in paths.sorted() { _ = try loadPath(path, from: nodes, entity: entity) }
        let domain = RowNodeDomain(cache: rowCache)
        let current = nodes.compactMap { domain.snapshot.node(entity: $0.id.entity, primaryKey: $0.id.primaryKey) }
        let engine = MemoryDictionaryFetch(fetch, domain: domain)
        return try StoreError.evaluating { () throws(EvaluationError) in
            try engine.results(current, sortedBy: sort, offset: max(request.fetchOffset, 0), limit: request.fetchLimit)
        }
    }

    /// Values read back from a store for results of `type`: objects as references.
    package func resultValue(_ value: PredicateValue, type: ValueType) -> PredicateValue {
        guard case .object(let entityName) = type, case .int(let key) = value,
              let entity = model.entity(named: entityName) else { return value }
        return .object(ObjectReference(entity: model.entities[entity.rootIndex].name, id: key))
    }
}

extension ValueType {
    /// The attribute type a store reads a result column of this type as
    /// (an object as its primary key).
    var resultAttributeType: AttributeType {
        if case .object = self { return .integer64 }
        return attributeType ?? .undefined
    }
}

extension ObjectContext {
    /// The results of a dictionary fetch (Core Data's
    /// `.dictionaryResultType`): for each object, or each group when the
    /// request groups or aggregates, the values of `propertiesToFetch` by
    /// name, in the order asked for; filtered by `havingPredicate`, made
    /// distinct, sorted by result names, offset and limited.
    ///
    /// Like Core Data's, a dictionary fetch reads what the store holds:
    /// the context's unsaved changes are not included.
    ///
    /// - Parameter request: The fetch, with its `propertiesToFetch` and, as needed, `propertiesToGroupBy`,
    ///   `havingPredicate`, `returnsDistinctResults` and sort descriptors naming results.
    /// - Returns: One dictionary per object or group, its values by result name in the order asked for.
    /// - Throws: `StoreError`: `.unknownEntity` when the model has no such entity; `.invalidRequest` when the
    ///   request has no properties to fetch, a property is neither grouped nor aggregated, or a sort key names
    ///   no result; `.invalidPredicate` when a property, grouping key or predicate does not parse or fit the
    ///   model; `.evaluation` when a `MATCHES` or `LIKE` runs out of its budget, on one value or over the whole
    ///   fetch (`regularExpressionStepLimit`: `.fetchTooCostly`); the store's error (such as
    ///   `.sqlite` or `.locked`) when reading fails.
    public func fetchDictionaries(_ request: FetchRequest) throws(StoreError) -> [FetchedDictionary] {
        let results = try store.compileResults(request)
        let fetch = results.fetch
        let objects = try store.compileObjects(of: request)
        let rows = try EvaluationBudget.run(steps: request.patternStepBudget, timeLimit: request.timeBudget(in: store)) { () throws(StoreError) in
            try store.results(fetch, of: objects, sort: results.sort)
        }
        let names = fetch.columns.map(\.name)
        return rows.map { row in
            var result = FetchedDictionary(minimumCapacity: names.count)
            for (name, value) in zip(names, row) { result[name] = value }
            return result
        }
    }
}
