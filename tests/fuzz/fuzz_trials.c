/* tests/fuzz/fuzz_trials.c: fmt_load_trials on any input (written to a
 * file: the reader takes a path), read both as a trials file and as one
 * of AMP's experiment logs, against examples/amp-het.json and
 * gpt2-amp.json. */
#include <string.h>

#include "fuzz.h"

static fmt_cluster cluster;
static fmt_model model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_example_cluster("amp-het.json", &cluster);
    fuzz_example_model("gpt2-amp.json", &model);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    int amp;

    for (amp = 0; amp < 2; amp++) {
        fmt_trial_set ts;
        util_error err;
        int rc;

        memset(&err, 0, sizeof err);
        rc = fmt_load_trials(path, amp, &cluster, &model, 0, &ts, &err);
        fuzz_check("fmt_load_trials", rc, &err, &ts, sizeof ts);
        fmt_trial_set_free(&ts);
    }
    return 0;
}
