#ifndef CMIXREFERENCE_H
#define CMIXREFERENCE_H

#include <stdint.h>

/// Mirrors Engine's GainState layout: the gain of one mix cell.
typedef struct {
    float current;
    float target;
    float step;
    int32_t remaining;
} CMixReference_GainState;

/// Mirrors Engine's MixContribution layout.
typedef struct {
    int32_t input;
    int32_t gainSlot;
    float target;
    int32_t rampFrames;
} CMixReference_Contribution;

/// The mix kernel written as plain C for the compiler (-O3) to vectorise: the yardstick the Swift
/// kernels are benchmarked against. Same definition as Engine's MixKernel.reference.
void CMixReference_mix_bus(float *output, const float *const *inputs,
                           const CMixReference_Contribution *contributions, int count,
                           CMixReference_GainState *gains, int frames);

#endif
