/* tests/test_commands_docs.c: what the pages of docs/ (Markdown and
 * planner.1) and README.md claim about the command line holds for the current binary (the
 * conventions: docs/testing.md, "The docs test").
 *
 * - Help: every fenced block after "<!-- help: CMD -->" equals the output
 *   of `planner CMD --help` byte for byte.
 * - Command lines: every planner command line in a code block (fenced,
 *   indented, or .nf/.fi in the man page) runs in a scratch directory laid
 *   out like the repository (examples/, ../shared/data), one per page, in
 *   the page's order.  A block whose lines start with "$ " is a session:
 *   each other line (but "...") must be a line of the command's output
 *   (stdout, then stderr), in order.  Each command exits 0, the block's
 *   last one N when the text after the block starts "(exit status N)".
 *   Numbers of four or more significant digits in the paragraph after a
 *   session are figures of its output.  A block that cannot run here is
 *   marked "<!-- not run: WHY -->" (".\" not run: WHY" in the man page) and
 *   counted.  Blocks naming ../shared/data run in the _data suite.
 * - Option tables ("| option | default |", marked "<!-- options: CMD -->"):
 *   each option is one of `planner CMD --help`, and its default is the
 *   one --help states.
 * - Exit code lists ("Exit codes ...", the table of codes, a paragraph
 *   marked "<!-- exit codes: CMD -->", the man page's EXIT STATUS) name
 *   the codes of the command's --help.
 * scripts/update-docs.py rewrites help blocks and sessions from the
 * binary (review its diff). */
#include <check.h>
#include <ctype.h>
#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "testutil.h"

#define PATHN 4096

static char tmp_dir[1024];

/* ---- small helpers ---------------------------------------------------- */

typedef struct strv {
    char **v;
    int n, cap;
} strv;

static void sv_push(strv *s, const char *x, size_t len)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        s->v = realloc(s->v, (size_t)s->cap * sizeof *s->v);
        ck_assert_ptr_nonnull(s->v);
    }
    s->v[s->n] = malloc(len + 1);
    ck_assert_ptr_nonnull(s->v[s->n]);
    memcpy(s->v[s->n], x, len);
    s->v[s->n][len] = '\0';
    s->n++;
}

static void sv_free(strv *s)
{
    while (s->n > 0)
        free(s->v[--s->n]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static strv split_lines(const char *t)
{
    strv s = {0};
    const char *nl;

    while (*t) {
        nl = strchr(t, '\n');
        if (nl == NULL)
            nl = t + strlen(t);
        sv_push(&s, t, (size_t)(nl - t));
        t = *nl ? nl + 1 : nl;
    }
    return s;
}

static int indent_of(const char *l)
{
    int k = 0;

    while (l[k] == ' ')
        k++;
    return k;
}

static int blank(const char *l)
{
    return l[strspn(l, " \t")] == '\0';
}

static int starts(const char *s, const char *p)
{
    return strncmp(s, p, strlen(p)) == 0;
}

/* A growing text: the failures found, printed at the end. */
typedef struct sbuf {
    char *s;
    size_t n, cap;
    int count;
} sbuf;

static void sb_add(sbuf *b, const char *fmt, ...) UTIL_PRINTF_LIKE(2, 3);
static void sb_add(sbuf *b, const char *fmt, ...)
{
    va_list ap;
    int k;

    va_start(ap, fmt);
    k = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    ck_assert_int_ge(k, 0);
    if (b->n + (size_t)k + 2 > b->cap) {
        b->cap = (b->n + (size_t)k + 2) * 2;
        b->s = realloc(b->s, b->cap);
        ck_assert_ptr_nonnull(b->s);
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->n, (size_t)k + 1, fmt, ap);
    va_end(ap);
    b->n += (size_t)k;
    b->s[b->n++] = '\n';
    b->s[b->n] = '\0';
}

static void fail_if_any(sbuf *f, const char *what)
{
    if (f->count > 0) {
        printf("%s", f->s);
        fflush(stdout);
    }
    ck_assert_msg(f->count == 0, "%d %s (listed above)", f->count, what);
    free(f->s);
}

/* Output of a shell command, stderr after stdout; *status its exit code. */
static char *capture(const char *cmd, int *status)
{
    char so[1100], se[1100], *full, *o, *e, *all;
    size_t n = strlen(cmd) + 2 * sizeof so + 32;
    int st;

    snprintf(so, sizeof so, "%s/cmd.out", tmp_dir);
    snprintf(se, sizeof se, "%s/cmd.err", tmp_dir);
    full = malloc(n);
    ck_assert_ptr_nonnull(full);
    ck_assert_int_lt(snprintf(full, n, "( %s ) </dev/null >'%s' 2>'%s'", cmd, so, se),
                     (int)n);
    st = system(full);
    free(full);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
    o = tu_slurp(so);
    e = tu_slurp(se);
    all = malloc(strlen(o ? o : "") + strlen(e ? e : "") + 1);
    ck_assert_ptr_nonnull(all);
    strcpy(all, o ? o : "");
    strcat(all, e ? e : "");
    free(o);
    free(e);
    return all;
}

static const char *const commands[] = {"plan", "evaluate", "calibrate", "export",
                                       "report", "whatif", "replan",
                                       "decentralized", "inspect"};
#define NCMD ((int)TU_N(commands))

static int command_index(const char *w, size_t len)
{
    int i;

    for (i = 0; i < NCMD; i++)
        if (strlen(commands[i]) == len && strncmp(commands[i], w, len) == 0)
            return i;
    return -1;
}

/* `planner CMD --help` (`planner --help` for plan), cached. */
static const char *help_of(int cmd)
{
    static char *cache[9];
    char sh[PATHN];
    int st;

    if (cache[cmd] == NULL) {
        if (cmd == 0)
            snprintf(sh, sizeof sh, "'%s' --help", HETPLAN_PLANNER);
        else
            snprintf(sh, sizeof sh, "'%s' %s --help", HETPLAN_PLANNER, commands[cmd]);
        cache[cmd] = tu_capture(sh, &st);
        ck_assert_int_eq(st, 0);
    }
    return cache[cmd];
}

/* ---- the pages and their blocks --------------------------------------- */

typedef struct page {
    char rel[256];  /* path from the source directory */
    strv lines;
    int man;        /* docs/planner.1 */
} page;

typedef struct pages {
    page *v;
    int n;
} pages;

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The man page's text with roff's escapes of '-', '\' and quotes undone. */
static char *unroff(const char *l)
{
    char *o = malloc(strlen(l) + 1), *w = o;

    ck_assert_ptr_nonnull(o);
    while (*l) {
        if (l[0] == '\\' && l[1] == '-')
            *w++ = '-', l += 2;
        else if (l[0] == '\\' && l[1] == 'e')
            *w++ = '\\', l += 2;
        else if (starts(l, "\\(aq"))
            *w++ = '\'', l += 4;
        else if (l[0] == '\\' && l[1] == '&')
            l += 2;
        else
            *w++ = *l++;
    }
    *w = '\0';
    return o;
}

static pages load_pages(void)
{
    pages ps = {0};
    DIR *d = opendir(HETPLAN_SOURCE_DIR "/docs");
    struct dirent *e;
    strv names = {0};
    int i;

    ck_assert_ptr_nonnull(d);
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 3 && strcmp(e->d_name + n - 3, ".md") == 0)
            sv_push(&names, e->d_name, n);
    }
    closedir(d);
    qsort(names.v, (size_t)names.n, sizeof *names.v, cmp_str);
    ps.v = calloc((size_t)names.n + 2, sizeof *ps.v);
    ck_assert_ptr_nonnull(ps.v);
    for (i = 0; i < names.n + 2; i++) {
        page *p = &ps.v[ps.n++];
        char path[PATHN], *text;
        if (i < names.n)
            snprintf(p->rel, sizeof p->rel, "docs/%s", names.v[i]);
        else
            snprintf(p->rel, sizeof p->rel, "%s",
                     i == names.n ? "README.md" : "docs/planner.1");
        p->man = i == names.n + 1;
        snprintf(path, sizeof path, "%s/%s", HETPLAN_SOURCE_DIR, p->rel);
        text = tu_slurp(path);
        ck_assert_msg(text != NULL, "cannot read %s", path);
        p->lines = split_lines(text);
        free(text);
    }
    sv_free(&names);
    return ps;
}

