// Stage 0 (values): dates as ISO 8601 text that reads back as the same date,
// to the bit. A date is a double of seconds since 2001-01-01T00:00:00Z (as
// Core Data and every Sift store keep it); its text is the calendar date and
// time of its whole seconds in UTC and, after the point, the digits of its
// fraction: together exactly the decimal value of the double's shortest
// form (the shortest decimal that reads back as that double), so reading the
// text back (the same decimal, rounded correctly) gives the same double.
// Whole seconds have no fraction; a fraction has a multiple of three digits
// (`.250`, `.000125`). The store API writes dates so.

import Foundation

extension PredicateValue {
    /// A date as ISO 8601 text in UTC that reads back (``exactISO8601Date(_:)``,
    /// ``iso8601Date(_:)``) as the same date, to the bit: `2024-05-01T10:00:00Z`,
    /// `2024-05-01T10:00:00.250Z`, `2001-01-01T00:00:00.000000125Z`. Nil for a date
    /// outside the years 1 to 9999, or one that is not finite.
    package static func exactISO8601Text(_ date: Date) -> String? {
        let seconds = date.timeIntervalSinceReferenceDate
        guard seconds.isFinite, let (negative, integer, fraction) = decimalParts(seconds) else { return nil }
        // Seconds since 2001 as whole seconds and a fraction in [0, 1).
        guard integer.count <= 15, var whole = Int64(integer) else { return nil }
        var digits = fraction
        if negative {
            whole = -whole
            if !digits.isEmpty {
                whole -= 1
                digits = complement(digits)
            }
        }
        // 0001-01-01 and 10000-01-01, in seconds since 2001.
        guard whole >= -63_113_904_000, whole < 252_423_993_600 else { return nil }
        let unix = whole + 978_307_200
        let days = unix >= 0 ? unix / 86_400 : (unix - 86_399) / 86_400
        let secondOfDay = unix - days * 86_400
        let (year, month, day) = civil(days)
        var text = padded(year, 4) + "-" + padded(month, 2) + "-" + padded(day, 2) + "T" + padded(secondOfDay / 3600, 2) + ":"
            + padded(secondOfDay / 60 % 60, 2) + ":" + padded(secondOfDay % 60, 2)
        if !digits.isEmpty {
            let width = (digits.count + 2) / 3 * 3
            text += "." + digits + String(repeating: "0", count: width - digits.count)
        }
        return text + "Z"
    }

