/* tests/fuzz/fuzz_dtfm.c: dtfm_parse (DT-FM scenario files) on any input,
 * with the default options and again with a model and per-device compute
 * times (examples/gpt3-xl.json). */
#include <stdlib.h>
#include <string.h>

#include "decentral.h"
#include "fuzz.h"

static fmt_model model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    fuzz_example_model("gpt3-xl.json", &model);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    int k;

    for (k = 0; k < 2; k++) {
        dtfm_options o;
        dtfm_input in;
        util_error err;
        int rc;

        dtfm_options_init(&o);
        if (k == 1) {
            o.model = &model;
            o.compute = 1;
        }
        memset(&err, 0, sizeof err);
        rc = dtfm_parse(text, "fuzz.json", &o, &in, &err);
        fuzz_check("dtfm_parse", rc, &err, &in, sizeof in);
        dtfm_input_free(&in);
    }
    free(text);
    return 0;
}
