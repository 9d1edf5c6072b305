/* common/log.c - levelled logging to stderr, with syslog priorities when stderr is the journal. */
#include "common/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

atomic_int log_threshold = 0; /* 0 = not yet initialised (log.h reads it inline) */

static const struct {
	int level;
	const char *name;
} log_names[] = {
	{ LOG_LEVEL_DISABLE, "disable" }, { LOG_LEVEL_CRIT, "critical" },
	{ LOG_LEVEL_ERROR, "error" },     { LOG_LEVEL_WARN, "warning" },
	{ LOG_LEVEL_INFO, "info" },       { LOG_LEVEL_DEBUG, "debug" },
	{ LOG_LEVEL_TRACE, "trace" },
};

int log_level_parse(const char *text)
{
	char *end;
	long v;

	if (!text || !*text)
		return -1;
	for (size_t i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (!strcasecmp(text, log_names[i].name))
			return log_names[i].level;
	if (!strcasecmp(text, "warn"))
		return LOG_LEVEL_WARN;
	if (!strcasecmp(text, "err"))
		return LOG_LEVEL_ERROR;
	v = strtol(text, &end, 10);
	if (*end || v < LOG_LEVEL_DISABLE || v > LOG_LEVEL_TRACE)
		return -1;
	return (int)v;
}

const char *log_level_name(int level)
{
	const char *name = "trace";

	for (size_t i = 0; i < sizeof(log_names) / sizeof(log_names[0]); i++)
		if (level >= log_names[i].level)
			name = log_names[i].name;
	return name;
}

void log_set_level(int level)
{
	if (level < LOG_LEVEL_DISABLE)
		level = LOG_LEVEL_DISABLE;
	if (level > LOG_LEVEL_TRACE)
		level = LOG_LEVEL_TRACE;
	atomic_store(&log_threshold, level);
}

/* stderr connected to the systemd journal: $JOURNAL_STREAM ("DEVICE:INODE", systemd.exec(5))
 * names the stream the manager gave the service, and stderr is still it (not redirected since).
 * Then each line starts with its syslog priority, "<3>" (sd-daemon(3)), which the journal keeps
 * as the entry's priority, and carries no time stamp (the journal has its own). -1: not looked
 * at yet. */
static int log_journal = -1;

static bool log_to_journal(void)
{
	int v = __atomic_load_n(&log_journal, __ATOMIC_RELAXED);

	if (v < 0) {
		const char *js = getenv("JOURNAL_STREAM");
		unsigned long long dev, ino;
		struct stat st;
		char tail;

		v = js && sscanf(js, "%llu:%llu%c", &dev, &ino, &tail) == 2 &&
		    !fstat(STDERR_FILENO, &st) && (unsigned long long)st.st_dev == dev &&
		    (unsigned long long)st.st_ino == ino;
		__atomic_store_n(&log_journal, v, __ATOMIC_RELAXED);
	}
	return v;
}

void log_journal_reset(void)
{
	__atomic_store_n(&log_journal, -1, __ATOMIC_RELAXED);
}

int log_syslog_priority(int level)
{
	if (level <= LOG_LEVEL_CRIT)
		return 2; /* LOG_CRIT */
	if (level <= LOG_LEVEL_ERROR)
		return 3; /* LOG_ERR */
	if (level <= LOG_LEVEL_WARN)
		return 4; /* LOG_WARNING */
	if (level <= LOG_LEVEL_INFO)
		return 6; /* LOG_INFO */
	return 7;	  /* LOG_DEBUG */
}

int log_get_level(void)
{
	int level = atomic_load_explicit(&log_threshold, memory_order_relaxed);

	if (level == 0) {
		level = log_level_parse(getenv("NVME_EMU_LOG_LEVEL"));
		if (level < 0)
			level = LOG_LEVEL_INFO;
		atomic_store(&log_threshold, level);
	}
	return level;
}

void log_vmsg(int level, const char *component, const char *fmt, va_list ap)
{
	static const char *tags[] = { "CRIT", "ERR", "WARN", "INFO", "DBG", "TRACE" };
	char line[1024];
	struct timespec ts;
	struct tm tm;
	int idx, n;

	if (level <= LOG_LEVEL_DISABLE || !log_enabled_for(level, component))
		return;
	idx = level / 10 - 2;
	if (idx < 0)
		idx = 0;
	if (idx > 5)
		idx = 5;
	if (log_to_journal()) {
		n = snprintf(line, sizeof(line), "<%d>%s: ", log_syslog_priority(level),
			     component ? component : "-");
	} else {
		clock_gettime(CLOCK_REALTIME, &ts);
		localtime_r(&ts.tv_sec, &tm);
		n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%06ld %-5s %s: ", tm.tm_hour,
			     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000, tags[idx],
			     component ? component : "-");
	}
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	/* One fputs per line so lines from threads do not interleave. */
	fprintf(stderr, "%s\n", line);
}

void log_msg(int level, const char *component, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, component, fmt, ap);
	va_end(ap);
}

bool log_ratelimit_ok(struct log_ratelimit *rl, unsigned int burst)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct timespec ts;
	bool ok;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	pthread_mutex_lock(&lock);
	if (ts.tv_sec != rl->window_start_s) {
		if (rl->suppressed)
			fprintf(stderr, "%s(%u similar messages suppressed)\n",
				log_to_journal() ? "<4>" : "", rl->suppressed);
		rl->window_start_s = ts.tv_sec;
		rl->printed = 0;
		rl->suppressed = 0;
	}
	ok = rl->printed < burst;
	if (ok)
		rl->printed++;
	else
		rl->suppressed++;
	pthread_mutex_unlock(&lock);
	return ok;
}

/* ---- per-component flags ---- */

static const char *const log_components[] = { "app", "rpc", "qmp", "bdev", "ctrlr",
					      "pcie", "hw",  "vfu", "dpa" };
#define LOG_NCOMP (sizeof(log_components) / sizeof(log_components[0]))
static int log_flags[LOG_NCOMP];
int log_flags_any;

static int log_flag_index(const char *component)
{
	for (unsigned int i = 0; component && i < LOG_NCOMP; i++)
		if (!strcmp(component, log_components[i]))
			return (int)i;
	return -1;
}

int log_flag_set(const char *component, bool on)
{
	int i = log_flag_index(component), any = 0;

	if (i < 0)
		return -ENOENT;
	__atomic_store_n(&log_flags[i], on, __ATOMIC_RELAXED);
	for (unsigned int j = 0; j < LOG_NCOMP; j++)
		any |= __atomic_load_n(&log_flags[j], __ATOMIC_RELAXED);
	__atomic_store_n(&log_flags_any, any, __ATOMIC_RELAXED);
	return 0;
}

bool log_flag_get(const char *component)
{
	int i = log_flag_index(component);

	return i >= 0 && __atomic_load_n(&log_flags[i], __ATOMIC_RELAXED);
}

bool log_flag_enabled_slow(const char *component)
{
	/* "dpa-nvme" and the like belong to their prefix's flag. */
	for (unsigned int i = 0; component && i < LOG_NCOMP; i++) {
		size_t n = strlen(log_components[i]);

		if (!strncmp(component, log_components[i], n) &&
		    (component[n] == 0 || component[n] == '-'))
			return __atomic_load_n(&log_flags[i], __ATOMIC_RELAXED);
	}
	return false;
}

const char *const *log_flag_names(unsigned int *n)
{
	*n = LOG_NCOMP;
	return log_components;
}
