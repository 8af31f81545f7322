#include "CMixReference.h"

static void advance(CMixReference_GainState *g, int frames) {
    if (g->remaining == 0) return;
    if (g->remaining <= frames) {
        g->current = g->target;
        g->remaining = 0;
        g->step = 0;
    } else {
        g->current = g->current + g->step * (float)frames;
        g->remaining -= frames;
    }
}

void CMixReference_mix_bus(float *restrict output, const float *const *inputs,
                           const CMixReference_Contribution *contributions, int count,
                           CMixReference_GainState *gains, int frames) {
    int wrote = 0;
    for (int c = 0; c < count; c++) {
        CMixReference_GainState *g = &gains[contributions[c].gainSlot];
        if (g->remaining == 0 && g->target == 0) continue;
        const float *restrict x = inputs[contributions[c].input];
        if (g->remaining == 0) {
            const float gain = g->current;
            if (wrote) {
                for (int i = 0; i < frames; i++) output[i] += gain * x[i];
            } else {
                for (int i = 0; i < frames; i++) output[i] = gain * x[i];
            }
        } else {
            // While i + 1 < remaining the gain is start + step * (i + 1); from the ramp's last
            // sample on it is the target. Written as straight loops so the compiler vectorises them.
            const int ramped = g->remaining - 1 < frames ? g->remaining - 1 : frames;
            const float start = g->current, step = g->step, target = g->target;
            if (wrote) {
                for (int i = 0; i < ramped; i++) output[i] += (start + step * (float)(i + 1)) * x[i];
                for (int i = ramped; i < frames; i++) output[i] += target * x[i];
            } else {
                for (int i = 0; i < ramped; i++) output[i] = (start + step * (float)(i + 1)) * x[i];
                for (int i = ramped; i < frames; i++) output[i] = target * x[i];
            }
            advance(g, frames);
        }
        wrote = 1;
    }
    if (!wrote) {
        for (int i = 0; i < frames; i++) output[i] = 0.0f;
    }
}
