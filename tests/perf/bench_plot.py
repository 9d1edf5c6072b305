"""The bench report's plots: writes a gnuplot script per plot (data inline, so each
plots/NAME.gp reruns alone: gnuplot NAME.gp) and runs gnuplot to make plots/NAME.png. A plot that
gnuplot warns about (no valid points...) is an error, so the report cannot silently lose one."""
import os
import subprocess

from bench_data import GUEST_LABELS, NATIVE_LABELS

TERMINAL = 'set terminal pngcairo size 960,600 font "sans,10"\nset termoption noenhanced\n'


def plot_num(v):
    return "NaN" if v is None else "%.6g" % v


def plot_quote(s):
    return '"%s"' % s.replace('"', "'")


class Plotter:
    def __init__(self, bench_dir):
        self.dir = os.path.join(bench_dir, "plots")
        os.makedirs(self.dir, exist_ok=True)
        self.made = []  # (file name, caption)
        self.errors = []

    def run(self, name, caption, script):
        gp = os.path.join(self.dir, name + ".gp")
        png = name + ".png"
        with open(gp, "w", encoding="utf-8") as f:
            f.write(TERMINAL + "set output %s\n" % plot_quote(png) + script)
        try:
            p = subprocess.run(["gnuplot", name + ".gp"], cwd=self.dir, capture_output=True,
                               text=True, timeout=60)
        except (OSError, subprocess.SubprocessError) as e:
            self.errors.append("%s: gnuplot did not run: %s" % (name, e))
            return
        err = p.stderr.strip()
        path = os.path.join(self.dir, png)
        if p.returncode or "warning" in err.lower() or "error" in err.lower():
            self.errors.append("%s: gnuplot: %s" % (name, err or "exit %d" % p.returncode))
        elif not os.path.isfile(path) or os.path.getsize(path) < 1000:
            self.errors.append("%s: gnuplot wrote no image" % name)
        else:
            self.made.append((png, caption))

    def lines(self, name, caption, title, xlabel, ylabel, series, logy=False):
        """series: [(title, [(x, Stat)][, gnuplot style])]; medians joined, min..max as error
        bars, x in log2."""
        series = [(t[0], [(x, s) for x, s in t[1] if s], t[2] if len(t) > 2 else "")
                  for t in series]
        series = [t for t in series if t[1]]
        if not series:
            self.errors.append("%s: no data" % name)
            return
        script = ""
        for i, (_, pts, _) in enumerate(series):
            script += "$d%d << EOD\n" % i
            script += "".join("%s %s %s %s\n" % (x, plot_num(s.med), plot_num(s.lo),
                                                 plot_num(s.hi)) for x, s in pts)
            script += "EOD\n"
        xs = sorted({x for _, pts, _ in series for x, _ in pts})
        script += "set title %s\nset xlabel %s\nset ylabel %s\n" % (
            plot_quote(title), plot_quote(xlabel), plot_quote(ylabel))
        script += "set logscale x 2\nset xtics (%s)\n" % ", ".join("%s %s" % (plot_quote(str(x)), x)
                                                                  for x in xs)
        script += "set xrange [%g:%g]\n" % (xs[0] / 1.5, xs[-1] * 1.5)
        script += "set logscale y\nset format y '%g'\n" if logy else \
            "set yrange [0:*]\nset format y '%.1s%c'\n"
        script += "set grid\nset key outside right top\n"
        script += "plot " + ", \\\n     ".join(
            "$d%d using 1:2:3:4 with yerrorlines lw 2 pt 7 %s title %s" % (i, style, plot_quote(t))
            for i, (t, _, style) in enumerate(series)) + "\n"
        self.run(name, caption, script)

    def bars(self, name, caption, title, ylabel, groups, series, logy=False):
        """groups: x categories; series: [(title, [Stat or None per group])]; clustered bars with
        min..max error bars."""
        series = [(t, vals) for t, vals in series if any(v for v in vals)]
        keep = [i for i, _ in enumerate(groups) if any(vals[i] for _, vals in series)]
        if not series or not keep:
            self.errors.append("%s: no data" % name)
            return
        script = "$d << EOD\n"
        for i in keep:
            row = [plot_quote(groups[i])]
            for _, vals in series:
                s = vals[i]
                row += [plot_num(s.med), plot_num(s.lo), plot_num(s.hi)] if s else ["NaN"] * 3
            script += " ".join(row) + "\n"
        script += "EOD\n"
        script += "set title %s\nset ylabel %s\n" % (plot_quote(title), plot_quote(ylabel))
        script += "set style data histogram\nset style histogram errorbars gap 1 lw 1\n"
        script += "set style fill solid 0.7 border -1\nset boxwidth 0.9\n"
        script += "set xtics rotate by -20 nomirror\nset grid ytics\nset key outside right top\n"
        script += "set logscale y\nset format y '%g'\n" if logy else \
            "set yrange [0:*]\nset format y '%.1s%c'\n"
        script += "plot " + ", \\\n     ".join(
            "$d using %d:%d:%d%s title %s" % (2 + 3 * j, 3 + 3 * j, 4 + 3 * j,
                                              ":xtic(1)" if j == 0 else "", plot_quote(t))
            for j, (t, _) in enumerate(series)) + "\n"
        self.run(name, caption, script)


