/* tests/fuzz/fuzz_strategies.c: fmt_parse_strategies and
 * fmt_parse_strategies_open (evaluate's reader) on any input, against
 * two clusters and models of examples/ (16 GPUs and 30 layers, as in
 * strategies-amp-het.json; 4 GPUs and 27 layers, as in
 * strategies-gpt2-pp4.json). */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static const char *const names[][2] = {
    {"amp-het.json", "gpt2-amp.json"},
    {"h100-node4.json", "gpt2-345m.json"},
};
#define NWORLDS (sizeof names / sizeof names[0])
static fmt_cluster clusters[NWORLDS];
static fmt_model models[NWORLDS];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    size_t i;

    (void)argc;
    (void)argv;
    for (i = 0; i < NWORLDS; i++) {
        fuzz_example_cluster(names[i][0], &clusters[i]);
        fuzz_example_model(names[i][1], &models[i]);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_text(data, size);
    size_t w;

    for (w = 0; w < NWORLDS; w++) {
        fmt_strategy *s = NULL;
        util_error err;
        int rc, n = 0, i;

        memset(&err, 0, sizeof err);
        rc = fmt_parse_strategies(text, "fuzz.json", &clusters[w], &models[w],
                                  models[w].global_batch, &s, &n, &err);
        fuzz_check("fmt_parse_strategies", rc, &err, NULL, 0);
        if (rc != UTIL_OK && (s != NULL || n != 0))
            fuzz_fail("fmt_parse_strategies", "strategies left on failure");
        for (i = 0; i < n; i++)
            fmt_strategy_free(&s[i]);
        free(s);
        /* evaluate's reader: boundaries may be left out; an open strategy
         * holds a valid even split */
        s = NULL;
        n = 0;
        memset(&err, 0, sizeof err);
        rc = fmt_parse_strategies_open(text, "fuzz.json", &clusters[w], &models[w],
                                       models[w].global_batch, &s, &n, &err);
        fuzz_check("fmt_parse_strategies_open", rc, &err, NULL, 0);
        if (rc != UTIL_OK && (s != NULL || n != 0))
            fuzz_fail("fmt_parse_strategies_open", "strategies left on failure");
        for (i = 0; i < n; i++) {
            if (s[i].bounds_open &&
                fmt_strategy_check(&clusters[w], &models[w], &s[i],
                                   models[w].global_batch, &err) != UTIL_OK)
                fuzz_fail("fmt_parse_strategies_open", "open split fails its check");
            fmt_strategy_free(&s[i]);
        }
        free(s);
    }
    free(text);
    return 0;
}
