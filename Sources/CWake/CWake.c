#include "CWake.h"

#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

int CWake_make(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

void CWake_signal(int descriptor) {
    uint64_t one = 1;
    (void)!write(descriptor, &one, sizeof one);
}

void CWake_drain(int descriptor) {
    uint64_t count;
    (void)!read(descriptor, &count, sizeof count);
}
