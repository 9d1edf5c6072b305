/* hw/pci_dev.c - emulated device: creation, hotplug states, the vfio-user
 * endpoint callbacks (device/region/irq info, config and BAR access,
 * SET_IRQS, reset, DMA unmap) and the FLR flow. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/evloop.h"
#include "common/log.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"

/* hw/ passes its event results straight through as the endpoint's. */
_Static_assert(HW_EVENT_ASYNC == VFU_ASYNC, "hw and vfu async markers differ");

/* Devices hot-plugged per profile (the platform limit spans all types).
 * Loop thread only, like every hotplug call. */
static struct {
	const struct hw_profile *profile;
	unsigned int plugged;
} hw_plug_count[8];

static unsigned int *hw_dev_plug_counter(const struct hw_profile *p)
{
	for (size_t i = 0; i < sizeof(hw_plug_count) / sizeof(hw_plug_count[0]); i++) {
		if (hw_plug_count[i].profile == p || !hw_plug_count[i].profile) {
			hw_plug_count[i].profile = p;
			return &hw_plug_count[i].plugged;
		}
	}
	return NULL;
}

const char *hw_hotplug_state_name(enum hw_hotplug_state state)
{
	switch (state) {
	case HW_HOTPLUG_POWER_OFF:
		return "POWER_OFF";
	case HW_HOTPLUG_POWER_ON_PENDING:
		return "POWER_ON_PENDING";
	case HW_HOTPLUG_POWER_ON:
		return "POWER_ON";
	case HW_HOTPLUG_POWER_OFF_PENDING:
		return "POWER_OFF_PENDING";
	}
	return "?";
}

const char *hw_db_mode_name(enum hw_db_mode mode)
{
	return mode == HW_DB_MODE_MMAP ? "mmap" : "trap";
}

static void hw_dev_set_state(struct hw_dev *dev, enum hw_hotplug_state state)
{
	if (dev->state == state)
		return;
	LOG_INFO(HW_LOG_COMP, "%s: hotplug state %s -> %s", dev->vuid,
		 hw_hotplug_state_name(dev->state), hw_hotplug_state_name(state));
	dev->state = state;
	if (dev->ops && dev->ops->hotplug_state_changed)
		dev->ops->hotplug_state_changed(dev, state, dev->arg);
}

struct hw_dev *hw_dev_create(struct hw_pci_type *type, struct evloop *loop,
			     const struct hw_dev_config *config, const struct hw_dev_ops *ops,
			     void *arg)
{
	struct hw_dev *dev;
	int rc;

	if (!type || !type->started || !loop || !config || !config->vuid || !config->socket_path ||
	    strlen(config->vuid) >= sizeof(dev->vuid)) {
		errno = EINVAL;
		return NULL;
	}
	dev = calloc(1, sizeof(*dev));
	if (!dev)
		return NULL;
	dev->type = type;
	dev->loop = loop;
	snprintf(dev->vuid, sizeof(dev->vuid), "%s", config->vuid);
	dev->ep_cfg = (struct vfu_endpoint_config){
	    .mode = config->socket_mode ? config->socket_mode : 0600,
	    .max_dma_regions = config->max_dma_regions,
	    .max_dma_bytes = config->max_dma_bytes,
	    .allow_any_dma_fd = config->allow_any_dma_fd,
	};
	dev->db_mode = config->db_mode;
	dev->ops = ops;
	dev->arg = arg;
	dev->err_fd = -1;
	dev->state = HW_HOTPLUG_POWER_OFF;
	dev->socket_path = strdup(config->socket_path);
	dev->rs = calloc(type->nr_regions ? type->nr_regions : 1, sizeof(*dev->rs));
	if (!dev->socket_path || !dev->rs) {
		rc = -ENOMEM;
		goto out_free;
	}
	rc = hw_msix_init(&dev->msix, type->num_msix);
	if (rc)
		goto out_free;
	rc = hw_bars_init(dev);
	if (rc)
		goto out_msix;
	rc = hw_stateful_init(dev);
	if (rc)
		goto out_bars;
	hw_pci_config_init(&dev->cfg, type);
	type->nr_devices++;
	return dev;

out_bars:
	hw_bars_fini(dev);
out_msix:
	hw_msix_fini(&dev->msix);
out_free:
	free(dev->rs);
	free(dev->socket_path);
	free(dev);
	errno = -rc;
	return NULL;
}

