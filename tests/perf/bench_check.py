#!/usr/bin/env python3
"""Checks a bench report (tests/perf/bench.sh's BENCH_DIR) so the pipeline cannot silently
break: report.md states date, machine and KVM/TCG; its tables hold numbers for every peer
(QEMU NVMe, virtio-blk, nvme-emu), the native points and the DPA model, with ratios and ordered
percentiles; every plot it lists is a real PNG of a sensible size made from numeric data; and
bench_report.py refuses (exit 1) raw results with a part missing.
Usage: bench_check.py BENCH_DIR. Prints "ok - ..." / "not ok - ..." and "N passed, N failed".
"""
import glob
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
NUM = r"[0-9]+(?:\.[0-9]+)?[kM%]?"
CELL = re.compile(r"^%s(?: \(%s–%s\))?$" % (NUM, NUM, NUM))
EXPECTED_PLOTS = ["native-iops-vs-qd-mmap-fused.png", "native-write-vs-qd-mmap-fused.png",
                  "native-latency.png", "native-cpu-per-io.png", "guest-iops-vs-qd.png",
                  "guest-latency.png", "guest-cpu-per-io.png", "dpa-latency.png"]


class Checker:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, ok, detail=""):
        if ok:
            self.passed += 1
            print("ok - %s" % name)
        else:
            self.failed += 1
            print("not ok - %s%s" % (name, ": " + detail if detail else ""))
        return ok


def num(cell):
    """The median of a table cell ("12k (11k–13k)", "1.05", "0.08%"), None when not a number."""
    cell = cell.strip()
    if not CELL.match(cell):
        return None
    m = re.match(NUM, cell).group(0)
    scale = {"k": 1e3, "M": 1e6}.get(m[-1], 1)
    return float(m.rstrip("kM%")) * scale


def tables(md):
    """Every Markdown table of md as (header, rows), cells stripped."""
    out, cur = [], None
    for line in md.splitlines():
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if cur is None:
                cur = (cells, [])
            elif not all(set(c) <= {"-"} for c in cells):
                cur[1].append(cells)
        elif cur is not None:
            out.append(cur)
            cur = None
    if cur is not None:
        out.append(cur)
    return out


def find_table(tabs, first_header):
    for h, rows in tabs:
        if h and h[0].startswith(first_header):
            return h, rows
    return None, []


def png_size(path):
    """(width, height) of a PNG file, None when it is not one."""
    with open(path, "rb") as f:
        head = f.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def gp_numbers(path):
    """How many numeric (not NaN) values the datablocks of a gnuplot script hold."""
    n, inside = 0, False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("$d") and "<< EOD" in line:
                inside = True
            elif line.strip() == "EOD":
                inside = False
            elif inside:
                for tok in re.sub(r'"[^"]*"', "", line).split():
                    try:
                        if float(tok) == float(tok):  # not NaN
                            n += 1
                    except ValueError:
                        pass
    return n


