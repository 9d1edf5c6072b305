/* app/prom_text.h - writing a Prometheus text exposition (format 0.0.4): metric families, each
 * written whole (its HELP and TYPE lines, then every sample of it) in the order the families were
 * first used, whatever order the samples came in; label values escaped; histograms from bucket
 * counts. Main thread (the metrics exporter's), nothing shared. */
#ifndef NVME_EMU_APP_PROM_TEXT_H
#define NVME_EMU_APP_PROM_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct prom_doc;
struct prom_fam;

enum prom_type { PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM };

/* The content type of the format. */
#define PROM_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

/* NULL without memory. */
struct prom_doc *prom_doc_create(void);
void prom_doc_destroy(struct prom_doc *d);

/* The family `name` ([a-zA-Z_:][a-zA-Z0-9_:]*), created at its first use with `type` and `help`
 * (which later uses of the name do not change). NULL without memory: the document is then marked
 * failed and prom_doc_render says so; writing a sample to NULL does nothing. */
struct prom_fam *prom_fam(struct prom_doc *d, const char *name, enum prom_type type,
			  const char *help);

/* A label set being built: name="value" pairs, values escaped (\\, \" and \n). */
#define PROM_LABELS_MAX 1024
struct prom_labels {
	char text[PROM_LABELS_MAX];
	size_t len;
	bool overflow; /* a pair did not fit: samples with it are dropped, the doc fails */
};
void prom_labels_reset(struct prom_labels *l);
void prom_label(struct prom_labels *l, const char *name, const char *value);
void prom_label_u64(struct prom_labels *l, const char *name, uint64_t value);

/* A sample of a counter or gauge: name{labels} value. */
void prom_u64(struct prom_fam *f, const struct prom_labels *l, uint64_t v);
void prom_double(struct prom_fam *f, const struct prom_labels *l, double v);
/*
 * A histogram's samples: n buckets, `counts[i]` observations in bucket i (not cumulative) whose
 * upper edge is le_seconds[i] (ascending; the last one +infinity), `sum` in seconds. Writes the
 * _bucket series (cumulative, le="+Inf" last), _sum and _count.
 */
void prom_histogram(struct prom_fam *f, const struct prom_labels *l, const double *le_seconds,
		    const uint64_t *counts, unsigned int n, double sum);

/* The document as text (malloc'ed, NUL-terminated, `len` bytes without the NUL). Returns 0, or
 * -ENOMEM (a family, a sample or this copy did not fit in memory, or labels overflowed). */
int prom_doc_render(const struct prom_doc *d, char **text, size_t *len);

/* Formats a number as the format writes it ("+Inf", "-Inf", "NaN", else up to 15 significant
 * digits). buf of 32 bytes. */
void prom_format_double(double v, char *buf, size_t len);

#endif
