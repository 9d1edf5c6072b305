/* vfu/cmd.c - the vfio-user client commands: parse and validate each
 * request (QEMU docs/interop/vfio-user.rst), call the device's ops, reply. */
#include "vfu/vfu_internal.h"

#include "common/log.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Our VERSION capabilities; max_dma_maps is the endpoint's region limit. */
#define VFU_CMD_CAPS_FMT                                                                           \
	"{\"capabilities\":{\"max_msg_fds\":%u,\"max_data_xfer_size\":%u,"                         \
	"\"pgsizes\":%u,\"max_dma_maps\":%u,\"write_multiple\":true}}"

/* A malformed request: counted, logged, answered EINVAL. */
static int vfu_cmd_bad(struct vfu_endpoint *ep, const char *what)
{
	ep->st.bad_messages++;
	LOG_GUEST_ERR(VFU_COMP, "%s: command %u id %u: %s", ep->path, ep->rx_hdr.command,
		      ep->rx_hdr.msg_id, what);
	return EINVAL;
}

/* Status of an op (0, -errno) as a positive errno for the reply. */
static int vfu_cmd_errno(int rc)
{
	if (rc == 0)
		return 0;
	if (rc < 0 && rc > -4096)
		return -rc;
	return EIO;
}

/* Reads an integer capability; false if present with the wrong type. */
static bool vfu_cmd_cap_int(struct json_object *caps, const char *key, int64_t min, int64_t max,
			    int64_t *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(caps, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_int))
		return false;
	*out = json_object_get_int64(v);
	return *out >= min && *out <= max;
}

/* Reads a boolean capability; false if present with the wrong type. */
static bool vfu_cmd_cap_bool(struct json_object *caps, const char *key, bool *out)
{
	struct json_object *v;

	if (!json_object_object_get_ex(caps, key, &v))
		return true;
	if (!json_object_is_type(v, json_type_boolean))
		return false;
	*out = json_object_get_boolean(v);
	return true;
}

/* Checks the client's capabilities JSON (spec "Version"). */
static int vfu_cmd_version_json(struct vfu_endpoint *ep, const char *json)
{
	int64_t fds = 8, xfer = VFU_MAX_DATA_XFER_SIZE, pgsizes = VFU_PGSIZE, maps = 1;
	struct json_object *root, *caps;
	bool multi = false;
	int err = 0;

	root = json_tokener_parse(json);
	if (!root || !json_object_is_type(root, json_type_object)) {
		err = vfu_cmd_bad(ep, "VERSION: capabilities are not a JSON object");
		goto out_put;
	}
	if (!json_object_object_get_ex(root, "capabilities", &caps))
		goto out_put;
	if (!json_object_is_type(caps, json_type_object) ||
	    !vfu_cmd_cap_int(caps, "max_msg_fds", 0, 1024, &fds) ||
	    !vfu_cmd_cap_int(caps, "max_data_xfer_size", 1, 64ll << 20, &xfer) ||
	    !vfu_cmd_cap_int(caps, "pgsizes", 1, INT64_MAX, &pgsizes) ||
	    !vfu_cmd_cap_int(caps, "max_dma_maps", 0, INT64_MAX, &maps) ||
	    !vfu_cmd_cap_bool(caps, "write_multiple", &multi)) {
		err = vfu_cmd_bad(ep, "VERSION: bad capability value");
		goto out_put;
	}
	/* We work in 4 KiB pages; a client without them cannot map for us. */
	if (!(pgsizes & VFU_PGSIZE)) {
		err = vfu_cmd_bad(ep, "VERSION: 4 KiB pages not supported by the client");
		goto out_put;
	}
	ep->client_max_xfer = (uint32_t)xfer;
	/* Both sides must offer it before the client may send REGION_WRITE_MULTI. */
	ep->write_multi = multi;
out_put:
	json_object_put(root);
	return err;
}

