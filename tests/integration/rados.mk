# tests/integration/rados.mk (included by tests/integration/module.mk): cluster/rados_obj against
# a throwaway Ceph cluster that rados-obj.sh starts; the program needs its CEPH_CONF, so it is
# built as a program and run by the script.
PROGRAMS += rados_obj_test
rados_obj_test_SRCS := tests/integration/rados/rados_obj_test.c
rados_obj_test_LIBS := cluster common
SCRIPT_TESTS += tests/integration/rados/rados-obj.sh
# Two daemons sharing one RBD image's reservations (shared-resv.sh starts the cluster).
PROGRAMS += shared_resv_test
shared_resv_test_SRCS := tests/integration/rados/shared_resv_test.c tests/integration/rados/resv_host.c \
			 tests/integration/nvme_itest.c \
			 tests/integration/itest.c
shared_resv_test_LIBS := host common
$(BUILD)/bin/shared_resv_test: $(BUILD)/bin/nvme-emu $(BUILD)/bin/nvme-emu-rpc
SCRIPT_TESTS += tests/integration/rados/shared-resv.sh
SCRIPT_TESTS += tests/integration/rados/cluster-cntlid.sh
