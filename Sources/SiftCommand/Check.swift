// `sift check`: bind a predicate to a model and print the bound tree with types.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a predicate against a model and print its bound tree with types.",
        discussion: """
            MODEL is a JSON model, a JSON data set (its "model"), an .xcdatamodel folder or its \
            contents file, or an .xcdatamodeld bundle. Exit status: 0 when the predicate fits the \
            model, 65 when it does not (the diagnostic goes to standard error), 64 for bad usage, \
            66 when the model cannot be read.
            """
    )

    @Option(help: ArgumentHelp("The model.", valueName: "model"))
    var model: String

    @Option(help: ArgumentHelp("The entity of the objects the predicate tests.", valueName: "entity"))
    var entity: String

    @OptionGroup var predicateArguments: PredicateArguments

    @Argument(help: "The predicate.")
    var predicate: String

    func run() throws {
        let model = try loadModel(model)
        try checkEntity(entity, in: model)
        do {
            var warnings: [PredicateWarning] = []
            let bound = try PredicateCompiler(model: model).bind(
                predicate, arguments: try predicateArguments.values, entity: entity,
                variables: try predicateArguments.variableValues, warnings: &warnings)
            for warning in warnings { printError(warning.rendered(in: predicate)) }
            print(bound.outline)
        } catch let error as PredicateCompileError {
            throw CommandFailure(.invalidData, diagnostic: error.rendered(in: predicate))
        }
    }
}

/// Reads a model file; one that cannot be read is a failure to open input.
func loadModel(_ path: String) throws -> DataModel {
    do {
        return try DataModel(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw CommandFailure(.noInput, "\(error)")
    }
}

/// Reads a JSON data set (model and objects); one that cannot be read is a failure to open input.
func loadDataSet(_ path: String) throws -> DataSet {
    // A file that is not there (or is a folder) is no input; one that is there but does not read as a data
    // set is invalid data, as an atomic store's file is (the same status from import, check and copy).
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: path, isDirectory: &isFolder), !isFolder.boolValue,
          FileManager.default.isReadableFile(atPath: path) else {
        throw CommandFailure(.noInput, isFolder.boolValue ? "'\(path)' is a folder, not a data set file"
                             : FileManager.default.fileExists(atPath: path) ? "cannot read the data set '\(path)'"
                             : "there is no data set at '\(path)'")
    }
    do {
        return try DataSet(contentsOf: URL(fileURLWithPath: path))
    } catch {
        throw CommandFailure(.invalidData, "\(error)")
    }
}
