// glibc's allocator statistics (mallinfo2), for the benchmarks' memory figures.
#include <malloc.h>
