// Stage 0 (values): arithmetic, aggregates and built-in functions on values.
//
// Nil in, nil out: arithmetic and functions on nil yield nil. Aggregates skip
// nil members; @count and @sum of an empty collection are 0, @avg, @min and
// @max are nil. Division of two integers yields an integer (truncated toward
// zero), of anything else a double, and by zero yields nil, as SQLite's does.

import Foundation

/// Arithmetic on values, as both backends compute it: sums, differences and
/// products of integers stay integers unless they overflow, and nil or a
/// value that is not a number gives nil.
public enum Arithmetic {
    /// The value as an integer, when it is one; booleans are 1 and 0.
    ///
    /// - Parameter value: The value to read.
    /// - Returns: The integer, or nil for any other kind of value (including
    ///   floating-point numbers).
    public static func integer(_ value: PredicateValue) -> Int64? {
        switch value {
        case .int(let i): i
        case .bool(let b): b ? 1 : 0
        default: nil
        }
    }

    /// The value, or nil for a floating-point result that is not a number:
    /// SQLite stores NaN as NULL, so every result of arithmetic, a function
    /// or an aggregate that is NaN (`(-2) ** 0.5`, `∞ - ∞`, the average of
    /// ∞ and -∞) is nil on every backend.
    ///
    /// - Parameter value: A result.
    /// - Returns: `value`, or `null` when it is a NaN.
    public static func numberOrNil(_ value: PredicateValue) -> PredicateValue {
        if case .double(let d) = value, d.isNaN { return .null }
        return value
    }

    /// Applies an arithmetic operator to two values.
    ///
    /// Adding, subtracting, multiplying or dividing two integers gives an
    /// integer (a quotient truncated toward zero), or a floating-point number
    /// when the result overflows; every other result is a floating-point
    /// number.
    ///
    /// - Parameters:
    ///   - op: The operator. The set operators (`UNION`, `INTERSECT`,
    ///     `MINUS`) give nil here.
    ///   - a: The left operand.
    ///   - b: The right operand.
    /// - Returns: The result, or `null` when either operand is not a number
    ///   or when dividing by zero.
    public static func apply(_ op: BinaryOperator, _ a: PredicateValue, _ b: PredicateValue) -> PredicateValue {
        if let x = integer(a), let y = integer(b) {
            switch op {
            case .add:
                let (r, o) = x.addingReportingOverflow(y)
                return o ? .double(Double(x) + Double(y)) : .int(r)
            case .subtract:
                let (r, o) = x.subtractingReportingOverflow(y)
                return o ? .double(Double(x) - Double(y)) : .int(r)
            case .multiply:
                let (r, o) = x.multipliedReportingOverflow(by: y)
                return o ? .double(Double(x) * Double(y)) : .int(r)
            case .divide:
                // Integers divide as integers, truncating toward zero, as
                // Apple's NSExpression, SQLite and PostgreSQL divide them.
                guard y != 0 else { return .null }
                let (r, o) = x.dividedReportingOverflow(by: y)
                return o ? .double(Double(x) / Double(y)) : .int(r)
            default:
                break
            }
        }
        guard let x = ValueComparison.number(a), let y = ValueComparison.number(b) else { return .null }
        let result: Double
        switch op {
        case .add: result = x + y
        case .subtract: result = x - y
        case .multiply: result = x * y
        case .divide: guard y != 0 else { return .null }; result = x / y
        case .power: result = pow(x, y)
        case .union, .intersect, .minus: return .null
        }
        return numberOrNil(.double(result))
    }
}

/// Aggregates over the members of a collection: the collection operators
/// (`@sum`, `@avg`, …), the built-in functions over collections, and indexing.
///
/// Apart from counting, aggregates skip nil members.
public enum Aggregates {
    /// `@sum`, `@avg`, `@min`, `@max` (`@count` is counted by the caller).
    ///
    /// - Parameters:
    ///   - op: The collection operator.
    ///   - members: The collection's members.
    ///   - integer: Whether `@sum` sums as integers (as `sum(_:integer:)`
    ///     does).
    /// - Returns: For `@sum` the total as `sum(_:integer:)` gives it; for
    ///   `@avg` the mean of the numbers as a double, or `null` when there are
    ///   none; for `@min` and `@max` the member `extreme(_:wantLess:)` finds;
    ///   for `@count` the number of members, nil ones included.
    public static func apply(_ op: AggregateOperator, _ members: [PredicateValue], integer: Bool) -> PredicateValue {
        Arithmetic.numberOrNil(aggregate(op, members, integer: integer))
    }

