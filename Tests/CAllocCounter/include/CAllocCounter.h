#ifndef CALLOCCOUNTER_H
#define CALLOCCOUNTER_H

#include <stdint.h>
#include <pthread.h>

/// Test support: this target defines malloc, calloc, realloc, free, posix_memalign, aligned_alloc,
/// memalign and valloc for the whole test process (they forward to glibc's __libc_* functions)
/// and counts the calls made on one watched thread. Link it only into test executables.

/// Starts counting calls made on `thread`, from zero.
void CAllocCounter_watch(pthread_t thread);
/// Stops counting.
void CAllocCounter_stop(void);
/// Allocation calls (malloc, calloc, realloc, the aligned forms) seen on the watched thread.
uint64_t CAllocCounter_allocations(void);
/// free calls with a non-null pointer seen on the watched thread.
uint64_t CAllocCounter_frees(void);
/// Whether the interposer is the process's malloc (false means the counts prove nothing).
int CAllocCounter_is_active(void);
/// Whether this build interposes at all: not under a sanitizer, whose runtime owns malloc (the
/// interposer would bypass it and crash the process). Tests that count allocations are skipped
/// when this is 0 (`make tsan`); every other build counts.
int CAllocCounter_is_available(void);

#endif
