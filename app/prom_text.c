/* app/prom_text.c - the Prometheus text exposition writer (see prom_text.h). */
#include "app/prom_text.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct prom_buf {
	char *data;
	size_t len, cap;
};

struct prom_fam {
	struct prom_doc *doc;
	char *name;
	char *help;
	enum prom_type type;
	struct prom_buf samples;
	struct prom_fam *next;
};

struct prom_doc {
	struct prom_fam *head, *tail;
	bool failed;
};

static bool prom_buf_reserve(struct prom_buf *b, size_t more)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *p;

	if (b->len + more + 1 <= b->cap)
		return true;
	while (cap < b->len + more + 1)
		cap *= 2;
	p = realloc(b->data, cap);
	if (!p)
		return false;
	b->data = p;
	b->cap = cap;
	return true;
}

static bool prom_buf_append(struct prom_buf *b, const char *s, size_t n)
{
	if (!prom_buf_reserve(b, n))
		return false;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return true;
}

static bool prom_buf_printf(struct prom_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static bool prom_buf_printf(struct prom_buf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0 || !prom_buf_reserve(b, (size_t)n))
		return false;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, b->cap - b->len, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return true;
}

struct prom_doc *prom_doc_create(void)
{
	return calloc(1, sizeof(struct prom_doc));
}

void prom_doc_destroy(struct prom_doc *d)
{
	if (!d)
		return;
	while (d->head) {
		struct prom_fam *f = d->head;

		d->head = f->next;
		free(f->name);
		free(f->help);
		free(f->samples.data);
		free(f);
	}
	free(d);
}

struct prom_fam *prom_fam(struct prom_doc *d, const char *name, enum prom_type type,
			  const char *help)
{
	struct prom_fam *f;

	for (f = d->head; f; f = f->next)
		if (!strcmp(f->name, name))
			return f;
	f = calloc(1, sizeof(*f));
	if (!f)
		goto out_fail;
	f->name = strdup(name);
	f->help = strdup(help);
	if (!f->name || !f->help) {
		free(f->name);
		free(f->help);
		free(f);
		goto out_fail;
	}
	f->doc = d;
	f->type = type;
	if (d->tail)
		d->tail->next = f;
	else
		d->head = f;
	d->tail = f;
	return f;

out_fail:
	d->failed = true;
	return NULL;
}

void prom_labels_reset(struct prom_labels *l)
{
	l->len = 0;
	l->text[0] = '\0';
	l->overflow = false;
}

void prom_label(struct prom_labels *l, const char *name, const char *value)
{
	char tmp[PROM_LABELS_MAX];
	const char *c;
	int head;
	size_t n;

	if (l->overflow)
		return;
	head = snprintf(tmp, sizeof(tmp), "%s%s=\"", l->len ? "," : "", name);
	if (head < 0 || (size_t)head >= sizeof(tmp)) {
		l->overflow = true;
		return;
	}
	n = (size_t)head;
	for (c = value; *c && n + 3 < sizeof(tmp); c++) {
		/* The format's three escapes; everything else (UTF-8 included) as it is. */
		if (*c == '\\' || *c == '"') {
			tmp[n++] = '\\';
			tmp[n++] = *c;
		} else if (*c == '\n') {
			tmp[n++] = '\\';
			tmp[n++] = 'n';
		} else {
			tmp[n++] = *c;
		}
	}
	if (*c || n + 2 > sizeof(tmp) || l->len + n + 2 > sizeof(l->text)) {
		l->overflow = true;
		return;
	}
	tmp[n++] = '"';
	memcpy(l->text + l->len, tmp, n);
	l->len += n;
	l->text[l->len] = '\0';
}

void prom_label_u64(struct prom_labels *l, const char *name, uint64_t value)
{
	char v[24];

	snprintf(v, sizeof(v), "%" PRIu64, value);
	prom_label(l, name, v);
}

void prom_format_double(double v, char *buf, size_t len)
{
	if (isnan(v))
		snprintf(buf, len, "NaN");
	else if (isinf(v))
		snprintf(buf, len, "%sInf", v > 0 ? "+" : "-");
	else
		snprintf(buf, len, "%.15g", v);
}

/* name[suffix]{labels[,extra]} value\n */
static void prom_line(struct prom_fam *f, const char *suffix, const struct prom_labels *l,
		      const char *extra, const char *value)
{
	bool braces = (l && l->len) || extra;
	bool ok;

	if (!f)
		return;
	if (l && l->overflow) {
		f->doc->failed = true;
		return;
	}
	ok = prom_buf_printf(&f->samples, "%s%s%s%s%s%s%s %s\n", f->name, suffix, braces ? "{" : "",
			     l && l->len ? l->text : "", l && l->len && extra ? "," : "",
			     extra ? extra : "", braces ? "}" : "", value);
	if (!ok)
		f->doc->failed = true;
}

void prom_u64(struct prom_fam *f, const struct prom_labels *l, uint64_t v)
{
	char val[24];

	snprintf(val, sizeof(val), "%" PRIu64, v);
	prom_line(f, "", l, NULL, val);
}

void prom_double(struct prom_fam *f, const struct prom_labels *l, double v)
{
	char val[32];

	prom_format_double(v, val, sizeof(val));
	prom_line(f, "", l, NULL, val);
}

void prom_histogram(struct prom_fam *f, const struct prom_labels *l, const double *le_seconds,
		    const uint64_t *counts, unsigned int n, double sum)
{
	uint64_t cum = 0;
	char le[48], val[32];

	for (unsigned int i = 0; i < n; i++) {
		char edge[32];

		cum += counts[i];
		prom_format_double(i + 1 == n ? INFINITY : le_seconds[i], edge, sizeof(edge));
		snprintf(le, sizeof(le), "le=\"%s\"", edge);
		snprintf(val, sizeof(val), "%" PRIu64, cum);
		prom_line(f, "_bucket", l, le, val);
	}
	prom_format_double(sum, val, sizeof(val));
	prom_line(f, "_sum", l, NULL, val);
	snprintf(val, sizeof(val), "%" PRIu64, cum);
	prom_line(f, "_count", l, NULL, val);
}

static const char *prom_type_name(enum prom_type t)
{
	switch (t) {
	case PROM_COUNTER:
		return "counter";
	case PROM_GAUGE:
		return "gauge";
	default:
		return "histogram";
	}
}

int prom_doc_render(const struct prom_doc *d, char **text, size_t *len)
{
	struct prom_buf out = {0};

	*text = NULL;
	*len = 0;
	if (d->failed)
		return -ENOMEM;
	if (!prom_buf_reserve(&out, 0))
		return -ENOMEM;
	out.data[0] = '\0';
	for (const struct prom_fam *f = d->head; f; f = f->next) {
		/* A family without samples (nothing of its kind exists now) is left out. */
		if (!f->samples.len)
			continue;
		if (!prom_buf_printf(&out, "# HELP %s ", f->name))
			goto out_nomem;
		/* HELP escapes backslash and newline. */
		for (const char *c = f->help; *c; c++) {
			bool ok = *c == '\\'   ? prom_buf_append(&out, "\\\\", 2)
				  : *c == '\n' ? prom_buf_append(&out, "\\n", 2)
					       : prom_buf_append(&out, c, 1);

			if (!ok)
				goto out_nomem;
		}
		if (!prom_buf_printf(&out, "\n# TYPE %s %s\n", f->name, prom_type_name(f->type)) ||
		    !prom_buf_append(&out, f->samples.data, f->samples.len))
			goto out_nomem;
	}
	*text = out.data;
	*len = out.len;
	return 0;

out_nomem:
	free(out.data);
	return -ENOMEM;
}
