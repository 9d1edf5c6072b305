# Unit tests of backend/: registry, malloc, null and aio bdevs, with a shared
# helper that waits on a channel's eventfd.
backend_TEST_LIBS := backend common
backend_TEST_SRCS := tests/unit/backend/bdev_ut_util.c tests/unit/backend/bdev_ut_loop.c
