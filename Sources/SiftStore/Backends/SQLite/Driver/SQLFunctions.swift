// Store stage: the SQL functions the SQL lowering relies on, registered with
// every connection. Each one runs the same Swift code the memory lowering
// runs, so both backends give the same answers.

import CSQLite
import Foundation
import Sift

extension SQLiteConnection {
    /// Registers `sift_fold`, `sift_matches`, `sift_like`, `sift_contains` and `sift_call`.
    func registerSiftFunctions() throws(SQLiteError) {
        // What Core Data's derived-attribute triggers call: nothing to do here.
        for name in CoreDataCatalog.triggerFunctions {
            try registerFunction(name, arity: -1, deterministic: false) { _ in .null }
        }
        try registerFunction(SQLiteDialect().functionName(.fold), arity: 2) { arguments in
            guard case .text(let text) = arguments[0], case .integer(let flags) = arguments[1] else { return arguments[0] }
            return .text(StringFolding.fold(text, ComparisonOptions(foldingFlags: Int(flags))))
        }
        try registerFunction(SQLiteDialect().functionName(.matches), arity: 3, deterministic: true) { context, arguments in
            guard case .text(let text) = SQLiteFunctionContext.value(arguments[0]),
                  case .text(let pattern) = SQLiteFunctionContext.value(arguments[1]),
                  case .integer(let flags) = SQLiteFunctionContext.value(arguments[2]) else {
                sqlite3_result_int64(context, 0)
                return
            }
            let options = ComparisonOptions(foldingFlags: Int(flags))
            // One compiled pattern per statement: SQLite keeps it as the
            // pattern argument's auxiliary data while the pattern stays the same.
            let regex: MatchesPattern?
            if let cached = sqlite3_get_auxdata(context, 1) {
                regex = Unmanaged<RegexBox>.fromOpaque(cached).takeUnretainedValue().regex
            } else {
                regex = StringMatching.regex(pattern, options)
                let box = Unmanaged.passRetained(RegexBox(regex)).toOpaque()
                sqlite3_set_auxdata(context, 1, box) { Unmanaged<RegexBox>.fromOpaque($0!).release() }
            }
            guard let regex else {
                sqlite3_result_int64(context, 0)
                return
            }
            let subject = options.contains(.diacriticInsensitive)
                ? StringFolding.fold(text, options.subtracting(.caseInsensitive)) : text
            SQLiteFunctionContext.result(matching: StringMatching.matches(subject, regex), context)
        }
        try registerFunction(SQLiteDialect().functionName(.like), arity: 2, deterministic: true) { context, arguments in
            guard case .text(let text) = SQLiteFunctionContext.value(arguments[0]),
                  case .text(let pattern) = SQLiteFunctionContext.value(arguments[1]) else {
                sqlite3_result_null(context)
                return
            }
            SQLiteFunctionContext.result(matching: StringMatching.like(text, Array(pattern.unicodeScalars)), context)
        }
        try registerFunction(SQLiteDialect().functionName(.contains), arity: 2) { arguments in
            guard case .text(let text) = arguments[0], case .text(let pattern) = arguments[1] else { return .null }
            return .integer(StringMatching.contains(text, pattern) ? 1 : 0)
        }
        try registerFunction(SQLiteDialect().functionName(.call), arity: -1, deterministic: false) { arguments in
            guard case .text(let name)? = arguments.first else { return .null }
            let values = arguments.dropFirst().map(PredicateValue.init(sqlValue:))
            return BuiltinFunctions.call(name, Array(values)).map(SQLLowering.sqlValue) ?? .null
        }
    }
}

extension SQLiteConnection {
    /// Registers an application's function under its SQL name.
    func register(_ function: CustomFunction) throws(SQLiteError) {
        let types = function.argumentTypes
        try registerFunction(function.sqlName, arity: Int32(types.count)) { arguments in
            let values = zip(arguments, types).map { PredicateValue(sqlValue: $0, expected: $1) }
            return SQLLowering.sqlValue(function.body(values))
        }
    }
}

final class RegexBox {
    let regex: MatchesPattern?
    init(_ regex: MatchesPattern?) { self.regex = regex }
}

extension PredicateValue {
    /// A value read from SQLite, without knowing its attribute's type.
    package init(sqlValue: SQLValue) {
        switch sqlValue {
        case .null: self = .null
        case .integer(let i): self = .int(i)
        case .real(let d): self = .double(d)
        case .text(let s): self = .string(s)
        case .blob(let d): self = .data(d)
        case .array(let members): self = .array(members.map(PredicateValue.init(sqlValue:)))
        }
    }

    /// A value read from SQLite as a function argument of `expected` type.
    init(sqlValue: SQLValue, expected: ValueType) {
        switch (sqlValue, expected) {
        case (.integer(let i), .boolean): self = .bool(i != 0)
        case (.real(let d), .date): self = .date(Date(timeIntervalSinceReferenceDate: d))
        case (.integer(let i), .date): self = .date(Date(timeIntervalSinceReferenceDate: Double(i)))
        case (.text(let s), .uuid): self = UUID(uuidString: s).map(PredicateValue.uuid) ?? .string(s)
        case (.blob(let d), .uuid) where d.count == 16:
            self = PredicateValue(uuidBytes: d) ?? .data(d)
        default: self.init(sqlValue: sqlValue)
        }
    }

    /// A value read from SQLite for an attribute of `type`.
    package init(sqlValue: SQLValue, type: AttributeType) {
        switch (sqlValue, type) {
        case (.integer(let i), .boolean): self = .bool(i != 0)
        case (.real(let d), .date): self = .date(Date(timeIntervalSinceReferenceDate: d))
        case (.integer(let i), .date): self = .date(Date(timeIntervalSinceReferenceDate: Double(i)))
        case (.integer(let i), .double), (.integer(let i), .float), (.integer(let i), .decimal): self = .double(Double(i))
        case (.text(let s), .uuid): self = UUID(uuidString: s).map(PredicateValue.uuid) ?? .string(s)
        case (.blob(let d), .uuid) where d.count == 16:
            // Core Data keeps a UUID as its 16 bytes.
            self = PredicateValue(uuidBytes: d) ?? .data(d)
        default: self.init(sqlValue: sqlValue)
        }
    }
}
