// blocks.c - bench_blocks: the table of cores and the blocks each wants
// (blocks.h). Every row was measured with --bench's shapes (batch 1, 8
// heads, head_dim 64) at seq 2048, pinned to one core, each candidate the
// best of interleaved rounds; docs/fast-on-a-cpu.md has the figures.
#include "speed/blocks.h"

#include <stdio.h>
#include <string.h>

// Where no row has measured a core: the Zen 4 row's blocks, the first ones
// measured (on a core of two 256-bit FMA units and a 1 MiB L2, the
// smallest L2 of the rows).
static BenchBlocks fallback(int lanes, const char *core, const char *why) {
    return (BenchBlocks){64, lanes == 16 ? 1024 : 512, 64, 64, false, core, why};
}

BenchBlocks bench_blocks(const Core *core, int lanes) {
    bool amd = strcmp(core->vendor, "AuthenticAMD") == 0;
    bool intel = strcmp(core->vendor, "GenuineIntel") == 0;
    if (amd && core->family == 25) {
        // Zen 3 and Zen 4. Measured on Zen 4 (family 25, model 17), 2026-11-27.
        return fallback(lanes, "AMD Zen 4 (family 25)",
                        lanes == 16
                            ? "it runs each 512-bit FMA as two 256-bit halves (32 FLOPs a cycle); "
                              "the forward's 64 x 1024 ran fastest there, 0.6% ahead of 64 x 512, "
                              "its score block (256 KiB) within the 1 MiB L2; the backward's "
                              "64 x 64 to 256 x 128 within 2-3%"
                        : lanes == 8
                            ? "with 8-float registers the forward's 64 x 512 ran fastest there "
                              "(64 x 1024 was 4% slower); the backward's 64 x 64 to 256 x 128 "
                              "within 2-3%"
                            : "the scalar twins take the 8-float registers' blocks (the "
                              "forward's 64 x 512 ran fastest there with AVX2); no blocks were "
                              "measured for the twins");
    }
    if (amd && core->family == 26) {
        // Zen 5: not measured here.
        return fallback(lanes, "AMD Zen 5 (family 26)",
                        "its desktop and server parts run 512-bit FMAs at full width (64 FLOPs "
                        "a cycle; the mobile Ryzen AI 300 as two halves, as Zen 4) with Zen 4's "
                        "1 MiB L2; no blocks were measured on it, so Zen 4's (the issue that "
                        "asked for this table reports 78% of the peak with them)");
    }
    if (intel && core->family == 6 && lanes == 16 && core->l2_kib >= 2048) {
        // Server cores with 2 MiB of L2 or more and two 512-bit FMA ports: Sapphire
        // Rapids (model 143), Emerald Rapids (207), Granite Rapids (173, 174). Measured on
        // a virtual machine that reports model 167 with their AMX and AVX512-FP16,
        // 2026-12-07.
        return (BenchBlocks){64, 512, 64, 64, true, "Intel Xeon, 2 MiB L2 (family 6)",
                             "two 512-bit FMA ports (64 FLOPs a cycle), which run the exp's other "
                             "vector work too; at seq 2048 the forward's 64 x 256 to 64 x 1024 "
                             "ran within 0.3% of each other without the mask (the L2 holds a "
                             "head's keys and values, 1 MiB, beside any of them), and with it "
                             "64 x 512 took 3% less time than 64 x 1024 (the diagonal's tiles "
                             "are computed whole); the backward's 64 x 64, 64 x 128 and 128 "
                             "x 128 within 1.1%; the softmax's sums in a pass of their own took 5% less time "
                             "than in the register tiles"};
    }
    return fallback(lanes, "any other core",
                    "no row measured it: the blocks measured first, on Zen 4, whose 1 MiB L2 "
                    "is the smallest of the rows");
}

BenchBlocks bench_blocks_here(int lanes) {
    Core core = this_core();
    return bench_blocks(&core, lanes);
}

void print_bench_blocks(int block_q, int block_k, int chosen_q, int chosen_k,
                        const BenchBlocks *row) {
    char text[640];
    if (block_q == chosen_q && block_k == chosen_k) {
        snprintf(text, sizeof text, "blocks: %d queries x %d keys, chosen for %s: %s.", block_q,
                 block_k, row->core, row->why);
    } else {
        snprintf(text, sizeof text, "blocks: %d queries x %d keys, as --block-q and --block-k "
                 "say (for %s it takes %d x %d).", block_q, block_k, row->core, chosen_q,
                 chosen_k);
    }
    // Wrapped at a space before column 96, the lines after the first indented by 2.
    const char *line = text;
    int indent = 0;
    while (strlen(line) + indent > 96) {
        const char *cut = line + 96 - indent;
        while (cut > line && *cut != ' ') {
            cut--;
        }
        if (cut == line) {   // a word longer than the line: leave it whole
            break;
        }
        printf("%*s%.*s\n", indent, "", (int)(cut - line), line);
        line = cut + 1;
        indent = 2;
    }
    printf("%*s%s\n", indent, "", line);
}
