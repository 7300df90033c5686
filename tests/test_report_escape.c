/* tests/test_report_escape.c: names and titles from input files are
 * escaped in the SVG and HTML report (docs/report.md): the structs are
 * filled directly, so the names bypass the readers' checks. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util.h"
#include "formats.h"
#include "costmodel.h"
#include "report.h"
#include "testutil.h"

#define EVIL "<script>x</script>"

/* inputs: tu_two_nodes_json (T4 and V100 nodes), tu_gpt2_small4_json */

/* 1 when text holds "<script" in any case, or a control character other
 * than a newline. */
static int unsafe(const char *text)
{
    const char *p;

    for (p = text; *p; p++) {
        if (strncasecmp(p, "<script", 7) == 0)
            return 1;
        if ((unsigned char)*p < 0x20 && *p != '\n')
            return 1;
    }
    return 0;
}

START_TEST(names_are_escaped)
{
    fmt_cluster c;
    fmt_model m;
    cost_params p;
    fmt_strategy s;
    cost_result r;
    report_input in;
    util_error err;
    char *svg = NULL, *html = NULL;
    int i;

    tu_parse_inputs(tu_two_nodes_json, tu_gpt2_small4_json, &c, &m);
    cost_params_init(&p);
    ck_assert_int_eq(fmt_strategy_alloc(&s, 1, 2, 2), UTIL_OK);
    for (i = 0; i < 4; i++)
        s.ranks[i] = i;
    s.mbs = 1;
    s.gas = 4;
    s.bounds[0] = 0;
    s.bounds[1] = 3;
    s.bounds[2] = m.nlayers;
    snprintf(s.placement, sizeof s.placement, EVIL);
    memset(&r, 0, sizeof r);
    ck_assert_msg(cost_evaluate(&c, &m, NULL, &p, &s, &r, &err) == UTIL_OK, "%s",
                  err.msg);
    snprintf(m.name, sizeof m.name, EVIL "\x01");
    snprintf(c.name, sizeof c.name, EVIL);
    for (i = 0; i < c.ntypes; i++)
        snprintf(c.types[i].name, sizeof c.types[i].name, EVIL);
    for (i = 0; i < c.nnodes; i++)
        snprintf(c.nodes[i].name, sizeof c.nodes[i].name, EVIL);
    for (i = 0; i < m.nlayers; i++)
        snprintf(m.layers[i].name, sizeof m.layers[i].name, EVIL);
    memset(&in, 0, sizeof in);
    in.title = EVIL "\x02";
    in.c = &c;
    in.m = &m;
    in.s = &s;
    in.r = &r;
    in.n = 1;
    in.global_batch = 8;
    ck_assert_msg(report_svg(&in, &svg, NULL, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_msg(report_html(&in, &html, NULL, &err) == UTIL_OK, "%s", err.msg);
    ck_assert_msg(!unsafe(svg), "unescaped name in the SVG");
    ck_assert_msg(!unsafe(html), "unescaped name in the HTML");
    ck_assert_ptr_nonnull(strstr(html, "&lt;script&gt;x&lt;/script&gt;"));
    free(svg);
    free(html);
    cost_result_free(&r);
    fmt_strategy_free(&s);
    fmt_model_free(&m);
    fmt_cluster_free(&c);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("report_escape");
    TCase *tc = tcase_create("escape");

    tcase_add_test(tc, names_are_escaped);
    suite_add_tcase(su, tc);
    return tu_run(su);
}
