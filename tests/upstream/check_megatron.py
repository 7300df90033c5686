#!/usr/bin/env python3
"""Megatron-LM's own code on hetplan's megatron.sh exports.

  check_megatron.py --release core_r0.9.0|core_v0.19.0 --source DIR CASES.json

For each case, the export's megatron.sh runs under /bin/sh once per torchrun
agent (NODE_RANK 0..n-1) with a recording stand-in for torchrun, so that the
shell decides what pretrain_gpt.py receives.  torch's own torchrun parser
reads each agent's command line.  Then, in a forked child of this process
(Megatron is imported once), with sys.argv and the environment that
pretrain_gpt.py would see on global rank 0, Megatron-LM runs
parse_args(), validate_args() (with pretrain_gpt.py's defaults),
core_transformer_config_from_args(), the number of micro-batches
(init_num_microbatches_calculator, as set_global_variables does), the
optimizer and DDP configs (as setup_model_and_optimizer / get_model build
them), and, for every pipeline rank and virtual stage set in
megatron.core.parallel_state, the transformer layers each model chunk
builds and their offsets.  What it derives is compared with the plan
(`expect`, computed by sweep.py, which describes the case file), with the
model-state dtypes of the plan's memory model (docs/memory-model.md) and
with each rank's GPU.  One JSON line per case on stdout; exit 0 when
every case was checked, 77 when torch or the source is missing.

What needs a GPU is not run: building the model and the optimizer,
NCCL, Transformer Engine; the interleaved schedule's conditions on the
micro-batch count are stated from its source (interleave_rule).
"""

import argparse
import json
import os
import select
import signal
import sys
import tempfile
import time
import traceback
import types

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import placeholders  # noqa: E402

RELEASES = ("core_r0.9.0", "core_v0.19.0")
CASE_TIMEOUT = 120  # seconds for one case's upstream work (about 1 s here)

# What pretrain_gpt.py passes to validate_args (args_defaults of pretrain()).
PRETRAIN_GPT_DEFAULTS = {"tokenizer_type": "GPT2BPETokenizer"}

# The arguments a user adds after the script name that leave the plan as
# it is; the one place that lists them.  Each: (args, when, why).
USER_ARGS = [
    (["--no-rope-fusion"], "core_v0.19.0 and rotary positions",
     "the fused rotary kernel comes from Transformer Engine, absent here; "
     "the fused and unfused kernels compute the same embedding"),
]

# Bytes of the main gradients per training precision in the plan's memory
# model (docs/memory-model.md, model states): bf16 accumulates in fp32.
GRAD_DTYPE = {"fp16": "fp16", "bf16": "fp32", "fp32": "fp32"}
FSDP_ZERO = {"no_shard": 0, "optim": 1, "optim_grads": 2,
             "optim_grads_params": 3}


def user_args(release, argv):
    """USER_ARGS that apply to this release and argument list."""
    out = []
    if release == "core_v0.19.0" and "rope" in argv_value(
            argv, "--position-embedding-type", ""):
        out += USER_ARGS[0][0]
    return out


def argv_value(argv, flag, default=None):
    """The value of `flag` in an argument list (last one wins)."""
    value = default
    for i, a in enumerate(argv):
        if a == flag and i + 1 < len(argv):
            value = argv[i + 1]
        elif a.startswith(flag + "="):
            value = a[len(flag) + 1:]
    return value


# ---------------------------------------------------------------- launch

