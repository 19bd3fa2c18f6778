// Why a request failed, as the API answers it: an HTTP status, a code, a
// message and, for a predicate, the diagnostic (line, column, caret).

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import Sift
import SiftHTTPAPI
import SiftStore

struct ServerFailure: Error, Sendable {
    var status: Int
    var code: String
    var message: String
    var diagnostic: Components.Schemas.Diagnostic?
    var evaluation: Components.Schemas.EvaluationFailure?
    var entity: String?

    init(_ status: Int, _ code: String, _ message: String, diagnostic: Components.Schemas.Diagnostic? = nil,
         evaluation: Components.Schemas.EvaluationFailure? = nil, entity: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.diagnostic = diagnostic
        self.evaluation = evaluation
        self.entity = entity
    }

    static func badRequest(_ message: String) -> ServerFailure { ServerFailure(400, "bad_request", message) }

    static func tooLarge(_ message: String) -> ServerFailure { ServerFailure(413, "too_large", message) }

    /// The JSON body.
    var body: Components.Schemas.Failure {
        Components.Schemas.Failure(code: code, message: message, diagnostic: diagnostic, evaluation: evaluation, entity: entity)
    }

    /// The answer of an operation whose only documented failure is `default`.
    var response: Components.Responses.Failure { Components.Responses.Failure(body: .json(body)) }

    /// The length in UTF-16 code units (a browser's string index) of UTF-8 bytes, a broken sequence counted as
    /// the replacement character it decodes to.
    static func utf16Count(_ bytes: ArraySlice<UInt8>) -> Int {
        String(decoding: bytes, as: UTF8.self).utf16.count
    }

    /// A store's error, as the API answers it.
    init(_ error: StoreError) {
        switch error {
        case .invalidPredicate(let compileError, let text):
            let position = SourcePosition(offset: compileError.range.lowerBound, in: text)
            var diagnostic = Components.Schemas.Diagnostic(line: position.line, column: position.column,
                                                           rendered: compileError.rendered(in: text, sourceName: "predicate"))
            let bytes = Array(text.utf8)
            let lower = min(max(compileError.range.lowerBound, 0), bytes.count)
            let upper = min(max(compileError.range.upperBound, lower), bytes.count)
            diagnostic.start = Self.utf16Count(bytes[..<lower])
            diagnostic.end = Self.utf16Count(bytes[..<upper])
            if case .validation(let validation) = compileError {
                diagnostic.hint = validation.hint
                // The place with the suggested name in it, for a page to put between start and end.
                if case .unknownKey(let key, _, let suggestion?) = validation.reason,
                   let written = String(bytes: bytes[lower..<upper], encoding: .utf8), let found = written.range(of: key, options: .backwards) {
                    diagnostic.replacement = written.replacingCharacters(in: found, with: suggestion)
                }
            }
            self.init(400, "invalid_predicate", compileError.message, diagnostic: diagnostic)
        case .notExpressibleInSQL, .unknownKey, .unknownRelationship, .readOnlyAttribute, .invalidValue, .wrongType,
             .validation, .invalidRequest, .missingVariables, .unknownTemplate, .recordMismatch, .invalidDataSet:
            self.init(400, "bad_request", "\(error)")
        case .evaluation(let evaluation):
            let detail: Components.Schemas.EvaluationFailure? = switch evaluation {
            case .fetchTooCostly(let term, let steps): .init(kind: .fetchTooCostly, subject: term, steps: steps)
            case .regularExpressionTooCostly(let pattern, let steps): .init(kind: .regularExpressionTooCostly, subject: pattern, steps: steps)
            case .likeTooCostly(let pattern, let steps): .init(kind: .likeTooCostly, subject: pattern, steps: steps)
            default: nil
            }
            self.init(400, "too_costly", "\(error)", evaluation: detail)
        case .unknownEntity(let name):
            self.init(404, "unknown_entity", "\(error)", entity: name)
        case .objectNotFound, .objectDeleted:
            self.init(404, "not_found", "\(error)")
        case .conflicts:
            self.init(409, "conflict", "\(error)")
        case .readOnly:
            self.init(403, "read_only", "\(error)")
        case .locked, .unavailable, .unreachable:
            self.init(503, "unavailable", "\(error)")
        case .keysExhausted(let entity):
            self.init(507, "keys_exhausted", "\(error)", entity: entity)
        case .full, .duplicateReference:
            self.init(507, "store_full", "\(error)")
        default:
            self.init(500, "store_error", "\(error)")
        }
    }
}
#endif
