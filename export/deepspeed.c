/* export/deepspeed.c: DeepSpeed config, hostfile, pipeline partition and
 * launcher command for a plan's strategy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static void json_string(util_buf *b, const char *s)
{
    util_buf_printf(b, "\"");
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\')
            util_buf_printf(b, "\\%c", ch);
        else if (ch < 0x20)
            util_buf_printf(b, "\\u%04x", ch);
        else
            util_buf_printf(b, "%c", ch);
    }
    util_buf_printf(b, "\"");
}

int export_deepspeed(export_ctx *x, util_error *err)
{
    util_buf cfg = {0}, hf = {0}, parts = {0}, sh = {0};
    const fmt_strategy *s = x->s;
    const char *prec = export_precision(x->m);
    export_result *out = x->out;
    int j, l, rc, zero = x->p->zero_stage;

    if ((rc = export_hosts_check(x, err)) != UTIL_OK)
        return rc;
    if (s->pp > 1 && zero >= 2) {
        export_note(x, "the plan assumes ZeRO stage %d, but DeepSpeed's "
                    "pipeline engine accepts only stage 0 or 1; "
                    "ds_config.json asks for stage 1, so expect more memory "
                    "per GPU than predicted", zero);
        zero = 1;
    }
    if (s->schedule == FMT_SCHED_GPIPE && s->pp > 1)
        export_note(x, "the plan assumes a GPipe schedule; DeepSpeed's "
                    "pipeline engine runs its 1F1B-style TrainSchedule, which "
                    "keeps fewer activations alive");
    if (s->tp > 1)
        export_note(x, "tensor parallelism (tp %d) is not done by DeepSpeed "
                    "itself: the model must shard its layers (e.g. "
                    "Megatron-style) and pass an mpu or a "
                    "PipeModelDataParallelTopology with num_mp=%d", s->tp,
                    s->tp);
    export_order_notes(x, "the deepspeed launcher");

    /* ds_config.json: batch sizes satisfy train_batch_size =
     * micro * gradient_accumulation_steps * data-parallel size */
    util_buf_printf(&cfg, "{\n");
    util_buf_printf(&cfg, "  \"train_batch_size\": %d,\n", x->global_batch);
    util_buf_printf(&cfg, "  \"train_micro_batch_size_per_gpu\": %d,\n", s->mbs);
    util_buf_printf(&cfg, "  \"gradient_accumulation_steps\": %d,\n", s->gas);
    util_buf_printf(&cfg, "  \"fp16\": {\n    \"enabled\": %s", strcmp(prec, "fp16") == 0 ? "true" : "false");
    if (strcmp(prec, "fp16") == 0)
        util_buf_printf(&cfg, ",\n    \"loss_scale\": 0,\n    \"initial_scale_power\": 16");
    util_buf_printf(&cfg, "\n  },\n");
    util_buf_printf(&cfg, "  \"bf16\": {\n    \"enabled\": %s\n  },\n",
              strcmp(prec, "bf16") == 0 ? "true" : "false");
    util_buf_printf(&cfg, "  \"zero_optimization\": {\n    \"stage\": %d\n  },\n", zero);
    util_buf_printf(&cfg, "  \"steps_per_print\": 10,\n");
    util_buf_printf(&cfg, "  \"wall_clock_breakdown\": false\n}\n");

    export_hostfile_text(x, &hf, "DeepSpeed hostfile: hosts in rank order, "
                         "one slot per GPU the plan uses");

    /* pipeline_parts.json: PipelineModule's `parts` for these stages */
    util_buf_printf(&parts, "{\n  \"generator\": \"hetplan %s\",\n", HETPLAN_VERSION);
    util_buf_printf(&parts, "  \"deepspeed\": \"%s\",\n", EXPORT_DEEPSPEED_VERSION);
    util_buf_printf(&parts, "  \"num_stages\": %d,\n", s->pp);
    util_buf_printf(&parts, "  \"topology\": {\"num_pp\": %d, \"num_dp\": %d, \"num_mp\": %d},\n",
              s->pp, s->dp, s->tp);
    util_buf_printf(&parts, "  \"activation_checkpoint_interval\": %d,\n",
              x->p->recompute ? 1 : 0);
    util_buf_printf(&parts, "  \"parts\": [");
    for (j = 0; j <= s->pp; j++)
        util_buf_printf(&parts, "%s%d", j ? ", " : "", s->bounds[j]);
    util_buf_printf(&parts, "],\n  \"stages\": [\n");
    for (j = 0; j < s->pp; j++) {
        util_buf_printf(&parts, "    {\"stage\": %d, \"first_layer\": %d, \"last_layer\": %d, "
                          "\"layers\": [", j, s->bounds[j], s->bounds[j + 1] - 1);
        for (l = s->bounds[j]; l < s->bounds[j + 1]; l++) {
            if (l > s->bounds[j])
                util_buf_printf(&parts, ", ");
            json_string(&parts, x->m->layers[l].name);
        }
        util_buf_printf(&parts, "]}%s\n", j + 1 < s->pp ? "," : "");
    }
    util_buf_printf(&parts, "  ]\n}\n");

    export_header(x, &sh, "DeepSpeed " EXPORT_DEEPSPEED_VERSION " launch with "
                  "its own launcher (deepspeed, pdsh/ssh to the hosts of "
                  "hostfile)");
    util_buf_printf(&sh, "#\n# On the first host of hostfile:\n"
                   "#   sh deepspeed.sh train.py [training arguments]\n"
                   "# train.py builds PipelineModule(..., num_stages=%d) with "
                   "self.parts from pipeline_parts.json\n# (docs/export.md) and "
                   "reads ds_config.json through --deepspeed_config.\n",
              s->pp);
    util_buf_printf(&sh, "\nDIR=$(cd \"$(dirname \"$0\")\" && pwd)\n");
    util_buf_printf(&sh, "SCRIPT=${1:?usage: sh deepspeed.sh train.py [arguments]}\nshift\n");
    util_buf_printf(&sh, "exec deepspeed --hostfile \"$DIR/hostfile\" --master_addr ");
    export_sh_word(&sh, x->master);
    util_buf_printf(&sh, " --master_port %d \\\n    \"$SCRIPT\" --deepspeed "
                   "--deepspeed_config \"$DIR/ds_config.json\" \"$@\"\n",
              x->o->master_port);

    if (cfg.failed || hf.failed || parts.failed || sh.failed) {
        free(cfg.p);
        free(hf.p);
        free(parts.p);
        free(sh.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    snprintf(out->files[0].name, sizeof out->files[0].name, "ds_config.json");
    snprintf(out->files[0].what, sizeof out->files[0].what,
             "batch sizes, precision, ZeRO stage");
    out->files[0].text = cfg.p;
    snprintf(out->files[1].name, sizeof out->files[1].name, "hostfile");
    snprintf(out->files[1].what, sizeof out->files[1].what,
             "hosts in rank order with their slots");
    out->files[1].text = hf.p;
    snprintf(out->files[2].name, sizeof out->files[2].name, "pipeline_parts.json");
    snprintf(out->files[2].what, sizeof out->files[2].what,
             "PipelineModule stage boundaries (parts)");
    out->files[2].text = parts.p;
    snprintf(out->files[3].name, sizeof out->files[3].name, "deepspeed.sh");
    snprintf(out->files[3].what, sizeof out->files[3].what,
             "deepspeed launcher command");
    out->files[3].executable = 1;
    out->files[3].text = sh.p;
    out->nfiles = 4;
    return UTIL_OK;
}
