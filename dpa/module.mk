# dpa/: harts, DPA threads, DB completion contexts, message queues.
MODULES += dpa
dpa_SRCS := $(wildcard dpa/*.c)