static int vfu_cmd_version(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	uint8_t reply[sizeof(struct vfio_user_version) + 192];
	struct vfio_user_version v;
	int err, n;

	if (ep->negotiated)
		return vfu_cmd_bad(ep, "VERSION: already negotiated");
	if (len < sizeof(v))
		return vfu_cmd_bad(ep, "VERSION: short payload");
	memcpy(&v, p, sizeof(v));
	if (v.major != 0)
		return vfu_cmd_bad(ep, "VERSION: unsupported major version");
	if (len > sizeof(v)) {
		const char *json = (const char *)p + sizeof(v);

		if (!memchr(json, 0, len - sizeof(v)))
			return vfu_cmd_bad(ep, "VERSION: JSON not NUL terminated");
		err = vfu_cmd_version_json(ep, json);
		if (err)
			return err;
	}
	memset(&v, 0, sizeof(v)); /* we speak 0.0: the lowest common minor */
	memcpy(reply, &v, sizeof(v));
	n = snprintf((char *)reply + sizeof(v), sizeof(reply) - sizeof(v), VFU_CMD_CAPS_FMT,
		     VFU_MAX_MSG_FDS, VFU_MAX_DATA_XFER_SIZE, VFU_PGSIZE, ep->cfg.max_dma_regions);
	if (n < 0 || (size_t)n >= sizeof(reply) - sizeof(v))
		return EIO;
	vfu_ep_reply(ep, &ep->rx_hdr, 0, reply, sizeof(v) + (size_t)n + 1);
	ep->negotiated = true;
	ep->st.clients_attached++;
	LOG_INFO(VFU_COMP, "%s: client attached (max_data_xfer_size %u, write_multiple %s)",
		 ep->path, ep->client_max_xfer, ep->write_multi ? "yes" : "no");
	if (ep->ops->attach)
		ep->ops->attach(ep->arg);
	return 0;
}

static int vfu_cmd_dma_map(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	struct vfio_user_dma_map m;
	int rc;

	if (len < sizeof(m))
		return vfu_cmd_bad(ep, "DMA_MAP: short payload");
	memcpy(&m, p, sizeof(m));
	if (m.argsz < sizeof(m))
		return vfu_cmd_bad(ep, "DMA_MAP: argsz too small");
	if (m.flags & ~(VFIO_USER_DMA_READ_PROT | VFIO_USER_DMA_WRITE_PROT))
		return vfu_cmd_bad(ep, "DMA_MAP: unknown flags");
	if (ep->rx_nfds > 1)
		return vfu_cmd_bad(ep, "DMA_MAP: more than one fd");
	rc = vfu_dma_table_add(ep->dma, m.addr, m.size, m.flags, ep->rx_nfds ? ep->rx_fds[0] : -1,
			       m.offset);
	/* Mapped (or refused): the fd itself is not kept. */
	vfu_ep_rx_fds_close(ep);
	if (rc) {
		LOG_GUEST_ERR(VFU_COMP, "%s: DMA_MAP [%#llx +%#llx] failed: %s", ep->path,
			      (unsigned long long)m.addr, (unsigned long long)m.size,
			      strerror(-rc));
		return vfu_cmd_errno(rc);
	}
	ep->st.dma_maps++;
	if (ep->ops->dma_map)
		ep->ops->dma_map(ep->arg, m.addr, m.size, m.flags);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, NULL, 0);
	return 0;
}

/* Takes [iova, len) out of the lookups and lets the device finish with it.
 * Returns 0 when done (the table is quiesced), VFU_ASYNC while the device
 * works, or -ENOMEM (nothing removed). */
static int vfu_cmd_unmap_one(struct vfu_endpoint *ep, uint64_t iova, uint64_t len)
{
	int rc = vfu_dma_table_remove(ep->dma, iova, len);

	if (rc)
		return rc;
	ep->st.dma_unmaps++;
	rc = ep->ops->dma_unmap ? ep->ops->dma_unmap(ep->arg, iova, len) : 0;
	if (rc == VFU_ASYNC)
		return VFU_ASYNC;
	if (rc)
		LOG_ERR(VFU_COMP, "%s: device dma_unmap returned %d; the window is gone anyway",
			ep->path, rc);
	vfu_dma_table_quiesce(ep->dma);
	return 0;
}