static void free_pages(pages *ps)
{
    int i;

    for (i = 0; i < ps->n; i++)
        sv_free(&ps->v[i].lines);
    free(ps->v);
}

typedef struct block {
    const page *pg;
    int line;          /* 1-based line of its first content line */
    strv lines;        /* content, the block's indentation removed */
    char marker[512];  /* inside of the comment right before it, or "" */
    int exit_status;   /* "(exit status N)" after it; -1 when not stated */
    char *after;       /* the paragraph after it, lines joined */
} block;

typedef struct blocks {
    block *v;
    int n, cap;
} blocks;

/* The comment on the last non-blank line before line i ("" none). */
static void marker_before(const page *pg, int i, char *out, size_t n)
{
    const char *l;
    size_t len;

    out[0] = '\0';
    while (--i >= 0) {
        l = pg->lines.v[i];
        if (blank(l))
            continue;
        if (pg->man && (strcmp(l, ".PP") == 0 || strcmp(l, ".RS") == 0))
            continue;
        l += indent_of(l);
        if (!pg->man && starts(l, "<!--") && (len = strlen(l)) >= 7 &&
            strcmp(l + len - 3, "-->") == 0) {
            snprintf(out, n, "%.*s", (int)(len - 7), l + 4);
        } else if (pg->man && starts(l, ".\\\" ")) {
            snprintf(out, n, "%s", l + 4);
        } else {
            return;
        }
        while ((len = strlen(out)) > 0 && out[len - 1] == ' ')
            out[len - 1] = '\0';
        memmove(out, out + strspn(out, " "), strlen(out + strspn(out, " ")) + 1);
        return;
    }
}

/* s + sep + t in a new string; s freed. */
static char *append(char *s, const char *sep, const char *t)
{
    size_t a = s ? strlen(s) : 0;
    char *r = realloc(s, a + strlen(sep) + strlen(t) + 1);

    ck_assert_ptr_nonnull(r);
    if (a == 0)
        r[0] = '\0';
    else
        strcat(r, sep);
    strcat(r, t);
    return r;
}

/* The paragraph starting at the first non-blank line from i, its lines
 * joined by spaces (caller frees). */
static char *paragraph_from(const page *pg, int i)
{
    char *s = append(NULL, "", "");

    while (i < pg->lines.n && blank(pg->lines.v[i]))
        i++;
    for (; i < pg->lines.n && !blank(pg->lines.v[i]); i++) {
        const char *l = pg->lines.v[i] + indent_of(pg->lines.v[i]);
        if (starts(l, "```") || starts(l, "#"))
            break;
        s = append(s, " ", l);
    }
    return s;
}

