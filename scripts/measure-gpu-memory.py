#!/usr/bin/env python3
"""Measure what a PyTorch training process holds on one GPU, for the
memory model's runtime term and its tensor terms (docs/memory-model.md).

  scripts/measure-gpu-memory.py runtime [--communicators N]
      the CUDA context with the kernel images this stack loads, the cuBLAS
      workspaces and a one-rank NCCL communicator: device memory in use
      (NVML) minus what PyTorch's caching allocator holds, step by step.
  scripts/measure-gpu-memory.py train --mbs B [--attention eager|sdpa]
      [--precision fp32|tf32] [--layers L --hidden H --heads A --seq S
      --vocab V --ffn F] [--steps N]
      training steps of an OPT-shaped decoder (Hugging Face transformers,
      ReLU MLP, dropout 0.1, tied embedding, AdamW): the largest
      torch.cuda.max_memory_allocated of a step, the allocator's reserve,
      the process's device memory and the mean step time.
  scripts/measure-gpu-memory.py all [--out FILE]
      runtime with lazy and with eager module loading, then train at
      mbs 1, 2, 4 with both attention kinds, each in a fresh process;
      JSON lines on stdout (and FILE).

Each result is one JSON object on stdout.  Needs torch, nvidia-ml-py
(pynvml) and, for train, transformers; nothing else of hetplan.  State
the stack's runtime memory to the planner with --param mem_reserve=BYTES
(the "mem_reserve_bytes" of train: the process's device memory minus
torch.cuda.max_memory_allocated; "runtime_bytes" is what lies outside
the caching allocator, the rest its fragmentation)."""
import argparse
import json
import os
import subprocess
import sys
import time


def nvml_used():
    import pynvml
    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(int(os.environ.get("GPU", "0")))
    return int(pynvml.nvmlDeviceGetMemoryInfo(h).used)


def runtime(args):
    base = nvml_used()  # before this process makes a CUDA context
    import torch
    out = {"what": "runtime", "loading": os.environ.get("CUDA_MODULE_LOADING", "(default)"),
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "device": torch.cuda.get_device_name(0), "steps": []}

    def step(name):
        torch.cuda.synchronize()
        used = nvml_used() - base
        res = torch.cuda.memory_reserved()
        out["steps"].append({"after": name, "process_bytes": used,
                             "allocator_reserved_bytes": res,
                             "beyond_allocator_bytes": used - res})

    t0 = time.time()
    torch.empty(1, device="cuda")
    step("context")
    x = torch.ones(1 << 20, device="cuda")
    (x * 2.0).sum().item()
    step("element-wise kernels")
    a = torch.randn(4096, 4096, device="cuda")
    (a @ a).sum().item()
    step("fp32 GEMM")
    torch.backends.cuda.matmul.allow_tf32 = True
    (a @ a).sum().item()
    step("tf32 GEMM")
    b = a.to(torch.bfloat16)
    (b @ b).float().sum().item()
    step("bf16 GEMM")
    try:
        import torch.distributed as dist
        store = dist.HashStore()
        dist.init_process_group("nccl", store=store, rank=0, world_size=1,
                                device_id=torch.device("cuda", 0))
        t = torch.ones(1 << 20, device="cuda")
        dist.all_reduce(t)
        step("one-rank NCCL communicator")
        for k in range(2, args.communicators + 1):
            g = dist.new_group(ranks=[0])
            dist.all_reduce(t, group=g)
            step("one-rank NCCL communicator %d" % k)
        dist.destroy_process_group()
    except Exception as e:  # report, not fail: NCCL is optional here
        out["nccl_error"] = str(e)[:200]
    out["seconds"] = round(time.time() - t0, 2)
    print(json.dumps(out), flush=True)


def train(args):
    base = nvml_used()
    import torch
    from transformers import OPTConfig, OPTForCausalLM
    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = args.precision == "tf32"
    torch.backends.cudnn.allow_tf32 = args.precision == "tf32"
    cfg = OPTConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                    num_hidden_layers=args.layers, ffn_dim=args.ffn,
                    num_attention_heads=args.heads,
                    max_position_embeddings=args.seq,
                    word_embed_proj_dim=args.hidden, do_layer_norm_before=True,
                    dropout=0.1, attention_dropout=0.0,
                    activation_function="relu", tie_word_embeddings=True)
    model = OPTForCausalLM._from_config(cfg, attn_implementation=args.attention)
    model = model.to(device="cuda", dtype=torch.float32)
    model.train()
    nparams = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    ids = torch.randint(0, args.vocab, (args.mbs, args.seq), device="cuda")
    peaks, times = [], []
    for i in range(args.steps):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        t0 = time.time()
        loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        times.append(time.time() - t0)
        peaks.append(torch.cuda.max_memory_allocated())
        del loss
    used = nvml_used() - base
    res = torch.cuda.max_memory_reserved()
    timed = times[2:] if len(times) > 2 else times
    print(json.dumps({
        "what": "train", "device": torch.cuda.get_device_name(0),
        "torch": torch.__version__, "mbs": args.mbs, "seq": args.seq,
        "attention": args.attention, "precision": args.precision,
        "layers": args.layers, "hidden": args.hidden, "heads": args.heads,
        "ffn": args.ffn, "vocab": args.vocab, "params": nparams,
        "max_allocated_bytes": max(peaks[1:] if len(peaks) > 1 else peaks),
        "first_step_max_allocated_bytes": peaks[0],
        "max_reserved_bytes": res, "process_bytes": used,
        "runtime_bytes": used - res,
        "mem_reserve_bytes": used - max(peaks[1:] if len(peaks) > 1 else peaks),
        "step_seconds": sum(timed) / len(timed)}), flush=True)


def run_all(args):
    me = os.path.abspath(__file__)
    jobs = [(["runtime"], {}), (["runtime"], {"CUDA_MODULE_LOADING": "EAGER"})]
    for attn in ("sdpa", "eager"):
        for mbs in (1, 2, 4):
            jobs.append((["train", "--mbs", str(mbs), "--attention", attn], {}))
    sink = open(args.out, "w") if args.out else None
    for argv, env in jobs:
        e = dict(os.environ, **env)
        try:
            r = subprocess.run([sys.executable, me] + argv, env=e, text=True,
                               capture_output=True, timeout=args.timeout)
            line = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else \
                json.dumps({"argv": argv, "env": env, "error": r.stderr[-400:]})
        except subprocess.TimeoutExpired:
            line = json.dumps({"argv": argv, "env": env, "error": "timeout"})
        print(line, flush=True)
        if sink:
            sink.write(line + "\n")
            sink.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("runtime")
    r.add_argument("--communicators", type=int, default=1)
    t = sub.add_parser("train")
    t.add_argument("--mbs", type=int, default=1)
    t.add_argument("--attention", choices=("eager", "sdpa"), default="sdpa")
    t.add_argument("--precision", choices=("fp32", "tf32"), default="fp32")
    t.add_argument("--layers", type=int, default=24)
    t.add_argument("--hidden", type=int, default=1024)
    t.add_argument("--heads", type=int, default=16)
    t.add_argument("--ffn", type=int, default=4096)
    t.add_argument("--seq", type=int, default=2048)
    t.add_argument("--vocab", type=int, default=50272)
    t.add_argument("--steps", type=int, default=6)
    a = sub.add_parser("all")
    a.add_argument("--out", default=None)
    a.add_argument("--timeout", type=int, default=120)
    args = ap.parse_args()
    {"runtime": runtime, "train": train, "all": run_all}[args.cmd](args)


if __name__ == "__main__":
    main()
