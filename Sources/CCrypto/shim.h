// The system's libcrypto (Debian's libssl-dev), for the SHA-256 of Core Data's version hashes.
#include <openssl/sha.h>
