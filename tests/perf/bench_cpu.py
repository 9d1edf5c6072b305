#!/usr/bin/env python3
"""Host side of the guest bench: follows the guest's marker file (one line, "LABEL WORKLOAD RUN",
written before each fio job, "done" at the end), prints a progress line per job, and measures the
CPU time that QEMU and each nvme-emu daemon use while the job runs (after its ramp), so the report
can state host CPU per I/O next to fio's IOPS.

Usage: bench_cpu.py --marker FILE --out FILE.jsonl --qemu-tag STRING [--total N] [--runs N]
                    [--skip SECONDS] [--length SECONDS] [--pid LABEL=PID]...
A job is measured from --skip seconds after its marker (fio's ramp) for --length seconds (fio's
runtime), or until the next marker when that comes first.
One JSON line per job: {"job": "LABEL WORKLOAD RUN", "seconds": wall seconds measured,
"qemu_cpu_s": ..., "daemon_cpu_s": {LABEL: ...}}. QEMU is the process whose command line holds
--qemu-tag (the run directory). Exits at "done", or when its parent goes away.
"""
import argparse
import json
import os
import sys
import time

POLL_S = 0.05


def cpu_ticks(pid):
    """utime + stime of a process in clock ticks, None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, encoding="ascii", errors="replace") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return int(fields[11]) + int(fields[12])
    except (OSError, IndexError, ValueError):
        return None


def find_qemu(tag):
    """The pid of the guest's QEMU: its command line holds tag; not the timeout(1) wrapping it."""
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                cmd = f.read().split(b"\0")
            with open("/proc/%s/comm" % entry, encoding="ascii", errors="replace") as f:
                comm = f.read().strip()
        except OSError:
            continue
        if comm != "timeout" and b"nvme-emu-guest" in cmd and any(tag.encode() in a for a in cmd):
            return int(entry)
    return None


def read_marker(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().strip()
    except OSError:
        return ""


class Window:
    """One job's measurement: from skip seconds after its marker, for length seconds."""

    def __init__(self, job, now, skip, length):
        self.job, self.t_open, self.skip, self.length = job, now, skip, length
        self.t0 = None
        self.base = None

    def sample(self, now, snap):
        if self.t0 is None and now - self.t_open >= self.skip:
            self.t0, self.base = now, snap

    def due(self, now):
        return self.t0 is not None and self.length > 0 and now - self.t0 >= self.length

    def close(self, now, snap, hz):
        if self.t0 is None or now - self.t0 < 0.2:
            return None
        if self.base["qemu"] is None or snap["qemu"] is None:
            return None
        daemons = {}
        for label, ticks in snap["daemons"].items():
            before = self.base["daemons"].get(label)
            if ticks is not None and before is not None:
                daemons[label] = (ticks - before) / hz
        return {"job": self.job, "seconds": round(now - self.t0, 3),
                "qemu_cpu_s": (snap["qemu"] - self.base["qemu"]) / hz, "daemon_cpu_s": daemons}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--marker", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--qemu-tag", required=True)
    ap.add_argument("--total", type=int, default=0)
    ap.add_argument("--runs", type=int, default=0)
    ap.add_argument("--skip", type=float, default=1.0)
    ap.add_argument("--length", type=float, default=0)
    ap.add_argument("--pid", action="append", default=[])
    args = ap.parse_args()
    daemons = {}
    for spec in args.pid:
        label, _, pid = spec.partition("=")
        daemons[label] = int(pid)
    hz = os.sysconf("SC_CLK_TCK")
    parent = os.getppid()
    qemu = None
    window = None
    current = ""
    count = 0
    start = time.monotonic()
    with open(args.out, "a", encoding="utf-8") as out:
        while os.getppid() == parent:
            now = time.monotonic()
            if qemu is None or cpu_ticks(qemu) is None:
                qemu = find_qemu(args.qemu_tag)
            snap = {"qemu": cpu_ticks(qemu) if qemu else None,
                    "daemons": {l: cpu_ticks(p) for l, p in daemons.items()}}
            marker = read_marker(args.marker)
            if window:
                window.sample(now, snap)
            if window and (marker != current or window.due(now)):
                rec = window.close(now, snap, hz)
                if rec:
                    out.write(json.dumps(rec) + "\n")
                    out.flush()
                window = None
            if marker != current:
                current = marker
                if marker == "done":
                    break
                parts = marker.split()
                if len(parts) == 3:
                    count += 1
                    window = Window(marker, now, args.skip, args.length)
                    print("bench: [guest %d/%s, %.0fs] %s %s, run %s/%s" %
                          (count, args.total or "?", now - start, parts[0], parts[1], parts[2],
                           args.runs or "?"), file=sys.stderr, flush=True)
            time.sleep(POLL_S)
    return 0


if __name__ == "__main__":
    sys.exit(main())