    /// A date from ISO 8601 text of a date and a time with a zone:
    /// `YYYY-MM-DDTHH:MM:SS`, any number of fractional digits, then `Z` or an
    /// offset (`+02:00`, `-0530`). The decimal the text is (its seconds since
    /// 2001) is read exactly and rounded once, so what
    /// ``exactISO8601Text(_:)`` writes reads back as the same date. Nil for
    /// any other text.
    package static func exactISO8601Date(_ text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count >= 20, bytes.count <= 64 else { return nil }
        var index = 0
        func number(_ count: Int) -> Int64? {
            guard index + count <= bytes.count else { return nil }
            var value: Int64 = 0
            for byte in bytes[index..<index + count] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int64(byte - 0x30)
            }
            index += count
            return value
        }
        func expect(_ characters: String) -> Bool {
            guard index < bytes.count, characters.utf8.contains(bytes[index]) else { return false }
            index += 1
            return true
        }
        guard let year = number(4), expect("-"), let month = number(2), expect("-"), let day = number(2), expect("Tt"),
              let hour = number(2), expect(":"), let minute = number(2), expect(":"), let second = number(2),
              (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year), hour < 24, minute < 60, second < 60
        else { return nil }
        var fraction = ""
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            while index < bytes.count, bytes[index] >= 0x30, bytes[index] <= 0x39 { index += 1 }
            guard index > start else { return nil }
            fraction = String(decoding: bytes[start..<index], as: UTF8.self)
        }
        var offset: Int64 = 0
        if expect("Zz") {
        } else if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
            let sign: Int64 = bytes[index] == UInt8(ascii: "-") ? -1 : 1
            index += 1
            guard let hours = number(2), hours < 24 else { return nil }
            _ = expect(":")
            guard let minutes = number(2), minutes < 60 else { return nil }
            offset = sign * (hours * 3600 + minutes * 60)
        } else {
            return nil
        }
        guard index == bytes.count else { return nil }
        let whole = (days(year: year, month: month, day: day) - 11_323) * 86_400 + hour * 3600 + minute * 60 + second - offset
        while fraction.last == "0" { fraction.removeLast() }
        if fraction.isEmpty { return Date(timeIntervalSinceReferenceDate: Double(whole)) }
        // whole + 0.fraction, written as one decimal: for a negative whole, -((|whole| - 1) + (1 - 0.fraction)).
        let decimal = whole >= 0 ? "\(whole).\(fraction)" : "-\(-whole - 1).\(complement(fraction))"
        guard let seconds = Double(decimal) else { return nil }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// The exact decimal value of a finite double's shortest form: its sign,
    /// the digits before the point and those after it (no trailing zeros).
    /// Nil when the digits after the point would be more than 40.
    private static func decimalParts(_ value: Double) -> (negative: Bool, integer: String, fraction: String)? {
        var text = value.description  // the shortest form that reads back as `value`: "736250400.25", "1e-07", "-1.5e+16"
        let negative = text.hasPrefix("-")
        if negative { text.removeFirst() }
        var exponent = 0
        if let e = text.firstIndex(where: { $0 == "e" || $0 == "E" }) {
            guard let parsed = Int(text[text.index(after: e)...]) else { return nil }
            exponent = parsed
            text = String(text[..<e])
        }
        var digits = text
        var point = digits.count
        if let dot = digits.firstIndex(of: ".") {
            point = digits.distance(from: digits.startIndex, to: dot)
            digits.remove(at: dot)
        }
        point += exponent
        guard point > -40, point < 40 else { return nil }
        var integer: String
        var fraction: String
        if point <= 0 {
            integer = "0"
            fraction = String(repeating: "0", count: -point) + digits
        } else if point >= digits.count {
            integer = digits + String(repeating: "0", count: point - digits.count)
            fraction = ""
        } else {
            integer = String(digits.prefix(point))
            fraction = String(digits.dropFirst(point))
        }
        while fraction.last == "0" { fraction.removeLast() }
        while integer.count > 1, integer.first == "0" { integer.removeFirst() }
        guard fraction.count <= 40 else { return nil }
        return (negative, integer, fraction)
    }

    /// The digits of 1 - 0.`digits`, for digits with no trailing zero (so
    /// the result has none either, and as many digits).
    private static func complement(_ digits: String) -> String {
        var result = Array(digits.utf8)
        for i in result.indices {
            let digit = result[i] - 0x30
            result[i] = 0x30 + (i == result.count - 1 ? 10 - digit : 9 - digit)
        }
        return String(decoding: result, as: UTF8.self)
    }

    private static func padded(_ value: Int64, _ width: Int) -> String {
        let digits = String(value)
        return digits.count < width ? String(repeating: "0", count: width - digits.count) + digits : digits
    }

    private static func isLeap(_ year: Int64) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: Int64, year: Int64) -> Int64 {
        switch month {
        case 2: isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// Days since 1970-01-01 of a civil date (proleptic Gregorian), after Howard Hinnant's algorithm.
    private static func days(year: Int64, month: Int64, day: Int64) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The civil date (proleptic Gregorian) of days since 1970-01-01.
    static func civil(_ days: Int64) -> (year: Int64, month: Int64, day: Int64) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let shifted = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * shifted + 2) / 5 + 1
        let month = shifted < 10 ? shifted + 3 : shifted - 9
        return (yearOfEra + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
