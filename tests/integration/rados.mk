# tests/integration/rados.mk (included by tests/integration/module.mk): cluster/rados_obj against
# a throwaway Ceph cluster that rados-obj.sh starts; the program needs its CEPH_CONF, so it is
# built as a program and run by the script.
PROGRAMS += rados_obj_test
rados_obj_test_SRCS := tests/integration/rados/rados_obj_test.c
rados_obj_test_LIBS := cluster common
SCRIPT_TESTS += tests/integration/rados/rados-obj.sh
