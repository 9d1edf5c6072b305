/* tests/unit/backend/bdev_uring_test.c - the aio bdev's whole suite (bdev_aio_test.c) run on the
 * io_uring bdev: round trips aligned and not, flush and FUA seen by a plain read, hole punching,
 * write zeroes, eventfd completion, queue depth under load, block devices, bad options. */
#define BDEV_FILE_UT_CREATE bdev_uring_create
#define BDEV_FILE_UT_MODULE "uring"
#define BDEV_FILE_UT_SUITE bdev_uring
#include "tests/unit/backend/bdev_aio_test.c"