def record_agents(script, timeout):
    """Runs megatron.sh for every agent; returns (agents, problems) where
    each agent is {'node_rank', 'argv', 'env', 'torchrun': Namespace}."""
    from torch.distributed.run import get_args_parser

    base = {"PATH": "/usr/bin:/bin", "HOME": os.environ.get("HOME", "/tmp")}
    agents, problems = [], []
    nnodes = None
    k = 0
    while True:
        env = dict(base, NODE_RANK=str(k))
        rc, err, calls = common.run_script(script, env=env,
                                           commands=("torchrun",),
                                           timeout=timeout)
        if rc != 0 or len(calls) != 1:
            problems.append("NODE_RANK=%d: megatron.sh exit %d, %d torchrun "
                            "calls: %s" % (k, rc, len(calls),
                                           err.strip()[-300:]))
            break
        call = calls[0]
        try:
            ns = get_args_parser().parse_args(call["argv"])
        except SystemExit:
            problems.append("NODE_RANK=%d: torchrun's parser rejects %s"
                            % (k, call["argv"]))
            break
        env_set = {key: v for key, v in call["env"].items()
                   if base.get(key) != v and key not in ("PATH", "PWD",
                                                         "SHLVL", "_")}
        agents.append({"node_rank": k, "argv": call["argv"],
                       "env": env_set, "torchrun": ns})
        if nnodes is None:
            try:
                nnodes = int(ns.nnodes)
            except ValueError:
                problems.append("torchrun --nnodes %r is not a fixed count"
                                % ns.nnodes)
                break
            if nnodes < 1 or nnodes > 4096:
                problems.append("torchrun --nnodes %d" % nnodes)
                break
        k += 1
        if k >= nnodes:
            break
    if not problems:
        env = dict(base, NODE_RANK=str(nnodes))
        rc, _, calls = common.run_script(script, env=env,
                                         commands=("torchrun",),
                                         timeout=timeout)
        if rc == 0 or calls:
            problems.append("NODE_RANK=%d (past the last agent) is not "
                            "refused" % nnodes)
    return agents, problems


def check_agents(agents, expect):
    """torchrun's view of the agents: the same job on every one, node
    ranks 0..n-1, the GPUs of every global rank.  Returns (derived,
    mismatches)."""
    bad = []
    n = len(agents)
    world = 0
    gpus = []
    first = agents[0]["torchrun"]
    for a in agents:
        t = a["torchrun"]
        if int(t.nnodes) != n:
            bad.append("agent %d: --nnodes %s, %d agents"
                       % (a["node_rank"], t.nnodes, n))
        if t.node_rank != a["node_rank"]:
            bad.append("agent %d: --node_rank %d"
                       % (a["node_rank"], t.node_rank))
        for key in ("master_addr", "master_port", "rdzv_backend",
                    "training_script", "training_script_args"):
            if getattr(t, key) != getattr(first, key):
                bad.append("agent %d: %s differs from agent 0's"
                           % (a["node_rank"], key))
        if os.path.basename(t.training_script) != "pretrain_gpt.py":
            bad.append("agent %d runs %s" % (a["node_rank"],
                                             t.training_script))
        try:
            nproc = int(t.nproc_per_node)
        except ValueError:
            bad.append("agent %d: --nproc_per_node %r"
                       % (a["node_rank"], t.nproc_per_node))
            continue
        visible = a["env"].get("CUDA_VISIBLE_DEVICES")
        devs = visible.split(",") if visible else [str(i) for i in range(nproc)]
        if len(devs) < nproc:
            bad.append("agent %d: %d processes, CUDA_VISIBLE_DEVICES=%s"
                       % (a["node_rank"], nproc, visible))
        for local in range(nproc):
            gpus.append(int(devs[local]) if local < len(devs) and
                        devs[local].isdigit() else None)
        world += nproc
    derived = {"world_size": world, "agents": n, "rank_gpus": gpus,
               "master_addr": first.master_addr}
    ranks = expect.get("ranks")
    if ranks:
        want = [None] * len(ranks)
        for r in ranks:
            if 0 <= r["rank"] < len(want):
                want[r["rank"]] = r["gpu"]
        if want != gpus:
            bad.append("GPU of each global rank: derived %s, expected %s"
                       % (gpus, want))
        host0 = [r["host"] for r in ranks if r["rank"] == 0]
        if host0 and first.master_addr != host0[0]:
            bad.append("master_addr: derived %s, expected rank 0's host %s"
                       % (first.master_addr, host0[0]))
    return derived, bad


