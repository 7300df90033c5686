/* bench/layer_analytic.c: the analytic time model (no profile) against
 * every measured per-layer profile of the data folder, and against the
 * measured iteration times of every set of real runs there.
 *   Per layer: each entry (device, tp, mbs) of AMP's profiles.json (GPT-2,
 *   forward per sample, tp 1, 2, 4 on V100 and T4) and of each
 *   sailor-opt/profile_<model>.json (forward and backward per micro-batch)
 *   against cost_layer_time_of without a profile at the same device,
 *   micro-batch size and TP degree.  The TP collectives are timed on the
 *   intra-node link of a cluster of the data where one has the device
 *   (AMP: examples/amp-het.json; sailor-opt: the runs' clusters), else
 *   left out ("link_Bps": null); "compute" is the same estimate without them.
 *   Layers that do nothing (kind noop) or were measured as 0 are not
 *   scored.  Scores per device: transformer blocks, blocks at tp 1 (no
 *   collectives in the measurement), the embedding, the head (LM head
 *   and loss), the other layers (norms, generic) and each entry's whole
 *   model (the sum of its scored layers); entries at tp > 1 whose link
 *   is not known are scored apart ("blocks_no_link",
 *   "whole_model_no_link"), as their estimate has no collectives.
 *   Per run: iteration time by cost_evaluate without a profile (and with
 *   the profile, where there is one) on sailor-opt's runs and AMP's
 *   homogeneous and het_cluster runs; megatron-sc21's figures are those
 *   its own bench prints (the program megatron-sc21 beside this one).
 * Error = analytic / measured - 1; MAPE = mean |error|; worst = the error
 * of largest magnitude, with its sign.
 * Usage: layer-analytic [DATA_DIR]   (default ../shared/data).
 * Prints one JSON object on stdout, a line per device and a summary line
 * on stderr; without the data folder the object says it was skipped
 * (exit status 0).  A set that cannot be scored is named with its reason
 * ("not_scored") and makes the exit status 1. */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "calibrate.h"
#include "bench_data.h"
#include "layer_runs.h"

#define MAX_DEVICES 32
#define MAX_CLUSTERS 128

/* Score groups of a device (see the header comment). */
enum { G_BLOCKS = 0, G_BLOCKS_TP1, G_EMBED, G_HEAD, G_OTHER, G_SUMS,
       G_BLOCKS_NOLINK, G_SUMS_NOLINK, G_N };
static const char *const group_key[G_N] = {
    "blocks", "blocks_tp1", "embedding", "head", "other_layers", "whole_model",
    "blocks_no_link", "whole_model_no_link"};

/* Errors of one group and pass. */
typedef struct err_acc {
    int n;
    double sum_abs, worst;
} err_acc;

/* The scores of one device type (its catalogue name). */
typedef struct dev_acc {
    char name[32];
    char models[128];       /* the models profiled on it */
    err_acc e[G_N][2];      /* [group][0 forward, 1 backward] */
} dev_acc;

static dev_acc devs[MAX_DEVICES];
static int ndevs;
/* Clusters of the data whose nodes give the TP links. */
static fmt_cluster clusters[MAX_CLUSTERS];
static int nclusters;

/* Architecture of a catalogue device, for the reader. */
static const char *generation(const char *name)
{
    static const struct {
        const char *prefix, *gen;
    } g[] = {{"P100", "Pascal"},  {"V100", "Volta"},   {"T4", "Turing"},
             {"RTX20", "Turing"}, {"TitanRTX", "Turing"}, {"A100", "Ampere"},
             {"A10", "Ampere"},   {"A30", "Ampere"},   {"A40", "Ampere"},
             {"RTX30", "Ampere"}, {"L4", "Ada"},       {"RTX40", "Ada"},
             {"H100", "Hopper"},  {"H200", "Hopper"},  {"GH200", "Hopper"},
             {"MI", "CDNA"}};
    size_t i;

    for (i = 0; i < sizeof g / sizeof g[0]; i++)
        if (strncmp(name, g[i].prefix, strlen(g[i].prefix)) == 0)
            return g[i].gen;
    return "unknown";
}