static void add_block(blocks *bs, const page *pg, int first, int end, int ind,
                      int mark_at, int after_at)
{
    block *b;
    int k;

    if (bs->n == bs->cap) {
        bs->cap = bs->cap ? 2 * bs->cap : 64;
        bs->v = realloc(bs->v, (size_t)bs->cap * sizeof *bs->v);
        ck_assert_ptr_nonnull(bs->v);
    }
    b = &bs->v[bs->n++];
    memset(b, 0, sizeof *b);
    b->pg = pg;
    b->line = first + 1;
    for (k = first; k < end; k++) {
        const char *l = pg->lines.v[k];
        char *u;
        int cut = indent_of(l) < ind ? indent_of(l) : ind;
        if (pg->man) {
            if (strcmp(l, ".RS") == 0 || strcmp(l, ".RE") == 0)
                continue;
            u = unroff(l);
            sv_push(&b->lines, u, strlen(u));
            free(u);
        } else {
            sv_push(&b->lines, l + cut, strlen(l + cut));
        }
    }
    marker_before(pg, mark_at, b->marker, sizeof b->marker);
    b->after = after_at < 0 ? strdup("") : paragraph_from(pg, after_at);
    ck_assert_ptr_nonnull(b->after);
    b->exit_status = starts(b->after, "(exit status ") ? atoi(b->after + 13) : -1;
}

/* The code blocks of a page: fenced and indented ones of Markdown, the
 * .nf/.fi ones of the man page. */
static blocks page_blocks(const page *pg)
{
    blocks bs = {0};
    const strv *L = &pg->lines;
    int i = 0, j, end;

    while (i < L->n) {
        const char *l = L->v[i];
        int ind = indent_of(l);
        if (pg->man) {
            if (strcmp(l, ".nf") == 0) {
                for (j = i + 1; j < L->n && strcmp(L->v[j], ".fi") != 0; j++)
                    ;
                add_block(&bs, pg, i + 1, j, 0, i, -1);
                i = j + 1;
                continue;
            }
        } else if (starts(l + ind, "```")) {
            for (j = i + 1; j < L->n && !starts(L->v[j] + indent_of(L->v[j]), "```"); j++)
                ;
            add_block(&bs, pg, i + 1, j, ind, i, j + 1);
            i = j + 1;
            continue;
        } else if (ind >= 4 && !blank(l) && (i == 0 || blank(L->v[i - 1]))) {
            for (j = i; j < L->n && (blank(L->v[j]) || indent_of(L->v[j]) >= ind); j++)
                ;
            for (end = j; end > i && blank(L->v[end - 1]); end--)
                ;
            add_block(&bs, pg, i, end, ind, i, end);
            i = j;
            continue;
        }
        i++;
    }
    return bs;
}

static void free_blocks(blocks *bs)
{
    int i;

    for (i = 0; i < bs->n; i++) {
        sv_free(&bs->v[i].lines);
        free(bs->v[i].after);
    }
    free(bs->v);
}

/* Length of the program word at s when it is the planner (`planner`,
 * `build/planner`, `./planner`, ...) followed by a space or the end. */
static size_t planner_word(const char *s)
{
    size_t n = strcspn(s, " ");

    if (s[n] != ' ' && s[n] != '\0')
        return 0;
    if (n == 7 && starts(s, "planner"))
        return n;
    if (n > 8 && strncmp(s + n - 8, "/planner", 8) == 0 &&
        strcspn(s, "=$`'\"") >= n)
        return n;
    return 0;
}

/* 1 when line calls the planner other than as its first word (after
 * "&&", ";", "|", "$(" or a backquote). */
static int planner_inside(const char *l)
{
    const char *p;

    for (p = l; *p; p++)
        if ((*p == '&' && p[1] == '&') || *p == ';' || *p == '|' ||
            (*p == '$' && p[1] == '(') || *p == '`') {
            const char *q = p + (p[1] == '&' || p[1] == '(' ? 2 : 1);
            q += strspn(q, " ");
            if (planner_word(q) > 0)
                return 1;
        }
    return 0;
}

/* ---- running the command lines ---------------------------------------- */

typedef struct counts {
    int run, sessions, not_run, data_left, compared_lines, figures;
} counts;

/* A scratch directory like the repository for page number k: returns
 * its repo/. */
static void sandbox(int k, int data, char *repo, size_t n)
{
    char base[PATHN / 2], path[PATHN];
    struct stat st;

    snprintf(base, sizeof base, "%s/page%d%s", tmp_dir, k, data ? "d" : "");
    snprintf(repo, n, "%s/repo", base);
    if (stat(repo, &st) == 0)
        return;
    ck_assert_int_eq(mkdir(base, 0777), 0);
    ck_assert_int_eq(mkdir(repo, 0777), 0);
    ck_assert_int_lt(snprintf(path, sizeof path, "%s/examples", repo), (int)sizeof path);
    ck_assert_int_eq(symlink(HETPLAN_SOURCE_DIR "/examples", path), 0);
    snprintf(path, sizeof path, "%s/shared", base);
    ck_assert_int_eq(mkdir(path, 0777), 0);
    snprintf(path, sizeof path, "%s/shared/data", base);
    ck_assert_int_eq(symlink(TU_DATA, path), 0);
}

/* The line of got (from at) that is want (trailing blanks aside); NULL. */
static const char *find_line(const char *got, const char *at, const char *want)
{
    size_t len = strlen(want);
    const char *hit, *e;

    for (hit = strstr(at, want); hit != NULL; hit = strstr(hit + 1, want)) {
        if (hit != got && hit[-1] != '\n')
            continue;
        for (e = hit + len; *e == ' '; e++)
            ;
        if (*e == '\n' || *e == '\0')
            return hit;
    }
    return NULL;
}

/* 1 when the number text num (digits and one '.') is in out, not as part
 * of a longer number. */
static int has_figure(const char *out, const char *num)
{
    size_t len = strlen(num);
    const char *h;

    for (h = strstr(out, num); h != NULL; h = strstr(h + 1, num)) {
        int before = h > out && (isdigit((unsigned char)h[-1]) || h[-1] == '.');
        int after = isdigit((unsigned char)h[len]) ||
                    (h[len] == '.' && isdigit((unsigned char)h[len + 1]));
        if (!before && !after)
            return 1;
    }
    return 0;
}

