# Unit tests: every tests/unit/<module>/<name>_test.c is its own program
# <module>_<name>_test, linked with tests/unit/cunit_main.c, the shared fakes
# (tests/unit/fakes/), the module's extra sources <module>_TEST_SRCS (its own
# fakes of lower layers, e.g. tests/unit/dpa/fake_hw.c) and the libraries listed in <module>_TEST_LIBS (set in
# tests/unit/<module>/module.mk, upper layers first). Test files register
# their suites with CUNIT_SUITE.
MODULES += testutil
testutil_SRCS := tests/unit/cunit_runner.c $(wildcard tests/unit/fakes/*.c)

common_TEST_LIBS := common
include $(wildcard tests/unit/*/module.mk)

define UNIT_template
UNIT_TESTS += $(1)_$(basename $(notdir $(2)))
$(1)_$(basename $(notdir $(2)))_SRCS := $(2) tests/unit/cunit_main.c $$($(1)_TEST_SRCS)
$(1)_$(basename $(notdir $(2)))_LIBS := testutil $$($(1)_TEST_LIBS)
$(1)_$(basename $(notdir $(2)))_LDLIBS := -lcunit $$($(1)_TEST_LDLIBS)
endef
$(foreach d,$(notdir $(wildcard tests/unit/*)),$(if $(wildcard tests/unit/$(d)/*_test.c),\
  $(foreach f,$(wildcard tests/unit/$(d)/*_test.c),$(eval $(call UNIT_template,$(d),$(f))))))
