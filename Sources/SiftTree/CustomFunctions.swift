// Stage 3 (tree): functions an application registers, by name, with their
// types and their Swift implementation. The binder checks calls against the
// signature, the memory lowering calls the implementation, and the SQLite
// store registers the same implementation with SQLite, so a predicate that
// calls one still runs in SQL.

import SiftValues
import Synchronization

/// A function predicates may call by name.
///
/// ```swift
/// let registry = FunctionRegistry()
/// registry.register(CustomFunction("initials", arguments: [.string], result: .string) { args in
///     guard case .string(let s) = args[0] else { return .null }
///     return .string(String(s.split(separator: " ").compactMap(\.first)))
/// })
/// // initials(name) == 'AA'   or   FUNCTION(name, 'initials') == 'AA'
/// ```
public struct CustomFunction: Hashable, Sendable {
    /// The name predicates call it by.
    public let name: String
    /// The types of its arguments (`.any` accepts anything).
    public let argumentTypes: [ValueType]
    /// The type of its result.
    public let resultType: ValueType
    /// The implementation. It must be deterministic: SQLite may call it any
    /// number of times.
    public let body: @Sendable ([PredicateValue]) -> PredicateValue

    /// Creates a function predicates can call.
    ///
    /// - Parameters:
    ///   - name: The name predicates call it by.
    ///   - arguments: The types of its arguments (`.any` accepts anything).
    ///   - result: The type of its result.
    ///   - body: The implementation, which receives the argument values and
    ///     returns the result. It must be deterministic: SQLite may call it
    ///     any number of times.
    public init(_ name: String, arguments: [ValueType], result: ValueType,
                _ body: @escaping @Sendable ([PredicateValue]) -> PredicateValue) {
        self.name = name
        self.argumentTypes = arguments
        self.resultType = result
        self.body = body
    }

    /// The name SQLite knows it by.
    public var sqlName: String { "sift_fn_" + name }

    public static func == (lhs: CustomFunction, rhs: CustomFunction) -> Bool {
        lhs.name == rhs.name && lhs.argumentTypes == rhs.argumentTypes && lhs.resultType == rhs.resultType
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
        hasher.combine(argumentTypes)
        hasher.combine(resultType)
    }
}

/// The custom functions an application has registered. Safe to share.
public final class FunctionRegistry: Sendable {
    private let functions = LockedState<[String: CustomFunction]>([:])
    private let registrations = Atomic<Int>(0)

    /// Creates a registry holding the given functions.
    ///
    /// - Parameter functions: The functions to register; when two share a
    ///   name, the later one wins. Empty by default.
    public init(_ functions: [CustomFunction] = []) {
        for f in functions { register(f) }
    }

    /// Adds (or replaces) a function.
    ///
    /// - Parameter function: The function to add; it replaces a registered
    ///   function with the same name.
    public func register(_ function: CustomFunction) {
        functions.withLock { $0[function.name] = function }
        registrations.add(1, ordering: .releasing)
    }

    /// How many functions were registered so far: what was compiled with
    /// fewer may bind differently now.
    package var generation: Int { registrations.load(ordering: .acquiring) }

    /// The function called `name`.
    ///
    /// - Parameter name: The name predicates call the function by.
    /// - Returns: The registered function of that name, or nil when there is
    ///   none.
    public func function(named name: String) -> CustomFunction? {
        functions.withLock { $0[name] }
    }

    /// Every registered function.
    public var all: [CustomFunction] {
        functions.withLock { Array($0.values) }.sorted { $0.name < $1.name }
    }
}