int hw_dev_destroy(struct hw_dev *dev)
{
	if (!dev)
		return 0;
	if (dev->state != HW_HOTPLUG_POWER_OFF) {
		LOG_ERR(HW_LOG_COMP, "%s: destroy while %s: unplug first", dev->vuid,
			hw_hotplug_state_name(dev->state));
		return -EBUSY;
	}
	hw_dbs_fini(dev);
	for (uint16_t v = 0; v < dev->msix.nr_vectors; v++)
		hw_msix_vector_destroy(dev->msix.vec[v].obj);
	hw_stateful_fini(dev);
	hw_bars_fini(dev);
	hw_msix_fini(&dev->msix);
	dev->type->nr_devices--;
	free(dev->rs);
	free(dev->socket_path);
	free(dev);
	return 0;
}

int hw_dev_hotplug(struct hw_dev *dev)
{
	const struct hw_profile *p = dev->type->profile;
	unsigned int *plugged = hw_dev_plug_counter(p);

	if (dev->state != HW_HOTPLUG_POWER_OFF)
		return -EBUSY;
	if (!plugged)
		return -ENOMEM;
	if (*plugged >= p->max_hotplug_devices) {
		LOG_ERR(HW_LOG_COMP,
			"%s: hotplug refused: max_hotplug_devices %u of profile %s reached",
			dev->vuid, p->max_hotplug_devices, p->name);
		return -ENOSPC;
	}
	/* A hotplug is a power-on: device defaults take effect now. */
	hw_pci_config_init(&dev->cfg, dev->type);
	hw_msix_reset(&dev->msix);
	hw_stateful_reset(dev);
	hw_bars_reset(dev);
	dev->ep =
	    vfu_endpoint_create(dev->loop, dev->socket_path, &dev->ep_cfg, &hw_dev_ep_ops, dev);
	if (!dev->ep) {
		int rc = errno ? -errno : -EIO;

		LOG_ERR(HW_LOG_COMP, "%s: cannot listen on %s: %d", dev->vuid, dev->socket_path,
			rc);
		return rc;
	}
	dev->dma = vfu_endpoint_dma(dev->ep);
	(*plugged)++;
	hw_dev_set_state(dev, HW_HOTPLUG_POWER_ON_PENDING);
	return 0;
}

/* The last step of an unplug, once the client's detach finished: the socket
 * goes and the device is off. Runs as a deferred call when the detach
 * finished inside an upper layer's call (it may then destroy the device from
 * its state callback). */
static void hw_dev_unplug_continue(void *arg)
{
	struct hw_dev *dev = arg;

	dev->unplug_defer = false;
	if (dev->state != HW_HOTPLUG_POWER_OFF_PENDING || !vfu_endpoint_idle(dev->ep))
		return;
	if (vfu_endpoint_destroy(dev->ep))
		return;
	dev->ep = NULL;
	dev->dma = NULL;
	(*hw_dev_plug_counter(dev->type->profile))--;
	hw_dev_set_state(dev, HW_HOTPLUG_POWER_OFF);
}

int hw_dev_hotunplug(struct hw_dev *dev)
{
	if (dev->state == HW_HOTPLUG_POWER_OFF)
		return 0;
	if (dev->state == HW_HOTPLUG_POWER_OFF_PENDING)
		return HW_EVENT_ASYNC;
	hw_dev_set_state(dev, HW_HOTPLUG_POWER_OFF_PENDING);
	/* Drops the client first: its detach runs the client-gone FLR, which
	 * may finish later. */
	vfu_endpoint_disconnect(dev->ep);
	if (!vfu_endpoint_idle(dev->ep))
		return HW_EVENT_ASYNC;
	hw_dev_unplug_continue(dev);
	return 0;
}

enum hw_hotplug_state hw_dev_get_hotplug_state(const struct hw_dev *dev)
{
	return dev->state;
}

const char *hw_dev_vuid(const struct hw_dev *dev)
{
	return dev->vuid;
}

const char *hw_dev_socket_path(const struct hw_dev *dev)
{
	return dev->socket_path;
}