static dev_acc *device_acc(const char *name, const char *model)
{
    const char *cat = catalogue_name(name);
    dev_acc *d = NULL;
    size_t len;
    int i;

    for (i = 0; i < ndevs; i++)
        if (strcmp(devs[i].name, cat) == 0)
            d = &devs[i];
    if (d == NULL) {
        if (ndevs == MAX_DEVICES)
            return NULL;
        d = &devs[ndevs++];
        memset(d, 0, sizeof *d);
        snprintf(d->name, sizeof d->name, "%s", cat);
    }
    if (strstr(d->models, model) == NULL) {
        len = strlen(d->models);
        snprintf(d->models + len, sizeof d->models - len, "%s%s",
                 len > 0 ? ", " : "", model);
    }
    return d;
}

static void acc_add(err_acc *a, double err)
{
    a->n++;
    a->sum_abs += fabs(err);
    if (fabs(err) > fabs(a->worst))
        a->worst = err;
}

static double acc_mape(const err_acc *a)
{
    return a->n > 0 ? a->sum_abs / a->n : 0.0;
}

/* ---- device types and links ----------------------------------------- */

/* Device type `name` of a cluster of the data, else the catalogue's; *bw
 * and *lat the intra-node link of a node of it with at least tp GPUs
 * (bw 0: none known). */
static const fmt_device_type *device_of(const char *name, int tp, double *bw,
                                        double *lat)
{
    const fmt_device_type *dt = NULL;
    cost_params cp;
    int i, k;

    cost_params_init(&cp);
    *bw = 0.0;
    *lat = 0.0;
    for (i = 0; i < nclusters; i++) {
        const fmt_cluster *c = &clusters[i];
        for (k = 0; k < c->nnodes; k++) {
            const fmt_node *nd = &c->nodes[k];
            if (strcasecmp(catalogue_name(c->types[nd->type].name),
                           catalogue_name(name)) != 0)
                continue;
            if (dt == NULL)
                dt = &c->types[nd->type];
            if (tp > 1 && nd->gpus >= tp && *bw == 0.0) {
                dt = &c->types[nd->type];
                *bw = cost_flow_bw(c, &cp, nd->first_device,
                                   nd->first_device + 1, 1, 1, lat);
            }
        }
    }
    return dt != NULL ? dt : fmt_catalog_find(name);
}

static void add_cluster(const char *path, cJSON *skipped)
{
    util_error err;

    memset(&err, 0, sizeof err);
    if (nclusters == MAX_CLUSTERS)
        return;
    if (fmt_load_cluster(path, &clusters[nclusters], &err) == UTIL_OK)
        nclusters++;
    else
        not_scored(skipped, path, &err, NULL);
}

/* ---- per layer ------------------------------------------------------ */

/* A time or null when not measured (negative). */
static void put_time(cJSON *o, const char *key, double v)
{
    if (v >= 0.0)
        cJSON_AddNumberToObject(o, key, v);
    else
        cJSON_AddNullToObject(o, key);
}

/* Scores every layer of every entry of profile prof (of model m, data
 * set `set`) into the layers and profiles arrays and the devices'
 * accumulators; *nl and *ne count the layers and entries scored. */
