// Preloaded by `make tsan` (scripts/tsan.sh) only: lets a process built with ThreadSanitizer close
// a JACK client.
//
// libjack stops its threads (the notification thread, the process thread) with asynchronous
// pthread_cancel while they block inside a libc call that TSan intercepts (read, sem_timedwait).
// The interceptor has turned on the thread's "ignore" state for the call; cancellation unwinds
// past the interceptor without ending it, and TSan kills the whole process when the thread
// finishes ("thread T.. finished with ignores enabled"). So every test closing a JACK client died.
//
// This shim turns libjack's cancellation into a signal: each thread that sets its cancel type
// (libjack's threads do, first thing) unblocks SIGNAL; pthread_cancel on such a thread sends it
// SIGNAL instead, and the handler ends the thread with pthread_exit(PTHREAD_CANCELED). TSan runs a
// signal handler with the thread's ignores cleared, so the thread finishes clean, and its
// pthread_join returns as libjack expects. Any other thread, and any process without TSan,
// gets the real pthread_cancel.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SIGNAL (SIGRTMAX - 3)
#define SLOTS 256

// One slot per libjack thread: its id, its kernel id, and `state`: the slot's generation (one
// per registration) times 4 plus RUNNING, ENDING (the thread took the signal and is exiting) or
// CANCELLED (pthread_cancel gave up on the signal and cancels for real). The generation keeps a
// late signal of a thread that is gone from touching the next thread given the same slot.
enum { RUNNING = 0, ENDING = 1, CANCELLED = 2 };
struct slot {
    _Atomic(pthread_t) thread;
    atomic_int tid;
    atomic_uint state;
};
static struct slot slots[SLOTS];
static __thread struct slot *mine;
static __thread unsigned my_generation;

static int tsan_present(void) {
    static int present = -1;
    if (present < 0) present = dlsym(RTLD_DEFAULT, "__tsan_init") != NULL;
    return present;
}

static void end_thread(int sig) {
    (void)sig;
    struct slot *slot = mine;
    if (!slot) return;
    unsigned expected = my_generation * 4 + RUNNING;
    // Too late (pthread_cancel is cancelling for real), or the slot is another thread's now.
    if (!atomic_compare_exchange_strong(&slot->state, &expected, my_generation * 4 + ENDING)) return;
    pthread_exit(PTHREAD_CANCELED);
}

static void install_handler(void) {
    struct sigaction action = {0};
    action.sa_handler = end_thread;
    sigemptyset(&action.sa_mask);
    sigaction(SIGNAL, &action, NULL);
}

static void take_slot(struct slot *slot) {
    atomic_store(&slot->tid, (int)syscall(SYS_gettid));
    my_generation = atomic_load(&slot->state) / 4 + 1;
    atomic_store(&slot->state, my_generation * 4 + RUNNING);
    mine = slot;
}

int pthread_setcanceltype(int type, int *oldtype) {
    static int (*real)(int, int *);
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    if (!real) real = (int (*)(int, int *))dlsym(RTLD_NEXT, "pthread_setcanceltype");
    if (tsan_present() && !mine) {
        pthread_once(&once, install_handler);
        pthread_t self = pthread_self();
        // A thread that ended on its own left its slot; a new thread may have its id.
        for (int i = 0; i < SLOTS && !mine; i++)
            if (atomic_load(&slots[i].thread) == self) take_slot(&slots[i]);
        for (int i = 0; i < SLOTS && !mine; i++) {
            pthread_t free_slot = 0;
            if (atomic_compare_exchange_strong(&slots[i].thread, &free_slot, self)) take_slot(&slots[i]);
        }
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, SIGNAL);
        pthread_sigmask(SIG_UNBLOCK, &set, NULL);
    }
    return real(type, oldtype);
}

// Whether kernel thread `tid` of this process sits in a futex wait (x86_64 syscall 202).
static int in_futex_wait(int tid) {
    char path[64];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
    FILE *file = fopen(path, "r");
    if (!file) return 0;
    long number = -1;
    int read = fscanf(file, "%ld", &number);
    fclose(file);
    return read == 1 && number == SYS_futex;
}

// Whether kernel thread `tid` has exited (libjack's notification thread ends by itself when the
// server goes; it is cancelled later all the same, and can never take a signal).
static int has_exited(int tid) {
    return syscall(SYS_tgkill, getpid(), tid, 0) == -1 && errno == ESRCH;
}

// A thread blocked in an intercepted call (read, sem_timedwait) takes the signal at once: TSan
// runs the handler right there. One running takes it at its next intercepted call. One waiting in
// a raw futex syscall (libjack's process thread between cycles) never does; it is in no
// intercepted call, so it holds no ignores and gets the real cancellation, as does one that has
// already exited.
int pthread_cancel(pthread_t thread) {
    static int (*real)(pthread_t);
    if (!real) real = (int (*)(pthread_t))dlsym(RTLD_NEXT, "pthread_cancel");
    if (tsan_present()) {
        for (int i = 0; i < SLOTS; i++) {
            if (atomic_load(&slots[i].thread) != thread) continue;
            struct slot *slot = &slots[i];
            int tid = atomic_load(&slot->tid);
            unsigned generation = atomic_load(&slot->state) / 4;
            pthread_kill(thread, SIGNAL);
            struct timespec tick = {0, 1000000};
            int futex_seen = 0;
            for (int waited = 0; waited < 5000; waited++) {
                if (atomic_load(&slot->state) % 4 != RUNNING || has_exited(tid)) break;
                if (waited >= 5 && in_futex_wait(tid)) {
                    if (++futex_seen == 3) break;
                } else {
                    futex_seen = 0;
                }
                nanosleep(&tick, NULL);
            }
            unsigned expected = generation * 4 + RUNNING;
            int taken = !atomic_compare_exchange_strong(&slot->state, &expected, generation * 4 + CANCELLED)
                        && expected == generation * 4 + ENDING;
            // The slot is free again once its thread is ending (a new thread may get its id).
            atomic_store(&slot->thread, (pthread_t)0);
            return taken ? 0 : real(thread);
        }
    }
    return real(thread);
}
