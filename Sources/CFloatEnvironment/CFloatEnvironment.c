// Reads and writes the floating-point control register of the calling thread; see the header.
#include "CFloatEnvironment.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

typedef unsigned int control_word;
static const control_word flush_bits = (1u << 15) | (1u << 6);  // MXCSR FTZ | DAZ
static inline control_word read_control(void) { return _mm_getcsr(); }
static inline void write_control(control_word value) { _mm_setcsr(value); }

#elif defined(__aarch64__)
typedef uint64_t control_word;
static const control_word flush_bits = (uint64_t)1 << 24;       // FPCR.FZ
static inline control_word read_control(void) {
    control_word value;
    __asm__ __volatile__("mrs %0, fpcr" : "=r"(value));
    return value;
}
static inline void write_control(control_word value) { __asm__ __volatile__("msr fpcr, %0" : : "r"(value)); }

#elif defined(__arm__) && defined(__ARM_FP)
typedef uint32_t control_word;
static const control_word flush_bits = (uint32_t)1 << 24;       // FPSCR.FZ
static inline control_word read_control(void) {
    control_word value;
    __asm__ __volatile__("vmrs %0, fpscr" : "=r"(value));
    return value;
}
static inline void write_control(control_word value) { __asm__ __volatile__("vmsr fpscr, %0" : : "r"(value)); }

#else
// Unknown architecture: nothing to set; `CFloatEnvironment_denormals_flushed` says 0.
typedef unsigned int control_word;
static const control_word flush_bits = 0;
static inline control_word read_control(void) { return 0; }
static inline void write_control(control_word value) { (void)value; }
#endif

void CFloatEnvironment_flush_denormals(void) {
    control_word value = read_control();
    if ((value & flush_bits) != flush_bits) write_control(value | flush_bits);
}

int CFloatEnvironment_denormals_flushed(void) {
    return flush_bits != 0 && (read_control() & flush_bits) == flush_bits;
}

void CFloatEnvironment_set_denormals_flushed(int flushed) {
    control_word value = read_control();
    write_control(flushed ? (value | flush_bits) : (value & ~flush_bits));
}