static void score_profile(const char *set, const char *model, const fmt_model *m,
                          const fmt_profile *prof, cJSON *layers, cJSON *entries,
                          cJSON *skipped, int *nl, int *ne)
{
    cost_params cp;
    int i, l, pass;

    cost_params_init(&cp);
    for (i = 0; i < prof->nentries; i++) {
        const fmt_profile_entry *e = &prof->entries[i];
        double bw, lat, sum_m[2] = {0, 0}, sum_a[2] = {0, 0};
        const fmt_device_type *dt = device_of(e->device, e->tp, &bw, &lat);
        dev_acc *d = device_acc(e->device, model);
        cJSON *eo;
        int scored = 0, have_bwd = e->bwd != NULL;
        /* a TP measurement whose link no cluster gives: its collectives
         * are not estimated, so it is scored apart */
        int unlinked = e->tp > 1 && !(bw > 0.0);

        if (dt == NULL || d == NULL) { /* a device no cluster or catalogue knows */
            char what[256];
            snprintf(what, sizeof what, "%s %s profile entry %d", set, model, i);
            not_scored(skipped, what, NULL, "unknown device");
            continue;
        }
        for (l = 0; l < m->nlayers && l < prof->nlayers; l++) {
            const fmt_layer *ly = &m->layers[l];
            double meas[2], ana[2], comp[2];
            cost_layer_time lt, lc;
            cJSON *o;

            meas[0] = e->fwd[l];
            meas[1] = e->bwd != NULL ? e->bwd[l] : -1.0;
            if (meas[1] < 0.0)
                have_bwd = 0;
            if (ly->kind == FMT_KIND_NOOP || !(meas[0] > 0.0))
                continue;
            cost_layer_time_of(m, NULL, &cp, dt, l, e->tp, e->mbs,
                               bw > 0.0 ? bw : INFINITY, lat,
                               bw > 0.0 ? bw : INFINITY, &lt);
            cost_layer_time_of(m, NULL, &cp, dt, l, e->tp, e->mbs, INFINITY,
                               0.0, INFINITY, &lc);
            ana[0] = lt.fwd;
            ana[1] = lt.bwd;
            comp[0] = lc.fwd;
            comp[1] = lc.bwd;
            o = cJSON_CreateObject();
            cJSON_AddItemToArray(layers, o);
            cJSON_AddStringToObject(o, "set", set);
            cJSON_AddStringToObject(o, "model", model);
            cJSON_AddStringToObject(o, "device", d->name);
            cJSON_AddNumberToObject(o, "layer", l);
            cJSON_AddStringToObject(o, "name", ly->name);
            cJSON_AddNumberToObject(o, "mbs", e->mbs);
            cJSON_AddNumberToObject(o, "tp", e->tp);
            for (pass = 0; pass < 2; pass++) {
                const char *p = pass ? "bwd" : "fwd";
                char key[32];
                snprintf(key, sizeof key, "%s_measured_s", p);
                put_time(o, key, meas[pass]);
                snprintf(key, sizeof key, "%s_analytic_s", p);
                cJSON_AddNumberToObject(o, key, ana[pass]);
                snprintf(key, sizeof key, "%s_compute_s", p);
                cJSON_AddNumberToObject(o, key, comp[pass]);
                snprintf(key, sizeof key, "%s_ratio", p);
                if (meas[pass] > 0.0) {
                    double err = ana[pass] / meas[pass] - 1.0;
                    cJSON_AddNumberToObject(o, key, ana[pass] / meas[pass]);
                    if (unlinked) {
                        if (ly->kind == FMT_KIND_TRANSFORMER)
                            acc_add(&d->e[G_BLOCKS_NOLINK][pass], err);
                    } else if (ly->kind == FMT_KIND_TRANSFORMER) {
                        acc_add(&d->e[G_BLOCKS][pass], err);
                        if (e->tp == 1)
                            acc_add(&d->e[G_BLOCKS_TP1][pass], err);
                    } else {
                        acc_add(&d->e[ly->kind == FMT_KIND_EMBEDDING ? G_EMBED
                                      : ly->kind == FMT_KIND_HEAD    ? G_HEAD
                                                                     : G_OTHER][pass],
                                err);
                    }
                } else {
                    cJSON_AddNullToObject(o, key);
                }
                if (meas[pass] >= 0.0) {
                    sum_m[pass] += meas[pass];
                    sum_a[pass] += ana[pass];
                }
            }
            if (bw > 0.0)
                cJSON_AddNumberToObject(o, "link_Bps", bw);
            else
                cJSON_AddNullToObject(o, "link_Bps");
            scored++;
            (*nl)++;
        }
        if (scored == 0)
            continue;
        eo = cJSON_CreateObject();
        cJSON_AddItemToArray(entries, eo);
        cJSON_AddStringToObject(eo, "set", set);
        cJSON_AddStringToObject(eo, "model", model);
        cJSON_AddStringToObject(eo, "device", d->name);
        cJSON_AddStringToObject(eo, "generation", generation(d->name));
        cJSON_AddNumberToObject(eo, "mbs", e->mbs);
        cJSON_AddNumberToObject(eo, "tp", e->tp);
        cJSON_AddNumberToObject(eo, "layers", scored);
        for (pass = 0; pass < 2; pass++) {
            const char *p = pass ? "bwd" : "fwd";
            char key[32];
            int ok = pass == 0 || have_bwd;
            snprintf(key, sizeof key, "%s_measured_s", p);
            put_time(eo, key, ok ? sum_m[pass] : -1.0);
            snprintf(key, sizeof key, "%s_analytic_s", p);
            cJSON_AddNumberToObject(eo, key, sum_a[pass]);
            snprintf(key, sizeof key, "%s_ratio", p);
            if (ok && sum_m[pass] > 0.0) {
                cJSON_AddNumberToObject(eo, key, sum_a[pass] / sum_m[pass]);
                acc_add(&d->e[unlinked ? G_SUMS_NOLINK : G_SUMS][pass],
                        sum_a[pass] / sum_m[pass] - 1.0);
            } else {
                cJSON_AddNullToObject(eo, key);
            }
        }
        (*ne)++;
    }
}