struct hw_pci_type *hw_dev_type(const struct hw_dev *dev)
{
	return dev->type;
}

enum hw_db_mode hw_dev_db_mode(const struct hw_dev *dev)
{
	if (dev->state != HW_HOTPLUG_POWER_ON)
		return HW_DB_MODE_TRAP;
	return dev->db_mapped ? HW_DB_MODE_MMAP : HW_DB_MODE_TRAP;
}

void hw_dev_get_stats(const struct hw_dev *dev, struct hw_dev_stats *st)
{
	struct vfu_endpoint_stats es = {0};

	if (dev->ep)
		vfu_endpoint_get_stats(dev->ep, &es);
	*st = (struct hw_dev_stats){
	    .msgs_rx = es.msgs_rx,
	    .msgs_tx = es.msgs_tx,
	    .errors_replied = es.errors_replied,
	    .bad_messages = es.bad_messages,
	    .disconnects = es.disconnects,
	    .region_reads = es.region_reads,
	    .region_writes = es.region_writes,
	    .posted_writes = es.posted_writes,
	    .db_writes = dev->db_writes,
	    .db_invalid_writes = dev->db_invalid_writes,
	    .msix_raised = atomic_load(&dev->msix.raised),
	    .msix_pended = atomic_load(&dev->msix.pended),
	    .dma_maps = es.dma_maps,
	    .dma_unmaps = es.dma_unmaps,
	    .clients_attached = es.clients_attached,
	    .bar_disabled_accesses = dev->bar_disabled_accesses,
	    .socket_reads = es.socket_reads,
	    .write_multis = es.write_multis,
	    .dma_faults = es.dma_faults,
	};
}

/* ------------------------------------------------------------------------ */
/* FLR.                                                                     */

/* The reset proper, once the handler has released the device's resources:
 * config space to power-on values (COMMAND 0, MSI-X off, PM D0), MSI-X
 * state cleared, stateful regions back to their defaults (device defaults
 * take effect now), doorbell pages zeroed. The DMA table is kept. */
static void hw_dev_flr_finish(struct hw_dev *dev, enum hw_dev_event ev)
{
	hw_pci_config_init(&dev->cfg, dev->type);
	hw_msix_reset(&dev->msix);
	hw_stateful_reset(dev);
	hw_bars_reset(dev);
	LOG_INFO(HW_LOG_COMP, "%s: function level reset done%s", dev->vuid,
		 ev == HW_DEV_EV_FLR_GONE ? " (client gone)" : "");
	if (ev == HW_DEV_EV_FLR_GONE && dev->state == HW_HOTPLUG_POWER_ON)
		hw_dev_set_state(dev, HW_HOTPLUG_POWER_ON_PENDING);
}

static const char *hw_dev_event_name(enum hw_dev_event ev)
{
	switch (ev) {
	case HW_DEV_EV_UNMAP:
		return "dma_unmap";
	case HW_DEV_EV_MASTER_OFF:
		return "bus master disable";
	default:
		return "FLR";
	}
}

/* Calls an flr / dma_unmap / bus master handler with the event recorded as pending, so
 * hw_dev_event_done works from inside the handler too. Returns 0 when the
 * event is complete, HW_EVENT_ASYNC while it is not. */
static int hw_dev_call_event(struct hw_dev *dev, enum hw_dev_event ev, uint64_t iova, uint64_t len)
{
	int rc = 0;

	dev->pending_ev = ev;
	dev->ev_done_early = false;
	dev->in_event = true;
	if (ev == HW_DEV_EV_UNMAP)
		rc = dev->ops->dma_unmap(dev, iova, len, dev->arg);
	else if (ev == HW_DEV_EV_MASTER_OFF)
		rc = dev->ops->bus_master_changed(dev, false, dev->arg);
	else if (dev->ops && dev->ops->flr)
		rc = dev->ops->flr(dev, ev == HW_DEV_EV_FLR_GONE, dev->arg);
	dev->in_event = false;
	if (rc == HW_EVENT_ASYNC && !dev->ev_done_early)
		return HW_EVENT_ASYNC;
	if (rc < 0)
		LOG_ERR(HW_LOG_COMP, "%s: %s handler failed: %d; going on", dev->vuid,
			hw_dev_event_name(ev), rc);
	dev->pending_ev = HW_DEV_EV_NONE;
	return 0;
}

