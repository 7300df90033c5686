#!/usr/bin/env python3
"""hetplan's `hostfile` export against the plan's ranks.

    python3 check_hostfile.py --release - --source DIR|- CASES.json

The file says "HOST slots=N" for mpirun --hostfile (--map-by slot); a
file whose header offers it as a DeepSpeed hostfile is also read as
DeepSpeed's launcher reads it.  It is read by DeepSpeed's own fetch_hostfile when DIR holds a
DeepSpeed source (else by the format's rule: one "HOST slots=N" per line,
'#' comments).  mpirun fills each host's slots with consecutive ranks,
hosts in file order, local rank i on GPU i; DeepSpeed's launcher, given the
same file, numbers ranks host by host in file order and gives rank r the
local rank r % n (n: its host's slots; deepspeed/launcher/launch.py), that
is GPU r % n.  mpirun's reading, and DeepSpeed's where the file's comment
offers it to DeepSpeed, must give every rank the plan's host and GPU.
"""

import argparse
import json
import os
import re
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import common  # noqa: E402
import placeholders  # noqa: E402


def read_plain(path):
    """[(host, slots)] in file order by the format's rule."""
    out = []
    with open(path) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = re.match(r"^(\S+)\s+slots=(\d+)$", line)
            if not m:
                raise ValueError("not 'HOST slots=N': %r" % line)
            out.append((m.group(1), int(m.group(2))))
    return out


def deepspeed_reader(source):
    """DeepSpeed's fetch_hostfile, or None when it cannot be imported."""
    if not source or not os.path.isdir(os.path.join(source, "deepspeed")):
        return None
    common.use_debian_torch()
    sys.path.insert(0, os.path.abspath(source))
    saved, cwd = os.dup(1), os.getcwd()
    os.dup2(2, 1)  # DeepSpeed's accelerator detection prints on stdout
    os.chdir(source)
    try:
        placeholders.install_deepspeed("-")
        from deepspeed.launcher.runner import fetch_hostfile
    except Exception as ex:  # noqa: B902
        print("note: DeepSpeed's fetch_hostfile not importable (%s: %s); the format's "
              "rule reads the files" % (type(ex).__name__, ex), file=sys.stderr)
        return None
    finally:
        sys.stdout.flush()
        os.chdir(cwd)
        os.dup2(saved, 1)
        os.close(saved)
    return lambda path: list(fetch_hostfile(path).items())


def check_case(case, reader):
    e = case["expect"]
    path = os.path.join(case["dir"], "hostfile")
    hosts = reader(path) if reader else read_plain(path)
    d = {"hosts": [[h, n] for h, n in hosts]}
    want = [{"rank": x["rank"], "host": x["host"], "gpu": x["gpu"]} for x in e["ranks"]]
    mpi, ds, r = [], [], 0
    for host, slots in hosts:
        for i in range(slots):
            mpi.append({"rank": r, "host": host, "gpu": i})
            ds.append({"rank": r, "host": host, "gpu": r % slots})
            r += 1
    d["world_size"] = r
    with open(path) as f:  # the DeepSpeed reading where the file offers it
        claims_ds = re.search(r"DeepSpeed hostfile|/ DeepSpeed",
                              "".join(l for l in f if l.startswith("#"))) is not None
    d["deepspeed_claimed"] = claims_ds
    for name, got in (("mpirun", mpi), ("deepspeed launcher", ds if claims_ds else mpi)):
        if got != want:
            bad = [(a, b) for a, b in zip(got, want) if a != b][:3]
            if len(got) != len(want):
                return d, "%s: %d ranks, the plan %d" % (name, len(got), len(want))
            return d, "%s: ranks: derived %s, expected %s" % (
                name, json.dumps([a for a, _ in bad]), json.dumps([b for _, b in bad]))
    d["ranks_ok"] = True
    return d, ""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--release", default="-")
    ap.add_argument("--source", default="-")
    ap.add_argument("cases")
    a = ap.parse_args()
    with open(a.cases) as f:
        cases = json.load(f)["cases"]
    reader = deepspeed_reader(a.source if a.source != "-" else
                              os.environ.get("HETPLAN_DEEPSPEED_SOURCE"))
    for case in cases:
        t0 = time.time()
        try:
            d, why = check_case(case, reader)
        except (OSError, ValueError) as ex:
            d, why = {}, "%s: %s" % (type(ex).__name__, ex)
        d["parser"] = "deepspeed.launcher.runner.fetch_hostfile" if reader else "format rule"
        print(json.dumps({"id": case["id"], "status": "rejected" if why else "accepted",
                          "why": why, "derived": d, "seconds": round(time.time() - t0, 3)}))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
