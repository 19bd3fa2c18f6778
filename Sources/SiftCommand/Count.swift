// `sift count`: the number of objects a fetch matches.

import ArgumentParser
import Foundation
import Sift
import SiftStore

struct Count: ParsableCommand {
    static let configuration = CommandConfiguration(abstract: "Count the objects a fetch matches.")

    @OptionGroup var options: FetchOptions

    func run() throws {
        let store = try options.open()
        defer { store.close() }
        let request = try storeFailure { try options.request(in: store.model) }
        do {
            print(try ObjectContext(store: store).count(for: request))
        } catch {
            printError("\(error)")
            throw ExitStatus.dataError
        }
    }
}
