"""Every stand-in the launcher checks put in place to run upstream code on a CPU.

This is the one place that lists them.  A placeholder replaces a GPU-only or
absent module (or an attribute that a newer PyTorch has and 1.13 lacks) so
that the upstream code can be imported; it never changes upstream logic.
Each entry says what it replaces and why.
"""

import importlib.abc
import importlib.machinery
import sys
import types


# ---- Megatron-LM ---------------------------------------------------------

class _Anything:
    """Stands in for any class or object of an absent module: it can be
    called, subclassed, indexed and used as a decorator (returning the
    decorated function unchanged); it is false and empty."""

    def __init__(self, *args, **kwargs):
        pass

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]
        return _Anything()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return _Anything()

    def __getitem__(self, key):
        return _Anything()

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False


def _anything_class(name, module):
    return type(name, (_Anything,), {"__module__": module})


class _StandInModule(types.ModuleType):
    """An absent module: every name imported from it is an _Anything class."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        value = _anything_class(name, self.__name__)
        setattr(self, name, value)
        return value


class _StandInFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of the packages in `names` (and below) give _StandInModules
    carrying the attributes in `attrs` ({module: {name: value}})."""

    def __init__(self, names, attrs=None):
        self.names = tuple(names)
        self.attrs = attrs or {}

    def find_spec(self, fullname, path, target=None):
        for n in self.names:
            if fullname == n or fullname.startswith(n + "."):
                return importlib.machinery.ModuleSpec(fullname, self,
                                                      is_package=True)
        return None

    def create_module(self, spec):
        module = _StandInModule(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module):
        for k, v in self.attrs.get(module.__name__, {}).items():
            setattr(module, k, v)


def _no_compile(fn=None, *args, **kwargs):
    """torch.compile / torch.jit.script as a decorator that keeps the
    function as written (a fuser only speeds it up)."""
    if fn is None:
        return lambda f: f
    return fn


class _DeviceProperties:
    """What torch.cuda.get_device_properties answers on a Hopper GPU
    (compute capability 9.0)."""
    major = 9
    minor = 0
    name = "placeholder GPU (compute capability 9.0)"


def install_megatron(release):
    """Placeholders Megatron-LM `release` needs under Debian's torch 1.13."""
    import contextlib
    import torch
    import torch.distributed

    done = []

    def coalescing_manager(*args, **kwargs):
        return contextlib.nullcontext()

    if not hasattr(torch.distributed, "_coalescing_manager"):
        torch.distributed._coalescing_manager = coalescing_manager
        done.append(("torch.distributed._coalescing_manager",
                     "torch 2 API imported at module level by the distributed "
                     "optimizer; a no-op context manager (no collective runs)"))
    if release == "core_r0.9.0":
        return done

    # core_v0.19.0 is written for torch 2.x
    absent = {
        "torch.distributed.checkpoint":
            "torch 2 distributed checkpointing (1.13 has an older API); "
            "imported at module level, used only to save/load checkpoints",
        "torch.distributed.tensor": "torch 2 DTensor, used by Megatron-FSDP "
            "and checkpointing at run time only",
        "torch.distributed._tensor": "the same DTensor under its older name",
        "torch.distributed.device_mesh": "torch 2 DeviceMesh, run time only",
        "torch.distributed._shard.sharded_tensor":
            "torch 1.13's module fails to import on Python 3.11 (a dataclass "
            "with a mutable default); Megatron imports its classes for "
            "checkpoint conversion only",
        "triton": "GPU kernel compiler; absent on CPU. Its __version__ "
            "'0.0.0' makes Megatron take its own no-Triton fallbacks",
    }
    sys.meta_path.insert(0, _StandInFinder(
        absent, {"triton": {"__version__": "0.0.0"}}))
    done += list(absent.items())

    import typing
    try:
        from typing_extensions import override
    except ImportError:  # what typing.override does, less the marker
        def override(fn):
            return fn
    import numpy
    import torch.cuda.memory
    import torch.optim.optimizer
    optim_module = sys.modules["torch.optim.optimizer"]  # torch.optim dels it

    attrs = [
        (torch, "compile", _no_compile,
         "torch 2 compiler used as a decorator; the function is kept as "
         "written"),
        (torch.jit, "script", _no_compile,
         "Megatron's fuser is torch.compile from torch 2.2 on and "
         "torch.jit.script before; 1.13's TorchScript cannot compile the "
         "methods written for torch.compile, so the function is kept as "
         "written (a fuser changes no result)"),
        (optim_module, "ParamsT",
         _anything_class("ParamsT", "torch.optim.optimizer"),
         "torch 2 type alias used in annotations"),
        (torch.cuda.memory, "CUDAPluggableAllocator",
         _anything_class("CUDAPluggableAllocator", "torch.cuda.memory"),
         "torch 2 CUDA allocator class, used for inference only"),
        (torch.distributed, "DeviceMesh",
         _anything_class("DeviceMesh", "torch.distributed"),
         "torch 2 DeviceMesh, used in annotations and at run time only"),
        (typing, "override", override,
         "Python 3.12 decorator (typing_extensions.override where "
         "installed); it returns the method unchanged"),
        (torch.cuda, "get_device_properties",
         lambda *args, **kwargs: _DeviceProperties(),
         "no GPU: validate_args asks the device architecture; the answer is "
         "a fixed Hopper (9.0), for which CUDA_DEVICE_MAX_CONNECTIONS rules "
         "are strictest"),
        (torch.cuda, "get_device_capability", lambda *args, **kwargs: (9, 0),
         "the same fixed answer through the capability query"),
    ]
    if not hasattr(numpy, "dtypes"):
        nd = types.ModuleType("numpy.dtypes")
        nd.UInt32DType = _anything_class("UInt32DType", "numpy.dtypes")
        sys.modules["numpy.dtypes"] = nd
        numpy.dtypes = nd
        done.append(("numpy.dtypes.UInt32DType",
                     "numpy >= 1.25 dtype class in the list of types "
                     "torch.load may unpickle; Debian's numpy is older"))
    replaced = ("script", "get_device_properties", "get_device_capability")
    for obj, name, value, why in attrs:
        if name in replaced or not hasattr(obj, name):
            setattr(obj, name, value)
            done.append((obj.__name__ + "." + name, why))
    return done


