/* tests/test_commands_inspect.c: planner inspect (docs/cli.md) run as a
 * process, its JSON checked against published figures: parameter totals
 * from the model cards, training FLOPs from Narayanan et al. (SC'21),
 * model-state bytes of mixed-precision Adam, datasheet peaks of the
 * catalogue, and every row of docs/device-catalogue.md's table. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "tp_cli.h"

#define EX HETPLAN_SOURCE_DIR "/examples/"

/* Run planner inspect with args (NULL-terminated, after "inspect"); the
 * JSON of --format json when it exits 0 (caller deletes), else NULL. */
static cJSON *inspect(const char *const *args, tp_run_out *r)
{
    const char *argv[24];
    int n = 0;

    argv[n++] = "inspect";
    for (; *args && n < 21; args++)
        argv[n++] = *args;
    argv[n++] = "--format";
    argv[n++] = "json";
    argv[n] = NULL;
    tp_run(r, argv);
    return r->status == 0 ? cJSON_Parse(r->out) : NULL;
}

/* Member key of o as a string; the test fails when it is not one. */
static const char *str(const cJSON *o, const char *key)
{
    const cJSON *v = tu_get(o, key);

    ck_assert_msg(cJSON_IsString(v), "'%s' is not a string", key);
    return v->valuestring;
}

/* Parameter totals published by the model's authors, and whether the
 * input embedding and the LM head share their weights. */
START_TEST(model_parameters_as_published)
{
    static const struct {
        const char *file;
        double params;      /* published total */
        int tied, kv_heads;
    } cases[] = {
        /* Llama 2 (Touvron et al. 2023; Meta's model cards) */
        {EX "llama2-7b.json", 6738415616.0, 0, 32},
        {EX "llama2-70b.json", 68976648192.0, 0, 8},
        /* Llama 3 8B (Meta's model card) */
        {EX "llama3-8b.json", 8030261248.0, 0, 8},
        /* OPT-1.3B (Zhang et al. 2022; the Hugging Face checkpoint) */
        {EX "opt-1.3b.json", 1315753984.0, 1, 32},
    };
    size_t i;

    for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *args[] = {"--model", cases[i].file, NULL};
        tp_run_out r;
        cJSON *doc = inspect(args, &r), *m;
        ck_assert_msg(doc != NULL, "%s: exit %d: %s", cases[i].file, r.status, r.err);
        m = cJSON_GetObjectItem(doc, "model");
        ck_assert_msg(tu_num(m, "params") == cases[i].params, "%s: %.0f, published %.0f",
                      cases[i].file, tu_num(m, "params"), cases[i].params);
        ck_assert_int_eq(cJSON_IsTrue(cJSON_GetObjectItem(m, "tied_embeddings")),
                         cases[i].tied);
        ck_assert_int_eq((int)tu_num(cJSON_GetObjectItem(m, "shape"), "kv_heads"),
                         cases[i].kv_heads);
        /* the parameters TP leaves whole are a small part: norms, biases of
         * row-parallel layers, learned positions */
        ck_assert(tu_num(m, "params_replicated") > 0.0);
        ck_assert(tu_num(m, "params_replicated") < 0.01 * cases[i].params);
        cJSON_Delete(doc);
        tp_run_free(&r);
    }
}
END_TEST

/* Training FLOPs per sample without recomputation: Narayanan et al.
 * (SC'21) eq. 3 counts 96 B s l h^2 (1 + s / 6h + V / 16 l h) with the
 * recomputed forward; without it, three passes instead of four:
 * 72 s l h^2 (1 + s / 6h + V / 12 l h) per sample.  Layer by layer the
 * table's rows add up to the total. */
