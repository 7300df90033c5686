/* tests/fuzz/fuzz.h: what the fuzz harnesses share: libFuzzer's entry
 * points, the input as text or as a file, inputs loaded from examples/,
 * and the readers' contract checked on every input (docs/testing.md). */
#ifndef HETPLAN_FUZZ_H
#define HETPLAN_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"
#include "formats.h"

/* Called by libFuzzer or by replay.c: the set-up, once (optional), and
 * one input (every harness). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (it ends at its first NUL byte);
 * malloc'd, the caller frees. */
char *fuzz_text(const uint8_t *data, size_t size);

/* The input written to a file of this process's own temporary folder
 * (removed at exit); the same path on every call. */
const char *fuzz_file(const uint8_t *data, size_t size);

/* examples/NAME loaded; aborts with a message when it cannot be. */
void fuzz_example_cluster(const char *name, fmt_cluster *c);
void fuzz_example_model(const char *name, fmt_model *m);

/* Abort with "fuzz: what: why" on stderr: a finding. */
void fuzz_fail(const char *what, const char *why);

/* A reader's contract: UTIL_OK, or a failure with a message, its code in
 * err and the output left zeroed (out, n bytes; NULL to skip).  Aborts,
 * naming what, when it is broken.  With HETPLAN_FUZZ_VERBOSE set in the
 * environment it prints every verdict on stderr (for writing seeds). */
void fuzz_check(const char *what, int rc, const util_error *err,
                const void *out, size_t n);

/* A name a reader accepted: UTF-8 (RFC 3629: no overlong form, no
 * surrogate, nothing beyond U+10FFFF), so that every JSON written from
 * it is valid.  Aborts, naming what, when it is not. */
void fuzz_check_name(const char *what, const char *name);

#endif
