"""Summary of a `bench/tinygpt-vs-pytorch` run, and the values file chapter 2 quotes.

Reads the run's raw results (one `<contender> <tokens/s>` line per timed repetition, plus the
lines the script logs about the run: `started`, `args`, `machine`, `cores`, `flops_per_token`,
`peak` (the matmul peak of a training step, each product's best, once per round) and
`in_sequence` (steps of products alone, one per repetition), both from `tinygpt-bench --peak`,
`load`, `finished`, and PyTorch's `torch <version>, <threads> threads`), prints the medians and
ranges, `ratio: X.XX`, ours over the faster PyTorch, and `roofline: F`, ours at its median in
FLOP/s over the highest peak of the run; with `--record FILE` it writes FILE: a TOML `[values]`
table of the numbers section 2.10 quotes, under a comment header that says where and when they
were measured. Standard library only, so it runs without the PyTorch venv.

Results files written before the script logged the run (only `load`, `torch` and the timings)
are accepted: what they do not say is inferred where it can be (rounds from the number of
PyTorch runs) and marked as not recorded where it cannot.
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile

CONTENDERS = ("ours", "eager", "compiled")
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


class Run:
    """What a raw results file says."""

    def __init__(self, path):
        self.path = path
        self.timings = {name: [] for name in CONTENDERS}
        self.torch_version = None
        self.torch_runs = 0
        self.loads = []
        self.started = self.finished = self.written = self.machine = self.cores = None
        self.args = None  # (rounds, repetitions, steps)
        self.flops_per_token = None
        self.peaks = []  # GFLOP/s, one per round
        self.in_sequence = []  # GFLOP/s, one per repetition
        with open(path, encoding="utf-8") as lines:
            for number, line in enumerate(lines, 1):
                self._read(line.split(), number)

    def _read(self, words, number):
        if not words:
            return
        key, rest = words[0], words[1:]
        if key in CONTENDERS and len(rest) == 1:
            self.timings[key].append(float(rest[0]))
        elif key == "torch" and rest:
            self.torch_version = rest[0].rstrip(",")
            self.torch_runs += 1
        elif key == "load":
            self.loads.append(" ".join(rest))
        elif key == "started":
            self.started = " ".join(rest)
        elif key == "finished":
            self.finished = " ".join(rest)
        elif key == "written":
            self.written = " ".join(rest)
        elif key == "machine":
            self.machine = " ".join(rest)
        elif key == "cores":
            self.cores = " ".join(rest)
        elif key == "args" and len(rest) == 3:
            self.args = tuple(int(w) for w in rest)
        elif key == "flops_per_token" and len(rest) == 1:
            self.flops_per_token = int(rest[0])
        elif key == "peak" and len(rest) == 1:
            self.peaks.append(float(rest[0]))
        elif key == "in_sequence" and len(rest) == 1:
            self.in_sequence.append(float(rest[0]))
        else:
            sys.exit(f"{self.path}:{number}: cannot read {' '.join(words)!r}")

    def runs_each(self):
        """The number of timed runs per contender (the same for all, or the file is broken)."""
        counts = {name: len(values) for name, values in self.timings.items()}
        if len(set(counts.values())) != 1 or counts["ours"] == 0:
            sys.exit(f"{self.path}: uneven or missing timings {counts}; was the run interrupted?")
        return counts["ours"]

    def rounds_and_repetitions(self):
        """(rounds, repetitions per round, steps or None), logged or inferred."""
        if self.args:
            return self.args
        # Older files: every round runs PyTorch once, and it logs its version line.
        rounds = self.torch_runs
        if rounds == 0 or self.runs_each() % rounds:
            sys.exit(f"{self.path}: cannot tell the rounds from {rounds} PyTorch runs")
        return rounds, self.runs_each() // rounds, None


def in_words(n):
    """Small counts as words, as a sentence writes them."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else f"{n:,}"


def plural(n, noun):
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


def tokens(x):
    return f"{x:,.0f}"


