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
# around them (make test's wall time is then about the longest one's): test_docs
# (it runs every documented run of every lesson), then the lessons' own tests,
# the last lesson's first (the later the lesson, the more its test runs), then the rest.
LESSON_TESTS := $(shell ls -r tests/test_lesson[0-9]*.c 2>/dev/null)
TEST_SRC    := tests/test_docs.c $(LESSON_TESTS) \
               $(filter-out tests/test_docs.c $(LESSON_TESTS),$(sort $(wildcard tests/test_*.c)))
TEST_BINS   := $(TEST_SRC:tests/%.c=$(BUILD)/tests/%)
# What the test programs share (tests/harness.c, tests/family_*.c): every
# .c of tests/ that is not a test program, linked into each test; but for
# rename_fault.c, a library test_outputs loads into the lessons it runs, and
# lesson_table.c, the table of every lesson's main() (in lessons.a, below).
SUPPORT_SRC := $(filter-out $(TEST_SRC) tests/rename_fault.c tests/lesson_table.c, \
                 $(wildcard tests/*.c))
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

.PHONY: FORCE all lessons test test-long run-tests sanitize valgrind docs clean help lesson- compare- test- script-
.PHONY: exercise- check-exercises
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

lesson- compare- test- script- exercise-:
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

# The tests compile at -O0 -g1 (after CFLAGS, so they win): a third of the
# time to build at -O2 -g (the tests' own code is not what takes their time:
# the lessons they call and run are built at CFLAGS), with the line numbers a
# backtrace needs; the lesson code some of them include (to test its static
# functions) must give the same bits at either level, which the tests then check.
$(BUILD)/obj/tests/%.o: tests/%.c
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -O0 -g1 $(TEST_CFLAGS) -c $< -o $@

# A lesson's kernels.c (13, 14 and 16 have one) is tested through its tables (kernels.h,
# extern): linked into the lesson's test, tests/test_lessonNN.c, from the lesson's own
# object, not included in it, so that it compiles once, at the lesson's flags.
lesson_kernels = $(patsubst %.c,$(BUILD)/obj/%.o,$(wildcard $(1)/kernels.c))
lesson_number_of = $(firstword $(subst -, ,$(notdir $(1))))
$(foreach dir,$(LESSON_DIRS),$(eval \
  $(BUILD)/tests/test_lesson$(call lesson_number_of,$(dir)): $(call lesson_kernels,$(dir))))

# Every lesson as one object, for the tests that call each lesson's main() in their own
# process (tests/harness.h: call_lesson): the lesson's objects (the same ones its program
# is linked from) combined into one (ld -r), whose symbols are all made local but main,
# renamed lesson_main_NN_name, so that lessons' names never clash. The table of them,
# LESSONS (tests/harness.h), is made from the list of lessons/ the recipe below writes.
LD      ?= ld
OBJCOPY ?= objcopy
entry_symbol  = lesson_main_$(subst -,_,$(1))
LESSON_ENTRIES := $(LESSON_DIRS:lessons/%=$(BUILD)/entry/%.o)
$(BUILD)/entry/%.o: $$(call lesson_objects,lessons/$$*) | lessons/%
	@mkdir -p $(dir $@)
	@echo "  ENTRY   $@"
	@$(LD) -r $^ -o $@.tmp
	@$(OBJCOPY) --redefine-sym main=$(call entry_symbol,$*) \
	   --keep-global-symbol=$(call entry_symbol,$*) $@.tmp $@
	@rm -f $@.tmp
# tests/lesson_table.c makes the table LESSONS (tests/harness.h) from lessons.h, one line
# LESSON(symbol, "NN-name") a lesson, which this recipe writes from lessons/ (rewriting it
# only when the lessons change).
$(BUILD)/entry/lessons.h: FORCE
	@mkdir -p $(dir $@)
	@for dir in $(notdir $(LESSON_DIRS)); do \
	   echo "LESSON($$(echo $$dir | tr - _), \"$$dir\")"; done > $@.tmp
	@if cmp -s $@.tmp $@; then rm $@.tmp; else mv $@.tmp $@; fi
$(BUILD)/entry/lesson_table.o: tests/lesson_table.c $(BUILD)/entry/lessons.h
	@echo "  CC      $<"
	@$(CC) $(ALL_CFLAGS) -O0 -g1 $(TEST_CFLAGS) -I$(BUILD)/entry -c $< -o $@
$(BUILD)/entry/lessons.a: $(BUILD)/entry/lesson_table.o $(LESSON_ENTRIES)
	@rm -f $@
	@$(AR) rcs $@ $^
# The tests that name the table (LESSONS, N_LESSONS, lesson_entry) are linked with it;
# the others build without the lessons (make test-N builds what lesson N's test needs).
TABLE_TESTS := $(shell grep -l -w -E 'N_LESSONS|LESSONS|lesson_entry' tests/test_*.c)
$(foreach test,$(TABLE_TESTS),$(eval $(test:tests/%.c=$(BUILD)/tests/%): $(BUILD)/entry/lessons.a))
FORCE:

# test_outputs and test_lesson17 run lessons with tests/rename_fault.c loaded (LD_PRELOAD)
# to fail one rename of their output; it is built without the sanitizers, which the lesson has.
$(BUILD)/tests/test_outputs $(BUILD)/tests/test_lesson17: | $(BUILD)/tests/rename_fault.so
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

run-tests: $(TEST_BINS) $(LESSON_BINS) check-exercises
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

# make test-long: make test's checks and those that need many programs, which make test
# makes in the test's own process or samples (tests/harness.h: long_tests): every fuzzed
# command line and every size at its limit also as a program, every size flag run at its
# budget's edge, every sized run each lesson's test lists; and the runs the pages document
# that the lessons' budgets estimate over 2.5 s (harness.h: made_in_this_test; lessons 16's,
# 17's and 18's default runs among them), which make test names as skipped; and the
# write-it exercises of every lesson, not only QUICK_EXERCISES'. .ci/run runs it.
test-long:
	@sh tests/ensure-check.sh
	@ATTN_TEST_LONG=1 $(MAKE) --no-print-directory $(parallel) run-tests

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
# lessons a test runs are not under valgrind, those it calls in its own process
# are, and the fuzz test calls fewer cases), then each lesson's error paths
# (tests/valgrind-error-paths.sh). ATTN_KERNELS=scalar: lessons 13, 14 and 16 take
# their portable kernels (valgrind 3.19 cannot run AVX-512).
VALGRIND = env ATTN_KERNELS=scalar valgrind -q --error-exitcode=3 --leak-check=full \
           --show-leak-kinds=all --errors-for-leak-kinds=all
# A lesson whose defaults take more than a tenth of a second (lesson 16 trains for 300
# steps: minutes under valgrind) runs from its quick start instead, worked out from its
# own cost by test_in_process --quick-starts (tests/lesson_cli.h): one line a lesson,
# `lesson-directory:flags` with commas for spaces; tests/valgrind-error-paths.sh reads it too.
valgrind: $(LESSON_BINS) $(TEST_BINS)
	@short_runs=$$(./$(BUILD)/tests/test_in_process --quick-starts) || exit 1; \
	 for bin in $(LESSON_BINS); do \
	   short=$$(echo "$$short_runs" | sed -n "s|^$${bin##*/}:||p" | tr ',' ' '); \
	   echo "valgrind $$bin $$short"; $(VALGRIND) ./$$bin $$short > /dev/null || exit 1; \
	 done
	@for bin in $(TEST_BINS); do \
	   echo "valgrind $$bin"; CK_FORK=no ATTN_FUZZ_CASES=20 $(VALGRIND) ./$$bin > /dev/null || exit 1; \
	 done
	@VALGRIND_SHORT="$$(./$(BUILD)/tests/test_in_process --quick-starts)" \
	   sh tests/valgrind-error-paths.sh "$(VALGRIND)" $(LESSON_BINS:%=./%)

# --- the exercises -----------------------------------------------------------------

# make exercise-N: lesson N built with the reader's function, exercises/NN-name.c, in
# place of the lesson's own, then checked by tools/exercise.c against the lesson as it
# is (each exercise's flag sets, tensors and hints: tools/exercise_table.h). The swap:
# the lesson's objects are compiled again (in $(EXERCISE_BUILD)) with -fPIC
# -fsemantic-interposition, so that the compiler keeps every call to an ordinary
# (non-static) function a call through its name, even inside the lesson's own file,
# neither inlined nor bound to the lesson's copy; the reader's object is linked first,
# and --allow-multiple-definition makes the linker take the first definition of a
# name and ignore the lesson's. The reader's file and the lesson are built with
# ASan + UBSan, so that a read out of bounds is named (file and line) rather than
# a segfault or a wrong number. common/ is linked as the lessons are. (-I.: a
# reader's file names a lesson's header from the top, "lessons/13-.../kernels.h".)
EXERCISE_BUILD = $(BUILD)/exercise
EXERCISE_FLAGS = -fPIC -fsemantic-interposition $(SANITIZERS)
$(EXERCISE_BUILD)/obj/%.o: %.c
	@mkdir -p $(dir $@)
	@echo "  CC      $< (for the exercise)"
	@$(CC) $(WARNINGS) -ffp-contract=off $(CFLAGS) $(EXERCISE_FLAGS) -Icommon -I. -MMD -MP -c $< -o $@
# Any file whose name starts with a lesson's number (exercises/01-toy-qkv.c, a test's
# tests/exercises/01-no-max.c) linked into that lesson: $(EXERCISE_BUILD)/bin/<its path>.
exercise_lesson   = $(call lesson_dir,$(firstword $(subst -, ,$(notdir $(1)))))
exercise_objects  = $(patsubst %.c,$(EXERCISE_BUILD)/obj/%.o,$(wildcard $(1)/*.c))
$(EXERCISE_BUILD)/bin/%: $(EXERCISE_BUILD)/obj/%.o \
                         $$(call exercise_objects,$$(call exercise_lesson,$$*)) $(COMMON_OBJ)
	@mkdir -p $(dir $@)
	@echo "  LD      $@"
	@$(CC) -Wl,--allow-multiple-definition $^ $(SANITIZERS) $(LDLIBS) -o $@
$(BUILD)/tools/exercise: tools/exercise.c tools/exercise_table.h
	@mkdir -p $(dir $@)
	@echo "  CC      $<"
	@$(CC) $(WARNINGS) $(CFLAGS) $< -lm -o $@
# make test checks the checker (tests/exercises.sh) on QUICK_EXERCISES (lesson 1's:
# each exercise's build compiles its lesson again, under the sanitizers, 3 s for two):
# the page's answer passes, the untouched starting file and each planted mistake
# (tests/exercises/NN-*.c) get their message; make test-long on every exercise.
# The page's answer is cut out of the page (the ```c block after the summary that
# names make exercise-N) and given the starting file's #include and typedef lines.
QUICK_EXERCISES  = 01
EXERCISE_NUMBERS = $(patsubst exercises/%,%,$(foreach f,$(wildcard exercises/[0-9][0-9]-*.c), \
                     $(firstword $(subst -, ,$(f)))))
exercise_checks  = $(foreach n,$(1),$(EXERCISE_BUILD)/bin/$(EXERCISE_BUILD)/answers/$(n)-answer \
                     $(patsubst %.c,$(EXERCISE_BUILD)/bin/%,$(wildcard tests/exercises/$(n)-*.c)))
$(EXERCISE_BUILD)/answers/%-answer.c: tests/exercises/%-start.c $$(call lesson_dir,$$*) \
                                      docs/$$(notdir $$(call lesson_dir,$$*)).md
	@mkdir -p $(dir $@)
	@{ grep -E '^(#include|typedef)' $< || true; } > $@.tmp
	@awk '/<summary>.*make exercise-$(call lesson_number,$*)[^0-9]/ { found = 1 } \
	      found && /^```c$$/ { copy = 1; next } copy && /^```$$/ { exit } copy' \
	   docs/$(notdir $(call lesson_dir,$*)).md >> $@.tmp
	@grep -q . $@.tmp && mv $@.tmp $@
checked_exercises = $(if $(ATTN_TEST_LONG),$(EXERCISE_NUMBERS),$(QUICK_EXERCISES))
check-exercises: $(BUILD)/tools/exercise $(LESSON_BINS) \
                 $$(call exercise_checks,$$(checked_exercises))
	@sh tests/exercises.sh $(BUILD) $(filter $(EXERCISE_BUILD)/bin/%,$^)
exercise_file = $(or $(wildcard exercises/$(notdir $(call lesson_dir,$(1))).c), \
                  $(error lesson $(1) has no write-it exercise (exercises/ lists those that do)))
exercise-%: $$(BUILD)/$$(call lesson_dir,$$*) \
            $$(EXERCISE_BUILD)/bin/$$(basename $$(call exercise_file,$$*)) $$(BUILD)/tools/exercise
	@./$(BUILD)/tools/exercise $(call lesson_number,$*) ./$(BUILD)/$(call lesson_dir,$*) \
	   ./$(EXERCISE_BUILD)/bin/$(basename $(call exercise_file,$*)) $(call exercise_file,$*)

# --- the diagrams ------------------------------------------------------------------

# Each lesson draws its own dataflow with --dot; Graphviz renders it to SVG. Lessons 16 and
# 17 also draw their attention maps themselves (--svg): plain SVG text that is the same on
# every machine (Graphviz's is not), so .ci/run checks them against the committed ones.
# A committed docs/diagrams/NN-name-maps.svg is drawn again by the default run that draws
# the dataflow (lessons/NN-name --dot ... --svg FILE: lesson 17's minute of training made
# once for both), each docs/diagrams/NN-name-TASK-maps.svg by lessons/NN-name --task TASK
# --svg FILE.
DRAWN_SVGS = $(wildcard docs/diagrams/*-maps.svg)
docs: $(LESSON_BINS)
	@mkdir -p docs/diagrams
	@for dir in $(LESSON_DIRS); do \
	   name=$$(basename $$dir); maps=docs/diagrams/$$name-maps.svg; \
	   ./$(BUILD)/$$dir --dot docs/diagrams/$$name.dot $$(test -f $$maps && echo --svg $$maps) \
	     > /dev/null || exit 1; \
	   dot -Tsvg docs/diagrams/$$name.dot -o docs/diagrams/$$name.svg || exit 1; \
	   echo "  DOT     docs/diagrams/$$name.svg"; \
	   if test -f $$maps; then echo "  SVG     $$maps"; fi; \
	 done
	@for svg in $(DRAWN_SVGS); do \
	   name=$${svg#docs/diagrams/}; name=$${name%-maps.svg}; \
	   for dir in $(notdir $(LESSON_DIRS)); do \
	     case $$name in ($$dir-*) \
	       ./$(BUILD)/lessons/$$dir --task $${name#$$dir-} --svg $$svg > /dev/null || exit 1; \
	       echo "  SVG     $$svg";; \
	     esac; \
	   done; \
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
	@echo "make exercise-N     check your exercises/NN-name.c: lesson N run with your function"
	@echo "make test-long      make test, the checks that run the lessons thousands of times, the long runs"
	@echo "make sanitize       run every lesson and test under ASan + UBSan"
	@echo "make valgrind       run every lesson and test under valgrind"
	@echo "make docs           redraw docs/diagrams/*.svg from each lesson's --dot (and --svg)"
	@echo "make clean          remove build/"
	@echo "make CC=clang ...   the same with clang (built in build/clang)"

-include $(patsubst %.o,%.d,$(COMMON_OBJ) $(LESSON_OBJ) $(SUPPORT_OBJ) $(TEST_BINS:$(BUILD)/tests/%=$(BUILD)/obj/tests/%.o) \
                            $(BUILD)/entry/lesson_table.o)
# The exercise build's objects (the headers a reader's file or a lesson read).
-include $(shell find $(EXERCISE_BUILD)/obj -name '*.d' 2>/dev/null)
