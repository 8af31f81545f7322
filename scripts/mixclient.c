/*
 * mixclient: the plain C JACK client duckrouter's whole process is measured against (issue 21,
 * make bench part "process"). As plain as a mixer can be and still do duckrouter's job for N
 * ambient apps: N stereo inputs, each with a gain that ramps linearly per sample to its target
 * (20 ms, duckrouter's default), summed into the current one of R stereo outputs; the other
 * outputs are written silent, as duckrouter's routes that play nothing are. One thread of its
 * own (JACK's process thread) besides libjack's; no control side, no timers, no meters.
 *
 *   mixclient NAME APPS ROUTES [SOURCE_L SOURCE_R]
 *
 * Connects every input to SOURCE_L/SOURCE_R when given (the bench's feeder), and each output
 * pair to system:playback_1/2. Runs until SIGINT or SIGTERM. Every input's target gain is set
 * once at start (from 0 to 1, so the ramps run once); after that the steady path is taken.
 *
 *   gcc -O2 -o mixclient scripts/mixclient.c -ljack
 */
#include <jack/jack.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    jack_port_t *left, *right;
    float gain;        /* now */
    float target;      /* where the ramp goes */
    float step;        /* per sample, while ramping */
} input_t;

static jack_client_t *client;
static input_t *inputs;
static jack_port_t **outputs;   /* 2 per route */
static int input_count, route_count;
static const int current_route = 0;
static volatile sig_atomic_t stop_requested;

static int process(jack_nframes_t frames, void *unused) {
    (void)unused;
    float *out_left = jack_port_get_buffer(outputs[2 * current_route], frames);
    float *out_right = jack_port_get_buffer(outputs[2 * current_route + 1], frames);
    memset(out_left, 0, frames * sizeof(float));
    memset(out_right, 0, frames * sizeof(float));
    for (int r = 0; r < route_count; r++) {
        if (r == current_route) continue;
        memset(jack_port_get_buffer(outputs[2 * r], frames), 0, frames * sizeof(float));
        memset(jack_port_get_buffer(outputs[2 * r + 1], frames), 0, frames * sizeof(float));
    }
    for (int i = 0; i < input_count; i++) {
        input_t *in = &inputs[i];
        const float *left = jack_port_get_buffer(in->left, frames);
        const float *right = jack_port_get_buffer(in->right, frames);
        if (in->gain == in->target) {
            const float g = in->gain;
            for (jack_nframes_t k = 0; k < frames; k++) {
                out_left[k] += g * left[k];
                out_right[k] += g * right[k];
            }
        } else {
            float g = in->gain;
            for (jack_nframes_t k = 0; k < frames; k++) {
                if ((in->step > 0 && g < in->target) || (in->step < 0 && g > in->target)) {
                    g += in->step;
                    if ((in->step > 0 && g > in->target) || (in->step < 0 && g < in->target)) g = in->target;
                }
                out_left[k] += g * left[k];
                out_right[k] += g * right[k];
            }
            in->gain = g;
        }
    }
    return 0;
}

static void on_signal(int number) { (void)number; stop_requested = 1; }

int main(int argc, char **argv) {
    if (argc != 4 && argc != 6) {
        fprintf(stderr, "usage: %s NAME APPS ROUTES [SOURCE_L SOURCE_R]\n", argv[0]);
        return 64;
    }
    input_count = atoi(argv[2]);
    route_count = atoi(argv[3]);
    if (input_count < 1 || route_count < 1) {
        fprintf(stderr, "mixclient: APPS and ROUTES must be at least 1\n");
        return 64;
    }
    jack_status_t status;
    client = jack_client_open(argv[1], JackNoStartServer, &status);
    if (!client) {
        fprintf(stderr, "mixclient: no JACK server (status 0x%x)\n", status);
        return 1;
    }
    const float ramp_samples = 0.020f * (float)jack_get_sample_rate(client);
    inputs = calloc((size_t)input_count, sizeof(input_t));
    outputs = calloc((size_t)route_count * 2, sizeof(jack_port_t *));
    char name[64];
    for (int i = 0; i < input_count; i++) {
        snprintf(name, sizeof name, "app%03d_in_1", i + 1);
        inputs[i].left = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        snprintf(name, sizeof name, "app%03d_in_2", i + 1);
        inputs[i].right = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
        inputs[i].gain = 0;
        inputs[i].target = 1;
        inputs[i].step = 1.0f / ramp_samples;
        if (!inputs[i].left || !inputs[i].right) { fprintf(stderr, "mixclient: port registration failed\n"); return 1; }
    }
    for (int r = 0; r < route_count; r++) {
        for (int c = 0; c < 2; c++) {
            snprintf(name, sizeof name, "route%d_out_%d", r + 1, c + 1);
            outputs[2 * r + c] = jack_port_register(client, name, JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
            if (!outputs[2 * r + c]) { fprintf(stderr, "mixclient: port registration failed\n"); return 1; }
        }
    }
    jack_set_process_callback(client, process, NULL);
    if (jack_activate(client)) { fprintf(stderr, "mixclient: cannot activate\n"); return 1; }
    for (int r = 0; r < route_count; r++) {
        jack_connect(client, jack_port_name(outputs[2 * r]), "system:playback_1");
        jack_connect(client, jack_port_name(outputs[2 * r + 1]), "system:playback_2");
    }
    if (argc == 6) {
        for (int i = 0; i < input_count; i++) {
            jack_connect(client, argv[4], jack_port_name(inputs[i].left));
            jack_connect(client, argv[5], jack_port_name(inputs[i].right));
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    while (!stop_requested) pause();
    jack_client_close(client);
    return 0;
}
