// The page `sift serve` serves at `/` and the API it reads: the page's files
// with their content security policy (no bearer token needed for them); the
// guard against other sites' pages (a browser's write needs the page's token,
// another origin or a Host that is not loopback is refused); keyset cursors,
// which page through any sort exactly as one fetch returns it; explain; the
// history, newest first, a page at a time; a diagnostic's place in a
// browser's string units and its suggested name. The page itself is tested in
// Chromium by Tests/Browser/page_test.py (.ci/run).

import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Sift
@testable import SiftServer
import SiftStore
import Synchronization
import Testing

/// One HTTP exchange, synchronously (tests run it off Swift's cooperative pool).
func exchange(_ url: URL, method: String = "POST", body: Data? = nil,
              headers: [String: String] = [:]) throws -> (status: Int, headers: [String: String], data: Data) {
    var request = URLRequest(url: url)
    request.httpMethod = method
    request.httpBody = body
    if body != nil { request.setValue("application/json", forHTTPHeaderField: "Content-Type") }
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let result = Mutex<(Int, [String: String], Data)?>(nil)
    let done = DispatchSemaphore(value: 0)
    URLSession.shared.dataTask(with: request) { data, response, _ in
        let http = response as? HTTPURLResponse
        var fields: [String: String] = [:]
        for (name, value) in http?.allHeaderFields ?? [:] { fields["\(name)".lowercased()] = "\(value)" }
        result.withLock { $0 = (http?.statusCode ?? 0, fields, data ?? Data()) }
        done.signal()
    }.resume()
    done.wait()
    let (status, fields, data) = try #require(result.withLock { $0 })
    return (status, fields, data)
}

func json(_ data: Data) -> [String: Any] {
    (try? JSONSerialization.jsonObject(with: data)) as? [String: Any] ?? [:]
}

@Suite("The page of sift serve, and the API it reads")
struct StorePageTests {
    @Test("The page's files come from the binary with a content security policy; they need no bearer token, the API does")
    func files() async throws {
        try await offThePool {
            let served = try ServedCompany { $0.token = "s3cret" }
            let page = try exchange(served.url.appendingPathComponent("/"), method: "GET")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            let policy = try #require(page.headers["content-security-policy"])
            #expect(policy.contains("script-src 'self'") && policy.contains("default-src 'none'") && !policy.contains("unsafe"))
            let html = String(decoding: page.data, as: UTF8.self)
            #expect(html.contains(#"<script src="/sift.js" defer></script>"#))
            #expect(html.contains(served.server.server.pageToken))
            let script = try exchange(served.url.appendingPathComponent("sift.js"), method: "GET")
            #expect(script.status == 200 && script.headers["content-type"]?.hasPrefix("text/javascript") == true)
            #expect(String(decoding: script.data, as: UTF8.self).contains("data-testid"))
            #expect(!String(decoding: script.data, as: UTF8.self).contains("innerHTML"))
            #expect(try exchange(served.url.appendingPathComponent("sift.css"), method: "GET").status == 200)
            #expect(try exchange(served.url.appendingPathComponent("v1/store"), method: "GET").status == 401)
        }
    }

