"""Every row of issue 24's table in one run, with its target: workers and in-process side
by side, and what the prepared runtimes cost besides the critical path.

    python bench/bench_targets.py            # about 12 minutes on 2 cores
    python bench/bench_targets.py --quick    # about 6 minutes (CI smoke)
    python bench/bench_targets.py --only sandbox,turn   # some sections: sandbox turn startup resume kernel

Rows (the measurements are in ``targets_probes.py``; the machinery in the other benches):
one sandboxed hook invocation through HookChain, paced (5 ms untimed gap); Sandbox.call
alone; one ctx host-call round trip; engine time per turn with six hooks on all points and
a tool call (a model answering in 150 ms, and an instant one); ``rienda run``'s first token
over the server's own (no JS, a JS tool); resuming a 10,000-message session against
json.loads of every line; ctx.log to a Jupyter client (p95) against a python3 kernel's
print, idle and with every core busy; a Rienda kernel idle for 30 s after a turn (CPU of the
kernel and its workers); its memory with its workers, and after their quiet-period
release, against a python3 kernel's. Hidden costs: the CPU per paced invocation of the
processes that run V8 (for workers: the workers, background preparation included), the
workers' memory, the host's memory before and after the paced section.

Targets are printed, never enforced (timings depend on the machine); the exit status is
1 only when a hook returns a wrong result.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import targets_probes as probes  # noqa: E402

from rienda_kernel.engine import Sandbox  # noqa: E402
from rienda_kernel.engine.sandbox.inprocess import InProcessSandbox  # noqa: E402

SECTIONS = ("sandbox", "turn", "startup", "resume", "kernel")


def med(samples: list[float]) -> float:
    return statistics.median(samples)


def verdict(value: float, target: float) -> str:
    return "met" if value <= target else f"MISSED by {value - target:.3g} ({value / target:.1f}x)"


def row(label: str, workers: str, local: str, target: str, outcome: str) -> None:
    print(f"| {label} | {workers} | {local} | {target} | {outcome} |")


def print_sandbox(results: dict[str, dict]) -> None:
    w, p = results["workers"], results["in-process"]
    paced_w, paced_p = w["paced"], p["paced"]
    row("hook invocation through HookChain, paced: median / p95",
        f"{med(paced_w):.3f} / {probes.p95(paced_w):.3f} ms", f"{med(paced_p):.3f} / {probes.p95(paced_p):.3f} ms",
        "≤ 0.3 / ≤ 0.6 ms", f"median {verdict(med(paced_w), 0.3)}; p95 {verdict(probes.p95(paced_w), 0.6)}")
    row("Sandbox.call alone, paced: median", f"{med(w['call']):.3f} ms", f"{med(p['call']):.3f} ms", "", "")
    row("ctx host call round trip: median", f"{med(w['round_trip']):.3f} ms", f"{med(p['round_trip']):.3f} ms",
        "≤ 0.05 ms", verdict(med(w["round_trip"]), 0.05))
    row("hidden: CPU per paced invocation where V8 runs (background included)",
        f"{w['cpu_ms']:.2f} ms (the workers)", f"{p['cpu_ms']:.2f} ms (this process)", "", "")
    (h0, _), (h1, _) = w["host_mb"]
    mem = w["workers_mb"]
    row("hidden: host VmRSS before / after the paced section", f"{h0:.1f} / {h1:.1f} MB", "", "flat",
        "flat" if abs(h1 - h0) < 2 else f"grew {h1 - h0:+.1f} MB")
    row("hidden: the workers' memory after it (RSS / USS)",
        f"{sum(m[0] for m in mem):.0f} / {sum(m[1] for m in mem):.0f} MB ({len(mem)} workers)", "", "", "")


def print_floors(floors: dict[str, list[float]]) -> None:
    """The machine's price of a hop, for reading the rows below: a worker invocation makes
    at least two process round trips' worth of wake-ups and one V8 hop."""
    for key, label in (("thread", "a round trip to a sleeping thread (queues)"),
                       ("process", "a round trip to a sleeping process (pipes)"),
                       ("eval", "one V8 eval('1') through mini-racer's thread")):
        row(f"floor: {label}, paced: median / p95", "", f"{med(floors[key]):.3f} / {probes.p95(floors[key]):.3f} ms",
            "", "")


