#!/usr/bin/env python3
"""torchrun's own code on the torchrun calls of hetplan's exports
(torchrun.sh of the torchrun target, megatron.sh of the megatron target).

    python3 check_torchrun.py --release 1.13 --source IGNORED CASES.json

For each case, every agent's arm of the script runs under /bin/sh
(NODE_RANK=0, 1, ... until the script refuses the next one) with a
recording `torchrun`; each recorded argv goes through PyTorch's
torch.distributed.run: get_args_parser().parse_args and config_from_args
(nnodes, nproc_per_node, the static rendezvous's endpoint and node rank).
The agents must agree on nnodes, master address and port, name node ranks
0..n-1 once each, and the master must be the host of rank 0.  Global ranks
come from torchelastic's own SimpleElasticAgent._assign_worker_ranks, run
for all agents at once over one in-memory store; local rank i of an agent
runs on the i-th GPU of its CUDA_VISIBLE_DEVICES, on the host the script
names for that arm.  Every rank must get the plan's host and GPU.
"""

import argparse
import json
import os
import re
import sys
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402

SCRIPTS = {"torchrun": "torchrun.sh", "megatron": "megatron.sh"}


class Rejected(Exception):
    pass


def differ(field, got, want):
    raise Rejected("%s: derived %s, expected %s" % (field, json.dumps(got), json.dumps(want)))