# ---------------------------------------------------------------- upstream

class Upstream:
    """The Megatron-LM functions a case runs, imported once."""

    def __init__(self, release):
        self.release = release
        from megatron.training import arguments
        from megatron.core import parallel_state
        from megatron.core import num_microbatches_calculator as nmc
        from megatron.core.optimizer import OptimizerConfig
        from megatron.core.distributed import DistributedDataParallelConfig
        from megatron.core.transformer import transformer_block
        from megatron.core.transformer import transformer_layer
        self.arguments = arguments
        self.ps = parallel_state
        self.nmc = nmc
        self.OptimizerConfig = OptimizerConfig
        self.DDPConfig = DistributedDataParallelConfig
        self.block = transformer_block
        self.layer = transformer_layer
        self.training = None
        if release == "core_v0.19.0":
            from megatron.training import training
            self.training = training

    # the configs, as training builds them
    def optimizer_config(self, args):
        if self.training is not None:
            return self.training.get_megatron_optimizer_config(args)[0]
        # core_r0.9.0: setup_model_and_optimizer fills it field by field
        import dataclasses
        kw = {f.name: getattr(args, f.name)
              for f in dataclasses.fields(self.OptimizerConfig)
              if hasattr(args, f.name)}
        return self.OptimizerConfig(**kw)

    def ddp_config(self, args):
        if self.training is not None:
            return self.training.get_megatron_ddp_config(args)
        # core_r0.9.0: get_model fills it field by field, then these four
        import dataclasses
        kw = {f.name: getattr(args, f.name)
              for f in dataclasses.fields(self.DDPConfig)
              if hasattr(args, f.name)}
        kw["grad_reduce_in_fp32"] = args.accumulate_allreduce_grads_in_fp32
        kw["check_for_nan_in_grad"] = args.check_for_nan_in_loss_and_grad
        kw["bucket_size"] = args.ddp_bucket_size
        kw["average_in_collective"] = args.ddp_average_in_collective
        return self.DDPConfig(**kw)

    def microbatches(self, args):
        nmc = self.nmc
        if self.release == "core_r0.9.0":
            nmc.init_num_microbatches_calculator(
                args.rank, args.rampup_batch_size, args.global_batch_size,
                args.micro_batch_size, args.data_parallel_size,
                args.decrease_batch_size_if_needed)
        else:
            nmc.init_num_microbatches_calculator(
                rank=args.rank, global_batch_size=args.global_batch_size,
                micro_batch_size=args.micro_batch_size,
                data_parallel_size=args.data_parallel_size *
                args.gtp_weight_remat_size,
                decrease_batch_size_if_needed=args.decrease_batch_size_if_needed,
                step_batch_size_schedule=args.step_batch_size_schedule,
                seq_length=args.seq_length)
        return nmc.get_num_microbatches(), nmc.get_current_global_batch_size()

    def chunks(self, config, pp, vpp):
        """[[(layers, offset, first stage, last stage) of chunk v] of
        stage p], with parallel_state set to pipeline rank p and virtual
        rank v as each rank's get_model sets it."""
        ps = self.ps
        ps.set_pipeline_model_parallel_world_size(pp)
        ps.set_virtual_pipeline_model_parallel_world_size(
            vpp if vpp > 1 else None)
        out = []
        for p in range(pp):
            ps.set_pipeline_model_parallel_rank(p)
            row = []
            for v in range(vpp):
                if vpp > 1:
                    ps.set_virtual_pipeline_model_parallel_rank(v)
                row.append(self.chunk(config, p, v if vpp > 1 else None))
            out.append(row)
        return out

    def chunk(self, config, p, v):
        ps = self.ps
        if self.release == "core_r0.9.0":
            n = self.block.get_num_layers_to_build(config)
            holder = types.SimpleNamespace(config=config)
            offset = self.layer.TransformerLayer._get_layer_offset(holder)
            first = ps.is_pipeline_first_stage()
            last = ps.is_pipeline_last_stage()
        else:
            n = self.block.get_num_layers_to_build(config, vp_stage=v,
                                                   pp_rank=p)
            offset = self.layer.get_transformer_layer_offset(
                config, vp_stage=v, pp_rank=p)
            first = ps.is_pipeline_first_stage(ignore_virtual=False,
                                               vp_stage=v)
            last = ps.is_pipeline_last_stage(ignore_virtual=False,
                                             vp_stage=v)
        return n, offset, bool(first), bool(last)


