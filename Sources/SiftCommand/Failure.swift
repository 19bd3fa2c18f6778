// How `sift` fails: every error a command meets becomes one sentence (or a
// diagnostic with a caret under the text it is about) on standard error,
// and the exit status of its kind — the same kind, the same status, in
// every command. The statuses are sysexits.h's.

import ArgumentParser
import Foundation
import Sift
import SiftStore

/// The kinds of failure, each with its exit status from sysexits.h.
enum FailureKind: Sendable {
    /// 64, EX_USAGE: the command was used wrongly (an option missing, or
    /// given a value it does not take).
    case usage
    /// 65, EX_DATAERR: a predicate, expression, request or value that is
    /// invalid, or that does not fit the model.
    case invalidData
    /// 66, EX_NOINPUT: a store, model or input file that cannot be opened
    /// (missing, a folder, empty, not a store, a server not reached).
    case noInput
    /// 70, EX_SOFTWARE: a failure Sift did not expect (please report it).
    case software
    /// 73, EX_CANTCREAT: the store cannot be created or written (read-only,
    /// or it holds the objects being imported already).
    case cannotCreate
    /// 74, EX_IOERR: the store is damaged, not an SQLite database, full, or
    /// the database failed while reading or writing it.
    case ioError
    /// 75, EX_TEMPFAIL: the store is locked, or a save met changes made
    /// since it read: try again.
    case tryAgain

    /// The exit status.
    var status: ExitCode {
        switch self {
        case .usage: ExitCode(64)
        case .invalidData: ExitCode(65)
        case .noInput: ExitCode(66)
        case .software: ExitCode(70)
        case .cannotCreate: ExitCode(73)
        case .ioError: ExitCode(74)
        case .tryAgain: ExitCode(75)
        }
    }
}

/// A failure as the user sees it: what standard error shows, and its kind.
struct CommandFailure: Error, CustomStringConvertible {
    /// The kind, which gives the exit status.
    var kind: FailureKind
    /// The text for standard error: `error: ` and a sentence, or a
    /// diagnostic (its message, the source line and a caret).
    var text: String

    /// A failure told in one sentence.
    init(_ kind: FailureKind, _ message: String) {
        self.kind = kind
        self.text = "error: " + message
    }

    /// A failure told by a diagnostic rendered already (it starts with `error:`).
    init(_ kind: FailureKind, diagnostic: String) {
        self.kind = kind
        self.text = diagnostic
    }

    var description: String { text }

    /// `error` as the user sees it, whatever threw it.
    init(_ error: any Error) {
        switch error {
        case let failure as CommandFailure:
            self = failure
        case let error as ValidationError:
            self.init(.usage, error.message)
        case let error as StoreError:
            self.init(error)
        case let error as PredicateCompileError:
            self.init(.invalidData, diagnostic: error.rendered(in: ""))
        case let error as PredicateSyntaxError:
            self.init(.invalidData, diagnostic: error.rendered())
        case let error as PredicateEvaluationError:
            self.init(.invalidData, diagnostic: error.rendered())
        case let error as EvaluationError:
            self.init(.invalidData, "\(error)")
        case let error as DataSetError:
            self.init(.invalidData, "\(error)")
        default:
            self.init(.software, "an unexpected failure (please report it): \(error)")
        }
    }

    /// A store's error: its sentence, and the kind its code says.
    init(_ error: StoreError) {
        let kind: FailureKind
        switch error.code {
        case .invalidPredicate, .notExpressibleInSQL, .unknownEntity, .unknownRelationship, .unknownKey,
             .readOnlyAttribute, .invalidDataSet, .objectDeleted, .invalidValue, .wrongType, .recordMismatch,
             .validation, .objectNotFound, .unsupportedModel, .unknownTemplate, .missingVariables, .invalidRequest,
             .evaluation, .cannotMigrate, .duplicateReference:
            kind = .invalidData
        case .modelMismatch, .noModel, .notAStoreFile, .foreignDatabase, .modelDoesNotMatchStore, .unreachable:
            // A server not reached (none listens at the address, its host unknown) is an input not there;
            // one that answered it cannot serve now (5xx, 503) is .unavailable: try again.
            kind = .noInput
        case .readOnly, .cannotWrite, .keysInUse, .keysExhausted:
            kind = .cannotCreate
        case .notADatabase, .damaged, .full, .unreadableStoreFile:
            kind = .ioError
        case .locked, .conflicts, .unavailable:
            kind = .tryAgain
        case .server:
            // No statement: the server was not reached, or the store in its schema not opened.
            if case .server(_, nil) = error { kind = .noInput } else { kind = .ioError }
        case .sqlite:
            if case .sqlite(let sqlite) = error, sqlite.isLimit { kind = .invalidData } else { kind = .ioError }
        case .unexpected, .contextGone:
            kind = .software
        }
        switch error {
        case .invalidPredicate, .notExpressibleInSQL(_, .some, .some):
            self.init(kind, diagnostic: error.description)
        case .sqlite(let sqlite):
            // SQLite's own words, without its result code and statement.
            self.init(kind, "the database failed: \(sqlite.message)")
        default:
            self.init(kind, error.description)
        }
    }
}

/// Prints `failure` on standard error.
func report(_ failure: CommandFailure) {
    printError(failure.text)
}

/// Runs `body`; a store error is given the sentence and kind of
/// ``CommandFailure`` (unchanged otherwise: every error reaches `main`).
func storeFailure<T>(_ body: () throws -> T) throws -> T {
    do {
        return try body()
    } catch let error as StoreError {
        throw CommandFailure(error)
    }
}