int hw_dev_flr_start(struct hw_dev *dev, enum hw_dev_event ev)
{
	if (dev->pending_ev != HW_DEV_EV_NONE) {
		/* Only the client leaving can overlap a pending event (the endpoint
		 * holds further messages): its reset runs once that event is done. */
		if (ev == HW_DEV_EV_FLR_GONE)
			dev->gone_deferred = true;
		return HW_EVENT_ASYNC;
	}
	if (hw_dev_call_event(dev, ev, 0, 0) == HW_EVENT_ASYNC)
		return HW_EVENT_ASYNC;
	hw_dev_flr_finish(dev, ev);
	return 0;
}

void hw_dev_event_done(struct hw_dev *dev)
{
	enum hw_dev_event ev = dev->pending_ev;

	if (dev->in_event) {
		dev->ev_done_early = true;
		return;
	}
	if (ev == HW_DEV_EV_NONE) {
		LOG_ERR(HW_LOG_COMP, "%s: event_done without a pending event", dev->vuid);
		return;
	}
	dev->pending_ev = HW_DEV_EV_NONE;
	if (ev == HW_DEV_EV_FLR || ev == HW_DEV_EV_FLR_GONE)
		hw_dev_flr_finish(dev, ev);
	if (ev == HW_DEV_EV_FLR_GONE) {
		/* The client's memory may go now; an unplug waiting for this
		 * finishes after the caller returned. */
		if (dev->ep)
			vfu_endpoint_detach_done(dev->ep);
		if (dev->state == HW_HOTPLUG_POWER_OFF_PENDING && !dev->unplug_defer) {
			if (evloop_defer(dev->loop, hw_dev_unplug_continue, dev))
				LOG_ERR(HW_LOG_COMP, "%s: cannot finish the unplug", dev->vuid);
			else
				dev->unplug_defer = true;
		}
	} else if (dev->ep) {
		/* Sends the held reply; a no-op when the client has gone meanwhile. */
		vfu_endpoint_resume(dev->ep, 0);
	}
	if (dev->gone_deferred) {
		dev->gone_deferred = false;
		if (hw_dev_flr_start(dev, HW_DEV_EV_FLR_GONE) == 0 && dev->ep)
			vfu_endpoint_detach_done(dev->ep);
	}
}

/* ------------------------------------------------------------------------ */
/* Endpoint callbacks.                                                      */

static int hw_dev_config_access(struct hw_dev *dev, uint64_t offset, void *buf, uint32_t count,
				bool is_write);

/* A client gets the function the way Linux's vfio-pci hands a device to its user: enabled, its
 * BARs decoded and its DMA on (pci_enable_device, and the bus mastering DPDK sets next).
 * Userspace drivers over vfio-user count on it: SPDK's never writes COMMAND, and would read all
 * ones from a function left at its reset value. A VMM resets the function for its guest (QEMU
 * clears memory space, I/O space and bus master at every reset of a vfio device), whose
 * firmware and driver enable it again. */
static void hw_dev_ep_attach(void *arg)
{
	struct hw_dev *dev = arg;
	uint16_t cmd = hw_pci_config_get16(&dev->cfg, HW_PCI_COMMAND) | HW_PCI_COMMAND_MEM |
		       HW_PCI_COMMAND_MASTER;

	hw_dev_set_state(dev, HW_HOTPLUG_POWER_ON);
	for (unsigned int b = 0; b < HW_NUM_BARS; b++)
		if (dev->type->bars[b].size && dev->type->bars[b].is_io)
			cmd |= HW_PCI_COMMAND_IO;
	/* Nothing is pending at attach (a client that left had its reset finish first), so the
	 * bus master event completes at once. */
	if (hw_dev_config_access(dev, HW_PCI_COMMAND, &cmd, sizeof(cmd), true))
		LOG_ERR(HW_LOG_COMP, "%s: cannot enable the function for its client", dev->vuid);
}