/* UNMAP_ALL: one window at a time, each possibly asynchronous. */
static void vfu_cmd_unmap_all_step(struct vfu_endpoint *ep)
{
	struct vfu_dma_window w;
	int rc;

	for (;;) {
		if (vfu_dma_table_first(ep->dma, &w)) {
			ep->held = VFU_HELD_NONE;
			vfu_ep_reply(ep, &ep->held_hdr, 0, NULL, 0);
			return;
		}
		rc = vfu_cmd_unmap_one(ep, w.iova, w.len);
		if (rc == VFU_ASYNC) {
			ep->held = VFU_HELD_UNMAP_ALL;
			return;
		}
		if (rc) {
			ep->held = VFU_HELD_NONE;
			vfu_ep_reply(ep, &ep->held_hdr, vfu_cmd_errno(rc), NULL, 0);
			return;
		}
	}
}

static int vfu_cmd_dma_unmap(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	struct vfio_user_dma_unmap u;
	struct vfu_dma_window w;
	int rc;

	if (len < sizeof(u))
		return vfu_cmd_bad(ep, "DMA_UNMAP: short payload");
	memcpy(&u, p, sizeof(u));
	if (u.argsz < sizeof(u))
		return vfu_cmd_bad(ep, "DMA_UNMAP: argsz too small");
	if (u.flags & ~VFIO_USER_DMA_UNMAP_ALL)
		return vfu_cmd_bad(ep, "DMA_UNMAP: unsupported flags");
	ep->held_hdr = ep->rx_hdr;
	if (u.flags & VFIO_USER_DMA_UNMAP_ALL) {
		if (u.addr || u.size)
			return vfu_cmd_bad(ep, "DMA_UNMAP: UNMAP_ALL with a range");
		vfu_cmd_unmap_all_step(ep);
		return 0;
	}
	/* Spec: the range must match a previous map exactly. */
	if (vfu_dma_table_find(ep->dma, u.addr, u.size, &w) || w.iova != u.addr ||
	    w.len != u.size || !u.size) {
		LOG_GUEST_ERR(VFU_COMP, "%s: DMA_UNMAP [%#llx +%#llx] matches no map", ep->path,
			      (unsigned long long)u.addr, (unsigned long long)u.size);
		return ENOENT;
	}
	rc = vfu_cmd_unmap_one(ep, u.addr, u.size);
	if (rc == VFU_ASYNC) {
		ep->held = VFU_HELD_UNMAP;
		return 0;
	}
	if (rc)
		return vfu_cmd_errno(rc);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, NULL, 0);
	return 0;
}

static void vfu_cmd_counts(struct vfu_endpoint *ep, uint32_t *flags, uint32_t *nr, uint32_t *ni)
{
	*flags = 0;
	*nr = 0;
	*ni = 0;
	ep->ops->device_info(ep->arg, flags, nr, ni);
}

static int vfu_cmd_device_info(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	struct vfio_user_device_info d;
	uint32_t flags, nr, ni;

	if (len < sizeof(d))
		return vfu_cmd_bad(ep, "GET_INFO: short payload");
	memcpy(&d, p, sizeof(d));
	if (d.argsz < sizeof(d))
		return vfu_cmd_bad(ep, "GET_INFO: argsz too small");
	vfu_cmd_counts(ep, &flags, &nr, &ni);
	d.argsz = sizeof(d);
	d.flags = flags;
	d.num_regions = nr;
	d.num_irqs = ni;
	vfu_ep_reply(ep, &ep->rx_hdr, 0, &d, sizeof(d));
	return 0;
}

