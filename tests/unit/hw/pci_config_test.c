/* tests/unit/hw/pci_config_test.c - the emulated config space through the
 * device's vfio-user callbacks: IDs, BAR sizing, ROM, caps chain, read-only
 * masking, MSI-X control, FLR self-clearing, region/irq info. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "common/evloop.h"
#include "hw/hw_internal.h"
#include "vfu/vfu.h"
#include "tests/unit/cunit_runner.h"
#include "tests/unit/hw/hw_test_util.h"

static struct evloop *loop;
static struct hw_pci_type *type;
static struct hw_dev *dev;
static unsigned int flr_calls, msix_calls, unmap_calls, master_calls;
static bool last_master;
static bool flr_async, flr_done_inside, last_en, last_masked, last_gone;

static int cfg_test_flr(struct hw_dev *d, bool client_gone, void *arg)
{
	flr_calls++;
	last_gone = client_gone;
	if (flr_done_inside) {
		hw_dev_event_done(d);
		return HW_EVENT_ASYNC;
	}
	return flr_async ? HW_EVENT_ASYNC : 0;
}

static int cfg_test_unmap(struct hw_dev *d, uint64_t iova, uint64_t len, void *arg)
{
	unmap_calls++;
	return HW_EVENT_ASYNC;
}

static int cfg_test_master(struct hw_dev *d, bool enabled, void *arg)
{
	master_calls++;
	last_master = enabled;
	return enabled ? 0 : HW_EVENT_ASYNC;
}

static void cfg_test_msix(struct hw_dev *d, bool en, bool masked, void *arg)
{
	msix_calls++;
	last_en = en;
	last_masked = masked;
}

static const struct hw_dev_ops cfg_test_ops = {
    .flr = cfg_test_flr,
    .msix_state_changed = cfg_test_msix,
    .dma_unmap = cfg_test_unmap,
    .bus_master_changed = cfg_test_master,
};

static int cfg_test_setup(void)
{
	loop = evloop_create();
	type = hw_test_nvme_type(4);
	if (!loop || hw_pci_type_start(type, hw_profile_find("bf3"), NULL, 0))
		return -1;
	return 0;
}

static int cfg_test_teardown(void)
{
	hw_pci_type_destroy(type);
	evloop_destroy(loop);
	return 0;
}

static void cfg_before(void)
{
	dev = hw_test_dev(type, loop, &cfg_test_ops, NULL, HW_DB_MODE_TRAP);
	CU_ASSERT_FATAL(dev != NULL);
	flr_calls = msix_calls = unmap_calls = master_calls = 0;
	flr_async = flr_done_inside = false;
}

static uint32_t cfg_rd(uint32_t off, uint32_t len)
{
	uint32_t v = 0;

	CU_ASSERT_EQUAL(
	    hw_dev_ep_ops.region_access(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, len, false), 0);
	return v;
}

static int cfg_wr(uint32_t off, uint32_t v, uint32_t len)
{
	return hw_dev_ep_ops.region_access(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, len, true);
}

static void test_ids_and_header(void)
{
	cfg_before();
	CU_ASSERT_EQUAL(cfg_rd(0x00, 2), 0x4e58);
	CU_ASSERT_EQUAL(cfg_rd(0x02, 2), 0x0001);
	CU_ASSERT_EQUAL(cfg_rd(0x00, 4), 0x00014e58);
	CU_ASSERT_EQUAL(cfg_rd(0x08, 4), 0x01080202); /* class 010802, revision 2 */
	CU_ASSERT_EQUAL(cfg_rd(0x06, 2), HW_PCI_STATUS_CAP_LIST);
	CU_ASSERT_EQUAL(cfg_rd(0x0e, 1), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x2c, 4), 0x12344e58);
	CU_ASSERT_EQUAL(cfg_rd(0x3d, 1), 0); /* no INTx */
	CU_ASSERT_EQUAL(cfg_rd(0x100, 4), 0);
	/* Whole-space read as QEMU does at realize. */
	static uint8_t all[4096];
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_access(dev, 7, 0, all, sizeof(all), false), 0);
	CU_ASSERT_EQUAL(all[0], 0x58);
	hw_dev_destroy(dev);
}

