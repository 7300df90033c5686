#!/usr/bin/env python3
"""DeepSpeed's own code on hetplan's deepspeed exports (ds_config.json,
hostfile, hetplan_pipe.py, deepspeed.sh).

    python3 check_deepspeed.py --release 0.14.4|0.19.5 --source DIR CASES.json

For each case (the checkers' interface: docs/testing.md):
  - deepspeed.sh runs under /bin/sh with a recording `deepspeed`; its argv
    goes through DeepSpeed's runner: parse_args, fetch_hostfile,
    parse_inclusion_exclusion, encode_world_info and PDSHRunner.get_cmd
    (the per-host launch command), and then deepspeed.launcher.launch's
    main runs for every host with a recording training script, so the
    launcher itself sets RANK, LOCAL_RANK and CUDA_VISIBLE_DEVICES; a rank
    runs on the LOCAL_RANK-th GPU of its CUDA_VISIBLE_DEVICES (what the
    engine's set_device does), which must be the plan's host and GPU;
    the training script's own arguments go through
    deepspeed.add_config_arguments.
  - for every pipeline stage, one process stands as the stage's first rank
    of the plan's whole world (placeholders.install_world: the other ranks
    are absent, collectives move no data), imports hetplan_pipe.py for real,
    builds the model with initialize_args() from the plan's number of tiny
    tagged layers, and constructs the engine with deepspeed.initialize and
    ds_config.json (the pipeline engine's ZeRO and batch asserts run); the
    layers built on each stage must be the plan's; on stage 0 the config
    also goes through DeepSpeedConfig(path, mpu=PipelineParallelGrid of the
    plan's topology).
Each case runs in a forked child (each stage in a child of that), bounded
by a timeout; DeepSpeed is imported once, before the forks.
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

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import placeholders  # noqa: E402

CASE_TIMEOUT = 600   # seconds per case (a 4x slower machine included)
PART_TIMEOUT = 300   # seconds per stage or host inside a case

# the interpreter launch.py starts for every local rank (sys.executable):
# records the launcher's environment and the script's arguments, one line
INTERPRETER = """#!/bin/sh
printf '%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\t%s\\n' "$RANK" "$LOCAL_RANK" "$WORLD_SIZE" \\
    "$CUDA_VISIBLE_DEVICES" "$MASTER_ADDR" "$MASTER_PORT" "$HETPLAN_LAUNCH_HOST" "$*" \\
    >>"$HETPLAN_LAUNCH_RECORD"
