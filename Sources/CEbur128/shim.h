#ifndef CEBUR128_SHIM_H
#define CEBUR128_SHIM_H

// libebur128 (Debian libebur128-dev): EBU R 128 / ITU-R BS.1770 loudness, K-weighting included.
#include <ebur128.h>

#endif
