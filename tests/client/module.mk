# tests/client: the host-side vfio-user test client library ("vfuclient").
MODULES += vfuclient
vfuclient_SRCS := $(wildcard tests/client/*.c)
