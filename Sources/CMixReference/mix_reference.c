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
            const int end = g->remaining < frames ? g->remaining : frames;
            const float start = g->current, step = g->step, target = g->target;
            const int remaining = g->remaining;
            for (int i = 0; i < end; i++) {
                const float gain = (i + 1 >= remaining) ? target : start + step * (float)(i + 1);
                output[i] = (wrote ? output[i] : 0.0f) + gain * x[i];
            }
            for (int i = end; i < frames; i++) {
                output[i] = (wrote ? output[i] : 0.0f) + target * x[i];
            }
            advance(g, frames);
        }
        wrote = 1;
    }
    if (!wrote) {
        for (int i = 0; i < frames; i++) output[i] = 0.0f;
    }
}
