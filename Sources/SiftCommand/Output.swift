// How commands print results, in one of four forms every command that
// prints results takes (`--format`): a table, one pretty JSON array or
// object, JSON lines (one compact object a line, keys sorted), or CSV
// (RFC 4180). Values print in one form everywhere: a date as ISO 8601 in
// UTC (`2024-05-01T09:30:00Z`), an object as its primary key, binary data
// in Base64, a UUID as text. Output is written in large pieces: printing
// 200 000 rows costs about as much in every form.

import ArgumentParser
import Foundation
import Sift

/// How a command prints its results.
enum OutputFormat: String, ExpressibleByArgument, CaseIterable, Sendable {
    /// Columns aligned under a header (or the command's own text).
    case table
    /// One JSON value, pretty-printed: an array of objects, or an object.
    case json
    /// JSON lines: one compact object a line, its keys sorted.
    case jsonl
    /// Comma-separated values (RFC 4180): a header line, then a line a row.
    case csv

    /// Reads a format's name; `text`, what `history` called its table before, is `table`.
    init?(argument: String) {
        self.init(rawValue: argument == "text" ? "table" : argument)
    }
}

/// Standard output, written in large pieces rather than a line at a time.
final class OutputBuffer {
    private var text = ""

    init() { text.reserveCapacity(1 << 17) }

    /// Adds `string`, and writes what is buffered once it is large.
    func write(_ string: String) {
        text += string
        if text.utf8.count >= 1 << 16 { flush() }
    }

    /// Adds `line` and a line end.
    func line(_ line: String) {
        write(line)
        write("\n")
    }

    /// Writes what is buffered.
    func flush() {
        guard !text.isEmpty else { return }
        FileHandle.standardOutput.write(Data(text.utf8))
        text.removeAll(keepingCapacity: true)
    }

    deinit {
        if !text.isEmpty { FileHandle.standardOutput.write(Data(text.utf8)) }
    }
}

/// Results as rows of named columns, printed in any ``OutputFormat``.
struct ResultRows {
    /// The column names, in order.
    var columns: [String]
    /// The rows: a value per column.
    var rows: [[PredicateValue]]

    /// Prints the rows: a table, a JSON array of objects, JSON lines, or CSV.
    func print(_ format: OutputFormat) {
        let out = OutputBuffer()
        switch format {
        case .table:
            printTable(columns, rows.map { $0.map(Cell.text) }, into: out)
        case .json:
            out.write(rows.isEmpty ? "[]\n" : "[\n")
            for (index, row) in rows.enumerated() {
                var text = ""
                JSONText.object(zip(columns, row), into: &text, indent: 1)
                out.write("  " + text + (index == rows.count - 1 ? "\n]\n" : ",\n"))
            }
        case .jsonl:
            for row in rows {
                var text = ""
                JSONText.object(zip(columns, row), into: &text, indent: nil)
                out.line(text)
            }
        case .csv:
            out.write(CSV.line(columns))
            for row in rows { out.write(CSV.line(row.map(Cell.csv))) }
        }
    }
}

/// Prints rows of cells in columns under a header, each column as wide as
/// its widest cell (up to 40 characters; longer cells end in `…`).
func printTable(_ header: [String], _ rows: [[String]], into out: OutputBuffer) {
    // Widths counted once per cell, in characters.
    var widths = header.map(\.count)
    var counted: [[Int]] = []
    counted.reserveCapacity(rows.count)
    for row in rows {
        let counts = row.map(\.count)
        for (column, count) in counts.enumerated() where column < widths.count { widths[column] = max(widths[column], count) }
        counted.append(counts)
    }
    widths = widths.map { min(40, $0) }
    func line(_ cells: [String], _ counts: [Int]) -> String {
        var text = ""
        for (column, width) in widths.enumerated() {
            let cell = column < cells.count ? cells[column] : ""
            let count = column < counts.count ? counts[column] : 0
            if column > 0 { text += "  " }
            if count > width {
                text += cell.prefix(max(0, width - 1))
                text += "…"
            } else {
                text += cell
                if column < widths.count - 1 { text += String(repeating: " ", count: width - count) }
            }
        }
        return text
    }
    out.line(line(header, header.map(\.count)))
    out.line(widths.map { String(repeating: "-", count: $0) }.joined(separator: "  "))
    for (row, counts) in zip(rows, counted) { out.line(line(row, counts)) }
}

/// Values as cells of tables and CSV.
enum Cell {
    /// A value as a table shows it: text as it is, a date in ISO 8601, nil as `nil`.
    static func text(_ value: PredicateValue) -> String {
        switch value {
        case .string(let s): s
        case .date(let d): ISODate.string(d)
        case .object(let reference): String(reference.id)
        case .data(let data): data.base64EncodedString()
        case .uuid(let uuid): uuid.uuidString
        case .array, .dictionary: JSONText.compact(value)
        default: value.description
        }
    }

    /// A value as a CSV field: as a table shows it, nil an empty field.
    static func csv(_ value: PredicateValue) -> String {
        if case .null = value { return "" }
        return text(value)
    }
}

/// CSV as RFC 4180 writes it: fields with a comma, a quote or a line break
/// quoted, quotes doubled, lines ended by CRLF.
enum CSV {
    static func field(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0 == "\n" || $0 == "\r" || $0 == "\r\n" }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    static func line(_ fields: [String]) -> String {
        fields.map(field).joined(separator: ",") + "\r\n"
    }
}