START_TEST(training_flops_as_published)
{
    const char *args[] = {"--model", EX "gpt3-xl.json", NULL};
    tp_run_out r;
    cJSON *doc = inspect(args, &r), *m, *l;
    double s = 2048, h = 2048, layers = 24, v = 50257, want, sum = 0.0;
    int rows = 0;

    ck_assert_msg(doc != NULL, "%s", r.err);
    m = cJSON_GetObjectItem(doc, "model");
    want = 72.0 * s * layers * h * h * (1.0 + s / (6.0 * h) + v / (12.0 * layers * h));
    ck_assert_msg(fabs(tu_num(m, "train_flops_per_sample") / want - 1.0) < 1e-12,
                  "%.6g against %.6g", tu_num(m, "train_flops_per_sample"), want);
    cJSON_ArrayForEach(l, cJSON_GetObjectItem(m, "layers")) {
        sum += 3.0 * tu_num(l, "fwd_flops") * tu_num(l, "count");
        rows++;
    }
    ck_assert(fabs(sum / want - 1.0) < 1e-12);
    /* embedding, the 24 blocks in one row, final norm, head */
    ck_assert_int_eq(rows, 4);
    ck_assert(tu_num(m, "layers_total") == 27);
    ck_assert(tu_num(m, "layers_not_listed") == 0);
    cJSON_Delete(doc);
    tp_run_free(&r);
}
END_TEST

/* Model state per parameter (Rajbhandari et al. 2020, ZeRO, sec. 3.1:
 * mixed-precision Adam keeps 2 + 2 + 12 bytes, fp16's fp32 gradient copy
 * only in Megatron-LM's optimizer step, not resident (a transformer
 * shorthand, docs/memory-model.md); bf16 accumulates gradients in fp32;
 * fp32 training keeps 4 + 4 + 8).  --precision overrides the model's. */
START_TEST(state_bytes_by_precision)
{
    static const struct {
        const char *prec;
        double w, g, o;
    } cases[] = {{"fp16", 2, 2, 12}, {"bf16", 2, 4, 12}, {"fp32", 4, 4, 8}};
    size_t i;

    for (i = 0; i < 3; i++) {
        const char *args[] = {"--model", EX "gpt2-medium.json", "--precision",
                              cases[i].prec, NULL};
        tp_run_out r;
        cJSON *doc = inspect(args, &r), *m;
        ck_assert_msg(doc != NULL, "%s", r.err);
        m = cJSON_GetObjectItem(doc, "model");
        ck_assert_str_eq(str(m, "precision"), cases[i].prec);
        ck_assert(tu_num(m, "weight_bytes_per_param") == cases[i].w);
        ck_assert(tu_num(m, "grad_bytes_per_param") == cases[i].g);
        ck_assert(tu_num(m, "optimizer_bytes_per_param") == cases[i].o);
        ck_assert(tu_num(m, "state_bytes_per_param") == cases[i].w + cases[i].g + cases[i].o);
        cJSON_Delete(doc);
        tp_run_free(&r);
    }
}
END_TEST

/* Device names as nvidia-smi prints them resolve to catalogue entries
 * with their datasheet peaks (NVIDIA V100, H100 SXM5, RTX 4090 and T4
 * datasheets); bf16 is not among the precisions of Volta and Turing. */
START_TEST(devices_resolve_to_datasheets)
{
    const char *args[] = {"--device", "Tesla V100-SXM2-16GB", "--device",
                          "NVIDIA H100 80GB HBM3", "--device", "NVIDIA GeForce RTX 4090",
                          "--device", "Tesla T4", NULL};
    static const struct {
        const char *name;
        double fp16, fp32, bw;
        int bf16;
    } want[] = {{"V100", 125, 15.7, 900, 0}, {"H100-SXM", 989.5, 67, 3350, 1},
                {"RTX4090", 165.2, 82.6, 1008, 1}, {"T4", 65, 8.1, 320, 0}};
    tp_run_out r;
    cJSON *doc = inspect(args, &r), *d, *p;
    int i = 0;

    ck_assert_msg(doc != NULL, "%s", r.err);
    cJSON_ArrayForEach(d, cJSON_GetObjectItem(doc, "devices")) {
        int bf16 = 0;
        ck_assert_int_lt(i, 4);
        ck_assert_str_eq(str(d, "name"), want[i].name);
        ck_assert_str_eq(str(d, "query"), args[2 * i + 1]);
        ck_assert(fabs(tu_num(d, "tflops_fp16") - want[i].fp16) < 1e-9);
        ck_assert(fabs(tu_num(d, "tflops_fp32") - want[i].fp32) < 1e-9);
        ck_assert(fabs(tu_num(d, "bandwidth_gbs") - want[i].bw) < 1e-9);
        cJSON_ArrayForEach(p, cJSON_GetObjectItem(d, "precisions"))
            bf16 |= strcmp(p->valuestring, "bf16") == 0;
        ck_assert_int_eq(bf16, want[i].bf16);
        i++;
    }
    ck_assert_int_eq(i, 4);
    cJSON_Delete(doc);
    tp_run_free(&r);
}
END_TEST