/* The figures of text (numbers with a fraction and at least four
 * significant digits) that out does not print, reported in f. */
static void check_figures(const block *b, const char *text, const char *out,
                          counts *c, sbuf *f)
{
    const char *p = text;

    while (*p) {
        if (isdigit((unsigned char)*p) && (p == text || (!isalnum((unsigned char)p[-1]) &&
                                                         p[-1] != '.' && p[-1] != '_'))) {
            const char *q = p;
            int sig = 0, dot = 0, lead = 1;
            char num[64];
            for (; isdigit((unsigned char)*q) ||
                   (*q == '.' && !dot && isdigit((unsigned char)q[1]));
                 q++) {
                if (*q == '.') {
                    dot = 1;
                    continue;
                }
                if (*q != '0')
                    lead = 0;
                if (!lead)
                    sig++;
            }
            if (dot && sig >= 4 && q - p < (long)sizeof num && !isalpha((unsigned char)*q)) {
                snprintf(num, sizeof num, "%.*s", (int)(q - p), p);
                c->figures++;
                if (!has_figure(out, num)) {
                    f->count++;
                    sb_add(f, "%s:%d: the text after the session quotes %s, which "
                              "its commands do not print", b->pg->rel, b->line, num);
                }
            }
            p = q;
            continue;
        }
        p++;
    }
}

typedef struct cmdline {
    char *text;    /* the command, continuation lines joined */
    int line;
    int first;     /* index of its first output line in the block */
    int end;       /* index after its last output line */
} cmdline;

/* The planner command lines of block b in cs (at most max), continuation
 * lines joined; in a session each with the range of its output lines.
 * Lines that call the planner inside another command are counted in
 * *inside.  Returns the number in cs. */
static int block_commands(const block *b, int session, cmdline *cs, int max, int *inside,
                          sbuf *f, int report)
{
    int nc = 0, i;

    *inside = 0;
    for (i = 0; i < b->lines.n; i++) {
        const char *l = b->lines.v[i];
        const char *body = session ? (starts(l, "$ ") ? l + 2 : NULL) : l;
        int first = i;
        char *t;
        if (body == NULL)
            continue; /* output of a session */
        if (planner_word(body) == 0) {
            if (session && report) {
                f->count++;
                sb_add(f, "%s:%d: a session runs only the planner; mark the block "
                          "<!-- not run: WHY --> or leave '%s' out", b->pg->rel,
                       b->line + i, body);
            }
            if (planner_inside(body)) {
                (*inside)++;
                if (report) {
                    f->count++;
                    sb_add(f, "%s:%d: '%s' calls the planner inside another command: "
                              "mark the block <!-- not run: WHY -->", b->pg->rel,
                           b->line + i, l);
                }
            }
            continue;
        }
        t = append(NULL, "", body);
        while (strlen(t) > 0 && t[strlen(t) - 1] == '\\' && i + 1 < b->lines.n) {
            t[strlen(t) - 1] = '\0';
            i++;
            t = append(t, "", b->lines.v[i] + indent_of(b->lines.v[i]));
        }
        ck_assert_int_lt(nc, max);
        cs[nc].text = t;
        cs[nc].line = b->line + first;
        cs[nc].first = cs[nc].end = i + 1;
        if (session)
            while (cs[nc].end < b->lines.n && !starts(b->lines.v[cs[nc].end], "$ "))
                cs[nc].end++;
        nc++;
    }
    return nc;
}

/* Run the command lines of block b (the blocks of a page run in order in
 * the same directory); data: the blocks naming ../shared/data (1) or the
 * others (0). */
static void run_block(const block *b, int page_no, int data, counts *c, sbuf *f)
{
    cmdline cs[64];
    int nc, i, session = 0, uses_data = 0, inside, not_run;
    char repo[PATHN], *all;

    if (starts(b->marker, "help:"))
        return;
    for (i = 0; i < b->lines.n; i++)
        session |= starts(b->lines.v[i], "$ ");
    not_run = starts(b->marker, "not run:");
    nc = block_commands(b, session, cs, (int)TU_N(cs), &inside, f, !not_run && !data);
    for (i = 0; i < nc; i++)
        uses_data |= strstr(cs[i].text, "../shared/data") != NULL;
    if (not_run || inside > 0 || uses_data != data) {
        if (!data && not_run && nc + inside > 0) {
            c->not_run += nc + inside;
            printf("  not run: %s:%d: %d command line%s (%s)\n", b->pg->rel, b->line,
                   nc + inside, nc + inside == 1 ? "" : "s",
                   b->marker + 8 + strspn(b->marker + 8, " "));
        } else if (!data && !not_run && uses_data) {
            c->data_left += nc;
        }
        for (i = 0; i < nc; i++)
            free(cs[i].text);
        return;
    }
    if (nc == 0)
        return;
    sandbox(page_no, data, repo, sizeof repo);
    all = append(NULL, "", "");
    for (i = 0; i < nc; i++) {
        char sh[PATHN * 3], *got;
        const char *at;
        int st, want = i == nc - 1 && b->exit_status >= 0 ? b->exit_status : 0, k;
        size_t w = planner_word(cs[i].text);

        snprintf(sh, sizeof sh, "cd '%s' && '%s'%s", repo, HETPLAN_PLANNER, cs[i].text + w);
        got = capture(sh, &st);
        c->run++;
        if (getenv("DOCS_DEBUG"))
            printf("  ran %s:%d: %s (exit %d)\n", b->pg->rel, cs[i].line, cs[i].text, st);
        if (st != want) {
            f->count++;
            sb_add(f, "%s:%d: '%s' exits %d, the page says %d; it prints:\n%.1500s",
                   b->pg->rel, cs[i].line, cs[i].text, st, want, got);
        }
        if (session)
            c->sessions++;
        at = got;
        for (k = cs[i].first; session && k < cs[i].end; k++) {
            char line[PATHN];
            size_t len;
            const char *hit;
            snprintf(line, sizeof line, "%s", b->lines.v[k]);
            len = strlen(line);
            while (len > 0 && line[len - 1] == ' ')
                line[--len] = '\0';
            if (len == 0 || strcmp(line + strspn(line, " "), "...") == 0)
                continue; /* an elision */
            c->compared_lines++;
            hit = find_line(got, at, line);
            if (hit == NULL) {
                f->count++;
                sb_add(f, "%s:%d: the output of '%.200s' has no line '%.200s' (after "
                          "the lines before it); it prints:\n%.1500s",
                       b->pg->rel, b->line + k, cs[i].text, line, got);
                break;
            }
            at = hit + len;
        }
        all = append(all, "\n", got);
        free(got);
        free(cs[i].text);
    }
    if (session)
        check_figures(b, b->after, all, c, f);
    free(all);
}

