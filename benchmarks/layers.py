"""Layers that real models spend their time in, pijit against torch on the CPU.

LSTM (2 layers, input 128, hidden 256, sequence 32, batch 32, batch_first), Conv2dTranspose
(64 -> 32 channels, kernel 4, stride 2, padding 1, 16x16 input, batch 32, no bias: MindSpore's
default), GroupNorm (32 groups, 256 channels, 16x16, batch 32) and multi-head attention
(embed 256, 8 heads, sequence 64, batch 32, batch_first, self-attention, need_weights=False)
and LayerNorm (hidden 256 over a (32, 64, 256) input, a transformer's shape), float32. Two
passes each: the forward alone, and forward+backward (the gradient of the sum of the output
with respect to the input and every parameter).

Columns, median ms per call after warm-up:
  pijit eager    the Cell called directly; gradients from ms.value_and_grad (the eager tape)
  pijit jit      ms.jit of the forward function, or of the value_and_grad function
  torch eager    the torch.nn module with the same weights (copied from pijit's); the forward
                 under torch.inference_mode(), forward+backward as out.sum().backward() with
                 the gradients set to None first; torch's default threads
  torch.compile  torch.compile of the same module, when it compiles within 120 s
and the ratio pijit jit / torch eager (the target is 1.5x or below).

Before timing, pijit's and torch's outputs and gradients are compared; a warning is printed
when they differ by more than 1e-3 of the largest reference value. torch is optional: without
it only the pijit columns are printed.

    python3 benchmarks/layers.py [--repeat N] [--quick] [--no-compile] [--only NAME[,NAME] ...]
"""
import argparse
import os
import signal
import statistics
import time
from dataclasses import dataclass
from typing import Callable

import numpy as np

import pijit as ms
from pijit import nn

COMPILE_LIMIT_S = 120
TOLERANCE = 1e-3
# Each library's worker threads keep spinning for a moment after its last kernel; timing the
# next library straight away on the 2-core machine would charge it for them.
PAUSE_S = 0.3
TORCH_NAMES = {"gamma": "weight", "beta": "bias"}  # MindSpore's norm names -> torch's


@dataclass
class LayerSpec:
    name: str
    input_shape: tuple
    make_pijit: Callable
    make_torch: Callable  # torch module -> torch.nn.Module
    call: Callable  # (layer, x) -> output; the same call works on both libraries' layers


def lstm_spec():
    return LayerSpec("LSTM", (32, 32, 128),
                     lambda: nn.LSTM(128, 256, 2, batch_first=True),
                     lambda torch: torch.nn.LSTM(128, 256, 2, batch_first=True),
                     lambda layer, x: layer(x)[0])


def conv_transpose_spec():
    return LayerSpec("Conv2dTranspose", (32, 64, 16, 16),
                     lambda: nn.Conv2dTranspose(64, 32, 4, stride=2, pad_mode="pad", padding=1),
                     lambda torch: torch.nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1,
                                                            bias=False),
                     lambda layer, x: layer(x))


def group_norm_spec():
    def make():
        net = nn.GroupNorm(32, 256)
        # With gamma all ones the gradient of sum(output) w.r.t. the input is zero up to
        # rounding, which would make the agreement check compare noise.
        rng = np.random.default_rng(1)
        net.gamma.set_data(ms.Tensor(rng.uniform(0.5, 1.5, 256).astype(np.float32)))
        net.beta.set_data(ms.Tensor(rng.uniform(-0.5, 0.5, 256).astype(np.float32)))
        return net
    return LayerSpec("GroupNorm", (32, 256, 16, 16), make,
                     lambda torch: torch.nn.GroupNorm(32, 256),
                     lambda layer, x: layer(x))


def layer_norm_spec():
    def make():
        net = nn.LayerNorm((256,), epsilon=1e-5)
        # Parameters away from ones and zeros, for the reason given for GroupNorm.
        rng = np.random.default_rng(2)
        net.gamma.set_data(ms.Tensor(rng.uniform(0.5, 1.5, 256).astype(np.float32)))
        net.beta.set_data(ms.Tensor(rng.uniform(-0.5, 0.5, 256).astype(np.float32)))
        return net
    return LayerSpec("LayerNorm", (32, 64, 256), make,
                     lambda torch: torch.nn.LayerNorm(256),
                     lambda layer, x: layer(x))


