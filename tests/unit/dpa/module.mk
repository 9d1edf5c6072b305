# tests/unit/dpa: dpa/ against an in-memory fake of hw/ (doorbell page,
# recorded MSI-X raises).
dpa_TEST_LIBS := dpa common
dpa_TEST_SRCS := tests/unit/dpa/fake_hw.c
