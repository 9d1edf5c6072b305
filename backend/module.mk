# backend/: block devices behind the bdev ops table.
MODULES += backend
backend_SRCS := $(wildcard backend/*.c)
