/* commands/main.c: the planner program.  Runs the subcommand that argv[1]
 * names, plan when argv[1] is an option; each subcommand parses its own
 * options (commands.h). */
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct subcommand {
    const char *name;
    int (*run)(int argc, char **argv);
} subcommands[] = {
    {"plan", cmd_plan},           {"evaluate", cmd_evaluate},
    {"calibrate", cmd_calibrate}, {"decentralized", cmd_decentralized},
    {"whatif", cmd_whatif},       {"replan", cmd_replan},
    {"export", cmd_export},       {"report", cmd_report},
};

int main(int argc, char **argv)
{
    size_t k;

    if (argc < 2 || argv[1][0] == '-') {
        if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
            fputs(cmd_plan_usage, stdout);
            return CMD_EXIT_OK;
        }
        if (argc >= 2 && strcmp(argv[1], "--version") == 0) {
            cmd_print_version();
            return CMD_EXIT_OK;
        }
        return cmd_plan(argc, argv); /* options from argv[1] on */
    }
    for (k = 0; k < sizeof subcommands / sizeof subcommands[0]; k++)
        if (strcmp(argv[1], subcommands[k].name) == 0)
            return subcommands[k].run(argc - 1, argv + 1);
    return cmd_usage_error(NULL, "unknown command '%s'", argv[1]);
}
