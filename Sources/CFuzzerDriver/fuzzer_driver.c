#include "fuzzer_driver.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int replay_file(const char *path, int (*callback)(const uint8_t *, size_t)) {
    FILE *file = fopen(path, "rb");
    if (!file) { fprintf(stderr, "cannot open %s\n", path); return 1; }
    fseek(file, 0, SEEK_END);
    long size = ftell(file);
    fseek(file, 0, SEEK_SET);
    uint8_t *data = malloc(size > 0 ? (size_t)size : 1);
    size_t got = fread(data, 1, (size_t)size, file);
    fclose(file);
    callback(data, got);
    free(data);
    return 0;
}

/// Replays every file named (a folder: every file in it), once. The real libFuzzer, linked with
/// -sanitize=fuzzer, replaces this definition.
__attribute__((weak)) int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *, size_t)) {
    int replayed = 0;
    for (int i = 1; i < *argc; i++) {
        const char *path = (*argv)[i];
        if (path[0] == '-') continue;   /* libFuzzer options mean nothing here */
        struct stat info;
        if (stat(path, &info) != 0) { fprintf(stderr, "cannot read %s\n", path); return 1; }
        if (S_ISDIR(info.st_mode)) {
            DIR *dir = opendir(path);
            struct dirent *entry;
            while (dir && (entry = readdir(dir))) {
                if (entry->d_name[0] == '.') continue;
                char full[4096];
                snprintf(full, sizeof full, "%s/%s", path, entry->d_name);
                if (replay_file(full, callback) == 0) replayed++;
            }
            if (dir) closedir(dir);
        } else if (replay_file(path, callback) == 0) {
            replayed++;
        }
    }
    fprintf(stderr, "replayed %d inputs without libFuzzer (build with -sanitize=fuzzer to fuzz)\n", replayed);
    return 0;
}
