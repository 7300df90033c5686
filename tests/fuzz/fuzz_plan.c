/* tests/fuzz/fuzz_plan.c: plan_load_plan on any input (written to a file:
 * the reader takes a path).  The harness works in the source folder, so
 * that the inputs a plan names ("examples/amp-het.json") are found and
 * loaded too. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    if (chdir(HETPLAN_SOURCE_DIR) != 0)
        fuzz_fail("chdir", HETPLAN_SOURCE_DIR);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size);
    plan_doc d;
    util_error err;
    int rc;

    memset(&err, 0, sizeof err);
    rc = plan_load_plan(path, &d, &err);
    fuzz_check("plan_load_plan", rc, &err, NULL, 0);
    if (rc != UTIL_OK && (d.n != 0 || d.s != NULL || d.cluster.ndevices != 0))
        fuzz_fail("plan_load_plan", "plan not emptied on failure");
    plan_doc_free(&d);
    return 0;
}
