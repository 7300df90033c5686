/* tests/fuzz/fuzz_profile.c: fmt_parse_profile on any input, read against
 * a four-layer model (embedding, two transformer blocks, head); its seeds
 * include calibrated profiles, so it also covers the "calibration" reader. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static const char model_text[] =
    "{\"name\": \"tiny\", \"training\": {\"global_batch\": 16}, \"layers\": ["
    " {\"name\": \"emb\", \"kind\": \"embedding\", \"params\": 1000000,"
    "  \"fwd_flops\": 0, \"out_bytes\": 4096, \"act_bytes\": 0},"
    " {\"name\": \"blk\", \"kind\": \"transformer\", \"params\": 5000000,"
    "  \"fwd_flops\": 1e10, \"out_bytes\": 4096, \"act_bytes\": 65536, \"repeat\": 2},"
    " {\"name\": \"head\", \"kind\": \"head\", \"params\": 1000000,"
    "  \"fwd_flops\": 1e9, \"out_bytes\": 4096, \"act_bytes\": 65536}]}";

static fmt_model model;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    util_error err;

    (void)argc;
    (void)argv;
    if (fmt_parse_model(model_text, "tiny", &model, &err) != UTIL_OK)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    fmt_profile p;
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = fmt_parse_profile(text, "fuzz.json", &model, &p, &err);
    fuzz_check("fmt_parse_profile", rc, &err, &p, sizeof p);
    fmt_profile_free(&p);
    free(text);
    return 0;
}
