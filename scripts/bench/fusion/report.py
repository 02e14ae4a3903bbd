"""Summarises scripts/bench/fusion/run.sh output (results.jsonl, and the
autotune logs next to it) as Markdown: per rank count, the median step time
of each implementation (median of the runs' medians, and their spread), the
ratios the targets of issue 5 name, and the parameters the tuner chose."""

import collections
import csv
import json
import os
import statistics
import sys

RESNET50 = (  # (impl, what it is)
    ("gloo", "raw Gloo, one flat buffer"),
    ("torch", "torch.distributed, one async all_reduce per tensor"),
    ("torch-buckets", "torch.distributed, DDP-style buckets"),
    ("hvd", "hvd, allreduce_async_ per tensor + synchronize"),
    ("hvd-grouped", "hvd, grouped_allreduce"),
    ("hvd-views", "hvd, allreduce_async_ per tensor, views of one buffer"),
    ("hvd-views-flat", "hvd-views without shared memory "
     "(HOROVOD_HIERARCHICAL_ALLREDUCE=0)"),
)
# (numerator, denominator, target text, test)
TARGETS = (
    ("hvd", "gloo", "≤ 1.15", lambda r: r <= 1.15),
    ("hvd", "torch", "< 1", lambda r: r < 1),
    ("hvd-grouped", "gloo", "≤ 1.15", lambda r: r <= 1.15),
    ("hvd-grouped", "torch", "< 1", lambda r: r < 1),
    ("hvd-views", "gloo", "≤ 1.15", lambda r: r <= 1.15),
    ("hvd-views", "torch", "< 1", lambda r: r < 1),
    ("hvd-views", "torch-buckets", "< 1", lambda r: r < 1),
    ("hvd-views", "hvd-views-flat", "< 1", lambda r: r < 1),
)
# The tuner's log (HOROVOD_AUTOTUNE_LOG): CSV, a header naming at least one
# of these, a row per trial; a column "best" marks the row it settled on.
TUNED = ("fusion_threshold_bytes", "cycle_time_ms", "cache_enabled",
         "throughput")


def ms(seconds):
    return f"{seconds * 1e3:.1f}" if seconds is not None else "-"


def size_text(nbytes):
    return f"{nbytes / 2**20:.1f} MiB" if nbytes >= 2**20 else f"{nbytes} B"


class Runs:
    def __init__(self, path):
        self.rows = collections.defaultdict(list)
        with open(path) as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    key = (row["workload"], row["np"], row["impl"])
                    self.rows[key].append(row)

    def median(self, workload, np, impl):
        rows = self.rows.get((workload, np, impl))
        return statistics.median(r["median_s"] for r in rows) if rows else None

    def median_of(self, workload, np, impl, field):
        values = [r[field] for r in self.rows.get((workload, np, impl), [])
                  if field in r]
        return statistics.median(values) if values else None

    def spread(self, workload, np, impl):
        rows = self.rows.get((workload, np, impl), [])
        if len(rows) < 2:
            return ""
        values = [r["median_s"] for r in rows]
        return f"{ms(min(values))}–{ms(max(values))}"

    def count(self, workload, np, impl):
        return len(self.rows.get((workload, np, impl), []))

    def first(self, workload, np, impl):
        rows = self.rows.get((workload, np, impl))
        return rows[0] if rows else None


def ratio(a, b):
    return a / b if a is not None and b else None


def resnet50_table(runs, np):
    ref = runs.first("resnet50", np, "hvd") or runs.first("resnet50", np,
                                                          "gloo")
    if ref is None:
        return
    print(f"Gradient set: ResNet-50, {ref['tensors']} tensors, "
          f"{size_text(ref['bytes'])}, sum per step.")
    print()
    print("| implementation | runs | median step ms | spread ms "
          "| / raw Gloo |")
    print("|---|---|---|---|---|")
    gloo = runs.median("resnet50", np, "gloo")
    for impl, what in RESNET50:
        t = runs.median("resnet50", np, impl)
        if t is None:
            continue
        r = ratio(t, gloo)
        print(f"| {impl}: {what} | {runs.count('resnet50', np, impl)} "
              f"| {ms(t)} | {runs.spread('resnet50', np, impl)} "
              f"| {f'{r:.2f}' if r is not None else '-'} |")
    print()
    for num, den, target, test in TARGETS:
        r = ratio(runs.median("resnet50", np, num),
                  runs.median("resnet50", np, den))
        if r is not None:
            verdict = "met" if test(r) else "not met"
            print(f"- {num} / {den}: **{r:.2f}** (target {target}: "
                  f"{verdict})")
    print()