/* Every row of docs/device-catalogue.md's table says what the catalogue
 * holds, and the catalogue has no entry the table leaves out. */
START_TEST(catalogue_matches_its_docs)
{
    const char *args[] = {"--catalogue", NULL};
    char *doc = tu_slurp(HETPLAN_SOURCE_DIR "/docs/device-catalogue.md"), *line;
    tp_run_out r;
    cJSON *js = inspect(args, &r), *cat, *e;
    int rows = 0;

    ck_assert_ptr_nonnull(doc);
    ck_assert_msg(js != NULL, "%s", r.err);
    cat = cJSON_GetObjectItem(js, "catalogue");
    for (line = strstr(doc, "\n| "); line != NULL; line = strstr(line + 1, "\n| ")) {
        char name[64];
        double mem, f32, t32, f16, b16, bw;
        int found = 0;
        if (sscanf(line, "\n| %63[^ |] | %lf | %lf | %lf | %lf | %lf | %lf |", name,
                   &mem, &f32, &t32, &f16, &b16, &bw) != 7)
            continue; /* a header, or another table */
        cJSON_ArrayForEach(e, cat) {
            if (strcmp(str(e, "name"), name) != 0)
                continue;
            found = 1;
            ck_assert_msg(fabs(tu_num(e, "memory_gib") - mem) < 0.005 &&
                              fabs(tu_num(e, "tflops_fp32") - f32) < 1e-9 &&
                              fabs(tu_num(e, "tflops_tf32") - t32) < 1e-9 &&
                              fabs(tu_num(e, "tflops_fp16") - f16) < 1e-9 &&
                              fabs(tu_num(e, "tflops_bf16") - b16) < 1e-9 &&
                              fabs(tu_num(e, "bandwidth_gbs") - bw) < 1e-9,
                          "docs/device-catalogue.md's row of '%s' differs from the "
                          "catalogue", name);
        }
        ck_assert_msg(found, "'%s' of docs/device-catalogue.md is not in the "
                             "catalogue", name);
        rows++;
    }
    ck_assert_int_eq(rows, cJSON_GetArraySize(cat));
    ck_assert_int_ge(rows, 20);
    free(doc);
    cJSON_Delete(js);
    tp_run_free(&r);
}
END_TEST

/* A bf16 model on Volta and Turing: neither type trains it and a plan
 * falls back to fp16 (as planner plan does, with its note). */
START_TEST(cluster_and_precision)
{
    const char *args[] = {"--cluster", EX "amp-het.json", "--model",
                          EX "llama2-7b.json", NULL};
    tp_run_out r;
    cJSON *doc = inspect(args, &r), *c, *t;
    int n = 0;

    ck_assert_msg(doc != NULL, "%s", r.err);
    c = cJSON_GetObjectItem(doc, "cluster");
    ck_assert(tu_num(c, "gpus") == 16);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "nodes")), 4);
    ck_assert_str_eq(str(c, "plan_precision"), "fp16");
    cJSON_ArrayForEach(t, cJSON_GetObjectItem(c, "device_types")) {
        ck_assert_str_eq(str(t, "source"), "catalogue");
        ck_assert(cJSON_IsFalse(cJSON_GetObjectItem(t, "trains_model")));
        n++;
    }
    ck_assert_int_eq(n, 2);
    cJSON_Delete(doc);
    tp_run_free(&r);
    /* the table says so too */
    {
        const char *targs[] = {"inspect", "--cluster", EX "amp-het.json", "--model",
                               EX "llama2-7b.json", NULL};
        tp_run(&r, targs);
        ck_assert_int_eq(r.status, 0);
        ck_assert_msg(strstr(r.out, "plan trains in fp16 here: no device type trains "
                                    "in bf16") != NULL, "%s", r.out);
        ck_assert_ptr_nonnull(strstr(r.out, "6738415616"));
        tp_run_free(&r);
    }
}
END_TEST

/* Mistakes: exit 2 on the command line (an unknown device names the
 * nearest entry), exit 3 with the file for a bad input, and --output
 * writes the JSON document. */
