// swift-tools-version: 6.1
//
// Sift: the Cocoa predicate format language, compiled for Linux.
//
// The compiler is split into one module per stage; a module may import only the
// stages before it (see "How it works" in README.md):
//
//   SiftValues   the vocabulary every stage shares: values, operators, options, function
//                names, limits, and what comparisons, folding and functions mean
//   SiftSyntax   lexer, parser, syntax tree, printer, diagnostics, format arguments
//   SiftModel    the data model: entities (with inheritance), attributes, relationships;
//                JSON, Xcode (XML, Xcode 3) and compiled-model loaders; Core Data's version hashes
//   SiftTree     the bound tree: resolved, typed, free of source text
//   SiftChecking the binder: syntax tree + model -> bound tree, validation errors
//   SiftOptimizer rewrite rules over bound trees
//   SiftMemory   row cache and in-memory evaluation of bound trees
//   SiftSQL      SQL lowering: bound trees to SQL trees, the schema mapping, every
//                statement the store runs, rendered per dialect (SQLite, PostgreSQL)
//   Sift         the public compiler library (re-exports every compiler stage)
//   SiftStore    the persistence core: contexts, fetch planning, saves, the SQLite
//                and atomic backends, the SQLite driver (uses CSQLite)
//   SiftPostgres the store on PostgreSQL: the SQL stage's statements on a server, a connection
//                pool, saves as transactions, changes between processes by LISTEN/NOTIFY (postgres-nio)
//   SiftHTTPAPI  the store API over HTTP: types, client and server stubs generated from
//                its OpenAPI document (openapi.yaml; Scripts/generate-openapi), and the
//                conversions between its JSON and Sift's values, rows and change sets
//   SiftServer   `sift serve`: any store behind that API, on Hummingbird
//   SiftRemote   the remote store: an incremental store on that API (AsyncHTTPClient),
//                with an SQLite disk cache
//   SiftCommand  the `sift` command line
//   SiftFuzz     libFuzzer targets (Fuzz/run builds them)
import PackageDescription