def negotiation_table(runs, np):
    on = runs.median("tiny", np, "hvd")
    off = runs.median("tiny", np, "hvd-cache-off")
    ref = runs.first("tiny", np, "hvd") or runs.first("tiny", np,
                                                      "hvd-cache-off")
    if ref is None:
        return
    n = ref["tensors"]
    print(f"Negotiation: {n} tensors of {ref['bytes'] // n} B per step, "
          f"{ref['steps']} steps per run.")
    print()
    print("| hvd | runs | median step ms | spread ms | µs per tensor "
          "| negotiation ms per step |")
    print("|---|---|---|---|---|---|")
    negotiation = {}
    for impl, label in (("hvd", "cache on (default)"),
                        ("hvd-cache-off", "cache off (capacity 0)")):
        t = runs.median("tiny", np, impl)
        negotiation[impl] = runs.median_of("tiny", np, impl,
                                           "negotiation_s_per_step")
        if t is not None:
            print(f"| {label} | {runs.count('tiny', np, impl)} | {ms(t)} "
                  f"| {runs.spread('tiny', np, impl)} | {t / n * 1e6:.0f} "
                  f"| {ms(negotiation[impl])} |")
    r = ratio(off, on)
    if r is not None:
        print()
        print(f"- cache off / cache on, per step: **{r:.2f}** (target ≥ 3: "
              f"{'met' if r >= 3 else 'not met'})")
    r = ratio(negotiation["hvd-cache-off"], negotiation["hvd"])
    if r is not None:
        print(f"- cache off / cache on, negotiation time per step: {r:.2f}")
    off_negotiation = negotiation["hvd-cache-off"]
    if off is not None and off_negotiation is not None and off_negotiation < off:
        # What the cache could give if it made negotiation free and nothing
        # else changed.
        print(f"- ceiling for any cache (a step without cache off's "
              f"negotiation): {off / (off - off_negotiation):.2f}")
    print()


def read_log(path):
    """(rows as dicts, or None without a header; the last raw line)."""
    with open(path, newline="") as f:
        lines = [ln for ln in f.read().splitlines()
                 if ln.strip() and not ln.lstrip().startswith("#")]
    if not lines:
        return [], None
    if not any(c in lines[0] for c in TUNED):
        return None, lines[-1]
    return list(csv.DictReader(lines)), lines[-1]


def describe(row):
    return ", ".join(f"{k} = {v}" for k, v in row.items() if k)


def autotune_section(runs, np, results_dir):
    rows = runs.rows.get(("resnet50", np, "hvd-autotune"))
    if not rows:
        return
    tuned = runs.median("resnet50", np, "hvd-autotune")
    default = runs.median("resnet50", np, "hvd")
    print(f"Autotune: ResNet-50 set, HOROVOD_AUTOTUNE=1; the last "
          f"{rows[0]['steps']} steps of each run.")
    print()
    print("| hvd | runs | median step ms | spread ms |")
    print("|---|---|---|---|")
    print(f"| defaults | {runs.count('resnet50', np, 'hvd')} | {ms(default)} "
          f"| {runs.spread('resnet50', np, 'hvd')} |")
    print(f"| autotuned | {len(rows)} | {ms(tuned)} "
          f"| {runs.spread('resnet50', np, 'hvd-autotune')} |")
    r = ratio(tuned, default)
    if r is not None:
        print()
        print(f"- autotuned / defaults: **{r:.2f}**")
    print()
    for row in rows:
        name = row.get("autotune_log")
        if not name:
            print("- no autotune log named (HOROVOD_AUTOTUNE_LOG unset)")
            continue
        path = os.path.join(results_dir, name)
        if not os.path.exists(path):
            print(f"- `{name}`: missing (the runtime wrote no log)")
            continue
        try:
            parsed, last = read_log(path)
        except (OSError, csv.Error, UnicodeDecodeError) as e:
            print(f"- `{name}`: unreadable ({e})")
            continue
        if parsed is None:
            print(f"- `{name}`: no CSV header; last line: `{last}`")
        elif not parsed:
            print(f"- `{name}`: empty")
        else:
            chosen = [r for r in parsed
                      if str(r.get("best", "")).strip().lower()
                      in ("1", "true", "yes")]
            print(f"- `{name}`: {len(parsed)} rows")
            if chosen:
                print(f"  - chosen: {describe(chosen[-1])}")
                continue
            if "best" in parsed[0]:
                print("  - no row marked best: the tuner had not finished")
            print(f"  - last row: {describe(parsed[-1])}")
            best = _best(parsed)
            if best is not None:
                print(f"  - highest throughput: {describe(best)}")
    print()


def _best(rows):
    keys = [k for k in rows[0] if k and k.startswith("throughput")]
    if not keys:
        return None

    def score(row):
        try:
            return float(row.get(keys[0]) or "nan")
        except ValueError:
            return float("nan")
    scored = [r for r in rows if score(r) == score(r)]  # drops NaN
    return max(scored, key=score) if scored else None


def main(path):
    runs = Runs(path)
    if not runs.rows:
        sys.exit(f"report.py: no results in {path}")
    cores = os.cpu_count()
    for np in sorted({k[1] for k in runs.rows}):
        note = f", oversubscribed on {cores} cores" if np > cores else ""
        print(f"### N = {np} (medians over runs{note})")
        print()
        resnet50_table(runs, np)
        negotiation_table(runs, np)
        autotune_section(runs, np, os.path.dirname(os.path.abspath(path)))


if __name__ == "__main__":
    main(sys.argv[1])