    @Test("Another site's page cannot write or read; a browser's write carries the page's token; other clients need none")
    func browserGuard() async throws {
        try await offThePool {
            let served = try ServedCompany()
            let token = served.server.server.pageToken
            let origin = "http://127.0.0.1:\(served.server.port)"
            let save = served.url.appendingPathComponent("v1/save")
            let insert = Data(#"{"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {"name": "guarded"}}]}"#.utf8)
            #expect(try exchange(save, body: insert, headers: ["Origin": "http://evil.example"]).status == 403)
            #expect(try exchange(save, body: insert, headers: ["Sec-Fetch-Site": "cross-site"]).status == 403)
            #expect(try exchange(served.url.appendingPathComponent("v1/fetch"), body: Data(#"{"entity": "Tag"}"#.utf8),
                                 headers: ["Sec-Fetch-Site": "cross-site"]).status == 403)
            #expect(try exchange(save, body: insert, headers: ["Origin": origin, "Sec-Fetch-Site": "same-origin"]).status == 403)
            #expect(try exchange(save, body: insert, headers: ["Origin": origin, "X-Sift-Page-Token": "not-it"]).status == 403)
            #expect(try exchange(save, body: insert, headers: ["Origin": origin, "Sec-Fetch-Site": "same-origin",
                                                                "X-Sift-Page-Token": token]).status == 200)
            #expect(try exchange(save, body: insert).status == 200)   // a client that is not a browser
            // A link to a view from another site opens the page (its files hold no data).
            #expect(try exchange(served.url.appendingPathComponent("/"), method: "GET",
                                 headers: ["Sec-Fetch-Site": "cross-site", "Sec-Fetch-Mode": "navigate"]).status == 200)
            // A page served from another name that points here (DNS rebinding) is refused.
            #expect(try exchange(served.url.appendingPathComponent("v1/store"), method: "GET",
                                 headers: ["Host": "rebound.example:\(served.server.port)"]).status == 403)
            #expect(try ObjectContext(store: served.store).count(for: FetchRequest(entityName: "Tag", predicate: "name == 'guarded'")) == 2)
        }
    }

    @Test("A save that leaves a required attribute nil is a 400 naming it, as a context refuses it, not the database's error")
    func requiredAttributes() async throws {
        try await offThePool {
            let served = try ServedCompany()
            let answer = try exchange(served.url.appendingPathComponent("v1/save"),
                                      body: Data(#"{"inserts": [{"temporaryID": -1, "entity": "Tag", "values": {}}]}"#.utf8))
            #expect(answer.status == 400)
            let message = json(answer.data)["message"] as? String ?? ""
            #expect(message.contains("name") && message.contains("required") && !message.contains("INSERT"), "\(message)")
        }
    }

    /// The keys of every object of a fetch, one page at a time through cursors.
    static func pagedKeys(_ url: URL, _ body: [String: Any], limit: Int) throws -> [Int] {
        var keys: [Int] = []
        var after: String?
        var pages = 0
        repeat {
            var page = body
            page["limit"] = limit
            if let after { page["after"] = after }
            let answer = try exchange(url.appendingPathComponent("v1/fetch"), body: try JSONSerialization.data(withJSONObject: page))
            #expect(answer.status == 200, "\(String(decoding: answer.data, as: UTF8.self))")
            let fields = json(answer.data)
            keys += ((fields["objects"] as? [[String: Any]]) ?? []).compactMap { $0["key"] as? Int }
            after = fields["next"] as? String
            pages += 1
        } while after != nil && pages < 200
        return keys
    }

    @Test("Cursors page through any sort (nil first or last, ties, key paths, case-insensitive) exactly as one fetch returns it, on every kind of store",
          arguments: StoreKind.allCases)
    func keysetPaging(_ kind: StoreKind) async throws {
        try await offThePool {
            let store = try kind.make()
            let served = try TestServer(serving: store.store)
            defer { served.stop() }
            let keyPaths = ["name", "nickname", "age", "salary", "rating", "isManager", "startDate", "department.name",
                            "manager.name", "department.budget"]
            let predicates: [String?] = [nil, "age > 30", "nickname == nil OR rating > 3", "FALSEPREDICATE"]
            var generator = SplitMix64(seed: 34)
            for round in 0..<40 {
                var sort: [[String: Any]] = []
                for _ in 0...(round % 3) {
                    let keyPath = keyPaths[Int(generator.next() % UInt64(keyPaths.count))]
                    var key: [String: Any] = ["keyPath": keyPath, "ascending": generator.next() % 2 == 0]
                    if keyPath.hasSuffix("name"), generator.next() % 3 == 0 { key["caseInsensitive"] = true }
                    sort.append(key)
                }
                var body: [String: Any] = ["entity": "Employee", "sort": sort]
                if let predicate = predicates[round % predicates.count] { body["predicate"] = predicate }
                let whole = try exchange(served.url.appendingPathComponent("v1/fetch"), body: try JSONSerialization.data(withJSONObject: body))
                let expected = ((json(whole.data)["objects"] as? [[String: Any]]) ?? []).compactMap { $0["key"] as? Int }
                let limit = 1 + Int(generator.next() % 9)
                #expect(try Self.pagedKeys(served.url, body, limit: limit) == expected, "sort \(sort), predicate \(body["predicate"] ?? "none"), limit \(limit)")
            }
            // Without a sort: key order.
            let all = try Self.pagedKeys(served.url, ["entity": "Employee"], limit: 7)
            #expect(all.count == 60 && all == all.sorted())
        }
    }

    @Test("A cursor is refused for another request, with an offset, for a count, or when it is not one")
    func cursorMisuse() async throws {
        try await offThePool {
            let served = try ServedCompany()
            let fetch = served.url.appendingPathComponent("v1/fetch")
            let first = json(try exchange(fetch, body: Data(#"{"entity": "Employee", "predicate": "age > 30", "limit": 5}"#.utf8)).data)
            let cursor = try #require(first["next"] as? String)
            for body in [#"{"entity": "Employee", "predicate": "age > 31", "limit": 5, "after": "\#(cursor)"}"#,
                         #"{"entity": "Employee", "predicate": "age > 30", "limit": 5, "after": "\#(cursor)", "offset": 5}"#,
                         #"{"entity": "Employee", "predicate": "age > 30", "result": "count", "after": "\#(cursor)"}"#,
                         #"{"entity": "Employee", "predicate": "age > 30", "limit": 5, "after": "bm90IGEgY3Vyc29y"}"#] {
                let answer = try exchange(fetch, body: Data(body.utf8))
                #expect(answer.status == 400, "\(body)")
                #expect(json(answer.data)["code"] as? String == "bad_request")
            }
        }
    }

    @Test("Explain: the SQL with its bindings, the database's plan, what memory does; a store without SQL says so")
    func explain() async throws {
        try await offThePool {
            let served = try ServedCompany()
            let body = Data(#"{"entity": "Employee", "predicate": "age > %@ AND department.name == %@", "arguments": [40, "Sales"], "sort": [{"keyPath": "name"}]}"#.utf8)
            let answer = try exchange(served.url.appendingPathComponent("v1/explain"), body: body)
            #expect(answer.status == 200)
            let fields = json(answer.data)
            #expect((fields["sql"] as? String)?.contains("\"ZEMPLOYEE\"") == true)
            #expect(fields["bindings"] as? [String] == ["?1 = 40", "?2 = \"Sales\""])
            #expect(((fields["databasePlan"] as? [String]) ?? []).isEmpty == false)
            #expect((fields["memory"] as? [String]) == [])
            #expect(fields["database"] as? String == "SQLite")
            #expect((fields["bound"] as? String)?.contains("Department.name") == true)
            let invalid = try exchange(served.url.appendingPathComponent("v1/explain"), body: Data(#"{"entity": "Employee", "predicate": "agee > 1"}"#.utf8))
            #expect(invalid.status == 400 && json(invalid.data)["code"] as? String == "invalid_predicate")

            let folder = try ScratchFolder()
            let file = folder.url.appendingPathComponent("company.json")
            try AtomicStore(url: file, model: Company.model).importDataSet(Company.dataSet)
            let atomic = try TestServer(serving: try AtomicStore(url: file))
            defer { atomic.stop() }
            let memory = json(try exchange(atomic.url.appendingPathComponent("v1/explain"), body: body).data)
            #expect(memory["database"] as? String == "none" && memory["sql"] == nil)
            #expect(((memory["memory"] as? [String]) ?? []).isEmpty == false)
        }
    }

    @Test("History, newest first, a page at a time; a store without history says it keeps none")
    func history() async throws {
        try await offThePool {
            let folder = try ScratchFolder()
            let store = try SQLiteStore(url: folder.url.appendingPathComponent("history.sqlite"), model: Company.model, historyTracking: .on)
            let context = ObjectContext(store: store)
            context.transactionAuthor = "page-test"
            for name in ["a", "b", "c", "d", "e"] {
                let tag = try context.insert("Tag")
                try tag.setValue(.string(name), forKey: "name")
                try context.save()
            }
            let served = try TestServer(serving: store)
            defer { served.stop() }
            var numbers: [Int] = []
            var before: Int?
            repeat {
                let query = before.map { "v1/history?limit=2&before=\($0)" } ?? "v1/history?limit=2"
                let answer = try exchange(URL(string: query, relativeTo: served.url)!, method: "GET")
                #expect(answer.status == 200)
                let fields = json(answer.data)
                #expect(fields["tracked"] as? Bool == true)
                let transactions = (fields["transactions"] as? [[String: Any]]) ?? []
                #expect(transactions.count <= 2)
                for transaction in transactions {
                    numbers.append(try #require(transaction["number"] as? Int))
                    #expect(transaction["author"] as? String == "page-test")
                    let changes = (transaction["changes"] as? [[String: Any]]) ?? []
                    #expect(changes.count == 1 && changes.first?["type"] as? String == "insert" && changes.first?["entity"] as? String == "Tag")
                }
                before = fields["next"] as? Int
            } while before != nil && numbers.count < 20
            #expect(numbers == [5, 4, 3, 2, 1])
            let plain = try ServedCompany()
            let untracked = json(try exchange(plain.url.appendingPathComponent("v1/history"), method: "GET").data)
            #expect(untracked["tracked"] as? Bool == false && (untracked["transactions"] as? [Any])?.isEmpty == true)
        }
    }

    @Test("A diagnostic's place is in a browser's string units, with the name it suggests")
    func diagnosticPlace() async throws {
        try await offThePool {
            let served = try ServedCompany()
            let text = "name == 'Ångström 🙂' AND department.nmae == 'x'"
            let body = try JSONSerialization.data(withJSONObject: ["entity": "Employee", "predicate": text, "result": "count"])
            let answer = json(try exchange(served.url.appendingPathComponent("v1/fetch"), body: body).data)
            let diagnostic = try #require(answer["diagnostic"] as? [String: Any])
            let start = try #require(diagnostic["start"] as? Int)
            let end = try #require(diagnostic["end"] as? Int)
            let units = Array(text.utf16)
            #expect(String(decoding: units[start..<end], as: UTF16.self) == "department.nmae")
            #expect(diagnostic["replacement"] as? String == "department.name")
            #expect(diagnostic["hint"] as? String == "did you mean 'name'?")
        }
    }
}
