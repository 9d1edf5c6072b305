MODULES += common
common_SRCS := common/log.c common/evloop.c
