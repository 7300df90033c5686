/* export/deepspeed.c: DeepSpeed config, hostfile, pipeline partition and
 * launcher command for a plan's strategy. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/* GPU at position i of host group g's --include list.  DeepSpeed's
 * launch gives global rank r the local rank r % n (n: the host's ranks;
 * deepspeed/launcher/launch.py), and the rank runs on that entry of its
 * host's list (CUDA_VISIBLE_DEVICES).  0.14 keeps the list as written, so
 * position (first + k) % n holds the GPU of rank first + k (a host whose
 * first rank is not a multiple of n gets its list rotated); 0.19 sorts
 * it (runner.py's parse_node_config_list), so the list is the host's
 * GPUs in ascending order. */
static int ds_list_gpu(const export_ctx *x, const export_group *g, int i)
{
    int k, j, below, gpu;

    if (x->o->version != EXPORT_VERSION_NEW)
        return export_gpu_of(x, g->first + ((i - g->first) % g->n + g->n) % g->n);
    for (k = 0; k < g->n; k++) { /* the GPU with i smaller ones */
        gpu = export_gpu_of(x, g->first + k);
        for (below = 0, j = 0; j < g->n; j++)
            below += export_gpu_of(x, g->first + j) < gpu;
        if (below == i)
            return gpu;
    }
    return -1;
}

/* 1 when some host's list is not its slots 0..n-1 in order. */
static int ds_needs_list(const export_ctx *x)
{
    int k, i;

    for (k = 0; k < x->ng; k++)
        for (i = 0; i < x->g[k].n; i++)
            if (ds_list_gpu(x, &x->g[k], i) != i)
                return 1;
    return 0;
}

/* A note when a host's list cannot give each rank its GPU (0.19, a
 * host whose first rank is not a multiple of its ranks). */
static void ds_list_notes(export_ctx *x)
{
    int k, i;

    for (k = 0; k < x->ng; k++) {
        const export_group *g = &x->g[k];
        for (i = 0; i < g->n; i++)
            if (ds_list_gpu(x, g, (g->first + i) % g->n) != export_gpu_of(x, g->first + i)) {
                export_approx(x, "DeepSpeed %s's launcher sorts a host's n GPUs "
                              "and gives rank r the (r mod n)-th, so rank %d, the "
                              "first of ranks %d-%d on host '%s', would run on "
                              "GPU %d, not GPU %d as planned (%d is not a "
                              "multiple of %d): launch with the torchrun export "
                              "instead", export_release(x), g->first + i, g->first,
                              g->first + g->n - 1, export_host_of(x, g->node),
                              ds_list_gpu(x, g, (g->first + i) % g->n),
                              export_gpu_of(x, g->first + i), g->first, g->n);
                break;
            }
    }
}