static void run_pages(int data)
{
    pages ps = load_pages();
    counts c = {0};
    sbuf f = {0};
    int i, k;

    printf("%s\n", data ? "docs: command lines that read ../shared/data"
                        : "docs: command lines");
    for (i = 0; i < ps.n; i++) {
        blocks bs = page_blocks(&ps.v[i]);
        for (k = 0; k < bs.n; k++)
            run_block(&bs.v[k], i, data, &c, &f);
        free_blocks(&bs);
    }
    if (data)
        printf("docs: %d command lines run (%d sessions, %d output lines and %d "
               "figures compared)\n", c.run, c.sessions, c.compared_lines, c.figures);
    else
        printf("docs: %d command lines run (%d sessions, %d output lines and %d "
               "figures compared), %d marked not run, %d left to the _data "
               "entry\n", c.run, c.sessions, c.compared_lines, c.figures, c.not_run,
               c.data_left);
    fflush(stdout);
    free_pages(&ps);
    fail_if_any(&f, "docs claims differ from the binary");
    ck_assert_int_ge(c.run, data ? 3 : 10);
}

START_TEST(command_lines_without_data)
{
    run_pages(0);
}
END_TEST

START_TEST(command_lines_with_data)
{
    run_pages(1);
}
END_TEST

/* ---- help blocks ------------------------------------------------------ */

START_TEST(cli_md_help_matches_the_binary)
{
    pages ps = load_pages();
    int seen[NCMD] = {0}, n = 0, i, k;
    sbuf f = {0};

    for (i = 0; i < ps.n; i++) {
        blocks bs = page_blocks(&ps.v[i]);
        for (k = 0; k < bs.n; k++) {
            const block *b = &bs.v[k];
            sbuf want = {0};
            const char *got;
            int c, j;
            if (!starts(b->marker, "help: "))
                continue;
            c = command_index(b->marker + 6, strlen(b->marker + 6));
            ck_assert_msg(c >= 0, "%s:%d: help of an unknown command '%s'", b->pg->rel,
                          b->line, b->marker + 6);
            for (j = 0; j < b->lines.n; j++)
                sb_add(&want, "%s", b->lines.v[j]);
            got = help_of(c);
            if (strcmp(want.s ? want.s : "", got) != 0) {
                size_t p = 0, line = 1, ls = 0;
                for (; want.s[p] && want.s[p] == got[p]; p++)
                    if (want.s[p] == '\n')
                        line++, ls = p + 1;
                f.count++;
                sb_add(&f, "%s:%d: another help text for '%s' than 'planner %s --help' "
                           "prints, from its line %zu:\ndocs:   %.160s\nbinary: %.160s",
                       b->pg->rel, b->line, commands[c], commands[c], line, want.s + ls,
                       got + ls);
            }
            seen[c] = 1;
            n++;
            free(want.s);
        }
        free_blocks(&bs);
    }
    for (i = 0; i < NCMD; i++)
        if (!seen[i]) {
            f.count++;
            sb_add(&f, "docs/cli.md quotes no help text of '%s'", commands[i]);
        }
    printf("docs: %d help texts compared\n", n);
    free_pages(&ps);
    fail_if_any(&f, "help texts differ");
}
END_TEST

/* ---- option defaults -------------------------------------------------- */

/* The help entry of option opt in help: its line and continuation lines
 * joined (caller frees), *meta the text between the name and the
 * description; NULL when --help does not list it. */
static char *help_entry(const char *help, const char *opt, char *meta, size_t mn)
{
    strv L = split_lines(help);
    char *res = NULL;
    int i;
    size_t on = strlen(opt);

    meta[0] = '\0';
    for (i = 0; i < L.n && res == NULL; i++) {
        const char *l = L.v[i], *p = l + indent_of(l);
        int hit = 0;
        if (indent_of(l) < 2 || indent_of(l) > 6 || p[0] != '-')
            continue;
        /* names: "-x, --name" */
        while (p[0] == '-') {
            size_t n = strcspn(p, " ,=[");
            if (n == on && strncmp(p, opt, on) == 0)
                hit = 1;
            p += n;
            if (p[0] == ',' && p[1] == ' ' && p[2] == '-')
                p += 2;
            else
                break;
        }
        if (!hit)
            continue;
        {
            const char *d = strstr(p, "  ");
            sbuf e = {0};
            int j;
            if (d == NULL)
                d = p + strlen(p);
            snprintf(meta, mn, "%.*s", (int)(d - p), p);
            sb_add(&e, "%s", d + strspn(d, " "));
            for (j = i + 1; j < L.n && indent_of(L.v[j]) > 8 &&
                            L.v[j][indent_of(L.v[j])] != '-';
                 j++) {
                e.s[e.n - 1] = ' ';
                sb_add(&e, "%s", L.v[j] + indent_of(L.v[j]));
            }
            e.s[e.n - 1] = '\0';
            res = e.s;
        }
    }
    sv_free(&L);
    return res;
}