def summary(run):
    """The printed summary and the values of the timings (the closing `ratio:` line is main's)."""
    version = run.torch_version or "?"
    medians = {name: statistics.median(values) for name, values in run.timings.items()}
    fastest = {name: max(values) for name, values in run.timings.items()}
    slowest = {name: min(values) for name, values in run.timings.items()}
    best_torch = max(medians["eager"], medians["compiled"])
    ratio = medians["ours"] / best_torch
    labels = {
        "ours": "ours (Rust, ch02)",
        "eager": f"PyTorch {version} eager",
        "compiled": f"PyTorch {version} torch.compile",
    }
    lines = [f"{run.runs_each()} timed runs each, alternating between ours and PyTorch"]
    for name in CONTENDERS:
        spread = f"{tokens(slowest[name])}-{tokens(fastest[name])}"
        lines.append(f"{labels[name]:34} median {tokens(medians[name]):>8} tokens/s   (range {spread})")

    rounds, repetitions, _ = run.rounds_and_repetitions()
    values = {
        "bench_rounds": in_words(rounds),
        "bench_repetitions": in_words(repetitions),
        "bench_runs_each": f"{run.runs_each():,}",
        # The version the table names, major.minor (`2.15.0+cu132` is PyTorch 2.15).
        "bench_torch_version": ".".join(version.split("+")[0].split(".")[:2]),
    }
    for name in CONTENDERS:
        values[f"bench_{name}_median"] = tokens(medians[name])
        values[f"bench_{name}_range"] = f"{tokens(slowest[name])} – {tokens(fastest[name])}"
    values["bench_ours_over_pytorch"] = f"{ratio:.2f}"
    # The fastest runs come from the quietest moments of a shared machine.
    values["bench_ours_over_pytorch_fastest"] = f"{fastest['ours'] / max(fastest['eager'], fastest['compiled']):.2f}"
    return lines, values, medians["ours"], fastest["ours"]


def flop_values(run, flops_per_token, median, fastest):
    """Ours in GFLOP/s at the chapter's FLOPs per trained token, and as shares of the matmul peak
    the run measured. The highest of the rounds' peaks is taken: the roofline is what the kernels
    can do at these shapes, and a round that measured less was slowed by something else."""
    median_gflops = median * flops_per_token / 1e9
    fastest_gflops = fastest * flops_per_token / 1e9
    lines = [f"ours at {flops_per_token:,} FLOP/token: {median_gflops:.0f} GFLOP/s median, {fastest_gflops:.0f} fastest"]
    values = {"bench_ours_median_gflops": f"{median_gflops:.0f}"}
    if run.peaks:
        peak = max(run.peaks)
        share, fastest_share = median_gflops / peak, fastest_gflops / peak
        values["bench_roofline_gflops"] = f"{peak:.0f}"
        values["bench_roofline_range"] = f"{min(run.peaks):.0f} – {peak:.0f}"
        values["bench_ours_median_of_roofline"] = f"{100 * share:.0f} %"
        values["bench_ours_fastest_of_roofline"] = f"{100 * fastest_share:.0f} %"
        values["bench_roofline_fraction"] = f"{share:.2f}"
        spread = f"{min(run.peaks):.0f}-{peak:.0f}"
        lines.append(
            f"matmul peak of a step, measured {plural(len(run.peaks), 'time')}: {peak:.0f} GFLOP/s "
            f"(range {spread}); ours {values['bench_ours_median_of_roofline']} of it median, "
            f"{values['bench_ours_fastest_of_roofline']} fastest"
        )
    if run.in_sequence:
        # Paired with ours like for like: both medians of as many runs, taken in turns.
        in_sequence = statistics.median(run.in_sequence)
        values["bench_in_sequence_gflops"] = f"{in_sequence:.0f}"
        values["bench_in_sequence_fastest_gflops"] = f"{max(run.in_sequence):.0f}"
        values["bench_ours_of_in_sequence"] = f"{100 * median_gflops / in_sequence:.0f} %"
        spread = f"{min(run.in_sequence):.0f}-{max(run.in_sequence):.0f}"
        lines.append(
            f"steps of matmuls alone, in order: median {in_sequence:.0f} GFLOP/s (range {spread}); "
            f"ours {values['bench_ours_of_in_sequence']} of it"
        )
    return lines, values