def print_turns(results: dict[str, dict]) -> None:
    for latency, label, target in ((0.15, "model answering in 150 ms", 5.0), (0.0, "instant model", 5.0)):
        w, p = results["workers"], results["in-process"]
        six_w, six_p = med(w[f"six {latency}"]), med(p[f"six {latency}"])
        row(f"engine time per turn, six hooks on all points + a tool call, {label}",
            f"{six_w:.1f} ms (no hooks {med(w[f'none {latency}']):.1f})",
            f"{six_p:.1f} ms (no hooks {med(p[f'none {latency}']):.1f})", f"≤ {target:g} ms", verdict(six_w, target))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--only", default=",".join(SECTIONS), help="comma-separated sections")
    args = parser.parse_args(argv)
    only = set(args.only.split(","))
    started = time.perf_counter()
    print(f"Issue 24's rows ({'quick' if args.quick else 'full'}; nproc {os.cpu_count()}, "
          f"load {os.getloadavg()[0]:.1f} at the start)")
    for line in probes.bench_sandbox.machine_info():
        print("  " + line)
    print()
    print("| row | workers | in-process | target | outcome (workers) |")
    print("| --- | --- | --- | --- | --- |")
    with tempfile.TemporaryDirectory(prefix="rienda-targets-") as tmp:
        root = Path(tmp)
        sandboxes = {"workers": Sandbox(), "in-process": InProcessSandbox()}
        for sandbox in sandboxes.values():
            probes.bench_sandbox.settle(sandbox)
        if "sandbox" in only:
            print_floors(probes.floor_rows(args.quick))
            print_sandbox({label: probes.sandbox_rows(sb, root / f"sb-{label}", args.quick)
                           for label, sb in sandboxes.items()})
        if "turn" in only:
            print_turns({label: probes.turn_rows(sb, root, label, args.quick) for label, sb in sandboxes.items()})
        sandboxes["workers"].close()
        if "startup" in only:
            over = probes.startup_rows(args.quick)
            row("`rienda run` first token over the server's own: no JS / a JS tool",
                f"+{over['no JS']:.0f} / +{over['a JS tool']:.0f} ms", "", "≤ +100 ms both",
                f"no JS {verdict(over['no JS'], 100)}; JS tool {verdict(over['a JS tool'], 100)}")
        if "resume" in only:
            loads, floor = probes.resume_rows(root, args.quick)
            ratio = med(loads) / med(floor)
            row("resume a 10,000-message session vs json.loads of every line",
                f"{med(loads):.0f} ms vs {med(floor):.0f} ms: {ratio:.2f}x", "", "≤ 1.3x", verdict(ratio, 1.3))
        if "kernel" in only:
            print_kernel(probes.kernel_rows(args.quick))
    print(f"\n(total {time.perf_counter() - started:.0f} s; load {os.getloadavg()[0]:.1f} at the end)")
    return 0


def print_kernel(k: dict) -> None:
    for state in ("idle", "busy"):
        log, base = probes.p95(k[f"log {state}"]), probes.p95(k[f"print {state}"])
        target = 1.0 if state == "idle" else 1.5
        row(f"ctx.log -> the client, p95, vs a python3 kernel's print ({'idle' if state == 'idle' else 'every core busy'})",
            f"{log:.2f} vs {base:.2f} ms: {log / base:.1f}x", "", f"≤ {target:g}x", verdict(log / base, target))
    row("a kernel idle after a turn: CPU over 30 s (kernel + its workers)",
        f"{k['rienda idle cpu']:.3f} s", f"python3 kernel {k['python3 idle cpu']:.3f} s", "0 s",
        "met" if k["rienda idle cpu"] < 0.005 else f"MISSED by {k['rienda idle cpu']:.3f} s")
    base_rss, base_uss = k["python3 mem"]
    for when in ("turn", "quiet"):
        mem = k[f"rienda mem {when}"]
        rss, uss = sum(m[0] for m in mem), sum(m[1] for m in mem)
        label = "just after a turn" if when == "turn" else "after the workers' quiet period (35 s)"
        row(f"the kernel's memory with its V8 workers, {label}: RSS / USS",
            f"{rss:.0f} / {uss:.0f} MB ({len(mem)} processes)", f"python3 kernel {base_rss:.0f} / {base_uss:.0f} MB",
            f"≤ {base_rss + 30:.0f} / {base_uss + 30:.0f} MB",
            f"RSS {verdict(rss, base_rss + 30)}; USS {verdict(uss, base_uss + 30)}")


if __name__ == "__main__":
    sys.exit(main())
