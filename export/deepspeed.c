/* export/deepspeed.c: DeepSpeed config, hostfile, pipeline partition and
 * launcher command for a plan's strategy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* What DeepSpeed's pipeline engine cannot run as planned; *include set
 * when the launcher needs --include lists. */
static int deepspeed_limits(export_ctx *x, int *include)
{
    const fmt_strategy *s = x->s;
    int zero = export_zero(x), rc = export_recompute(x);

    if (x->caps.zero_limit_pp > 0 && s->pp > 1 && zero >= x->caps.zero_limit_pp) {
        export_approx(x, "the plan assumes ZeRO stage %d, but DeepSpeed's "
                      "pipeline engine accepts only stage 0 or 1; "
                      "ds_config.json asks for stage %d", zero,
                      x->caps.zero_limit_pp - 1);
        zero = x->caps.zero_limit_pp - 1;
    }
    if (x->caps.no_gpipe && s->schedule == FMT_SCHED_GPIPE && s->pp > 1)
        export_approx(x, "the plan assumes a GPipe schedule; DeepSpeed's "
                      "pipeline engine runs its 1F1B-style TrainSchedule");
    if (x->caps.no_vpp && s->vpp > 1)
        export_approx(x, "the plan interleaves %d virtual stages per device; "
                      "DeepSpeed's pipeline engine has no interleaved "
                      "schedule", s->vpp);
    if (x->caps.no_sp && s->sp > 0 && s->tp > 1)
        export_approx(x, "the plan uses Megatron-style sequence parallelism; "
                      "DeepSpeed does not provide it (its Ulysses sequence "
                      "parallelism is a different scheme)");
    if (x->caps.no_selective && rc == FMT_RECOMPUTE_SELECTIVE)
        export_approx(x, "the plan recomputes attention only (selective); "
                      "DeepSpeed's PipelineModule checkpoints whole layers");
    if (x->caps.no_uneven_tp && s->tp_heads != NULL)
        export_approx(x, "the plan splits heads and MLP columns unevenly over "
                      "the TP group; DeepSpeed has no per-rank shard sizes "
                      "(the torchrun export writes them)");
    if (s->tp > 1)
        export_note(x, "tensor parallelism (tp %d) is done by the model, not "
                    "by DeepSpeed: its layers must shard themselves "
                    "(Megatron-style); hetplan_pipe.py passes a "
                    "PipeModelDataParallelTopology with num_mp=%d", s->tp,
                    s->tp);
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER && zero < 1) {
        /* offload_optimizer is a ZeRO feature: stage 0 runs the plain
         * optimizer on the GPU (DeepSpeedZeroOffloadOptimizerConfig) */
        export_approx(x, "the plan offloads the optimizer without ZeRO; "
                      "DeepSpeed offloads it with ZeRO stage 1 or above; "
                      "ds_config.json asks for stage 1");
        zero = 1;
    }
    *include = export_order_notes(x, "the deepspeed launcher", 1);
    return zero;
}

/* ds_config.json: batch sizes satisfy train_batch_size =
 * micro * gradient_accumulation_steps * data-parallel size */
static void ds_config(const export_ctx *x, util_buf *cfg, int zero)
{
    const fmt_strategy *s = x->s;
    const char *prec = export_precision(x->m);

    util_buf_printf(cfg, "{\n");
    util_buf_printf(cfg, "  \"train_batch_size\": %d,\n", x->global_batch);
    util_buf_printf(cfg, "  \"train_micro_batch_size_per_gpu\": %d,\n", s->mbs);
    util_buf_printf(cfg, "  \"gradient_accumulation_steps\": %d,\n", s->gas);
    util_buf_printf(cfg, "  \"fp16\": {\n    \"enabled\": %s",
                    strcmp(prec, "fp16") == 0 ? "true" : "false");
    if (strcmp(prec, "fp16") == 0)
        util_buf_printf(cfg, ",\n    \"loss_scale\": 0,\n    \"initial_scale_power\": 16");
    util_buf_printf(cfg, "\n  },\n");
    util_buf_printf(cfg, "  \"bf16\": {\n    \"enabled\": %s\n  },\n",
                    strcmp(prec, "bf16") == 0 ? "true" : "false");
    util_buf_printf(cfg, "  \"zero_optimization\": {\n    \"stage\": %d", zero);
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER) /* ZeRO-Offload */
        util_buf_printf(cfg, ",\n    \"offload_optimizer\": {\n"
                        "      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }");
    util_buf_printf(cfg, "\n  },\n");
    util_buf_printf(cfg, "  \"steps_per_print\": 10,\n");
    util_buf_printf(cfg, "  \"wall_clock_breakdown\": false\n}\n");
}

