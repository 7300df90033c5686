/* formats/calibration.c: link classes and the calibration constants a
 * profile carries (docs/calibration.md). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "formats.h"

static const char *const class_names[FMT_LINK_NCLASSES] = {
    "intra-node", "inter-node", "cross-region"};

const char *fmt_link_class_name(int cls)
{
    if (cls < 0 || cls >= FMT_LINK_NCLASSES)
        return NULL;
    return class_names[cls];
}

int fmt_link_class_of(const fmt_cluster *c, int dev_a, int dev_b)
{
    const fmt_node *a = &c->nodes[c->device_node[dev_a]];
    const fmt_node *b = &c->nodes[c->device_node[dev_b]];

    if (a == b)
        return FMT_LINK_INTRA;
    if (a->region[0] && b->region[0] && strcmp(a->region, b->region) != 0)
        return FMT_LINK_REGION;
    return FMT_LINK_INTER;
}

void fmt_calibration_init(fmt_calibration *cal)
{
    memset(cal, 0, sizeof *cal);
}

int fmt_calibration_type(const fmt_calibration *cal, const char *name)
{
    int i;

    for (i = 0; cal != NULL && i < cal->ntypes; i++)
        if (strcasecmp(cal->type[i], name) == 0)
            return i;
    return -1;
}

int fmt_calibration_add_type(fmt_calibration *cal, const char *name)
{
    int i = fmt_calibration_type(cal, name);

    if (i >= 0)
        return i;
    if (cal->ntypes >= FMT_CALIB_MAX_TYPES || strlen(name) >= sizeof cal->type[0])
        return -1;
    i = cal->ntypes++;
    snprintf(cal->type[i], sizeof cal->type[i], "%s", name);
    cal->compute_scale[i] = 1.0;
    cal->mbs_half[i] = 0.0;
    return i;
}
