/* tests/unit/backend/bdev_uring_poll_test.c - the aio bdev's whole suite (bdev_aio_test.c) run on
 * the io_uring bdev with polled reads and writes (option poll: IORING_SETUP_IOPOLL) wherever the
 * file allows O_DIRECT (/tmp, block devices); tmpfs and buffered cases run unpolled, and
 * create_errors also checks that poll on a buffered file is refused. */
#define BDEV_FILE_UT_CREATE bdev_uring_create
#define BDEV_FILE_UT_MODULE "uring"
#define BDEV_FILE_UT_SUITE bdev_uring_poll
#define BDEV_FILE_UT_POLL true
#include "tests/unit/backend/bdev_aio_test.c"