/* The default --help states in desc when it is one word (a number or a
 * keyword), in out; 0 when it states none or a phrase. */
static int help_default(const char *desc, const char *meta, char *out, size_t n)
{
    const char *p = strstr(desc, "(default");
    size_t k;

    if (p == NULL)
        return 0;
    if (p[8] == ' ' || (p[8] == ':' && p[9] == ' ')) {
        /* "(default X)", "(default X; ...)", "(default: X)" */
        const char *v = p + 9 + (p[8] == ':');
        k = strcspn(v, " ;,:)");
        if (k > 0 && strchr(";,:)", v[k]) != NULL && v[k] != '\0') {
            snprintf(out, n, "%.*s", (int)k, v);
            return 1;
        }
        if (p[8] == ':')
            return 0;
    }
    if (p[8] != ')' && p[8] != ';' && p[8] != ':')
        return 0;
    /* "WORD (default)": WORD one of the choices a|b|c of the metavar, or
     * the first word of the description */
    if (strchr(meta, '|') != NULL) {
        const char *m = meta + strspn(meta, " ");
        while (*m) {
            size_t w = strcspn(m, "| ");
            const char *h;
            for (h = desc; h < p; h++)
                if (strncasecmp(h, m, w) == 0 && (h == desc || !isalnum((unsigned char)h[-1])) &&
                    !isalnum((unsigned char)h[w]) && h[w] != '\'') {
                    snprintf(out, n, "%.*s", (int)w, m);
                    return 1;
                }
            m += w;
            if (*m != '|')
                break;
            m++;
        }
        return 0;
    }
    k = strcspn(desc, " ");
    if (desc + k + 1 == p) {
        snprintf(out, n, "%.*s", (int)k, desc);
        return 1;
    }
    return 0;
}

/* The cells of a table row, split at '|' but not at "\\|", trimmed. */
static strv cells(const char *row)
{
    strv s = {0};
    char buf[PATHN];
    size_t n = 0;
    const char *p = row + strspn(row, " ");

    if (*p == '|')
        p++;
    for (; *p; p++) {
        if (p[0] == '\\' && p[1] == '|') {
            if (n < sizeof buf - 1)
                buf[n++] = '|';
            p++;
        } else if (*p == '|') {
            size_t lead = 0;
            while (n > 0 && buf[n - 1] == ' ')
                n--;
            while (lead < n && buf[lead] == ' ')
                lead++;
            sv_push(&s, buf + lead, n - lead);
            n = 0;
        } else if (n < sizeof buf - 1) {
            buf[n++] = *p;
        }
    }
    return s;
}

/* Roff text without its font macros and quotes: ".BR a " b"" -> "a b". */
static char *plain_roff(const char *l)
{
    char *u = unroff(l), *r, *w;

    if (u[0] == '.') {
        size_t k = strcspn(u, " ");
        memmove(u, u + k + (u[k] == ' '), strlen(u + k + (u[k] == ' ')) + 1);
    }
    for (r = w = u; *r; r++) {
        if (*r == '"')
            continue;
        if (r[0] == '\\' && r[1] == 'f' && r[2] != '\0') {
            r += 2;
            continue;
        }
        *w++ = *r;
    }
    *w = '\0';
    return u;
}

/* The man page's OPTIONS (those of plan and evaluate): each one-word
 * default it states must be the one `planner --help` states. */
static void man_defaults(const page *pg, int *rows, int *compared, sbuf *f)
{
    int k, in = 0;

    for (k = 0; k < pg->lines.n; k++) {
        const char *l = pg->lines.v[k];
        char *head, *desc, opt[128], meta[256], hmeta[256], t[256], v[256], *entry;
        if (starts(l, ".SH"))
            in = strcmp(l, ".SH OPTIONS") == 0;
        if (!in || strcmp(l, ".TP") != 0 || k + 1 >= pg->lines.n)
            continue;
        head = plain_roff(pg->lines.v[++k]);
        if (!starts(head, "--")) {
            free(head);
            continue;
        }
        snprintf(opt, sizeof opt, "%.*s", (int)strcspn(head, " ,="), head);
        snprintf(meta, sizeof meta, "%s", head + strcspn(head, " ,="));
        desc = append(NULL, "", "");
        while (k + 1 < pg->lines.n && !starts(pg->lines.v[k + 1], ".TP") &&
               !starts(pg->lines.v[k + 1], ".S")) {
            char *x = plain_roff(pg->lines.v[++k]);
            desc = append(desc, " ", x);
            free(x);
        }
        (*rows)++;
        entry = help_entry(help_of(0), opt, hmeta, sizeof hmeta);
        if (entry == NULL) {
            f->count++;
            sb_add(f, "%s:%d: OPTIONS lists %s, which 'planner --help' does not", pg->rel,
                   k + 1, opt);
        } else if (help_default(desc, meta, v, sizeof v) &&
                   help_default(entry, hmeta, t, sizeof t)) {
            (*compared)++;
            if (getenv("DOCS_DEBUG"))
                printf("  man %s: docs '%s', help '%s'\n", opt, v, t);
            if (strcmp(v, t) != 0) {
                f->count++;
                sb_add(f, "%s:%d: %s: the default is '%s' here, 'planner --help' says '%s'",
                       pg->rel, k + 1, opt, v, t);
            }
        }
        free(entry);
        free(head);
        free(desc);
    }
}

