#!/usr/bin/env python3
"""The exports proven by the launchers' own code: plan, export, check.

Makes plans over the shipped examples (searched plans, plans made for each
launcher release with `--launcher`, and hand-written strategies scored by
`planner evaluate` that use every feature a plan can state), exports every
strategy of every plan to every target and release, and hands each export
that exits 0 to the checker of its target (check_megatron.py,
check_deepspeed.py, check_torchrun.py, check_hostfile.py), which runs the
upstream code on it and compares what that code derives with what the plan
says (`expect`, computed here from the plan and its model file).

  sweep.py --planner build/planner --work build/upstream-oracle --sample
  sweep.py --planner build/planner --work build/upstream-oracle --full

Exit 0: every export that exits 0 was accepted by the upstream code;
1: an export was rejected upstream, or the sweep itself failed (a plan, an
export exit other than 0, 3 and 6, a checker error); 77: nothing could be
checked (the sources, or a Python with torch, missing); 2: usage.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # no __pycache__ in the source tree
import common  # noqa: E402

SOURCE_ROOT = os.path.dirname(os.path.dirname(HERE))
EXAMPLES = os.path.join(SOURCE_ROOT, "examples")

# (target, export release, checker, checker release, upstream tarball or None)
TARGETS = [
    ("megatron", "core_r0.9.0", "check_megatron.py", "core_r0.9.0",
     "megatron-lm-core_r0.9.0"),
    ("megatron", "core_v0.19.0", "check_megatron.py", "core_v0.19.0",
     "megatron-lm-core_v0.19.0"),
    ("deepspeed", "0.14", "check_deepspeed.py", "0.14.4", "deepspeed-v0.14.4"),
    ("deepspeed", "0.19", "check_deepspeed.py", "0.19.5", "deepspeed-v0.19.5"),
    ("torchrun", "1.13", "check_torchrun.py", "1.13", None),
    # torch 2.x is not installed here: its exports (the same underscore
    # flags) are parsed by torch 1.13's parser, and the table says so
    ("torchrun", "2.x", "check_torchrun.py", "1.13", None),
    ("hostfile", "-", "check_hostfile.py", "-", None),
]
LAUNCHERS = ["megatron@core_r0.9.0", "megatron@core_v0.19.0", "deepspeed@0.14",
             "deepspeed@0.19", "torchrun@1.13", "torchrun@2.x"]


def label(target, release):
    """How the table names an export release (the upstream release checked)."""
    for t, r, _, crel, _ in TARGETS:
        if (t, r) == (target, release):
            if crel != release and target == "torchrun":
                return "%s %s (%s's parser)" % (target, release, crel)
            return target if crel == "-" else "%s %s" % (target, crel)
    return target + " " + release


# ---------------------------------------------------------------- inputs

def _derived_inputs(work):
    """Variants of shipped examples the features need: clusters whose nodes
    give host memory (optimizer offload is planned only then) and fp32
    models with training.tf32 stated either way."""
    d = os.path.join(work, "inputs")
    os.makedirs(d, exist_ok=True)
    out = {}

    def put(name, doc):
        path = os.path.join(d, name + ".json")
        text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
        old = None
        if os.path.exists(path):
            with open(path) as f:
                old = f.read()
        if old != text:  # unchanged bytes keep the plans' digests valid
            with open(path + ".tmp", "w") as f:
                f.write(text)
            os.replace(path + ".tmp", path)
        out[name] = path

    def example(name):
        with open(os.path.join(EXAMPLES, name + ".json")) as f:
            return json.load(f)

    for name, gib in (("amp-het", 192), ("h100-node4", 1024)):
        c = example(name)
        c["name"] = name + "-host"
        for n in c["nodes"]:
            n["host_memory_gib"] = gib
        put(name + "-host", c)
    for tf32 in (True, False):
        m = example("gpt2-medium")
        m["name"] = "gpt2-medium-fp32-" + ("tf32" if tf32 else "notf32")
        m.setdefault("training", {})
        m["training"]["precision"] = "fp32"
        m["training"]["tf32"] = tf32
        put(m["name"], m)
    return out


def _input(name, derived):
    return derived[name] if name in derived else os.path.join(EXAMPLES, name + ".json")


# ---------------------------------------------------------------- the plans

def S(tp, dp, pp, mbs, **kw):
    s = {"tp": tp, "dp": dp, "pp": pp, "mbs": mbs}
    for k, v in kw.items():
        s[{"b": "stage_boundaries", "sp": "sequence_parallel"}.get(k, k)] = v
    return s


# Hand-written strategies (planner evaluate); layer counts: gpt2-medium
# and gpt2-345m 27 (embed, 24 blocks, final_norm, head), llama3-8b 35,
# gpt2-amp 30 (embed2h noop0 block0..23 noop1 noop2 embed2v noop3).
HAND = {
    # ZeRO 0..3 at pp = 1 and pp = 2, optimizer offload, on one H100 node
    "zero-offload": ("h100-node4-host", "gpt2-medium", ["--global-batch", "64"], [
        S(1, 4, 1, 2, zero=0), S(1, 4, 1, 2, zero=1), S(1, 4, 1, 2, zero=2),
        S(1, 4, 1, 2, zero=3),
        S(1, 4, 1, 2, zero=1, offload="optimizer"),
        S(1, 4, 1, 2, zero=2, offload="optimizer"),
        S(1, 4, 1, 2, zero=3, offload="optimizer"),
        S(1, 4, 1, 2, zero=0, offload="optimizer"),
        S(1, 2, 2, 2, zero=1, b=[0, 14, 27]), S(1, 2, 2, 2, zero=2, b=[0, 14, 27]),
        S(1, 2, 2, 2, zero=3, b=[0, 14, 27]),
        S(1, 2, 2, 2, zero=1, offload="optimizer", b=[0, 14, 27]),
        S(2, 1, 2, 1, sp=True, recompute="selective", b=[0, 13, 27]),
    ]),
    # bf16: interleaving, tp with sequence parallelism, uneven stages, GPipe
    "llama-features": ("h100-node4", "llama3-8b", ["--global-batch", "64"], [
        S(2, 1, 2, 1, vpp=2, sp=True, recompute="selective", b=[0, 17, 35]),
        S(4, 1, 1, 1, sp=True, recompute="full"),
        S(2, 2, 1, 1, sp=False, zero=1),
        S(1, 1, 4, 1, recompute="full", b=[0, 7, 17, 27, 35]),
        S(1, 1, 4, 1, b=[0, 5, 15, 24, 35]),
        S(1, 2, 2, 1, schedule="gpipe", b=[0, 17, 35]),
        S(1, 2, 2, 1, vpp=4, b=[0, 17, 35]),
        S(1, 2, 2, 1, vpp=2, b=[0, 13, 35]),
    ]),
    # fp16 on V100 + T4: uneven, vpp, idle GPUs, GPUs other than 0..n-1,
    # hosts interleaved, a stage without blocks, tp 4, GPipe
    "amp-features": ("amp-het", "gpt2-amp", [], [
        S(1, 4, 4, 1, b=[0, 8, 14, 20, 30]),
        S(2, 2, 4, 1, sp=True, b=[0, 6, 14, 22, 30]),
        S(1, 4, 4, 2, vpp=2, b=[0, 8, 14, 20, 30]),
        S(1, 2, 4, 1, ranks=list(range(8)), b=[0, 8, 14, 20, 30]),
        S(1, 1, 4, 1, ranks=[2, 3, 6, 7], b=[0, 8, 14, 20, 30]),
        S(1, 2, 2, 1, ranks=[0, 4, 1, 5], b=[0, 14, 30]),
        S(1, 4, 4, 1, b=[0, 2, 10, 20, 30]),
        S(4, 1, 4, 1, sp=True, recompute="full", b=[0, 8, 14, 20, 30]),
        S(1, 4, 4, 1, schedule="gpipe", b=[0, 8, 14, 20, 30]),
    ]),
    # fp32 with TF32 on, offload over a pipeline
    "fp32-tf32": ("amp-het-host", "gpt2-medium-fp32-tf32", ["--global-batch", "64"], [
        S(1, 4, 4, 1, zero=1, offload="optimizer", b=[0, 8, 14, 20, 27]),
        S(2, 2, 4, 1, zero=1, sp=True, b=[0, 8, 14, 20, 27]),
        S(1, 16, 1, 1, zero=2, offload="optimizer"),
        S(1, 16, 1, 2, zero=3),
    ]),
    # fp32 with TF32 off
    "fp32-notf32": ("h100-node4", "gpt2-medium-fp32-notf32", ["--global-batch", "64"], [
        S(1, 4, 1, 2),
        S(2, 1, 2, 1, vpp=2, sp=True, b=[0, 13, 27]),
        S(1, 2, 2, 2, zero=1, recompute="selective", b=[0, 13, 27]),
    ]),
    # 16 T4 on 4 hosts, fp16
    "t4": ("amp-homogeneous", "gpt2-345m", [], [
        S(4, 4, 1, 1, sp=True, recompute="selective"),
        S(1, 4, 4, 1, vpp=2, b=[0, 7, 13, 19, 27]),
        S(2, 8, 1, 2, zero=1),
    ]),
    # communication overlap: gradient reduction, parameter gather, TP
    # with GEMMs (sequence parallelism, one NVLink node), P2P on and off
    # with interleaving
    "overlap": ("h100-node4", "llama3-8b", ["--global-batch", "64"], [
        S(1, 4, 1, 1, zero=1, overlap_grad=True, overlap_param=True),
        S(1, 4, 1, 1, zero=0, overlap_grad=True),
        S(1, 4, 1, 1, zero=2, overlap_grad=True, overlap_param=True),
        S(4, 1, 1, 1, sp=True, overlap_tp=True),
        S(2, 2, 1, 1, sp=True, zero=1, overlap_grad=True, overlap_param=True,
          overlap_tp=True),
        S(1, 1, 4, 1, vpp=2, overlap_p2p=False, b=[0, 9, 17, 25, 35]),
        S(1, 2, 2, 1, vpp=2, overlap_p2p=True, overlap_grad=True,
          b=[0, 17, 35]),
        S(2, 1, 2, 1, overlap_p2p=False, b=[0, 17, 35]),
    ]),
    # the sample's: DeepSpeed ZeRO 2 and 3 at pp = 1, Megatron-FSDP,
    # interleaving, optimizer offload at pp = 1 and pp > 1, interleaving
    # of 64 micro-batches over pp 3 (core_v0.19.0's micro-batch groups),
    # DeepSpeed's overlap_comm, Megatron-LM's gradient, weight and TP
    # overlap
    "sample": ("h100-node4-host", "gpt2-medium", ["--global-batch", "64"], [
        S(1, 4, 1, 2, zero=2),
        S(1, 4, 1, 2, zero=3, offload="optimizer"),
        S(2, 1, 2, 1, vpp=2, sp=True, recompute="selective", b=[0, 13, 27]),
        S(1, 2, 2, 2, zero=1, offload="optimizer", b=[0, 14, 27]),
        S(1, 1, 3, 1, vpp=2, ranks=[0, 1, 2], b=[0, 9, 17, 27]),
        S(1, 4, 1, 2, zero=1, overlap_grad=True),
        S(2, 2, 1, 2, sp=True, zero=1, overlap_grad=True, overlap_param=True,
          overlap_tp=True),
    ]),
}

# Searched plans: (cluster, model, options)
SEARCHED = [
    ("amp-het", "gpt2-amp", []),
    ("amp-het", "gpt2-medium", ["--global-batch", "64"]),
    ("amp-het", "gpt-neo-2.7b", ["--global-batch", "64"]),
    ("amp-homogeneous", "gpt2-345m", []),
    ("h100-node4", "llama3-8b", ["--global-batch", "64"]),
    ("h100-node4", "opt-1.3b", ["--global-batch", "64"]),
    ("h100-node4-host", "llama2-7b", ["--global-batch", "64"]),
    ("amp-het-host", "gpt2-medium", ["--global-batch", "64"]),
    ("mixed-generations", "llama2-13b", ["--global-batch", "64"]),
    ("mixed-generations", "llama2-70b", ["--global-batch", "64"]),
    ("mixed-generations", "gpt3-xl", ["--global-batch", "64", "--precision", "fp32"]),
    ("h100-node4", "gpt2-medium-fp32-notf32", ["--global-batch", "64"]),
]
# planned for each launcher release (plan --launcher T@V)
FOR_LAUNCHER = [
    ("amp-het", "gpt2-amp", []),
    ("h100-node4", "llama3-8b", ["--global-batch", "64"]),
    ("amp-het-host", "gpt2-medium", ["--global-batch", "64"]),
    ("mixed-generations", "llama2-13b", ["--global-batch", "64"]),
]


def plan_specs(full):
    """[{id, cluster, model, args, strategies or None}] in a fixed order."""
    specs = []
    if not full:
        c, m, a, st = HAND["sample"]
        specs.append({"id": "hand-sample", "cluster": c, "model": m, "args": a,
                      "strategies": st})
        specs.append({"id": "launcher-megatron@core_v0.19.0-h100-node4-llama3-8b",
                      "cluster": "h100-node4", "model": "llama3-8b",
                      "args": ["--global-batch", "64", "--top-k", "1",
                               "--launcher", "megatron@core_v0.19.0"],
                      "strategies": None})
        specs.append({"id": "plan-amp-het-gpt2-amp", "cluster": "amp-het",
                      "model": "gpt2-amp", "args": ["--top-k", "1"],
                      "strategies": None})
        return specs
    for c, m, a in SEARCHED:
        specs.append({"id": "plan-%s-%s" % (c, m), "cluster": c, "model": m,
                      "args": a + ["--top-k", "3"], "strategies": None})
    for launcher in LAUNCHERS:
        for c, m, a in FOR_LAUNCHER:
            specs.append({"id": "launcher-%s-%s-%s" % (launcher, c, m),
                          "cluster": c, "model": m,
                          "args": a + ["--top-k", "4", "--launcher", launcher],
                          "strategies": None})
    for name in sorted(HAND):
        if name == "sample":
            continue
        c, m, a, st = HAND[name]
        specs.append({"id": "hand-" + name, "cluster": c, "model": m, "args": a,
                      "strategies": st})
    return specs


# ---------------------------------------------------------------- expect

def _family(name):
    f = name.lower().replace("-", "").replace("_", "")
    return "llama" if f.startswith("llama") else f


def model_facts(model):
    """(kinds of the model's layers after expansion, model dict) from the
    model file, as docs/inputs.md describes them."""
    if "transformer" in model:
        t = model["transformer"]
        fam = _family(t.get("family", "gpt2"))
        blocks = t["layers"]
        kinds = ["embedding"] + ["transformer"] * blocks + ["norm", "head"]
        mlp = t.get("mlp", "swiglu" if fam == "llama" else
                    "relu" if fam == "opt" else "gelu")
        ffn = t.get("ffn", 0)
        if not ffn:
            h = t["hidden"]
            ffn = -(-8 * h // (3 * 256)) * 256 if mlp == "swiglu" else 4 * h
        facts = {"blocks": blocks, "hidden": t["hidden"], "heads": t["heads"],
                 "seq": t["seq"], "kv_heads": t.get("kv_heads", t["heads"]),
                 "ffn": ffn, "vocab": t["vocab"]}
        return kinds, facts
    kinds = [str(layer["kind"]).lower() for layer in model["layers"]]
    kinds = [{"embed2h": "embedding", "embed2v": "head"}.get(k, k) for k in kinds]
    facts = {"blocks": kinds.count("transformer")}
    for k in ("hidden", "heads", "seq", "kv_heads", "ffn", "vocab"):
        v = model.get("shape", {}).get(k, 0)
        if v:
            facts[k] = v
    return kinds, facts


def expect_of(plan, s, model):
    """What the upstream code must derive for strategy `s` of `plan`
    (tests/upstream/README: the checkers' interface)."""
    kinds, facts = model_facts(model)
    b = s["stage_boundaries"]
    if len(kinds) != plan["model"]["layers"] or b[-1] != len(kinds):
        raise ValueError("the model file has %d layers, the plan %d"
                         % (len(kinds), plan["model"]["layers"]))
    per_stage = [kinds[b[j]:b[j + 1]].count("transformer") for j in range(s["pp"])]
    for st in s["stages"]:  # the names the plan records agree with the split
        if st["layers"] != [b[st["index"]], b[st["index"] + 1]]:
            raise ValueError("stage %d: layers %s, boundaries %s"
                             % (st["index"], st["layers"], b))
    vpp = s.get("vpp", 1) or 1
    chunks = None
    if vpp > 1 and all(n % vpp == 0 for n in per_stage):
        chunks = [[n // vpp] * vpp for n in per_stage]
    precision = plan["settings"]["precision"]
    tf32 = None
    if precision == "fp32":
        p = (plan["settings"].get("cost_params") or {}).get("tf32", -1)
        stated = model.get("training", {}).get("tf32")
        tf32 = bool(p) if p is not None and p >= 0 else stated is not False
    ranks = sorted(s["ranks"], key=lambda r: r["rank"])
    return {
        "world_size": s["tp"] * s["dp"] * s["pp"],
        "tp": s["tp"], "pp": s["pp"], "dp": s["dp"], "vpp": vpp,
        "mbs": s["mbs"], "gbs": plan["settings"]["global_batch"],
        "micro_batches": s["micro_batches"],
        "blocks_per_stage": per_stage,
        "blocks_per_chunk": chunks,
        "layer_bounds": list(b), "nlayers": len(kinds),
        "sp": bool(s.get("sequence_parallel", False)),
        "recompute": s.get("recompute", "none"),
        "zero": s.get("zero", 0),
        "offload": s.get("offload", "none"),
        "precision": precision, "tf32": tf32,
        # communication overlap: what the launcher must run (Megatron-LM
        # overlaps P2P with interleaving only; DeepSpeed's overlap_comm
        # with ZeRO >= 1 at pp = 1)
        "overlap_grad": bool(s.get("overlap_grad")) and s["dp"] > 1,
        "overlap_param": bool(s.get("overlap_param")),
        "overlap_tp": bool(s.get("overlap_tp")),
        "overlap_p2p": (bool(s.get("overlap_p2p", True))
                        if vpp > 1 and s["pp"] > 1 else None),
        "overlap_comm": (True if s.get("overlap_grad") and s["dp"] > 1 and
                         s.get("zero", 0) >= 1 and s["pp"] == 1 else None),
        "ranks": [{"rank": r["rank"], "host": r["node"], "gpu": r["gpu"]} for r in ranks],
        "model": facts,
    }


# ---------------------------------------------------------------- tools

def run(cmd, timeout, cwd=None):
    """(exit code or None on timeout, stdout, stderr).  The command runs in
    a session of its own, so a timeout ends its children too."""
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, cwd=cwd, env=env, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
        return p.returncode, out, err
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        out, err = p.communicate()
        return None, out, err + "\ntimed out after %d s" % timeout


_PROBE = r'''
import importlib.metadata, importlib.util, json, sys
sys.path.append(%r)
out = {"executable": sys.executable, "torch": None, "pydantic": None}
if importlib.util.find_spec("torch"):
    out["torch"] = importlib.metadata.version("torch")
try:
    out["pydantic"] = importlib.metadata.version("pydantic")
except importlib.metadata.PackageNotFoundError:
    pass
print(json.dumps(out))
''' % common.DIST_PACKAGES


def find_python(given):
    """(interpreter with torch, has pydantic 2, what was tried)."""
    cands = [given] if given else [shutil.which("python3"), "/usr/bin/python3"]
    tried, with_torch = [], None
    for c in cands:
        if not c or not os.path.exists(c):
            continue
        rc, out, err = run([c, "-c", _PROBE], 120)
        try:
            info = json.loads(out.strip().splitlines()[-1])
        except (ValueError, IndexError):
            tried.append("%s: %s" % (c, (err.strip().splitlines() or ["no answer"])[-1]))
            continue
        if not info["torch"]:
            tried.append("%s: no torch" % c)
            continue
        pyd2 = bool(info["pydantic"]) and int(info["pydantic"].split(".")[0]) >= 2
        if pyd2:
            return info["executable"], True, tried
        tried.append("%s: torch %s, pydantic %s" % (c, info["torch"], info["pydantic"]))
        if with_torch is None:
            with_torch = info["executable"]
    return with_torch, False, tried


def _sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def extract(tarball, dest_root):
    """Extract `tarball` (top folder NAME/) to dest_root/NAME once; reused
    while the tarball's SHA-256 matches the stamp written after the last
    extraction.  Returns the folder."""
    name = os.path.basename(tarball)[:-len(".tar.gz")]
    dest = os.path.join(dest_root, name)
    stamp = os.path.join(dest, ".hetplan-extracted")
    digest = _sha256(tarball)
    if os.path.exists(stamp):
        with open(stamp) as f:
            if f.read().strip() == digest:
                return dest
    tmp = os.path.join(dest_root, ".%s.%d" % (name, os.getpid()))
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    with tarfile.open(tarball) as t:
        for m in t.getmembers():
            parts = m.name.split("/")
            ok = not m.name.startswith("/") and ".." not in parts and parts[0] == name
            if m.issym():  # links inside the tree only (deepspeed/accelerator)
                to = os.path.normpath(os.path.join(os.path.dirname(m.name), m.linkname))
                ok = ok and not m.linkname.startswith("/") and to.split("/")[0] == name
            elif not (m.isfile() or m.isdir()):
                ok = False
            if not ok:
                raise ValueError("'%s': unexpected member '%s'" % (tarball, m.name))
        t.extractall(tmp)
    with open(os.path.join(tmp, name, ".hetplan-extracted"), "w") as f:
        f.write(digest + "\n")
    fresh = False
    if os.path.exists(stamp):  # another sweep may have put it there meanwhile
        with open(stamp) as f:
            fresh = f.read().strip() == digest
    if not fresh:
        shutil.rmtree(dest, ignore_errors=True)
        os.rename(os.path.join(tmp, name), dest)
    shutil.rmtree(tmp, ignore_errors=True)
    return dest


# ---------------------------------------------------------------- the sweep

class Sweep:
    def __init__(self, a):
        self.a = a
        self.failures = []   # driver failures, one line each
        self.exports = []    # {id, plan, strategy, target, release, rc, reason}

    def fail(self, msg):
        self.failures.append(msg)

    def make_plans(self, specs, derived, root):
        """Run the planner for each spec: [(id, plan path, plan)] in order."""
        os.makedirs(root, exist_ok=True)

        def one(sp):
            out = os.path.join(root, sp["id"] + ".json")
            cmd = [self.a.planner]
            if sp["strategies"] is not None:
                sfile = os.path.join(root, sp["id"] + ".strategies.json")
                with open(sfile, "w") as f:
                    json.dump({"strategies": sp["strategies"]}, f, indent=1)
                cmd += ["evaluate", "--strategies", sfile]
            cmd += ["--cluster", _input(sp["cluster"], derived),
                    "--model", _input(sp["model"], derived)] + sp["args"]
            cmd += ["--output", out, "--quiet"]
            rc, _, err = run(cmd, 600)
            if rc != 0:
                return "%s: planner exited %s: %s" % (sp["id"], rc, _first(err))
            with open(out) as f:
                plan = json.load(f)
            if not plan["strategies"]:
                return "%s: the plan has no strategy" % sp["id"]
            return (sp["id"], out, plan)

        plans = []
        with concurrent.futures.ThreadPoolExecutor(self.a.jobs) as ex:
            for r in ex.map(one, specs):
                if isinstance(r, str):
                    self.fail(r)
                else:
                    plans.append(r)
        return plans

    def export_all(self, plans, root):
        jobs = []
        for pid, path, plan in plans:
            for k in range(1, len(plan["strategies"]) + 1):
                for target, release, *_ in TARGETS:
                    d = os.path.join(root, pid, "s%d" % k,
                                     target + ("" if release == "-" else "@" + release))
                    jobs.append((pid, path, k, target, release, d))

        def one(job):
            pid, path, k, target, release, d = job
            shutil.rmtree(d, ignore_errors=True)
            os.makedirs(os.path.dirname(d), exist_ok=True)
            cmd = [self.a.planner, "export", "--plan", path, "--strategy", str(k),
                   "--to", target, "--output", d, "--quiet"]
            if release != "-":
                cmd += ["--target-version", release]
            rc, _, err = run(cmd, 120)
            return {"id": "%s/s%d/%s" % (pid, k, target + ("" if release == "-" else "@" + release)),
                    "plan": path, "strategy": k, "target": target, "release": release,
                    "dir": d, "rc": rc, "reason": _first(err)}

        with concurrent.futures.ThreadPoolExecutor(self.a.jobs) as ex:
            self.exports = list(ex.map(one, jobs))
        for e in self.exports:
            if e["rc"] not in (0, 3, 6):
                self.fail("%s: export exited %s: %s" % (e["id"], e["rc"], e["reason"]))

    def cases_for(self, plans_by_path, target, release, checker_release):
        """The checker's cases: every export of target/release that exited 0."""
        cases = []
        for e in self.exports:
            if e["rc"] != 0 or e["target"] != target or e["release"] != release:
                continue
            plan = plans_by_path[e["plan"]]
            s = plan["strategies"][e["strategy"] - 1]
            try:
                mpath = _input_path(plan, "model", e["plan"])
                with open(mpath) as f:
                    model = json.load(f)
                expect = expect_of(plan, s, model)
            except (OSError, ValueError, KeyError) as err:
                self.fail("%s: cannot compute what to expect: %s" % (e["id"], err))
                continue
            cases.append({"id": e["id"], "dir": os.path.abspath(e["dir"]),
                          "target": target, "release": checker_release,
                          "export_release": release,
                          "plan": os.path.abspath(e["plan"]),
                          "strategy": e["strategy"], "expect": expect})
        return cases


def _first(text):
    lines = [x for x in text.strip().splitlines() if x.strip()]
    return lines[0] if lines else ""


def _input_path(plan, key, plan_path):
    """The input file a plan names, looked for as docs/plan-format.md says."""
    i = plan["inputs"][key]
    cands = [i.get("absolute_path"), i.get("path"),
             os.path.join(os.path.dirname(plan_path), os.path.basename(i.get("path", "")))]
    for c in cands:
        if c and os.path.isfile(c) and _sha256(c) == i.get("sha256"):
            return c
    for c in cands:
        if c and os.path.isfile(c):
            return c
    raise OSError("'%s': input %s not found" % (plan_path, key))


def check(a, py, checker, release, source, cases, cases_path):
    """Run one checker on its cases: (exit code, {id: verdict}, errors, stdout)."""
    with open(cases_path, "w") as f:
        json.dump({"cases": cases}, f, indent=1)
    cmd = [py, os.path.join(a.checkers, checker), "--release", release,
           "--source", source, cases_path]
    rc, out, err = run(cmd, 120 + 60 * len(cases))
    verdicts, errors = {}, []
    for line in out.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            v = json.loads(line)
        except ValueError:
            errors.append("unreadable verdict: " + line[:200])
            continue
        if v.get("id") not in {c["id"] for c in cases} or v.get("status") not in (
                "accepted", "rejected"):
            errors.append("unexpected verdict: " + line[:200])
            continue
        verdicts[v["id"]] = v
    if rc not in (0, common.SKIP):
        tail = "; ".join((err.strip().splitlines() or ["no stderr"])[-3:])
        errors.append("%s exited %s: %s" % (checker, rc, tail))
    elif rc == 0:
        for c in cases:
            if c["id"] not in verdicts:
                errors.append("%s: no verdict for %s" % (checker, c["id"]))
    return rc, verdicts, errors, out


def _targets_to_check(a, sw, src, work, pydantic2, tried):
    """({(target, release): source folder}, {(target, release): why skipped})."""
    sources, skipped = {}, {}
    for target, release, checker, _, tar in TARGETS:
        key = (target, release)
        if not os.path.isfile(os.path.join(a.checkers, checker)):
            skipped[key] = "%s is absent" % checker
        elif target == "deepspeed" and not pydantic2:
            skipped[key] = "no pydantic 2 beside torch (%s)" % "; ".join(tried)
        elif tar:
            path = os.path.join(src, tar + ".tar.gz")
            if not os.path.isfile(path):
                skipped[key] = "'%s' is absent" % path
                continue
            try:
                sources[key] = extract(path, os.path.join(work, "upstream-src"))
            except (OSError, ValueError, tarfile.TarError) as e:
                sw.fail("cannot extract '%s': %s" % (path, e))
                skipped[key] = "not extracted"
        else:
            sources[key] = "-"
    return sources, skipped


def _run_checkers(a, sw, py, plans, sources, skipped, run_dir):
    """Each target/release's exports sorted, its cases checked: {key: result}.
    One checker run per checker and upstream release (torchrun's 1.13 and
    2.x exports go to one run of torch 1.13's parser)."""
    by_path = {p: plan for _, p, plan in plans}
    results, runs = {}, {}
    for target, release, checker, crel, _ in TARGETS:
        key = (target, release)
        exp = [e for e in sw.exports if (e["target"], e["release"]) == key]
        results[key] = {"exports": len(exp),
                        "refused": [e for e in exp if e["rc"] == 6],
                        "refused_input": [e for e in exp if e["rc"] == 3],
                        "accepted": [], "rejected": [], "skipped": skipped.get(key)}
        if key in skipped:
            continue
        cases = sw.cases_for(by_path, target, release, crel)
        if cases:
            group = runs.setdefault((checker, crel, sources[key]), {"keys": [], "cases": []})
            group["keys"].append(key)
            group["cases"] += cases

    def go(item):
        (checker, crel, source), group = item
        cpath = os.path.join(run_dir, "cases-%s%s.json" % (
            checker[len("check_"):-len(".py")], "" if crel == "-" else "-" + crel))
        return group, check(a, py, checker, crel, source, group["cases"], cpath)

    owner = {}  # case id -> (target, release)
    for e in sw.exports:
        owner[e["id"]] = (e["target"], e["release"])
    with concurrent.futures.ThreadPoolExecutor(a.jobs) as ex:
        for group, (rc, verdicts, errors, out) in ex.map(go, runs.items()):
            names = " and ".join(label(*k) for k in group["keys"])
            for e in errors:
                sw.fail("%s: %s" % (names, e))
            if rc == common.SKIP:
                why = [x for x in out.splitlines() if x.startswith("skipped")]
                for k in group["keys"]:
                    results[k]["skipped"] = (why[-1][len("skipped:"):].strip() if why
                                             else "the checker skipped")
                continue
            for v in sorted(verdicts.values(), key=lambda v: v["id"]):
                r = results[owner[v["id"]]]
                r["accepted" if v["status"] == "accepted" else "rejected"].append(v)
    return results


def _print_table(results):
    head = ("target / release", "exports", "accepted", "refused by hetplan",
            "refused as input", "rejected upstream")
    rows = []
    for target, release, *_ in TARGETS:
        r = results[(target, release)]
        rows.append((label(target, release), str(r["exports"]),
                     "skipped" if r["skipped"] else str(len(r["accepted"])),
                     str(len(r["refused"])), str(len(r["refused_input"])),
                     "-" if r["skipped"] else str(len(r["rejected"]))))
    w = [max(len(x[i]) for x in rows + [head]) for i in range(len(head))]
    for row in [head] + rows:
        print("  ".join(c.ljust(w[i]) if i == 0 else c.rjust(w[i])
                        for i, c in enumerate(row)))
    for target, release, *_ in TARGETS:
        r = results[(target, release)]
        name = label(target, release)
        if r["skipped"]:
            print("%s: skipped: %s" % (name, r["skipped"]))
        for v in r["rejected"]:
            print("%s: REJECTED %s: %s" % (name, v["id"], v.get("why", "")))
        kinds = {}  # one line per kind of reason, with its first export
        for e in r["refused"] + r["refused_input"]:
            why = e["reason"].replace("planner: cannot express: ", "")
            kind = re.sub(r"\d+", "N", re.sub(r"\([^)]*\)|'[\w.-]+'", "_", why))[:90]
            kinds.setdefault((e["rc"], kind), []).append(e)
        for (rc, _), es in sorted(kinds.items()):
            why = es[0]["reason"].replace("planner: cannot express: ", "")
            print("%s: %s %d, e.g. %s: %s" % (
                name, "refused" if rc == 6 else "refused as input (exit 3)", len(es),
                es[0]["id"], why if len(why) <= 160 else why[:157] + "..."))


def _write_json(path, doc, results):
    doc["targets"] = [
        {"target": t, "release": rl, "checked_as": label(t, rl),
         "exports": results[(t, rl)]["exports"],
         "skipped": results[(t, rl)]["skipped"],
         "accepted": results[(t, rl)]["accepted"],
         "rejected": results[(t, rl)]["rejected"],
         "refused": [{"id": e["id"], "reason": e["reason"]}
                     for e in results[(t, rl)]["refused"]],
         "refused_input": [{"id": e["id"], "reason": e["reason"]}
                           for e in results[(t, rl)]["refused_input"]]}
        for t, rl, *_ in TARGETS]
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=1)
    os.replace(path + ".tmp", path)


def main(argv=None):
    ap = argparse.ArgumentParser(
        description="export plans over the shipped examples to every launcher "
                    "target and release and check each export with the "
                    "launcher's own code")
    ap.add_argument("--planner", required=True, help="the built planner")
    ap.add_argument("--shared", default=os.path.join(os.path.dirname(SOURCE_ROOT), "shared"),
                    help="the shared folder holding upstream-src/ (default: ../shared)")
    ap.add_argument("--work", default=os.path.join(os.getcwd(), "upstream-oracle"),
                    help="scratch folder: sources, plans, exports, cases")
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--sample", action="store_true",
                   help="a small fixed subset (the default)")
    g.add_argument("--full", action="store_true", help="the whole sweep")
    ap.add_argument("--python", help="interpreter for the checkers (default: "
                    "python3 on PATH, else /usr/bin/python3; it must import torch)")
    ap.add_argument("--json", help="also write the counts and verdicts to this file")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="exports and checkers run at once (default: up to 2)")
    ap.add_argument("--checkers", default=HERE, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    a.jobs = max(1, a.jobs)
    t0 = time.monotonic()
    mode = "full" if a.full else "sample"
    if not os.access(a.planner, os.X_OK):
        print("sweep.py: '%s': no planner there" % a.planner, file=sys.stderr)
        return 2

    src = os.path.join(a.shared, "upstream-src")
    if not os.path.isdir(src):
        common.skip("'%s' is absent: no upstream sources to check the exports with" % src)
    py, pydantic2, tried = find_python(a.python)
    if not py:
        common.skip("no Python that imports torch (%s); scripts/install-deps.sh "
                    "installs python3-torch" % ("; ".join(tried) or "none found"))
    print("checkers run by %s%s" % (py, "" if pydantic2 else
                                    " (no pydantic 2: DeepSpeed is not checked)"))
    work = os.path.abspath(a.work)
    os.makedirs(work, exist_ok=True)
    sw = Sweep(a)
    sources, skipped = _targets_to_check(a, sw, src, work, pydantic2, tried)
    if len(skipped) == len(TARGETS) and not sw.failures:
        common.skip("; ".join("%s: %s" % (label(*k), v) for k, v in skipped.items()))

    run_dir = os.path.join(work, mode)
    shutil.rmtree(run_dir, ignore_errors=True)
    os.makedirs(run_dir)
    plans = sw.make_plans(plan_specs(a.full), _derived_inputs(work),
                          os.path.join(run_dir, "plans"))
    t_plans = time.monotonic()
    sw.export_all(plans, os.path.join(run_dir, "exports"))
    t_exports = time.monotonic()
    results = _run_checkers(a, sw, py, plans, sources, skipped, run_dir)
    t_checks = time.monotonic()

    print("\n%d plans (%s), %d strategies, %d exports"
          % (len(plans), mode, sum(len(p["strategies"]) for _, _, p in plans),
             len(sw.exports)))
    _print_table(results)
    for f in sw.failures:
        print("DRIVER FAILURE: " + f)
    n = {k: sum(len(r[k]) for r in results.values())
         for k in ("accepted", "refused", "refused_input", "rejected")}
    n_skip = [label(*k) for k, r in results.items() if r["skipped"]]
    print("times: plans %.1f s, exports %.1f s, checks %.1f s, total %.1f s"
          % (t_plans - t0, t_exports - t_plans, t_checks - t_exports, t_checks - t0))
    line = ("exports: %d accepted, %d refused by hetplan, %d rejected by upstream"
            % (n["accepted"], n["refused"], n["rejected"]))
    if n["refused_input"]:
        line += ", %d refused as input" % n["refused_input"]
    if n_skip:
        line += "; not checked (skipped): " + ", ".join(n_skip)
    if sw.failures:
        line += "; %d driver failures" % len(sw.failures)
    if a.json:
        _write_json(a.json, dict(mode=mode, plans=len(plans), exports=len(sw.exports),
                                 driver_failures=sw.failures, python=py,
                                 elapsed_s=round(t_checks - t0, 1),
                                 counts=n, summary=line), results)
    if len(n_skip) == len(results) and not sw.failures:
        common.skip(line)
    print(line)
    return 1 if (n["rejected"] or sw.failures) else 0


if __name__ == "__main__":
    sys.exit(main())
