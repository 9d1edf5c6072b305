/* controller/nvm/fused.h - fused Compare and Write (NVMe Base 2.0 section 3.4.2, NVM Command Set
 * 3.2.x) and the LBA range locks that make it atomic against other writes of any queue, any
 * thread and any controller of the namespace (fused.c; its entry points are in nvm.h).
 *
 * Locks (one table per shared namespace, struct ctrlr_nvm_shared): while no Compare and Write
 * runs, a write only increments and decrements one atomic counter ("fast" writes). A Compare and
 * Write sets `cawing` first, then waits until the fast writes that started before it drained and
 * every earlier overlapping entry of the table finished; writes that start while `cawing` is set
 * go through the table and wait (FIFO, as queued requests, no thread ever sleeps) behind an
 * overlapping Compare and Write. Waiters are resumed on their own owner thread (ops->io_post).
 * The table's mutex is held only for list updates, never across I/O. */
#ifndef NVME_EMU_CONTROLLER_NVM_FUSED_H
#define NVME_EMU_CONTROLLER_NVM_FUSED_H

/* ctrlr_req.caw_state */
enum ctrlr_caw_state {
	CTRLR_CAW_NONE = 0,
	CTRLR_CAW_FAST,	   /* a write counted in `fast` */
	CTRLR_CAW_WAITING, /* in the table, waiting */
	CTRLR_CAW_ACTIVE,  /* in the table, running */
};

#endif
