// arena.c - one list of every allocation the program made.
//
// The arena is just a growing array of pointers. arena_alloc() appends,
// arena_release(mark) frees from the end back to `mark`. Simple on purpose:
// the point is the ownership rule (see arena.h), not speed.
#define _POSIX_C_SOURCE 200809L   // posix_memalign
#include "core/arena.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"

static void **blocks = NULL;    // every live allocation, oldest first
static size_t *sizes = NULL;    // and its size in bytes
static size_t n_blocks = 0;
static size_t capacity = 0;
static size_t bytes_held = 0;   // the sum of sizes[]
static size_t bytes_peak = 0;   // the most bytes_held has been
static size_t bytes_outside = 0;                // held outside the arena (arena_hold_outside)
static size_t limit = 0;                        // arena_set_limit's; 0: none
static void (*refuse_over_limit)(size_t) = NULL;

void arena_set_limit(size_t new_limit, void (*refuse)(size_t would_hold)) {
    limit = new_limit;
    refuse_over_limit = refuse;
}

// Would `more` bytes take what is held past the limit? Then refuse (the
// limit is unset first: refusing allocates its message from the arena).
static void check_limit(size_t more) {
    size_t held = bytes_held + bytes_outside;
    if (limit != 0 && refuse_over_limit != NULL && (more > limit || held > limit - more)) {
        void (*refuse)(size_t) = refuse_over_limit;
        arena_set_limit(0, NULL);
        refuse(more > SIZE_MAX - held ? SIZE_MAX : held + more);
    }
}

void arena_hold_outside(size_t added, size_t removed) {
    check_limit(added > removed ? added - removed : 0);
    bytes_outside = bytes_outside + added - removed;
}

void *arena_alloc(size_t count, size_t item_size) {
    if (item_size != 0 && count > SIZE_MAX / item_size) {
        fail("arena_alloc: %zu items of %zu bytes overflow size_t", count, item_size);
    }
    check_limit(count * item_size);
    if (n_blocks == capacity) {
        size_t new_capacity = capacity == 0 ? 256 : 2 * capacity;
        void **grown = realloc(blocks, new_capacity * sizeof *grown);
        if (grown != NULL) {
            blocks = grown;
        }
        size_t *grown_sizes = realloc(sizes, new_capacity * sizeof *grown_sizes);
        if (grown_sizes != NULL) {
            sizes = grown_sizes;
        }
        if (grown == NULL || grown_sizes == NULL) {
            fail("arena_alloc: out of memory growing the arena");
        }
        capacity = new_capacity;
    }
    // Every block starts on a 64-byte boundary, a cache line, so that a vector kernel's 64-byte
    // loads never straddle two lines (calloc gives 16, and a large block starts 16 bytes past a
    // page: lesson 17's training steps took 5% less time aligned, on the Intel Xeon of
    // docs/fast-on-a-cpu.md, 2026-12-07). Exactly the bytes asked for (so that the
    // sanitizers catch a read past them), at least 1 (a zero-sized tensor is not NULL), zeroed
    // as calloc would.
    size_t n = count == 0 ? 1 : count, size = item_size == 0 ? 1 : item_size;
    void *memory = NULL;
    if (n > SIZE_MAX / size || posix_memalign(&memory, 64, n * size) != 0) {
        memory = NULL;
    }
    if (memory == NULL) {
        fail("arena_alloc: out of memory (%zu x %zu bytes)", count, item_size);
    }
    memset(memory, 0, n * size);
    blocks[n_blocks] = memory;
    sizes[n_blocks] = count * item_size;
    n_blocks += 1;
    bytes_held += count * item_size;
    if (bytes_held > bytes_peak) {
        bytes_peak = bytes_held;
    }
    return memory;
}

size_t arena_mark(void) {
    return n_blocks;
}

void arena_release(size_t mark) {
    while (n_blocks > mark) {
        n_blocks -= 1;
        free(blocks[n_blocks]);
        bytes_held -= sizes[n_blocks];
    }
}

size_t arena_peak_bytes(void) {
    return bytes_peak;
}

void arena_free_all(void) {
    arena_release(0);
    free(blocks);
    free(sizes);
    blocks = NULL;
    sizes = NULL;
    capacity = 0;
}
