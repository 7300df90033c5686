/* costmodel/stages.c: the structural rule on pipeline stages: every stage
 * must hold parameters (docs/cost-model.md, "Stages without parameters"). */
#include "costmodel.h"

int cost_empty_stage(const fmt_model *m, const fmt_strategy *s)
{
    int j, l;

    if (m == NULL || s == NULL || s->bounds == NULL)
        return -1;
    for (j = 0; j < s->pp; j++) {
        double params = 0.0;
        int a = s->bounds[j], b = s->bounds[j + 1];
        if (a < 0)
            a = 0;
        if (b > m->nlayers)
            b = m->nlayers;
        for (l = a; l < b; l++)
            params += m->layers[l].params;
        /* an optimizer per stage over its parameters: none is an error */
        if (!(params > 0.0))
            return j;
    }
    return -1;
}

int cost_param_layers(const fmt_model *m)
{
    int l, n = 0;

    if (m == NULL)
        return 0;
    for (l = 0; l < m->nlayers; l++)
        if (m->layers[l].params > 0.0)
            n++;
    return n;
}