START_TEST(option_defaults_match_help)
{
    pages ps = load_pages();
    int i, k, rows = 0, compared = 0, tables = 0;
    sbuf f = {0};

    for (i = 0; i < ps.n; i++) {
        const page *pg = &ps.v[i];
        int fence = 0;
        if (pg->man) {
            man_defaults(pg, &rows, &compared, &f);
            continue;
        }
        for (k = 0; k < pg->lines.n; k++) {
            const char *l = pg->lines.v[k];
            strv h;
            char mark[512];
            int cmd = -1;
            if (starts(l + indent_of(l), "```"))
                fence = !fence;
            if (fence || !starts(l, "|"))
                continue;
            h = cells(l);
            if (h.n < 2 || strcmp(h.v[0], "option") != 0 || strcmp(h.v[1], "default") != 0) {
                sv_free(&h);
                while (k + 1 < pg->lines.n && starts(pg->lines.v[k + 1], "|"))
                    k++;
                continue;
            }
            sv_free(&h);
            tables++;
            marker_before(pg, k, mark, sizeof mark);
            if (starts(mark, "options: "))
                cmd = command_index(mark + 9, strlen(mark + 9));
            if (cmd < 0) {
                f.count++;
                sb_add(&f, "%s:%d: an option table without <!-- options: COMMAND --> "
                           "before it", pg->rel, k + 1);
                continue;
            }
            for (k += 2; k < pg->lines.n && starts(pg->lines.v[k], "|"); k++) {
                strv r = cells(pg->lines.v[k]);
                const char *q;
                char v[256], t[256], meta[256];
                rows++;
                if (r.n < 2) {
                    sv_free(&r);
                    continue;
                }
                /* the doc's default: a `code` span or its first word */
                q = r.v[1];
                if (q[0] == '`')
                    snprintf(v, sizeof v, "%.*s", (int)strcspn(q + 1, "`"), q + 1);
                else
                    snprintf(v, sizeof v, "%.*s", (int)strcspn(q, " ,;("), q);
                /* every option named in the first cell */
                for (q = r.v[0]; (q = strchr(q, '`')) != NULL;) {
                    const char *o = q + 1, *close = strchr(o, '`');
                    char opt[128], *entry;
                    if (close == NULL)
                        break;
                    q = close + 1;
                    if (o[0] != '-' || o[1] != '-')
                        continue; /* the short forms: --help lists the long ones */
                    snprintf(opt, sizeof opt, "%.*s", (int)strcspn(o, " `="), o);
                    entry = help_entry(help_of(cmd), opt, meta, sizeof meta);
                    if (entry == NULL) {
                        f.count++;
                        sb_add(&f, "%s:%d: the table lists %s, which 'planner %s --help' "
                                   "does not", pg->rel, k + 1, opt, commands[cmd]);
                        continue;
                    }
                    if (help_default(entry, meta, t, sizeof t)) {
                        compared++;
                        if (getenv("DOCS_DEBUG"))
                            printf("  %s %s: docs '%s', help '%s'\n", commands[cmd], opt, v, t);
                        if (strcmp(v, t) != 0) {
                            f.count++;
                            sb_add(&f, "%s:%d: %s: the table's default is '%s', "
                                       "'planner %s --help' says '%s' (%s)", pg->rel, k + 1,
                                   opt, r.v[1], commands[cmd], t, entry);
                        }
                    }
                    free(entry);
                }
                sv_free(&r);
            }
            k--;
        }
    }
    printf("docs: %d option tables and the man page's OPTIONS, %d rows, %d defaults "
           "compared with --help\n",
           tables, rows, compared);
    free_pages(&ps);
    fail_if_any(&f, "option tables differ from --help");
    ck_assert_int_ge(compared, 10);
}
END_TEST

/* ---- exit code lists -------------------------------------------------- */

/* Remove (...) groups and `...` spans from s, in place. */
static void drop_asides(char *s)
{
    char *r = s, *w = s;
    int depth = 0, tick = 0;

    for (; *r; r++) {
        if (*r == '`')
            tick = !tick;
        else if (!tick && *r == '(')
            depth++;
        else if (!tick && *r == ')' && depth > 0)
            depth--;
        else if (!tick && depth == 0)
            *w++ = *r;
    }
    *w = '\0';
}

/* The codes of a list "0 ok, 1 internal, ..." or "0, 1, 2 (...), 3, 5"
 * or "0-5" (items split at ',', ';' and new lines): a bit set. */
static unsigned codes_of(const char *list)
{
    char *s = strdup(list), *it, *save = NULL;
    unsigned set = 0;

    ck_assert_ptr_nonnull(s);
    drop_asides(s);
    for (it = strtok_r(s, ",;\n", &save); it; it = strtok_r(NULL, ",;\n", &save)) {
        int a, b;
        it += strspn(it, " *");
        if (starts(it, "and "))
            it += 4;
        it += strspn(it, " *");
        if (!isdigit((unsigned char)*it))
            continue;
        a = atoi(it);
        it += strspn(it, "0123456789");
        if (*it == '-' && isdigit((unsigned char)it[1]))
            for (b = atoi(it + 1); a <= b && a < 32; a++)
                set |= 1u << a;
        else if (a < 32 && (*it == '\0' || *it == ' ' || *it == '*' || *it == '.' ||
                            *it == ':'))
            set |= 1u << a;
    }
    free(s);
    return set;
}

static unsigned help_codes(int cmd)
{
    const char *h = strstr(help_of(cmd), "exit codes:");

    ck_assert_msg(h != NULL, "'planner %s --help' has no exit codes", commands[cmd]);
    return codes_of(h + 11);
}

static void codes_text(unsigned set, char *out, size_t n)
{
    int i;
    size_t k = 0;

    out[0] = '\0';
    for (i = 0; i < 32; i++)
        if (set & (1u << i))
            k += (size_t)snprintf(out + k, n - k, "%s%d", k ? ", " : "", i);
}