def plot_native(pl, native):
    """IOPS and MiB/s vs queue depth per target, latency percentiles, server CPU per I/O."""
    for cfg in native.configs():
        for wl, size, metric, ylabel, what in (
                ("randread", 4096, "iops", "IOPS", "4 KiB random read IOPS"),
                ("write", 131072, "mib_s", "MiB/s", "128 KiB write MiB/s")):
            series = []
            for bdev in ("null", "malloc"):
                for nq in (1, 2, 4, 8):
                    keys = native.keys(config=cfg, bdev=bdev, workload=wl, size=size, queues=nq,
                                       mode="poll")
                    if keys:
                        series.append(("%s, %d queue%s" % (bdev, nq, "s" if nq > 1 else ""),
                                       [(k[4], native.stat(k, metric)) for k in keys]))
            tag = "iops" if wl == "randread" else "write"
            if not series:
                continue  # a configuration that runs only some points (two poll groups)
            pl.lines("native-%s-vs-qd-%s" % (tag, cfg),
                     "native %s vs queue depth, %s" % (what, NATIVE_LABELS.get(cfg, cfg)),
                     "nvme-emu-perf -> nvme-emu (%s): %s vs queue depth per target" %
                     (NATIVE_LABELS.get(cfg, cfg), what),
                     "queue depth per queue pair", ylabel, series)
    series = []
    for ci, cfg in enumerate(native.configs()):
        keys = native.keys(config=cfg, bdev="null", workload="randread", size=4096, queues=1,
                           mode="poll")
        # Colour: the percentile; dashes: the configuration.
        for metric, label, colour in (("p50", "p50", "#1a9850"), ("p99", "p99", "#f46d43"),
                                      ("p99_9", "p99.9", "#a50026")):
            series.append(("%s %s" % (cfg, label), [(k[4], native.stat(k, metric))
                                                    for k in keys],
                           "lc rgb '%s' dt %d" % (colour, ci + 1)))
    pl.lines("native-latency", "native latency percentiles (null bdev, 4 KiB random read, "
             "1 queue pair, polled)", "nvme-emu-perf -> nvme-emu: latency percentiles, null "
             "bdev, 4 KiB random read, 1 queue pair", "queue depth", "latency (us)", series,
             logy=True)
    series = []
    for cfg in native.configs():
        for bdev in ("null", "malloc"):
            keys = native.keys(config=cfg, bdev=bdev, workload="randread", size=4096, queues=1,
                               mode="poll")
            series.append(("%s %s" % (cfg, bdev), [(k[4], native.stat(k, "server_us_io"))
                                                   for k in keys]))
    pl.lines("native-cpu-per-io", "server CPU per I/O (4 KiB random read, 1 queue pair)",
             "nvme-emu server CPU time per I/O, 4 KiB random read, 1 queue pair (one poll group)",
             "queue depth", "server CPU us per I/O", series, logy=True)


def plot_guest(pl, guest):
    devices = guest.devices()
    names = [GUEST_LABELS.get(d, d) for d in devices]
    accel = guest.info.get("accel", "?")
    series = []
    for d in devices:
        pts = []
        for w in guest.workloads():
            if w.startswith("randread-4k-qd"):
                pts.append((int(w.split("qd")[1]), guest.stat(d, w, "iops")))
        series.append((GUEST_LABELS.get(d, d), pts))
    pl.lines("guest-iops-vs-qd", "guest 4 KiB random read IOPS vs queue depth per device",
             "fio in one %s guest: 4 KiB random read IOPS vs queue depth" % accel,
             "fio iodepth", "IOPS", series)
    lat_w = "randread-4k-qd1"
    if lat_w in guest.workloads():
        pl.bars("guest-latency", "guest latency percentiles (submission to completion), 4 KiB "
                "random read QD1", "fio in one %s guest: latency (submission to completion), "
                "4 KiB random read QD1" % accel,
                "latency (us)", names,
                [(lbl, [guest.stat(d, lat_w, m) for d in devices])
                 for m, lbl in (("p50", "p50"), ("p99", "p99"), ("p99_9", "p99.9"))], logy=True)
    else:
        pl.errors.append("guest-latency: no %s results" % lat_w)
    pl.bars("guest-cpu-per-io", "host CPU per I/O in the guest runs (QEMU + the device's daemon)",
            "host CPU per I/O (QEMU process + the device's nvme-emu daemon), %s guest" % accel,
            "host CPU us per I/O", names,
            [(w, [guest.stat(d, w, "host_us_io") for d in devices]) for w in guest.workloads()])


def plot_dpa(pl, dpa):
    keys = dpa.keys()
    groups = ["%s %s %s" % (k[0], k[1], "fused" if k[2] == 0 else "%d hart" % k[2])
              for k in keys]
    pl.bars("dpa-latency", "DPA model: doorbell-to-Arm latency (hot and idle medians)",
            "DPA model: doorbell write -> message at the Arm side", "latency (us)", groups,
            [(lbl, [dpa.stat(k, m) for k in keys])
             for m, lbl in (("hot_med_us", "hot median"), ("hot_p99_us", "hot p99"),
                            ("idle_med_us", "idle median"), ("idle_p99_us", "idle p99"))],
            logy=True)


def bench_plots(bench_dir, native, guest, dpa):
    """Makes every plot it has data for; returns the Plotter (made, errors)."""
    pl = Plotter(bench_dir)
    if native.runs:
        plot_native(pl, native)
    if guest.runs:
        plot_guest(pl, guest)
    if dpa.runs:
        plot_dpa(pl, dpa)
    return pl
