/* report/internal.h: what report/report.c (the SVG) and report/html.c
 * (the page) share; not part of the API in report.h. */
#ifndef HETPLAN_REPORT_INTERNAL_H
#define HETPLAN_REPORT_INTERNAL_H

#include "report.h"

#define RP_WIDTH 1300.0
#define RP_X0 270.0             /* left edge of every plot */
#define RP_PW 980.0             /* plot width */
#define RP_MAXROWS 64           /* timeline rows drawn at most */
#define RP_GIB 1073741824.0

/* Text with XML special characters escaped, control characters as '?'. */
void report_text(util_buf *b, const char *s);
/* UTIL_EINVAL unless in holds strategies and results that fit its cluster
 * (a strategy may leave GPUs idle). */
int report_check_input(const report_input *in, util_error *err);
/* The SVG element of the report; its boxes in *L. */
void report_svg_body(util_buf *b, const report_input *in, report_layout *L);
/* GPUs of node k that no rank runs on (ix: the strategy's
 * device-to-rank index, built by the caller). */
int report_idle_on_node(const fmt_cluster *c, const fmt_rank_index *ix, int k);
/* The indices of those GPUs, comma-separated. */
void report_idle_gpus(util_buf *b, const fmt_cluster *c, const fmt_rank_index *ix,
                      int k);

#endif