def check_report(c, d):
    path = os.path.join(d, "report.md")
    if not c.check("report.md exists", os.path.isfile(path)):
        return
    md = open(path, encoding="utf-8").read()
    c.check("report states the date", re.search(r"^- Date: \d{4}-\d\d-\d\d \d\d:\d\d", md, re.M))
    c.check("report states the machine", re.search(r"^- Machine: .+, \d+ CPUs, [0-9.]+ GiB RAM",
                                                    md, re.M))
    c.check("report says KVM or TCG", re.search(r"^- Guest accelerator: \*\*(KVM|TCG)\*\*", md,
                                                re.M))
    tabs = tables(md)

    h, rows = find_table(tabs, "guest, ")
    want = ["QEMU NVMe", "virtio-blk", "nvme-emu mmap, DPA fused (default)"]
    if c.check("guest summary: QEMU NVMe, virtio-blk and nvme-emu side by side",
               h is not None and all(w in h for w in want), str(h)):
        cols = [h.index(w) for w in want] + [h.index("default / QEMU NVMe"),
                                             h.index("default / virtio-blk")]
        bad = [r for r in rows if any(num(r[i]) is None or num(r[i]) <= 0 for i in cols)]
        c.check("guest summary: numbers and ratios in every row (%d rows)" % len(rows),
                len(rows) >= 4 and not bad, str(bad))
        c.check("guest summary: IOPS rows for 4 KiB QD1 and QD32 and 128 KiB MiB/s",
                all(any(r[0].startswith(p) for r in rows) for p in (
                    "4 KiB random read QD1, IOPS", "4 KiB random read QD1, psync, IOPS",
                    "4 KiB random read QD32, IOPS", "128 KiB seq write QD8, MiB/s")))

    h, rows = find_table(tabs, "target (")
    if c.check("targets table present", h is not None, str(h)):
        # QD1 latency is judged on the worst run, libaio and psync alike.
        for what in ("QD1 p50 latency (libaio), every run", "QD1 p50 latency (psync), every run"):
            r = [r for r in rows if what in r[0]]
            c.check("targets: guest %s, the worst run's ratio with each run's" % what,
                    len(r) == 1 and re.match(r"worst \d+\.\d\dx \(runs \d", r[0][1]) and
                    r[0][2] in ("met", "not met"), str(r))
    stats = glob.glob(os.path.join(d, "raw", "guest", "*-stats.json"))
    good = []
    for path in stats:
        try:
            st = json.load(open(path, encoding="utf-8"))
            good.append(sum(x["io_cmds"] for x in st["controllers"]) > 0 and
                        "poll_wait_naps" in st["poll_groups"][0])
        except (OSError, ValueError, KeyError, IndexError, TypeError):
            good.append(False)
    c.check("guest bench: each daemon's counters saved after the run (nvmf_get_stats, %d)" %
            len(stats), stats and all(good), str(stats))

    h, rows = find_table(tabs, "workload")
    if c.check("guest table present", h is not None and "p99.9 us" in h, str(h)):
        i50, i99, i999 = h.index("p50 us"), h.index("p99 us"), h.index("p99.9 us")
        devices = {r[1] for r in rows}
        c.check("guest table: every device measured", all(w in devices for w in want),
                str(devices))
        bad = [r for r in rows if None in (num(r[i50]), num(r[i99]), num(r[i999])) or
               not num(r[i50]) <= num(r[i99]) <= num(r[i999])]
        c.check("guest table: latency percentiles are numbers and ordered", not bad, str(bad))
        ihost = h.index("host CPU us/IO")
        bad = [r for r in rows if num(r[ihost]) is None or num(r[ihost]) <= 0]
        c.check("guest table: host CPU per I/O measured for every row", not bad, str(bad))

    h, rows = find_table(tabs, "nvme-emu-perf -> nvme-emu")
    if c.check("native summary present", h is not None and len(h) >= 3, str(h)):
        pts = [r for r in rows if "best point" not in r[0]]
        bad = [r for r in pts if any(num(x) is None for x in r[1:])]
        c.check("native summary: numbers for each configuration (%d rows)" % len(pts),
                len(pts) >= 5 and not bad, str(bad))
    h, rows = find_table(tabs, "bdev")
    if c.check("native table present", h is not None and "server CPU us/IO" in h, str(h)):
        i = [h.index(x) for x in ("IOPS", "p50 us", "p99 us", "p99.9 us", "server CPU us/IO",
                                  "client CPU us/IO")]
        bad = [r for r in rows if any(num(r[j]) is None for j in i) or
               not num(r[i[1]]) <= num(r[i[2]]) <= num(r[i[3]])]
        c.check("native table: IOPS, ordered percentiles and CPU per I/O on every row "
                "(%d rows)" % len(rows), rows and not bad, str(bad))
        c.check("native table: null and malloc, polled and interrupts",
                {r[0] for r in rows} >= {"null", "malloc"} and
                {r[3] for r in rows} >= {"polled", "interrupts"})

    h, rows = find_table(tabs, "queue scaling")
    if c.check("native queue scaling table present (1, 2, 4, 8 queues; 2 poll groups)",
               h is not None and h[2:6] == ["1 queue", "2 queues", "4 queues", "8 queues"] and
               "2 poll groups, 2 queues" in h, str(h)):
        reads = [r for r in rows if r[0] == "null" and "random read" in r[1]]
        i2 = h.index("2 poll groups, 2 queues")
        bad = [r for r in reads if any(num(x) is None for x in r[2:9] + r[i2:i2 + 3])]
        c.check("native queue scaling: null 4 KiB random reads at 1, 2, 4 and 8 queues on one "
                "poll group and 2, 4, 8 on two, numbers and ratios (%d rows)" % len(reads),
                reads and not bad, str(bad or rows))

    h, rows = find_table(tabs, "bench")
    if c.check("DPA table present", h is not None and "notifications/s" in h, str(h)):
        c.check("DPA table: both benches, four configurations each",
                sum(r[0] == "dpa-bench" for r in rows) == 4 and
                sum(r[0] == "dpa-bench-hw" for r in rows) == 4, str(rows))
        bad = [r for r in rows if any(num(x) is None for x in r[3:9])]
        c.check("DPA table: numbers in every row", not bad, str(bad))

    h, rows = find_table(tabs, "backend")
    if c.check("backends table present (aio, io_uring, NBD)", h is not None and
               {r[0] for r in rows} >= {"aio", "uring", "nbd"}, str(h)):
        bad = [r for r in rows if any(num(x) is None for x in r[1:4])]
        c.check("backends table: numbers in every row", not bad, str(bad))

    listed = re.findall(r"^- `plots/([\w.-]+\.png)`", md, re.M)
    missing = [p for p in EXPECTED_PLOTS if p not in listed]
    c.check("report lists every plot (%d)" % len(listed), not missing, "missing %s" % missing)
    for p in listed:
        png = os.path.join(d, "plots", p)
        size = png_size(png) if os.path.isfile(png) else None
        c.check("plot %s: a PNG of at least 600x400, > 8 KB" % p,
                size and size[0] >= 600 and size[1] >= 400 and os.path.getsize(png) > 8000,
                "size %s" % (size,))
        gp = png[:-4] + ".gp"
        c.check("plot %s: drawn from numbers" % p, os.path.isfile(gp) and gp_numbers(gp) >= 2)
        c.check("plot %s: shown in the report" % p, "](plots/%s)" % p in md)
    c.check("no problems reported", "## Problems in this run" not in md)


def check_refusals(c, d):
    """bench_report.py must fail when a part's results are missing or all failed."""
    for name, breaker, expect in (
            ("guest results missing", lambda r: shutil.rmtree(os.path.join(r, "guest")),
             "the guest part left no results"),
            ("native runs all failed", lambda r: open(os.path.join(r, "native.jsonl"), "w").write(
                '{"config": "trap-fused", "bdev": "null", "perf": null, "error": "x"}\n'),
             "the native part left no results")):
        tmp = tempfile.mkdtemp()
        try:
            shutil.copytree(os.path.join(d, "raw"), os.path.join(tmp, "raw"), symlinks=True)
            breaker(os.path.join(tmp, "raw"))
            p = subprocess.run([sys.executable, os.path.join(HERE, "bench_report.py"), tmp],
                               capture_output=True, text=True, timeout=120)
            c.check("report refused with %s" % name, p.returncode == 1 and expect in p.stdout,
                    "exit %d: %s" % (p.returncode, p.stdout[-300:]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    c = Checker()
    check_report(c, sys.argv[1])
    check_refusals(c, sys.argv[1])
    print("%d passed, %d failed" % (c.passed, c.failed))
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