def attention_spec():
    return LayerSpec("MultiheadAttention", (32, 64, 256),
                     lambda: nn.MultiheadAttention(256, 8, batch_first=True),
                     lambda torch: torch.nn.MultiheadAttention(256, 8, batch_first=True),
                     lambda layer, x: layer(x, x, x, need_weights=False)[0])


SPECS = (lstm_spec, conv_transpose_spec, group_norm_spec, layer_norm_spec, attention_spec)
PASSES = ("forward", "fwd+bwd")


def median_ms(fn, repeat, warmup):
    for _ in range(warmup):
        fn()
    time.sleep(PAUSE_S)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


# --- pijit -------------------------------------------------------------------------------

def pijit_functions(spec, net):
    """{pass: (eager function, jitted function)}, each taking the input tensor."""
    def forward(x):
        return spec.call(net, x)

    def loss(x):
        return spec.call(net, x).sum()

    grads = ms.value_and_grad(loss, 0, net.trainable_params())
    return {"forward": (forward, ms.jit(forward)), "fwd+bwd": (grads, ms.jit(grads))}


def pijit_results(functions, x):
    """The output and gradients (input first, then parameters) as NumPy arrays."""
    out = functions["forward"][1](x).asnumpy()
    _, (grad_x, grad_params) = functions["fwd+bwd"][1](x)
    return out, [grad_x.asnumpy()] + [g.asnumpy() for g in grad_params]


# --- torch -------------------------------------------------------------------------------

def torch_module(torch, spec, net):
    """spec's torch module holding a copy of net's parameters (same names and layouts, bar
    MindSpore's gamma/beta)."""
    module = spec.make_torch(torch)
    # dropout is 0 everywhere, so eval() changes no arithmetic; it lets torch's attention take
    # its inference fast path, as its users' inference code does.
    module.eval()
    params = dict(module.named_parameters())
    names = [TORCH_NAMES.get(p.name, p.name) for p in net.trainable_params()]
    if sorted(names) != sorted(params):
        raise RuntimeError(f"{spec.name}: parameters differ: pijit {names}, torch "
                           f"{sorted(params)}")
    with torch.no_grad():
        for p, name in zip(net.trainable_params(), names):
            params[name].copy_(torch.from_numpy(p.asnumpy()))
    return module, names


def torch_functions(torch, spec, module, x_np):
    """{pass: function of no arguments} running module the way torch users run it."""
    x = torch.from_numpy(x_np)
    x_grad = x.clone().requires_grad_(True)

    def forward():
        with torch.inference_mode():
            return spec.call(module, x)

    def forward_backward():
        module.zero_grad(set_to_none=True)
        x_grad.grad = None
        spec.call(module, x_grad).sum().backward()
        return x_grad

    return {"forward": forward, "fwd+bwd": forward_backward}


def torch_results(module, names, functions):
    out = functions["forward"]().numpy()
    x_grad = functions["fwd+bwd"]()
    params = dict(module.named_parameters())
    return out, [x_grad.grad.numpy()] + [params[n].grad.numpy() for n in names]


class CompileTimeout(Exception):
    pass


def compiled_functions(torch, spec, module, x_np):
    """torch_functions of torch.compile(module), each called once to compile it; None and the
    reason when compiling fails or takes more than COMPILE_LIMIT_S."""
    def on_alarm(signum, frame):
        raise CompileTimeout(f"compiling took over {COMPILE_LIMIT_S} s")

    # A module Dynamo declines (LSTM) gets the nn.Module call code, which every module
    # shares, marked as skipped; without a reset the later modules would silently run eagerly.
    import torch._dynamo  # not imported by `import torch` itself
    torch._dynamo.reset()
    counters = torch._dynamo.utils.counters
    counters.clear()
    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(COMPILE_LIMIT_S)
    start = time.perf_counter()
    try:
        functions = torch_functions(torch, spec, torch.compile(module), x_np)
        for fn in functions.values():
            fn()
        if not counters["stats"]["unique_graphs"]:
            reason = next(iter(counters["graph_break"]), "no reason given").splitlines()[0]
            return None, f"captured no graph ({reason}): row skipped"
        return functions, f"compiled in {time.perf_counter() - start:.1f} s"
    except Exception as e:  # noqa: BLE001 - no toolchain, unsupported op, timeout: report it
        return None, f"{type(e).__name__}: {e}".splitlines()[0][:160]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# --- comparison and table ----------------------------------------------------------------

def worst_difference(got, want):
    """The largest |got - want| over each array relative to that array's largest |want|."""
    worst = 0.0
    for g, w in zip(got, want):
        scale = max(float(np.abs(w).max()), 1e-12)
        worst = max(worst, float(np.abs(g - w).max()) / scale)
    return worst