/* Region index -> description, with the index checked. Positive errno. */
static int vfu_cmd_region(struct vfu_endpoint *ep, uint32_t index, struct vfu_region_desc *desc)
{
	uint32_t flags, nr, ni;
	int rc;

	vfu_cmd_counts(ep, &flags, &nr, &ni);
	if (index >= nr)
		return vfu_cmd_bad(ep, "region index out of range");
	memset(desc, 0, sizeof(*desc));
	desc->mmap_fd = -1;
	rc = ep->ops->region_info(ep->arg, index, desc);
	if (rc)
		return vfu_cmd_errno(rc);
	if (desc->nr_sparse > sizeof(desc->sparse) / sizeof(desc->sparse[0])) {
		LOG_ERR(VFU_COMP, "%s: region %u: device reports %u sparse areas", ep->path, index,
			desc->nr_sparse);
		return EIO;
	}
	return 0;
}

/* Two-step protocol (VFIO-USER.md 3.2): if argsz cannot hold the capability
 * chain, answer the fixed part with argsz = what is needed, no CAPS and no fd;
 * the client retries with that argsz and gets the caps and exactly one fd. */
static int vfu_cmd_region_info(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	uint8_t reply[sizeof(struct vfio_user_region_info) +
		      sizeof(struct vfio_user_region_info_cap_sparse_mmap) +
		      8 * sizeof(struct vfio_user_sparse_mmap_area)];
	struct vfio_user_region_info ri;
	struct vfu_region_desc desc;
	size_t needed;
	bool caps;
	int err;

	if (len < sizeof(ri))
		return vfu_cmd_bad(ep, "GET_REGION_INFO: short payload");
	memcpy(&ri, p, sizeof(ri));
	if (ri.argsz < sizeof(ri))
		return vfu_cmd_bad(ep, "GET_REGION_INFO: argsz too small");
	err = vfu_cmd_region(ep, ri.index, &desc);
	if (err)
		return err;
	caps = desc.nr_sparse && desc.mmap_fd >= 0;
	needed = sizeof(ri);
	if (caps)
		needed += sizeof(struct vfio_user_region_info_cap_sparse_mmap) +
			  desc.nr_sparse * sizeof(struct vfio_user_sparse_mmap_area);
	ri.flags = desc.flags & ~VFIO_REGION_INFO_FLAG_CAPS;
	ri.cap_offset = 0;
	ri.size = desc.size;
	ri.offset = desc.mmap_offset;
	if (ri.argsz < needed) {
		ri.argsz = (uint32_t)needed;
		vfu_ep_reply(ep, &ep->rx_hdr, 0, &ri, sizeof(ri));
		return 0;
	}
	ri.argsz = (uint32_t)needed;
	if (caps) {
		struct vfio_user_region_info_cap_sparse_mmap cap = {
		    .header = {.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP, .version = 1},
		    .nr_areas = desc.nr_sparse,
		};

		ri.flags |= VFIO_REGION_INFO_FLAG_CAPS;
		ri.cap_offset = sizeof(ri);
		memcpy(reply + sizeof(ri), &cap, sizeof(cap));
		for (uint32_t i = 0; i < desc.nr_sparse; i++) {
			struct vfio_user_sparse_mmap_area a = {
			    .offset = desc.sparse[i].offset,
			    .size = desc.sparse[i].size,
			};

			memcpy(reply + sizeof(ri) + sizeof(cap) + i * sizeof(a), &a, sizeof(a));
		}
	}
	memcpy(reply, &ri, sizeof(ri));
	if (ep->rx_hdr.flags & VFIO_USER_F_NO_REPLY)
		return 0;
	{
		struct vfio_user_header h = {
		    .msg_id = ep->rx_hdr.msg_id,
		    .command = ep->rx_hdr.command,
		    .msg_size = (uint32_t)(sizeof(h) + needed),
		    .flags = VFIO_USER_F_TYPE_REPLY,
		};

		vfu_ep_send(ep, &h, reply, needed, desc.mmap_fd);
	}
	return 0;
}

