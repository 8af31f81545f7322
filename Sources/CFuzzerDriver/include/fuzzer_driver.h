#ifndef CFUZZER_DRIVER_H
#define CFUZZER_DRIVER_H

#include <stddef.h>
#include <stdint.h>

/// libFuzzer's entry point when the program has its own main (swift build -Xswiftc
/// -sanitize=fuzzer). Without libFuzzer, a weak fallback in fuzzer_driver.c replays the files
/// and folders named on the command line once each, so the same executable checks a corpus.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