/* hetplan_pipe.py: the plan's stage boundaries through DeepSpeed's public
 * PipelineModule API.  partition_method='uniform' gives stage i the items
 * [i * w, (i + 1) * w) when pp stages hold pp * w items
 * (deepspeed.runtime.utils.partition_uniform), so padding every stage with
 * pass-through layers to the widest stage's w layers puts exactly the
 * plan's layers on each stage. */
static void pipe_module(const export_ctx *x, util_buf *b)
{
    const fmt_strategy *s = x->s;
    int j;

    export_header(x, b, "hetplan stage boundaries for DeepSpeed's "
                  "PipelineModule (public API: partition_method='uniform' "
                  "over stages padded with pass-through layers)");
    util_buf_printf(b, "#\n# In train.py:  from hetplan_pipe import pipeline_module\n"
                    "#               model = pipeline_module(layers, loss_fn=...)\n"
                    "# where layers lists the model's %d layers (LayerSpec, "
                    "TiedLayerSpec or modules)\n# in the plan's order.\n",
                    x->m->nlayers);
    util_buf_printf(b, "import os\n\nimport torch\nimport torch.nn as nn\n"
                    "from deepspeed.pipe import LayerSpec, PipelineModule, "
                    "PipeModelDataParallelTopology\n\n");
    /* deepspeed.sh's environment reaches the first host only (the
     * launcher forwards NCCL_*, PYTHON* and the like to the others), so
     * the module every rank imports sets the fp32 matmul mode too */
    if (x->m->dtype_bytes >= 4 && cost_tf32(x->m, x->p))
        util_buf_printf(b, "# fp32 matrix multiplications on TF32 tensor cores, "
                        "as the plan's times assume\n"
                        "os.environ.pop('NVIDIA_TF32_OVERRIDE', None)\n"
                        "torch.backends.cuda.matmul.allow_tf32 = True\n\n");
    else if (x->m->dtype_bytes >= 4)
        util_buf_printf(b, "# fp32 matrix multiplications on the fp32 units, not "
                        "TF32, as the plan's times assume\n"
                        "# (cuBLAS reads NVIDIA_TF32_OVERRIDE when PyTorch "
                        "creates its handle: import this module first)\n"
                        "os.environ['NVIDIA_TF32_OVERRIDE'] = '0'\n"
                        "torch.backends.cuda.matmul.allow_tf32 = False\n\n");
    util_buf_printf(b, "# stage i runs layers [BOUNDS[i], BOUNDS[i + 1]) of the "
                    "model's layer list\nBOUNDS = [");
    for (j = 0; j <= s->pp; j++)
        util_buf_printf(b, "%s%d", j ? ", " : "", s->bounds[j]);
    util_buf_printf(b, "]\nNUM_PP, NUM_DP, NUM_MP = %d, %d, %d\n", s->pp, s->dp, s->tp);
    util_buf_printf(b, "ACTIVATION_CHECKPOINT_INTERVAL = %d\n\n\n",
                    export_recompute(x) == FMT_RECOMPUTE_FULL ? 1 : 0);
    util_buf_printf(b,
        "class PassThrough(nn.Module):\n"
        "    \"\"\"A layer without parameters that hands its input on.\"\"\"\n\n"
        "    def forward(self, inputs):\n"
        "        return inputs\n\n\n"
        "def stage_width():\n"
        "    return max(b - a for a, b in zip(BOUNDS, BOUNDS[1:]))\n\n\n"
        "def pad_layers(layers):\n"
        "    \"\"\"The layers with every stage padded to stage_width() items.\"\"\"\n"
        "    layers = list(layers)\n"
        "    if len(layers) != BOUNDS[-1]:\n"
        "        raise ValueError('the plan has %%d layers, got %%d' %% (BOUNDS[-1], len(layers)))\n"
        "    out = []\n"
        "    for a, b in zip(BOUNDS, BOUNDS[1:]):\n"
        "        out.extend(layers[a:b])\n"
        "        out.extend(LayerSpec(PassThrough) for _ in range(stage_width() - (b - a)))\n"
        "    return out\n\n\n"
        "def pipeline_module(layers, **kwargs):\n"
        "    \"\"\"PipelineModule with the plan's stages, topology and checkpointing.\"\"\"\n"
        "    kwargs.setdefault('activation_checkpoint_interval', ACTIVATION_CHECKPOINT_INTERVAL)\n"
        "    topology = PipeModelDataParallelTopology(num_pp=NUM_PP, num_mp=NUM_MP, num_dp=NUM_DP)\n"
        "    module = PipelineModule(layers=pad_layers(layers), topology=topology,\n"
        "                            partition_method='uniform', **kwargs)\n"
        "    want = [i * stage_width() for i in range(NUM_PP + 1)]\n"
        "    if list(module.parts) != want:\n"
        "        raise RuntimeError('DeepSpeed placed the stages at %%s, not %%s' %% (module.parts, want))\n"
        "    return module\n");
}

