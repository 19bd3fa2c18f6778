// The Swift runtime's entry point that adds several strong references to an
// object at once (libswiftCore exports it), for code that hands one object
// to many holders: one atomic operation instead of one per holder.
#include <stdint.h>

void *swift_retain_n(void *object, uint32_t n);
