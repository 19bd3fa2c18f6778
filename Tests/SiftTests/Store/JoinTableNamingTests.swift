// Issue 49, item 2: a store Core Data wrote names its join tables as the
// Core Data that wrote it chose — a self-referencing pair of to-many
// relationships (`ignoredClients` / `ignoredByClients`) after either side,
// a join column whose name another join table has with a number after it
// (`Z_3USERS1`), an ordered side's order keys after that column
// (`Z_FOK_3USERS1`) — and the store reads those names rather than deriving
// them. Each store here is written with SQL as Core Data lays it out, then
// opened, fetched through both sides of each relationship, saved to and
// migrated; one whose join table cannot be matched is a typed error naming it.

import Foundation
import Sift
import SiftStore
import Testing

/// A messaging app's model in two versions, as an Xcode bundle, and stores
/// of its first version written with SQL in Core Data's layout.
enum MessagingStores {
    /// The first version: groups and teams with ordered members (each a
    /// many-to-many relationship to users), and clients that ignore each other.
    static let version1 = contents(clientAttributes: "")
    /// The second: clients get an optional label (a lightweight migration).
    static let version2 = contents(clientAttributes: #"<attribute name="label" optional="YES" attributeType="String"/>"#)

    private static func contents(clientAttributes: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
        <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" minimumToolsVersion="Automatic" sourceLanguage="Swift" userDefinedModelVersionIdentifier="">
            <entity name="Group" representedClassName="Group" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="users" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="User" inverseName="groups" inverseEntity="User"/>
            </entity>
            <entity name="Team" representedClassName="Team" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="users" optional="YES" toMany="YES" ordered="YES" deletionRule="Nullify" destinationEntity="User" inverseName="teams" inverseEntity="User"/>
            </entity>
            <entity name="User" representedClassName="User" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                <relationship name="groups" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Group" inverseName="users" inverseEntity="Group"/>
                <relationship name="teams" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Team" inverseName="users" inverseEntity="Team"/>
            </entity>
            <entity name="UserClient" representedClassName="UserClient" syncable="YES">
                <attribute name="name" optional="YES" attributeType="String"/>
                \(clientAttributes)
                <relationship name="ignoredByClients" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="UserClient" inverseName="ignoredClients" inverseEntity="UserClient"/>
                <relationship name="ignoredClients" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="UserClient" inverseName="ignoredByClients" inverseEntity="UserClient"/>
            </entity>
        </model>
        """
    }

    /// How a store names its join tables. Entity numbers: Group 1, Team 2, User 3, UserClient 4.
    struct Naming: Sendable, CustomTestStringConvertible {
        /// The clients' table: `Z_4IGNOREDCLIENTS` or `Z_4IGNOREDBYCLIENTS`.
        var clients = "Z_4IGNOREDCLIENTS"
        /// The groups' table: `Z_1USERS` or, after the other side, `Z_3GROUPS`.
        var groups = "Z_1USERS"
        /// The column of the teams' table with the users' keys: `Z_3USERS`,
        /// or `Z_3USERS1` (the groups' table has a `Z_3USERS` already).
        var teamUsers = "Z_3USERS"
        /// Whether the groups' table has its order keys.
        var groupOrder = true

        /// The names Sift derives (a store Sift made).
        static let derived = Naming()
        /// The names of a store a newer Core Data wrote.
        static let coreData = Naming(clients: "Z_4IGNOREDBYCLIENTS", groups: "Z_3GROUPS", teamUsers: "Z_3USERS1")

        var testDescription: String { "\(clients), \(groups), \(teamUsers)" }
    }

    /// A bundle with both versions in `folder`.
    static func bundle(in folder: URL) throws -> URL {
        let bundle = folder.appendingPathComponent("Messaging.xcdatamodeld")
        for (name, text) in [("Messaging", version1), ("Messaging 2", version2)] {
            let model = bundle.appendingPathComponent(name + ".xcdatamodel")
            try FileManager.default.createDirectory(at: model, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: model.appendingPathComponent("contents"))
        }
        let current = try PropertyListSerialization.data(fromPropertyList: ["_XCCurrentVersionName": "Messaging 2.xcdatamodel"],
                                                         format: .xml, options: 0)
        try current.write(to: bundle.appendingPathComponent(".xccurrentversion"))
        return bundle
    }

    /// The first version's model.
    static func model(in folder: URL) throws -> DataModel {
        try ModelBundle(contentsOf: try bundle(in: folder)).model(version: "Messaging")
    }

    /// A store of the first version at `url`, written with SQL in Core Data's
    /// layout with `naming`'s join tables. Users ann, bob, cy, dee (1–4);
    /// group admins (1) of cy then ann, guests (2) of bob; team core (1) of
    /// dee, bob, ann in that order, ops (2) of cy; clients a, b, c (1–3): a
    /// ignores b and c, b ignores c.
    static func make(at url: URL, model: DataModel, naming: Naming) throws {
        let connection = try SQLiteConnection(path: url.path)
        var sql = """
            CREATE TABLE ZGROUP ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE ZTEAM ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE ZUSER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE ZUSERCLIENT ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZNAME VARCHAR );
            CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
            CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
            CREATE TABLE Z_MODELCACHE (Z_CONTENT BLOB);
            INSERT INTO Z_PRIMARYKEY VALUES (1, 'Group', 0, 2), (2, 'Team', 0, 2), (3, 'User', 0, 4), (4, 'UserClient', 0, 3);
            INSERT INTO ZUSER VALUES (1, 3, 1, 'ann'), (2, 3, 1, 'bob'), (3, 3, 1, 'cy'), (4, 3, 1, 'dee');
            INSERT INTO ZGROUP VALUES (1, 1, 1, 'admins'), (2, 1, 1, 'guests');
            INSERT INTO ZTEAM VALUES (1, 2, 1, 'core'), (2, 2, 1, 'ops');
            INSERT INTO ZUSERCLIENT VALUES (1, 4, 1, 'a'), (2, 4, 1, 'b'), (3, 4, 1, 'c');

            """
        // The clients' pair: the same two columns whichever side names the table.
        sql += """
            CREATE TABLE \(naming.clients) ( Z_4IGNOREDBYCLIENTS INTEGER, Z_4IGNOREDCLIENTS INTEGER, PRIMARY KEY (Z_4IGNOREDBYCLIENTS, Z_4IGNOREDCLIENTS) );
            INSERT INTO \(naming.clients) VALUES (1, 2), (1, 3), (2, 3);

            """
        // Groups: ordered members, order keys spaced as Core Data spaces them.
        let groupOrder = naming.groupOrder ? ", Z_FOK_3USERS INTEGER" : ""
        sql += """
            CREATE TABLE \(naming.groups) ( Z_1GROUPS INTEGER, Z_3USERS INTEGER\(groupOrder), PRIMARY KEY (Z_1GROUPS, Z_3USERS) );

            """
        sql += naming.groupOrder
            ? "INSERT INTO \(naming.groups) VALUES (1, 3, 1024), (1, 1, 2048), (2, 2, 1024);\n"
            : "INSERT INTO \(naming.groups) VALUES (1, 3), (1, 1), (2, 2);\n"
        // Teams: the users' column, perhaps with a number after it, and its order keys.
        let users = naming.teamUsers, order = "Z_FOK_" + naming.teamUsers.dropFirst(2)
        sql += """
            CREATE TABLE Z_2USERS ( Z_2TEAMS INTEGER, \(users) INTEGER, \(order) INTEGER, PRIMARY KEY (Z_2TEAMS, \(users)) );
            INSERT INTO Z_2USERS VALUES (1, 4, 1024), (1, 2, 2048), (1, 1, 3072), (2, 3, 1024);
            """
        try connection.execute(sql)
        let metadata: [String: Any] = [
            "NSStoreType": "SQLite", "NSStoreUUID": "6D1C5E2A-8F0B-4C3D-9E7A-1B2C3D4E5F60",
            "NSStoreModelVersionHashes": model.entityVersionHashes, "NSStoreModelVersionHashesVersion": 3,
            "NSStoreModelVersionIdentifiers": [""], "NSPersistenceFrameworkVersion": 1_341,
        ]
        let plist = try PropertyListSerialization.data(fromPropertyList: metadata, format: .binary, options: 0)
        _ = try connection.query("INSERT INTO Z_METADATA VALUES (1, ?1, ?2)",
                                 [.text("6D1C5E2A-8F0B-4C3D-9E7A-1B2C3D4E5F60"), .blob(plist)])
        _ = try connection.query("INSERT INTO Z_MODELCACHE VALUES (?1)", [.blob(try #require(model.modelCacheData))])
    }

    /// The rows of a table of the store at `url`, read with SQL.
    static func rows(_ url: URL, _ sql: String) throws -> [[Int64]] {
        try SQLiteConnection(path: url.path, readOnly: true).query(sql).map { row in
            row.map { if case .integer(let i) = $0 { i } else { -1 } }
        }
    }

    /// The tables of the store at `url`.
    static func tables(_ url: URL) throws -> Set<String> {
        Set(try SQLiteConnection(path: url.path, readOnly: true).query("SELECT name FROM sqlite_master WHERE type = 'table'").compactMap {
            if case .text(let name) = $0[0] { name } else { nil }
        })
    }
}

/// The names of the objects a fetch gives, sorted.
private func names(_ context: ObjectContext, _ entity: String, _ predicate: String) throws -> [String] {
    try context.fetch(FetchRequest(entityName: entity, predicate: predicate)).map { try #require(try $0.value(forKey: "name", as: String.self)) }.sorted()
}

/// The names of an object's to-many relationship's objects, in its order.
private func members(_ object: ManagedObject, _ key: String) throws -> [String] {
    try object.objects(forKey: key).map { try #require(try $0.value(forKey: "name", as: String.self)) }
}

/// The one object of `entity` named `name`.
private func object(_ context: ObjectContext, _ entity: String, _ name: String) throws -> ManagedObject {
    try #require(context.fetch(FetchRequest(entityName: entity, predicate: "name == %@", arguments: [.string(name)])).first)
}

@Suite("Join tables named as the store names them")
struct JoinTableNamingTests {
    @Test("A self-referencing pair opens under either side's name: fetched through both sides, saved and read back")
    func selfReferencingPairUnderEitherName() throws {
        for table in ["Z_4IGNOREDCLIENTS", "Z_4IGNOREDBYCLIENTS"] {
            let folder = try ScratchFolder()
            let model = try MessagingStores.model(in: folder.url)
            #expect(SQLSchema.entityNumbers(of: model) == ["Group": 1, "Team": 2, "User": 3, "UserClient": 4])
            let url = folder.url.appendingPathComponent("Messaging.sqlite")
            try MessagingStores.make(at: url, model: model, naming: .init(clients: table))
            let store = try SQLiteStore(url: url, model: model)
            guard case .joinTable(let name, _, _) = store.schema.storage(of: try #require(model.entity(named: "UserClient")?
                .relationship(named: "ignoredByClients")), in: try #require(model.entity(named: "UserClient"))) else {
                Issue.record("no join table")
                continue
            }
            #expect(name == table)
            let context = ObjectContext(store: store)
            #expect(try names(context, "UserClient", "ANY ignoredClients.name == 'c'") == ["a", "b"], "\(table)")
            #expect(try names(context, "UserClient", "ANY ignoredByClients.name == 'a'") == ["b", "c"], "\(table)")
            #expect(try names(context, "UserClient", "ignoredClients.@count == 0") == ["c"], "\(table)")
            #expect(try names(context, "UserClient", "ANY ignoredByClients.ignoredByClients.name == 'a'") == ["c"], "\(table)")
            #expect(try names(context, "UserClient", "SUBQUERY(ignoredByClients, $x, $x.name == 'b').@count > 0") == ["c"])
            // Key paths read through each side, prefetched and not.
            var request = FetchRequest(entityName: "UserClient", sortDescriptors: [FetchSortDescriptor("name")])
            request.relationshipKeyPathsForPrefetching = ["ignoredClients", "ignoredByClients"]
            let clients = try context.fetch(request)
            #expect(try clients.map { try members($0, "ignoredClients").sorted() } == [["b", "c"], ["c"], []], "\(table)")
            #expect(try clients.map { try members($0, "ignoredByClients").sorted() } == [[], ["a"], ["a", "b"]], "\(table)")
            // Links added and removed, from either side.
            let (a, b, c) = (clients[0], clients[1], clients[2])
            try a.removeObject(b, forKey: "ignoredClients")
            try a.addObject(c, forKey: "ignoredByClients")
            try context.save()
            #expect(try MessagingStores.rows(url, "SELECT Z_4IGNOREDBYCLIENTS, Z_4IGNOREDCLIENTS FROM \(table) ORDER BY 1, 2")
                    == [[1, 3], [2, 3], [3, 1]], "\(table)")
            #expect(try MessagingStores.tables(url).filter { $0.contains("IGNORED") } == [table], "\(table)")
            let reopened = ObjectContext(store: try SQLiteStore(url: url, model: model))
            #expect(try members(object(reopened, "UserClient", "a"), "ignoredClients") == ["c"], "\(table)")
            #expect(try members(object(reopened, "UserClient", "a"), "ignoredByClients") == ["c"], "\(table)")
            #expect(try members(object(reopened, "UserClient", "b"), "ignoredByClients").isEmpty, "\(table)")
            #expect(try names(reopened, "UserClient", "ANY ignoredClients.name == 'a'") == ["c"], "\(table)")
            #expect(CoreDataInvariants.violations(of: try SQLiteStore(url: url, model: model)).isEmpty)
        }
    }

    @Test("A join column with a number after its name, ordered: fetched in order, reordered, saved and read back")
    func numberedOrderedJoinColumn() throws {
        let folder = try ScratchFolder()
        let model = try MessagingStores.model(in: folder.url)
        let url = folder.url.appendingPathComponent("Messaging.sqlite")
        try MessagingStores.make(at: url, model: model, naming: .init(teamUsers: "Z_3USERS1"))
        let context = ObjectContext(store: try SQLiteStore(url: url, model: model))
        #expect(try names(context, "Team", "ANY users.name == 'ann'") == ["core"])
        #expect(try names(context, "Team", "users.@count == 3") == ["core"])
        #expect(try names(context, "User", "ANY teams.name == 'core'") == ["ann", "bob", "dee"])
        #expect(try names(context, "User", "ANY teams.users.name == 'cy'") == ["cy"])
        let core = try object(context, "Team", "core")
        #expect(try members(core, "users") == ["dee", "bob", "ann"])
        #expect(try members(object(context, "User", "ann"), "teams") == ["core"])
        // bob leaves, cy joins at the end.
        try core.removeObject(try object(context, "User", "bob"), forKey: "users")
        try core.addObject(try object(context, "User", "cy"), forKey: "users")
        try context.save()
        #expect(try MessagingStores.rows(url, "SELECT Z_3USERS1 FROM Z_2USERS WHERE Z_2TEAMS = 1 ORDER BY Z_FOK_3USERS1") == [[4], [1], [3]])
        #expect(try MessagingStores.tables(url).contains("Z_3USERS") == false)
        let reopened = ObjectContext(store: try SQLiteStore(url: url, model: model))
        #expect(try members(object(reopened, "Team", "core"), "users") == ["dee", "ann", "cy"])
        #expect(try members(object(reopened, "User", "cy"), "teams").sorted() == ["core", "ops"])
        #expect(try names(reopened, "User", "ANY teams.name == 'core'") == ["ann", "cy", "dee"])
    }

    @Test("An ordered many-to-many whose table is named after its other side: fetched in order, saved and read back")
    func orderedTableNamedAfterTheOtherSide() throws {
        let folder = try ScratchFolder()
        let model = try MessagingStores.model(in: folder.url)
        let url = folder.url.appendingPathComponent("Messaging.sqlite")
        try MessagingStores.make(at: url, model: model, naming: .init(groups: "Z_3GROUPS"))
        let context = ObjectContext(store: try SQLiteStore(url: url, model: model))
        #expect(try names(context, "User", "ANY groups.name == 'admins'") == ["ann", "cy"])
        #expect(try names(context, "Group", "ANY users.name == 'bob'") == ["guests"])
        let admins = try object(context, "Group", "admins")
        #expect(try members(admins, "users") == ["cy", "ann"])
        // dee joins the admins (at the end), from the user's side.
        try object(context, "User", "dee").addObject(admins, forKey: "groups")
        try context.save()
        #expect(try MessagingStores.rows(url, "SELECT Z_3USERS FROM Z_3GROUPS WHERE Z_1GROUPS = 1 ORDER BY Z_FOK_3USERS") == [[3], [1], [4]])
        #expect(try MessagingStores.tables(url).contains("Z_1USERS") == false)
        let reopened = ObjectContext(store: try SQLiteStore(url: url, model: model))
        #expect(try members(object(reopened, "Group", "admins"), "users") == ["cy", "ann", "dee"])
        #expect(try names(reopened, "User", "ANY groups.name == 'admins'") == ["ann", "cy", "dee"])
    }

    @Test("A store Core Data named so migrates, with sift migrate too: every link and order kept")
    func migrates() throws {
        let folder = try ScratchFolder()
        let bundleURL = try MessagingStores.bundle(in: folder.url)
        let bundle = try ModelBundle(contentsOf: bundleURL)
        let model = try bundle.model(version: "Messaging")
        let next = try bundle.model(version: "Messaging 2")
        for (index, viaCommand) in [false, true].enumerated() {
            let url = folder.url.appendingPathComponent("Messaging\(index).sqlite")
            try MessagingStores.make(at: url, model: model, naming: .coreData)
            if viaCommand {
                let result = try runSift(["migrate", "--store", url.path, "--model", bundleURL.path])
                #expect(result.status == 0, "\(result.error)")
            } else {
                let migration = try StoreMigration(storeAt: url, to: next)
                #expect(migration.isNeeded)
                let report = try migration.run()
                #expect(report.objects == ["User": 4, "Group": 2, "Team": 2, "UserClient": 3])
            }
            let store = try SQLiteStore(url: url, model: next)
            let context = ObjectContext(store: store)
            #expect(try members(object(context, "Group", "admins"), "users") == ["cy", "ann"])
            #expect(try members(object(context, "Team", "core"), "users") == ["dee", "bob", "ann"])
            #expect(try members(object(context, "UserClient", "a"), "ignoredClients").sorted() == ["b", "c"])
            #expect(try names(context, "UserClient", "ANY ignoredByClients.name == 'b'") == ["c"])
            #expect(try names(context, "User", "ANY teams.name == 'ops' OR ANY groups.name == 'guests'") == ["bob", "cy"])
            #expect(CoreDataInvariants.violations(of: store).isEmpty, "\(CoreDataInvariants.violations(of: store))")
        }
    }

    @Test("A store whose join table cannot be matched is a typed error naming the table, the store left as it was",
          arguments: [
            // No table for the clients' pair under either name.
            (MessagingStores.Naming(clients: "Z_4BLOCKEDCLIENTS"), "Z_4IGNOREDCLIENTS", "Z_4IGNOREDBYCLIENTS"),
            // The users' column of neither name.
            (MessagingStores.Naming(teamUsers: "Z_9MEMBERS"), "Z_2USERS", "Z_3USERS"),
            // An ordered relationship's table without its order keys.
            (MessagingStores.Naming(groups: "Z_3GROUPS", groupOrder: false), "Z_3GROUPS", "Z_FOK_3USERS"),
          ])
    func unmatchedTable(_ naming: MessagingStores.Naming, _ table: String, _ named: String) throws {
        let folder = try ScratchFolder()
        let model = try MessagingStores.model(in: folder.url)
        let url = folder.url.appendingPathComponent("Messaging.sqlite")
        try MessagingStores.make(at: url, model: model, naming: naming)
        let bytes = try Data(contentsOf: url)
        func isTheError(_ error: any Error) -> Bool {
            guard case StoreError.unmatchedJoinTable(let path, let found, let reason) = error else { return false }
            return path == url.path && found == table && reason.contains(named) && "\(error)".contains(table)
                && (error as? StoreError)?.code == .modelDoesNotMatchStore
        }
        func expectTheError(_ what: String, _ body: () throws -> Void) {
            do {
                try body()
                Issue.record("\(what) succeeded")
            } catch {
                #expect(isTheError(error), "\(what): \(error)")
            }
        }
        expectTheError("opening with the model") { _ = try SQLiteStore(url: url, model: model) }
        expectTheError("opening with its model cache") { _ = try SQLiteStore(url: url) }
        let bundleURL = try MessagingStores.bundle(in: folder.url)
        let next = try ModelBundle(contentsOf: bundleURL).model(version: "Messaging 2")
        expectTheError("the migration") { try StoreMigration(storeAt: url, to: next).run() }
        #expect(try Data(contentsOf: url) == bytes)
        // The command line says so in Sift's words, not SQLite's.
        for arguments in [["query", "--store", url.path, "--entity", "UserClient", "TRUEPREDICATE"],
                          ["migrate", "--store", url.path, "--model", bundleURL.path]] {
            let result = try runSift(arguments)
            #expect(result.status == 66, "\(arguments[0]): \(result.status): \(result.error)")
            #expect(result.error.contains(table) && !result.error.contains("no such"), "\(arguments[0]): \(result.error)")
        }
        #expect(try Data(contentsOf: url) == bytes)
    }
}
