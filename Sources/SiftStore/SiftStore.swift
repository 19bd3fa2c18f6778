// SiftStore: the persistence core users import.
//
// `import SiftStore` alone is enough to use a store: it brings in the
// compiler library (`Sift`: values, models, predicates) whose types the
// store's API speaks in. The stages' internals that only Sift uses are
// `package`, not public.

@_exported import Sift
