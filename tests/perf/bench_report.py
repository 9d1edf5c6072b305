#!/usr/bin/env python3
"""Writes the `make bench` report: BENCH_DIR/report.md (date, machine, KVM or TCG, tables with
medians, min..max spread and ratios to the peers) and its plots (BENCH_DIR/plots/*.png, via
bench_plot.py and gnuplot) from the raw results of tests/perf/bench.sh (BENCH_DIR/raw), then
prints the summary table. Usage: bench_report.py BENCH_DIR. Exit status 1 when a part that ran
left no results or a plot could not be made.
"""
import os
import statistics
import sys

# The modules next to this script; no __pycache__ left in the source tree.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_data import (GUEST_DEFAULT, GUEST_LABELS, GUEST_PEERS, NATIVE_DEFAULT,  # noqa: E402
                        NATIVE_LABELS, bench_load)
from bench_plot import bench_plots  # noqa: E402


def fmt_si(v):
    if v is None:
        return "-"
    if abs(v) >= 1e6:
        return "%.2fM" % (v / 1e6)
    if abs(v) >= 1e4:
        return "%.0fk" % (v / 1e3)
    if abs(v) >= 1e3:
        return "%.1fk" % (v / 1e3)
    return "%.0f" % v


def fmt_us(v):
    if v is None:
        return "-"
    return "%.2f" % v if v < 10 else "%.1f" % v if v < 100 else "%.0f" % v


def fmt_gb(v):
    return "-" if v is None else "%.2f" % v


def fmt_ratio(v):
    return "-" if v is None else "%.2f" % v


def fmt_pct(v):
    return "-" if v is None else "%.2f%%" % v


def cell(stat, fmt):
    """"median (min–max)" of a Stat; the median alone for one run; "-" for none."""
    if not stat:
        return "-"
    if stat.n == 1:
        return fmt(stat.med)
    return "%s (%s–%s)" % (fmt(stat.med), fmt(stat.lo), fmt(stat.hi))


def ratio(a, b):
    if not a or not b or not b.med:
        return "-"
    return "%.2f" % (a.med / b.med)


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def wl_name(w):
    """randread-4k-qd32 -> "4 KiB random read QD32"; randread-4k-psync -> "4 KiB random read
    QD1, psync"."""
    rw, bs, qd = w.split("-")
    return "%s KiB %s %s" % (bs.rstrip("k"), "random read" if rw == "randread" else
                             "seq write", "QD1, psync" if qd == "psync" else "QD" + qd[2:])


def wl_metric(w):
    return ("mib_s", "MiB/s", fmt_si) if w.startswith("seqwrite") else ("iops", "IOPS", fmt_si)


