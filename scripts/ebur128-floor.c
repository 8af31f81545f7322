/* The floor of loudness metering (issue 19): libebur128 alone, with nothing around it, metering
 * as many stereo streams as duckrouter's bench does (argv[1], default 72: 64 apps and 8 routes)
 * for argv[2] seconds of 48 kHz audio (default 10), fed in 20 ms pieces as duckrouter's worker
 * feeds it, with the 100 ms block reading duckrouter takes. Prints the CPU it took per second of
 * audio, in ms: what any program metering that much with libebur128 pays on this machine.
 * Build: cc -O2 -o ebur128-floor scripts/ebur128-floor.c -lebur128 -lm */
#include <ebur128.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    int streams = argc > 1 ? atoi(argv[1]) : 72;
    int seconds = argc > 2 ? atoi(argv[2]) : 10;
    const int rate = 48000, piece = 960, block = 4800;
    ebur128_state **states = calloc(streams, sizeof *states);
    for (int s = 0; s < streams; s++) {
        states[s] = ebur128_init(2, rate, EBUR128_MODE_M);
        if (!states[s]) return 1;
    }
    float *frames = malloc(sizeof(float) * 2 * piece);
    double sum = 0;
    struct timespec t0, t1;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
    long done = 0;
    for (long n = 0; n < (long)seconds * rate; n += piece) {
        for (int i = 0; i < piece; i++) frames[2 * i] = frames[2 * i + 1] = 0.1f * sinf(2 * (float)M_PI * 1000 * (float)(n + i) / rate);
        for (int s = 0; s < streams; s++) ebur128_add_frames_float(states[s], frames, piece);
        done += piece;
        if (done % block == 0) {
            for (int s = 0; s < streams; s++) {
                double loudness;
                if (ebur128_loudness_window(states[s], 100, &loudness) == 0) sum += loudness;
            }
        }
    }
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
    double ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
    printf("%d stereo streams, %d s of audio: %.1f ms of CPU per second of audio (%.2f%% of one core), %.2f ns per sample and channel%s\n",
           streams, seconds, ms / seconds, ms / seconds / 10, ms * 1e6 / ((double)seconds * rate * streams * 2), sum == 0 ? "" : "");
    return 0;
}
