// cpu.c - which kernel sets this CPU runs, and what it says it is.
#include "speed/cpu.h"

#include <stdio.h>
#include <string.h>

#include "speed/vectors.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define HAVE_CPUID 1
#endif

const char *const KERNEL_SETS[4] = {"avx512", "avx2", "scalar", NULL};

bool cpu_runs(const char *name) {
    if (strcmp(name, "scalar") == 0) {
        return true;
    }
#ifdef HAVE_VECTOR_KERNELS
    __builtin_cpu_init();   // GCC's and Clang's reading of CPUID
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (strcmp(name, "avx2") == 0) {
        return avx2;
    }
    if (strcmp(name, "avx512") == 0) {
        return avx2 && __builtin_cpu_supports("avx512f");
    }
#endif
    return false;
}

const char *fastest_kernels(void) {
    int i = 0;
    while (!cpu_runs(KERNEL_SETS[i])) {   // "scalar", the last, always runs
        i += 1;
    }
    return KERNEL_SETS[i];
}

#ifdef HAVE_CPUID
// The size in KiB of the data cache of `level` (1 or 2), from the CPU's own
// description of its caches (CPUID leaf 4 on Intel, 0x8000001D on AMD, the
// same format); 0 if it does not say.
static unsigned cache_kib(unsigned leaf, int level) {
    for (unsigned i = 0; i < 16; i++) {
        unsigned a, b, c, d;
        if (!__get_cpuid_count(leaf, i, &a, &b, &c, &d) || (a & 31) == 0) {
            return 0;
        }
        if ((int)((a >> 5) & 7) == level && (a & 31) != 2) {   // 2: an instruction cache
            unsigned ways = (b >> 22) + 1, parts = ((b >> 12) & 1023) + 1;
            unsigned line = (b & 4095) + 1, sets = c + 1;
            return ways * parts * line * sets / 1024;
        }
    }
    return 0;
}
#endif

Core this_core(void) {
    Core core;
    memset(&core, 0, sizeof core);
#ifdef HAVE_CPUID
    unsigned a = 0, b = 0, c = 0, d = 0, brand[12] = {0};
    for (unsigned i = 0; i < 3; i++) {   // the brand string, 16 bytes a leaf
        __get_cpuid(0x80000002u + i, &brand[4 * i], &brand[4 * i + 1], &brand[4 * i + 2],
                    &brand[4 * i + 3]);
    }
    char name[49] = {0};
    memcpy(name, brand, 48);
    const char *shown = name + strspn(name, " ");
    memcpy(core.name, shown, strlen(shown));
    __get_cpuid(1, &a, &b, &c, &d);   // family and model, with their extended bits
    core.family = (a >> 8) & 15;
    core.model = (a >> 4) & 15;
    if (core.family == 15) {
        core.family += (a >> 20) & 255;
    }
    if (core.family >= 6) {
        core.model += ((a >> 16) & 15) << 4;
    }
    __get_cpuid(0, &a, &b, &c, &d);   // the vendor: 12 letters in b, d, c
    memcpy(core.vendor, &b, 4);
    memcpy(core.vendor + 4, &d, 4);
    memcpy(core.vendor + 8, &c, 4);
    unsigned leaf = strcmp(core.vendor, "AuthenticAMD") == 0 ? 0x8000001Du : 4;
    core.l1d_kib = cache_kib(leaf, 1);
    core.l2_kib = cache_kib(leaf, 2);
#endif
    return core;
}

void describe_cpu(void) {
#ifdef HAVE_CPUID
    Core core = this_core();
    printf("CPU: %s (family %u, model %u), L1d %u KiB and L2 %u KiB a core\n", core.name,
           core.family, core.model, core.l1d_kib, core.l2_kib);
#else
    printf("CPU: not x86-64\n");
#endif
    printf("  (as the CPU reports itself; `lscpu` shows the same for yours)\n");
}
