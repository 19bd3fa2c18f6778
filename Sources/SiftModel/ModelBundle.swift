// Stage 2 (schema): a bundle of model versions — Xcode's `.xcdatamodeld`
// (`.xccurrentversion` names the current one) or a compiled `.momd`
// (`VersionInfo.plist`) — and the version that made a store, found by
// Core Data's version hashes.

import Foundation

/// The versions of a model bundle.
///
/// ```swift
/// let bundle = try ModelBundle(contentsOf: URL(fileURLWithPath: "Model.xcdatamodeld"))
/// let current = try bundle.model()                  // the current version
/// let v2 = try bundle.model(version: "Model 2")     // any version, by name
/// guard let stored = bundle.version(matching: storeHashes) else { return }   // nil when no version matches
/// print(stored.name)                                // the version that made a store; stored.model is its model
/// ```
public struct ModelBundle: Sendable {
    /// The bundle folder.
    public let url: URL
    /// The versions' names (folder names without extension), sorted with
    /// numbers as numbers; without a marker, the last is the current one.
    public let versionNames: [String]
    /// The current version's name.
    public let currentVersionName: String
    private let fileExtension: String

    /// Reads the list of versions of the bundle at `url`.
    ///
    /// - Parameter url: The `.xcdatamodeld` or `.momd` folder.
    /// - Throws: `ModelError.unreadable` when the folder holds no version
    ///   (`.xcdatamodel` or `.mom`).
    public init(contentsOf url: URL) throws(ModelError) {
        self.url = url
        let compiled = url.pathExtension == "momd"
        let fileExtension = compiled ? "mom" : "xcdatamodel"
        self.fileExtension = fileExtension
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [])
            .filter { $0.hasSuffix("." + fileExtension) }
            .map { String($0.dropLast(fileExtension.count + 1)) }
            // Numbers in names as numbers: "Model 12" after "Model 2".
            .sorted { $0.compare($1, options: .numeric) == .orderedAscending }
        guard let last = names.last else {
            throw ModelError.unreadable(path: url.path, reason: "no .\(fileExtension) inside")
        }
        versionNames = names
        let marker = url.appendingPathComponent(compiled ? "VersionInfo.plist" : ".xccurrentversion")
        let key = compiled ? "NSManagedObjectModel_CurrentVersionName" : "_XCCurrentVersionName"
        if let data = FileManager.default.contents(atPath: marker.path),
           let plist = PropertyLists.read(data) as? [String: Any],
           let current = plist[key] as? String {
            let name = current.hasSuffix("." + fileExtension) ? String(current.dropLast(fileExtension.count + 1)) : current
            currentVersionName = names.contains(name) ? name : last
        } else {
            currentVersionName = last
        }
    }

    /// The version called `version` (the current one when nil).
    ///
    /// - Parameter version: The version's name, as in `versionNames`; nil (the
    ///   default) for the current version.
    /// - Returns: The version's model.
    /// - Throws: `ModelError.unreadable` when the bundle has no version of that
    ///   name, or any `ModelError` from reading the version
    ///   (`DataModel.init(contentsOf:)`).
    public func model(version: String? = nil) throws(ModelError) -> DataModel {
        let name = version ?? currentVersionName
        guard versionNames.contains(name) else {
            throw ModelError.unreadable(path: url.path, reason: "it has no version named '\(name)' "
                                        + "(its versions: \(versionNames.map { "'\($0)'" }.joined(separator: ", ")))")
        }
        return try DataModel(contentsOf: url.appendingPathComponent(name + "." + fileExtension))
    }
}