static int hw_dev_ep_detach(void *arg)
{
	struct hw_dev *dev = arg;

	/* A held read's reply went with the client. */
	dev->rd.held = false;
	/* Everything the client gave goes first: doorbells stop notifying,
	 * eventfds are closed. Its memory stays mapped until the FLR handler
	 * has stopped every use of it (then the endpoint unmaps it). */
	for (unsigned int i = 0; i < dev->type->nr_regions; i++)
		for (uint32_t s = 0; dev->rs[i].slots && s < dev->rs[i].nr_slots; s++)
			if (dev->rs[i].slots[s])
				hw_db_stop(dev->rs[i].slots[s]);
	for (unsigned int i = 0; i < dev->nr_by_data; i++)
		hw_db_stop(dev->by_data[i]);
	hw_msix_close_fds(&dev->msix);
	if (dev->err_fd >= 0) {
		close(dev->err_fd);
		dev->err_fd = -1;
	}
	atomic_fetch_add(&dev->client_gen, 1);
	return hw_dev_flr_start(dev, HW_DEV_EV_FLR_GONE) == HW_EVENT_ASYNC ? VFU_ASYNC : 0;
}

static void hw_dev_ep_device_info(void *arg, uint32_t *flags, uint32_t *num_regions,
				  uint32_t *num_irqs)
{
	*flags = VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI;
	*num_regions = VFIO_PCI_NUM_REGIONS;
	*num_irqs = VFIO_PCI_NUM_IRQS;
}

