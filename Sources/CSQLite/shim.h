// The system SQLite (Debian's libsqlite3-dev), for the SiftStore module.
#include <sqlite3.h>