def dtype_name(d):
    import torch
    return {torch.float32: "fp32", torch.float16: "fp16",
            torch.bfloat16: "bf16", None: None}.get(d, str(d))


def derive(up, argv, env, world):
    """Megatron-LM's view of one agent's pretrain_gpt.py run on global
    rank 0.  Runs in the forked child."""
    sys.argv = ["pretrain_gpt.py"] + argv
    os.environ.clear()
    os.environ.update(env)
    os.environ.update({"WORLD_SIZE": str(world), "RANK": "0",
                       "LOCAL_RANK": "0"})
    a = up.arguments
    args = a.parse_args()
    args = a.validate_args(args, dict(PRETRAIN_GPT_DEFAULTS)) or args
    config = a.core_transformer_config_from_args(args)
    opt = up.optimizer_config(args)
    ddp = up.ddp_config(args)
    gas, gbs = up.microbatches(args)

    pp = args.pipeline_model_parallel_size
    vpp = args.virtual_pipeline_model_parallel_size or 1
    chunks = up.chunks(config, pp, vpp)

    d = {"tp": args.tensor_model_parallel_size, "pp": pp,
         "dp": args.data_parallel_size, "vpp": vpp,
         "cp": args.context_parallel_size,
         "mbs": args.micro_batch_size, "gbs": gbs, "micro_batches": gas,
         "world_size": args.world_size}
    d["blocks_per_stage"] = [sum(c[0] for c in row) for row in chunks]
    d["blocks_per_chunk"] = ([[c[0] for c in row] for row in chunks]
                             if vpp > 1 else None)
    d["chunk_offsets"] = [[c[1] for c in row] for row in chunks]
    d["embedding_chunk"] = [[p, v] for p, row in enumerate(chunks)
                            for v, c in enumerate(row) if c[2]]
    d["head_chunk"] = [[p, v] for p, row in enumerate(chunks)
                       for v, c in enumerate(row) if c[3]]
    d["sp"] = bool(config.sequence_parallel)
    gran = config.recompute_granularity
    if gran is None:
        d["recompute"] = "none"
    elif gran == "full" and config.recompute_method == "uniform" and \
            config.recompute_num_layers == 1:
        d["recompute"] = "full"
    elif gran == "full":
        d["recompute"] = "full (method %s, %s layers)" % (
            config.recompute_method, config.recompute_num_layers)
    else:
        d["recompute"] = gran
        if getattr(config, "recompute_modules", None) not in \
                (None, ["core_attn"]):
            d["recompute"] += " (modules %s)" % config.recompute_modules
    if getattr(ddp, "use_megatron_fsdp", False):
        d["zero"] = FSDP_ZERO.get(ddp.data_parallel_sharding_strategy,
                                  ddp.data_parallel_sharding_strategy)
        d["fsdp"] = True
    else:
        d["zero"] = 1 if ddp.use_distributed_optimizer else 0
        d["fsdp"] = False
    if getattr(opt, "optimizer_cpu_offload", False):
        frac = opt.optimizer_offload_fraction
        d["offload"] = "optimizer" if frac == 1.0 else \
            "optimizer (fraction %s)" % frac
    else:
        d["offload"] = "none"
    if args.fp16:
        d["precision"] = "fp16"
    elif args.bf16:
        d["precision"] = "bf16"
    else:
        d["precision"] = "fp32"
    d["params_dtype"] = dtype_name(config.params_dtype)
    # the main gradients and the optimizer's master weights and states
    if d["fsdp"]:
        g = ddp.megatron_fsdp_main_grads_dtype or config.params_dtype
        master = dtype_name(ddp.megatron_fsdp_main_params_dtype)
    else:
        import torch
        g = torch.float32 if ddp.grad_reduce_in_fp32 else config.params_dtype
        master = dtype_name(getattr(opt, "main_params_dtype", None)) or "fp32"
    d["grad_dtype"] = dtype_name(g)
    d["optimizer_dtypes"] = {
        "main_params": master,
        "exp_avg": dtype_name(getattr(opt, "exp_avg_dtype", None)) or "fp32",
        "exp_avg_sq": dtype_name(getattr(opt, "exp_avg_sq_dtype", None))
        or "fp32"}
    if d["precision"] == "fp32":
        if env.get("NVIDIA_TF32_OVERRIDE") == "0":
            d["tf32"] = False
        elif env.get("TORCH_ALLOW_TF32_CUBLAS_OVERRIDE") == "1":
            d["tf32"] = True
        else:
            d["tf32"] = False  # PyTorch's default for matmuls since 1.12
    else:
        d["tf32"] = None
    d["model"] = {
        "blocks": config.num_layers, "hidden": config.hidden_size,
        "heads": config.num_attention_heads, "seq": args.seq_length,
        "kv_heads": config.num_query_groups or config.num_attention_heads,
        "ffn": config.ffn_hidden_size,
        "max_positions": args.max_position_embeddings,
        "swiglu": bool(args.swiglu), "normalization": args.normalization,
        "positions": args.position_embedding_type,
        "bias": bool(args.add_bias_linear),
        "untied": bool(args.untie_embeddings_and_output_weights)}
    d["overlap_grad"] = bool(ddp.overlap_grad_reduce)
    d["overlap_param"] = bool(ddp.overlap_param_gather)
    d["overlap_tp"] = bool(getattr(args, "tp_comm_overlap", False))
    d["overlap_p2p"] = bool(getattr(args, "overlap_p2p_comm", False))
    d["schedule"] = interleave_rule(up.release, config, gas, pp, vpp)
    d["cuda_device_max_connections"] = env.get("CUDA_DEVICE_MAX_CONNECTIONS")
    d["ckpt_format"] = getattr(args, "ckpt_format", None)
    return d