static void test_bar_sizing(void)
{
	cfg_before();
	CU_ASSERT_EQUAL(cfg_rd(0x10, 4), 0x4); /* 64-bit, non-prefetchable memory */
	CU_ASSERT_EQUAL(cfg_wr(0x10, 0xffffffff, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x10, 4), 0xffffc004); /* 16 KiB */
	CU_ASSERT_EQUAL(cfg_wr(0x14, 0xffffffff, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x14, 4), 0xffffffff);
	CU_ASSERT_EQUAL(cfg_wr(0x10, 0xfebd5000, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x10, 4), 0xfebd4004);	 /* masked by size, type kept */
	CU_ASSERT_EQUAL(cfg_wr(0x18, 0xffffffff, 4), 0); /* absent BAR2 */
	CU_ASSERT_EQUAL(cfg_rd(0x18, 4), 0);
	/* ROM: sizing write reads back 0, so QEMU registers no ROM. */
	CU_ASSERT_EQUAL(cfg_wr(0x30, 0xfffff800, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x30, 4), 0);
	/* Byte writes into a BAR register. */
	CU_ASSERT_EQUAL(cfg_wr(0x11, 0xff, 1), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x10, 4) & 0xff00, 0xc000);
	hw_dev_destroy(dev);
}

static void test_caps_chain(void)
{
	cfg_before();
	CU_ASSERT_EQUAL(cfg_rd(0x34, 1), 0x40);
	CU_ASSERT_EQUAL(cfg_rd(0x40, 1), 0x01); /* PM */
	CU_ASSERT_EQUAL(cfg_rd(0x41, 1), 0x48);
	CU_ASSERT_EQUAL(cfg_rd(0x42, 2) & 7, 3);
	CU_ASSERT_EQUAL(cfg_rd(0x48, 1), 0x10); /* PCI Express */
	CU_ASSERT_EQUAL(cfg_rd(0x49, 1), 0x84);
	CU_ASSERT_EQUAL(cfg_rd(0x4a, 2) & 0xf, 2);	  /* version 2 */
	CU_ASSERT_EQUAL((cfg_rd(0x4a, 2) >> 4) & 0xf, 0); /* endpoint */
	CU_ASSERT(cfg_rd(0x4c, 4) & (1u << 28));	  /* FLR */
	CU_ASSERT(cfg_rd(0x4c, 4) & (1u << 15));	  /* RBER */
	CU_ASSERT_EQUAL(cfg_rd(0x84, 1), 0x11);		  /* MSI-X */
	CU_ASSERT_EQUAL(cfg_rd(0x85, 1), 0x00);
	CU_ASSERT_EQUAL(cfg_rd(0x86, 2), 3);	      /* table size - 1 */
	CU_ASSERT_EQUAL(cfg_rd(0x88, 4), 0x2000 | 0); /* offset | BIR */
	CU_ASSERT_EQUAL(cfg_rd(0x8c, 4), 0x3000 | 0);
	hw_dev_destroy(dev);
}

static void test_read_only_masking(void)
{
	cfg_before();
	CU_ASSERT_EQUAL(cfg_wr(0x00, 0xffffffff, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x00, 4), 0x00014e58);
	CU_ASSERT_EQUAL(cfg_wr(0x04, 0xffffffff, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 0x0507); /* IO MEM MASTER SERR INTX_DISABLE */
	CU_ASSERT_EQUAL(cfg_rd(0x06, 2), HW_PCI_STATUS_CAP_LIST);
	CU_ASSERT_EQUAL(cfg_wr(0x86, 0x07ff, 2), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x86, 2), 3);
	CU_ASSERT_EQUAL(cfg_wr(0x3d, 0x01, 1), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x3d, 1), 0);
	CU_ASSERT_EQUAL(cfg_wr(0x3c, 0x0b, 1), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x3c, 1), 0x0b);
	CU_ASSERT_EQUAL(cfg_wr(0x4c, 0, 4), 0); /* DEVCAP read-only */
	CU_ASSERT(cfg_rd(0x4c, 4) & (1u << 28));
	CU_ASSERT_EQUAL(cfg_wr(0x44, 0xffff, 2), 0); /* PMCSR: state bits only */
	CU_ASSERT_EQUAL(cfg_rd(0x44, 2), 0x000b);
	CU_ASSERT_EQUAL(cfg_wr(0x100, 0xffffffff, 4), 0);
	CU_ASSERT_EQUAL(cfg_rd(0x100, 4), 0);
	CU_ASSERT_EQUAL(cfg_wr(0xffe, 0xffff, 2), 0);
	CU_ASSERT_EQUAL(cfg_wr(0xfff, 0xffff, 2), -EINVAL); /* past the end */
	CU_ASSERT_EQUAL(flr_calls, 0);
	hw_dev_destroy(dev);
}

