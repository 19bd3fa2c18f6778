// Stage 6b (SQL lowering): collections — to-many key paths, SUBQUERY and
// key paths through collections as correlated subqueries, lists and bound
// arrays as the dialect's array tables, and IN.

import SiftModel
import SiftValues
import SiftTree

extension SQLWriter {
    /// What each member of a collection contributes to a comparison.
    func element(_ members: SQLCollection) -> SQLExpression {
        switch members.element {
        case .object(let row): key(row)
        case .value(let value): value
        }
    }

    /// `left IN right`: membership in a collection, or a substring of a string.
    mutating func membership(_ left: SQLExpression, in right: BoundExpression, _ options: ComparisonOptions,
                             _ c: SQLContext, folded: SQLExpression? = nil) throws(Failure) -> SQLExpression {
        let flags = options.foldingFlags
        let l = folded ?? (flags != 0 ? .fold(left, flags: flags) : left)
        switch right.kind {
        case .constant(.array(let values)) where values.isEmpty:
            // Nothing is in an empty collection (PostgreSQL would need the
            // empty array's type to say so).
            return .false
        case .constant(.array(let values)):
            let members = flags != 0 ? values.map { v -> PredicateValue in
                if case .string(let s) = v { return .string(StringFolding.fold(s, options)) }
                return v
            } : values
            guard let array = SQLLowering.arrayValue(.array(members), dialect: schema.dialect) else {
                throw Failure("IN with members that have no SQL form", expression: right)
            }
            let list = SQLExpression.in(l, array: .value(array))
            // nil IN {…, nil} holds under two-valued logic.
            return members.contains(.null) ? .or([list, .isNull(left)]) : list
        case .constant(.string(let s)):
            let pattern = StringFolding.fold(s, options)
            if schema.dialect.hasSiftFunctions, pattern.utf8.count > SQLLowering.longestInstrPattern {
                return .sift(.contains, [.value(.text(pattern)), l])
            }
            return .and([.compare(.notEqual, l, .emptyText), .contains(.value(.text(pattern)), l)])
        case .constant(.null):
            return .false
        case .parameter(let name) where flags == 0:
            return .in(l, array: .parameter(name, asArray: true))
        case .list(let elements) where !elements.contains(where: { $0.type.isCollection }):
            var parts: [SQLExpression] = []
            parts.reserveCapacity(elements.count)
            for element in elements { parts.append(try operand(element, options, c)) }
            let list = SQLExpression.in(l, parts)
            let nullable = parts.filter(\.isNullable)
            guard left.isNullable, !nullable.isEmpty, !parts.isEmpty else { return list }
            // nil IN {…, nil} holds under two-valued logic.
            return .or([list, .and([.isNull(left), .or(nullable.map(SQLExpression.isNull))])])
        default:
            if right.type == .string {
                let r = try operand(right, options, c)
                return .and([.compare(.notEqual, l, .emptyText), .contains(r, l)])
            }
            let members = try source(right, c)
            var member = element(members)
            if flags != 0 { member = .fold(member, flags: flags) }
            return members.exists(.equal(member, l))
        }
    }

