# Makefile - build and run the lessons, the tests and the diagrams.
#
#   make lesson-1               build and run lesson 1 (ARGS="--seed 7" passes flags)
#   make test                   build and run every test (installs `check` if missing)
#   make help                   everything else
#
# A lesson is one directory lessons/NN-name/ holding its .c files; it is found
# by its number, so adding a lesson needs no change here.

CC      ?= cc
CFLAGS  ?= -O2 -g
# Objects of different compilers or sanitizer builds never mix: each gets
# its own directory (build/cc, build/clang, build/sanitize).
BUILD   ?= build/$(notdir $(firstword $(CC)))

# -ffp-contract=off: the compiler may not fuse a*b+c into one FMA on its own.
# The generator in common/exact/rng.c calls fmaf() exactly where PyTorch's
# kernels fuse, and nowhere else; that is what makes its numbers bit-exact.
# -Icommon: includes name their folder, "core/tensor.h" (common/attention.h).
WARNINGS   = -std=c11 -Wall -Wextra -Werror
ALL_CFLAGS = $(WARNINGS) -ffp-contract=off $(CFLAGS) $(SANITIZE) -Icommon -MMD -MP
LDLIBS     = -lm -pthread

# Every source is found by a wildcard, so adding a file to common/'s folders,
# a lesson's directory or tests/ needs no change here. Each .c compiles to
# its own object under $(BUILD)/obj/ (its path mirrored), with a dependency
# file beside it (-MMD) naming the headers it read.
COMMON_SRC  := $(wildcard common/*/*.c)
COMMON_OBJ  := $(COMMON_SRC:%.c=$(BUILD)/obj/%.o)
LESSON_DIRS := $(sort $(patsubst %/,%,$(wildcard lessons/[0-9][0-9]-*/)))
LESSON_BINS := $(LESSON_DIRS:%=$(BUILD)/%)
LESSON_OBJ  := $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard lessons/[0-9][0-9]-*/*.c))
# The longest test programs first, so that the others fill the other cores
# around them (make test's wall time is then about the longest one's).
SLOW_TESTS  := tests/test_docs.c tests/test_budget.c tests/test_fuzz_cli.c tests/test_budget_edges.c \
               tests/test_lesson16.c tests/test_lesson14.c
TEST_SRC    := $(SLOW_TESTS) $(filter-out $(SLOW_TESTS),$(sort $(wildcard tests/test_*.c)))
TEST_BINS   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# What the test programs share (tests/harness.c, tests/family_*.c): every
# .c of tests/ that is not a test program, linked into each test; but for
# rename_fault.c, a library test_outputs loads into the lessons it runs.
SUPPORT_SRC := $(filter-out $(TEST_SRC) tests/rename_fault.c,$(wildcard tests/*.c))
SUPPORT_OBJ := $(SUPPORT_SRC:%.c=$(BUILD)/obj/%.o)

# The lesson that lesson-N, compare-N, test-N and script-N name. N is a
# decimal number, with leading zeros or without (08 and 8 are lesson 8; printf
# alone reads 010 as octal, lesson 8): lesson_number is N without them, and
# lesson_dir the lesson's directory, lessons/0N-name. Anything else stops make
# with one line, before anything is built.
lesson_count  = $(words $(LESSON_DIRS))
lesson_number = $(or $(shell case '$(1)' in (''|*[!0-9]*) ;; (*) expr '$(1)' + 0 2>/dev/null ;; esac), \
                  $(error '$(1)' is not a lesson number: the lessons are 1 to $(lesson_count)))
lesson_dir    = $(or $(firstword $(wildcard lessons/$(shell printf '%02d' $(call lesson_number,$(1)))-*)), \
                  $(error there is no lesson $(1): the lessons are 1 to $(lesson_count)))

.PHONY: all lessons test run-tests sanitize valgrind docs clean help lesson- compare- test- script-
.SECONDEXPANSION:
# The objects are made by pattern rules and named nowhere else, so make
# would treat them as intermediate files and delete them after each build
# (and then compile them all again for the next lesson): keep every target.
.SECONDARY:

all: $(LESSON_BINS)
	@if pkg-config --exists check 2>/dev/null; then $(MAKE) --no-print-directory $(TEST_BINS); \
	 else echo "tests not built: the check library is missing (make test installs it)"; fi

# --- the lessons -----------------------------------------------------------------

$(BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -c $< -o $@

# A lesson is every .c of its directory (lessons/NN-name/*.c), linked with common/.
lesson_objects = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(1)/*.c))
$(BUILD)/lessons/%: $$(call lesson_objects,lessons/$$*) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $^ $(SANITIZE) $(LDLIBS) -o $@

lesson-%: $$(BUILD)/$$(call lesson_dir,$$*)
	@./$< $(ARGS)

lesson- compare- test- script-:
	$(error make $@N: N is the lesson's number, 1 to $(lesson_count))

# make compare-N ARGS="...": lesson N and the PyTorch code on its page, run with the
# same flags, every printed number compared (tools/compare.py). Needs python3 with
# torch; without it, it says what is missing and exits 2. Not part of make test.
# The first of python3 and /usr/bin/python3 that can import torch (a pyenv or
# venv python3 may shadow Debian's python3-torch); worked out only when a
# compare runs. PYTHON=... chooses another.
PYTHON ?= $(shell for p in python3 /usr/bin/python3; do \
            $$p -c 'import torch' > /dev/null 2>&1 && { echo $$p; exit; }; done; echo python3)
compare-%: $$(BUILD)/$$(call lesson_dir,$$*)
	@command -v $(PYTHON) > /dev/null || { echo "make compare-$*: needs $(PYTHON) with torch; $(PYTHON) is missing"; exit 2; }
	@$(PYTHON) tools/compare.py ./$< docs/$(notdir $(call lesson_dir,$*)).md $(ARGS)

# make script-N: that PyTorch code, the page's block that make compare-N runs, as a
# file of its own, out/script-N.py, to run, read or change (tools/compare.py cuts it
# out of the page as compare does). It takes the lesson's flags, --help lists them.
script-%: $$(call lesson_dir,$$*)
	@mkdir -p out
	@$(PYTHON) tools/compare.py --script docs/$(notdir $<).md \
	   out/script-$(call lesson_number,$*).py
	@echo "run it with lesson $(call lesson_number,$*)'s flags (--help lists them):"
	@echo "  $(PYTHON) out/script-$(call lesson_number,$*).py $(or $(ARGS),--seed 7)"

# Every lesson in order, with its default flags.
lessons: $(LESSON_BINS)
	@for bin in $(LESSON_BINS); do \
	   echo "==================== $$bin"; \
	   ./$$bin $(ARGS) || exit 1; \
	 done

# --- the tests -------------------------------------------------------------------

CHECK_FLAGS = $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS  = $(shell pkg-config --libs check 2>/dev/null)

# The test programs and what they share see tests/ and check's headers, and
# where the lessons are built (BUILD_DIR: tests run the lesson programs).
TEST_CFLAGS = -Itests $(CHECK_FLAGS) -DBUILD_DIR='"$(BUILD)"'

# The tests compile at -O1 -g1 (after CFLAGS, so they win): a quarter less
# time to build than at -O2 -g, with the line numbers a backtrace needs; the
# lesson code some of them include (to test its static functions) must give
# the same bits at either level, which the tests then check.
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -O1 -g1 $(TEST_CFLAGS) -c $< -o $@

# Lessons 13's, 14's, 16's and 17's kernels are tested through their tables (kernels.h,
# extern): linked into the lesson's test from the lesson's own object, not
# included in it, so that they compile once, at the lesson's flags.
$(BUILD)/tests/test_lesson13: $(BUILD)/obj/lessons/13-flash-attention/kernels.o
$(BUILD)/tests/test_lesson14: $(BUILD)/obj/lessons/14-attention-backward/kernels.o
$(BUILD)/tests/test_lesson16: $(BUILD)/obj/lessons/16-train/kernels.o
$(BUILD)/tests/test_lesson17: $(BUILD)/obj/lessons/17-language/kernels.o

# test_outputs runs lessons with tests/rename_fault.c loaded (LD_PRELOAD) to fail one
# rename of their output; it is built without the sanitizers, which the lesson has.
$(BUILD)/tests/test_outputs: | $(BUILD)/tests/rename_fault.so
$(BUILD)/tests/rename_fault.so: tests/rename_fault.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(WARNINGS) -O1 -shared -fPIC $< -o $@ -ldl

$(BUILD)/tests/%: $(BUILD)/obj/tests/%.o $(SUPPORT_OBJ) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) $^ $(SANITIZE) $(CHECK_LIBS) $(LDLIBS) -o $@

# `check` is installed first if it is missing (tests/ensure-check.sh says what
# it runs), then everything is built and the test programs run, JOBS at a
# time (default: one per CPU; tests/run-tests.sh keeps each one's output
# together and in order). Without -j of its own, the build runs JOBS
# compilers at once too.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)
parallel = $(if $(findstring -j,$(MAKEFLAGS)),,-j$(JOBS))
test:
	@sh tests/ensure-check.sh
	@$(MAKE) --no-print-directory $(parallel) run-tests

run-tests: $(TEST_BINS) $(LESSON_BINS)
	@JOBS=$(JOBS) sh tests/run-tests.sh $(TEST_BINS)

# make test-N: lesson N's tests alone (tests/test_lessonNN.c), with the lessons they
# run: lesson N and those the test names by directory ("05-self-attention-v4").
lesson_test       = test_lesson$(shell printf '%02d' $(call lesson_number,$(1)))
lessons_named_in  = $(filter $(LESSON_DIRS),$(addprefix lessons/,$(shell \
                      grep -o '"[0-9][0-9]-[a-z0-9-]*"' $(1) 2>/dev/null | tr -d '"')))
test-%: $$(call lesson_dir,$$*)
	@sh tests/ensure-check.sh
	@$(MAKE) --no-print-directory -s $(parallel) $(BUILD)/tests/$(call lesson_test,$*) \
	   $(addprefix $(BUILD)/,$(sort $< $(call lessons_named_in,tests/$(call lesson_test,$*).c)))
	@sh tests/run-tests.sh $(BUILD)/tests/$(call lesson_test,$*)

# AddressSanitizer + UndefinedBehaviorSanitizer: every lesson and every test. The sanitizers
# make a program 3 to 5 times slower, so check's time limit for each test is tripled
# (CK_TIMEOUT_MULTIPLIER; lesson 16's default run, which the docs' and fuzz tests take
# twice or more, goes from 2 to 10 seconds).
SANITIZERS = -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
sanitize:
	@sh tests/ensure-check.sh
	@CK_TIMEOUT_MULTIPLIER=3 $(MAKE) --no-print-directory $(parallel) --output-sync=target \
	   BUILD=build/sanitize SANITIZE="$(SANITIZERS)" lessons run-tests

# valgrind: every lesson, then every test in one process (CK_FORK=no; the
# lessons a test runs are not under valgrind, and the fuzz test runs fewer
# cases), then each lesson's error paths (tests/valgrind-error-paths.sh).
# ATTN_KERNELS=scalar: lessons 13, 14 and 16 take their portable kernels
# (valgrind 3.19 cannot run AVX-512).
VALGRIND = env ATTN_KERNELS=scalar valgrind -q --error-exitcode=3 --leak-check=full \
           --show-leak-kinds=all --errors-for-leak-kinds=all
# Lesson 16 trains for 300 steps by default, minutes under valgrind: 3 steps take every
# path of its code; lesson 17 trains for 800 on text, which the budget refuses with the
# scalar kernels: 3 steps of a small model. VALGRIND_SHORT names such runs,
# `lesson-directory:flags` with commas for spaces; tests/valgrind-error-paths.sh reads it too.
VALGRIND_SHORT = 16-train:--steps,3 \
                 17-language:--steps,3,--dim,16,--heads,2,--kv-heads,1,--seq,16,--batch,4,--new,20
valgrind: $(LESSON_BINS) $(TEST_BINS)
	@for bin in $(LESSON_BINS); do \
	   short=$$(echo "$(VALGRIND_SHORT)" | tr ' ' '\n' | sed -n "s|^$${bin##*/}:||p" | tr ',' ' '); \
	   echo "valgrind $$bin $$short"; $(VALGRIND) ./$$bin $$short > /dev/null || exit 1; \
	 done
	@for bin in $(TEST_BINS); do \
	   echo "valgrind $$bin"; CK_FORK=no ATTN_FUZZ_CASES=20 $(VALGRIND) ./$$bin > /dev/null || exit 1; \
	 done
	@VALGRIND_SHORT="$(VALGRIND_SHORT)" sh tests/valgrind-error-paths.sh "$(VALGRIND)" \
	   $(LESSON_BINS:%=./%)

