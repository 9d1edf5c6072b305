/* controller/io_fused.h - fused Compare and Write (NVMe Base 2.0 section 3.4.2, NVM Command Set
 * 3.2.x) and the LBA range locks that make it atomic against other writes of any queue, any
 * thread and any controller of the namespace. Not for use outside controller/.
 *
 * Locks (one table per shared namespace, io_resv.h): while no Compare and Write runs, a write
 * only increments and decrements one atomic counter ("fast" writes). A Compare and Write sets
 * `cawing` first, then waits until the fast writes that started before it drained and every
 * earlier overlapping entry of the table finished; writes that start while `cawing` is set go
 * through the table and wait (FIFO, as queued requests, no thread ever sleeps) behind an
 * overlapping Compare and Write. Waiters are resumed on their own owner thread (ops->io_post).
 * The table's mutex is held only for list updates, never across I/O. */
#ifndef NVME_EMU_CONTROLLER_IO_FUSED_H
#define NVME_EMU_CONTROLLER_IO_FUSED_H

#include <stdbool.h>
#include <stdint.h>

struct ctrlr_req;
struct ctrlr_caw_locks;

/* ctrlr_req.caw_state */
enum ctrlr_caw_state {
	CTRLR_CAW_NONE = 0,
	CTRLR_CAW_FAST,	       /* a write counted in `fast` */
	CTRLR_CAW_WAITING,     /* in the table, waiting */
	CTRLR_CAW_ACTIVE,      /* in the table, running */
};

int ctrlr_caw_locks_create(struct ctrlr_caw_locks **out);
void ctrlr_caw_locks_destroy(struct ctrlr_caw_locks *l);

/* A write-group command (req->ns set) is about to run `exec`: returns true when it must wait
 * (exec(req) then runs later on the owner thread), false to run now. Owner thread. */
bool ctrlr_caw_write_begin(struct ctrlr_req *req, void (*exec)(struct ctrlr_req *req));
/* The write completed (ctrlr_req_complete calls it while req->ns is still held). */
void ctrlr_caw_write_end(struct ctrlr_req *req);

/* io_cmd.c hands every command with a FUSE field here. Owner thread. */
void ctrlr_io_fused(struct ctrlr_req *req);

#endif
