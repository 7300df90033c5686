/* tests/fuzz/fuzz_cluster.c: fmt_parse_cluster on any input. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    fmt_cluster c;
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = fmt_parse_cluster(text, "fuzz.json", &c, &err);
    fuzz_check("fmt_parse_cluster", rc, &err, &c, sizeof c);
    fmt_cluster_free(&c);
    free(text);
    return 0;
}