static int vfu_cmd_irq_info(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	struct vfio_user_irq_info ii;
	uint32_t flags, nr, ni, iflags = 0, icount = 0;
	int rc;

	if (len < sizeof(ii))
		return vfu_cmd_bad(ep, "GET_IRQ_INFO: short payload");
	memcpy(&ii, p, sizeof(ii));
	if (ii.argsz < sizeof(ii))
		return vfu_cmd_bad(ep, "GET_IRQ_INFO: argsz too small");
	vfu_cmd_counts(ep, &flags, &nr, &ni);
	if (ii.index >= ni)
		return vfu_cmd_bad(ep, "GET_IRQ_INFO: index out of range");
	rc = ep->ops->irq_info(ep->arg, ii.index, &iflags, &icount);
	if (rc)
		return vfu_cmd_errno(rc);
	ii.flags = iflags;
	ii.count = icount;
	ii.argsz = sizeof(ii);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, &ii, sizeof(ii));
	return 0;
}

static int vfu_cmd_set_irqs(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	uint32_t data, action, dflags, nr, ni, iflags = 0, icount = 0;
	struct vfio_user_irq_set s;
	const uint8_t *bools = NULL;
	int rc;

	if (len < sizeof(s))
		return vfu_cmd_bad(ep, "SET_IRQS: short payload");
	memcpy(&s, p, sizeof(s));
	if (s.argsz < sizeof(s))
		return vfu_cmd_bad(ep, "SET_IRQS: argsz too small");
	data = s.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	action = s.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
	if ((s.flags & ~(VFIO_IRQ_SET_DATA_TYPE_MASK | VFIO_IRQ_SET_ACTION_TYPE_MASK)) ||
	    __builtin_popcount(data) != 1 || __builtin_popcount(action) != 1)
		return vfu_cmd_bad(ep, "SET_IRQS: need exactly one DATA and one ACTION flag");
	vfu_cmd_counts(ep, &dflags, &nr, &ni);
	if (s.index >= ni)
		return vfu_cmd_bad(ep, "SET_IRQS: index out of range");
	rc = ep->ops->irq_info(ep->arg, s.index, &iflags, &icount);
	if (rc)
		return vfu_cmd_errno(rc);
	if ((uint64_t)s.start + s.count > icount)
		return vfu_cmd_bad(ep, "SET_IRQS: start + count beyond the index's vectors");
	if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
		if (ep->rx_nfds != s.count && ep->rx_nfds != 0)
			return vfu_cmd_bad(ep, "SET_IRQS: fd count differs from count");
	} else if (ep->rx_nfds) {
		return vfu_cmd_bad(ep, "SET_IRQS: fds without DATA_EVENTFD");
	}
	if (data == VFIO_IRQ_SET_DATA_BOOL) {
		if (len < sizeof(s) + s.count || s.argsz < sizeof(s) + s.count)
			return vfu_cmd_bad(ep, "SET_IRQS: short DATA_BOOL array");
		bools = p + sizeof(s);
	}
	/* The callee owns the fds from here on, also on error. */
	rc = ep->ops->set_irqs(ep->arg, s.flags, s.index, s.start, s.count, ep->rx_fds, ep->rx_nfds,
			       bools);
	ep->rx_nfds = 0;
	if (rc)
		return vfu_cmd_errno(rc);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, NULL, 0);
	return 0;
}

/* Checks a REGION_READ/WRITE access against the region. Positive errno. */
static int vfu_cmd_access_check(struct vfu_endpoint *ep, const struct vfio_user_region_access *a,
				uint32_t need_flag)
{
	struct vfu_region_desc desc;
	int err = vfu_cmd_region(ep, a->region, &desc);

	if (err)
		return err;
	if (!a->count || a->count > VFU_MAX_DATA_XFER_SIZE)
		return vfu_cmd_bad(ep, "region access: bad count");
	if (a->offset > desc.size || a->count > desc.size - a->offset)
		return vfu_cmd_bad(ep, "region access: beyond the region");
	if (!(desc.flags & need_flag))
		return vfu_cmd_bad(ep, "region access: not permitted on this region");
	return 0;
}

