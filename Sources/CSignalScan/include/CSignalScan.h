#ifndef CSIGNALSCAN_H
#define CSIGNALSCAN_H

#include <stdint.h>

/// The scan behind SignalGuard.peakIfFinite: the largest magnitude of a buffer of floats, as its
/// bit pattern (sign cleared). With the sign bit cleared, IEEE 754 floats order like integers and
/// every pattern from 0x7f800000 up is an infinity or a NaN, so one integer max gives both the peak
/// and whether anything was not finite.
///
/// Written in C for one reason: the width of the vector unit. Swift compiles for the distribution's
/// baseline (x86-64: SSE2, which has no 32-bit integer max and emulates it with compares and
/// masks); here the same loop is also built for SSE4.1 and AVX2, and the best one this CPU runs is
/// chosen once, when the program loads (a constructor; no lock, no branch per call beyond one
/// indirect call). On a 2-core x86 VM, 32 buffers of 128 frames: SSE2 895 ns, SSE4.1 417, AVX2 183.

/// The largest `bits & 0x7fffffff` over `count` floats, with the variant chosen at load.
uint32_t CSignalScan_largestMagnitudeBits(const float *samples, int32_t count);

/// The same with a given variant: 0 the baseline, 1 SSE4.1, 2 AVX2 (x86 only). A variant this CPU
/// lacks, or an unknown one, runs the baseline. For tests and benchmarks.
uint32_t CSignalScan_largestMagnitudeBitsUsing(int32_t variant, const float *samples, int32_t count);

/// The variant chosen at load (0, 1 or 2), and whether this CPU runs `variant`.
int32_t CSignalScan_chosenVariant(void);
int32_t CSignalScan_supports(int32_t variant);

/// The sum of the squares of `count` floats (finite ones), for RMS meters: built for the
/// baseline and for AVX2 with FMA (chosen at load when the CPU has both). Summed in float over 32
/// lanes, in an order of its own: within float rounding of the plain sum.
float CSignalScan_sumOfSquares(const float *samples, int32_t count);

/// The same with a given variant: 0 the baseline, 2 AVX2 with FMA; any other, or one this CPU
/// lacks, runs the baseline. For tests and benchmarks.
float CSignalScan_sumOfSquaresUsing(int32_t variant, const float *samples, int32_t count);

#endif
