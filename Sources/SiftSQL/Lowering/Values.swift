// Stage 6b (SQL lowering): values — constants, key paths, aggregates,
// arithmetic, functions and TERNARY.

import SiftModel
import SiftValues
import SiftTree

extension SQLWriter {
    mutating func value(_ e: BoundExpression, _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch e.kind {
        case .constant(let v):
            if case .array = v { throw Failure("a collection where one value is needed", expression: e) }
            return constant(v)
        case .evaluatedObject, .variable:
            return key(try row(e, c))
        case .toOne(let base, let relationship):
            // An object's identity: its key, read from the foreign key without a join.
            let from = try row(base, c)
            return .column(from.alias, schema.foreignKey(relationship), nullable: true)
        case .attribute(let base, let attribute):
            if let declared = schema.model.entity(named: attribute.entity)?.attribute(named: attribute.name) {
                // Its data may be in a file beside the store, which SQL cannot read: memory compares it.
                if declared.allowsExternalStorage {
                    throw Failure("an attribute with external binary storage (its data may be in a file beside the store)",
                                  expression: e)
                }
                // Its value is what a value transformer makes of the stored bytes: memory compares it.
                if declared.type == .transformable && declared.valueTransformerName != nil {
                    throw Failure("a transformable attribute with a value transformer", expression: e)
                }
            }
            let r = try row(base, c)
            return .column(r.alias, schema.column(attribute), nullable: attribute.isOptional || r.nullable)
        case .aggregate(let op, let collection):
            let function: BuiltinFunction = switch op {
            case .count: .count
            case .sum: .sum
            case .avg: .average
            case .min: .min
            case .max: .max
            }
            return try aggregate(function, collection, type: e.type, c)
        case .arithmetic(let op, let l, let r):
            let a = try value(l, c)
            let b = try value(r, c)
            switch op {
            case .add: return .arithmetic(.add, a, b)
            case .subtract: return .arithmetic(.subtract, a, b)
            case .multiply: return .arithmetic(.multiply, a, b)
            case .divide:
                // Integers divide as integers (truncating), as in memory.
                let integers = [l.type, r.type].allSatisfy { $0 == .integer || $0 == .boolean }
                return integers ? .integerDivide(a, b) : .divide(a, b)
            case .power: return .builtin("power", [a, b])
            case .union, .intersect, .minus: throw Failure("\(op.rawValue) of collections", expression: e)
            }
        case .negate(let operand):
            return .negate(try value(operand, c))
        case .function(let function, let arguments):
            return try self.function(function, arguments, e, c)
        case .ternary(let condition, let then, let otherwise):
            let p = try predicate(condition, c)
            return .caseWhen(p, then: try value(then, c), else: try value(otherwise, c))
        case .index, .size:
            throw Failure("indexing a collection ([FIRST], [LAST], [SIZE], [n])", expression: e)
        case .custom(let function, let arguments):
            var parts: [SQLExpression] = []
            for argument in arguments { parts.append(try value(argument, c)) }
            return .custom(function.sqlName, parts)
        case .parameter(let name):
            return .parameter(name)
        case .toMany, .map, .subquery, .list:
            throw Failure("a collection where one value is needed", expression: e)
        case .key:
            throw Failure("a key of a value bound without a model", expression: e)
        }
    }

    /// An aggregate over a collection, as a scalar subquery: COUNT and SUM
    /// (0 over no members) are never NULL.
    mutating func aggregate(_ function: BuiltinFunction, _ collection: BoundExpression, type: ValueType,
                            _ c: SQLContext) throws(Failure) -> SQLExpression {
        let members = try source(collection, c)
        let member = element(members)
        let column: SQLExpression = switch function {
        // An integer sum stays an integer (PostgreSQL's SUM of a bigint is a numeric).
        case .sum where type == .integer: .coalesce(.castToInteger(.aggregate(.sum, member)), .literal(0))
        case .sum: .coalesce(.aggregate(.sum, member), .literal(0.0))
        case .count: .aggregate(.count)
        case .min: .aggregate(.minimum, member)
        case .max: .aggregate(.maximum, member)
        default: .aggregate(.average, member)
        }
        return .scalar(members.select([column]), nullable: function != .sum && function != .count)
    }

    mutating func function(_ function: BuiltinFunction, _ arguments: [BoundExpression], _ e: BoundExpression,
                           _ c: SQLContext) throws(Failure) -> SQLExpression {
        switch function {
        case .sum, .count, .min, .max, .average:
            return try aggregate(function, arguments[0], type: e.type, c)
        case .median, .mode, .stddev, .distinct, .union, .intersect, .minus:
            throw Failure("the function \(function.rawValue)", expression: e)
        case .castToDate:
            return .castToReal(try value(arguments[0], c))
        case .castToString where arguments[0].type == .date:
            // A date column holds seconds: the text is NSDate's description.
            return .builtin(BuiltinFunctions.dateToString, [try value(arguments[0], c)])
        default:
            var parts: [SQLExpression] = []
            for argument in arguments { parts.append(try value(argument, c)) }
            return .builtin(function.rawValue, parts)
        }
    }
}
