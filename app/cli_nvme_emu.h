/* app/cli_nvme_emu.h - nvme-emu's command line (the table in cli_nvme_emu.c): the codes of its
 * long-only options, for app/main.c's parser. */
#ifndef NVME_EMU_APP_CLI_NVME_EMU_H
#define NVME_EMU_APP_CLI_NVME_EMU_H

#include "common/cli_opt.h"

enum app_cli_code {
	APP_O_MALLOC = 256,
	APP_O_NULL,
	APP_O_AIO,
	APP_O_URING,
	APP_O_NBD,
	APP_O_RBD,
	APP_O_HARTS,
	APP_O_PIN_PG,
	APP_O_DB,
	APP_O_QENT,
	APP_O_MDTS,
	APP_O_SGL,
	APP_O_SERIAL,
	APP_O_MODEL,
	APP_O_BUFFERED,
	APP_O_URING_POLL,
	APP_O_WAIT,
	APP_O_MAX_DMA_REGIONS,
	APP_O_MAX_DMA_BYTES,
	APP_O_ANY_DMA_FD,
	APP_O_PCI_IDS,
	APP_O_NS_POOL,
	APP_O_ZONED,
	APP_O_EVENT_LOG,
	APP_O_STATE_FILE,
	APP_O_CMB,
	APP_O_PMR,
	APP_O_FDP,
	APP_O_METRICS,
	APP_O_READ_ZEROES,
	APP_O_SECONDARIES,
	APP_O_SECONDARY_DIR,
	APP_O_SHARED_RESV,
	APP_O_NO_SGL,
};

extern const struct cli_prog app_cli_prog;

#endif
