# cluster/: what a namespace shared by daemons on many hosts stands on, kept in Ceph's RADOS
# (objects changed by compare-and-swap, watch/notify, fencing by blocklist).
MODULES += cluster
cluster_SRCS := $(wildcard cluster/*.c)