/* --include "host:g,g@host:g": every host's list in launch order. */
static void ds_include_list(const export_ctx *x, util_buf *b)
{
    int k, i;

    for (k = 0; k < x->ng; k++) {
        util_buf_printf(b, "%s%s:", k ? "@" : "", export_host_of(x, x->g[k].node));
        for (i = 0; i < x->g[k].n; i++)
            util_buf_printf(b, "%s%d", i ? "," : "", ds_list_gpu(x, &x->g[k], i));
    }
}

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
                    "(Megatron-style); hetplan_pipe.py gives DeepSpeed a "
                    "PipeModelDataParallelTopology with num_mp=%d%s", s->tp,
                    s->tp, s->pp > 1 ? "" : " through its PipelineParallelGrid "
                    "as mpu");
    /* communication overlap (docs/export.md): overlap_comm reduces the
     * gradients in backward hooks with ZeRO >= 1 on the plain engine
     * (zero/stage_1_and_2.py); the pipeline engine reduces them after
     * its schedule (pipe/engine.py, _exec_reduce_grads) */
    if (cost_strategy_overlap(x->p, s, COST_OVERLAP_GRAD) && s->dp > 1 &&
        x->caps.overlap_grad_zero && (zero < 1 || s->pp > 1))
        export_approx(x, "the plan reduces gradients behind the backward "
                      "pass (overlap_grad); DeepSpeed does so (overlap_comm) "
                      "only with ZeRO stage 1 or above and no pipeline");
    if (x->caps.no_overlap_param && cost_strategy_overlap(x->p, s, COST_OVERLAP_PARAM))
        export_approx(x, "the plan gathers the updated weights behind the "
                      "next forward pass (overlap_param); DeepSpeed gathers "
                      "them after the optimizer step below ZeRO stage 3");
    if (x->caps.no_overlap_tp && cost_strategy_overlap(x->p, s, COST_OVERLAP_TP))
        export_approx(x, "the plan overlaps TP communication with GEMMs "
                      "(overlap_tp); DeepSpeed has no Transformer Engine "
                      "userbuffers");
    if (x->caps.p2p == SEARCH_P2P_NONE && s->pp > 1 &&
        cost_strategy_overlap(x->p, s, COST_OVERLAP_P2P))
        export_note(x, "the plan's time assumes pipeline sends behind "
                    "compute (overlap_p2p); DeepSpeed's pipeline engine "
                    "sends and receives blocking, a little slower");
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER && zero < 1) {
        /* offload_optimizer is a ZeRO feature: stage 0 runs the plain
         * optimizer on the GPU (DeepSpeedZeroOffloadOptimizerConfig) */
        export_approx(x, "the plan offloads the optimizer without ZeRO; "
                      "DeepSpeed offloads it with ZeRO stage 1 or above; "
                      "ds_config.json asks for stage 1");
        zero = 1;
    }
    {
        int before = x->out->napprox;
        *include = export_order_notes(x, "the deepspeed launcher", 1);
        if (x->out->napprox == before) {
            ds_list_notes(x);
            *include = ds_needs_list(x);
        }
    }
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
    if (zero >= 1 && s->pp == 1 && s->dp > 1 &&
        cost_strategy_overlap(x->p, s, COST_OVERLAP_GRAD))
        util_buf_printf(cfg, ",\n    \"overlap_comm\": true");
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER) /* ZeRO-Offload */
        util_buf_printf(cfg, ",\n    \"offload_optimizer\": {\n"
                        "      \"device\": \"cpu\",\n      \"pin_memory\": true\n    }");
    util_buf_printf(cfg, "\n  },\n");
    util_buf_printf(cfg, "  \"steps_per_print\": 10,\n");
    util_buf_printf(cfg, "  \"wall_clock_breakdown\": false\n}\n");
}

/* hetplan_pipe.py, the model for deepspeed.initialize.  With pp > 1 a
 * PipelineModule (DeepSpeed's pipeline engine, ZeRO 0-1): its public API
 * takes no explicit boundaries, but partition_method='uniform' gives
 * stage i the items [i * w, (i + 1) * w) when pp stages hold pp * w items
 * (deepspeed.runtime.utils.partition_uniform), so padding every stage
 * with pass-through layers to the widest stage's w layers puts exactly
 * the plan's layers on each stage.  With pp = 1 the layers as one
 * nn.Sequential for DeepSpeed's plain engine (every ZeRO stage), and with
 * tp > 1 DeepSpeed's own PipelineParallelGrid over the plan's topology
 * as the mpu, so that its data-parallel groups are the plan's.  Each
 * name is imported from the module that defines it in 0.14 and 0.19. */
