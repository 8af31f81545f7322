#ifndef CWAKE_H
#define CWAKE_H

/// A wake-up one thread gives another through a Linux eventfd: the audio thread signals, the
/// control side watches the descriptor (a dispatch read source) and drains it.
///
/// Signalling is one write(2) to a non-blocking eventfd: async-signal-safe, no lock in user space,
/// in the kernel the eventfd's wait-queue lock and the wake-up of its watcher (a spinlock on a
/// stock kernel, so it never sleeps, unlike a pipe's mutex; on PREEMPT_RT a lock with priority
/// inheritance that may make it wait a moment). The engine signals at most once per sleep of the
/// control side (a quiet-to-loud change), never per cycle.

/// A non-blocking, close-on-exec eventfd, or -1 (errno set).
int CWake_make(void);

/// Adds one to the eventfd's counter, waking whoever watches it. Never blocks.
void CWake_signal(int descriptor);

/// Reads the counter back to zero, if anything was signalled. Never blocks.
void CWake_drain(int descriptor);

#endif
