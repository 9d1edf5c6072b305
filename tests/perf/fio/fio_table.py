#!/usr/bin/env python3
"""Turns fio JSON output files (--output-format=json) into a short table.

One row per job and direction that moved data: IOPS, MiB/s, mean total
latency (lat_ns) and p99 completion latency (clat_ns percentiles; fio keeps
no percentiles of the total latency). Usage: fio_table.py FILE.json...
Exit status 1 when a file cannot be read or parsed, or a job reported an error.
"""
import json
import sys


def fio_table_load(path):
    """Returns the parsed JSON of one fio output file (fio may print notes before it)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    start = text.find("{")
    if start < 0:
        raise ValueError("no JSON object in %s" % path)
    return json.loads(text[start:])


def fio_table_rows(doc):
    """Yields (job, direction, iops, mib_s, mean_us, p99_us, error) for each active direction."""
    for job in doc.get("jobs", []):
        name = job.get("jobname", "?")
        err = job.get("error", 0)
        moved = False
        for direction in ("read", "write", "trim"):
            d = job.get(direction)
            if not d or d.get("io_bytes", 0) == 0:
                continue
            moved = True
            pct = d.get("clat_ns", {}).get("percentile", {})
            p99 = pct.get("99.000000")
            yield (name, direction, d.get("iops", 0.0), d.get("bw_bytes", 0) / 2**20,
                   d.get("lat_ns", {}).get("mean", 0.0) / 1000.0,
                   None if p99 is None else p99 / 1000.0, err)
        if not moved:
            yield (name, "-", 0.0, 0.0, 0.0, None, err)


def fio_table_main(paths):
    rows = []
    status = 0
    for path in paths:
        try:
            rows.extend(fio_table_rows(fio_table_load(path)))
        except (OSError, ValueError) as e:
            print("fio_table: %s: %s" % (path, e), file=sys.stderr)
            status = 1
    head = ("job", "dir", "IOPS", "MiB/s", "mean lat us", "p99 lat us")
    fmt = "%-20s %-5s %10s %9s %12s %11s"
    print(fmt % head)
    for name, direction, iops, mib, mean, p99, err in rows:
        print(fmt % (name, direction, "%.0f" % iops, "%.1f" % mib, "%.1f" % mean,
                     "-" if p99 is None else "%.1f" % p99) + ("  ERROR %d" % err if err else ""))
        if err:
            status = 1
    return status


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    sys.exit(fio_table_main(sys.argv[1:]))
