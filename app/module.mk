# app/: the nvme-emu daemon.
PROGRAMS += nvme-emu
nvme-emu_SRCS := app/main.c
nvme-emu_LIBS := controller backend dpa hw vfu common