static int vfu_cmd_region_read(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	struct vfio_user_region_access a;
	uint8_t *reply;
	int err, rc;

	if (len < sizeof(a))
		return vfu_cmd_bad(ep, "REGION_READ: short payload");
	memcpy(&a, p, sizeof(a));
	err = vfu_cmd_access_check(ep, &a, VFIO_REGION_INFO_FLAG_READ);
	if (err)
		return err;
	ep->st.region_reads++;
	reply = calloc(1, sizeof(a) + a.count);
	if (!reply)
		return ENOMEM;
	rc = ep->ops->region_access(ep->arg, a.region, a.offset, reply + sizeof(a), a.count, false);
	if (rc == VFU_ASYNC) {
		/* The device fills the data in before it resumes (a read that is a barrier). */
		memcpy(reply, &a, sizeof(a));
		ep->held = VFU_HELD_REGION_READ;
		ep->held_hdr = ep->rx_hdr;
		ep->held_access = a;
		ep->held_read = reply;
		return 0;
	}
	if (!rc) {
		memcpy(reply, &a, sizeof(a));
		vfu_ep_reply(ep, &ep->rx_hdr, 0, reply, sizeof(a) + a.count);
	}
	free(reply);
	return vfu_cmd_errno(rc);
}

static int vfu_cmd_region_write(struct vfu_endpoint *ep, uint8_t *p, size_t len)
{
	struct vfio_user_region_access a;
	int err, rc;

	if (len < sizeof(a))
		return vfu_cmd_bad(ep, "REGION_WRITE: short payload");
	memcpy(&a, p, sizeof(a));
	if (a.count != len - sizeof(a))
		return vfu_cmd_bad(ep, "REGION_WRITE: count differs from the data");
	err = vfu_cmd_access_check(ep, &a, VFIO_REGION_INFO_FLAG_WRITE);
	if (err)
		return err;
	ep->st.region_writes++;
	if (ep->rx_hdr.flags & VFIO_USER_F_NO_REPLY)
		ep->st.posted_writes++;
	rc = ep->ops->region_access(ep->arg, a.region, a.offset, p + sizeof(a), a.count, true);
	if (rc == VFU_ASYNC) {
		ep->held = VFU_HELD_REGION_WRITE;
		ep->held_hdr = ep->rx_hdr;
		ep->held_access = a;
		return 0;
	}
	if (rc)
		return vfu_cmd_errno(rc);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, &a, sizeof(a));
	return 0;
}

#define VFU_WM_ENTRY sizeof(struct vfio_user_write_multi_entry)

/* One write of a REGION_WRITE_MULTI finished with err (positive errno or 0);
 * a failure is counted and logged as a REGION_WRITE's error reply would be. */
static void vfu_cmd_write_multi_account(struct vfu_endpoint *ep, int err)
{
	if (!err) {
		ep->wm_done++;
		return;
	}
	ep->st.errors_replied++;
	LOG_GUEST_ERR(VFU_COMP, "%s: command %u id %u: write %u failed: %s", ep->path,
		      ep->held_hdr.command, ep->held_hdr.msg_id, ep->wm_next - 1, strerror(err));
	if (!ep->wm_err)
		ep->wm_err = err;
}

/* Runs the writes of the REGION_WRITE_MULTI in ep->wm_* from wm_next on, each
 * exactly as the REGION_WRITE of count bytes it stands for (same checks, same
 * device op, in order): a bad one fails alone, counted as that REGION_WRITE's
 * error would be, and the next still runs (a posted batch, as QEMU sends them,
 * gets no reply at all). An asynchronous one holds the rest until resumed.
 * After the last, a client that asked for a reply gets wr_cnt = writes done,
 * or the first error. */