# --- the diagrams ------------------------------------------------------------------

# Each lesson draws its own dataflow with --dot; Graphviz renders it to SVG. Lesson 16 also
# draws its attention maps itself, one image a task (--svg): plain SVG text that is the same
# on every machine (Graphviz's is not), so .ci/run checks them against the committed ones.
DRAWN_SVGS = docs/diagrams/16-train-recall-maps.svg docs/diagrams/16-train-reverse-maps.svg
docs: $(LESSON_BINS)
	@mkdir -p docs/diagrams
	@for dir in $(LESSON_DIRS); do \
	   name=$$(basename $$dir); \
	   ./$(BUILD)/$$dir --dot docs/diagrams/$$name.dot > /dev/null || exit 1; \
	   dot -Tsvg docs/diagrams/$$name.dot -o docs/diagrams/$$name.svg || exit 1; \
	   echo "  DOT     docs/diagrams/$$name.svg"; \
	 done
	@for svg in $(DRAWN_SVGS); do \
	   task=$${svg#docs/diagrams/16-train-}; task=$${task%-maps.svg}; \
	   ./$(BUILD)/lessons/16-train --task $$task --svg $$svg > /dev/null || exit 1; \
	   echo "  SVG     $$svg"; \
	 done

clean:
	rm -rf build

help:
	@echo "make                build every lesson (and the tests, if check is installed)"
	@echo "make lesson-N       build and run lesson N (1-$(lesson_count)); ARGS=\"--seed 7\" passes flags"
	@echo "make lessons        run every lesson in order"
	@echo "make compare-N      lesson N against its page's PyTorch code, number by number (needs torch)"
	@echo "make script-N       that PyTorch code as out/script-N.py, to run on its own (needs torch)"
	@echo "make test           build and run the tests (installs check if it is missing)"
	@echo "make test-N         lesson N's tests alone (tests/test_lessonNN.c)"
	@echo "make sanitize       run every lesson and test under ASan + UBSan"
	@echo "make valgrind       run every lesson and test under valgrind"
	@echo "make docs           redraw docs/diagrams/*.svg from each lesson's --dot (and --svg)"
	@echo "make clean          remove build/"
	@echo "make CC=clang ...   the same with clang (built in build/clang)"

-include $(patsubst %.o,%.d,$(COMMON_OBJ) $(LESSON_OBJ) $(SUPPORT_OBJ) $(TEST_BINS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.o))
