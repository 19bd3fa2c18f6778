// PostgreSQL: Sift's SQL values to postgres-nio's bindings, and the cells of
// its rows back to Sift's SQL values — one codec for every statement the
// store runs.

#if PostgreSQL  // the package trait that brings postgres-nio (on by default)
import Foundation
import PostgresNIO
import Sift

extension PostgresDatabase {
    /// A statement with Sift's values bound as its parameters.
    static func query(_ sql: String, _ bindings: [SQLValue]) throws -> PostgresQuery {
        var binds = PostgresBindings(capacity: bindings.count)
        for value in bindings {
            switch value {
            case .null: binds.appendNull()
            case .integer(let i): binds.append(i)
            case .real(let d): binds.append(d)
            case .text(let s): binds.append(s)
            case .blob(let data): binds.append(ByteBuffer(bytes: data))
            case .array(let members):
                // One PostgreSQL array of the members' type (the dialect makes only such arrays).
                if members.allSatisfy({ if case .integer = $0 { true } else { false } }) {
                    binds.append(members.compactMap { if case .integer(let i) = $0 { i } else { nil } })
                } else if members.allSatisfy({ if case .real = $0 { true } else { false } }) {
                    binds.append(members.compactMap { if case .real(let d) = $0 { d } else { nil } })
                } else if members.allSatisfy({ if case .text = $0 { true } else { false } }) {
                    binds.append(members.compactMap { if case .text(let s) = $0 { s } else { nil } })
                } else {
                    throw PostgresDatabaseError(message: "an array of mixed members cannot be bound: \(value)", sql: sql)
                }
            }
        }
        return PostgresQuery(unsafeSQL: sql, binds: binds)
    }

    /// A cell as one of Sift's SQL values.
    static func value(_ cell: PostgresCell) throws -> SQLValue {
        guard cell.bytes != nil else { return .null }
        switch cell.dataType {
        case .int2, .int4, .int8: return .integer(try cell.decode(Int64.self))
        case .float4, .float8, .numeric: return .real(try cell.decode(Double.self))
        case .bool: return .integer(try cell.decode(Bool.self) ? 1 : 0)
        case .bytea: return .blob(Data(try cell.decode(ByteBuffer.self).readableBytesView))
        default: return .text(try cell.decode(String.self))
        }
    }
}
#endif