static void vfu_cmd_write_multi_run(struct vfu_endpoint *ep)
{
	bool posted = ep->held_hdr.flags & VFIO_USER_F_NO_REPLY;

	while (ep->wm_next < ep->wm_cnt && !ep->dead) {
		const uint8_t *e = ep->wm_entries + (size_t)ep->wm_next * VFU_WM_ENTRY;
		struct vfio_user_region_access a;
		int err, rc;

		ep->wm_next++;
		memcpy(&a, e, sizeof(a));
		if (!a.count || a.count > VFIO_USER_WRITE_MULTI_DATA)
			err = vfu_cmd_bad(ep, "REGION_WRITE_MULTI: write count 0 or above 8");
		else
			err = vfu_cmd_access_check(ep, &a, VFIO_REGION_INFO_FLAG_WRITE);
		if (!err) {
			ep->st.region_writes++;
			if (posted)
				ep->st.posted_writes++;
			/* The data sits 8-byte aligned: the body is (vfu_ep_rx_take), and so
			 * is every entry's data field within it. */
			rc = ep->ops->region_access(ep->arg, a.region, a.offset,
						    (uint8_t *)e + sizeof(a), a.count, true);
			if (rc == VFU_ASYNC) {
				ep->held = VFU_HELD_WRITE_MULTI;
				return;
			}
			err = vfu_cmd_errno(rc);
		}
		vfu_cmd_write_multi_account(ep, err);
	}
	ep->held = VFU_HELD_NONE;
	ep->wm_entries = NULL;
	if (posted || ep->dead)
		return;
	if (ep->wm_err) {
		vfu_ep_reply_error(ep, &ep->held_hdr, ep->wm_err);
	} else {
		uint64_t done = ep->wm_done;

		vfu_ep_reply(ep, &ep->held_hdr, 0, &done, sizeof(done));
	}
}

static int vfu_cmd_write_multi(struct vfu_endpoint *ep, const uint8_t *p, size_t len)
{
	uint64_t cnt;

	if (len < sizeof(cnt))
		return vfu_cmd_bad(ep, "REGION_WRITE_MULTI: short payload");
	memcpy(&cnt, p, sizeof(cnt));
	if (!cnt || cnt > VFU_WRITE_MULTI_MAX)
		return vfu_cmd_bad(ep, "REGION_WRITE_MULTI: wr_cnt 0 or above the limit");
	if (len != sizeof(cnt) + cnt * VFU_WM_ENTRY)
		return vfu_cmd_bad(ep, "REGION_WRITE_MULTI: size differs from wr_cnt");
	ep->st.write_multis++;
	ep->held_hdr = ep->rx_hdr;
	ep->wm_entries = p + sizeof(cnt);
	ep->wm_cnt = (uint32_t)cnt;
	ep->wm_next = 0;
	ep->wm_done = 0;
	ep->wm_err = 0;
	vfu_cmd_write_multi_run(ep);
	return 0;
}

static int vfu_cmd_reset(struct vfu_endpoint *ep)
{
	int rc = ep->ops->reset(ep->arg);

	if (rc == VFU_ASYNC) {
		ep->held = VFU_HELD_RESET;
		ep->held_hdr = ep->rx_hdr;
		return 0;
	}
	if (rc)
		return vfu_cmd_errno(rc);
	vfu_ep_reply(ep, &ep->rx_hdr, 0, NULL, 0);
	return 0;
}

