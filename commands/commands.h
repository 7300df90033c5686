/* commands/commands.h: what the files of the command layer share; private
 * to commands/.  The command layer is the only code that prints: every
 * message, table and document reaches stdout or stderr from here. */
#ifndef HETPLAN_COMMANDS_H
#define HETPLAN_COMMANDS_H

#include <stdio.h>

#include "plan.h"

/* ---- exit codes of the planner ---------------------------------------- */

enum cmd_exit {
    CMD_EXIT_OK = 0,        /* success */
    CMD_EXIT_INTERNAL = 1,  /* out of memory or internal error */
    CMD_EXIT_USAGE = 2,     /* bad command line */
    CMD_EXIT_INPUT = 3,     /* an input file is missing or invalid */
    CMD_EXIT_NOPLAN = 4,    /* no strategy fits the cluster */
    CMD_EXIT_OUTPUT = 5,    /* an output cannot be written */
    CMD_EXIT_REFUSED = 6,   /* an export cannot express the plan exactly */
    CMD_EXIT_TIMEOUT = 7    /* --time-limit ended the search early: the best
                               plan so far was written, or none was found */
};

/* ---- the subcommands -------------------------------------------------- */

/* Each runs one subcommand and returns its exit code.  argv[0] is the
 * command's name (or the program's, for plan by default); its options
 * start at argv[1]. */