let package = Package(
    name: "Sift",
    products: [
        .library(name: "Sift", targets: ["Sift"]),
        .library(name: "SiftStore", targets: ["SiftStore"]),
        .library(name: "SiftPostgres", targets: ["SiftPostgres"]),
        .library(name: "SiftServer", targets: ["SiftServer"]),
        .library(name: "SiftRemote", targets: ["SiftRemote"]),
        .executable(name: "sift", targets: ["SiftCommand"]),
        .executable(name: "sift-benchmarks", targets: ["SiftBenchmarks"]),
        .executable(name: "sift-fuzz", targets: ["SiftFuzz"]),
    ],
    // The PostgreSQL store needs postgres-nio and SwiftNIO, the store over HTTP Hummingbird and
    // AsyncHTTPClient. A package that uses only `Sift` or `SiftStore` turns the traits off
    // (`.package(url: …, from: …, traits: [])`) and then neither resolves nor builds them.
    traits: [
        .trait(name: "PostgreSQL", description: "The SiftPostgres product: the store on a PostgreSQL server, through postgres-nio."),
        .trait(name: "HTTP", description: "The SiftServer and SiftRemote products: a store served over HTTP, and a store on such a server, through Hummingbird and AsyncHTTPClient."),
        .trait(name: "Benchmarks", description: "GRDB 7 in the benchmarks, the record library the fetch figures are measured against (in no library product)."),
        .default(enabledTraits: ["PostgreSQL", "HTTP"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/x-sheep/swift-property-based", from: "2.0.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-collections", from: "1.1.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        // The store over HTTP: the server on Hummingbird, the client on AsyncHTTPClient, both on the
        // types swift-openapi-generator made from Sources/SiftHTTPAPI/openapi.yaml (committed).
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.0"),
        // Without Hummingbird's default `ConfigurationSupport` trait (reading a server's settings through
        // swift-configuration): `sift serve` takes its settings from its own options.
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0", traits: ["FullFoundation"]),
        .package(url: "https://github.com/hummingbird-project/swift-openapi-hummingbird", from: "2.1.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.80.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.6.0"),
        // The benchmarks' record-library baseline, behind the Benchmarks trait (off by default).
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        // `swift package generate-documentation`: the DocC catalogs of the library products.
        .package(url: "https://github.com/swiftlang/swift-docc-plugin", from: "1.5.0"),
    ],
    targets: [
        // Stage 0: the vocabulary. Depends on nothing but Foundation.
        .target(name: "SiftValues"),
        // Stage 1: text -> syntax tree.
        .target(name: "SiftSyntax", dependencies: ["SiftValues"]),
        // Stage 2: the data model (never the parser): Xcode's and Core Data's
        // model forms. (Core Data's version hashes, SHA-256 from the system's
        // libcrypto, are the store's: the compiler links no crypto.)
        .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
        .target(name: "SiftModel", dependencies: ["SiftValues", "CZlib"]),
        // Stage 3: the bound tree.
        .target(name: "SiftTree", dependencies: ["SiftValues", "SiftModel"]),
        // Stage 4: binding and validation.
        .target(name: "SiftChecking", dependencies: ["SiftValues", "SiftSyntax", "SiftModel", "SiftTree"]),
        // Stage 5: the optimizer.
        .target(name: "SiftOptimizer", dependencies: ["SiftValues", "SiftTree"]),
        // Stage 6a: memory lowering — row cache, compiled filters (beside 6b, not after it).
        .target(name: "SiftMemory", dependencies: ["SiftValues", "SiftModel", "SiftTree"]),
        // Stage 6b: SQL lowering and the schema mapping (trees and text only: the compiler never links SQLite).
        .target(name: "SiftSQL", dependencies: ["SiftValues", "SiftModel", "SiftTree"]),
        // The compiler library users import.
        .target(name: "Sift", dependencies: [
            "SiftValues", "SiftSyntax", "SiftModel", "SiftTree", "SiftChecking", "SiftOptimizer", "SiftMemory",
            "SiftSQL",
        ]),
        // The system SQLite (Debian's libsqlite3-dev).
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        // The system libcrypto (Debian's libssl-dev), for SHA-256 alone: no BoringSSL to build.
        .systemLibrary(name: "CCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        // The persistence core. The compiler library never depends on it.
        // The Swift runtime's swift_retain_n, for the store's objects made in bulk.
        .systemLibrary(name: "CSwiftRuntime"),
        .target(name: "SiftStore", dependencies: [
            "Sift", "CSQLite", "CCrypto", "CSwiftRuntime", .product(name: "Logging", package: "swift-log"),
            .product(name: "OrderedCollections", package: "swift-collections"),
        ]),
        // The store on PostgreSQL, through postgres-nio (its own product, so
        // SQLite-only users build no network stack; without the PostgreSQL trait it is empty).
        .target(name: "SiftPostgres", dependencies: [
            "Sift", "SiftStore", .product(name: "Logging", package: "swift-log"),
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
        ]),
        // The store API over HTTP: what server and client share (its OpenAPI document, the generated
        // code, the wire forms of values, rows and change sets).
        .target(name: "SiftHTTPAPI", dependencies: [
            "Sift", "SiftStore", .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime", condition: .when(traits: ["HTTP"])),
        ], exclude: ["openapi.yaml", "openapi-generator-config.yaml", "Generated/openapi.yaml.sha256"]),
        // `sift serve`: a store behind the API, on Hummingbird.
        .target(name: "SiftServer", dependencies: [
            "Sift", "SiftStore", "SiftHTTPAPI", .product(name: "Logging", package: "swift-log"),
            .product(name: "Hummingbird", package: "hummingbird", condition: .when(traits: ["HTTP"])),
            .product(name: "OpenAPIHummingbird", package: "swift-openapi-hummingbird", condition: .when(traits: ["HTTP"])),
            .product(name: "ServiceLifecycle", package: "swift-service-lifecycle", condition: .when(traits: ["HTTP"])),
        ]),
        // The remote store: contexts on a server, with an SQLite disk cache (its own product, so
        // SQLite-only users link no HTTP client).
        .target(name: "SiftRemote", dependencies: [
            "Sift", "SiftStore", "SiftHTTPAPI", .product(name: "Logging", package: "swift-log"),
            .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["HTTP"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["HTTP"])),
            .product(name: "NIOHTTP1", package: "swift-nio", condition: .when(traits: ["HTTP"])),
            .product(name: "NIOPosix", package: "swift-nio", condition: .when(traits: ["HTTP"])),
        ]),
        // Generated demo data for `sift demo` and the benchmarks.
        .target(name: "SiftDemo", dependencies: ["Sift"]),
        // The command line.
        .executableTarget(
            name: "SiftCommand",
            dependencies: [
                "Sift",
                "SiftStore",
                "SiftPostgres",
                "SiftServer",
                "SiftRemote",
                "SiftDemo",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // Benchmarks: `swift run -c release --enable-all-traits sift-benchmarks` (GRDB's figures
        // need the Benchmarks trait; without it the rest run).
        // glibc's allocator statistics, for the benchmarks' memory figures.
        .systemLibrary(name: "CMalloc"),
        .executableTarget(name: "SiftBenchmarks", dependencies: [
            "Sift", "SiftStore", "SiftPostgres", "SiftHTTPAPI", "SiftServer", "SiftRemote", "SiftDemo", "CSQLite", "CMalloc",
            .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            .product(name: "GRDB", package: "GRDB.swift", condition: .when(traits: ["Benchmarks"])),
            // The load benchmark's clients (`serve-load`).
            .product(name: "AsyncHTTPClient", package: "async-http-client", condition: .when(traits: ["HTTP"])),
            .product(name: "NIOCore", package: "swift-nio", condition: .when(traits: ["HTTP"])),
        ]),
        // Fuzz targets: a libFuzzer fuzzer when built by Fuzz/run, a replayer
        // of saved inputs otherwise.
        .executableTarget(name: "SiftFuzz", dependencies: ["Sift", "SiftStore"]),
        // One test target, a folder per stage, sharing the fixtures.
        .testTarget(
            name: "SiftTests",
            dependencies: [
                "Sift",
                "SiftStore",
                "SiftPostgres",
                "SiftServer",
                "SiftRemote",
                "SiftHTTPAPI",
                "SiftDemo",
                // Built so the command-line tests can run it.
                "SiftCommand",
                // Its targets replay the inputs fuzzing once crashed on.
                "SiftFuzz",
                .product(name: "PropertyBased", package: "swift-property-based"),
            ],
            resources: [.copy("Fixtures")]
        ),
    ],
    swiftLanguageModes: [.v6]
)
