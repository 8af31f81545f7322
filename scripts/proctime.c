/* make bench: times any JACK client's process callback from outside, the same way for every
 * mixer measured (duckrouter, jack_mix_box). Preloaded with LD_PRELOAD, it wraps
 * jack_set_process_callback so each cycle's callback is timed on CLOCK_MONOTONIC into a
 * preallocated array (nothing allocates on the process thread). Once a second a thread of its own
 * writes the statistics of the cycles after PROCTIME_SKIP seconds (default 0) to PROCTIME_OUT:
 *     cycles mean_us p99_us max_us
 * Creating the file PROCTIME_OUT.reset starts the statistics afresh (after a warm-up).
 * One client per process (the first that sets a process callback). Bench tool, not shipped. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <jack/jack.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CAPACITY (1 << 20)

static JackProcessCallback real_callback;
static void *real_argument;
static float *durations;              /* µs per cycle */
static atomic_long count;
static atomic_long skipped;
static long base;                      /* writer thread only: first cycle counted */
static double skip_until;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int timed(jack_nframes_t frames, void *argument) {
    (void)argument;
    double start = now();
    int result = real_callback(frames, real_argument);
    double end = now();
    if (start < skip_until) { atomic_fetch_add(&skipped, 1); return result; }
    long n = atomic_load_explicit(&count, memory_order_relaxed);
    if (n < CAPACITY) {
        durations[n] = (float)((end - start) * 1e6);
        atomic_store_explicit(&count, n + 1, memory_order_release);
    }
    return result;
}

static int compare(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static void *writer(void *unused) {
    (void)unused;
    const char *path = getenv("PROCTIME_OUT");
    float *copy = malloc(sizeof(float) * CAPACITY);
    char reset[4096];
    snprintf(reset, sizeof reset, "%s.reset", path ? path : "");
    for (;;) {
        sleep(1);
        long total = atomic_load_explicit(&count, memory_order_acquire);
        if (path && unlink(reset) == 0) { base = total; unlink(path); continue; }
        long n = total - base;
        if (n <= 0 || !path || !copy) continue;
        memcpy(copy, durations + base, sizeof(float) * n);
        qsort(copy, n, sizeof(float), compare);
        double sum = 0;
        for (long i = 0; i < n; i++) sum += copy[i];
        long p99 = (long)(n * 0.99 + 0.999999) - 1;
        if (p99 < 0) p99 = 0;
        char temporary[4096];
        snprintf(temporary, sizeof temporary, "%s.tmp", path);
        FILE *f = fopen(temporary, "w");
        if (!f) continue;
        fprintf(f, "%ld %.2f %.2f %.2f\n", n, sum / n, copy[p99], copy[n - 1]);
        fclose(f);
        rename(temporary, path);
    }
    return NULL;
}

int jack_set_process_callback(jack_client_t *client, JackProcessCallback callback, void *argument) {
    static int (*real)(jack_client_t *, JackProcessCallback, void *);
    if (!real) real = (int (*)(jack_client_t *, JackProcessCallback, void *))dlsym(RTLD_NEXT, "jack_set_process_callback");
    if (real_callback) return real(client, callback, argument);
    real_callback = callback;
    real_argument = argument;
    durations = calloc(CAPACITY, sizeof(float));
    const char *skip = getenv("PROCTIME_SKIP");
    skip_until = now() + (skip ? atof(skip) : 0.0);
    pthread_t thread;
    pthread_create(&thread, NULL, writer, NULL);
    pthread_detach(thread);
    return real(client, timed, NULL);
}