int export_deepspeed(export_ctx *x, util_error *err)
{
    util_buf cfg = {0}, hf = {0}, py = {0}, sh = {0};
    char what[200];
    int rc, zero, include = 0;

    if ((rc = export_hosts_check(x, err)) != UTIL_OK)
        return rc;
    zero = deepspeed_limits(x, &include);
    ds_config(x, &cfg, zero);
    export_hostfile_text(x, &hf, include ? "DeepSpeed hostfile: hosts in "
                         "rank order with all their GPUs; deepspeed.sh "
                         "names the GPUs the plan uses (--include)"
                         : "DeepSpeed hostfile: hosts in rank order, "
                         "one slot per GPU the plan uses", include);
    pipe_module(x, &py);
    snprintf(what, sizeof what, "DeepSpeed %s launch with its own launcher "
             "(deepspeed, pdsh/ssh to the hosts of hostfile)", export_release(x));
    export_script_header(x, &sh, what);
    util_buf_printf(&sh, "#\n# On the first host of hostfile:\n"
                   "#   sh deepspeed.sh train.py [training arguments]\n"
                   "# train.py builds its model with hetplan_pipe.pipeline_module"
                   "(layers, ...)\n# (docs/export.md) and reads ds_config.json "
                   "through --deepspeed_config.\n");
    util_buf_printf(&sh, "\nDIR=$(cd \"$(dirname \"$0\")\" && pwd)\n");
    util_buf_printf(&sh, "export PYTHONPATH=\"$DIR${PYTHONPATH:+:$PYTHONPATH}\"\n");
    export_tf32_env(x, &sh);
    util_buf_printf(&sh, "SCRIPT=${1:?usage: sh deepspeed.sh train.py [arguments]}\nshift\n");
    util_buf_printf(&sh, "exec deepspeed --hostfile \"$DIR/hostfile\" ");
    if (include) {
        /* the launcher sets CUDA_VISIBLE_DEVICES to each host's list */
        util_buf_printf(&sh, "--include ");
        export_include_list(x, &sh);
        util_buf_printf(&sh, " \\\n    ");
    }
    util_buf_printf(&sh, "--master_addr ");
    export_sh_word(&sh, x->master);
    util_buf_printf(&sh, " --master_port %d \\\n    \"$SCRIPT\" --deepspeed "
                   "--deepspeed_config \"$DIR/ds_config.json\" \"$@\"\n",
              x->o->master_port);

    if (cfg.failed || hf.failed || py.failed || sh.failed) {
        free(cfg.p);
        free(hf.p);
        free(py.p);
        free(sh.p);
        return util_error_set(err, UTIL_ENOMEM, NULL, NULL, "out of memory");
    }
    export_add_file(x, "ds_config.json", "batch sizes, precision, ZeRO stage", 0,
                    cfg.p);
    export_add_file(x, "hostfile", EXPORT_HOSTFILE_WHAT, 0, hf.p);
    export_add_file(x, "hetplan_pipe.py",
                    "PipelineModule with the plan's stage boundaries", 0, py.p);
    export_add_file(x, "deepspeed.sh", "deepspeed launcher command", 1, sh.p);
    return UTIL_OK;
}