# ---- DeepSpeed -----------------------------------------------------------

def _ds_module(name, why, done, **attrs):
    """An absent module `name` with `attrs`, recorded in done."""
    m = types.ModuleType(name)
    m.__dict__.update(attrs)
    sys.modules[name] = m
    parent, _, child = name.rpartition(".")
    if parent in sys.modules:
        setattr(sys.modules[parent], child, m)
    done.append((name, why))
    return m


def _ds_with_kwargs(register, pre):
    """register_forward_(pre_)hook of torch 1.13 taking torch 2.0's keyword
    arguments: prepend is ignored, a with_kwargs hook gets empty kwargs."""

    def reg(self, hook, *, prepend=False, with_kwargs=False, always_call=False):
        if not with_kwargs:
            return register(self, hook)
        if pre:  # hook(module, args, kwargs) -> None or (args, kwargs)
            return register(self, lambda m, a: (hook(m, a, {}) or (None,))[0])
        return register(self, lambda m, a, o: hook(m, a, {}, o))

    return reg


class _CPUAdamKernel:
    """DeepSpeedCPUAdam's JIT-compiled C++ kernel (cpu_adam): its optimizer
    objects are created and destroyed; no step runs in the checks."""

    def create_adam(self, *args, **kwargs):
        return 0

    def destroy_adam(self, *args, **kwargs):
        return 0


