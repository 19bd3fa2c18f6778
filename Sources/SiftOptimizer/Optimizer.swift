// Stage 5 (optimizer): rewrites of bound trees that keep their meaning.
//
// An ordered list of named rules, one file each under Rules/, applied
// bottom-up, the whole list repeated until nothing changes (or the iteration
// cap). Every rule keeps meaning exactly under Sift's semantics — two-valued
// nil logic included — so both lowerings give the same answers before and
// after; a property test holds them to it. The optimizer never sees source
// text and never consults the store.

import SiftTree

/// One rewrite.
public protocol OptimizerRule: Sendable {
    /// The rule's name, as fixtures and `explain` show it.
    var name: String { get }
    /// Rewrites one predicate node whose children are already rewritten;
    /// returns nil when the rule does not apply here.
    ///
    /// - Parameter predicate: The node to rewrite, its children already
    ///   rewritten.
    /// - Returns: The rewritten node, with the same meaning; nil when the rule
    ///   does not apply.
    func rewrite(_ predicate: BoundPredicate) -> BoundPredicate?
}

/// Applies rules to a bound tree until it no longer changes.
///
/// ```swift
/// let optimized = Optimizer.standard.optimize(bound)
/// ```
public struct Optimizer: Sendable {
    /// The rules, in the order they are tried.
    public var rules: [any OptimizerRule]
    /// The most passes over the rules.
    public var iterationCap: Int

    /// Creates an optimizer that applies the given rules.
    ///
    /// - Parameters:
    ///   - rules: The rules, in the order they are tried on each pass.
    ///   - iterationCap: The most passes over the rules (16 by default); the
    ///     optimizer stops earlier when a pass changes nothing.
    public init(rules: [any OptimizerRule], iterationCap: Int = 16) {
        self.rules = rules
        self.iterationCap = iterationCap
    }

    /// Every rule, in order: simplify first, then merge, then order for speed.
    public static let standard = Optimizer(rules: [
        ConstantFolding(),
        FlattenConnectives(),
        BooleanAbsorption(),
        DoubleNegation(),
        NegationPushDown(),
        DuplicateTerms(),
        Contradictions(),
        RangeMerging(),
        EqualitiesToIn(),
        LoopInvariantHoisting(),
        CountToExists(),
        TermOrdering(),
    ])

    /// The rule called `name` on its own.
    ///
    /// - Parameter name: The rule's name, such as `"constant-folding"`.
    /// - Returns: The rule of `standard` with that name, or nil when there is
    ///   none.
    public static func rule(named name: String) -> (any OptimizerRule)? {
        standard.rules.first { $0.name == name }
    }

    /// The optimized tree.
    ///
    /// - Parameter predicate: The bound predicate to optimize.
    /// - Returns: A predicate with the same meaning, after the rules have been
    ///   applied until nothing changes or `iterationCap` passes have run.
    public func optimize(_ predicate: BoundPredicate) -> BoundPredicate {
        optimizeWithTrace(predicate).0
    }

    /// The optimized tree, and the names of the rules that changed it, in
    /// the order they applied.
    ///
    /// - Parameter predicate: The bound predicate to optimize.
    /// - Returns: The optimized predicate, as `optimize(_:)` gives it, and the
    ///   name of each rule that changed the tree, once for each pass in which
    ///   it did.
    public func optimizeWithTrace(_ predicate: BoundPredicate) -> (BoundPredicate, [String]) {
        var current = predicate
        var applied: [String] = []
        for _ in 0..<iterationCap {
            var changed = false
            for rule in rules {
                if let next = Self.apply(rule, current) {
                    applied.append(rule.name)
                    current = next
                    changed = true
                }
            }
            if !changed { break }
        }
        return (current, applied)
    }

    /// Applies `rule` bottom-up, once per node (repeating at a node while it
    /// keeps changing, up to a small cap); nil when nothing changed, so an
    /// unchanged tree is neither rebuilt nor compared.
    static func apply(_ rule: any OptimizerRule, _ predicate: BoundPredicate) -> BoundPredicate? {
        var node = predicate
        var changed = false
        switch predicate {
        case .constant, .comparison, .exists:
            break
        case .not(let p):
            if let q = apply(rule, p) {
                node = .not(q)
                changed = true
            }
        case .and(let ps), .or(let ps):
            var operands = ps
            for (i, p) in ps.enumerated() {
                if let q = apply(rule, p) {
                    operands[i] = q
                    changed = true
                }
            }
            if changed {
                if case .and = predicate { node = .and(operands) } else { node = .or(operands) }
            }
        }
        for _ in 0..<8 {
            guard let rewritten = rule.rewrite(node) else { break }
            node = rewritten
            changed = true
        }
        return changed ? node : nil
    }
}
