/* plan/table.c: the human table of ranked strategies and the stages of
 * the best one (docs/plan-format.md, "Text table"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan.h"
#include "internal.h"

static double gib(double bytes)
{
    return bytes / 1073741824.0;
}

/* ---- text table ------------------------------------------------------ */

#define TCOLS 16
#define CELL 40

static const char *const tab_head[TCOLS] = {
    "#", "time (s)", "samples/s", "tp", "dp", "pp", "mbs", "micro",
    "placement", "bubble (s)", "dp comm (s)", "peak mem (GiB)", "fits",
    "price/h", "price/iter", "features"
};
/* Columns 8 (placement) and 15 (features) are left-aligned, the others
 * right-aligned. */
#define TCOL_LEFT(k) ((k) == 8 || (k) == TCOLS - 1)
/* The price columns, shown only when the cluster file gives prices. */
#define TCOL_PRICE(k) ((k) == 13 || (k) == 14)

/* Training features of s, compact: "vpp4" (interleaved schedule, model
 * chunks per device), "sp" (sequence parallelism), "sel" / "full"
 * (activation recomputation), "zero1".."zero3" (ZeRO stage, 1 being
 * Megatron's distributed optimizer), comma-separated; "-" for none.
 * Fields a strategy leaves to cost_params (-1) are not shown. */
static void feature_cell(const fmt_strategy *s, char *out, size_t n)
{
    size_t used = 0;
    int w;

    out[0] = '\0';
#define FEAT(...)                                                           \
    do {                                                                    \
        if (used < n) {                                                     \
            w = snprintf(out + used, n - used, "%s", used ? "," : "");      \
            used += w > 0 ? (size_t)w : 0;                                  \
        }                                                                   \
        if (used < n) {                                                     \
            w = snprintf(out + used, n - used, __VA_ARGS__);                \
            used += w > 0 ? (size_t)w : 0;                                  \
        }                                                                   \
    } while (0)
    if (s->vpp > 1)
        FEAT("vpp%d", s->vpp);
    if (s->sp > 0 && s->tp > 1)
        FEAT("sp");
    if (s->recompute == FMT_RECOMPUTE_SELECTIVE)
        FEAT("sel");
    else if (s->recompute == FMT_RECOMPUTE_FULL)
        FEAT("full");
    if (s->zero > 0)
        FEAT("zero%d", s->zero);
    if (s->offload == FMT_OFFLOAD_OPTIMIZER)
        FEAT("offload");
#undef FEAT
    if (out[0] == '\0')
        snprintf(out, n, "-");
}

/* Peak memory of a result in bytes, or -1 when unknown. */
static double result_peak(const cost_result *r)
{
    double peak = -1.0;
    int i;

    if (r->mem_bytes == NULL)
        return -1.0;
    for (i = 0; i < r->nranks; i++)
        if (r->mem_bytes[i] > peak)
            peak = r->mem_bytes[i];
    return peak;
}

static void fmt_row(char row[TCOLS][CELL], const fmt_cluster *c,
                    const fmt_model *m, const fmt_strategy *s,
                    const cost_result *r, int idx, int global_batch)
{
    double peak = result_peak(r);
    double ph = c->price != NULL ? search_price_per_hour(c, s) : -1.0;

    snprintf(row[0], CELL, "%d", idx + 1);
    snprintf(row[1], CELL, "%.4f", r->iter_s);
    if (r->iter_s > 0.0)
        snprintf(row[2], CELL, "%.2f", global_batch / r->iter_s);
    else
        snprintf(row[2], CELL, "-");
    snprintf(row[3], CELL, "%d", s->tp);
    snprintf(row[4], CELL, "%d", s->dp);
    snprintf(row[5], CELL, "%d", s->pp);
    snprintf(row[6], CELL, "%d", s->mbs);
    snprintf(row[7], CELL, "%d", s->gas);
    snprintf(row[8], CELL, "%s", s->placement[0] ? s->placement : "-");
    snprintf(row[9], CELL, "%.4f", r->bd.bubble);
    snprintf(row[10], CELL, "%.4f", r->bd.dp_comm);
    if (peak >= 0.0)
        snprintf(row[11], CELL, "%.2f", gib(peak));
    else
        snprintf(row[11], CELL, "-");
    /* "no*": a stage without parameters, explained below the table */
    snprintf(row[12], CELL, "%s", cost_empty_stage(m, s) >= 0 ? "no*"
                                  : r->fits                    ? "yes"
                                                               : "no");
    /* the plan JSON's price_per_hour and price_per_iteration; "-" when a
     * GPU in use has no price */
    if (ph >= 0.0) {
        snprintf(row[13], CELL, "%.4g", ph);
        snprintf(row[14], CELL, "%.4g", ph * r->iter_s / 3600.0);
    } else {
        snprintf(row[13], CELL, "-");
        snprintf(row[14], CELL, "-");
    }
    feature_cell(s, row[15], CELL);
}

/* One line of the table; the price columns only when priced. */
static void emit_row(util_buf *b, const char *const cells[TCOLS],
                     const int w[TCOLS], int priced)
{
    int k;

    for (k = 0; k < TCOLS; k++)
        if (priced || !TCOL_PRICE(k))
            util_buf_printf(b, TCOL_LEFT(k) ? "%s%-*s" : "%s%*s", k ? " " : "",
                            k == TCOLS - 1 ? 0 : w[k], cells[k]); /* no trailing blanks */
    util_buf_printf(b, "\n");
}

