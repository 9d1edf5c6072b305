# tests/integration/service: the daemon as a service (docs/service.md). For both builds (the
# build's directory as argument): the metrics endpoint against hostile HTTP clients and promtool,
# sd_notify, the watchdog, reloads and the test-only faults with the script as the service
# manager, the man pages against --help and the parser, make install and uninstall.
SCRIPT_TESTS += tests/integration/service/metrics_http.py tests/integration/service/notify_reload.py \
		tests/integration/service/man-pages.sh
# Once (make test's "service" group): the Debian package (make deb, Depends, hardening, lintian)
# and a real Prometheus server's figures against nvme-emu-perf's.
SERVICE_TESTS += tests/integration/service/deb.sh tests/integration/service/prometheus.py
