// The page `sift serve` serves at `/`: one HTML document, its script and its
// style sheet, all in the binary (no CDN, no network), speaking the store
// API as any client does. The page's writes carry the token it was served
// with (BrowserGuard refuses a browser's write without it), and a content
// security policy lets the page run its own script only.

#if HTTP  // the package trait that brings the HTTP stack (on by default)
import Foundation
import HTTPTypes
import Hummingbird

/// The page's files and how they are served.
enum StorePage {
    /// Paths of the page's files, which need no bearer token (they hold no data).
    static let paths: Set<String> = ["/", "/index.html", "/sift.js", "/sift.css", "/favicon.svg"]

    /// The content security policy of the page: its own script, style and
    /// requests only; no plug-ins, frames, inline script or form posts elsewhere.
    static let contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        + "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

    /// Adds the page's routes to `router`; `token` is written into the page for its writes.
    static func register<Context: RequestContext>(on router: Router<Context>, token: String, isWritable: Bool, storeName: String? = nil) {
        let document = html(token: token, isWritable: isWritable, storeName: storeName)
        router.get("/") { _, _ in response(document, type: "text/html; charset=utf-8") }
        router.get("/index.html") { _, _ in response(document, type: "text/html; charset=utf-8") }
        router.get("/sift.js") { _, _ in response(PageScript.text, type: "text/javascript; charset=utf-8") }
        router.get("/sift.css") { _, _ in response(PageStyle.text, type: "text/css; charset=utf-8") }
        router.get("/favicon.svg") { _, _ in response(icon, type: "image/svg+xml") }
    }

    static func response(_ text: String, type: String) -> Response {
        var headers = HTTPFields()
        headers[.contentType] = type
        headers[.contentSecurityPolicy] = contentSecurityPolicy
        headers[.cacheControl] = "no-store"
        headers[HTTPField.Name("Referrer-Policy")!] = "no-referrer"
        headers[HTTPField.Name("X-Frame-Options")!] = "DENY"
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(string: text)))
    }

    /// The page's document: its token in a meta element (read by the script, never by another site, which
    /// cannot read this server's answers), and the store's name for its header (empty: the script shows the
    /// store's identifier).
    static func html(token: String, isWritable: Bool, storeName: String? = nil) -> String {
        """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <meta name="sift-page-token" content="\(token)">
        <meta name="sift-writable" content="\(isWritable)">
        <meta name="sift-store-name" content="\(escaped(storeName ?? ""))">
        <title>Sift</title>
        <link rel="icon" href="/favicon.svg" type="image/svg+xml">
        <link rel="stylesheet" href="/sift.css">
        <script src="/sift.js" defer></script>
        </head>
        <body>
        <noscript>This page needs JavaScript: it reads the store through the API at /v1.</noscript>
        </body>
        </html>
        """
    }

    /// `text` as HTML text or a quoted attribute's value: `&`, `<`, `>`, `"` and `'` as character references.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.append(character)
            }
        }
        return result
    }

    static let icon = """
        <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><path d="M2 3h12l-4.5 5.5V13l-3 1V8.5z" fill="#2f6fb3"/></svg>
        """
}

/// Guards the API against other sites' pages in a browser: a request a browser sends from another site is
/// refused, a browser's write must carry the page's token, and, on loopback, the Host must name loopback (a
/// page served from a name that was made to point here — DNS rebinding — is refused). Clients that are not
/// browsers (no `Origin` or `Sec-Fetch-Site` header) are not asked for the page's token.
struct BrowserGuard<Context: RequestContext>: RouterMiddleware {
    let pageToken: String
    let isLoopback: Bool

    static var writes: Set<String> { ["/v1/save", "/v1/batch-update", "/v1/batch-delete"] }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let host = request.head.authority ?? ""
        if isLoopback, !host.isEmpty, !StoreServer.isLoopback(Self.hostName(host)) {
            throw ServerFailure(403, "forbidden", "this server answers requests to its loopback address only, not to '\(host)'")
        }
        // The page's own files hold no data, and a link to a view from another site opens them: they are
        // served to any site (another site's script cannot read them: the server allows no cross-origin reads).
        if request.method == .get, StorePage.paths.contains(request.uri.path) { return try await next(request, context) }
        let site = request.headers[HTTPField.Name("Sec-Fetch-Site")!]
        let origin = request.headers[.origin]
        guard site != nil || origin != nil else { return try await next(request, context) }
        if let site, site != "same-origin", site != "none" {
            throw ServerFailure(403, "forbidden", "a request from another site (\(site)) is refused")
        }
        if let origin, origin != "http://\(host)", origin != "https://\(host)" {
            throw ServerFailure(403, "forbidden", "a request from another origin (\(origin)) is refused")
        }
        if request.method == .post, Self.writes.contains(request.uri.path) {
            let sent = request.headers[HTTPField.Name("X-Sift-Page-Token")!] ?? ""
            guard BearerMiddleware<Context>.equal(Array(sent.utf8), Array(pageToken.utf8)) else {
                throw ServerFailure(403, "forbidden", "a write from a browser carries the token of the page this server served (X-Sift-Page-Token)")
            }
        }
        return try await next(request, context)
    }

    /// The host of a Host header: `[::1]:8080` is `::1`, `127.0.0.1:8080` is `127.0.0.1`.
    static func hostName(_ authority: String) -> String {
        if authority.hasPrefix("["), let end = authority.firstIndex(of: "]") {
            return String(authority[authority.index(after: authority.startIndex)..<end])
        }
        return String(authority.split(separator: ":", maxSplits: 1).first ?? "")
    }
}
#endif
