/* commands/main.c: the planner program (cmd_dispatch, common.c, runs the
 * subcommand that argv[1] names). */

#include "commands.h"

int main(int argc, char **argv)
{
    return cmd_dispatch(argc, argv);
}
