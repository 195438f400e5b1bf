# Makefile - build and run the lessons, the tests and the diagrams.
#
#   make lesson-1               build and run lesson 1 (ARGS="--seed 7" passes flags)
#   make test                   build and run every test (installs `check` if missing)
#   make help                   everything else
#
# A lesson is one directory lessons/NN-name/ holding one .c file; it is found
# by its number, so adding a lesson needs no change here.

CC      ?= cc
CFLAGS  ?= -O2 -g
# Objects of different compilers or sanitizer builds never mix: each gets
# its own directory (build/cc, build/clang, build/sanitize).
BUILD   ?= build/$(notdir $(firstword $(CC)))

# -ffp-contract=off: the compiler may not fuse a*b+c into one FMA on its own.
# The generator in common/rng.c calls fmaf() exactly where PyTorch's kernels
# fuse, and nowhere else; that is what makes its numbers bit-exact.
WARNINGS   = -std=c11 -Wall -Wextra -Werror
ALL_CFLAGS = $(WARNINGS) -ffp-contract=off $(CFLAGS) $(SANITIZE) -Icommon -MMD -MP
LDLIBS     = -lm

COMMON_SRC  := $(wildcard common/*.c)
COMMON_OBJ  := $(COMMON_SRC:%.c=$(BUILD)/%.o)
LESSON_DIRS := $(sort $(patsubst %/,%,$(wildcard lessons/[0-9][0-9]-*/)))
LESSON_BINS := $(LESSON_DIRS:%=$(BUILD)/%)
TEST_SRC    := $(wildcard tests/test_*.c)
TEST_BINS   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)

# The directory of lesson N: lessons/0N-* (N without its leading zero).
lesson_dir = $(firstword $(wildcard lessons/$(shell printf '%02d' '$(1)' 2>/dev/null)-*))

.PHONY: all lessons test run-tests sanitize valgrind docs clean help
.SECONDEXPANSION:

all: $(LESSON_BINS)
	@if pkg-config --exists check 2>/dev/null; then $(MAKE) --no-print-directory $(TEST_BINS); \
	 else echo "tests not built: the check library is missing (make test installs it)"; fi

# --- the lessons -----------------------------------------------------------------

# The objects of common/ are made by a pattern rule and named nowhere else,
# so make would treat them as intermediate files and delete them after each
# build (and then recompile all of common/ for the next lesson): keep them.
.SECONDARY: $(COMMON_OBJ)

$(BUILD)/common/%.o: common/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

