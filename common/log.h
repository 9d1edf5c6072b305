/* common/log.h - levelled logging with components, DOCA-style numeric levels. */
#ifndef NVME_EMU_COMMON_LOG_H
#define NVME_EMU_COMMON_LOG_H

#include <stdatomic.h>
#include <stdarg.h>
#include <stdbool.h>

enum log_level {
	LOG_LEVEL_DISABLE = 10,
	LOG_LEVEL_CRIT = 20,
	LOG_LEVEL_ERROR = 30,
	LOG_LEVEL_WARN = 40,
	LOG_LEVEL_INFO = 50,
	LOG_LEVEL_DEBUG = 60,
	LOG_LEVEL_TRACE = 70,
};

/* Global threshold; messages with a level above it are dropped. Default
 * LOG_LEVEL_INFO, or $NVME_EMU_LOG_LEVEL (a number or a name) at first use.
 * Thread-safe. */
void log_set_level(int level);
int log_get_level(void);

/* Parses "info", "debug", ... or a number 10..70. Returns -1 if invalid. */
int log_level_parse(const char *text);
const char *log_level_name(int level);

/* Writes one line to stderr: "<time> <LEVEL> <component>: message", or, when stderr is the
 * systemd journal ($JOURNAL_STREAM), "<priority>component: message" (sd-daemon(3) prefixes, the
 * journal stamps the time). */
void log_msg(int level, const char *component, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void log_vmsg(int level, const char *component, const char *fmt, va_list ap);

/* The syslog priority of a level (CRIT 2, ERROR 3, WARN 4, INFO 6, DEBUG and TRACE 7). */
int log_syslog_priority(int level);
/* Looks at $JOURNAL_STREAM and stderr again at the next line (tests; stderr redirected). */
void log_journal_reset(void);

/* The threshold (0 until the first log_get_level reads $NVME_EMU_LOG_LEVEL): read inline, since
 * every command's trace line asks for it. */
extern atomic_int log_threshold;
static inline bool log_enabled(int level)
{
	int threshold = atomic_load_explicit(&log_threshold, memory_order_relaxed);

	return level <= (threshold ? threshold : log_get_level());
}

/* Per-component flags (SPDK's log_set_flag / log_clear_flag / log_get_flags): a component whose
 * flag is set logs its debug and trace lines whatever the level. The components are fixed:
 * log_flag_names lists them. log_flag_set returns 0 or -ENOENT (no such component). Thread-safe;
 * with no flag set the check costs one relaxed load. */
int log_flag_set(const char *component, bool on);
bool log_flag_get(const char *component);
const char *const *log_flag_names(unsigned int *n);
bool log_flag_enabled_slow(const char *component);
extern int log_flags_any;
static inline bool log_flag_enabled(const char *component)
{
	return __atomic_load_n(&log_flags_any, __ATOMIC_RELAXED) && log_flag_enabled_slow(component);
}
static inline bool log_enabled_for(int level, const char *component)
{
	return log_enabled(level) || log_flag_enabled(component);
}

#define LOG_CRIT(comp, ...)  log_msg(LOG_LEVEL_CRIT, comp, __VA_ARGS__)
#define LOG_ERR(comp, ...)   log_msg(LOG_LEVEL_ERROR, comp, __VA_ARGS__)
#define LOG_WARN(comp, ...)  log_msg(LOG_LEVEL_WARN, comp, __VA_ARGS__)
#define LOG_INFO(comp, ...)  log_msg(LOG_LEVEL_INFO, comp, __VA_ARGS__)
#define LOG_DBG(comp, ...)   do { if (log_enabled_for(LOG_LEVEL_DEBUG, comp)) \
	log_msg(LOG_LEVEL_DEBUG, comp, __VA_ARGS__); } while (0)
#define LOG_TRACE(comp, ...) do { if (log_enabled_for(LOG_LEVEL_TRACE, comp)) \
	log_msg(LOG_LEVEL_TRACE, comp, __VA_ARGS__); } while (0)

/* Guest-caused errors: at most `burst` lines per second per call site, then
 * a count of what was suppressed. */
struct log_ratelimit {
	long window_start_s;
	unsigned int printed;
	unsigned int suppressed;
};
bool log_ratelimit_ok(struct log_ratelimit *rl, unsigned int burst);

#define LOG_GUEST_ERR(comp, ...) do { \
	static struct log_ratelimit rl_; \
	if (log_ratelimit_ok(&rl_, 10)) \
		log_msg(LOG_LEVEL_WARN, comp, __VA_ARGS__); \
} while (0)

#endif