START_TEST(errors_and_output)
{
    const char *none[] = {"inspect", NULL};
    const char *typo[] = {"inspect", "--device", "RTX 4909", NULL};
    const char *both[] = {"inspect", "--device", "T4", "--catalogue", NULL};
    const char *prec[] = {"inspect", "--precision", "bf16", NULL};
    const char *badp[] = {"inspect", "--model", EX "gpt2-medium.json", "--precision",
                          "fp8", NULL};
    const char *bad[] = {"inspect", "--model", "bad.json", NULL};
    const char *out[] = {"inspect", "--device", "a100", "--output", "d.json",
                         "--quiet", NULL};
    tp_run_out r;
    char *text;
    cJSON *doc;

    tp_run(&r, none);
    ck_assert_int_eq(r.status, 2);
    ck_assert_ptr_nonnull(strstr(r.err, "nothing to inspect"));
    tp_run_free(&r);
    tp_run(&r, typo);
    ck_assert_int_eq(r.status, 2);
    ck_assert_msg(strstr(r.err, "no device 'RTX 4909', did you mean 'RTX4090'?") != NULL,
                  "%s", r.err);
    tp_run_free(&r);
    tp_run(&r, both);
    ck_assert_int_eq(r.status, 2);
    tp_run_free(&r);
    tp_run(&r, prec);
    ck_assert_int_eq(r.status, 2);
    tp_run_free(&r);
    tp_run(&r, badp);
    ck_assert_int_eq(r.status, 2);
    tp_run_free(&r);
    tp_write("bad.json", "{\"name\": \"x\", \"transformer\": {\"layers\": 2, \"hidden\": -8, "
                         "\"heads\": 1, \"seq\": 8, \"vocab\": 8}}");
    tp_run(&r, bad);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "bad.json") != NULL && strstr(r.err, "hidden") != NULL,
                  "%s", r.err);
    tp_run_free(&r);
    tp_run(&r, out);
    ck_assert_int_eq(r.status, 0);
    ck_assert_str_eq(r.out, "");
    text = tp_read("d.json");
    ck_assert_ptr_nonnull(text);
    doc = cJSON_Parse(text);
    ck_assert_ptr_nonnull(doc);
    ck_assert_str_eq(str(cJSON_GetArrayItem(cJSON_GetObjectItem(doc, "devices"), 0),
                         "name"), "A100-40GB");
    cJSON_Delete(doc);
    free(text);
    tp_run_free(&r);
}
END_TEST

/* training.framework: what it made the planner assume, each with its
 * reason, and the stored bytes of a block by hand (fp32, h 1024, a 16,
 * s 1024, sbh = 2^20: 18 replicated + 48 sharded + softmax output and
 * input 2 x 4as^2 = 128, 194 sbh); none named prints none. */