    static func aggregate(_ op: AggregateOperator, _ members: [PredicateValue], integer: Bool) -> PredicateValue {
        switch op {
        case .count: return .int(Int64(members.count))
        case .sum: return sum(members, integer: integer)
        case .avg:
            let numbers = members.compactMap(ValueComparison.number)
            return numbers.isEmpty ? .null : .double(numbers.reduce(0, +) / Double(numbers.count))
        case .min: return extreme(members, wantLess: true)
        case .max: return extreme(members, wantLess: false)
        }
    }

    /// The total of the members that are numbers, skipping the rest.
    ///
    /// - Parameters:
    ///   - members: The collection's members.
    ///   - integer: Whether to sum as integers (the members are integers or
    ///     booleans). Members that are not integers are then skipped, and an
    ///     overflowing total falls back to a floating-point sum of all the numbers.
    /// - Returns: An integer total when `integer` is true and the sum fits,
    ///   otherwise a floating-point total; 0 for an empty collection.
    public static func sum(_ members: [PredicateValue], integer: Bool) -> PredicateValue {
        Arithmetic.numberOrNil(total(members, integer: integer))
    }

    static func total(_ members: [PredicateValue], integer: Bool) -> PredicateValue {
        if integer {
            var total: Int64 = 0
            for m in members {
                guard let i = Arithmetic.integer(m) else { continue }
                let (r, overflow) = total.addingReportingOverflow(i)
                if overflow { return .double(members.compactMap(ValueComparison.number).reduce(0, +)) }
                total = r
            }
            return .int(total)
        }
        return .double(members.compactMap(ValueComparison.number).reduce(0, +))
    }

    /// The least or the greatest member, skipping nil.
    ///
    /// Members are ordered as comparisons order them; a member that does not
    /// compare with the best one so far (a different kind of value) is passed over.
    ///
    /// - Parameters:
    ///   - members: The collection's members.
    ///   - wantLess: True for the least member (`@min`), false for the
    ///     greatest (`@max`).
    /// - Returns: The member found, or `null` when there are no members other than nil.
    public static func extreme(_ members: [PredicateValue], wantLess: Bool) -> PredicateValue {
        var best: PredicateValue?
        for m in members where m != .null {
            guard let current = best else {
                best = m
                continue
            }
            if let order = ValueComparison.order(m, current), wantLess ? order < 0 : order > 0 { best = m }
        }
        return best ?? .null
    }

    /// The built-in functions over a collection.
    ///
    /// - Parameters:
    ///   - function: The function, such as `sum`, `average`, `median`, `mode`
    ///     or `stddev`.
    ///   - members: The collection's members.
    ///   - integer: Whether `sum` sums as integers (as `sum(_:integer:)` does).
    /// - Returns: The result (`count` counts every member; `average`, `median`
    ///   and `stddev` are doubles over the numbers, `null` when there are none;
    ///   `mode` is the most frequent non-nil member); `null` for a function
    ///   that is not over a collection.
    public static func function(_ function: BuiltinFunction, _ members: [PredicateValue], integer: Bool) -> PredicateValue {
        Arithmetic.numberOrNil(self.function(of: function, members, integer: integer))
    }

    static func function(of function: BuiltinFunction, _ members: [PredicateValue], integer: Bool) -> PredicateValue {
        let numbers = members.compactMap(ValueComparison.number)
        switch function {
        case .sum: return sum(members, integer: integer)
        case .count: return .int(Int64(members.count))
        case .min: return extreme(members, wantLess: true)
        case .max: return extreme(members, wantLess: false)
        case .average: return numbers.isEmpty ? .null : .double(numbers.reduce(0, +) / Double(numbers.count))
        case .median:
            guard !numbers.isEmpty else { return .null }
            let sorted = numbers.sorted()
            let middle = sorted.count / 2
            return .double(sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2)
        case .mode:
            var counts: [(PredicateValue, Int)] = []
            for m in members where m != .null {
                if let i = counts.firstIndex(where: { ValueComparison.equal($0.0, m) }) { counts[i].1 += 1 }
                else { counts.append((m, 1)) }
            }
            return counts.max { $0.1 < $1.1 }?.0 ?? .null
        case .stddev:
            guard !numbers.isEmpty else { return .null }
            let mean = numbers.reduce(0, +) / Double(numbers.count)
            return .double(sqrt(numbers.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(numbers.count)))
        default: return .null
        }
    }