def check_agreement(spec, pijit_out, torch_out):
    (out_p, grads_p), (out_t, grads_t) = pijit_out, torch_out
    forward = worst_difference([out_p], [out_t])
    backward = worst_difference(grads_p, grads_t)
    status = "ok" if max(forward, backward) <= TOLERANCE else "WARNING: outputs differ"
    print(f"  {spec.name}: pijit vs torch, output {forward:.1e}, gradients {backward:.1e} "
          f"(relative to the largest value; tolerance {TOLERANCE:.0e}): {status}")


def time_layer(spec, torch, args):
    """{pass: {column: ms}} for one layer."""
    ms.set_seed(0)
    net = spec.make_pijit()
    x_np = np.random.default_rng(0).standard_normal(spec.input_shape).astype(np.float32)
    x = ms.Tensor(x_np)
    pj = pijit_functions(spec, net)
    times = {p: {} for p in PASSES}
    for p in PASSES:
        eager, jitted = pj[p]
        times[p]["pijit eager"] = median_ms(lambda: eager(x), args.repeat, args.warmup)
        times[p]["pijit jit"] = median_ms(lambda: jitted(x), args.repeat, args.warmup)
    if torch is None:
        return times
    module, names = torch_module(torch, spec, net)
    eager = torch_functions(torch, spec, module, x_np)
    check_agreement(spec, pijit_results(pj, x), torch_results(module, names, eager))
    for p in PASSES:
        times[p]["torch eager"] = median_ms(eager[p], args.repeat, args.warmup)
    if args.no_compile:
        return times
    compiled, note = compiled_functions(torch, spec, module, x_np)
    print(f"  {spec.name}: torch.compile {note}")
    if compiled is not None:
        out = compiled["forward"]().numpy()
        if worst_difference([out], [pijit_results(pj, x)[0]]) > TOLERANCE:
            print(f"  {spec.name}: WARNING: torch.compile's output differs from pijit's")
        for p in PASSES:
            times[p]["torch.compile"] = median_ms(compiled[p], args.repeat, args.warmup)
    return times


COLUMNS = ("pijit eager", "pijit jit", "torch eager", "torch.compile")


def print_table(results):
    print(f"\n{'layer':<20}{'pass':<9}" + "".join(f"{c:>15}" for c in COLUMNS)
          + f"{'jit / torch':>13}")
    for layer, times in results.items():
        for p in PASSES:
            row = times[p]
            cells = "".join(f"{row[c]:>15.2f}" if c in row else f"{'-':>15}" for c in COLUMNS)
            ratio = (f"{row['pijit jit'] / row['torch eager']:>12.2f}x"
                     if "torch eager" in row else f"{'-':>13}")
            print(f"{layer:<20}{p:<9}{cells}{ratio}")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=15, help="timed calls per cell (default 15)")
    ap.add_argument("--quick", action="store_true",
                    help="5 timed calls after 1 warm-up call per cell")
    ap.add_argument("--no-compile", action="store_true", help="leave out torch.compile")
    ap.add_argument("--only", nargs="+", metavar="NAME", type=str.lower,
                    help="run only these layers (case-insensitive, spaces or commas between: "
                         "lstm, conv2dtranspose, groupnorm, layernorm, multiheadattention)")
    args = ap.parse_args()
    if args.only:
        args.only = [name for item in args.only for name in item.split(",") if name]
    args.warmup = 3
    if args.quick:
        args.repeat, args.warmup = min(args.repeat, 5), 1
    return args


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        torch = None
        print("torch is not installed: torch columns skipped")
    versions = "" if torch is None else (f", torch {torch.__version__} "
                                         f"({torch.get_num_threads()} threads)")
    print(f"float32, median ms per call over {args.repeat} calls after {args.warmup} warm-up "
          f"calls{versions}; load average {os.getloadavg()[0]:.1f} at the start")
    specs = [make_spec() for make_spec in SPECS]
    if args.only:
        unknown = set(args.only) - {spec.name.lower() for spec in specs}
        if unknown:
            raise SystemExit(f"--only: no layer named {', '.join(sorted(unknown))}; the layers "
                             f"are {', '.join(spec.name for spec in specs)}")
        specs = [spec for spec in specs if spec.name.lower() in args.only]
    results = {}
    for spec in specs:
        results[spec.name] = time_layer(spec, torch, args)
    print_table(results)
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
