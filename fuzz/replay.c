/* Runs a libFuzzer target's LLVMFuzzerTestOneInput on files, without
 * libFuzzer: the seed corpus and every saved crash, as a regression test in
 * any build (gcc or clang, sanitizers or not).
 *
 * usage: fuzz_X_replay FILE_OR_DIR...   (prints "name: N passed, 0 failed";
 * a failing input aborts, which fails the test) */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static long ran;

static void run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        exit(1);
    }
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0, n;
    do {
        if (len == cap) buf = realloc(buf, cap = cap ? 2 * cap : 4096);
        n = fread(buf + len, 1, cap - len, f);
        len += n;
    } while (n > 0);
    fclose(f);
    fprintf(stderr, "replay: %s\n", path);
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    ran++;
}

static void run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "replay: %s does not exist\n", path);
        exit(1);
    }
    if (!S_ISDIR(st.st_mode)) {
        run_file(path);
        return;
    }
    struct dirent **names;
    int n = scandir(path, &names, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (names[i]->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, names[i]->d_name);
            run_path(sub);
        }
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        run_path(argv[i]);
    if (ran == 0) {
        fprintf(stderr, "replay: no input files\n");
        return 1;
    }
    printf("%s: %ld passed, 0 failed\n", argv[0], ran);
    return 0;
}