def interleave_rule(release, config, gas, pp, vpp):
    """The conditions forward_backward_pipelining_with_interleaving puts on
    the micro-batch count before any work (it needs a GPU to run, so they
    are stated here from its source): None when they hold, else why not."""
    if vpp <= 1:
        return None
    if release == "core_r0.9.0":
        if gas % pp != 0:
            return ("number of microbatches (%d) is not divisible by "
                    "pipeline-model-parallel-size (%d) when using "
                    "interleaved schedule" % (gas, pp))
        return None
    group = config.microbatch_group_size_per_vp_stage
    if group > gas or group < pp:
        return ("micro-batch group size per virtual stage %d outside "
                "[PP=%d, M=%d]" % (group, pp, gas))
    rest = gas % group
    if 0 < rest < pp:
        return ("the remainder of M=%d divided by the group size %d is %d, "
                "neither 0 nor >= PP=%d" % (gas, group, rest, pp))
    return None


# ---------------------------------------------------------------- compare

def compare(d, expect):
    """Mismatches between what Megatron derived and what the plan says."""
    bad = []

    def same(field, got, want):
        if want is not None and got != want:
            bad.append("%s: derived %s, expected %s"
                       % (field, json.dumps(got), json.dumps(want)))

    for f in ("world_size", "tp", "pp", "dp", "vpp", "mbs", "gbs",
              "micro_batches", "blocks_per_stage", "sp", "recompute",
              "zero", "offload", "precision", "overlap_grad",
              "overlap_param", "overlap_tp", "overlap_p2p"):
        if f in expect:
            same(f, d.get(f), expect[f])
    if "blocks_per_chunk" in expect:
        want = expect["blocks_per_chunk"]
        if want is not None or d["blocks_per_chunk"] is not None:
            same("blocks_per_chunk", d["blocks_per_chunk"], want)
    if "tf32" in expect and expect["tf32"] is not None:
        same("tf32", d["tf32"], expect["tf32"])
    if d.get("cp", 1) != 1:
        bad.append("context parallel size %d, the plan has none" % d["cp"])
    # chunk k = v * pp + p holds the blocks after those of chunks < k
    pp, vpp = d["pp"], d["vpp"]
    per = d["blocks_per_chunk"] or [[n] for n in d["blocks_per_stage"]]
    want_off, off = [[0] * vpp for _ in range(pp)], 0
    for v in range(vpp):
        for p in range(pp):
            want_off[p][v] = off
            off += per[p][v]
    same("chunk_offsets", d["chunk_offsets"], want_off)
    same("embedding_chunk", d["embedding_chunk"], [[0, 0]])
    same("head_chunk", d["head_chunk"], [[pp - 1, vpp - 1]])
    prec = d["precision"]
    same("grad_dtype", d["grad_dtype"], GRAD_DTYPE.get(prec))
    same("params_dtype", d["params_dtype"], prec)
    same("optimizer_dtypes", d["optimizer_dtypes"],
         {"main_params": "fp32", "exp_avg": "fp32", "exp_avg_sq": "fp32"})
    m = expect.get("model") or {}
    for k in ("blocks", "hidden", "heads", "seq", "kv_heads", "ffn"):
        if m.get(k):
            same("model." + k, d["model"][k], m[k])
    if d["schedule"] is not None:
        bad.append("interleaved schedule: " + d["schedule"])
    return bad


