/* tests/fuzz/fuzz_model.c: fmt_parse_model on any input, then every
 * precision applied to a model that parsed. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    fmt_model m;
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = fmt_parse_model(text, "fuzz.json", &m, &err);
    fuzz_check("fmt_parse_model", rc, &err, &m, sizeof m);
    if (rc == UTIL_OK) {
        const char *const prec[] = {"fp32", "bf16", "fp16"};
        size_t i;
        int l;
        fuzz_check_name("fmt_parse_model: name", m.name); /* reach plans */
        for (l = 0; l < m.nlayers; l++)
            fuzz_check_name("fmt_parse_model: layers[].name", m.layers[l].name);
        for (i = 0; i < sizeof prec / sizeof prec[0]; i++) {
            rc = fmt_model_set_precision(&m, fmt_precision_from_name(prec[i]), &err);
            fuzz_check("fmt_model_set_precision", rc, &err, NULL, 0);
        }
    }
    fmt_model_free(&m);
    free(text);
    return 0;
}