int cmd_plan(int argc, char **argv);
int cmd_evaluate(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_decentralized(int argc, char **argv);
int cmd_whatif(int argc, char **argv);
int cmd_replan(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_inspect(int argc, char **argv);

/* The planner: runs the subcommand that argv[1] names, plan when argv[1]
 * is an option (argv as main() receives it); returns the exit code.
 * --help and --version after a subcommand's name print and exit(0)
 * (cmd_parse_options).  Called by main.c and, in-process, by the
 * command-line fuzz harness. */
int cmd_dispatch(int argc, char **argv);

/* Help of plan and evaluate, which is also the planner's own help. */
extern const char cmd_plan_usage[];
extern const char cmd_plan_usage_options[];

/* ---- option parsing (options.c) --------------------------------------- */

/* How the parser treats an option. */
enum cmd_option_kind {
    CMD_OPT_STRING = 1, /* *str = its value */
    CMD_OPT_INT,        /* *num = its value, an integer in lo..hi */
    CMD_OPT_SET,        /* *num = lo; takes no value */
    CMD_OPT_FORMAT,     /* --format table|json: *num = 1 for json */
    CMD_OPT_CALL,       /* its value goes to the parser's handle */
    CMD_OPT_PATH        /* *str = its value, a file or directory name ("" is
                           a usage error) */
};

/* An option a command accepts. */
typedef struct cmd_option {
    const char *name;   /* long form, "--cluster" */
    const char *alias;  /* short form, "-o", or NULL */
    int kind;           /* enum cmd_option_kind */
    const char **str;   /* CMD_OPT_STRING, _PATH: where the value goes */
    int *num;           /* CMD_OPT_INT, _SET, _FORMAT: where the number goes */
    int lo, hi;         /* CMD_OPT_INT: the range; CMD_OPT_SET: the number;
                         * CMD_OPT_CALL: lo = 1 when it may be repeated */
    int id;             /* CMD_OPT_CALL: passed to the handle */
} cmd_option;

/* Entries of an option table; the table ends with CMD_END. */
#define CMD_STRING(name, alias, p) {name, alias, CMD_OPT_STRING, p, NULL, 0, 0, 0}
#define CMD_INT(name, p, lo, hi) {name, NULL, CMD_OPT_INT, NULL, p, lo, hi, 0}
#define CMD_SET(name, alias, p, v) {name, alias, CMD_OPT_SET, NULL, p, v, 0, 0}
#define CMD_CALL(name, id) {name, NULL, CMD_OPT_CALL, NULL, NULL, 0, 0, id}
#define CMD_REPEAT(name, id) {name, NULL, CMD_OPT_CALL, NULL, NULL, 1, 0, id}
#define CMD_END {NULL, NULL, 0, NULL, NULL, 0, 0, 0}

/* The output options' values. */
typedef struct cmd_output_opts {
    const char *output;  /* --output FILE, or NULL */
    int json;            /* --format json */
    int quiet, verbose;
} cmd_output_opts;

/* Table entries of the output options that every command has, into the
 * cmd_output_opts *out. */
#define CMD_OUTPUT_OPTIONS(out)                                             \
    {"--output", "-o", CMD_OPT_PATH, &(out)->output, NULL, 0, 0, 0},        \
    {"--format", NULL, CMD_OPT_FORMAT, NULL, &(out)->json, 0, 0, 0},        \
    CMD_SET("--quiet", "-q", &(out)->quiet, 1),                             \
    CMD_SET("--verbose", "-v", &(out)->verbose, 1)

/* The inputs that plan, evaluate and calibrate read. */
typedef struct cmd_input_opts {
    const char *cluster, *model;        /* required */
    const char *profile, *amp_profile;  /* --profile FILE, --amp-profile FILE[:KEY] */
} cmd_input_opts;

/* Table entries of the input options, into the cmd_input_opts *in. */
#define CMD_INPUT_OPTIONS(in)                                               \
    CMD_STRING("--cluster", NULL, &(in)->cluster),                          \
    CMD_STRING("--model", NULL, &(in)->model),                              \
    CMD_STRING("--profile", NULL, &(in)->profile),                          \
    CMD_STRING("--amp-profile", NULL, &(in)->amp_profile)

/* A command's options and how it reports mistakes in them.  Values stored
 * point into argv. */
typedef struct cmd_parser {
    const char *usage;          /* printed on stdout by --help and -h */
    const cmd_option *options;  /* ends with CMD_END */
    const char *hint;           /* errors end "try 'planner HINT --help'";
                                 * NULL: the subcommand being run */
    const char *unknown;        /* appended to "unknown option 'X'", or NULL */
    int version;                /* --version prints the version */
    int value_first;            /* an unknown option at the end of the line
                                 * is reported as missing its value */
    /* CMD_OPT_CALL options: store value (opt as written); exit code */
    int (*handle)(void *ctx, int id, const char *opt, const char *value);
    void *ctx;
    const char *usage_more;     /* printed after usage, or NULL */
} cmd_parser;

/* Parse the options argv[1..argc-1] in order, storing each as its table
 * entry says; returns an exit code, after the message when not
 * CMD_EXIT_OK.  An option given twice is a usage error, except a flag
 * (CMD_OPT_SET) and a CMD_REPEAT entry, and so are --quiet with
 * --verbose.  --help and -h print the usage and exit with status 0, as
 * --version does where the parser accepts it. */
int cmd_parse_options(const cmd_parser *p, int argc, char **argv);

/* Print "planner: MESSAGE" and the hint line naming command (NULL: the
 * subcommand being run, else the planner's own help) on stderr; returns
 * CMD_EXIT_USAGE. */
int cmd_usage_error(const char *command, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Name the subcommand being run (NULL: plan by default) for the hint
 * line of cmd_usage_error. */
void cmd_set_command(const char *name);

/* --cluster and --model given: CMD_EXIT_OK, else CMD_EXIT_USAGE after the
 * message. */
int cmd_require_inputs(const cmd_input_opts *in);

/* Largest number of --param options. */
#define CMD_MAX_PARAMS 64

/* Keep a --param NAME=VALUE argument in params[*n] (not copied); exit
 * code. */
int cmd_add_param(const char **params, int *n, const char *v);

/* NAME (into name) and VALUE of a kept --param; 0 when VALUE is not a
 * number. */
int cmd_split_param(const char *p, char *name, size_t n, double *v);

/* ---- messages and output (common.c) ---------------------------------- */

/* Print the error (after the pending warnings) and return its exit
 * code. */
int cmd_report_error(const util_error *err);

/* Print the warnings about unknown keys in input files that the readers
 * recorded since the last call ("planner: warning: 'FILE': PATH: unknown
 * key ..."); cmd_dispatch collects them (fmt_warnings_use) and prints the
 * rest at the end of the run.  With the global option --strict they are
 * errors instead (exit 3). */
void cmd_warnings_flush(void);

/* The inputs of the plan d that changed since it was made
 * (plan_changed_inputs): with --strict an error (CMD_EXIT_INPUT after the
 * message), else a warning on stderr (unless quiet) naming each file,
 * both SHA-256 digests and what the plan recorded that now differs;
 * CMD_EXIT_OK.  For every command that reads a plan back. */
int cmd_plan_inputs_check(const plan_doc *d, int quiet);

/* --time-limit's value v into *seconds (> 0, at most a year): exit code,
 * after the message naming the command's help when not CMD_EXIT_OK. */
int cmd_parse_time_limit(const char *command, const char *v, double *seconds);

/* Print "out of memory"; returns CMD_EXIT_INTERNAL. */
int cmd_out_of_memory(void);

/* Print the version line on stdout. */
void cmd_print_version(void);

/* Write text to path atomically: CMD_EXIT_OK, else CMD_EXIT_OUTPUT after
 * the message. */
int cmd_write_file(const char *path, const char *text);
/* cmd_write_file with the permission bits mode (0755: a script); mode < 0:
 * as cmd_write_file. */
int cmd_write_file_mode(const char *path, const char *text, int mode);

/* Flush stdout: CMD_EXIT_OK, else CMD_EXIT_OUTPUT after the message. */
int cmd_flush_stdout(void);

/* Print and/or write a report (json, table: malloc'd, freed here; NULL
 * when out of memory): the JSON on stdout with --format json, else the
 * table; to --output the JSON.  Returns an exit code. */
int cmd_emit_report(char *json, char *table, const cmd_output_opts *o);

/* SHA-256 of a file's text as hex into out: UTIL_OK or an error in err. */
int cmd_digest_file(const char *path, char out[65], util_error *err);

/* fmt_load_cluster, except that a decentralized cluster file (the input
 * of 'planner decentralized') is refused with that hint and without the
 * warnings about its keys. */
int cmd_load_cluster(const char *path, fmt_cluster *c, util_error *err);

/* Seconds of a monotonic clock. */
double cmd_seconds(void);

/* Search progress on stderr: one updating line (ctx: an int set to 1 once
 * drawn), and its removal when drawn (resets *drawn). */
void cmd_progress_draw(void *ctx, const search_progress *p);
void cmd_progress_clear(int *drawn);

/* Write s to f as a JSON string with quotes. */
void cmd_json_string(FILE *f, const char *s);

/* Last component of path (points into path). */
const char *cmd_basename(const char *path);

/* ---- shared by plan and evaluate, and with calibrate (plan.c) ---------- */

/* Load the profile that in names (--profile or --amp-profile) into prof,
 * read with the model m; path (n bytes) receives the file read and
 * *amp_key the model key of an AMP profile.  UTIL_OK, with nothing
 * loaded, when in names none; else the error in err. */
int cmd_load_profile(const cmd_input_opts *in, fmt_model *m, fmt_profile *prof,
                     char *path, size_t n, const char **amp_key, util_error *err);

/* Options of plan and evaluate. */
typedef struct cmd_plan_opts {
    cmd_output_opts out;
    cmd_input_opts in;
    const char *strategies;
    int global_batch, top_k, max_tp, max_mbs, zero, recompute;
    int schedule, schedule_set;
    int method;             /* enum search_method */
    int placements;         /* bit set of enum search_placement, -1 = all */
    int fidelity;           /* enum cost_fidelity, -1 = default */
    int precision;          /* enum fmt_precision, -1 = the model's */
    int nparams;
    const char *params[CMD_MAX_PARAMS];
    int objective;          /* enum search_objective (plan only) */
    double headroom;        /* --memory-headroom as a fraction (plan only) */
    int use_all;            /* --use-all (plan only) */
    int seed;               /* --seed (plan only) */
    int anneal_steps;       /* --anneal-steps, -1 = the default (plan only) */
    int plan_only;          /* 1 when one of the five above was given */
    /* recompute and zero above: -1 when not given (plan searches them) */
    int seq_par;            /* --sequence-parallel: 0 off, 1 on, -1 search */
    int vpp;                /* --vpp N, 0 = search */
    double batch_tolerance; /* --batch-tolerance PCT as a fraction, 0 = exact */
    int placement_search;   /* enum search_place_search (plan only) */
    int ga_population;      /* --ga-population, 0 = the default (plan only) */
    int ga_generations;     /* --ga-generations, 0 = the default (plan only) */
    double time_limit;      /* --time-limit SECONDS of the search, 0 = none */
    const char *launcher;   /* --launcher TARGET[@VERSION], NULL = none (plan:
                               the search keeps to it; evaluate: open layer
                               splits keep to it, a note on what it cannot run) */
    int offload;            /* --offload: enum fmt_offload, -1 = not given (plan
                               searches it where every node gives host memory,
                               evaluate none) */
} cmd_plan_opts;

/* --launcher TARGET[@VERSION] (plan, replan) into *target and *version
 * (enum export_target, enum export_version; either may be NULL): megatron,
 * deepspeed or torchrun, the older release without @; exit code (usage
 * message printed). */
int cmd_launcher_parse(const char *v, int *target, int *version);

/* (export.c) The value v of option opt (--launcher, export's --to),
 * TARGET[@VERSION]: the target into *target, the release @VERSION names
 * into *version (-1 without @; either pointer may be NULL); hostfile only
 * where hostfile_ok (it has no release).  Exit code (usage message
 * printed). */
int cmd_target_parse(const char *opt, const char *v, int hostfile_ok, int *target,
                     int *version);

/* A run of plan or evaluate: its options and the inputs they name. */
typedef struct cmd_plan_run {
    cmd_plan_opts o;
    fmt_cluster c;
    fmt_model m;
    fmt_profile prof;
    const fmt_profile *profile;  /* &prof when a profile was given, else NULL */
    cost_params cp;              /* the defaults and the options */
    plan_meta meta;              /* inputs and digests; the caller adds the rest */
    cost_timeline tl;            /* simulated iteration of the first strategy */
    double t0;                   /* cmd_seconds() at the start */
    char prof_path[4096];
    char precision_note[320];    /* plan: why it fell back to another precision */
} cmd_plan_run;

/* Parse the options of evaluate (evaluate = 1) or plan, load the inputs
 * and set the cost parameters; returns an exit code.  Release r with
 * cmd_plan_run_free whatever it returns. */
int cmd_plan_start(int argc, char **argv, int evaluate, cmd_plan_run *r);

/* Print and/or write the plan document of the n strategies s and their
 * results rs (with the simulated timeline of s[0] under --fidelity
 * simulate); returns an exit code. */
/* evaluate: CMD_EXIT_OK when every rank of the n strategies s runs on a
 * device that trains in the model's precision, else CMD_EXIT_INPUT after
 * a message naming the strategy, rank and node. */
int cmd_plan_check_precision(const cmd_plan_run *r, const fmt_strategy *s, int n);

int cmd_plan_emit(cmd_plan_run *r, const fmt_strategy *s, const cost_result *rs,
                  int n);

/* Release what cmd_plan_start loaded into r. */
void cmd_plan_run_free(cmd_plan_run *r);
/* (advice.c) A nearby global batch that trains materially faster per
 * sample than the plan's best strategy (res, searched with sp): into
 * r->meta and a note on stderr; exit code. */
int cmd_plan_advice(cmd_plan_run *r, const search_params *sp,
                    const search_result *res);
/* (export.c) r->o.launcher: its target and release into *target and *version, what
 * the exporter expresses into *lc (export_target_caps), and the plan's
 * settings.launcher; exit code (message printed). */
int cmd_plan_launcher(cmd_plan_run *r, search_launcher *lc, int *target,
                      int *version);
/* 1 when the exporter of target at version would refuse strategy s of r
 * (the plan's cluster, model, parameters and global batch), with its
 * first reason in why (n bytes); 0 when it writes s exactly. */
int cmd_launcher_refusal(const cmd_plan_run *r, int target, int version,
                         const fmt_strategy *s, char *why, size_t n);

/* ---- plan files read by whatif and replan (whatif.c) ------------------ */

/* Load the plan file into d, warn (unless quiet; with --strict: fail)
 * when an input it names changed (cmd_plan_inputs_check), and check that
 * it holds strategy; returns an exit code.  d is
 * the caller's to release (plan_doc_free) whatever this returns. */
int cmd_whatif_load(const char *plan, int strategy, int quiet, plan_doc *d);

/* ---- plan files read by export and report (export.c) ------------------ */

/* As cmd_whatif_load, with the messages of export and report; a plan
 * without strategies is an invalid input. */
int cmd_export_load(const char *plan, int strategy, int quiet, plan_doc *d);

#endif
