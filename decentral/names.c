/* decentral/names.c: an index of the region names of a cluster file
 * (open addressing on a hash of the name), so that reading its regions
 * and its region_pairs takes time linear in their number. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static size_t name_hash(const char *s)
{
    size_t h = 1469598103934665603u; /* FNV-1a */

    for (; *s != '\0'; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211u;
    return h;
}

int dtfm_names_init(dtfm_names *ix, const char (*name)[64], int n)
{
    size_t cap = 16, i;

    while (cap < 2 * (size_t)(n > 0 ? n : 1))
        cap *= 2;
    ix->name = name;
    ix->mask = cap - 1;
    ix->slot = malloc(cap * sizeof *ix->slot);
    if (ix->slot == NULL)
        return UTIL_ENOMEM;
    for (i = 0; i < cap; i++)
        ix->slot[i] = -1;
    return UTIL_OK;
}

/* The slot holding name, or the empty one where it would go. */
static size_t slot_of(const dtfm_names *ix, const char *name)
{
    size_t h = name_hash(name) & ix->mask;

    while (ix->slot[h] >= 0 && strcmp(ix->name[ix->slot[h]], name) != 0)
        h = (h + 1) & ix->mask;
    return h;
}

int dtfm_names_find(const dtfm_names *ix, const char *name)
{
    return ix->slot[slot_of(ix, name)];
}

int dtfm_names_add(dtfm_names *ix, int i)
{
    size_t h = slot_of(ix, ix->name[i]);

    if (ix->slot[h] < 0)
        ix->slot[h] = i;
    return ix->slot[h];
}

void dtfm_names_free(dtfm_names *ix)
{
    free(ix->slot);
    ix->slot = NULL;
}