# ---------------------------------------------------------------- cases

def run_child(up, argv, env, world):
    """derive() in a forked child, bounded by CASE_TIMEOUT.  Returns
    (derived or None, error text or None)."""
    rfd, wfd = os.pipe()
    log = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:
        os.close(rfd)
        code = 0
        try:
            os.dup2(log.fileno(), 1)
            os.dup2(log.fileno(), 2)
            try:
                out = {"derived": derive(up, argv, env, world)}
            except BaseException as e:  # upstream asserts, raises or exits
                out = {"error": upstream_error(e)}
            data = json.dumps(out).encode()
            while data:
                data = data[os.write(wfd, data):]
        except BaseException:
            code = 1
        os._exit(code)
    os.close(wfd)
    chunks = []
    deadline = time.monotonic() + CASE_TIMEOUT
    timed_out = False
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            timed_out = True
            break
        ready, _, _ = select.select([rfd], [], [], left)
        if not ready:
            continue
        buf = os.read(rfd, 65536)
        if not buf:
            break
        chunks.append(buf)
    os.close(rfd)
    if timed_out:
        os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    log.seek(0)
    tail = log.read().decode(errors="replace")[-600:]
    log.close()
    if timed_out:
        return None, "no result within %d s" % CASE_TIMEOUT
    try:
        out = json.loads(b"".join(chunks).decode())
    except ValueError:
        return None, "the check ended without a result: " + tail.strip()
    return out.get("derived"), out.get("error")