def agent_ranks(specs):
    """{node_rank: [global rank of local rank i]} by torchelastic's own
    rank assignment, every agent in its own thread over one store."""
    import torch.distributed as dist
    from torch.distributed.elastic.agent.server.api import SimpleElasticAgent, WorkerSpec

    class Agent(SimpleElasticAgent):
        """Only the rank assignment of SimpleElasticAgent is used."""

        def _stop_workers(self, worker_group):
            pass

        def _start_workers(self, worker_group):
            return {}

        def _monitor_workers(self, worker_group):
            return None

        def _shutdown(self, death_sig=None, is_restart=False):
            pass

    store = dist.HashStore()
    n = len(specs)
    out, errors = {}, []

    def run(node, nproc, cfg):
        try:
            spec = WorkerSpec(role=cfg.role, local_world_size=nproc, rdzv_handler=None,
                              entrypoint="train.py", args=())
            workers = Agent(spec)._assign_worker_ranks(store, node, n, spec)
            out[node] = [w.global_rank for w in sorted(workers, key=lambda w: w.local_rank)]
        except BaseException as e:  # noqa: B902
            errors.append("%s: %s" % (type(e).__name__, e))

    threads = [threading.Thread(target=run, args=(node, nproc, cfg))
               for node, (nproc, cfg) in specs.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    if errors or len(out) != n:
        raise Rejected("torchelastic rank assignment: %s" % ("; ".join(errors) or "timed out"))
    return out


def check_case(case):
    from torch.distributed import run as trun

    e, d = case["expect"], {}
    script = os.path.join(case["dir"], SCRIPTS[case["target"]])
    with open(script) as f:
        text = f.read()
    env = {k: v for k, v in os.environ.items() if k not in ("NODE_RANK", "CUDA_VISIBLE_DEVICES")}
    agents = []
    for node in range(e["world_size"] + 1):
        env["NODE_RANK"] = str(node)
        rc, err, calls = common.run_script(script, ["train.py", "--user-arg"], env=env,
                                           commands=("torchrun",))
        if rc != 0:
            if node == 0:
                raise Rejected("%s with NODE_RANK=0: exit %d: %s" % (os.path.basename(script),
                                                                   rc, err.strip()[-300:]))
            break
        if len(calls) != 1:
            differ("torchrun calls of NODE_RANK=%d" % node, len(calls), 1)
        m = re.search(r"\n%d\)\s+# host '([^']*)'" % node, text)
        if not m:
            raise Rejected("the arm of NODE_RANK=%d names no host" % node)
        agents.append((m.group(1), calls[0]))
    d["agents"] = len(agents)
    specs, seen, hosts, masters = {}, {}, {}, set()
    for host, call in agents:
        args = trun.get_args_parser().parse_args(call["argv"])
        cfg, cmd, cmd_args = trun.config_from_args(args)
        if cfg.min_nodes != cfg.max_nodes:
            differ("nnodes", [cfg.min_nodes, cfg.max_nodes], len(agents))
        if cfg.max_nodes != len(agents):
            differ("nnodes", cfg.max_nodes, len(agents))
        node = int(cfg.rdzv_configs.get("rank", args.node_rank))
        if node in seen:
            differ("node_rank %d" % node, "twice", "once")
        if "--user-arg" not in cmd_args:
            differ("training arguments", cmd_args[-3:], "... --user-arg")
        masters.add((args.master_addr, args.master_port, cfg.rdzv_endpoint, cfg.rdzv_backend))
        visible = call["env"].get("CUDA_VISIBLE_DEVICES")
        if visible is None:
            differ("CUDA_VISIBLE_DEVICES of node rank %d" % node, None, "set")
        gpus = [int(g) for g in visible.split(",")]
        if len(gpus) != cfg.nproc_per_node:
            differ("CUDA_VISIBLE_DEVICES of node rank %d" % node, gpus,
                   "%d GPUs" % cfg.nproc_per_node)
        seen[node] = gpus
        hosts[node] = host
        specs[node] = (cfg.nproc_per_node, cfg)
    if sorted(seen) != list(range(len(agents))):
        differ("node ranks", sorted(seen), list(range(len(agents))))
    if len(masters) != 1:
        differ("master address and port", sorted(map(list, masters)), "one")
    master = masters.pop()
    d["master"] = [master[0], master[1]]
    d["rdzv"] = [master[3], master[2]]
    ranks = {}
    for node, glob in agent_ranks(specs).items():
        for local, r in enumerate(glob):
            if r in ranks:
                differ("rank %d" % r, "twice", "once")
            ranks[r] = {"rank": r, "host": hosts[node], "gpu": seen[node][local]}
    got = [ranks[r] for r in sorted(ranks)]
    d["world_size"] = len(got)
    want = [{"rank": x["rank"], "host": x["host"], "gpu": x["gpu"]} for x in e["ranks"]]
    if got != want:
        bad = [(a, b) for a, b in zip(got, want) if a != b][:3]
        differ("ranks", [a for a, _ in bad] or got[-3:], [b for _, b in bad] or want[-3:])
    if master[0] != want[0]["host"]:
        differ("master_addr", master[0], want[0]["host"])
    d["ranks_ok"] = True
    return d


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", required=True)
    ap.add_argument("--source", default="-")
    ap.add_argument("cases")
    a = ap.parse_args()
    with open(a.cases) as f:
        cases = json.load(f)["cases"]
    common.use_debian_torch()
    try:
        import torch
        from torch.distributed import run  # noqa: F401
        from torch.distributed.elastic.agent.server import api  # noqa: F401
    except ImportError as ex:
        common.skip("torchrun needs %s" % ex.name)
    if not torch.__version__.startswith(a.release.split(".x")[0]):
        print("note: torch %s checks the %s release" % (torch.__version__, a.release),
              file=sys.stderr)
    harness = 0
    for case in cases:
        t0 = time.time()
        try:
            d, why = check_case(case), ""
        except Rejected as ex:
            d, why = {}, str(ex)
        except SystemExit as ex:  # argparse refusing an argv
            d, why = {}, "torch.distributed.run's parser exited %s" % ex.code
        except Exception as ex:  # noqa: B902
            tb = traceback.extract_tb(ex.__traceback__)
            mine = all(os.path.dirname(os.path.abspath(f.filename)) == HERE for f in tb[-1:])
            d, why = {}, "%s%s: %s" % ("harness error: " if mine else "", type(ex).__name__, ex)
            harness += mine
        print(json.dumps({"id": case["id"], "status": "rejected" if why else "accepted",
                          "why": why, "derived": d, "seconds": round(time.time() - t0, 2)}))
        sys.stdout.flush()
    if harness:
        print("%d cases hit an error of the checks themselves" % harness, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
