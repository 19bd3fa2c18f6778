// SiftPostgres: the store on a PostgreSQL server, its own product so that
// SQLite-only users build no network stack. `import SiftPostgres` alone is
// enough: it brings in the persistence core (`SiftStore`) and the compiler
// library.

@_exported import SiftStore
