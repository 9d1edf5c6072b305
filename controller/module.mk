# controller/: the NVMe controller: the core (controller/core/) with the command sets and
# features above it (admin/, nvm/, zns/, device/, pool/), assembled by modules.c.
MODULES += controller
controller_SRCS := $(wildcard controller/*.c controller/*/*.c)