void vfu_cmd_dispatch(struct vfu_endpoint *ep)
{
	const struct vfio_user_header *h = &ep->rx_hdr;
	size_t len = h->msg_size - sizeof(*h);
	uint8_t *p = ep->rx_body;
	int err;

	LOG_TRACE(VFU_COMP, "%s: command %u id %u size %u flags %#x fds %zu", ep->path, h->command,
		  h->msg_id, h->msg_size, h->flags, ep->rx_nfds);
	if (!ep->negotiated && h->command != VFIO_USER_VERSION) {
		err = vfu_cmd_bad(ep, "command before VERSION");
		goto out_err;
	}
	if (ep->rx_fds_overflow) {
		err = vfu_cmd_bad(ep, "too many fds");
		goto out_err;
	}
	/* SPDK's vfio-user host sends DMA_UNMAP with the fd it mapped (the spec gives it none):
	 * one such fd is taken and closed unused. */
	if (ep->rx_nfds && h->command != VFIO_USER_DMA_MAP &&
	    h->command != VFIO_USER_DEVICE_SET_IRQS &&
	    (h->command != VFIO_USER_DMA_UNMAP || ep->rx_nfds > 1)) {
		err = vfu_cmd_bad(ep, "fds on a command that takes none");
		goto out_err;
	}
	switch (h->command) {
	case VFIO_USER_VERSION:
		err = vfu_cmd_version(ep, p, len);
		break;
	case VFIO_USER_DMA_MAP:
		err = vfu_cmd_dma_map(ep, p, len);
		break;
	case VFIO_USER_DMA_UNMAP:
		vfu_ep_rx_fds_close(ep);
		err = vfu_cmd_dma_unmap(ep, p, len);
		break;
	case VFIO_USER_DEVICE_GET_INFO:
		err = vfu_cmd_device_info(ep, p, len);
		break;
	case VFIO_USER_DEVICE_GET_REGION_INFO:
		err = vfu_cmd_region_info(ep, p, len);
		break;
	case VFIO_USER_DEVICE_GET_IRQ_INFO:
		err = vfu_cmd_irq_info(ep, p, len);
		break;
	case VFIO_USER_DEVICE_SET_IRQS:
		err = vfu_cmd_set_irqs(ep, p, len);
		break;
	case VFIO_USER_REGION_READ:
		err = vfu_cmd_region_read(ep, p, len);
		break;
	case VFIO_USER_REGION_WRITE:
		err = vfu_cmd_region_write(ep, p, len);
		break;
	case VFIO_USER_DEVICE_RESET:
		err = vfu_cmd_reset(ep);
		break;
	case VFIO_USER_REGION_WRITE_MULTI:
		/* Only for a client that offered write_multiple (we always do); any
		 * other gets what an unsupported command gets. */
		if (ep->write_multi) {
			err = vfu_cmd_write_multi(ep, p, len);
			break;
		}
		LOG_GUEST_ERR(VFU_COMP, "%s: REGION_WRITE_MULTI without write_multiple", ep->path);
		err = ENOSYS;
		break;
	default:
		LOG_GUEST_ERR(VFU_COMP, "%s: unsupported command %u", ep->path, h->command);
		err = ENOSYS;
		break;
	}
	if (!err)
		return;
out_err:
	vfu_ep_reply(ep, h, err, NULL, 0);
}

void vfu_cmd_resume(struct vfu_endpoint *ep, int status)
{
	enum vfu_held_kind kind = ep->held;

	/* A finished unmap is a quiescent point: the device certified that no
	 * thread still uses what was looked up before the window went. */
	if (kind == VFU_HELD_UNMAP || kind == VFU_HELD_UNMAP_ALL)
		vfu_dma_table_quiesce(ep->dma);
	if (kind == VFU_HELD_UNMAP_ALL) {
		vfu_cmd_unmap_all_step(ep);
		return;
	}
	if (kind == VFU_HELD_WRITE_MULTI) {
		vfu_cmd_write_multi_account(ep, vfu_cmd_errno(status));
		vfu_cmd_write_multi_run(ep);
		return;
	}
	ep->held = VFU_HELD_NONE;
	switch (kind) {
	case VFU_HELD_REGION_WRITE:
		vfu_ep_reply(ep, &ep->held_hdr, vfu_cmd_errno(status), &ep->held_access,
			     sizeof(ep->held_access));
		break;
	case VFU_HELD_RESET:
	case VFU_HELD_UNMAP:
		vfu_ep_reply(ep, &ep->held_hdr, vfu_cmd_errno(status), NULL, 0);
		break;
	case VFU_HELD_REGION_READ:
		if (status)
			vfu_ep_reply(ep, &ep->held_hdr, vfu_cmd_errno(status), NULL, 0);
		else
			vfu_ep_reply(ep, &ep->held_hdr, 0, ep->held_read,
				     sizeof(ep->held_access) + ep->held_access.count);
		free(ep->held_read);
		ep->held_read = NULL;
		break;
	default:
		break;
	}
}