    /// A collection as a correlated subquery's FROM and WHERE.
    mutating func source(_ e: BoundExpression, _ c: SQLContext) throws(Failure) -> SQLCollection {
        switch e.kind {
        case .toMany(let base, let relationship):
            let from = try row(base, c)
            let destination = try entity(relationship.destination)
            let inner = newScope(destination)
            let member = ObjectRow(alias: inner.alias, entity: destination, nullable: false)
            // Only rows of the destination's entities, when its table holds others too.
            let ofDestination = [schema.entityFilter(destination, alias: inner.alias)].compactMap { $0 }
            let innerContext = SQLContext(scope: inner, selfRow: c.selfRow, variables: c.variables)
            guard let model = from.entity.relationship(named: relationship.name) else {
                throw Failure("the unknown relationship '\(relationship.name)'", expression: e)
            }
            switch schema.storage(of: model, in: from.entity) {
            case .inverseForeignKey(_, let column):
                return SQLCollection(scope: inner,
                                     conditions: [.compare(.equal, .column(inner.alias, column, nullable: true), key(from))] + ofDestination,
                                     element: .object(member), context: innerContext)
            case .joinTable(let table, let sourceColumn, let targetColumn):
                let link = newAlias()
                inner.joins.append(SQLJoin(.inner, .table(table, alias: link), on: .compare(
                    .equal, .column(link, targetColumn, nullable: false), key(member))))
                return SQLCollection(scope: inner,
                                     conditions: [.compare(.equal, .column(link, sourceColumn, nullable: false), key(from))] + ofDestination,
                                     element: .object(member), context: innerContext)
            case .foreignKey:
                throw Failure("a to-one relationship used as a collection", expression: e)
            }
        case .map(let collection, let variable, let each):
            var members = try source(collection, c)
            guard case .object(let member) = members.element else {
                throw Failure("a key path from members that are not objects", expression: e)
            }
            var context = members.context
            context.variables[variable] = member
            members.context = context
            if each.type.isCollection {
                // Flatten: the inner collection's tables join this one, and
                // its correlation becomes part of this one's WHERE.
                let inner = try source(each, context)
                guard !inner.scope.isArray else { throw Failure("a list inside a collection", expression: each) }
                members.scope.joins.append(SQLJoin(.inner, inner.scope.source))
                members.scope.joins += inner.scope.joins
                members.conditions += inner.conditions
                members.element = inner.element
                members.context = inner.context
                members.context.scope = members.scope
                return members
            }
            if case .object = each.type {
                // A member whose to-one is empty contributes nothing, as in
                // memory (NSSet's valueForKey: drops nil).
                let row = try row(each, context)
                if row.nullable { members.conditions.append(.isNotNull(key(row))) }
                members.element = .object(row)
            } else {
                members.element = .value(try value(each, context))
            }
            return members
        case .subquery(let collection, let variable, let predicate):
            var members = try source(collection, c)
            guard case .object(let member) = members.element else {
                throw Failure("SUBQUERY over members that are not objects", expression: e)
            }
            var context = members.context
            context.variables[variable] = member
            members.conditions.append(try self.predicate(predicate, context))
            return members
        case .constant(.array):
            guard case .constant(let v) = e.kind, let array = SQLLowering.arrayValue(v, dialect: schema.dialect) else {
                throw Failure("a collection whose members have no SQL form", expression: e)
            }
            return arrayMembers(.value(array), c)
        case .constant(.null):
            return arrayMembers(.emptyArray, c)
        case .list(let elements):
            var parts: [SQLExpression] = []
            for element in elements {
                if element.type.isCollection { throw Failure("a list inside a list", expression: element) }
                parts.append(try value(element, c))
            }
            // One row per member, each value as it is (a JSON array would cut
            // text at U+0000 and print doubles with 15 digits).
            let alias = newAlias()
            let scope = SQLScope(alias: alias, source: .values(parts, alias: alias))
            return SQLCollection(scope: scope, conditions: [], element: .value(.column(alias, "value", nullable: true)),
                                 context: SQLContext(scope: scope, selfRow: c.selfRow, variables: c.variables))
        default:
            throw Failure("this collection", expression: e)
        }
    }

    /// The members of an array, as a collection.
    mutating func arrayMembers(_ array: SQLExpression, _ c: SQLContext) -> SQLCollection {
        let alias = newAlias()
        let scope = SQLScope(alias: alias, source: .array(array, alias: alias))
        return SQLCollection(scope: scope, conditions: [], element: .value(.column(alias, "value", nullable: true)),
                             context: SQLContext(scope: scope, selfRow: c.selfRow, variables: c.variables))
    }
}
