# Unit tests of controller/: the core driven end to end through a synchronous loopback transport
# (a plain buffer as guest memory, recorded interrupts, queue ops completed by a pump) by the
# project's NVMe host driver (host/), with malloc bdevs from backend/.
controller_TEST_LIBS := controller backend host common
controller_TEST_SRCS := tests/unit/controller/loopback.c tests/unit/backend/bdev_ut_util.c