$(BUILD)/lessons/%: $$(wildcard lessons/%/*.c) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  CC      $(filter %.c,$^)"
	@mkdir -p $(BUILD)/deps
	@$(CC) $(ALL_CFLAGS) -MF $(BUILD)/deps/$(notdir $@).d $(filter %.c,$^) $(COMMON_OBJ) \
	   $(SANITIZE) $(LDLIBS) -o $@

lesson-%: $$(BUILD)/$$(call lesson_dir,$$*)
	@test -n "$(call lesson_dir,$*)" || { echo "no lesson $* in lessons/"; exit 2; }
	@./$< $(ARGS)

# make compare-N ARGS="...": lesson N and the PyTorch code on its page, run with the
# same flags, every printed number compared (tools/compare.py). Needs python3 with
# torch; without it, it says what is missing and exits 2. Not part of make test.
# The first of python3 and /usr/bin/python3 that can import torch (a pyenv or
# venv python3 may shadow Debian's python3-torch); worked out only when a
# compare runs. PYTHON=... chooses another.
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do \
            $$p -c 'import torch' > /dev/null 2>&1 && { echo $$p; exit; }; done; echo python3)
compare-%: $$(BUILD)/$$(call lesson_dir,$$*)
	@test -n "$(call lesson_dir,$*)" || { echo "no lesson $* in lessons/"; exit 2; }
	@command -v $(PYTHON) > /dev/null || { echo "make compare-$*: needs $(PYTHON) with torch; $(PYTHON) is missing"; exit 2; }
	@$(PYTHON) tools/compare.py ./$< docs/$(notdir $(call lesson_dir,$*)).md $(ARGS)

# Every lesson in order, with its default flags.
lessons: $(LESSON_BINS)
	@for bin in $(LESSON_BINS); do \
	   echo "==================== $$bin"; \
	   ./$$bin $(ARGS) || exit 1; \
	 done

# --- the tests -------------------------------------------------------------------

CHECK_FLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  = $(shell pkg-config --libs check 2>/dev/null)

$(BUILD)/tests/harness.o: tests/harness.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Itests $(CHECK_FLAGS) -DBUILD_DIR='"$(BUILD)"' -c $< -o $@

$(BUILD)/tests/%: tests/%.c $(BUILD)/tests/harness.o $(COMMON_OBJ)
	@mkdir -p $(dir $@) $(BUILD)/deps
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -Itests $(CHECK_FLAGS) -DBUILD_DIR='"$(BUILD)"' -MF $(BUILD)/deps/$(notdir $@).d $< \
	   $(BUILD)/tests/harness.o $(COMMON_OBJ) $(SANITIZE) $(CHECK_LIBS) $(LDLIBS) -o $@

# `check` is installed first if it is missing (tests/ensure-check.sh says what
# it runs), then everything is built and each test program runs.
test:
	@sh tests/ensure-check.sh
	@$(MAKE) --no-print-directory run-tests

run-tests: $(TEST_BINS) $(LESSON_BINS)
	@sh tests/run-tests.sh $(TEST_BINS)

# AddressSanitizer + UndefinedBehaviorSanitizer: every lesson and every test.
SANITIZERS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize:
	@sh tests/ensure-check.sh
	@$(MAKE) --no-print-directory BUILD=build/sanitize SANITIZE="$(SANITIZERS)" lessons run-tests

# valgrind: every lesson, then every test in one process (CK_FORK=no; the
# lessons a test runs are not under valgrind, and the fuzz test runs fewer
# cases), then each lesson's error paths (tests/valgrind-error-paths.sh).
# ATTN_KERNELS=scalar: lesson 14 takes its portable kernels (valgrind 3.19
# cannot run AVX-512).
VALGRIND = env ATTN_KERNELS=scalar valgrind -q --error-exitcode=3 --leak-check=full \
           --show-leak-kinds=all --errors-for-leak-kinds=all
valgrind: $(LESSON_BINS) $(TEST_BINS)
	@for bin in $(LESSON_BINS); do \
	   echo "valgrind $$bin"; $(VALGRIND) ./$$bin > /dev/null || exit 1; \
	 done
	@for bin in $(TEST_BINS); do \
	   echo "valgrind $$bin"; CK_FORK=no ATTN_FUZZ_CASES=20 $(VALGRIND) ./$$bin > /dev/null || exit 1; \
	 done
	@sh tests/valgrind-error-paths.sh "$(VALGRIND)" $(LESSON_BINS:%=./%)

# --- the diagrams ------------------------------------------------------------------

# Each lesson draws its own dataflow with --dot; Graphviz renders it to SVG.
docs: $(LESSON_BINS)
	@mkdir -p docs/diagrams
	@for dir in $(LESSON_DIRS); do \
	   name=$$(basename $$dir); \
	   ./$(BUILD)/$$dir --dot docs/diagrams/$$name.dot > /dev/null || exit 1; \
	   dot -Tsvg docs/diagrams/$$name.dot -o docs/diagrams/$$name.svg || exit 1; \
	   echo "  DOT     docs/diagrams/$$name.svg"; \
	 done

clean:
	rm -rf build

help:
	@echo "make                build every lesson (and the tests, if check is installed)"
	@echo "make lesson-N       build and run lesson N (1-$(words $(LESSON_DIRS))); ARGS=\"--seed 7\" passes flags"
	@echo "make lessons        run every lesson in order"
	@echo "make compare-N      lesson N against its page's PyTorch code, number by number (needs torch)"
	@echo "make test           build and run the tests (installs check if it is missing)"
	@echo "make sanitize       run every lesson and test under ASan + UBSan"
	@echo "make valgrind       run every lesson and test under valgrind"
	@echo "make docs           redraw docs/diagrams/*.svg from each lesson's --dot"
	@echo "make clean          remove build/"
	@echo "make CC=clang ...   the same with clang (built in build/clang)"

-include $(wildcard $(BUILD)/common/*.d $(BUILD)/tests/*.d $(BUILD)/deps/*.d)
