/* hw/msix.c - MSI-X state of a device: eventfds per vector, table entries,
 * pending bits, lock-free raise with PBA latching, and the vector objects. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "hw/hw_internal.h"

#define HW_MSIX_ENTRY_SIZE 16u
#define HW_MSIX_CTRL_MASKBIT 0x1u

struct hw_msix_vector {
	struct hw_dev *dev;
	uint16_t num;
};

int hw_msix_init(struct hw_msix *m, uint16_t nr_vectors)
{
	memset(m, 0, sizeof(*m));
	m->nr_vectors = nr_vectors;
	if (!nr_vectors)
		return 0;
	m->vec = calloc(nr_vectors, sizeof(*m->vec));
	m->pba = calloc((nr_vectors + 63u) / 64u, sizeof(*m->pba));
	if (!m->vec || !m->pba) {
		free(m->vec);
		free((void *)m->pba);
		m->vec = NULL;
		m->pba = NULL;
		return -ENOMEM;
	}
	for (uint16_t v = 0; v < nr_vectors; v++)
		atomic_init(&m->vec[v].fd, -1);
	return 0;
}

void hw_msix_fini(struct hw_msix *m)
{
	hw_msix_close_fds(m);
	/* The device is going away: every raiser stopped with its queues. */
	while (m->nr_grave)
		close(m->grave[--m->nr_grave].fd);
	free(m->grave);
	m->grave = NULL;
	m->cap_grave = 0;
	free(m->vec);
	free((void *)m->pba);
	m->vec = NULL;
	m->pba = NULL;
}

/* Writes the eventfd of vector v if it has one. The fd is an eventfd set
 * non-blocking when the client gave it (pci_dev.c checks both), so this never
 * blocks: EAGAIN means the counter is saturated, i.e. the client has not read
 * it yet and the interrupt is pending anyway. Raisers announce themselves in
 * `users` before loading the fd, so hw_msix_set_fd can tell when the old fd
 * is no longer in use before closing it (pairs with its exchange). */
static int hw_msix_signal(struct hw_msix *m, uint16_t v)
{
	struct hw_msix_vec_state *s = &m->vec[v];
	uint64_t one = 1;
	int fd, rc = -ENODEV;

	atomic_fetch_add(&s->users, 1);
	fd = atomic_load(&s->fd);
	if (fd >= 0 && (write(fd, &one, sizeof(one)) == (ssize_t)sizeof(one) || errno == EAGAIN))
		rc = 0;
	atomic_fetch_sub(&s->users, 1);
	if (!rc)
		atomic_fetch_add(&m->raised, 1);
	return rc;
}

static bool hw_msix_is_masked(struct hw_msix *m, uint16_t v)
{
	return atomic_load(&m->function_masked) ||
	       (atomic_load(&m->vec[v].ctrl) & HW_MSIX_CTRL_MASKBIT);
}

static bool hw_msix_take_pending(struct hw_msix *m, uint16_t v)
{
	uint64_t bit = 1ull << (v % 64);

	return atomic_fetch_and(&m->pba[v / 64], ~bit) & bit;
}

/* Delivers vector v if it is pending and now unmasked. */
static void hw_msix_deliver_pending(struct hw_msix *m, uint16_t v)
{
	if (!atomic_load(&m->enabled) || hw_msix_is_masked(m, v))
		return;
	if (atomic_load(&m->vec[v].fd) < 0)
		return; /* stays pending until the client gives an eventfd */
	if (hw_msix_take_pending(m, v) && hw_msix_signal(m, v))
		atomic_fetch_or(&m->pba[v / 64], 1ull << (v % 64));
}