/* "2xV100,2xT4": device types of one stage with their counts. */
static void stage_types(const fmt_cluster *c, const fmt_strategy *s, int j,
                        char *out, size_t n)
{
    int per = s->tp * s->dp, t, k, count;
    size_t used = 0;

    out[0] = '\0';
    for (t = 0; t < c->ntypes; t++) {
        count = 0;
        for (k = 0; k < per; k++) {
            int dev = s->ranks ? s->ranks[j * per + k] : -1;
            if (dev >= 0 && dev < c->ndevices && c->device_node &&
                c->nodes[c->device_node[dev]].type == t)
                count++;
        }
        if (count > 0 && used < n) {
            int w = snprintf(out + used, n - used, "%s%dx%s", used ? "," : "",
                             count, c->types[t].name);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (out[0] == '\0')
        snprintf(out, n, "-");
}

/* "a-b" (inclusive) of stage j, "-" when unknown. */
static void stage_layers(const fmt_strategy *s, int j, char *out, size_t n)
{
    if (s->bounds)
        snprintf(out, n, "%d-%d", s->bounds[j], s->bounds[j + 1] - 1);
    else
        snprintf(out, n, "-");
}

/* Second block: the stages of the best strategy. */
static void emit_stages(util_buf *b, const fmt_cluster *c,
                        const fmt_strategy *s, const cost_result *r)
{
    char types[96], layers[32];
    int j, wl = (int)strlen("layers"), wt = (int)strlen("devices");

    for (j = 0; j < s->pp; j++) {
        stage_layers(s, j, layers, sizeof layers);
        stage_types(c, s, j, types, sizeof types);
        if ((int)strlen(layers) > wl)
            wl = (int)strlen(layers);
        if ((int)strlen(types) > wt)
            wt = (int)strlen(types);
    }
    util_buf_printf(b, "\nstages of #1 (layers inclusive):\n");
    util_buf_printf(b, "%5s  %-*s  %-*s  %15s  %14s  %14s\n", "stage", wl, "layers",
              wt, "devices", "time/micro (ms)", "peak mem (GiB)", "headroom (GiB)");
    for (j = 0; j < s->pp; j++) {
        char mem[32] = "-", head[32] = "-";
        int per = s->tp * s->dp, k;
        double pk = -1.0, hr = HUGE_VAL;
        stage_layers(s, j, layers, sizeof layers);
        stage_types(c, s, j, types, sizeof types);
        for (k = j * per; r->mem_bytes && r->mem_cap && k < (j + 1) * per &&
                          k < r->nranks; k++) { /* memory per stage */
            if (r->mem_bytes[k] > pk)
                pk = r->mem_bytes[k];
            if (r->mem_cap[k] - r->mem_bytes[k] < hr)
                hr = r->mem_cap[k] - r->mem_bytes[k];
        }
        if (pk >= 0.0) {
            snprintf(mem, sizeof mem, "%.2f", gib(pk));
            snprintf(head, sizeof head, "%.2f", gib(hr));
        }
        if (r->stage_s != NULL && j < r->pp)
            util_buf_printf(b, "%5d  %-*s  %-*s  %15.3f  %14s  %14s\n", j, wl, layers,
                      wt, types, r->stage_s[j] * 1e3, mem, head);
        else
            util_buf_printf(b, "%5d  %-*s  %-*s  %15s  %14s  %14s\n", j, wl, layers, wt,
                      types, "-", mem, head);
    }
}

char *plan_to_table(const fmt_cluster *c, const fmt_model *m,
                    const fmt_strategy *s, const cost_result *r, int n,
                    int global_batch)
{
    util_buf b = {NULL, 0, 0, 0};
    char (*cells)[TCOLS][CELL] = NULL;
    const char *row[TCOLS];
    int w[TCOLS], i, k, total = 0, priced;
    char *out = NULL;

    if (c == NULL || m == NULL || n < 0 || (n > 0 && (s == NULL || r == NULL)))
        return NULL;
    priced = c->price != NULL;
    cells = malloc((size_t)(n > 0 ? n : 1) * sizeof *cells);
    if (cells == NULL)
        goto done;
    for (k = 0; k < TCOLS; k++)
        w[k] = (int)strlen(tab_head[k]);
    for (i = 0; i < n; i++) {
        fmt_row(cells[i], c, m, &s[i], &r[i], i, global_batch);
        for (k = 0; k < TCOLS; k++)
            if ((int)strlen(cells[i][k]) > w[k])
                w[k] = (int)strlen(cells[i][k]);
    }
    for (k = 0; k < TCOLS; k++)
        if (priced || !TCOL_PRICE(k))
            total += w[k] + (k ? 1 : 0);
    emit_row(&b, tab_head, w, priced);
    for (k = 0; k < total; k++)
        util_buf_printf(&b, "-");
    util_buf_printf(&b, "\n");
    for (i = 0; i < n; i++) {
        for (k = 0; k < TCOLS; k++)
            row[k] = cells[i][k];
        emit_row(&b, row, w, priced);
    }
    for (i = 0; i < n; i++) /* why "no*" */
        if (cost_empty_stage(m, &s[i]) >= 0) {
            char why[512];
            plan_runnable_reason(m, &s[i], &r[i], why, sizeof why);
            util_buf_printf(&b, "* #%d is not runnable: %s\n", i + 1, why);
        }
    if (n == 0)
        util_buf_printf(&b, "(no strategies)\n");
    else
        emit_stages(&b, c, &s[0], &r[0]);
    if (b.failed || b.p == NULL)
        goto done;
    out = b.p;
    b.p = NULL;
done:
    free(b.p);
    free(cells);
    return out;
}