class Report:
    def __init__(self, bench_dir):
        self.dir = bench_dir
        self.meta, self.native, self.guest, self.dpa, self.problems = bench_load(bench_dir)
        self.errors = []

    # --- guest ------------------------------------------------------------------------------
    def guest_best(self):
        """The nvme-emu configuration with the best geometric mean of IOPS ratios to QEMU NVMe."""
        g = self.guest
        scores = {}
        for d in g.devices():
            if d in GUEST_PEERS:
                continue
            rs = []
            for w in g.workloads():
                m = wl_metric(w)[0]
                a, b = g.stat(d, w, m), g.stat("qemu-nvme", w, m)
                if a and b and b.med:
                    rs.append(a.med / b.med)
            if rs:
                scores[d] = statistics.geometric_mean(rs)
        if not scores:
            return None, None
        best = max(scores, key=scores.get)
        return best, scores[best]

    def guest_summary(self):
        g = self.guest
        best, score = self.guest_best()
        cols = [d for d in list(GUEST_PEERS) + [GUEST_DEFAULT] if d in g.devices()]
        if best and best not in cols:
            cols.append(best)
        header = ["guest, %s (median of runs, min–max)" % g.info.get("accel", "?")] + \
            [GUEST_LABELS.get(d, d) for d in cols] + \
            ["default / QEMU NVMe", "default / virtio-blk"]
        if best and best != GUEST_DEFAULT:
            header.append("%s / QEMU NVMe" % best)
        rows = []

        def row(label, metric, fmt, w):
            r = [label] + [cell(g.stat(d, w, metric), fmt) for d in cols]
            r += [ratio(g.stat(GUEST_DEFAULT, w, metric), g.stat(p, w, metric))
                  for p in GUEST_PEERS]
            if best and best != GUEST_DEFAULT:
                r.append(ratio(g.stat(best, w, metric), g.stat("qemu-nvme", w, metric)))
            rows.append(r)
        for w in g.workloads():
            metric, unit, fmt = wl_metric(w)
            row("%s, %s" % (wl_name(w), unit), metric, fmt, w)
        for w in ("randread-4k-qd1", "randread-4k-psync"):
            if w in g.workloads():
                row("%s, p50 latency us, submission to completion (lower is better)" %
                    wl_name(w), "p50", fmt_us, w)
        for w in ("randread-4k-qd32", "randread-4k-qd1"):
            if w in g.workloads():
                row("%s, host CPU us per I/O (lower is better)" % wl_name(w), "host_us_io",
                    fmt_us, w)
                break
        for w in ("randread-4k-qd32", "randread-4k-qd1"):
            if w in g.workloads() and g.stat(GUEST_DEFAULT, w, "guest_us_io"):
                row("%s, guest CPU us per I/O (the vCPUs bound a TCG guest)" % wl_name(w),
                    "guest_us_io", fmt_us, w)
                row("%s, guest interrupts per I/O" % wl_name(w), "guest_irq_io", fmt_ratio, w)
                break
        note = ""
        if best:
            note = ("Best nvme-emu configuration in this run (geometric mean of its IOPS ratios "
                    "to QEMU NVMe over the workloads): %s, %.2f.\n" % (best, score))
        return table(header, rows) + "\n" + note

    def guest_full(self):
        g = self.guest
        rows = []
        for w in g.workloads():
            metric = wl_metric(w)[0]
            for d in g.devices():
                s = g.stat(d, w, metric)
                if not s:
                    continue
                rows.append([wl_name(w), GUEST_LABELS.get(d, d), cell(g.stat(d, w, "iops"), fmt_si),
                             cell(g.stat(d, w, "mib_s"), fmt_si),
                             cell(g.stat(d, w, "p50"), fmt_us), cell(g.stat(d, w, "p99"), fmt_us),
                             cell(g.stat(d, w, "p99_9"), fmt_us),
                             cell(g.stat(d, w, "host_us_io"), fmt_us),
                             cell(g.stat(d, w, "daemon_us_io"), fmt_us) if d not in GUEST_PEERS
                             else "-", cell(g.stat(d, w, "guest_us_io"), fmt_us),
                             cell(g.stat(d, w, "guest_irq_io"), fmt_ratio), s.n,
                             ratio(s, g.stat("qemu-nvme", w, metric)),
                             ratio(s, g.stat("virtio-blk", w, metric))])
        text = table(["workload", "device", "IOPS", "MiB/s", "p50 us", "p99 us", "p99.9 us",
                      "host CPU us/IO", "daemon CPU us/IO", "guest CPU us/IO", "guest irqs/IO",
                      "runs", "ratio to QEMU NVMe",
                      "ratio to virtio-blk"], rows)
        idle = [[GUEST_LABELS.get(d, d), fmt_pct(g.idle_pct(d))] for d in g.devices()
                if g.idle_pct(d) is not None]
        if idle:
            text += ("\nIdle CPU of each nvme-emu daemon with the guest attached (its device "
                     "idle while the others were measured), percent of one core:\n\n")
            text += table(["daemon", "idle CPU"], idle)
        return text

    # --- native -----------------------------------------------------------------------------
    NATIVE_POINTS = [
        # label, (bdev, workload, size, depth, queues, mode), metric, fmt
        ("null 4 KiB random read QD1, 1 queue: IOPS", ("null", "randread", 4096, 1, 1, "poll"),
         "iops", fmt_si),
        ("null 4 KiB random read QD1, 1 queue: p50 latency us",
         ("null", "randread", 4096, 1, 1, "poll"), "p50", fmt_us),
        ("null 4 KiB random read QD32, 1 queue: IOPS", ("null", "randread", 4096, 32, 1, "poll"),
         "iops", fmt_si),
        ("null 4 KiB random read QD128, 1 queue: IOPS",
         ("null", "randread", 4096, 128, 1, "poll"), "iops", fmt_si),
        ("null 4 KiB random read QD128, 4 queues: IOPS",
         ("null", "randread", 4096, 128, 4, "poll"), "iops", fmt_si),
        ("null 4 KiB random read QD32, 1 queue: server CPU us per I/O",
         ("null", "randread", 4096, 32, 1, "poll"), "server_us_io", fmt_us),
        ("malloc 4 KiB random read QD32, 1 queue: IOPS",
         ("malloc", "randread", 4096, 32, 1, "poll"), "iops", fmt_si),
        ("malloc 128 KiB write QD32, 1 queue: GB/s", ("malloc", "write", 131072, 32, 1, "poll"),
         "gb_s", fmt_gb),
        ("null 128 KiB write QD8, 1 queue: GB/s", ("null", "write", 131072, 8, 1, "poll"),
         "gb_s", fmt_gb),
        ("null 4 KiB random read QD32, interrupts: IOPS per server CPU-second",
         ("null", "randread", 4096, 32, 1, "irq"), "iops_per_server_cpu_s", fmt_si),
    ]

    def native_summary(self):
        n = self.native
        # The two-poll-group configuration runs only the multi-queue points: it has its columns in
        # the scaling table, none here (every point below is one queue).
        cfgs = [c for c in n.configs() if not c.endswith("-2pg")]
        header = ["nvme-emu-perf -> nvme-emu (median of runs, min–max)"] + \
            [NATIVE_LABELS.get(c, c) for c in cfgs] + \
            ["%s / default" % c for c in cfgs if c != NATIVE_DEFAULT]
        rows = []
        for label, pt, metric, fmt in self.NATIVE_POINTS:
            stats = [n.stat((c,) + pt, metric) for c in cfgs]
            if not any(stats):
                continue
            base = n.stat((NATIVE_DEFAULT,) + pt, metric)
            rows.append([label] + [cell(s, fmt) for s in stats] +
                        [ratio(s, base) for c, s in zip(cfgs, stats) if c != NATIVE_DEFAULT])
        for bdev in ("null", "malloc"):
            best = self.native_best(bdev, "randread", 4096, "iops")
            if best:
                k, s = best
                rows.append(["%s 4 KiB random read, best point: IOPS" % bdev,
                             "%s at QD%d x %d queue(s), %s" % (cell(s, fmt_si), k[4], k[5], k[0])]
                            + [""] * (len(header) - 2))
        return table(header, rows)

    def native_best(self, bdev, workload, size, metric):
        """(key, Stat) of the highest median of metric over every point of bdev/workload."""
        best = None
        for k in self.native.keys(bdev=bdev, workload=workload, size=size, mode="poll"):
            s = self.native.stat(k, metric)
            if s and (best is None or s.med > best[1].med):
                best = (k, s)
        return best

    def native_full(self):
        n = self.native
        rows = []
        for k in n.keys():
            cfg, bdev, wl, size, qd, nq, mode = k
            base = n.stat((NATIVE_DEFAULT,) + k[1:], "iops")
            s = n.stat(k, "iops")
            rows.append([bdev, "%s %s" % ("4 KiB" if size == 4096 else "%d KiB" % (size // 1024),
                                          wl), "%d x %d" % (nq, qd),
                         "interrupts" if mode == "irq" else "polled", cfg, cell(s, fmt_si),
                         cell(n.stat(k, "mib_s"), fmt_si), cell(n.stat(k, "p50"), fmt_us),
                         cell(n.stat(k, "p99"), fmt_us), cell(n.stat(k, "p99_9"), fmt_us),
                         cell(n.stat(k, "server_us_io"), fmt_us),
                         cell(n.stat(k, "client_us_io"), fmt_us),
                         cell(n.stat(k, "server_cores"), fmt_gb), s.n, ratio(s, base)])
        return table(["bdev", "workload", "queues x QD", "completions", "config", "IOPS", "MiB/s",
                      "p50 us", "p99 us", "p99.9 us", "server CPU us/IO", "client CPU us/IO",
                      "server cores busy", "runs", "IOPS ratio to default"], rows)

    def native_scaling(self):
        """The default configuration at 1, 2, 4 and 8 queue pairs on one poll group: IOPS of 4 KiB
        random reads, GB/s of 128 KiB writes, per bdev and depth, with the ratios to one queue;
        and the same reads on two poll groups (two cores) where that configuration ran."""
        n = self.native
        two = "mmap-fused-2pg"
        queues = (1, 2, 4, 8)
        rows = []
        for bdev in ("null", "malloc"):
            for wl, size, name, metric, fmt in (("randread", 4096, "4 KiB random read IOPS",
                                                 "iops", fmt_si),
                                                ("write", 131072, "128 KiB write GB/s", "gb_s",
                                                 fmt_gb)):
                depths = sorted({k[4] for k in n.keys(config=NATIVE_DEFAULT, bdev=bdev,
                                                      workload=wl, size=size, mode="poll")})
                for qd in depths:
                    st = [n.stat((NATIVE_DEFAULT, bdev, wl, size, qd, q, "poll"), metric)
                          for q in queues]
                    pg2 = [n.stat((two, bdev, wl, size, qd, q, "poll"), metric) for q in queues]
                    if sum(1 for x in st + pg2 if x) < 2:
                        continue
                    rows.append([bdev, "%s, QD%d per queue" % (name, qd)] +
                                [cell(x, fmt) for x in st] +
                                [ratio(x, st[0]) for x in st[1:]] +
                                [cell(x, fmt) for x in pg2[1:]])
        if not rows:
            return ""
        return table(["queue scaling (%s)" % NATIVE_LABELS.get(NATIVE_DEFAULT, NATIVE_DEFAULT),
                      "workload"] + ["%d queue%s" % (q, "s" if q > 1 else "") for q in queues] +
                     ["%d / 1" % q for q in queues[1:]] +
                     ["2 poll groups, %d queues" % q for q in queues[1:]], rows)

    # --- dpa --------------------------------------------------------------------------------
    def dpa_full(self):
        d = self.dpa
        rows = []
        for k in d.keys():
            rows.append([k[0], k[1], "fused" if k[2] == 0 else str(k[2]),
                         cell(d.stat(k, "hot_med_us"), fmt_us), cell(d.stat(k, "hot_p99_us"),
                                                                     fmt_us),
                         cell(d.stat(k, "idle_med_us"), fmt_us),
                         cell(d.stat(k, "idle_p99_us"), fmt_us),
                         cell(d.stat(k, "notif_per_s"), fmt_si),
                         cell(d.stat(k, "idle_cpu_pct"), fmt_pct), d.stat(k, "hot_med_us").n])
        return table(["bench", "doorbells", "harts", "hot median us", "hot p99 us",
                      "idle median us", "idle p99 us", "notifications/s", "idle CPU", "runs"],
                     rows)

    # --- targets of issues 14 and 36 ---------------------------------------------------------
    def targets(self):
        rows = []

        def add(target, stat_text, ok):
            rows.append([target, stat_text, "-" if ok is None else "met" if ok else "not met"])
        for cfg in self.native.configs():
            if cfg.endswith("-2pg"):
                continue  # two server cores: the targets are per core
            b = None
            for k in self.native.keys(config=cfg, bdev="null", workload="randread", size=4096,
                                      mode="poll"):
                s = self.native.stat(k, "iops")
                if s and (b is None or s.med > b[1].med):
                    b = (k, s)
            if b:
                add("native null 4 KiB random read >= 4.5M IOPS on one server core (%s)" % cfg,
                    "%s (QD%d x %d)" % (fmt_si(b[1].med), b[0][4], b[0][5]), b[1].med >= 4.5e6)
            s = self.native.stat((cfg, "null", "randread", 4096, 1, 1, "poll"), "p50")
            if s:
                add("native QD1 p50 latency <= 5 us polled (%s)" % cfg, fmt_us(s.med) + " us",
                    s.med <= 5)
            b = None
            for k in self.native.keys(config=cfg, bdev="malloc", workload="randread",
                                      size=4096, mode="poll"):
                s = self.native.stat(k, "iops")
                if s and (b is None or s.med > b[1].med):
                    b = (k, s)
            if b:
                add("native malloc 4 KiB random read >= 750k IOPS (%s)" % cfg,
                    fmt_si(b[1].med), b[1].med >= 7.5e5)
            b = None
            for k in self.native.keys(config=cfg, bdev="malloc", workload="write", size=131072,
                                      mode="poll"):
                s = self.native.stat(k, "gb_s")
                if s and (b is None or s.med > b[1].med):
                    b = (k, s)
            if b:
                add("native malloc 128 KiB writes >= 5 GB/s (%s)" % cfg,
                    "%s GB/s" % fmt_gb(b[1].med), b[1].med >= 5)
        g = self.guest
        for d in [x for x in g.devices() if x not in GUEST_PEERS]:
            # Issue 36's guest targets. QD1 latency must hold in every run, not only the median:
            # the worst run's ratio is the one judged.
            for w, metric, goal, better, what in (
                    ("randread-4k-qd1", "p50", 0.7, "lower", "QD1 p50 latency (libaio), every run"),
                    ("randread-4k-psync", "p50", 0.7, "lower",
                     "QD1 p50 latency (psync), every run"),
                    ("randread-4k-qd32", "iops", 1.8, "higher", "4 KiB random read QD32 IOPS"),
                    ("randread-4k-qd128", "iops", 1.5, "higher", "4 KiB random read QD128 IOPS"),
                    ("seqwrite-128k-qd8", "mib_s", 1.4, "higher", "128 KiB seq write")):
                if better == "lower":
                    rs = g.run_ratios(d, "qemu-nvme", w, metric)
                    if rs:
                        add("guest %s <= %.1fx QEMU NVMe (%s)" % (what, goal, d),
                            "worst %.2fx (runs %s)" % (max(rs), ", ".join("%.2f" % r
                                                                          for r in rs)),
                            max(rs) <= goal)
                    continue
                a, b = g.stat(d, w, metric), g.stat("qemu-nvme", w, metric)
                if a and b and b.med:
                    r = a.med / b.med
                    add("guest %s >= %.1fx QEMU NVMe (%s)" % (what, goal, d), "%.2fx" % r,
                        r >= goal)
            idle = g.idle_pct(d)
            if idle is not None:
                add("idle daemon < 1%% of a core with a guest attached (%s)" % d,
                    fmt_pct(idle), idle < 1)
        return table(["target (issues 14 and 36)", "measured (median)", "status"], rows)

    # --- the whole report -------------------------------------------------------------------
    def header(self):
        m, gi = self.meta, self.guest.info
        accel = gi.get("accel")
        lines = ["# nvme-emu benchmark report", ""]
        if m.get("quick"):
            lines += ["**BENCH_QUICK=1: a pipeline check (one short run of a few points), not "
                      "figures to quote.**", ""]
        lines += [
            "- Date: %s (%s)" % (m.get("date", "?"), m.get("date_utc", "?")),
            "- Machine: %s, %s CPUs, %s GiB RAM, %s, kernel %s" % (
                m.get("cpu", "?"), m.get("cpus", "?"), m.get("mem_gib", "?"), m.get("os", "?"),
                m.get("kernel", "?")),
            "- Load average (1/5/15 min) at start %s, at end %s: the machine is shared, other "
            "jobs ran meanwhile, so figures are noisy; each figure is the median of its runs "
            "with the spread (min–max) beside it" % (
                "/".join("%.2f" % x for x in m.get("load_start", [])) or "?",
                "/".join("%.2f" % x for x in m.get("load_end", [])) or "?"),
            "- Guest accelerator: **%s**%s" % (
                accel or "not run", " (no working KVM here: the guest's vCPUs are emulated, "
                "and they, not the devices, bound the guest figures)" if accel == "TCG" else ""),
            "- Tree: %s%s; runs per point: %s; whole bench %s s" % (
                m.get("commit", "?"), " (with local changes)" if m.get("dirty") else "",
                m.get("runs", "?"), m.get("seconds", "?")),
        ]
        if gi:
            lines.append("- Guest: QEMU %s, %s vCPUs, kernel %s, %s; fio jobs of %g s after a "
                         "%g s ramp" % (gi.get("qemu", "?").replace("QEMU emulator version ", ""),
                                        gi.get("guest_cpus", "?"), gi.get("guest_kernel", "?"),
                                        gi.get("fio", "?"), gi.get("runtime_s", 0),
                                        gi.get("ramp_s", 0)))
        if self.native.seconds:
            lines.append("- Native: nvme-emu-perf and nvme-emu share the host's cores; %s s "
                         "per point; the daemon has one poll group (one server core)" %
                         self.native.seconds)
        return "\n".join(lines) + "\n"

    def dpa_summary(self):
        d = self.dpa
        rows = []
        for k in d.keys():
            if k[0] != "dpa-bench-hw":
                continue
            rows.append(["%s doorbells, %s" % (k[1], "DPA fused" if k[2] == 0 else
                                                "%d DPA hart" % k[2]),
                         cell(d.stat(k, "hot_med_us"), fmt_us),
                         cell(d.stat(k, "idle_med_us"), fmt_us),
                         cell(d.stat(k, "notif_per_s"), fmt_si),
                         cell(d.stat(k, "idle_cpu_pct"), fmt_pct)])
        if not rows:
            return ""
        return table(["DPA model over vfio-user (dpa-bench-hw)", "hot median us",
                      "idle-to-awake median us", "notifications/s", "idle CPU"], rows)

    def summary(self):
        parts = []
        if self.guest.runs:
            parts.append(self.guest_summary())
        if self.native.runs:
            parts.append(self.native_summary())
        if self.dpa.runs:
            parts.append(self.dpa_summary())
        return "\n".join(p for p in parts if p)

    def write(self):
        parts = self.meta.get("parts", ["native", "guest", "dpa"])
        for name, obj in (("native", self.native), ("guest", self.guest), ("dpa", self.dpa)):
            if name in parts and not obj.runs:
                self.errors.append("the %s part left no results" % name)
        pl = bench_plots(self.dir, self.native, self.guest, self.dpa)
        self.errors += pl.errors
        md = [self.header(), "## Summary\n", self.summary()]
        md.append("## Targets\n\nStatus against the targets issue 14 (native) and issue 36 "
                  "(guest, against QEMU's NVMe in the same guest) set (SPDK's 4.5M IOPS is "
                  "SPDK's published figure on a similar machine, not measured here; the same-run "
                  "SPDK comparison is its own section when SPDK_DIR is set).\n\n" +
                  self.targets())
        if self.native.runs:
            md.append("## Native: nvme-emu-perf -> nvme-emu\n\nEach nvme-emu configuration is "
                      "its own daemon (null or malloc bdev of %s; malloc written once before), "
                      "measured in rotating order. CPU per I/O is CPU time over I/Os; server "
                      "cores busy is the daemon's CPU time over the run's time.\n\n" %
                      (self.native.bdev_size or "?") + self.native_full())
            scaling = self.native_scaling()
            if scaling:
                md.append("### Queue scaling\n\nThe default configuration with 1, 2 and 4 I/O "
                          "queue pairs (one nvme-emu-perf thread, one poll group: one server "
                          "core), each queue at the depth shown.\n\n" + scaling)
        if self.guest.runs:
            md.append("## Guest: nvme-emu vs QEMU's NVMe and virtio-blk in one guest\n\nOne guest "
                      "(2 vCPUs, 1 GiB) with QEMU's NVMe device and a virtio-blk disk (both on "
                      "QEMU's null-co driver) and one nvme-emu daemon (null bdev) per "
                      "configuration; fio (libaio, direct) runs each workload on each device in "
                      "rotating order. Latencies are fio's total latencies (submission to completion, "
                      "`lat_percentiles`). Host CPU per "
                      "I/O is the CPU time of the QEMU process plus the device's own daemon "
                      "during the job (after the ramp) over its I/Os.\n\n" + self.guest_full())
        if self.dpa.runs:
            md.append("## DPA model\n\n`dpa-bench` (the DPA model over an in-memory fake of hw/) "
                      "and `dpa-bench-hw` (over the real device and vfio-user socket): doorbell "
                      "write to message at the Arm side, hot (back to back) and idle (1 ms "
                      "apart); notifications per second; idle CPU.\n\n" + self.dpa_full())
        backends = os.path.join(self.dir, "raw", "backends.md")
        if "backends" in parts and os.path.exists(backends):
            # backend-bench.sh writes its own section (a level-1 title of its own).
            md.append("#" + open(backends, encoding="utf-8").read())
        elif "backends" in parts:
            self.errors.append("the backends part left no results")
        cluster = os.path.join(self.dir, "raw", "cluster.md")
        if "cluster" in parts and os.path.exists(cluster):
            # cluster-bench.sh writes its own section too.
            md.append("#" + open(cluster, encoding="utf-8").read())
        elif "cluster" in parts:
            self.errors.append("the cluster part left no results")
        spdk = os.path.join(self.dir, "raw", "spdk.md")
        if "spdk" in parts and os.path.exists(spdk):
            # spdk-peer-bench.py writes its own section too.
            md.append("#" + open(spdk, encoding="utf-8").read())
        elif "spdk" in parts:
            self.errors.append("the spdk part left no results")
        md.append("## Plots\n\n" + "".join("- `plots/%s`: %s\n" % (f, c) for f, c in pl.made) +
                  "\n" + "".join("![%s](plots/%s)\n\n" % (c, f) for f, c in pl.made))
        problems = self.problems + ["native: " + f for f in self.native.failures] + \
            ["guest: " + f for f in self.guest.failures] + \
            ["dpa: " + f for f in self.dpa.failures] + self.errors
        if problems:
            md.append("## Problems in this run\n\n" + "".join("- %s\n" % p for p in problems))
        path = os.path.join(self.dir, "report.md")
        with open(path, "w", encoding="utf-8") as f:
            f.write("\n".join(md))
        return path, pl


def main():
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    r = Report(sys.argv[1])
    path, pl = r.write()
    print()
    print(r.summary())
    print("report: %s; plots (%d): %s" % (path, len(pl.made),
                                          " ".join("plots/" + f for f, _ in pl.made)))
    for e in r.errors:
        print("bench report: %s" % e)
    return 1 if r.errors else 0


if __name__ == "__main__":
    sys.exit(main())