int hw_msix_raise_num(struct hw_msix *m, uint16_t v)
{
	if (v >= m->nr_vectors || !atomic_load(&m->enabled)) {
		atomic_fetch_add(&m->dropped, 1);
		return -ENODEV;
	}
	if (!hw_msix_is_masked(m, v)) {
		if (!hw_msix_signal(m, v))
			return 0;
		atomic_fetch_add(&m->dropped, 1);
		return -ENODEV;
	}
	atomic_fetch_or(&m->pba[v / 64], 1ull << (v % 64));
	atomic_fetch_add(&m->pended, 1);
	/* An unmask may have run between our mask check and setting the bit,
	 * and scanned the PBA before the bit was there: re-check and deliver
	 * ourselves (pairs with the unmask path's store then PBA scan). */
	if (!hw_msix_is_masked(m, v) && atomic_load(&m->vec[v].fd) >= 0 &&
	    hw_msix_take_pending(m, v)) {
		if (!hw_msix_signal(m, v))
			return 0;
		atomic_fetch_or(&m->pba[v / 64], 1ull << (v % 64));
	}
	return 1;
}

void hw_msix_set_state(struct hw_msix *m, bool enabled, bool function_masked)
{
	atomic_store(&m->enabled, enabled);
	atomic_store(&m->function_masked, function_masked);
	for (uint16_t v = 0; v < m->nr_vectors; v++)
		hw_msix_deliver_pending(m, v);
}

/* Closes the replaced fds no raiser can be using any more. */
static void hw_msix_reap(struct hw_msix *m)
{
	for (unsigned int i = 0; i < m->nr_grave;) {
		if (atomic_load(&m->vec[m->grave[i].vec].users)) {
			i++;
			continue;
		}
		close(m->grave[i].fd);
		m->grave[i] = m->grave[--m->nr_grave];
	}
}

/* Swaps the fd of vector v; the old one is closed now or, while a raiser may
 * be writing it, parked in the graveyard. 0 or -ENOMEM (nothing changed). */