    /// `base[index]`: lists and arrays by position (negative from the end),
    /// dictionaries by key.
    ///
    /// - Parameters:
    ///   - base: The array or dictionary.
    ///   - position: An integer (or a whole number) for an array; a string key
    ///     for a dictionary.
    /// - Returns: The member, or `null` when the position is out of range, the
    ///   key is missing, or `base` is neither an array nor a dictionary.
    public static func index(_ base: PredicateValue, _ position: PredicateValue) -> PredicateValue {
        switch (base, position) {
        case (.array(let members), _):
            guard let i = Arithmetic.integer(position) ?? ValueComparison.number(position).flatMap({ Int64(exactly: $0) })
            else { return .null }
            let index = i < 0 ? Int64(members.count) + i : i
            return index >= 0 && index < Int64(members.count) ? members[Int(index)] : .null
        case (.dictionary(let d), .string(let key)):
            return d[key] ?? .null
        default:
            return .null
        }
    }
}

/// The built-in functions on plain values: numbers, integers, strings and
/// casts. Nil in, nil out.
public enum Functions {
    /// Calls a built-in function on its arguments.
    ///
    /// Functions over collections, set operations, `random`, and `now` are
    /// not computed here and give `null` (see `Aggregates` and
    /// `BuiltinFunctions`).
    ///
    /// - Parameters:
    ///   - function: The function to call.
    ///   - arguments: Its arguments, in order.
    /// - Returns: The result, or `null` when an argument is nil or of the
    ///   wrong kind, or the function has no result for it (such as the square
    ///   root of a negative number).
    public static func apply(_ function: BuiltinFunction, _ arguments: [PredicateValue]) -> PredicateValue {
        Arithmetic.numberOrNil(value(of: function, arguments))
    }

    static func value(of function: BuiltinFunction, _ arguments: [PredicateValue]) -> PredicateValue {
        let first = arguments.first ?? .null
        let number = ValueComparison.number(first)
        switch function {
        case .sqrt: return number.map { $0 < 0 ? PredicateValue.null : .double($0.squareRoot()) } ?? .null
        case .log: return number.map { $0 <= 0 ? PredicateValue.null : .double(log10($0)) } ?? .null
        case .ln: return number.map { $0 <= 0 ? PredicateValue.null : .double(Foundation.log($0)) } ?? .null
        case .exp: return number.map { .double(Foundation.exp($0)) } ?? .null
        case .floor: return number.map { .double($0.rounded(.down)) } ?? .null
        case .ceiling: return number.map { .double($0.rounded(.up)) } ?? .null
        case .trunc: return number.map { .double($0.rounded(.towardZero)) } ?? .null
        case .abs:
            if let i = Arithmetic.integer(first), i != .min { return .int(Swift.abs(i)) }
            return number.map { .double(Swift.abs($0)) } ?? .null
        case .modulus:
            guard arguments.count == 2 else { return .null }
            if let a = Arithmetic.integer(arguments[0]), let b = Arithmetic.integer(arguments[1]) {
                return b == 0 || (a == .min && b == -1) ? .null : .int(a % b)
            }
            guard let a = number, let b = ValueComparison.number(arguments[1]), b != 0 else { return .null }
            return .double(fmod(a, b))
        case .bitwiseAnd, .bitwiseOr, .bitwiseXor, .leftshift, .rightshift:
            guard arguments.count == 2, let a = Arithmetic.integer(arguments[0]), let b = Arithmetic.integer(arguments[1])
            else { return .null }
            switch function {
            case .bitwiseAnd: return .int(a & b)
            case .bitwiseOr: return .int(a | b)
            case .bitwiseXor: return .int(a ^ b)
            case .leftshift: return b < 0 || b > 63 ? .null : .int(a << b)
            default: return b < 0 || b > 63 ? .null : .int(a >> b)
            }
        case .onesComplement:
            return Arithmetic.integer(first).map { .int(~$0) } ?? .null
        case .uppercase:
            if case .string(let s) = first { return .string(s.uppercased()) }
            return .null
        case .lowercase:
            if case .string(let s) = first { return .string(s.lowercased()) }
            return .null
        case .randomn:
            guard let n = Arithmetic.integer(first), n > 0 else { return .null }
            return .int(Int64.random(in: 0..<n))
        case .castToDate:
            switch first {
            case .date: return first
            default: return number.map { .date(Date(timeIntervalSinceReferenceDate: $0)) } ?? .null
            }
        case .castToNumber:
            switch first {
            case .int, .double: return first
            case .bool(let b): return .int(b ? 1 : 0)
            case .date(let d): return .double(d.timeIntervalSinceReferenceDate)
            case .string(let s): return Int64(s).map(PredicateValue.int) ?? Double(s).map(PredicateValue.double) ?? .null
            default: return .null
            }
        case .castToString:
            switch first {
            case .string: return first
            case .null: return .null
            case .int(let i): return .string(String(i))
            case .double(let d): return .string(String(d))
            case .bool(let b): return .string(b ? "1" : "0")
            case .uuid(let u): return .string(u.uuidString)
            case .date(let d): return dateDescription(d.timeIntervalSinceReferenceDate).map(PredicateValue.string) ?? .null
            default: return .null
            }
        default:
            return .null
        }
    }