static void test_flr_bit(void)
{
	cfg_before();
	cfg_wr(0x04, 0x0006, 2);
	cfg_wr(0x86, 0x8000, 2);
	cfg_wr(0x44, 0x3, 2);
	CU_ASSERT_EQUAL(cfg_wr(0x50, 0x8000 | 0x2810, 2), 0);
	CU_ASSERT_EQUAL(flr_calls, 1);
	CU_ASSERT_EQUAL(cfg_rd(0x50, 2) & 0x8000, 0); /* self-clearing */
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 0);	      /* COMMAND reset */
	CU_ASSERT_EQUAL(cfg_rd(0x86, 2), 3);	      /* MSI-X disabled */
	CU_ASSERT_EQUAL(cfg_rd(0x44, 2) & 3, 0);      /* D0 */
	/* Byte write of DEVCTL's high byte works too. */
	CU_ASSERT_EQUAL(cfg_wr(0x51, 0x80, 1), 0);
	CU_ASSERT_EQUAL(flr_calls, 2);
	/* Asynchronous handler: the write is held until event_done. */
	flr_async = true;
	cfg_wr(0x04, 0x0002, 2);
	CU_ASSERT_EQUAL(cfg_wr(0x50, 0x8000, 2), HW_EVENT_ASYNC);
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 2); /* not reset yet */
	hw_dev_event_done(dev);
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 0);
	/* DEVICE_RESET takes the same path. */
	flr_async = false;
	CU_ASSERT_EQUAL(hw_dev_ep_ops.reset(dev), 0);
	CU_ASSERT_EQUAL(flr_calls, 4);
	hw_dev_destroy(dev);
}

static void test_msix_control_event(void)
{
	cfg_before();
	CU_ASSERT_EQUAL(cfg_wr(0x86, 0xc000, 2), 0);
	CU_ASSERT_EQUAL(msix_calls, 1);
	CU_ASSERT_TRUE(last_en);
	CU_ASSERT_TRUE(last_masked);
	CU_ASSERT_EQUAL(cfg_wr(0x86, 0x8000, 2), 0);
	CU_ASSERT_EQUAL(msix_calls, 2);
	CU_ASSERT_FALSE(last_masked);
	CU_ASSERT_EQUAL(cfg_wr(0x86, 0x8000, 2), 0); /* no change, no event */
	CU_ASSERT_EQUAL(msix_calls, 2);
	CU_ASSERT_TRUE(atomic_load(&dev->msix.enabled));
	hw_dev_destroy(dev);
}

static void test_device_and_region_info(void)
{
	struct vfu_region_desc d;
	uint32_t flags, nr, ni;

	cfg_before();
	hw_dev_ep_ops.device_info(dev, &flags, &nr, &ni);
	CU_ASSERT_EQUAL(flags, VFIO_DEVICE_FLAGS_RESET | VFIO_DEVICE_FLAGS_PCI);
	CU_ASSERT_EQUAL(nr, 9);
	CU_ASSERT_EQUAL(ni, 5);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 0, &d), 0);
	CU_ASSERT_EQUAL(d.size, 0x4000);
	CU_ASSERT_EQUAL(d.flags, VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE);
	CU_ASSERT_EQUAL(d.mmap_fd, -1);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 1, &d), 0);
	CU_ASSERT_EQUAL(d.size, 0); /* upper half of BAR0 */
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 6, &d), 0);
	CU_ASSERT_EQUAL(d.size, 0);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 7, &d), 0);
	CU_ASSERT_EQUAL(d.size, 4096);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 8, &d), 0);
	CU_ASSERT_EQUAL(d.size, 0);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 9, &d), -EINVAL);
	hw_dev_destroy(dev);

	/* mmap mode: BAR0 is a memfd and only the doorbell page is offered. */
	dev = hw_test_dev(type, loop, &cfg_test_ops, NULL, HW_DB_MODE_MMAP);
	CU_ASSERT_FATAL(dev != NULL);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.region_info(dev, 0, &d), 0);
	CU_ASSERT(d.flags & VFIO_REGION_INFO_FLAG_MMAP);
	CU_ASSERT(d.mmap_fd >= 0);
	CU_ASSERT_EQUAL(d.nr_sparse, 1);
	CU_ASSERT_EQUAL(d.sparse[0].offset, 0x1000);
	CU_ASSERT_EQUAL(d.sparse[0].size, 0x1000);
	hw_dev_destroy(dev);
}