/* AMP's profiles: the models the project describes (gpt2: the 30-entry
 * layer sequence of examples/gpt2-amp.json); any other key is named. */
static void amp_layers(const char *root, cJSON *layers, cJSON *entries,
                       cJSON *skipped, cJSON *undescribed, int *nl, int *ne)
{
    char path[4200], set[256];
    cJSON *doc = NULL, *k;
    util_error err;

    memset(&err, 0, sizeof err);
    snprintf(path, sizeof path, "%s/amp/profiles.json", root);
    if (bench_read_json(path, &doc, &err) != UTIL_OK) {
        not_scored(skipped, "amp/profiles.json", &err, NULL);
        return;
    }
    cJSON_ArrayForEach(k, doc) {
        fmt_model m;
        fmt_profile prof;
        if (!cJSON_IsObject(k))
            continue;
        snprintf(set, sizeof set, "amp/profiles.json %s", k->string);
        if (strcmp(k->string, "gpt2") != 0) {
            not_scored(undescribed, set, NULL, "no model file of the project "
                       "describes this layer sequence");
            continue;
        }
        memset(&m, 0, sizeof m);
        memset(&prof, 0, sizeof prof);
        if (fmt_load_model(HETPLAN_SOURCE_DIR "/examples/gpt2-amp.json", &m,
                           &err) == UTIL_OK &&
            fmt_profile_from_amp(path, k->string, &m, &prof, &err) == UTIL_OK)
            score_profile("amp", "gpt2", &m, &prof, layers, entries, skipped,
                          nl, ne);
        else
            not_scored(skipped, set, &err, NULL);
        memset(&err, 0, sizeof err);
        fmt_profile_free(&prof);
        fmt_model_free(&m);
    }
    cJSON_Delete(doc);
}

/* sailor-opt's profile_<model>.json of each model runs.json names. */
static void sailor_layers(const char *root, const cJSON *runs, cJSON *layers,
                          cJSON *entries, cJSON *skipped, int *nl, int *ne)
{
    char path[4200], seen[MAX_RUNS][64];
    const cJSON *r;
    int nseen = 0, i;

    cJSON_ArrayForEach(r, runs) {
        const char *model = bench_str(r, "model");
        fmt_model m;
        fmt_profile prof;
        util_error err;
        struct stat st;

        if (model == NULL || nseen == MAX_RUNS)
            continue;
        for (i = 0; i < nseen && strcmp(seen[i], model) != 0; i++)
            ;
        if (i < nseen)
            continue;
        snprintf(seen[nseen++], sizeof seen[0], "%s", model);
        snprintf(path, sizeof path, "%s/sailor-opt/profile_%s.json", root, model);
        if (stat(path, &st) != 0)
            continue; /* a model without a profile */
        memset(&m, 0, sizeof m);
        memset(&prof, 0, sizeof prof);
        memset(&err, 0, sizeof err);
        {
            char mp[4200];
            snprintf(mp, sizeof mp, "%s/sailor-opt/model_%s.json", root, model);
            if (load_model(mp, model, &m, &err) == UTIL_OK &&
                fmt_load_profile(path, &m, &prof, &err) == UTIL_OK)
                score_profile("sailor-opt", model, &m, &prof, layers, entries,
                              skipped, nl, ne);
            else
                not_scored(skipped, path, &err, NULL);
        }
        fmt_profile_free(&prof);
        fmt_model_free(&m);
    }
}

/* {"n", "mape", "worst"} of a; NULL-valued when empty. */
static void put_acc(cJSON *o, const char *key, const err_acc *a)
{
    cJSON *x = cJSON_AddObjectToObject(o, key);

    cJSON_AddNumberToObject(x, "n", a->n);
    if (a->n > 0) {
        cJSON_AddNumberToObject(x, "mape", acc_mape(a));
        cJSON_AddNumberToObject(x, "worst", a->worst);
    } else {
        cJSON_AddNullToObject(x, "mape");
        cJSON_AddNullToObject(x, "worst");
    }
}

