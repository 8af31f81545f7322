#ifndef CFLOATENVIRONMENT_H
#define CFLOATENVIRONMENT_H

/// The calling thread's handling of subnormal ("denormal") floats.
///
/// Subnormals are the floats below 1.18e-38. Arithmetic on them can take a slow path in the
/// floating-point unit, and audio produces them wherever a signal decays towards silence (a reverb
/// tail, an upstream fade). With flush-to-zero the unit writes zero instead of a subnormal result;
/// with denormals-are-zero it reads subnormal inputs as zero. Both are per-thread state: the x86
/// MXCSR register (FTZ is bit 15, DAZ bit 6) and the AArch64 FPCR (FZ, bit 24, does both).
///
/// Nothing here allocates, locks or makes a system call: callable from JACK's process thread.

/// Turns flushing on for the calling thread, reading the register first and writing it only when
/// a bit is missing (a register write can stall the pipeline; a read does not).
void CFloatEnvironment_flush_denormals(void);

/// Whether the calling thread flushes subnormals (x86: both FTZ and DAZ set; AArch64: FZ set).
/// Always 0 on an architecture this file does not know.
int CFloatEnvironment_denormals_flushed(void);

/// Turns flushing on (non-zero) or off for the calling thread. For tests and benchmarks.
void CFloatEnvironment_set_denormals_flushed(int flushed);

#endif