static void test_irq_info_and_set_irqs(void)
{
	uint32_t flags, count;
	uint64_t cnt;
	int fds[1];

	cfg_before();
	CU_ASSERT_EQUAL(hw_dev_ep_ops.irq_info(dev, 2, &flags, &count), 0);
	CU_ASSERT_EQUAL(flags, VFIO_IRQ_INFO_EVENTFD); /* no NORESIZE */
	CU_ASSERT_EQUAL(count, 4);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.irq_info(dev, 3, &flags, &count), 0);
	CU_ASSERT_EQUAL(count, 1);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.irq_info(dev, 0, &flags, &count), 0);
	CU_ASSERT_EQUAL(count, 0);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.irq_info(dev, 5, &flags, &count), -EINVAL);

	int efd = eventfd(0, EFD_NONBLOCK);

	fds[0] = dup(efd);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x24, 2, 1, 1, fds, 1, NULL), 0);
	cfg_wr(0x86, 0x8000, 2);
	struct hw_msix_vector *v = hw_msix_vector_create(dev, 1);

	CU_ASSERT_FATAL(v != NULL);
	CU_ASSERT_EQUAL(hw_msix_vector_raise(v), 0);
	CU_ASSERT_EQUAL(read(efd, &cnt, 8), 8);
	CU_ASSERT_EQUAL(cnt, 1);
	/* "Enable with no vectors": de-assign. */
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x24, 2, 1, 1, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(hw_msix_vector_raise(v), -ENODEV);
	fds[0] = dup(efd);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x24, 2, 1, 1, fds, 1, NULL), 0);
	/* Count-0 DATA_NONE: disable the index. */
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x21, 2, 0, 0, NULL, 0, NULL), 0);
	CU_ASSERT_EQUAL(hw_msix_vector_raise(v), -ENODEV);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x21, 0, 0, 0, NULL, 0, NULL), 0); /* INTx */
	/* ERR eventfd. */
	fds[0] = dup(efd);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x24, 3, 0, 1, fds, 1, NULL), 0);
	CU_ASSERT(dev->err_fd >= 0);
	/* Bad: MASK with eventfds; fd is consumed anyway. */
	fds[0] = dup(efd);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x0c, 2, 0, 1, fds, 1, NULL), -EINVAL);
	CU_ASSERT_EQUAL(hw_msix_vector_create(dev, 1), NULL);
	CU_ASSERT_EQUAL(errno, EEXIST);
	CU_ASSERT_EQUAL(hw_msix_vector_create(dev, 4), NULL);
	CU_ASSERT_EQUAL(errno, EINVAL);
	hw_msix_vector_destroy(v);
	close(efd);
	hw_dev_destroy(dev);
}

/* Event completion corner cases: done from inside the handler, and the
 * client leaving while an event is pending (its reset runs afterwards). */
static void test_event_completion(void)
{
	cfg_before();
	flr_done_inside = true;
	cfg_wr(0x04, 0x0006, 2);
	CU_ASSERT_EQUAL(cfg_wr(0x50, 0x8000, 2), 0); /* completed at once */
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 0);
	CU_ASSERT_EQUAL(dev->pending_ev, HW_DEV_EV_NONE);
	flr_done_inside = false;

	flr_async = true;
	CU_ASSERT_EQUAL(hw_dev_ep_ops.reset(dev), HW_EVENT_ASYNC);
	CU_ASSERT_EQUAL(flr_calls, 2);
	hw_dev_ep_ops.detach(dev); /* client gone meanwhile */
	CU_ASSERT_EQUAL(flr_calls, 2);
	hw_dev_event_done(dev); /* ends the reset, then the client-gone FLR runs */
	CU_ASSERT_EQUAL(flr_calls, 3);
	CU_ASSERT_TRUE(last_gone);
	hw_dev_event_done(dev);
	CU_ASSERT_EQUAL(dev->pending_ev, HW_DEV_EV_NONE);

	/* DMA unmap held until done; the client leaving meanwhile. */
	CU_ASSERT_EQUAL(hw_dev_ep_ops.dma_unmap(dev, 0x1000, 0x1000), HW_EVENT_ASYNC);
	CU_ASSERT_EQUAL(unmap_calls, 1);
	hw_dev_ep_ops.detach(dev);
	CU_ASSERT_EQUAL(flr_calls, 3);
	hw_dev_event_done(dev);
	CU_ASSERT_EQUAL(flr_calls, 4);
	hw_dev_event_done(dev);
	/* A stray event_done is ignored. */
	hw_dev_event_done(dev);
	CU_ASSERT_EQUAL(dev->pending_ev, HW_DEV_EV_NONE);
	hw_dev_destroy(dev);
}

/* COMMAND gates the function: Memory Space Enable decodes the BARs (off: reads all ones,
 * writes dropped); Bus Master Enable off quiesces the user (its handler's event holds the config
 * write's reply) and holds MSI-X messages pending until it is back. */
