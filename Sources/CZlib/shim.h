// The system zlib, for inflating the raw-deflate model cache of Core Data stores.
#include <zlib.h>
