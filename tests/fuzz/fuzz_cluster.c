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
    if (rc == UTIL_OK) { /* names reach plans and scripts */
        int i;
        fuzz_check_name("fmt_parse_cluster: name", c.name);
        for (i = 0; i < c.nnodes; i++) {
            fuzz_check_name("fmt_parse_cluster: nodes[].name", c.nodes[i].name);
            fuzz_check_name("fmt_parse_cluster: nodes[].region", c.nodes[i].region);
        }
        for (i = 0; i < c.ntypes; i++)
            fuzz_check_name("fmt_parse_cluster: device type", c.types[i].name);
    }
    fmt_cluster_free(&c);
    free(text);
    return 0;
}