static void test_command_gating(void)
{
	uint32_t v = 0x12345678, rd = 0;
	struct hw_dev_stats st;
	uint64_t cnt;
	int fds[1];

	cfg_before();
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x10, &v, 4, true), 0); /* stateful scratch */
	CU_ASSERT_EQUAL(cfg_wr(0x04, 0x0004, 2), 0); /* memory space off, master on */
	CU_ASSERT_EQUAL(master_calls, 0);		/* master did not change */
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x10, &rd, 4, false), 0);
	CU_ASSERT_EQUAL(rd, 0xffffffffu);
	v = 0xdeadbeef;
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x10, &v, 4, true), 0); /* dropped */
	hw_dev_get_stats(dev, &st);
	CU_ASSERT_EQUAL(st.bar_disabled_accesses, 2);
	CU_ASSERT_EQUAL(cfg_wr(0x04, 0x0006, 2), 0);
	CU_ASSERT_EQUAL(hw_bar_access(dev, 0, 0x10, &rd, 4, false), 0);
	CU_ASSERT_EQUAL(rd, 0x12345678);

	/* MSI-X on vector 1, then bus mastering off: the raise stays pending. */
	int efd = eventfd(0, EFD_NONBLOCK);

	fds[0] = dup(efd);
	CU_ASSERT_EQUAL(hw_dev_ep_ops.set_irqs(dev, 0x24, 2, 1, 1, fds, 1, NULL), 0);
	cfg_wr(0x86, 0x8000, 2);
	struct hw_msix_vector *vec = hw_msix_vector_create(dev, 1);

	CU_ASSERT_FATAL(vec != NULL);
	CU_ASSERT_EQUAL(cfg_wr(0x04, 0x0002, 2), HW_EVENT_ASYNC); /* reply held */
	CU_ASSERT_EQUAL(master_calls, 1);
	CU_ASSERT_FALSE(last_master);
	CU_ASSERT_EQUAL(dev->pending_ev, HW_DEV_EV_MASTER_OFF);
	hw_dev_event_done(dev);
	CU_ASSERT_EQUAL(dev->pending_ev, HW_DEV_EV_NONE);
	CU_ASSERT_EQUAL(flr_calls, 0); /* not an FLR */
	CU_ASSERT_EQUAL(hw_msix_vector_raise(vec), 1); /* pended */
	CU_ASSERT_EQUAL(read(efd, &cnt, 8), -1);
	CU_ASSERT_EQUAL(cfg_wr(0x04, 0x0006, 2), 0); /* back on: delivered */
	CU_ASSERT_EQUAL(master_calls, 2);
	CU_ASSERT_TRUE(last_master);
	CU_ASSERT_EQUAL(read(efd, &cnt, 8), 8);
	CU_ASSERT_EQUAL(cnt, 1);
	CU_ASSERT_EQUAL(hw_msix_vector_raise(vec), 0);
	CU_ASSERT_EQUAL(read(efd, &cnt, 8), 8);

	/* An FLR in the same write subsumes the bus master change (COMMAND back to 0). */
	flr_async = false;
	{
		uint8_t w[0x50 - 0x04 + 2];

		hw_pci_config_read(&dev->cfg, 0x04, w, sizeof(w));
		w[0] = 0x02;			  /* COMMAND: master off */
		w[sizeof(w) - 1] |= 0x80;	  /* DEVCTL initiate FLR */
		CU_ASSERT_EQUAL(hw_dev_ep_ops.region_access(dev, VFIO_PCI_CONFIG_REGION_INDEX, 0x04,
							    w, sizeof(w), true),
				0);
	}
	CU_ASSERT_EQUAL(flr_calls, 1);
	CU_ASSERT_EQUAL(master_calls, 2);
	CU_ASSERT_EQUAL(cfg_rd(0x04, 2), 0);
	hw_msix_vector_destroy(vec);
	close(efd);
	hw_dev_destroy(dev);
}

CUNIT_SUITE(hw_pci_config, cfg_test_setup, cfg_test_teardown,
	    {"ids_and_header", test_ids_and_header}, {"bar_sizing", test_bar_sizing},
	    {"caps_chain", test_caps_chain}, {"read_only_masking", test_read_only_masking},
	    {"flr_bit", test_flr_bit}, {"msix_control_event", test_msix_control_event},
	    {"device_and_region_info", test_device_and_region_info},
	    {"irq_info_and_set_irqs", test_irq_info_and_set_irqs},
	    {"event_completion", test_event_completion},
	    {"command_gating", test_command_gating})
