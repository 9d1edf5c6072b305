#!/usr/bin/env python3
"""Reads the guest bench's fio JSON files (<label>-<workload>-<run>.json) and
prints, per workload, the median IOPS, MiB/s and mean latency of each device over the runs
and its ratio to the reference device (QEMU's built-in NVMe, label "qemu-nvme").
Usage: bench_report.py DIR. Exit status 1 when results are missing.
"""
import glob
import json
import os
import re
import statistics
import sys

REFERENCE = "qemu-nvme"


def load(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    doc = json.loads(text[text.find("{"):])
    job = doc["jobs"][0]
    d = job["read"] if job["read"]["io_bytes"] else job["write"]
    return d["iops"], d["bw_bytes"] / 1048576.0, d["lat_ns"]["mean"] / 1000.0


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    results = {}
    for path in glob.glob(os.path.join(sys.argv[1], "*.json")):
        m = re.match(r"(.+)-(randread-4k-qd32|randread-4k-qd1|seqwrite-128k-qd8)-(\d+)\.json$",
                     os.path.basename(path))
        if not m:
            continue
        try:
            results.setdefault((m.group(2), m.group(1)), []).append(load(path))
        except (ValueError, KeyError, IndexError) as e:
            print("bench: cannot read %s: %s" % (path, e), file=sys.stderr)
    if not results:
        print("bench: no results")
        return 1
    status = 0
    for workload in ("randread-4k-qd32", "randread-4k-qd1", "seqwrite-128k-qd8"):
        labels = sorted(l for (w, l) in results if w == workload)
        ref = results.get((workload, REFERENCE))
        ref_iops = statistics.median(r[0] for r in ref) if ref else None
        print("\n%s (median of %d runs)" % (workload, len(ref) if ref else 0))
        print("%-28s %10s %10s %10s %8s   runs (IOPS)" % ("device", "IOPS", "MiB/s", "lat us",
                                                              "ratio"))
        for label in labels:
            runs = results[(workload, label)]
            iops = statistics.median(r[0] for r in runs)
            mib = statistics.median(r[1] for r in runs)
            lat = statistics.median(r[2] for r in runs)
            ratio = "%.2f" % (iops / ref_iops) if ref_iops else "-"
            print("%-28s %10.0f %10.1f %10.1f %8s   %s" % (label, iops, mib, lat, ratio,
                                                           " ".join("%.0f" % r[0] for r in runs)))
        if ref_iops is None:
            status = 1
    # The default configuration should be the one that measures best here:
    # geometric mean of each device's ratios over the workloads.
    scores = {}
    for (workload, label), runs in results.items():
        ref = results.get((workload, REFERENCE))
        if ref and label != REFERENCE:
            ratio = statistics.median(r[0] for r in runs) / statistics.median(r[0] for r in ref)
            scores.setdefault(label, []).append(ratio)
    if scores:
        best = max(scores, key=lambda l: statistics.geometric_mean(scores[l]))
        print("\nbest nvme-emu configuration here (geometric mean of ratios): %s (%.2f)" %
              (best, statistics.geometric_mean(scores[best])))
    return status


if __name__ == "__main__":
    sys.exit(main())