    /// A date as NSDate's `description` writes it, `2001-01-01 00:00:00 +0000`
    /// (UTC, whole seconds, rounded down), from its seconds since 1 January
    /// 2001; nil outside the years 1 to 9999 or for a value that is not finite.
    ///
    /// - Parameter seconds: The date's seconds since 2001-01-01T00:00:00Z.
    /// - Returns: The text, or nil.
    public static func dateDescription(_ seconds: Double) -> String? {
        // 0001-01-01 and 10000-01-01, in seconds since 2001.
        guard seconds.isFinite, seconds >= -63_113_904_000, seconds < 252_423_993_600 else { return nil }
        let whole = Int64(seconds.rounded(.down)) + 978_307_200  // seconds since 1970
        let days = whole >= 0 ? whole / 86_400 : (whole - 86_399) / 86_400
        let secondOfDay = whole - days * 86_400
        let (year, month, day) = PredicateValue.civil(days)
        func pad(_ n: Int64, _ width: Int) -> String {
            let digits = String(n)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(year, 4))-\(pad(month, 2))-\(pad(day, 2)) \(pad(secondOfDay / 3600, 2)):"
            + "\(pad(secondOfDay % 3600 / 60, 2)):\(pad(secondOfDay % 60, 2)) +0000"
    }
}

/// The built-in functions by name, as both backends compute them: the memory
/// lowering calls them directly, and the SQLite store registers them as
/// `sift_call(name, arguments…)`.
public enum BuiltinFunctions {
    /// The name SQL calls `CAST(date, 'NSString')` by, on a date's seconds
    /// since 2001 (a date column's value).
    public static let dateToString = "dateToString"

    /// Calls the function named `name` (a `BuiltinFunction` raw value, or
    /// "power" for `**`); nil for an unknown name.
    ///
    /// - Parameters:
    ///   - name: The function's name.
    ///   - arguments: Its arguments, in order.
    /// - Returns: The result (`null` when the arguments give none), or nil when
    ///   no built-in function has that name.
    public static func call(_ name: String, _ arguments: [PredicateValue]) -> PredicateValue? {
        if name == "power" {
            return Arithmetic.apply(.power, arguments.first ?? .null, arguments.dropFirst().first ?? .null)
        }
        if name == dateToString {
            // A date column holds seconds since 2001: CAST(date, 'NSString').
            return ValueComparison.number(arguments.first ?? .null).flatMap(Functions.dateDescription)
                .map(PredicateValue.string) ?? .null
        }
        guard let function = BuiltinFunction(rawValue: name) else { return nil }
        switch function {
        case .random: return .double(Double.random(in: 0..<1))
        case .now: return .date(Date())
        default: return Functions.apply(function, arguments)
        }
    }
}
