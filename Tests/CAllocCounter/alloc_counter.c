// Counts heap calls made on one watched thread by interposing the allocator entry points.
// Every function forwards to glibc's own implementation (__libc_malloc and friends), so behaviour
// is unchanged; the only extra work is comparing pthread_self() with the watched thread.
#include "CAllocCounter.h"

#include <errno.h>
#include <stddef.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <malloc.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void __libc_free(void *);
extern void *__libc_memalign(size_t, size_t);
extern void *__libc_valloc(size_t);

static _Atomic int watching = 0;
static _Atomic(pthread_t) watched;
static _Atomic uint64_t allocations = 0;
static _Atomic uint64_t frees = 0;
static _Atomic int interposed = 0;

static inline int on_watched_thread(void) {
    return atomic_load_explicit(&watching, memory_order_acquire)
        && pthread_equal(pthread_self(), atomic_load_explicit(&watched, memory_order_relaxed));
}

static inline void count_allocation(void) {
    atomic_store_explicit(&interposed, 1, memory_order_relaxed);
    if (on_watched_thread()) atomic_fetch_add_explicit(&allocations, 1, memory_order_relaxed);
}

void CAllocCounter_watch(pthread_t thread) {
    atomic_store(&allocations, 0);
    atomic_store(&frees, 0);
    atomic_store(&watched, thread);
    atomic_store_explicit(&watching, 1, memory_order_release);
}

void CAllocCounter_stop(void) { atomic_store(&watching, 0); }
uint64_t CAllocCounter_allocations(void) { return atomic_load(&allocations); }
uint64_t CAllocCounter_frees(void) { return atomic_load(&frees); }

#if defined(__has_feature)
#  if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#    define CALLOCCOUNTER_UNDER_SANITIZER 1
#  endif
#endif
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#  define CALLOCCOUNTER_UNDER_SANITIZER 1
#endif

#ifdef CALLOCCOUNTER_UNDER_SANITIZER
int CAllocCounter_is_available(void) { return 0; }
#else
int CAllocCounter_is_available(void) { return 1; }
#endif

int CAllocCounter_is_active(void) {
    atomic_store(&interposed, 0);
    void *volatile p = malloc(16);
    free(p);
    return atomic_load(&interposed);
}

#ifndef CALLOCCOUNTER_UNDER_SANITIZER
void *malloc(size_t size) { count_allocation(); return __libc_malloc(size); }
void *calloc(size_t n, size_t size) { count_allocation(); return __libc_calloc(n, size); }
void *realloc(void *p, size_t size) { count_allocation(); return __libc_realloc(p, size); }
void *memalign(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
void *aligned_alloc(size_t alignment, size_t size) { count_allocation(); return __libc_memalign(alignment, size); }
void *valloc(size_t size) { count_allocation(); return __libc_valloc(size); }

int posix_memalign(void **out, size_t alignment, size_t size) {
    count_allocation();
    if (alignment < sizeof(void *) || (alignment & (alignment - 1)) != 0) return EINVAL;
    void *p = __libc_memalign(alignment, size);
    if (p == NULL && size != 0) return ENOMEM;
    *out = p;
    return 0;
}

void free(void *p) {
    if (p != NULL && on_watched_thread()) atomic_fetch_add_explicit(&frees, 1, memory_order_relaxed);
    __libc_free(p);
}
#endif