"""
RECORD_FIELDS = ("RANK", "LOCAL_RANK", "WORLD_SIZE", "CUDA_VISIBLE_DEVICES", "MASTER_ADDR",
                 "MASTER_PORT", "HETPLAN_LAUNCH_HOST", "argv")


HARNESS = "harness error: "  # an exception raised by the checks' own code
UPSTREAM = "/nonexistent/"     # the DeepSpeed source directory (main)


class Rejected(Exception):
    """Upstream code refused the export or derived another value."""


def start(fn, log_path=None):
    """fn() in a forked child with stdout/stderr in log_path; returns what
    finish() needs."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        code = 0
        try:
            if log_path:
                fd = os.open(log_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                os.dup2(fd, 1)
                os.dup2(fd, 2)
            try:
                out = {"value": fn()}
            except Rejected as e:
                out = {"rejected": str(e)}
            except BaseException as e:  # upstream raised or asserted
                tb = traceback.extract_tb(e.__traceback__)
                where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
                mine = not any(os.path.abspath(f.filename).startswith(UPSTREAM)
                               or os.path.basename(f.filename) == "hetplan_pipe.py"
                               for f in tb)
                out = {"rejected": "%s%s: %s (%s)" % (HARNESS if mine else "",
                                                      type(e).__name__, e, where)}
                traceback.print_exc()
            data = json.dumps(out).encode()
            while data:
                n = os.write(w, data)
                data = data[n:]
        except BaseException:
            code = 1
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.close(w)
    return pid, r, log_path


def finish(child, deadline):
    """(value, None) or (None, why) of a child of start()."""
    pid, r, log_path = child
    chunks = []
    while True:
        left = deadline - time.time()
        ready = select.select([r], [], [], left)[0] if left > 0 else []
        if not ready:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os.close(r)
            return None, "timed out"
        b = os.read(r, 65536)
        if not b:
            break
        chunks.append(b)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    try:
        out = json.loads(b"".join(chunks).decode())
    except ValueError:
        return None, "child died (status %d)%s" % (status, log_tail(log_path))
    if "rejected" in out:
        return None, out["rejected"]
    return out["value"], None


def forked(fn, timeout, log_path=None):
    """fn() in a forked child: (value, None) or (None, why)."""
    return finish(start(fn, log_path), time.time() + timeout)


def log_tail(path, n=600):
    if not path or not os.path.exists(path):
        return ""
    with open(path, errors="replace") as f:
        t = f.read()
    return ": ..." + t[-n:].replace("\n", " | ") if t else ""


def differ(field, got, want):
    raise Rejected("%s: derived %s, expected %s" % (field, json.dumps(got), json.dumps(want)))


# ---- the launcher ----------------------------------------------------------

def check_launcher(case, tmp):
    import deepspeed
    from deepspeed.launcher import runner, multinode_runner

    e, d = case["expect"], {}
    recorder = os.path.join(tmp, "train.py")  # never run: the interpreter records
    with open(recorder, "w") as f:
        f.write("raise SystemExit('not run')\n")
    interpreter = os.path.join(tmp, "python")
    with open(interpreter, "w") as f:
        f.write(INTERPRETER)
    os.chmod(interpreter, 0o755)
    env = {k: v for k, v in os.environ.items()
           if k not in ("NVIDIA_TF32_OVERRIDE", "TORCH_ALLOW_TF32_CUBLAS_OVERRIDE")}
    rc, err, calls = common.run_script(os.path.join(case["dir"], "deepspeed.sh"),
                                       [recorder, "--hetplan-user-arg"], env=env,
                                       commands=("deepspeed",), cwd=tmp)
    if rc != 0 or len(calls) != 1:
        raise Rejected("deepspeed.sh: exit %d, %d deepspeed calls: %s"
                       % (rc, len(calls), err.strip()[-300:]))
    call = calls[0]
    args = runner.parse_args(call["argv"])
    if args.user_script != recorder:
        differ("launcher.user_script", args.user_script, recorder)
    pool = runner.fetch_hostfile(args.hostfile)
    if not pool:
        raise Rejected("fetch_hostfile('%s') found no hosts" % args.hostfile)
    active = runner.parse_inclusion_exclusion(pool, args.include, args.exclude)
    world_info = runner.encode_world_info(active)
    d["hosts"] = list(active.keys())
    d["master_addr"], d["master_port"] = args.master_addr, args.master_port
    want_master = e["ranks"][0]["host"] if e.get("ranks") else None
    if want_master is not None and args.master_addr != want_master:
        differ("launcher.master_addr", args.master_addr, want_master)
    # the training script's own arguments, by DeepSpeed's own parser
    ap = deepspeed.add_config_arguments(argparse.ArgumentParser())
    ta, _ = ap.parse_known_args(args.user_args)
    if not ta.deepspeed or os.path.realpath(ta.deepspeed_config or "") != \
            os.path.realpath(os.path.join(case["dir"], "ds_config.json")):
        differ("launcher.deepspeed_config", ta.deepspeed_config, "ds_config.json")
    if "--hetplan-user-arg" not in args.user_args:
        differ("launcher.user_args", args.user_args, "[..., '--hetplan-user-arg']")
    # the command DeepSpeed runs on every host (pdsh substitutes %n with the
    # host's index in its -w list), then the launch on each host
    pd = multinode_runner.PDSHRunner(args, world_info)
    cmd = pd.get_cmd(dict(call["env"]), active)
    if isinstance(cmd, tuple):  # (command, kill command, environment)
        cmd = cmd[0]
    workers = cmd[cmd.index("-w") + 1].split(",")
    launch = cmd[cmd.index("deepspeed.launcher.launch") + 1:]
    record = os.path.join(tmp, "launch.jsonl")
    children = []
    for node, host in enumerate(workers):
        argv = [a.replace("%n", str(node)) for a in launch]
        # PDSH passes the user arguments re-quoted for a remote shell
        argv = [a[1:-1].replace('\\"', '"') if a.startswith('"') and a.endswith('"')
                else a for a in argv]

        def run_host(argv=argv):
            from deepspeed.launcher import launch as ds_launch
            os.environ.update(call["env"])
            os.environ["HETPLAN_LAUNCH_RECORD"] = record
            os.environ["HETPLAN_LAUNCH_HOST"] = host
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
            sys.argv = ["deepspeed.launcher.launch"] + argv
            sys.executable = interpreter
            try:
                ds_launch.main()
            except SystemExit as ex:
                if ex.code not in (0, None):
                    raise Rejected("launch on host %s exited %s" % (host, ex.code))
            return True

        children.append((host, start(run_host, os.path.join(tmp, "launch-%d.log" % node))))
    deadline = time.time() + PART_TIMEOUT
    for host, child in children:
        _, why = finish(child, deadline)
        if why:
            raise Rejected("deepspeed.launcher.launch, host %s: %s" % (host, why))
    procs = []
    with open(record) as f:
        for line in f:
            fields = line.rstrip("\n").split("\t")
            env_p = dict(zip(RECORD_FIELDS, fields))
            procs.append({"env": env_p, "argv": env_p.pop("argv").split(" ")})
    by_rank = {}
    lines = procs
    if len(lines) != sum(len(v) for v in active.values()):
        differ("launcher.processes", len(lines), sum(len(v) for v in active.values()))
    for i, p in enumerate(lines):
        env_p = p["env"]
        rank = int(env_p["RANK"])
        visible = [int(g) for g in env_p["CUDA_VISIBLE_DEVICES"].split(",")]
        local = int(env_p["LOCAL_RANK"])
        if "--local_rank=%d" % local not in p["argv"]:
            differ("launcher.local_rank_arg", p["argv"], "--local_rank=%d" % local)
        if rank in by_rank:
            differ("launcher.rank %d" % rank, "twice", "once")
        by_rank[rank] = {"rank": rank, "host": env_p["HETPLAN_LAUNCH_HOST"],
                         "gpu": visible[local]}
        if int(env_p["WORLD_SIZE"]) != e["world_size"]:
            differ("launcher.WORLD_SIZE", int(env_p["WORLD_SIZE"]), e["world_size"])
        if env_p["MASTER_ADDR"] != args.master_addr or env_p["MASTER_PORT"] != str(args.master_port):
            differ("launcher.master", [env_p["MASTER_ADDR"], env_p["MASTER_PORT"]],
                   [args.master_addr, str(args.master_port)])
    ranks = [by_rank[r] for r in sorted(by_rank)]
    d["world_size"] = len(ranks)
    want = [{"rank": x["rank"], "host": x["host"], "gpu": x["gpu"]} for x in e["ranks"]]
    if ranks != want:
        bad = [(a, b) for a, b in zip(ranks, want) if a != b][:3]
        differ("ranks", [a for a, _ in bad] or ranks[-3:], [b for _, b in bad] or want[-3:])
    d["ranks_ok"] = True
    return d


# ---- the model and the engine, one pipeline stage --------------------------

def stage_check(case, stage, release, log):
    """Runs in a forked child: rank of `stage` (data 0, tensor 0) in the plan's
    world; returns what DeepSpeed built there."""
    import torch
    t0 = time.time()
    e = case["expect"]
    tp, pp, dp = e["tp"], e["pp"], e["dp"]
    world = tp * pp * dp
    from deepspeed.runtime.pipe.topology import (PipeModelDataParallelTopology,
                                                 PipelineParallelGrid)
    topo = PipeModelDataParallelTopology(num_pp=pp, num_mp=tp, num_dp=dp)
    rank = topo.get_rank(pipe=stage, data=0, model=0)
    os.environ.update(RANK=str(rank), WORLD_SIZE=str(world), LOCAL_RANK="0",
                      LOCAL_SIZE="1", MASTER_ADDR="127.0.0.1", MASTER_PORT="29500")
    placeholders.install_world(rank, world)
    import deepspeed
    deepspeed.init_distributed()
    out = {"rank": rank}
    cfg_path = os.path.join(case["dir"], "ds_config.json")
    if stage == 0:
        from deepspeed.runtime.config import DeepSpeedConfig
        grid = PipelineParallelGrid(topology=topo)
        cfg = DeepSpeedConfig(cfg_path, mpu=grid)
        off = cfg.zero_config.offload_optimizer
        if hasattr(cfg, "float16_config"):  # 0.19
            fp16, bf16 = cfg.float16_config.enabled, cfg.bfloat16_config.enabled
        else:
            fp16, bf16 = cfg.fp16_enabled, cfg.bfloat16_enabled
        out["config"] = {
            "gbs": cfg.train_batch_size, "mbs": cfg.train_micro_batch_size_per_gpu,
            "micro_batches": cfg.gradient_accumulation_steps,
            "zero": int(cfg.zero_optimization_stage),
            "offload": "optimizer" if off is not None and str(getattr(off.device, "value", off.device)) == "cpu"
            else "none",
            "precision": "fp16" if fp16 else "bf16" if bf16 else "fp32",
            "dp": cfg.world_size,
            "overlap_comm": bool(cfg.zero_config.overlap_comm)}
    sys.path.insert(0, case["dir"])
    os.environ.pop("NVIDIA_TF32_OVERRIDE", None)
    # the opposite of the plan's mode: hetplan_pipe.py must set it
    torch.backends.cuda.matmul.allow_tf32 = not e.get("tf32")
    import hetplan_pipe
    out["tf32"] = torch.backends.cuda.matmul.allow_tf32
    out["tf32_env"] = os.environ.get("NVIDIA_TF32_OVERRIDE")
    from deepspeed.runtime.pipe.module import LayerSpec

    class Layer(torch.nn.Module):
        """A tiny layer that knows its index in the model's layer list."""

        def __init__(self, index):
            super().__init__()
            self.index = index
            self.linear = torch.nn.Linear(4, 4)

        def forward(self, x):
            return self.linear(x)

    layers = [LayerSpec(Layer, i) for i in range(e["nlayers"])]
    # an export that offers only pipeline_module() (no initialize_args) is
    # built through it, as its header tells the user
    pipeline = getattr(hetplan_pipe, "PIPELINE", not hasattr(hetplan_pipe, "initialize_args"))
    kwargs = {"loss_fn": torch.nn.MSELoss()} if pipeline else {}
    if hasattr(hetplan_pipe, "initialize_args"):
        init = hetplan_pipe.initialize_args(layers, **kwargs)
    else:
        init = {"model": hetplan_pipe.pipeline_module(layers, **kwargs)}
    model = init["model"]
    built = [m.index for m in model.modules() if isinstance(m, Layer)]
    out["layers"] = built
    out["pipeline"] = bool(pipeline)
    if pipeline:
        out["parts"] = list(model.parts)
        out["stage_id"] = model.stage_id
        out["checkpoint_interval"] = model.activation_checkpoint_interval
    else:
        out["checkpoint_interval"] = hetplan_pipe.ACTIVATION_CHECKPOINT_INTERVAL
        mpu = init.get("mpu")
        out["mpu"] = None if mpu is None else {
            "tp": mpu.get_slice_parallel_world_size(), "dp": mpu.get_data_parallel_world_size(),
            "pp": mpu.get_pipe_parallel_world_size()}
    params = [p for p in model.parameters() if p.requires_grad]
    with open(cfg_path) as f:
        offload = "offload_optimizer" in json.load(f).get("zero_optimization", {})
    if offload:
        from deepspeed.ops.adam import DeepSpeedCPUAdam
        opt = DeepSpeedCPUAdam(params, lr=1e-3)
    else:
        opt = torch.optim.AdamW(params, lr=1e-3)
    engine, _, _, _ = deepspeed.initialize(model=model, optimizer=opt,
                                           model_parameters=params, config=cfg_path,
                                           mpu=init.get("mpu"))
    out["engine"] = {
        "class": type(engine).__name__, "dp": engine.dp_world_size,
        "gbs": engine.train_batch_size(), "mbs": engine.train_micro_batch_size_per_gpu(),
        "micro_batches": engine.gradient_accumulation_steps(),
        "zero": int(engine.zero_optimization_stage()),
        "offload": "optimizer" if engine.zero_cpu_offload() else "none",
        "precision": "fp16" if engine.fp16_enabled() else
        "bf16" if engine.bfloat16_enabled() else "fp32",
        "mp": engine.mp_world_size}
    if pipeline:
        out["engine"]["pp"] = engine.num_stages
        out["engine"]["stage"] = engine.stage_id
    out["seconds"] = time.time() - t0
    return out


def check_case(case, release, tmp):
    e = case["expect"]
    d = {}
    if e.get("vpp", 1) != 1:
        differ("vpp", 1, e["vpp"])
    if e.get("sp") and e["tp"] > 1:
        differ("sp", False, True)
    t0 = time.time()
    d["launcher"] = check_launcher(case, tmp)
    t1 = time.time()
    stages = []
    for p in range(e["pp"]):
        v, why = forked(lambda p=p: stage_check(case, p, release, None), PART_TIMEOUT,
                        os.path.join(tmp, "stage%d.log" % p))
        if why:
            raise Rejected("stage %d: %s" % (p, why))
        stages.append(v)
    d["seconds_launcher"] = round(t1 - t0, 1)
    d["seconds_stages"] = [round(s.pop("seconds"), 1) for s in stages]
    s0 = stages[0]
    c = s0["config"]
    d.update(gbs=c["gbs"], mbs=c["mbs"], micro_batches=c["micro_batches"],
             zero=c["zero"], offload=c["offload"], precision=c["precision"], dp=c["dp"])
    for k in ("gbs", "mbs", "micro_batches", "zero", "offload", "precision", "dp"):
        if c[k] != e[k]:
            differ("DeepSpeedConfig." + k, c[k], e[k])
    if e.get("overlap_comm") and not c["overlap_comm"]:
        differ("DeepSpeedConfig.zero_config.overlap_comm", c["overlap_comm"], True)
    for s in stages:
        g = s["engine"]
        for k in ("gbs", "mbs", "micro_batches", "zero", "offload", "precision", "dp"):
            if g[k] != e[k]:
                differ("engine." + k, g[k], e[k])
    bounds = e["layer_bounds"]
    got_layers = [s["layers"] for s in stages]
    if s0["pipeline"]:
        d["pp"] = s0["engine"]["pp"]
        d["tp"] = s0["engine"]["mp"] // max(1, d["pp"])
        for p, s in enumerate(stages):
            if s["stage_id"] != p or s["engine"]["stage"] != p:
                differ("stage_id", s["stage_id"], p)
        width = max(b - a for a, b in zip(bounds, bounds[1:]))
        d["parts"] = s0["parts"]
        if s0["parts"] != [i * width for i in range(e["pp"] + 1)]:
            differ("PipelineModule.parts", s0["parts"], [i * width for i in range(e["pp"] + 1)])
        d["recompute"] = "full" if s0["checkpoint_interval"] > 0 else "none"
    else:
        d["pp"] = 1
        m = s0["mpu"]
        d["tp"] = m["tp"] if m else 1
        if m and (m["dp"] != e["dp"] or m["pp"] != 1):
            differ("mpu.dp", m["dp"], e["dp"])
        if s0["engine"]["mp"] != d["tp"]:
            differ("engine.mp_world_size", s0["engine"]["mp"], d["tp"])
        d["recompute"] = "full" if s0["checkpoint_interval"] else "none"
        if s0["engine"]["class"] == "PipelineEngine":
            differ("engine", "PipelineEngine", "DeepSpeedEngine")
    d["engine"] = s0["engine"]["class"]
    d["layer_bounds"] = [0]
    for p, got in enumerate(got_layers):
        want = list(range(bounds[p], bounds[p + 1]))
        if got != want:
            differ("layers of stage %d" % p, got, want)
        d["layer_bounds"].append(bounds[p] + len(got))
    for k in ("tp", "pp"):
        if d[k] != e[k]:
            differ(k, d[k], e[k])
    want_rc = e.get("recompute", "none")
    if d["recompute"] != want_rc:
        differ("recompute", d["recompute"], want_rc)
    if e.get("precision") == "fp32" and e.get("tf32") is not None:
        d["tf32"] = s0["tf32"]
        if s0["tf32"] is not bool(e["tf32"]):
            differ("torch.backends.cuda.matmul.allow_tf32", s0["tf32"], e["tf32"])
        if (s0["tf32_env"] == "0") == bool(e["tf32"]):
            differ("NVIDIA_TF32_OVERRIDE", s0["tf32_env"], None if e["tf32"] else "0")
    d["world_size"] = e["tp"] * d["pp"] * c["dp"]
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("cases")
    a = ap.parse_args()
    if not os.path.isdir(os.path.join(a.source, "deepspeed")):
        common.skip("no DeepSpeed source under '%s'" % a.source)
    with open(a.cases) as f:
        cases = json.load(f)["cases"]
    common.use_debian_torch()
    try:
        import torch  # noqa: F401
        import pydantic
    except ImportError as ex:
        common.skip("DeepSpeed needs %s" % ex.name)
    if int(pydantic.VERSION.split(".")[0]) < 2 and a.release != "0.14.4":
        common.skip("DeepSpeed %s needs pydantic 2" % a.release)
    for mod in ("msgpack", "numpy", "psutil", "cpuinfo", "packaging", "tqdm"):
        try:
            __import__(mod)
        except ImportError:
            common.skip("DeepSpeed needs the Python package %s" % mod)
    torch.set_num_threads(1)
    sys.path.insert(0, os.path.abspath(a.source))
    global UPSTREAM
    UPSTREAM = os.path.abspath(a.source) + os.sep
    t0 = time.time()
    # DeepSpeed's logger and accelerator detection print on stdout; without
    # an installed git_version_info it reads its version from ./version.txt
    saved, cwd = os.dup(1), os.getcwd()
    os.dup2(2, 1)
    os.chdir(a.source)
    try:
        installed = placeholders.install_deepspeed(a.release)
        import deepspeed
        from deepspeed.launcher import runner, launch, multinode_runner  # noqa: F401
        from deepspeed.runtime.pipe import engine  # noqa: F401
        from deepspeed.runtime.config import DeepSpeedConfig  # noqa: F401
    finally:
        sys.stdout.flush()
        os.chdir(cwd)
        os.dup2(saved, 1)
        os.close(saved)
    if not deepspeed.__version__.startswith(a.release):
        print("warning: DeepSpeed %s imported for release %s" % (deepspeed.__version__, a.release),
              file=sys.stderr)
    print("imported DeepSpeed %s in %.1f s with %d placeholders" %
          (deepspeed.__version__, time.time() - t0, len(installed)), file=sys.stderr)
    harness = 0
    for case in cases:
        t1 = time.time()
        with tempfile.TemporaryDirectory(prefix="hetplan-ds-") as tmp:
            d, why = forked(lambda: check_case(case, a.release, tmp), CASE_TIMEOUT,
                            os.path.join(tmp, "case.log"))
        res = {"id": case["id"], "status": "rejected" if why else "accepted",
               "why": why or "", "derived": d or {},
               "seconds": round(time.time() - t1, 1)}
        print(json.dumps(res))
        sys.stdout.flush()
        harness += HARNESS in res["why"]
    if harness:
        print("%d cases hit an error of the checks themselves" % harness, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
