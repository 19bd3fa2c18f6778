// Stage 6b (SQL lowering): MATCHES patterns a database's own regular
// expressions answer as memory does.
//
// Memory runs MATCHES through ICU (NSRegularExpression), anchored at both
// ends. PostgreSQL's regular expressions (its "advanced" flavour) differ in
// places — `.` matches a line break there, `$` does not match before a
// final line break, `\d`/`\w`/`\s` and POSIX classes follow the locale, set
// operations and possessive quantifiers do not exist, repetition counts stop
// at 255 — so a pattern runs on the server only when it is written entirely
// in a subset whose meaning is the same in both: literal characters,
// escaped punctuation, `\n` `\t` `\r`, `.` (rewritten to exclude ICU's line
// terminators), bracket classes of ASCII letters, digits and their ranges,
// quantifiers (greedy or lazy, counts up to 255) on those atoms, groups and
// alternation. Anything else stays in memory, as a MATCHES with `[c]` or
// `[d]` does. A group with a quantifier stays in memory too: there ICU's
// backtracking has a budget, and the answer (or the budget error) must be
// memory's.

import Foundation

enum RegularExpressionTranslation {
    /// What ICU's `.` never matches: its line terminators.
    static let dot = #"[^\n\v\f\r\u0085\u2028\u2029]"#

    /// The PostgreSQL pattern (anchored at both ends) that matches exactly
    /// the strings `pattern` MATCHES in memory; nil when the pattern is
    /// outside the shared subset.
    static func postgreSQL(_ pattern: String) -> String? {
        var reader = Reader(Array(pattern.unicodeScalars))
        guard !reader.scalars.isEmpty, let body = reader.alternation(depth: 0), reader.atEnd else { return nil }
        return "^(?:" + body + ")$"
    }

    private struct Reader {
        let scalars: [Unicode.Scalar]
        var index = 0

        init(_ scalars: [Unicode.Scalar]) { self.scalars = scalars }

        var atEnd: Bool { index == scalars.count }
        var current: Unicode.Scalar? { index < scalars.count ? scalars[index] : nil }

        static let special: Set<Unicode.Scalar> = ["\\", "^", "$", ".", "|", "?", "*", "+", "(", ")", "[", "]", "{", "}"]

        /// Branches separated by `|`, none empty.
        mutating func alternation(depth: Int) -> String? {
            guard depth < 32 else { return nil }
            var branches: [String] = []
            while true {
                guard let branch = sequence(depth: depth), !branch.isEmpty else { return nil }
                branches.append(branch)
                guard current == "|" else { break }
                index += 1
            }
            return branches.joined(separator: "|")
        }

        /// Quantified atoms up to `|`, `)` or the end.
        mutating func sequence(depth: Int) -> String? {
            var out = ""
            while let c = current, c != "|", c != ")" {
                if c == "(" {
                    index += 1
                    if current == "?" {
                        // Only a non-capturing group.
                        guard index + 1 < scalars.count, scalars[index + 1] == ":" else { return nil }
                        index += 2
                    }
                    guard let inner = alternation(depth: depth + 1), current == ")" else { return nil }
                    index += 1
                    // A quantified group stays in memory (see above).
                    if let next = current, ["*", "+", "?", "{"].contains(next) { return nil }
                    out += "(?:" + inner + ")"
                    continue
                }
                guard let atom = atom() else { return nil }
                out += atom
                if let quantifier = quantifier() {
                    out += quantifier
                } else if let next = current, ["*", "+", "?", "{"].contains(next) {
                    return nil
                }
            }
            return out
        }

        /// One character, escape, `.` or bracket class.
        mutating func atom() -> String? {
            guard let c = current else { return nil }
            switch c {
            case ".":
                index += 1
                return RegularExpressionTranslation.dot
            case "[":
                return bracket()
            case "\\":
                index += 1
                guard let e = current else { return nil }
                index += 1
                return escape(e)
            default:
                guard !Self.special.contains(c) else { return nil }
                index += 1
                return String(Character(c))
            }
        }

        /// An escape both read the same way: punctuation as itself, `\n` `\t` `\r`.
        func escape(_ e: Unicode.Scalar) -> String? {
            switch e {
            case "n", "t", "r": return "\\" + String(Character(e))
            default:
                // Printable ASCII that is neither a letter, a digit nor a space.
                guard (0x21...0x7E).contains(e.value), !Self.isWord(e) else { return nil }
                return "\\" + String(Character(e))
            }
        }

        /// `*`, `+`, `?` or `{n}`, `{n,}`, `{n,m}` (at most 255), then an optional lazy `?`.
        mutating func quantifier() -> String? {
            guard let c = current else { return nil }
            var out: String
            switch c {
            case "*", "+", "?":
                index += 1
                out = String(Character(c))
            case "{":
                var end = index + 1
                var text = ""
                while end < scalars.count, scalars[end] != "}" {
                    text.unicodeScalars.append(scalars[end])
                    end += 1
                }
                guard end < scalars.count else { return nil }
                let parts = text.split(separator: ",", omittingEmptySubsequences: false)
                guard (1...2).contains(parts.count), parts.allSatisfy({ $0.allSatisfy(\.isASCII) }),
                      let low = Int(parts[0]), low <= 255 else { return nil }
                if parts.count == 2, !parts[1].isEmpty {
                    guard let high = Int(parts[1]), high <= 255, low <= high else { return nil }
                }
                index = end + 1
                out = "{" + text + "}"
            default:
                return nil
            }
            if current == "?" {
                index += 1
                out += "?"
            }
            // A possessive quantifier has no equal.
            if current == "+" { return nil }
            return out
        }

        /// `[…]` or `[^…]` of ASCII letters and digits, their ranges, and escaped punctuation.
        mutating func bracket() -> String? {
            index += 1
            var out = "["
            if current == "^" {
                out += "^"
                index += 1
            }
            var members = 0
            while let c = current, c != "]" {
                if c == "\\" {
                    guard index + 1 < scalars.count, let escaped = escape(scalars[index + 1]) else { return nil }
                    out += escaped
                    index += 2
                } else if Self.isWord(c) {
                    index += 1
                    if current == "-", index + 1 < scalars.count, scalars[index + 1] != "]" {
                        let high = scalars[index + 1]
                        guard Self.sameKind(c, high), c.value <= high.value else { return nil }
                        out += String(Character(c)) + "-" + String(Character(high))
                        index += 2
                    } else {
                        out += String(Character(c))
                    }
                } else {
                    return nil
                }
                members += 1
            }
            guard current == "]", members > 0 else { return nil }
            index += 1
            return out + "]"
        }

        static func isWord(_ c: Unicode.Scalar) -> Bool {
            c.isASCII && (c.properties.isAlphabetic || ("0"..."9").contains(c))
        }

        static func sameKind(_ a: Unicode.Scalar, _ b: Unicode.Scalar) -> Bool {
            func kind(_ c: Unicode.Scalar) -> Int {
                ("0"..."9").contains(c) ? 0 : ("a"..."z").contains(c) ? 1 : ("A"..."Z").contains(c) ? 2 : 3
            }
            return kind(a) == kind(b) && kind(a) < 3
        }
    }
}