static int hw_msix_swap_fd(struct hw_msix *m, uint16_t v, int fd)
{
	struct hw_msix_vec_state *s = &m->vec[v];
	int old;

	if (m->nr_grave == m->cap_grave) {
		unsigned int ncap = m->cap_grave ? 2 * m->cap_grave : 8;
		struct hw_msix_grave *g = realloc(m->grave, ncap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		m->grave = g;
		m->cap_grave = ncap;
	}
	old = atomic_exchange(&s->fd, fd);
	if (old < 0)
		return 0;
	/* A raiser that loaded the old fd before the exchange is counted in
	 * `users` now (it announced itself first); a later one loads the new. */
	if (atomic_load(&s->users))
		m->grave[m->nr_grave++] = (struct hw_msix_grave){.fd = old, .vec = v};
	else
		close(old);
	return 0;
}

int hw_msix_set_fd(struct hw_msix *m, uint16_t v, int fd)
{
	int rc;

	hw_msix_reap(m);
	rc = fd >= 0 && m->nr_grave >= HW_MSIX_GRAVEYARD ? -EBUSY : hw_msix_swap_fd(m, v, fd);
	if (rc) {
		if (fd >= 0)
			close(fd);
		return rc;
	}
	if (fd >= 0)
		hw_msix_deliver_pending(m, v);
	return 0;
}

void hw_msix_close_fds(struct hw_msix *m)
{
	hw_msix_reap(m);
	for (uint16_t v = 0; v < m->nr_vectors; v++) {
		/* Without memory for the graveyard, an fd still being written is
		 * left in place (the next close or the device's end takes it)
		 * rather than closed under its writer. */
		if (hw_msix_swap_fd(m, v, -1))
			LOG_ERR(HW_LOG_COMP, "MSI-X vector %u: out of memory closing its eventfd",
				v);
	}
}

bool hw_msix_pending(const struct hw_msix *m, uint16_t v)
{
	return v < m->nr_vectors && (atomic_load(&m->pba[v / 64]) >> (v % 64) & 1);
}

int hw_msix_table_access(struct hw_msix *m, uint64_t offset, void *buf, uint32_t len, bool is_write)
{
	uint64_t entry = offset / HW_MSIX_ENTRY_SIZE;
	uint32_t in = offset % HW_MSIX_ENTRY_SIZE;

	/* PCI: table accesses are dword or qword, naturally aligned. */
	if ((len != 4 && len != 8) || (offset & (len - 1))) {
		LOG_GUEST_ERR(HW_LOG_COMP, "MSI-X table access of %u bytes at 0x%llx refused", len,
			      (unsigned long long)offset);
		if (!is_write)
			memset(buf, 0xff, len);
		return 0;
	}
	for (uint32_t done = 0; done < len; done += 4, in += 4) {
		uint32_t *dw = (uint32_t *)((uint8_t *)buf + done);

		if (entry >= m->nr_vectors) {
			/* Beyond num_msix inside the region: reads 0, writes dropped. */
			if (!is_write)
				*dw = 0;
			continue;
		}
		struct hw_msix_vec_state *s = &m->vec[entry];

		switch (in) {
		case 0:
			if (is_write)
				s->addr_lo = *dw & ~3u;
			else
				*dw = s->addr_lo;
			break;
		case 4:
			if (is_write)
				s->addr_hi = *dw;
			else
				*dw = s->addr_hi;
			break;
		case 8:
			if (is_write)
				s->data = *dw;
			else
				*dw = s->data;
			break;
		default:
			if (!is_write) {
				*dw = atomic_load(&s->ctrl);
				break;
			}
			atomic_store(&s->ctrl, *dw & HW_MSIX_CTRL_MASKBIT);
			if (!(*dw & HW_MSIX_CTRL_MASKBIT))
				hw_msix_deliver_pending(m, (uint16_t)entry);
			break;
		}
	}
	return 0;
}

int hw_msix_pba_access(struct hw_msix *m, uint64_t offset, void *buf, uint32_t len, bool is_write)
{
	uint8_t *dst = buf;

	if (is_write)
		return 0; /* PBA is read-only: writes are dropped (PCI 6.8.2.10) */
	for (uint32_t i = 0; i < len; i++) {
		uint64_t byte = offset + i;
		uint64_t word = byte / 8;

		dst[i] = word < (m->nr_vectors + 63u) / 64u
			     ? (uint8_t)(atomic_load(&m->pba[word]) >> (8 * (byte % 8)))
			     : 0;
	}
	return 0;
}

void hw_msix_reset(struct hw_msix *m)
{
	atomic_store(&m->enabled, false);
	atomic_store(&m->function_masked, false);
	for (uint16_t v = 0; v < m->nr_vectors; v++) {
		struct hw_msix_vec_state *s = &m->vec[v];

		s->addr_lo = s->addr_hi = s->data = 0;
		atomic_store(&s->ctrl, 0);
	}
	for (unsigned int w = 0; w < (m->nr_vectors + 63u) / 64u; w++)
		atomic_store(&m->pba[w], 0);
}

/* ------------------------------------------------------------------------ */
/* Vector objects.                                                          */

struct hw_msix_vector *hw_msix_vector_create(struct hw_dev *dev, uint16_t vector)
{
	struct hw_msix_vector *vec;

	if (vector >= dev->msix.nr_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (dev->msix.vec[vector].obj) {
		errno = EEXIST;
		return NULL;
	}
	vec = calloc(1, sizeof(*vec));
	if (!vec)
		return NULL;
	vec->dev = dev;
	vec->num = vector;
	dev->msix.vec[vector].obj = vec;
	return vec;
}

void hw_msix_vector_destroy(struct hw_msix_vector *vec)
{
	if (!vec)
		return;
	vec->dev->msix.vec[vec->num].obj = NULL;
	free(vec);
}

uint16_t hw_msix_vector_num(const struct hw_msix_vector *vec)
{
	return vec->num;
}

int hw_msix_vector_raise(struct hw_msix_vector *vec)
{
	return hw_msix_raise_num(&vec->dev->msix, vec->num);
}
