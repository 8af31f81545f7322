#include "CSignalScan.h"
#include <string.h>

// One loop, built three times. memcpy reads each sample's bits without breaking aliasing rules;
// the compiler turns it into a plain load and the whole loop into a vector max reduction.
#define LARGEST_MAGNITUDE_BITS(samples, count)            \
    uint32_t largest = 0;                                 \
    for (int32_t i = 0; i < (count); i++) {               \
        uint32_t bits;                                    \
        memcpy(&bits, (samples) + i, sizeof bits);        \
        bits &= 0x7fffffffu;                              \
        largest = bits > largest ? bits : largest;        \
    }                                                     \
    return largest;

static uint32_t scan_baseline(const float *samples, int32_t count) {
    LARGEST_MAGNITUDE_BITS(samples, count)
}

#if defined(__x86_64__) || defined(__i386__)
#define CSIGNALSCAN_X86 1

__attribute__((target("sse4.1")))
static uint32_t scan_sse41(const float *samples, int32_t count) {
    LARGEST_MAGNITUDE_BITS(samples, count)
}

__attribute__((target("avx2")))
static uint32_t scan_avx2(const float *samples, int32_t count) {
    LARGEST_MAGNITUDE_BITS(samples, count)
}
#endif

typedef uint32_t (*scan_function)(const float *, int32_t);

int32_t CSignalScan_supports(int32_t variant) {
    switch (variant) {
    case 0: return 1;
#ifdef CSIGNALSCAN_X86
    case 1: __builtin_cpu_init(); return __builtin_cpu_supports("sse4.1") ? 1 : 0;
    case 2: __builtin_cpu_init(); return __builtin_cpu_supports("avx2") ? 1 : 0;
#endif
    default: return 0;
    }
}

static scan_function function_for(int32_t variant) {
    if (!CSignalScan_supports(variant)) return scan_baseline;
    switch (variant) {
#ifdef CSIGNALSCAN_X86
    case 1: return scan_sse41;
    case 2: return scan_avx2;
#endif
    default: return scan_baseline;
    }
}

// Chosen before main runs, so the audio thread only ever reads it.
static scan_function chosen = scan_baseline;
static int32_t chosen_variant = 0;

__attribute__((constructor))
static void choose_scan(void) {
    int32_t variant = 2;
    while (variant > 0 && !CSignalScan_supports(variant)) variant--;
    chosen_variant = variant;
    chosen = function_for(variant);
}

uint32_t CSignalScan_largestMagnitudeBits(const float *samples, int32_t count) {
    return chosen(samples, count);
}

uint32_t CSignalScan_largestMagnitudeBitsUsing(int32_t variant, const float *samples, int32_t count) {
    return function_for(variant)(samples, count);
}

int32_t CSignalScan_chosenVariant(void) { return chosen_variant; }

// The sum of squares (RMS meters): four accumulators of eight lanes, so additions overlap. A float
// sum does not vectorise by itself (reassociating it changes the result), so the lanes are
// explicit (the compiler's vector extension); memcpy loads them unaligned. Built for the baseline
// and for AVX2 with FMA, where each lane group is one register and a multiply-add one instruction.
typedef float lanes8 __attribute__((vector_size(32)));

#define SUM_OF_SQUARES(samples, count)                                        \
    lanes8 a = {0}, b = {0}, c = {0}, d = {0};                                \
    int32_t i = 0;                                                            \
    for (; i + 32 <= (count); i += 32) {                                      \
        lanes8 w, x, y, z;                                                    \
        memcpy(&w, (samples) + i, sizeof w);                                  \
        memcpy(&x, (samples) + i + 8, sizeof x);                              \
        memcpy(&y, (samples) + i + 16, sizeof y);                             \
        memcpy(&z, (samples) + i + 24, sizeof z);                             \
        a += w * w;                                                           \
        b += x * x;                                                           \
        c += y * y;                                                           \
        d += z * z;                                                           \
    }                                                                         \
    for (; i + 8 <= (count); i += 8) {                                        \
        lanes8 w;                                                             \
        memcpy(&w, (samples) + i, sizeof w);                                  \
        a += w * w;                                                           \
    }                                                                         \
    lanes8 all = (a + b) + (c + d);                                           \
    float sum = ((all[0] + all[1]) + (all[2] + all[3])) + ((all[4] + all[5]) + (all[6] + all[7])); \
    for (; i < (count); i++) sum += (samples)[i] * (samples)[i];              \
    return sum;

static float squares_baseline(const float *samples, int32_t count) {
    SUM_OF_SQUARES(samples, count)
}

#ifdef CSIGNALSCAN_X86
__attribute__((target("avx2,fma")))
static float squares_avx2(const float *samples, int32_t count) {
    SUM_OF_SQUARES(samples, count)
}
#endif

typedef float (*squares_function)(const float *, int32_t);

static squares_function squares_for(int32_t variant) {
#ifdef CSIGNALSCAN_X86
    if (variant == 2 && CSignalScan_supports(2) && __builtin_cpu_supports("fma")) return squares_avx2;
#endif
    (void)variant;
    return squares_baseline;
}

static squares_function chosen_squares = squares_baseline;

__attribute__((constructor))
static void choose_squares(void) {
    chosen_squares = squares_for(2);
}

float CSignalScan_sumOfSquares(const float *samples, int32_t count) {
    return chosen_squares(samples, count);
}

float CSignalScan_sumOfSquaresUsing(int32_t variant, const float *samples, int32_t count) {
    return squares_for(variant)(samples, count);
}