static void pipe_module(const export_ctx *x, util_buf *b)
{
    const fmt_strategy *s = x->s;
    int j, pipe = s->pp > 1, ckpt = export_recompute(x) == FMT_RECOMPUTE_FULL;

    export_header(x, b, pipe ? "hetplan stage boundaries for DeepSpeed's "
                  "PipelineModule (public API: partition_method='uniform' "
                  "over stages padded with pass-through layers)"
                  : "hetplan model for DeepSpeed's engine without a pipeline "
                  "(the layers as one nn.Sequential, DeepSpeed's grid as mpu)");
    util_buf_printf(b, "#\n# In train.py, after deepspeed.init_distributed():\n"
                    "#   import hetplan_pipe\n"
                    "#   engine, optimizer, _, _ = deepspeed.initialize(\n"
                    "#       **hetplan_pipe.initialize_args(layers%s), "
                    "model_parameters=..., config=...)\n"
                    "# where layers lists the model's %d layers (%s) in the "
                    "plan's order;\n# %s\n", pipe ? ", loss_fn=..." : "",
                    x->m->nlayers, pipe ? "LayerSpec, TiedLayerSpec or modules"
                    : "LayerSpec or modules", pipe ?
                    "train with engine.train_batch() (DeepSpeed's pipeline "
                    "engine; ZeRO stage 0 or 1)." :
                    "train with engine(inputs), engine.backward(loss) and "
                    "engine.step().");
    if (export_offload(x) == FMT_OFFLOAD_OPTIMIZER)
        util_buf_printf(b, "# The optimizer runs on the host (ZeRO-Offload): "
                        "pass deepspeed.ops.adam.DeepSpeedCPUAdam\n"
                        "# as optimizer= (DeepSpeed refuses another client "
                        "optimizer with offload_optimizer)\n"
                        "# or add an \"optimizer\" section to ds_config.json.\n");
    util_buf_printf(b, "import os\n\nimport torch\nimport torch.nn as nn\n");
    if (!pipe && ckpt)
        util_buf_printf(b, "from deepspeed.runtime.activation_checkpointing."
                        "checkpointing import checkpoint\n");
    util_buf_printf(b, "from deepspeed.runtime.pipe.module import %s\n",
                    pipe ? "LayerSpec, PipelineModule"
                         : "LayerSpec, TiedLayerSpec");
    util_buf_printf(b, "from deepspeed.runtime.pipe.topology import %s\n\n",
                    pipe ? "PipeModelDataParallelTopology"
                         : "PipeModelDataParallelTopology, PipelineParallelGrid");
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
    util_buf_printf(b, "# DeepSpeed's pipeline engine (train_batch) or its plain "
                    "engine\nPIPELINE = %s\n", pipe ? "True" : "False");
    util_buf_printf(b, "ACTIVATION_CHECKPOINT_INTERVAL = %d\n\n\n", ckpt ? 1 : 0);
    util_buf_printf(b,
        "def topology():\n"
        "    \"\"\"The plan's ranks: tensor-parallel innermost, then data, "
        "then pipeline.\"\"\"\n"
        "    return PipeModelDataParallelTopology(num_pp=NUM_PP, num_mp=NUM_MP, "
        "num_dp=NUM_DP)\n\n\n"
        "def check_layers(layers):\n"
        "    layers = list(layers)\n"
        "    if len(layers) != BOUNDS[-1]:\n"
        "        raise ValueError('the plan has %%d layers, got %%d' %% "
        "(BOUNDS[-1], len(layers)))\n"
        "    return layers\n\n\n");
    if (pipe) {
        util_buf_printf(b,
            "class PassThrough(nn.Module):\n"
            "    \"\"\"A layer without parameters that hands its input on.\"\"\"\n\n"
            "    def forward(self, inputs):\n"
            "        return inputs\n\n\n"
            "def stage_width():\n"
            "    return max(b - a for a, b in zip(BOUNDS, BOUNDS[1:]))\n\n\n"
            "def pad_layers(layers):\n"
            "    \"\"\"The layers with every stage padded to stage_width() items.\"\"\"\n"
            "    layers = check_layers(layers)\n"
            "    out = []\n"
            "    for a, b in zip(BOUNDS, BOUNDS[1:]):\n"
            "        out.extend(layers[a:b])\n"
            "        out.extend(LayerSpec(PassThrough) for _ in range(stage_width() - (b - a)))\n"
            "    return out\n\n\n"
            "def pipeline_module(layers, **kwargs):\n"
            "    \"\"\"PipelineModule with the plan's stages, topology and checkpointing.\"\"\"\n"
            "    kwargs.setdefault('activation_checkpoint_interval', ACTIVATION_CHECKPOINT_INTERVAL)\n"
            "    module = PipelineModule(layers=pad_layers(layers), topology=topology(),\n"
            "                            partition_method='uniform', **kwargs)\n"
            "    want = [i * stage_width() for i in range(NUM_PP + 1)]\n"
            "    if list(module.parts) != want:\n"
            "        raise RuntimeError('DeepSpeed placed the stages at %%s, not %%s' %% (module.parts, want))\n"
            "    return module\n\n\n"
            "def model_parallel_unit():\n"
            "    \"\"\"None: the PipelineModule's own grid is DeepSpeed's mpu.\"\"\"\n"
            "    return None\n\n\n"
            "def initialize_args(layers, **kwargs):\n"
            "    \"\"\"deepspeed.initialize's model: pipeline_module(layers, **kwargs).\"\"\"\n"
            "    return {'model': pipeline_module(layers, **kwargs)}\n");
    } else {
        util_buf_printf(b,
            "class PlanSequential(nn.Sequential):\n"
            "    \"\"\"The model's layers in order%s.\"\"\"\n\n"
            "    def forward(self, inputs):\n"
            "        for layer in self:\n", ckpt ? ", each one checkpointed "
            "(recomputed in the backward pass)" : "");
        if (ckpt)
            util_buf_printf(b,
                "            if ACTIVATION_CHECKPOINT_INTERVAL and self.training:\n"
                "                inputs = checkpoint(layer, inputs)\n"
                "            else:\n"
                "                inputs = layer(inputs)\n");
        else
            util_buf_printf(b, "            inputs = layer(inputs)\n");
        util_buf_printf(b,
            "        return inputs\n\n\n"
            "def sequential_module(layers):\n"
            "    \"\"\"The layers (LayerSpecs built) as one PlanSequential.\"\"\"\n"
            "    out = []\n"
            "    for layer in check_layers(layers):\n"
            "        if isinstance(layer, TiedLayerSpec):\n"
            "            raise ValueError('tied layers need the pipeline engine (pp > 1)')\n"
            "        out.append(layer.build() if isinstance(layer, LayerSpec) else layer)\n"
            "    return PlanSequential(*out)\n\n\n"
            "def model_parallel_unit():\n"
            "    \"\"\"DeepSpeed's mpu for the plan's groups (its PipelineParallelGrid):\n"
            "    NUM_MP consecutive ranks shard the model, the data-parallel groups\n"
            "    run across them; None without tensor parallelism (the whole world\n"
            "    is data parallel).\"\"\"\n"
            "    if NUM_MP == 1:\n"
            "        return None\n"
            "    return PipelineParallelGrid(topology=topology())\n\n\n"
            "def initialize_args(layers, loss_fn=None):\n"
            "    \"\"\"deepspeed.initialize's model and mpu (loss_fn is the pipeline\n"
            "    engine's; here train.py computes the loss from engine(inputs)).\"\"\"\n"
            "    args = {'model': sequential_module(layers)}\n"
            "    mpu = model_parallel_unit()\n"
            "    if mpu is not None:\n"
            "        args['mpu'] = mpu\n"
            "    return args\n");
    }
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
                   "# train.py builds its model with hetplan_pipe.initialize_args"
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
        ds_include_list(x, &sh);
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
    export_add_file(x, "hetplan_pipe.py", x->s->pp > 1 ?
                    "PipelineModule with the plan's stage boundaries" :
                    "the model as nn.Sequential, DeepSpeed's mpu", 0, py.p);
    export_add_file(x, "deepspeed.sh", "deepspeed launcher command", 1, sh.p);
    return UTIL_OK;
}