def upstream_error(e):
    """'Type: message (file:line)' of the frame that raised, for the why."""
    tb = traceback.extract_tb(e.__traceback__)
    where = ""
    for fr in reversed(tb):
        if "/megatron/" in fr.filename:
            where = " (%s:%d)" % (fr.filename[fr.filename.rfind("megatron/"):],
                                  fr.lineno)
            break
    if isinstance(e, SystemExit):
        return "exit(%s)%s" % (e.code, where)
    return "%s: %s%s" % (type(e).__name__, str(e)[:500], where)


def check_case(up, release, case):
    cid = case.get("id", "?")
    expect = case.get("expect") or {}
    script = os.path.join(case["dir"], "megatron.sh")
    result = {"id": cid, "status": "rejected", "why": "", "derived": {}}
    if case.get("release", release) != release:
        result["why"] = "case is for release %s, checker runs %s" % (
            case.get("release"), release)
        return result
    if not os.path.isfile(script):
        result["why"] = "no megatron.sh in " + case["dir"]
        return result
    agents, problems = record_agents(script, timeout=60)
    if problems or not agents:
        result["why"] = "; ".join(problems) or "no torchrun agent"
        return result
    launch, bad = check_agents(agents, expect)
    t = agents[0]["torchrun"]
    argv = list(t.training_script_args)
    extra = user_args(release, argv)
    derived, error = run_child(up, argv + extra, agents[0]["env"],
                               launch["world_size"])
    result["derived"] = dict(launch)
    result["derived"]["user_args"] = extra
    if error is not None or derived is None:
        result["why"] = "Megatron-LM %s: %s" % (release, error)
        return result
    result["derived"].update(derived)
    bad += compare(derived, expect)
    if launch["world_size"] != derived["world_size"]:
        bad.append("torchrun world size %d, Megatron's %d"
                   % (launch["world_size"], derived["world_size"]))
    if bad:
        result["why"] = "; ".join(bad)
    else:
        result["status"] = "accepted"
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", required=True, choices=RELEASES)
    ap.add_argument("--source", required=True,
                    help="extracted Megatron-LM tree (holds megatron/)")
    ap.add_argument("cases", help="CASES.json")
    ap.add_argument("--list-placeholders", action="store_true",
                    help="print the stand-ins installed, on stderr")
    opts = ap.parse_args()

    if not os.path.isdir(os.path.join(opts.source, "megatron")):
        common.skip("no Megatron-LM source in %s" % opts.source)
    common.use_debian_torch()
    try:
        import torch  # noqa: F401
        from torch.distributed.run import get_args_parser  # noqa: F401
    except ImportError as e:
        common.skip("torch cannot be imported (%s)" % e)
    with open(opts.cases) as f:
        cases = json.load(f)["cases"]

    sys.path.insert(0, os.path.abspath(opts.source))
    t0 = time.monotonic()
    installed = placeholders.install_megatron(opts.release)
    import warnings
    warnings.simplefilter("ignore")
    # Megatron prints while it imports; stdout carries only the verdicts
    saved = os.dup(1)
    os.dup2(2, 1)
    try:
        up = Upstream(opts.release)
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
    import_s = time.monotonic() - t0
    if opts.list_placeholders:
        for name, why in installed:
            sys.stderr.write("placeholder %s: %s\n" % (name, why))
    sys.stderr.write("check_megatron %s: Megatron-LM imported in %.1f s, "
                     "%d placeholders\n" % (opts.release, import_s,
                                            len(installed)))
    t1 = time.monotonic()
    for case in cases:
        try:
            res = check_case(up, opts.release, case)
        except (OSError, KeyError, ValueError) as e:
            res = {"id": case.get("id", "?"), "status": "rejected",
                   "why": "checker could not run the case: %s" % e,
                   "derived": {}}
        sys.stdout.write(json.dumps(res) + "\n")
        sys.stdout.flush()
    if cases:
        sys.stderr.write("check_megatron %s: %d cases in %.1f s (%.2f s "
                         "each)\n" % (opts.release, len(cases),
                                      time.monotonic() - t1,
                                      (time.monotonic() - t1) / len(cases)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