static int hw_dev_ep_region_info(void *arg, uint32_t index, struct vfu_region_desc *desc)
{
	struct hw_dev *dev = arg;

	if (index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;
	if (index <= VFIO_PCI_BAR5_REGION_INDEX) {
		hw_bar_region_desc(dev, (uint8_t)index, desc);
		return 0;
	}
	memset(desc, 0, sizeof(*desc));
	desc->mmap_fd = -1;
	if (index == VFIO_PCI_CONFIG_REGION_INDEX) {
		desc->size = HW_PCI_CONFIG_SIZE;
		desc->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;
	}
	/* ROM and VGA: absent (size 0). */
	return 0;
}

/* Bus Master Enable changed: a clear quiesces the user's DMA (the config write's reply waits for
 * it, so the host knows the function is quiet once its write completed); a set resumes it. */
static int hw_dev_bus_master_changed(struct hw_dev *dev)
{
	bool on = hw_pci_config_bus_master(&dev->cfg);

	LOG_INFO(HW_LOG_COMP, "%s: bus mastering %s", dev->vuid, on ? "enabled" : "disabled");
	if (on) {
		dev->ops->bus_master_changed(dev, true, dev->arg);
		return 0;
	}
	/* The endpoint holds further messages while an event is pending, and the client going
	 * away waits for it (gone_deferred): nothing else can be pending here. */
	return hw_dev_call_event(dev, HW_DEV_EV_MASTER_OFF, 0, 0);
}

static int hw_dev_config_access(struct hw_dev *dev, uint64_t offset, void *buf, uint32_t count,
				bool is_write)
{
	unsigned int ev;

	if (offset >= HW_PCI_CONFIG_SIZE || count > HW_PCI_CONFIG_SIZE - offset)
		return -EINVAL;
	if (!is_write) {
		hw_pci_config_read(&dev->cfg, (uint32_t)offset, buf, count);
		return 0;
	}
	ev = hw_pci_config_write(&dev->cfg, (uint32_t)offset, buf, count);
	if (ev & (HW_PCI_CFG_EV_MSIX | HW_PCI_CFG_EV_MASTER)) {
		bool en = hw_pci_config_msix_enabled(&dev->cfg);
		bool masked = hw_pci_config_msix_masked(&dev->cfg);

		/* An MSI-X message is a memory write: without bus mastering it stays
		 * pending, as for a masked function, and goes out once it is back. */
		hw_msix_set_state(&dev->msix, en,
				  masked || !hw_pci_config_bus_master(&dev->cfg));
		if ((ev & HW_PCI_CFG_EV_MSIX) && dev->ops && dev->ops->msix_state_changed)
			dev->ops->msix_state_changed(dev, en, masked, dev->arg);
	}
	/* An FLR resets COMMAND too and stops all DMA: it subsumes the rest. */
	if (ev & HW_PCI_CFG_EV_FLR)
		return hw_dev_flr_start(dev, HW_DEV_EV_FLR);
	if ((ev & HW_PCI_CFG_EV_MASTER) && dev->ops && dev->ops->bus_master_changed)
		return hw_dev_bus_master_changed(dev);
	return 0;
}

static int hw_dev_ep_region_access(void *arg, uint32_t index, uint64_t offset, void *buf,
				   uint32_t count, bool is_write)
{
	struct hw_dev *dev = arg;

	if (index == VFIO_PCI_CONFIG_REGION_INDEX)
		return hw_dev_config_access(dev, offset, buf, count, is_write);
	if (index <= VFIO_PCI_BAR5_REGION_INDEX)
		return hw_bar_access(dev, (uint8_t)index, offset, buf, count, is_write);
	return -EINVAL;
}

static int hw_dev_ep_irq_info(void *arg, uint32_t index, uint32_t *flags, uint32_t *count)
{
	struct hw_dev *dev = arg;

	*flags = 0;
	*count = 0;
	switch (index) {
	case VFIO_PCI_MSIX_IRQ_INDEX:
		/* No NORESIZE: QEMU then assigns vectors one SET_IRQS at a time. */
		*count = dev->cfg.has_msix ? dev->msix.nr_vectors : 0;
		break;
	case VFIO_PCI_ERR_IRQ_INDEX:
		*count = 1;
		break;
	case VFIO_PCI_INTX_IRQ_INDEX:
	case VFIO_PCI_MSI_IRQ_INDEX:
	case VFIO_PCI_REQ_IRQ_INDEX:
		break; /* no INTx (pin 0), no MSI, no request irq */
	default:
		return -EINVAL;
	}
	if (*count)
		*flags = VFIO_IRQ_INFO_EVENTFD;
	return 0;
}

static void hw_dev_close_fds(int *fds, size_t nfds)
{
	for (size_t i = 0; i < nfds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/* Interrupt fds come from the client: only an eventfd is accepted (a pipe or
 * socket could fill up), and it is made non-blocking, so no write to it can
 * ever block a thread of ours. 0 or -EINVAL. */
static int hw_dev_check_eventfd(int fd)
{
	char path[64], target[64];
	ssize_t n;
	int fl;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	n = readlink(path, target, sizeof(target) - 1);
	if (n < 0)
		return -EINVAL;
	target[n] = 0;
	if (strcmp(target, "anon_inode:[eventfd]") != 0)
		return -EINVAL;
	fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -EINVAL;
	return 0;
}

static int hw_dev_check_eventfds(struct hw_dev *dev, int *fds, size_t nfds)
{
	for (size_t i = 0; i < nfds; i++) {
		if (hw_dev_check_eventfd(fds[i])) {
			LOG_GUEST_ERR(HW_LOG_COMP, "%s: SET_IRQS fd %zu is not an eventfd: refused",
				      dev->vuid, i);
			hw_dev_close_fds(fds, nfds);
			return -EINVAL;
		}
	}
	return 0;
}

static int hw_dev_set_msix_irqs(struct hw_dev *dev, uint32_t data, uint32_t action, uint32_t start,
				uint32_t count, int *fds, size_t nfds, const uint8_t *bools)
{
	struct hw_msix *m = &dev->msix;

	if (action == VFIO_IRQ_SET_ACTION_TRIGGER) {
		if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
			int rc = 0;

			/* With fds: assign; without: de-assign the range (QEMU's
			 * "enable MSI-X with no vectors" form). Every fd is taken,
			 * also after a failure. */
			for (uint32_t i = 0; i < count; i++) {
				int r =
				    hw_msix_set_fd(m, (uint16_t)(start + i), nfds ? fds[i] : -1);

				if (r && !rc)
					rc = r;
			}
			return rc;
		}
		if (data == VFIO_IRQ_SET_DATA_NONE && count == 0) {
			hw_msix_close_fds(m); /* disable the whole index */
			return 0;
		}
		/* DATA_NONE / DATA_BOOL with a range: loop-back trigger. */
		for (uint32_t i = 0; i < count; i++)
			if (data == VFIO_IRQ_SET_DATA_NONE || bools[i])
				hw_msix_raise_num(m, (uint16_t)(start + i));
		return 0;
	}
	if (data == VFIO_IRQ_SET_DATA_EVENTFD) {
		hw_dev_close_fds(fds, nfds);
		return -EINVAL;
	}
	/* MASK / UNMASK act on the vector-control mask bit of the table. */
	for (uint32_t i = 0; i < count; i++) {
		uint32_t ctrl = action == VFIO_IRQ_SET_ACTION_MASK ? 1 : 0;

		if (data == VFIO_IRQ_SET_DATA_BOOL && !bools[i])
			continue;
		hw_msix_table_access(m, 16ull * (start + i) + 12, &ctrl, 4, true);
	}
	return 0;
}

static int hw_dev_ep_set_irqs(void *arg, uint32_t flags, uint32_t index, uint32_t start,
			      uint32_t count, int *fds, size_t nfds, const uint8_t *bools)
{
	struct hw_dev *dev = arg;
	uint32_t data = flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	uint32_t action = flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;

	if (nfds && nfds != count) {
		hw_dev_close_fds(fds, nfds);
		return -EINVAL;
	}
	if (hw_dev_check_eventfds(dev, fds, nfds))
		return -EINVAL;
	if (index == VFIO_PCI_MSIX_IRQ_INDEX && dev->cfg.has_msix &&
	    (uint64_t)start + count <= dev->msix.nr_vectors)
		return hw_dev_set_msix_irqs(dev, data, action, start, count, fds, nfds, bools);
	if (index == VFIO_PCI_ERR_IRQ_INDEX && action == VFIO_IRQ_SET_ACTION_TRIGGER &&
	    start + count <= 1 &&
	    (data == VFIO_IRQ_SET_DATA_EVENTFD || data == VFIO_IRQ_SET_DATA_NONE)) {
		if (data == VFIO_IRQ_SET_DATA_NONE && count) {
			/* Loop-back trigger: signalling ERR stops a QEMU VM; only
			 * do it when asked. Non-blocking: EAGAIN means it is
			 * signalled already. */
			uint64_t one = 1;

			if (dev->err_fd >= 0 && write(dev->err_fd, &one, sizeof(one)) < 0 &&
			    errno != EAGAIN)
				return -errno;
			return 0;
		}
		if (dev->err_fd >= 0)
			close(dev->err_fd);
		dev->err_fd = nfds ? fds[0] : -1;
		return 0;
	}
	/* The count-0 "disable index" form is valid for any index, also those
	 * with no interrupts (QEMU sends it for INTx). */
	if (data == VFIO_IRQ_SET_DATA_NONE && action == VFIO_IRQ_SET_ACTION_TRIGGER && !count &&
	    index < VFIO_PCI_NUM_IRQS)
		return 0;
	hw_dev_close_fds(fds, nfds);
	return -EINVAL;
}

static int hw_dev_ep_reset(void *arg)
{
	struct hw_dev *dev = arg;

	return hw_dev_flr_start(dev, HW_DEV_EV_FLR);
}

static int hw_dev_ep_dma_unmap(void *arg, uint64_t iova, uint64_t len)
{
	struct hw_dev *dev = arg;

	if (!dev->ops || !dev->ops->dma_unmap)
		return 0;
	return hw_dev_call_event(dev, HW_DEV_EV_UNMAP, iova, len) == HW_EVENT_ASYNC ? VFU_ASYNC : 0;
}

static void hw_dev_ep_dma_map(void *arg, uint64_t iova, uint64_t len, uint32_t prot)
{
	struct hw_dev *dev = arg;

	if (dev->ops && dev->ops->dma_map)
		dev->ops->dma_map(dev, iova, len, dev->arg);
}

const struct vfu_endpoint_ops hw_dev_ep_ops = {
    .attach = hw_dev_ep_attach,
    .detach = hw_dev_ep_detach,
    .device_info = hw_dev_ep_device_info,
    .region_info = hw_dev_ep_region_info,
    .region_access = hw_dev_ep_region_access,
    .irq_info = hw_dev_ep_irq_info,
    .set_irqs = hw_dev_ep_set_irqs,
    .reset = hw_dev_ep_reset,
    .dma_unmap = hw_dev_ep_dma_unmap,
    .dma_map = hw_dev_ep_dma_map,
};