START_TEST(framework_assumed)
{
    const char *fw[] = {"--model", "fw.json", NULL};
    const char *text[] = {"inspect", "--model", "fw.json", NULL};
    const char *plain[] = {"--model", "plain.json", NULL};
    const char *bad[] = {"inspect", "--model", "badfw.json", NULL};
    const char *shape = "\"transformer\": {\"layers\": 2, \"hidden\": 1024, "
                        "\"heads\": 16, \"seq\": 1024, \"vocab\": 50304}}";
    char buf[512];
    tp_run_out r;
    cJSON *doc;
    const cJSON *m, *f;

    snprintf(buf, sizeof buf, "{\"name\": \"x\", \"training\": {\"precision\": "
             "\"fp32\", \"framework\": \"pytorch-1.10\"}, %s", shape);
    tp_write("fw.json", buf);
    snprintf(buf, sizeof buf, "{\"name\": \"x\", \"training\": {\"precision\": "
             "\"fp32\"}, %s", shape);
    tp_write("plain.json", buf);
    snprintf(buf, sizeof buf, "{\"name\": \"x\", \"training\": {\"framework\": "
             "\"pytorch-1.10.2\"}, %s", shape);
    tp_write("badfw.json", buf);
    doc = inspect(fw, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    m = tu_get(doc, "model");
    f = tu_get(m, "framework");
    ck_assert_str_eq(str(f, "name"), "pytorch-1.10");
    ck_assert_msg(strncmp(str(f, "tf32"), "on (torch.backends.cuda.matmul.allow_tf32",
                          41) == 0, "%s", str(f, "tf32"));
    ck_assert_ptr_nonnull(strstr(str(f, "attention_memory"), "softmax input and output"));
    ck_assert_ptr_nonnull(strstr(str(f, "loss_softmax"), "F.cross_entropy"));
    ck_assert_ptr_nonnull(strstr(str(f, "launch"), "eager"));
    ck_assert_double_eq(tu_get(cJSON_GetArrayItem(tu_get(m, "layers"), 1),
                               "stored_bytes")->valuedouble,
                        194.0 * 1024.0 * 1024.0);
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_run(&r, text);
    ck_assert_int_eq(r.status, 0);
    ck_assert_ptr_nonnull(strstr(r.out, "  framework      pytorch-1.10\n"));
    tp_run_free(&r);
    doc = inspect(plain, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    ck_assert_ptr_null(cJSON_GetObjectItem(tu_get(doc, "model"), "framework"));
    cJSON_Delete(doc);
    tp_run_free(&r);
    tp_run(&r, bad);
    ck_assert_int_eq(r.status, 3);
    ck_assert_msg(strstr(r.err, "training.framework") != NULL &&
                  strstr(r.err, "'pytorch-1.13'") != NULL, "%s", r.err);
    tp_run_free(&r);
}
END_TEST

/* --time-limit is checked once, after the inputs are read: a limit that
 * has passed cuts nothing, says so (exit 7, "status"), a year changes
 * nothing. */
START_TEST(time_limit_cuts_nothing)
{
    const char *tiny[] = {"--model", EX "llama2-7b.json", "--time-limit", "1e-9", NULL};
    const char *year[] = {"--model", EX "llama2-7b.json", "--time-limit", "31536000",
                          NULL};
    tp_run_out r, y;
    cJSON *a, *b;

    inspect(tiny, &r);
    ck_assert_int_eq(r.status, 7);
    ck_assert_ptr_nonnull(strstr(r.err, "nothing was cut"));
    a = cJSON_Parse(r.out);
    ck_assert_ptr_nonnull(a);
    b = inspect(year, &y);
    ck_assert_ptr_nonnull(b);
    ck_assert_str_eq(str(a, "status"), "time-limit");
    ck_assert_str_eq(str(b, "status"), "complete");
    ck_assert(cJSON_Compare(cJSON_GetObjectItem(a, "model"),
                            cJSON_GetObjectItem(b, "model"), 1));
    cJSON_Delete(a);
    cJSON_Delete(b);
    tp_run_free(&r);
    tp_run_free(&y);
}
END_TEST

/* A layer list longer than the table: at most 16,384 rows, the rest
 * counted (docs/limits.md). */
START_TEST(long_layer_lists_are_cut)
{
    const char *args[] = {"--model", "long.json", NULL};
    util_buf b;
    tp_run_out r;
    cJSON *doc, *m;
    int i;

    memset(&b, 0, sizeof b);
    util_buf_printf(&b, "{\"name\": \"long\", \"layers\": [");
    for (i = 0; i < 20000; i++) /* every layer differs from its neighbours */
        util_buf_printf(&b, "%s{\"name\": \"l%d\", \"kind\": \"generic\", \"params\": %d, \"fwd_flops\": 1, "
                            "\"act_bytes\": 4, \"out_bytes\": 4}", i ? ", " : "", i, i + 1);
    util_buf_printf(&b, "]}");
    ck_assert(!b.failed);
    tp_write("long.json", b.p);
    free(b.p);
    doc = inspect(args, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    m = cJSON_GetObjectItem(doc, "model");
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(m, "layers")), 16384);
    ck_assert(tu_num(m, "layers_not_listed") == 20000 - 16384);
    /* the parameters count every layer: 1 + 2 + ... + 20000 */
    ck_assert(tu_num(m, "params") == 20000.0 * 20001.0 / 2.0);
    cJSON_Delete(doc);
    tp_run_free(&r);
}
END_TEST

/* A layer list's stated GEMMs: counted per row; two neighbours with the
 * same fields but their own GEMM lists are two rows, a repeated entry
 * one. */
START_TEST(stated_gemms_counted)
{
    const char *args[] = {"--model", "gemms.json", NULL};
    tp_run_out r;
    cJSON *doc, *rows;

    tp_write("gemms.json",
             "{\"name\": \"g\", \"layers\": ["
             "{\"name\": \"a\", \"kind\": \"generic\", \"repeat\": 3, \"params\": 0,"
             " \"fwd_flops\": 1e9, \"out_bytes\": 4, \"act_bytes\": 4,"
             " \"gemms\": [{\"m\": 8, \"n\": 8, \"k\": 8}, {\"m\": 4, \"n\": 4, \"k\": 4}]},"
             "{\"name\": \"b\", \"kind\": \"generic\", \"params\": 0,"
             " \"fwd_flops\": 1e9, \"out_bytes\": 4, \"act_bytes\": 4,"
             " \"gemms\": [{\"m\": 8, \"n\": 8, \"k\": 8}]},"
             "{\"name\": \"c\", \"kind\": \"generic\", \"params\": 0,"
             " \"fwd_flops\": 1e9, \"out_bytes\": 4, \"act_bytes\": 4}]}");
    doc = inspect(args, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    rows = cJSON_GetObjectItem(cJSON_GetObjectItem(doc, "model"), "layers");
    ck_assert_int_eq(cJSON_GetArraySize(rows), 3);
    ck_assert(tu_num(cJSON_GetArrayItem(rows, 0), "count") == 3);
    ck_assert(tu_num(cJSON_GetArrayItem(rows, 0), "gemms") == 2);
    ck_assert(tu_num(cJSON_GetArrayItem(rows, 1), "gemms") == 1);
    ck_assert_ptr_null(cJSON_GetObjectItem(cJSON_GetArrayItem(rows, 2), "gemms"));
    cJSON_Delete(doc);
    tp_run_free(&r);
}
END_TEST

/* The stated links of a cluster, and a cluster with more nodes than the
 * table lists. */
START_TEST(links_and_long_clusters)
{
    const char *mixed[] = {"--cluster", EX "mixed-generations.json", NULL};
    const char *big[] = {"--cluster", "big.json", NULL};
    tp_run_out r;
    cJSON *doc, *c, *l;

    doc = inspect(mixed, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    c = cJSON_GetObjectItem(doc, "cluster");
    /* examples/mixed-generations.json: 10 Gbit/s and 30 ms between h100-0
     * and v100-0 */
    ck_assert(tu_num(c, "links_total") == 1);
    l = cJSON_GetArrayItem(cJSON_GetObjectItem(c, "links"), 0);
    ck_assert_str_eq(str(l, "a"), "h100-0");
    ck_assert_str_eq(str(l, "b"), "v100-0");
    ck_assert(fabs(tu_num(l, "gbps") - 10.0) < 1e-9);
    ck_assert(fabs(tu_num(l, "latency_us") - 30000.0) < 1e-6);
    ck_assert(tu_num(c, "gpus") == 42);
    cJSON_Delete(doc);
    tp_run_free(&r);

    tp_write("big.json", "{\"nodes\": [{\"name\": \"n\", \"count\": 20000, "
                         "\"device\": \"T4\", \"gpus\": 1, \"intra_gbps\": 50, "
                         "\"nic_gbps\": 50}]}");
    doc = inspect(big, &r);
    ck_assert_msg(doc != NULL, "%s", r.err);
    c = cJSON_GetObjectItem(doc, "cluster");
    ck_assert(tu_num(c, "nodes_total") == 20000);
    ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItem(c, "nodes")), 16384);
    ck_assert(tu_num(c, "rows_not_listed") == 20000 - 16384);
    cJSON_Delete(doc);
    tp_run_free(&r);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("inspect");
    TCase *tc = tcase_create("inspect");

    tcase_set_timeout(tc, 120);
    tcase_add_checked_fixture(tc, tp_setup, tp_teardown);
    tcase_add_test(tc, model_parameters_as_published);
    tcase_add_test(tc, training_flops_as_published);
    tcase_add_test(tc, state_bytes_by_precision);
    tcase_add_test(tc, devices_resolve_to_datasheets);
    tcase_add_test(tc, catalogue_matches_its_docs);
    tcase_add_test(tc, cluster_and_precision);
    tcase_add_test(tc, errors_and_output);
    tcase_add_test(tc, framework_assumed);
    tcase_add_test(tc, time_limit_cuts_nothing);
    tcase_add_test(tc, long_layer_lists_are_cut);
    tcase_add_test(tc, stated_gemms_counted);
    tcase_add_test(tc, links_and_long_clusters);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(plain_suite());
}