/// Dates as ISO 8601 text in UTC (`2024-05-01T09:30:00Z`), with
/// milliseconds when the time has a fraction of a second
/// (`2024-05-10T18:14:11.682Z`): the one form every output prints them in.
enum ISODate {
    static func string(_ date: Date) -> String {
        let milliseconds = (date.timeIntervalSince1970 * 1000).rounded()
        guard milliseconds.isFinite, abs(milliseconds) < 1e17 else { return "\(date)" }
        let whole = Int64(milliseconds)
        var time = time_t(whole >= 0 ? whole / 1000 : (whole - 999) / 1000)
        let fraction = Int(whole - Int64(time) * 1000)
        var parts = tm()
        guard gmtime_r(&time, &parts) != nil else { return "\(date)" }
        func padded(_ n: Int, _ width: Int) -> String {
            let digits = String(n)
            return digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
        }
        var text = padded(Int(parts.tm_year) + 1900, 4) + "-" + padded(Int(parts.tm_mon) + 1, 2) + "-" + padded(Int(parts.tm_mday), 2)
        text += "T" + padded(Int(parts.tm_hour), 2) + ":" + padded(Int(parts.tm_min), 2) + ":" + padded(Int(parts.tm_sec), 2)
        if fraction != 0 { text += "." + padded(fraction, 3) }
        return text + "Z"
    }
}

/// JSON text in one style: keys sorted; compact (`{"k":v}`) or pretty
/// (two spaces a level, `"k": v`). Dates as ISO 8601 text, objects as
/// their primary key, data in Base64, non-finite numbers as null.
enum JSONText {
    /// `value` in one compact line.
    static func compact(_ value: PredicateValue) -> String {
        var text = ""
        write(value, into: &text, indent: nil)
        return text
    }

    /// `value` pretty-printed.
    static func pretty(_ value: PredicateValue) -> String {
        var text = ""
        write(value, into: &text, indent: 0)
        return text
    }

    /// An object of `members`, its keys sorted; `indent` is the level of a
    /// pretty object, nil for a compact one.
    static func object(_ members: some Sequence<(String, PredicateValue)>, into text: inout String, indent: Int?) {
        let sorted = members.sorted { $0.0 < $1.0 }
        guard !sorted.isEmpty else {
            text += "{}"
            return
        }
        text += "{"
        for (index, (key, value)) in sorted.enumerated() {
            if index > 0 { text += "," }
            if let indent { text += "\n" + String(repeating: "  ", count: indent + 1) }
            string(key, into: &text)
            text += indent == nil ? ":" : ": "
            write(value, into: &text, indent: indent.map { $0 + 1 })
        }
        if let indent { text += "\n" + String(repeating: "  ", count: indent) }
        text += "}"
    }

    static func write(_ value: PredicateValue, into text: inout String, indent: Int?) {
        switch value {
        case .null: text += "null"
        case .bool(let b): text += b ? "true" : "false"
        case .int(let i): text += String(i)
        case .double(let d): text += d.isFinite ? (d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) + ".0" : "\(d)") : "null"
        case .string(let s): string(s, into: &text)
        case .date(let d): string(ISODate.string(d), into: &text)
        case .data(let d): string(d.base64EncodedString(), into: &text)
        case .uuid(let u): string(u.uuidString, into: &text)
        case .object(let reference): text += String(reference.id)
        case .dictionary(let members): object(members.map { ($0.key, $0.value) }, into: &text, indent: indent)
        case .array(let members):
            guard !members.isEmpty else {
                text += "[]"
                return
            }
            text += "["
            // Pretty: objects and arrays in an array a line each; values in one line.
            let nested = members.contains { if case .dictionary = $0 { true } else if case .array = $0 { true } else { false } }
            if let indent, nested {
                for (index, member) in members.enumerated() {
                    text += (index > 0 ? ",\n" : "\n") + String(repeating: "  ", count: indent + 1)
                    write(member, into: &text, indent: indent + 1)
                }
                text += "\n" + String(repeating: "  ", count: indent) + "]"
                return
            }
            for (index, member) in members.enumerated() {
                if index > 0 { text += indent == nil ? "," : ", " }
                write(member, into: &text, indent: indent)
            }
            text += "]"
        }
    }

    /// A JSON string: quotes, backslashes and control characters escaped.
    static func string(_ s: String, into text: inout String) {
        text += "\""
        var plain = true
        for unit in s.utf8 where unit < 0x20 || unit == 0x22 || unit == 0x5C {
            plain = false
            break
        }
        if plain {
            text += s
        } else {
            for scalar in s.unicodeScalars {
                switch scalar {
                case "\"": text += "\\\""
                case "\\": text += "\\\\"
                case "\n": text += "\\n"
                case "\r": text += "\\r"
                case "\t": text += "\\t"
                case _ where scalar.value < 0x20:
                    let hex = String(scalar.value, radix: 16)
                    text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
                default: text.unicodeScalars.append(scalar)
                }
            }
        }
        text += "\""
    }
}

/// `count` and the noun, singular or plural as the count asks: `1 object`,
/// `2 objects`, `0 objects` (`plural` for nouns not made plural with `s`).
func counted(_ count: Int, _ noun: String, plural: String? = nil) -> String {
    "\(count) " + (count == 1 ? noun : plural ?? noun + "s")
}
