MODULES += common
common_SRCS := common/log.c common/evloop.c common/unix_socket.c common/file_replace.c \
	common/counter.c common/crc32c.c common/lat_hist.c \
	common/svc_notify.c common/cli_opt.c common/syncer.c