def install_deepspeed(release):
    """Placeholders DeepSpeed `release` (0.14.4, 0.19.5) needs on a CPU-only
    torch 1.13, then DeepSpeed imported (its source first on sys.path, the
    caller's part).  Returns [(name, why)] of what was put in place."""
    import json
    import torch
    import torch.nn as nn

    done = []
    if "hjson" not in sys.modules:
        try:
            import hjson  # noqa: F401
        except ImportError:
            sys.modules["hjson"] = json
            done.append(("hjson", "absent package (no Debian package); DeepSpeed "
                         "reads its config file with hjson.load, json reads "
                         "the JSON files hetplan writes alike"))
    try:
        import einops  # noqa: F401
    except ImportError:
        _ds_module("einops", "absent package; the flops profiler wraps "
                   "einops.einsum at import to count its FLOPs", done,
                   einsum=lambda *a, **k: None)
    lib = torch.library
    if not hasattr(lib, "custom_op"):
        def custom_op(name, fn=None, **kwargs):
            return fn if fn is not None else (lambda f: f)
        lib.custom_op = custom_op
        lib.register_fake = lambda name, fn=None, **kw: fn if fn is not None else (lambda f: f)
        lib.register_autograd = lambda *a, **k: None
        done.append(("torch.library.custom_op/register_fake/register_autograd",
                     "torch >= 2.4 op registration, used at import by DeepCompile's "
                     "AutoSP all-to-all (0.19); decorators returning the function"))
    try:
        import torch.utils._sympy.functions  # noqa: F401
    except ImportError:
        _ds_module("torch.utils._sympy", "torch 2 symbolic shapes package", done)
        _ds_module("torch.utils._sympy.functions", "torch 2 symbolic shapes: "
                   "FloorDiv, imported by DeepCompile's AutoSP (0.19)", done,
                   FloorDiv=type("FloorDiv", (), {}))
    try:
        import torch._subclasses.fake_tensor as fake_tensor
        if not hasattr(fake_tensor, "maybe_get_fake_mode"):
            fake_tensor.maybe_get_fake_mode = lambda t: None
            done.append(("torch._subclasses.fake_tensor.maybe_get_fake_mode",
                         "torch 2 fake tensors, imported by DeepCompile's AutoSP "
                         "pass (0.19)"))
    except ImportError:
        pass
    try:
        import torch._functorch.partitioners  # noqa: F401
    except ImportError:
        _ds_module("torch._functorch", "torch 2 functorch package", done)
        _ds_module("torch._functorch.partitioners", "torch 2 min-cut partitioner, "
                   "imported by DeepCompile's long-context checkpointing pass "
                   "(0.19), which patches it only when that pass is enabled", done)
    if not hasattr(torch, "compiler"):
        def disable(fn=None, recursive=True):
            return fn if fn is not None else (lambda f: f)
        torch.compiler = _ds_module("torch.compiler", "torch >= 2.1 compiler "
                                    "switches: ZeRO-3's parameter hooks (0.19) are "
                                    "decorated with torch.compiler.disable; nothing "
                                    "is compiled here", done,
                                    disable=disable, is_compiling=lambda: False)
    import inspect
    for name, pre in (("register_forward_pre_hook", True),
                      ("register_forward_hook", False)):
        orig = getattr(nn.Module, name)
        if "with_kwargs" not in inspect.signature(orig).parameters:
            setattr(nn.Module, name, _ds_with_kwargs(orig, pre))
            done.append(("torch.nn.Module." + name,
                         "torch 2.0 keywords prepend/with_kwargs: the engine (0.19) "
                         "registers its forward hooks with them at construction; "
                         "the checks run no forward pass"))

    import deepspeed  # noqa: F401  (the caller put the source on sys.path)
    import deepspeed.ops
    from deepspeed.accelerator import get_accelerator

    ops = deepspeed.ops.__compatible_ops__
    for name in [k for k in ops if k.endswith("shm_comm")]:
        if ops[name]:
            ops[name] = False
            done.append(("deepspeed.ops.__compatible_ops__['%s']" % name,
                         "the CPU shared-memory collectives are a C++ kernel built "
                         "with ninja at run time; marked not built, DeepSpeed's comm "
                         "takes its torch.distributed path (its own fallback)"))
    acc = type(get_accelerator())
    if acc.__name__ == "CPU_Accelerator" and not get_accelerator().is_fp16_supported():
        acc.is_fp16_supported = lambda self: True
        done.append(("CPU_Accelerator.is_fp16_supported",
                     "the engine refuses fp16 on an accelerator without it; the "
                     "plan's GPUs have fp16, this CPU answers for them"))
    from deepspeed.ops.op_builder import CPUAdamBuilder
    if not getattr(CPUAdamBuilder, "_hetplan_standin", False):
        CPUAdamBuilder.load = lambda self, verbose=True: _CPUAdamKernel()
        CPUAdamBuilder._hetplan_standin = True
        done.append(("CPUAdamBuilder.load", "DeepSpeedCPUAdam's C++ kernel is built "
                     "with ninja at run time; the stand-in creates the optimizer "
                     "(ZeRO-Offload requires that class), no step runs"))
    return done


def install_world(rank, world_size):
    """torch.distributed as rank `rank` of a world of `world_size` processes,
    in this one process: a process-group backend 'hetplan-world' whose
    collectives complete at once without moving data (the other ranks are
    absent) and a store whose barriers see every rank arrive.  It lets
    DeepSpeed build its topology, groups, PipelineModule and engine for
    the plan's whole world on one CPU; values that collectives would
    bring from other ranks are not computed.  Returns [(name, why)]."""
    import datetime
    import torch
    import torch.distributed as dist
    from torch.futures import Future

    make_work = torch._C._distributed_c10d._create_work_from_future

    def done_work(value):
        f = Future()
        f.set_result(value)
        return make_work(f)

    class Store(dist.Store):
        def __init__(self, n):
            super().__init__()
            self.n, self.d = n, {}

        def add(self, key, value):
            if key.startswith("store_based_barrier_key"):
                return self.n  # every rank has arrived
            self.d[key] = self.d.get(key, 0) + value
            return self.d[key]

        def set(self, key, value):
            self.d[key] = value

        def get(self, key):
            return self.d[key]

        def wait(self, keys, timeout=None):
            return None

    class World(dist.ProcessGroup):
        def getBackendName(self):
            return "hetplan-world"

    def same(self, *args, **kwargs):
        return done_work(args[0] if args else None)

    def allgather(self, outs, ins, opts=None):
        for out, inp in zip(outs, ins):
            for o in out:
                o.copy_(inp)
        return done_work(outs)

    for name in ("broadcast", "allreduce", "allreduce_coalesced", "reduce",
                 "reduce_scatter", "_reduce_scatter_base", "_allgather_base",
                 "allgather_coalesced", "gather", "scatter", "alltoall",
                 "alltoall_base", "send", "recv", "recv_anysource", "barrier"):
        setattr(World, name, same)
    World.allgather = allgather
    if "HETPLAN-WORLD" not in dist.Backend._plugins:
        dist.Backend.register_backend("hetplan-world",
                                      lambda store, r, n, timeout: World(r, n))
    dist.init_process_group("hetplan-world", rank=rank, world_size=world_size,
                            store=Store(world_size),
                            timeout=datetime.timedelta(seconds=60))
    return [("torch.distributed world of %d" % world_size,
             "one process as rank %d: the other ranks are absent, collectives "
             "complete without data, store barriers see every rank" % rank)]
