// Xcode models as real apps write them: every attribute type, inheritance,
// composites, derived and transient attributes, ordered relationships,
// constraints, indexes, fetched properties, fetch request templates and
// configurations; and what Xcode accepts that Core Data ignores.

import Foundation
import Sift
import SiftStore
import Testing

@Suite("Xcode models")
struct XcodeModelTests {
    static let xml = #"""
    <?xml version="1.0" encoding="UTF-8" standalone="yes"?>
    <model type="com.apple.IDECoreDataModeler.DataModel" documentVersion="1.0" userDefinedModelVersionIdentifier="">
        <entity name="Vehicle" representedClassName="Vehicle" isAbstract="YES" syncable="YES">
            <attribute name="plate" attributeType="String"/>
            <attribute name="bought" optional="YES" attributeType="Date" defaultDateTimeInterval="100" usesScalarValueType="NO"/>
            <attribute name="wheels" attributeType="Integer 16" defaultValueString="0.0" usesScalarValueType="YES"/>
            <attribute name="insured" attributeType="Integer 32" defaultValueString="NO" usesScalarValueType="YES"/>
            <attribute name="serial" optional="YES" attributeType="UUID" defaultValueString="empy" usesScalarValueType="NO"/>
            <attribute name="scratch" optional="YES" transient="YES"/>
            <relationship name="owner" optional="YES" maxCount="1" deletionRule="Nullify" destinationEntity="Person" inverseName="vehicles" inverseEntity="Person"/>
            <uniquenessConstraints><uniquenessConstraint><constraint value="plate"/></uniquenessConstraint></uniquenessConstraints>
            <fetchIndex name="byPlate"><fetchIndexElement property="plate" type="Binary" order="ascending"/></fetchIndex>
        </entity>
        <entity name="Car" parentEntity="Vehicle" elementID="Automobile">
            <attribute name="color" optional="YES" attributeType="Transformable" valueTransformerName="ColorTransformer" customClassName="UIColor"/>
            <attribute name="photo" optional="YES" attributeType="Binary" allowsExternalBinaryDataStorage="YES"/>
            <attribute name="homepage" optional="YES" attributeType="URI"/>
            <attribute name="place" optional="YES" attributeType="Composite" composite="Place"/>
            <attribute name="wheelCount" optional="YES" attributeType="Integer 64" derived="YES" derivationExpression="wheels" usesScalarValueType="YES"/>
            <relationship name="trips" optional="YES" toMany="YES" minCount="1" maxCount="10" ordered="YES" deletionRule="Cascade" destinationEntity="Trip" inverseName="car" inverseEntity="Trip"/>
            <compoundIndexes><compoundIndex><index value="color"/><index value="plate"/></compoundIndex></compoundIndexes>
        </entity>
        <entity name="Person">
            <attribute name="name" attributeType="String"/>
            <relationship name="vehicles" optional="YES" toMany="YES" deletionRule="Nullify" destinationEntity="Vehicle" inverseName="owner" inverseEntity="Vehicle"/>
            <fetchedProperty name="sameName" optional="YES">
                <fetchRequest name="fetchedPropertyFetchRequest" entity="Person" predicateString="name == $FETCH_SOURCE.name"/>
            </fetchedProperty>
        </entity>
        <entity name="Trip">
            <attribute name="km" attributeType="Double" defaultValueString="0" usesScalarValueType="YES"/>
            <relationship name="car" maxCount="1" deletionRule="Nullify" destinationEntity="Car" inverseName="trips" inverseEntity="Car"/>
        </entity>
        <composite name="Place">
            <attribute name="city" attributeType="String"/>
            <attribute name="spot" attributeType="Composite" composite="Spot"/>
        </composite>
        <composite name="Spot">
            <attribute name="lat" attributeType="Double"/>
        </composite>
        <fetchRequest name="carsOf" entity="Car" predicateString="owner.name == $NAME" fetchLimit="5"/>
        <configuration name="Local"><memberEntity name="Person"/><memberEntity name="Car"/></configuration>
        <elements><element name="Car" positionX="0" positionY="0" width="128" height="74"/></elements>
    </model>
    """#

    static let model: DataModel = {
        do { return try DataModel(xcdatamodelXML: Data(xml.utf8)) } catch { fatalError("\(error)") }
    }()

    @Test func attributeTypesAndFlags() throws {
        let car = try #require(Self.model.entity(named: "Car"))
        #expect(car.attribute(named: "color")?.type == .transformable)
        #expect(car.attribute(named: "color")?.valueTransformerName == "ColorTransformer")
        #expect(car.attribute(named: "photo")?.allowsExternalStorage == true)
        #expect(car.attribute(named: "homepage")?.type == .uri)
        #expect(car.attribute(named: "scratch")?.type == .undefined)
        #expect(car.attribute(named: "scratch")?.isStored == false)
        #expect(car.attribute(named: "wheelCount")?.derivation == "wheels")
        #expect(car.attribute(named: "wheelCount")?.isReadOnly == true)
        // Composites: each element an attribute of its own, nested ones too.
        #expect(car.attribute(named: "place")?.type == .composite)
        #expect(car.attribute(named: "place.city")?.type == .string)
        #expect(car.attribute(named: "place.spot.lat")?.type == .double)
        #expect(car.attribute(named: "place.city")?.composite == "place")
        // Defaults as Xcode writes them; one that does not fit is dropped.
        #expect(car.attribute(named: "bought")?.defaultValue == .date(Date(timeIntervalSinceReferenceDate: 100)))
        #expect(car.attribute(named: "wheels")?.defaultValue == .int(0))
        #expect(car.attribute(named: "insured")?.defaultValue == .int(0))
        #expect(car.attribute(named: "serial")?.defaultValue == nil)
        #expect(car.renamingIdentifier == "Automobile")
    }

    @Test func inheritance() throws {
        let vehicle = try #require(Self.model.entity(named: "Vehicle"))
        let car = try #require(Self.model.entity(named: "Car"))
        #expect(vehicle.isAbstract && vehicle.subentities == ["Car"])
        #expect(car.superentity == "Vehicle")
        #expect(car.inheritedAttributeCount == vehicle.attributes.count)
        for attribute in vehicle.attributes { #expect(car.attribute(named: attribute.name)?.slot == attribute.slot) }
        #expect(car.relationship(named: "owner")?.slot == vehicle.relationship(named: "owner")?.slot)
        #expect(Self.model.descendants(of: vehicle).map(\.name) == ["Vehicle", "Car"])
        #expect(Self.model.root(of: car).name == "Vehicle")
        // An inverse may point at an ancestor: Person.vehicles leads to Vehicle, Car inherits owner.
        #expect(Self.model.entity(named: "Person")?.relationship(named: "vehicles")?.destination == "Vehicle")
    }

    @Test func relationshipsIndexesAndTheRest() throws {
        let car = try #require(Self.model.entity(named: "Car"))
        let trips = try #require(car.relationship(named: "trips"))
        #expect(trips.isOrdered && trips.minimumCount == 1 && trips.maximumCount == 10 && trips.deleteRule == .cascade)
        #expect(Self.model.entity(named: "Vehicle")?.uniquenessConstraints == [["plate"]])
        #expect(Self.model.entity(named: "Vehicle")?.attribute(named: "plate")?.isIndexed == true)
        #expect(car.indexes == [FetchIndex("color_plate", properties: ["color", "plate"])])
        #expect(Self.model.entity(named: "Person")?.fetchedProperties
                == [FetchedProperty("sameName", entityName: "Person", predicate: "name == $FETCH_SOURCE.name")])
        #expect(Self.model.fetchRequestTemplates["carsOf"]
                == FetchRequestTemplate("carsOf", entityName: "Car", predicate: "owner.name == $NAME", fetchLimit: 5))
        #expect(Self.model.configurations == ["Local": ["Person", "Car"]])
    }

    @Test func theJSONFormKeepsEverything() throws {
        let again = try DataModel(json: Self.model.jsonData)
        #expect(again.jsonData == Self.model.jsonData)
        #expect(again == Self.model, "the JSON form loses something")
        #expect(again.entityVersionHashes == Self.model.entityVersionHashes)
    }

    @Test func predicatesReachCompositeElementsAndInheritedProperties() throws {
        let compiler = PredicateCompiler(model: Self.model)
        _ = try compiler.bind("place.city == 'Oslo' AND place.spot.lat > 1", entity: "Car")
        _ = try compiler.bind("plate BEGINSWITH 'A' AND owner.name == 'Ann'", entity: "Car")
        #expect(throws: PredicateCompileError.self) { try compiler.bind("place.town == 'Oslo'", entity: "Car") }
        // A subentity's own property on a fetch of its ancestor: the error names the subentity.
        let error = #expect(throws: PredicateCompileError.self) { try compiler.bind("color == nil", entity: "Vehicle") }
        #expect(error.map { "\($0)" }?.contains("'Car', a subentity of 'Vehicle'") == true)
    }

    @Test func coreDataNamesTheColumns() throws {
        let schema = SQLSchema(model: Self.model)
        let car = try #require(Self.model.entity(named: "Car"))
        // Subentities share their root's table; a composite's elements are named by their own names.
        #expect(schema.table(car) == "ZVEHICLE")
        #expect(schema.column(try #require(car.attribute(named: "place.city")), of: car) == "ZCITY")
        #expect(schema.column(try #require(car.attribute(named: "plate")), of: car) == "ZPLATE")
        #expect(schema.storedAttributes(car).allSatisfy { $0.type.hasColumn && !$0.isTransient })
        #expect(SQLSchema.entityNumbers(of: Self.model) == ["Person": 1, "Trip": 2, "Vehicle": 3, "Car": 4])
        // The ordered to-many Car.trips keeps its order keys next to Trip.car.
        let trip = try #require(Self.model.entity(named: "Trip"))
        #expect(schema.orderKey(try #require(trip.relationship(named: "car")), of: trip) == "Z_FOK_CAR")
    }

    @Test func fetchRequestsFromTemplates() throws {
        let request = try Self.model.fetchRequestFromTemplate(withName: "carsOf", substitutionVariables: ["NAME": "Ann"])
        #expect(request.entityName == "Car" && request.fetchLimit == 5)
        guard case .format(let text, let arguments)? = request.predicate else {
            Issue.record("no predicate")
            return
        }
        #expect(text.contains("owner.name ==") && text.contains("Ann") && !text.contains("$") && arguments.isEmpty)
        let missing = #expect(throws: StoreError.self) { try Self.model.fetchRequestFromTemplate(withName: "carsOf") }
        #expect(missing.map { "\($0)" }?.contains("$NAME") == true)
        #expect(throws: StoreError.self) { try Self.model.fetchRequestFromTemplate(withName: "nope") }
    }

    /// The model archive the fuzz seeds hold (Fuzz/make-seeds writes it): a compiled model, as a `.mom` holds one.
    static func compiledModel() throws -> Data {
        try Data(contentsOf: Fixtures.repositoryRoot.appendingPathComponent("Fuzz/Corpus/model/compiled-model")).dropFirst()
    }

    @Test func compiledModelsAndTheirBundles() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sift-momd-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let bundle = folder.appendingPathComponent("Pets.momd")
        try FileManager.default.createDirectory(at: bundle, withIntermediateDirectories: true)
        // Two versions; without a marker the last one counts, numbers sorted as numbers.
        try Self.compiledModel().write(to: bundle.appendingPathComponent("Pets 2.mom"))
        try Self.compiledModel().write(to: bundle.appendingPathComponent("Pets 12.mom"))
        #expect(try ModelBundle(contentsOf: bundle).versionNames == ["Pets 2", "Pets 12"])
        #expect(try ModelBundle(contentsOf: bundle).currentVersionName == "Pets 12")
        let info = try PropertyListSerialization.data(fromPropertyList: ["NSManagedObjectModel_CurrentVersionName": "Pets 2"],
                                                      format: .xml, options: 0)
        try info.write(to: bundle.appendingPathComponent("VersionInfo.plist"))
        #expect(try ModelBundle(contentsOf: bundle).currentVersionName == "Pets 2")
        // A .momd and a .mom read to the same model.
        let model = try DataModel(contentsOf: bundle)
        #expect(model == (try DataModel(contentsOf: bundle.appendingPathComponent("Pets 12.mom"))))
        let person = try #require(model.entity(named: "Person"))
        #expect(person.attribute(named: "name")?.type == .string)
        #expect(person.relationship(named: "friends")?.isOrdered == true)
        #expect(model.entity(named: "Pet")?.relationship(named: "owner")?.inverse == "friends")
    }
}

extension XcodeModelTests {
    /// A store of the model above: an abstract root with a subentity,
    /// a transformable, external-storage data, a composite, a derived
    /// attribute and an ordered to-many, written and read back from the file.
    @Test func aStoreOfTheModelWritesAndReadsEveryFeature() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("cars.sqlite")
        let tripKeys: [Int64]
        do {
            let store = try SQLiteStore(url: url, model: Self.model)
            let context = ObjectContext(store: store)
            let ann = try context.insert("Person")
            try ann.setValue(.string("Ann"), forKey: "name")
            let car = try context.insert("Car")
            try car.setValue(.string("AB-123"), forKey: "plate")
            try car.setValue(.int(4), forKey: "wheels")
            try car.setValue(.int(1), forKey: "insured")
            try car.setValue(.data(Data([1, 2, 3])), forKey: "color")
            try car.setValue(.data(Data(repeating: 7, count: 100)), forKey: "photo")
            try car.setValue(.string("Oslo"), forKey: "place.city")
            try car.setValue(.double(59.9), forKey: "place.spot.lat")
            try car.setObject(ann, forKey: "owner")
            #expect(throws: StoreError.self) { try car.setValue(.int(4), forKey: "wheelCount") }
            var trips: [ManagedObject] = []
            for km in [30.0, 10, 20] {
                let trip = try context.insert("Trip")
                try trip.setValue(.double(km), forKey: "km")
                try car.addObject(trip, forKey: "trips")
                trips.append(trip)
            }
            try context.save()
            tripKeys = trips.map(\.objectID.primaryKey)
            #expect(CoreDataInvariants.violations(of: store).isEmpty)
            // Core Data's order keys: 2048, then 1024 apart, in the relationship's order.
            let keys = try store.withConnection { try $0.query("SELECT Z_PK, Z_FOK_CAR FROM ZTRIP ORDER BY Z_FOK_CAR") }
            #expect(keys.map { $0[0] } == tripKeys.map(SQLValue.integer))
            #expect(keys.map { $0[1] } == [.integer(2048), .integer(3072), .integer(4096)])
            // A subentity's row in its abstract root's table.
            // The model cache Core Data keeps: the model, compiled and compressed, with the same version hashes.
            let cache = try store.withConnection { try $0.query("SELECT Z_CONTENT FROM Z_MODELCACHE") }
            guard case .blob(let compressed)? = cache.first?.first else {
                Issue.record("no model cache")
                return
            }
            #expect(try DataModel(modelCache: compressed).entityVersionHashes == Self.model.entityVersionHashes)
            let rows = try store.withConnection { try $0.query("SELECT Z_ENT, ZPLATE FROM ZVEHICLE") }
            #expect(rows == [[.integer(Int64(store.schema.entityNumber(try #require(Self.model.entity(named: "Car"))))), .text("AB-123")]])
        }
        let reopened = try SQLiteStore(url: url)
        let context = ObjectContext(store: reopened)
        let ann = try #require(try context.fetch(FetchRequest(entityName: "Person")).first)
        let car = try #require(try ann.objects(forKey: "vehicles").first)
        #expect(car.entity.name == "Car")
        #expect(car["color"] == .data(Data([1, 2, 3])) && car["photo"] == .data(Data(repeating: 7, count: 100)))
        #expect(car["place.city"] == .string("Oslo"))
        #expect(try car.objects(forKey: "trips").map(\.objectID.primaryKey) == tripKeys)
        #expect(try context.count(for: FetchRequest(entityName: "Car", predicate: "place.city == 'Oslo'")) == 1)
        #expect(throws: StoreError.self) { try context.count(for: FetchRequest(entityName: "Vehicle", predicate: "place.city == 'Oslo'")) }
        #expect(try context.count(for: FetchRequest(entityName: "Car", predicate: "trips.@sum.km == 60")) == 1)
    }
}

extension XcodeModelTests {
    /// Core Data keeps a value of an attribute with external binary storage
    /// in its row after the byte 1, or in a file beside the store named after
    /// the byte 2; both read, and predicates on it run in memory.
    @Test func externalBinaryDataIsReadInlineAndFromItsFile() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("cars.sqlite")
        let store = try SQLiteStore(url: url, model: Self.model)
        let context = ObjectContext(store: store)
        var cars: [ManagedObject] = []
        for plate in ["inline", "file", "missing"] {
            let car = try context.insert("Car")
            try car.setValue(.string(plate), forKey: "plate")
            try car.setValue(.string("Oslo"), forKey: "place.city")
            try car.setValue(.double(1), forKey: "place.spot.lat")
            try car.setValue(.data(Data(plate.utf8)), forKey: "photo")
            cars.append(car)
        }
        try context.save()
        // As Core Data writes a value it keeps in the row.
        let inline = try store.withConnection { try $0.query("SELECT ZPHOTO FROM ZVEHICLE WHERE ZPLATE = 'inline'") }
        #expect(inline.first?.first == .blob(Data([1]) + Data("inline".utf8)))
        // As Core Data writes one it keeps in a file.
        let files = SQLSchema.externalData(ofStoreAt: url)
        #expect(files.path.hasSuffix(".cars_SUPPORT/_EXTERNAL_DATA"))
        try FileManager.default.createDirectory(at: files, withIntermediateDirectories: true)
        let name = UUID().uuidString
        try Data(repeating: 9, count: 2_000).write(to: files.appendingPathComponent(name))
        try store.withConnection { connection in
            try connection.execute("UPDATE ZVEHICLE SET ZPHOTO = CAST(X'02' || '\(name)' || X'00' AS BLOB) WHERE ZPLATE = 'file'")
            try connection.execute("UPDATE ZVEHICLE SET ZPHOTO = CAST(X'02' || '\(UUID().uuidString)' AS BLOB) WHERE ZPLATE = 'missing'")
        }
        let reader = ObjectContext(store: try SQLiteStore(url: url))
        let photos = Dictionary(uniqueKeysWithValues: try reader.fetch(FetchRequest(entityName: "Car")).map {
            ($0["plate"]?.description ?? "", $0["photo"] ?? .null)
        })
        #expect(photos["\"inline\""] == .data(Data("inline".utf8)))
        #expect(photos["\"file\""] == .data(Data(repeating: 9, count: 2_000)))
        #expect(photos["\"missing\""] == .null)
        // Compared in memory, where the data is whole.
        #expect(try reader.count(for: FetchRequest(entityName: "Car", predicate: "photo == %@", arguments: [.data(Data("inline".utf8))])) == 1)
        #expect(try reader.count(for: FetchRequest(entityName: "Car", predicate: "photo == nil")) == 1)
    }
}

extension XcodeModelTests {
    /// A transformable attribute keeps the bytes its value transformer makes;
    /// objects and predicates see the value, with the transformer registered
    /// by the name the model gives.
    @Test func valueTransformersRegisteredByName() throws {
        let folder = try ScratchFolder()
        let url = folder.url.appendingPathComponent("cars.sqlite")
        let colors = AttributeValueTransformer(
            name: "ColorTransformer",
            transformedValue: { data in .string(String(decoding: data.reversed(), as: UTF8.self)) },
            reverseTransformedValue: { value in
                guard case .string(let name) = value else { throw StoreError.unexpected("not a color name") }
                return Data(name.utf8.reversed())
            })
        do {
            let store = try SQLiteStore(url: url, model: Self.model)
            store.valueTransformers.register(colors)
            let context = ObjectContext(store: store)
            for (plate, color) in [("A", "red"), ("B", "blue")] {
                let car = try context.insert("Car")
                try car.setValue(.string(plate), forKey: "plate")
                try car.setValue(.string("Oslo"), forKey: "place.city")
                try car.setValue(.double(1), forKey: "place.spot.lat")
                try car.setValue(.string(color), forKey: "color")
            }
            try context.save()
            let stored = try store.withConnection { try $0.query("SELECT ZCOLOR FROM ZVEHICLE WHERE ZPLATE = 'A'") }
            #expect(stored.first?.first == .blob(Data("der".utf8)))
            // A value the transformer cannot store is a validation error.
            let car = try context.insert("Car")
            try car.setValue(.string("C"), forKey: "plate")
            try car.setValue(.string("Oslo"), forKey: "place.city")
            try car.setValue(.double(1), forKey: "place.spot.lat")
            try car.setValue(.int(7), forKey: "color")
            #expect(throws: StoreError.self) { try context.save() }
        }
        let store = try SQLiteStore(url: url)
        store.valueTransformers.register(colors)
        let context = ObjectContext(store: store)
        #expect(try context.fetch(FetchRequest(entityName: "Car", predicate: "color == 'red'")).map { $0["plate"] } == [.string("A")])
        // Without the transformer, the stored bytes.
        let plain = ObjectContext(store: try SQLiteStore(url: url))
        #expect(try plain.fetch(FetchRequest(entityName: "Car", predicate: "plate == 'B'")).first?["color"] == .data(Data("eulb".utf8)))
    }
}

extension XcodeModelTests {
    /// A fetched property runs its fetch request with `$FETCH_SOURCE` as
    /// the object asking (here `name == $FETCH_SOURCE.name`).
    @Test func fetchedPropertiesFetchWithTheirSource() throws {
        let store = try SQLiteStore(inMemoryWith: Self.model)
        let context = ObjectContext(store: store)
        var people: [ManagedObject] = []
        for name in ["Ann", "Bo", "Ann"] {
            let person = try context.insert("Person")
            try person.setValue(.string(name), forKey: "name")
            people.append(person)
        }
        try context.save()
        let namesakes = try people[0].fetchedObjects(forKey: "sameName")
        #expect(Set(namesakes.map(\.objectID)) == [people[0].objectID, people[2].objectID])
        #expect(try people[1].fetchedObjects(forKey: "sameName").map(\.objectID) == [people[1].objectID])
        #expect(throws: StoreError.self) { try people[0].fetchedObjects(forKey: "noSuchProperty") }
        // Its source as an object: every vehicle of the person.
        let syntax = try PredicateParser.parse("owner == $FETCH_SOURCE AND plate != $FETCH_SOURCE.name")
        #expect(syntax.variableKeyPaths == ["FETCH_SOURCE.name"] && syntax.variables == ["FETCH_SOURCE"])
        #expect(syntax.substituting(["FETCH_SOURCE": .int(1), "FETCH_SOURCE.name": .string("x")]).description
                == "owner == 1 AND plate != \"x\"")
    }
}