def utc(seconds):
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def header(run, args, flops_source, raw):
    """The comment lines above `[values]`: the command, the time, the machine, the inputs."""
    rounds, repetitions, steps = run.rounds_and_repetitions()
    steps_text = f"{steps} steps each" if steps else "steps per repetition not logged (the script's default is 20)"
    if run.started and run.finished:
        when = f"from {run.started} to {run.finished}"
    else:
        written = run.written or utc(os.path.getmtime(run.path))
        when = f"not dated by the run; its results file was last written {written}"
    if run.machine:
        machine = f"{run.machine}, {run.cores} cores"
    else:
        here = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
        machine = f"not logged by the run (logging began after it); recorded on {here}, {os.cpu_count()} cores"
    loads = (
        f"load average {run.loads[0]} before, {run.loads[-1]} after"
        if len(run.loads) >= 2
        else "load average not logged"
    )
    lines = [
        f"Generated by `{args.command}`; do not edit by hand.",
        f"From the raw run {raw} (recording from it again gives the same values).",
        f"Run: {when}; {plural(rounds, 'round')} of {plural(repetitions, 'timed repetition')} per contender, {steps_text}.",
        f"Machine: {machine}; {loads}.",
        f"FLOPs per trained token: {args.flops_per_token:,} ({flops_source}).",
    ]
    if run.peaks:
        lines.append(
            f"Roofline: the highest of {plural(len(run.peaks), 'matmul peak')} measured by the run"
            f" (tinygpt-bench --peak, one per round): {max(run.peaks):.0f} GFLOP/s."
        )
    lines.append("Chapter 2 quotes these values: after recording, `cargo tangle accept --chapter ch02` brings its")
    lines.append("prose up to date (and `cargo tangle check` fails until then).")
    return lines


def write_atomically(path, text):
    """Writes `text` to `path` through a temporary file in the same directory and a rename, so a
    killed run leaves the old file or the new one, never half of one."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=directory, prefix=".tangle-tmp-", delete=False, encoding="utf-8") as f:
        f.write(text)
        temporary = f.name
    os.replace(temporary, path)


def toml_string(text):
    # A JSON string literal is a valid TOML basic string (same escapes).
    return json.dumps(text, ensure_ascii=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="the run's raw results file")
    parser.add_argument("--record", metavar="TOML", help="write the values file here")
    parser.add_argument("--raw-copy", metavar="PATH", help="keep a copy of the raw results here (with --record)")
    parser.add_argument("--flops-per-token", type=int, help="used when the results file does not log it")
    parser.add_argument("--command", default="bench/tinygpt-vs-pytorch", help="the command, for the header")
    parser.add_argument("--root", default=".", help="paths in the header are shown relative to this")
    args = parser.parse_args()

    run = Run(args.results)
    lines, values, median, fastest = summary(run)
    if run.flops_per_token is not None:
        args.flops_per_token = run.flops_per_token
        flops_source = "ch02::flops_per_token x 3, logged by the run"
    else:
        flops_source = "ch02::flops_per_token x 3, from tinygpt-bench --flops-per-token when recorded"
    if args.flops_per_token is not None:
        flop_lines, flop_vals = flop_values(run, args.flops_per_token, median, fastest)
        lines += flop_lines
        values.update(flop_vals)
    # The two figures the run is for, last, in a form a script can pick up.
    lines.append(f"ratio: {values['bench_ours_over_pytorch']}")
    if "bench_roofline_fraction" in values:
        lines.append(f"roofline: {values['bench_roofline_fraction']}")

    machine = f"{run.machine}, {run.cores} cores" if run.machine else "not logged"
    print("TinyGPT: 4 layers, d_model 128, 4 heads, context 128, vocab 256; batch 8 x 128; AdamW")
    loads = f"; load average {run.loads[0]} before, {run.loads[-1]} after" if run.loads else ""
    print(f"machine: {machine}{loads}")
    print("\n".join(lines))

    if args.record:
        if args.flops_per_token is None or not run.peaks:
            sys.exit(f"{args.results}: recording needs the FLOPs per token and a measured matmul peak (`peak` lines)")
        raw = args.results
        if args.raw_copy and os.path.abspath(args.raw_copy) != os.path.abspath(args.results):
            with open(args.results, encoding="utf-8") as f:
                copy = f.read()
            if not (run.finished or run.written):
                # An undated run is dated by its file's modification time, which a checkout
                # would not keep: say it in the copy, in a line of its own.
                copy += f"written {utc(os.path.getmtime(args.results))}\n"
            write_atomically(args.raw_copy, copy)
            raw = args.raw_copy
        shown = os.path.relpath(raw, args.root) if os.path.abspath(raw).startswith(os.path.abspath(args.root)) else raw
        text = "".join(f"# {line}\n" for line in header(run, args, flops_source, shown))
        text += "\n[values]\n" + "".join(f"{name} = {toml_string(v)}\n" for name, v in values.items())
        write_atomically(args.record, text)
        print(f"recorded {len(values)} values in {args.record}", file=sys.stderr)


if __name__ == "__main__":
    main()
