/* tests/test_util_jsontext.c: JSON written as text into a buffer
 * (util_json_buf_num, util_json_buf_str) reads back, through cJSON, as
 * the items util_json_num and util_json_str make, and as the value
 * written: quotes, backslashes, control characters, multi-byte UTF-8,
 * bytes that are not UTF-8, numbers whole and not, -0, not finite. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <cjson/cJSON.h>

#include "util.h"
#include "testutil.h"

/* The text of b parsed; the buffer is emptied. */
static cJSON *parse_buf(util_buf *b)
{
    cJSON *v;

    ck_assert(!b->failed);
    ck_assert_ptr_nonnull(b->p);
    v = cJSON_Parse(b->p);
    ck_assert_msg(v != NULL, "not JSON: %s", b->p);
    free(b->p);
    memset(b, 0, sizeof *b);
    return v;
}

START_TEST(strings_read_back)
{
    static const char *const in[] = {
        "", "plain", "a \"quoted\" name", "back\\slash", "tab\tnew\nline\rcr",
        "\x01\x1f bell\x07", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
        "bad \xff\xfe end", "cut \xe2\x82", "\xc0\xaf overlong", "del \x7f", NULL};
    int i;

    for (i = 0; in[i] != NULL; i++) {
        util_buf b = {0};
        cJSON *got, *want = util_json_str(in[i]);
        util_json_buf_str(&b, in[i]);
        ck_assert_ptr_null(memchr(b.p, '\n', b.len)); /* one line */
        got = parse_buf(&b);
        ck_assert_msg(cJSON_IsString(got) && cJSON_IsString(want), "case %d", i);
        ck_assert_msg(strcmp(got->valuestring, want->valuestring) == 0,
                      "case %d: '%s', want '%s'", i, got->valuestring,
                      want->valuestring);
        cJSON_Delete(got);
        cJSON_Delete(want);
    }
    /* the repair itself: one U+FFFD for each byte that is not UTF-8 */
    {
        util_buf b = {0};
        cJSON *got;
        util_json_buf_str(&b, "a\xff\xfe" "b");
        got = parse_buf(&b);
        ck_assert_str_eq(got->valuestring, "a\xef\xbf\xbd\xef\xbf\xbd" "b");
        cJSON_Delete(got);
        util_json_buf_str(&b, NULL);
        got = parse_buf(&b);
        ck_assert(cJSON_IsNull(got));
        cJSON_Delete(got);
    }
}
END_TEST

START_TEST(numbers_read_back)
{
    static const double in[] = {0.0, -0.0, 1.0, -7.0, 131071.0, 999999999999999.0,
                                1e15, 1e16, 0.1, 32.726, -2.5e-300, 1.7976931348623157e308,
                                1.0 / 3.0};
    size_t i;

    for (i = 0; i < sizeof in / sizeof in[0]; i++) {
        util_buf b = {0};
        cJSON *got, *item = util_json_num(in[i]);
        char *want = cJSON_PrintUnformatted(item);
        util_json_buf_num(&b, in[i]);
        ck_assert_msg(strcmp(b.p, want) == 0, "%.17g: '%s', want '%s'", in[i], b.p,
                      want);
        got = parse_buf(&b);
        ck_assert_msg(got->valuedouble == in[i], "%.17g read back as %.17g", in[i],
                      got->valuedouble);
        ck_assert_int_eq(signbit(got->valuedouble) != 0, signbit(in[i]) != 0);
        cJSON_Delete(got);
        cJSON_Delete(item);
        free(want);
    }
    {
        util_buf b = {0};
        util_json_buf_num(&b, NAN);
        util_buf_add(&b, ",", 1);
        util_json_buf_num(&b, INFINITY);
        ck_assert_str_eq(b.p, "null,null");
        free(b.p);
    }
}
END_TEST

static Suite *jsontext_suite(void)
{
    Suite *s = suite_create("jsontext");
    TCase *tc = tcase_create("core");

    tcase_add_test(tc, strings_read_back);
    tcase_add_test(tc, numbers_read_back);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return tu_run(jsontext_suite());
}