/* "a%/b%" of forward and backward MAPE ("-" when none), into buf. */
static const char *pct2(const err_acc *e, char *buf, size_t n)
{
    char f[16] = "-", b[16] = "-";

    if (e[0].n > 0)
        snprintf(f, sizeof f, "%.1f%%", 100.0 * acc_mape(&e[0]));
    if (e[1].n > 0)
        snprintf(b, sizeof b, "%.1f%%", 100.0 * acc_mape(&e[1]));
    snprintf(buf, n, "%s/%s", f, b);
    return buf;
}

/* "+a%/-b%" of the forward and backward worst errors ("-" when none). */
static const char *worst2(const err_acc *e, char *buf, size_t n)
{
    char f[16] = "-", b[16] = "-";

    if (e[0].n > 0)
        snprintf(f, sizeof f, "%+.0f%%", 100.0 * e[0].worst);
    if (e[1].n > 0)
        snprintf(b, sizeof b, "%+.0f%%", 100.0 * e[1].worst);
    snprintf(buf, n, "%s/%s", f, b);
    return buf;
}

static void put_devices(cJSON *doc)
{
    cJSON *arr = cJSON_AddArrayToObject(doc, "devices");
    char a[48], b[48], c[48], h[48], w[48];
    int i, g, pass;

    for (i = 0; i < ndevs; i++) {
        const dev_acc *d = &devs[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddStringToObject(o, "device", d->name);
        cJSON_AddStringToObject(o, "generation", generation(d->name));
        cJSON_AddStringToObject(o, "models", d->models);
        for (g = 0; g < G_N; g++) {
            cJSON *x = cJSON_AddObjectToObject(o, group_key[g]);
            for (pass = 0; pass < 2; pass++)
                put_acc(x, pass ? "bwd" : "fwd", &d->e[g][pass]);
        }
        fprintf(stderr, "layer-analytic: %s (%s, %s): MAPE fwd/bwd: blocks %s "
                "(worst %s, %d), blocks at tp 1 %s, embedding %s, head %s, ",
                d->name, generation(d->name), d->models,
                pct2(d->e[G_BLOCKS], a, sizeof a),
                worst2(d->e[G_BLOCKS], w, sizeof w), d->e[G_BLOCKS][0].n,
                pct2(d->e[G_BLOCKS_TP1], b, sizeof b),
                pct2(d->e[G_EMBED], c, sizeof c),
                pct2(d->e[G_HEAD], h, sizeof h));
        fprintf(stderr, "other layers %s, whole model %s (worst %s, %d entries)",
                pct2(d->e[G_OTHER], a, sizeof a), pct2(d->e[G_SUMS], b, sizeof b),
                worst2(d->e[G_SUMS], w, sizeof w), d->e[G_SUMS][0].n);
        if (d->e[G_BLOCKS_NOLINK][0].n > 0)
            fprintf(stderr, "; at tp > 1 without a known link (no collectives "
                    "estimated): blocks %s, whole model %s",
                    pct2(d->e[G_BLOCKS_NOLINK], a, sizeof a),
                    pct2(d->e[G_SUMS_NOLINK], b, sizeof b));
        fprintf(stderr, "\n");
    }
}

int main(int argc, char **argv)
{
    char root[4096], path[4200], runsum[2048] = "", layersum[2048] = "", buf[48];
    cJSON *doc, *layers, *entries, *skipped, *undescribed, *sets, *sruns = NULL, *x;
    util_error err;
    struct stat st;
    int nl = 0, ne = 0, i, have_amp, have_sailor, have_mega;

    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: layer-analytic [DATA_DIR]   (default ../shared/data)\n");
        return 0;
    }
    if (argc > 1) {
        snprintf(root, sizeof root, "%s", argv[1]);
    } else {
        snprintf(root, sizeof root, "../shared/data");
        if (stat(root, &st) != 0)
            snprintf(root, sizeof root, "%s/../shared/data", HETPLAN_SOURCE_DIR);
    }
    snprintf(path, sizeof path, "%s/amp/profiles.json", root);
    have_amp = stat(path, &st) == 0;
    snprintf(path, sizeof path, "%s/sailor-opt/runs.json", root);
    have_sailor = stat(path, &st) == 0;
    snprintf(path, sizeof path, "%s/megatron-sc21/runs.json", root);
    have_mega = stat(path, &st) == 0;
    doc = cJSON_CreateObject();
    cJSON_AddStringToObject(doc, "bench", "layer-analytic");
    if (!have_amp && !have_sailor && !have_mega) {
        snprintf(path, sizeof path, "no amp/, sailor-opt/ or megatron-sc21/ in "
                 "'%s': the reference data (../shared/data) is absent", root);
        cJSON_AddBoolToObject(doc, "skipped", 1);
        cJSON_AddStringToObject(doc, "reason", path);
        bench_print(doc);
        fprintf(stderr, "layer-analytic: skipped: %s\n", path);
        return 0;
    }
    memset(&err, 0, sizeof err);
    cJSON_AddStringToObject(doc, "data_dir", root);
    cJSON_AddStringToObject(doc, "note", "analytic = cost_layer_time_of / "
                            "cost_evaluate without a profile; error = analytic / "
                            "measured - 1; TP collectives on the intra-node link "
                            "of a data cluster with the device (link_Bps), left "
                            "out where none has it (link_Bps null); compute = "
                            "the estimate without collectives; noop layers and "
                            "layers measured as 0 are not scored");
    skipped = cJSON_AddArrayToObject(doc, "not_scored");
    /* profiles of models no file describes: named, not an error */
    undescribed = cJSON_AddArrayToObject(doc, "profiles_without_model");
    if (have_amp)
        add_cluster(HETPLAN_SOURCE_DIR "/examples/amp-het.json", skipped);
    if (have_sailor) {
        snprintf(path, sizeof path, "%s/sailor-opt/runs.json", root);
        if (bench_read_json(path, &sruns, &err) != UTIL_OK) {
            not_scored(skipped, "sailor-opt/runs.json", &err, NULL);
            have_sailor = 0;
        }
        cJSON_ArrayForEach(x, sruns) {
            const char *tag = bench_str(x, "tag");
            if (tag == NULL)
                continue;
            snprintf(path, sizeof path, "%s/sailor-opt/%s_cluster.json", root, tag);
            add_cluster(path, skipped);
        }
    }
    layers = cJSON_AddArrayToObject(doc, "layers");
    entries = cJSON_AddArrayToObject(doc, "profiles");
    if (have_amp)
        amp_layers(root, layers, entries, skipped, undescribed, &nl, &ne);
    if (have_sailor)
        sailor_layers(root, sruns, layers, entries, skipped, &nl, &ne);
    cJSON_AddNumberToObject(doc, "layers_scored", nl);
    cJSON_AddNumberToObject(doc, "profile_entries_scored", ne);
    put_devices(doc);
    sets = cJSON_AddArrayToObject(doc, "run_sets");
    if (have_sailor)
        sailor_runs(root, sruns, sets, skipped, runsum, sizeof runsum);
    if (have_amp)
        amp_runs(root, sets, skipped, runsum, sizeof runsum);
    if (have_mega)
        megatron_runs(argv[0], root, sets, skipped, runsum, sizeof runsum);
    for (i = 0; i < ndevs; i++) {
        size_t len = strlen(layersum);
        snprintf(layersum + len, sizeof layersum - len, "%s%.31s (%.15s) %.47s",
                 i > 0 ? ", " : "",
                 devs[i].name, generation(devs[i].name),
                 pct2(devs[i].e[G_BLOCKS], buf, sizeof buf));
        len = strlen(layersum);
        snprintf(layersum + len, sizeof layersum - len, " [tp 1 %.47s]",
                 pct2(devs[i].e[G_BLOCKS_TP1], buf, sizeof buf));
    }
    fprintf(stderr, "layer-analytic: %d layers of %d profile entries: block "
            "MAPE fwd/bwd %s; run time MAPE analytic: %s\n", nl, ne, layersum,
            runsum);
    cJSON_Delete(sruns);
    for (i = 0; i < nclusters; i++)
        fmt_cluster_free(&clusters[i]);
    i = cJSON_GetArraySize(skipped);
    bench_print(doc);
    if (i > 0)
        fprintf(stderr, "layer-analytic: %d sets not scored (see 'not_scored')\n", i);
    return i > 0 ? 1 : 0;
}