static void compare_codes(const char *rel, int line, int cmd, unsigned got, sbuf *f,
                          int *checked)
{
    char a[128], b[128];
    unsigned want = help_codes(cmd);

    (*checked)++;
    if (got != want) {
        codes_text(got, a, sizeof a);
        codes_text(want, b, sizeof b);
        f->count++;
        sb_add(f, "%s:%d: the exit codes of '%s' listed here are %s; its --help "
                  "lists %s", rel, line, commands[cmd], a, b);
    }
}

/* The command a heading names: `planner` (plan), `planner CMD ...`;
 * -2 for another program (`hetplan-...`), -1 for none. */
static int heading_command(const char *h)
{
    const char *p = strstr(h, "`planner");

    if (p == NULL)
        return strstr(h, "`hetplan-") != NULL ? -2 : -1;
    p += 8;
    if (*p == '`')
        return 0;
    if (*p != ' ')
        return -1;
    p++;
    return command_index(p, strcspn(p, " `"));
}

START_TEST(exit_code_lists_match_help)
{
    pages ps = load_pages();
    int i, k, checked = 0;
    sbuf f = {0};

    for (i = 0; i < ps.n; i++) {
        const page *pg = &ps.v[i];
        int ctx[8], fence = 0, lvl, explicit_cmd = -1;
        for (lvl = 0; lvl < 8; lvl++)
            ctx[lvl] = -1;
        for (k = 0; k < pg->lines.n; k++) {
            const char *l = pg->lines.v[k];
            int cur = -1;
            if (pg->man) {
                if (strcmp(l, ".SH EXIT STATUS") == 0) {
                    unsigned set = 0;
                    for (k++; k < pg->lines.n && !starts(pg->lines.v[k], ".SH"); k++)
                        if (starts(pg->lines.v[k], ".B ") && isdigit((unsigned char)pg->lines.v[k][3]) &&
                            k > 0 && strcmp(pg->lines.v[k - 1], ".TP") == 0)
                            set |= 1u << atoi(pg->lines.v[k] + 3);
                    compare_codes(pg->rel, k, 0, set, &f, &checked);
                }
                continue;
            }
            if (starts(l + indent_of(l), "```"))
                fence = !fence;
            if (fence)
                continue;
            if (l[0] == '#') {
                lvl = (int)strspn(l, "#");
                if (lvl > 7)
                    lvl = 7;
                ctx[lvl] = heading_command(l);
                while (++lvl < 8)
                    ctx[lvl] = -1;
                explicit_cmd = -1;
                continue;
            }
            for (lvl = 7; lvl >= 0; lvl--)
                if (ctx[lvl] != -1) {
                    cur = ctx[lvl];
                    break;
                }
            if (starts(l, "<!-- exit codes: ")) {
                char *para = paragraph_from(pg, k + 1);
                explicit_cmd = command_index(l + 17, strcspn(l + 17, " -"));
                ck_assert_msg(explicit_cmd >= 0, "%s:%d: unknown command", pg->rel, k + 1);
                compare_codes(pg->rel, k + 2, explicit_cmd, codes_of(para), &f, &checked);
                free(para);
                continue;
            }
            if (cur < 0 || indent_of(l) >= 4)
                continue;
            if (starts(l, "| code |")) {
                unsigned set = 0;
                int at = k + 1;
                for (k += 2; k < pg->lines.n && starts(pg->lines.v[k], "|"); k++)
                    if (isdigit((unsigned char)pg->lines.v[k][2]))
                        set |= 1u << atoi(pg->lines.v[k] + 2);
                compare_codes(pg->rel, at, cur, set, &f, &checked);
                continue;
            }
            {
                const char *e = strstr(l, "Exit codes");
                char *para, *s, *end;
                if (e == NULL)
                    continue;
                /* the sentence from "Exit codes" to its full stop */
                para = paragraph_from(pg, k);
                s = strstr(para, "Exit codes");
                ck_assert_ptr_nonnull(s);
                s += 10;
                {
                    int depth = 0, tick = 0;
                    for (end = s; *end; end++) {
                        if (*end == '`')
                            tick = !tick;
                        else if (!tick && *end == '(')
                            depth++;
                        else if (!tick && *end == ')')
                            depth--;
                        else if (!tick && depth == 0 && *end == '.' &&
                                 (end[1] == ' ' || end[1] == '\0'))
                            break;
                    }
                }
                *end = '\0';
                s += strspn(s, ": ");
                compare_codes(pg->rel, k + 1, cur, codes_of(s), &f, &checked);
                free(para);
                while (k + 1 < pg->lines.n && !blank(pg->lines.v[k + 1]))
                    k++;
            }
        }
    }
    printf("docs: %d exit code lists compared with --help\n", checked);
    free_pages(&ps);
    fail_if_any(&f, "exit code lists differ from --help");
    ck_assert_int_ge(checked, 8);
}
END_TEST

static Suite *plain_suite(void)
{
    Suite *s = suite_create("docs");
    TCase *t = tcase_create("docs");

    tcase_set_timeout(t, 240);
    tcase_add_test(t, cli_md_help_matches_the_binary);
    tcase_add_test(t, option_defaults_match_help);
    tcase_add_test(t, exit_code_lists_match_help);
    tcase_add_test(t, command_lines_without_data);
    suite_add_tcase(s, t);
    return s;
}

static Suite *data_suite(void)
{
    Suite *s = suite_create("docs_data");
    TCase *t = tcase_create("command_lines");

    tcase_set_timeout(t, 240);
    tcase_add_test(t, command_lines_with_data);
    suite_add_tcase(s, t);
    return s;
}

int main(int argc, char **argv)
{
    const char *t = getenv("TMPDIR");
    int rc;

    snprintf(tmp_dir, sizeof tmp_dir, "%s/hetplan-docs.XXXXXX", t ? t : "/tmp");
    if (mkdtemp(tmp_dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    rc = tu_main(argc, argv, plain_suite, data_suite, TU_DATA "/amp");
    tu_remove_tree(tmp_dir);
    return rc;
}
