// test_lesson17.c - lesson 17 (language): lesson 16's model trained on text, its heads
// measured, text sampled, step for step with PyTorch.
//
// Against PyTorch, bit for bit (tests/reference/gen_lesson17.py ran the page's script): the
// initial parameters, step 1's batch, logits and every gradient, every step's loss and
// gradient norm, the losses on both splits at every evaluation, the heads' measures, the
// sentence's maps, the parameters after the last step and the tokenizer (--save), and every
// printed line, the sampled text included, for four runs: characters and byte pairs (on a
// small text whose merges run out, and on the project's pages), 1 to 3 layers, groups of 1
// to 3 query heads, greedy and sampled text with temperature, top-k and top-p, samples
// longer than the context, a prompt longer than the context.
// Against plain Python and PyTorch, recorded: byte pair merges, Python's decoding of bytes
// that are not UTF-8, torch.multinomial's and exponential_'s draws.
// Without either: UTF-8 checked and decoded by hand; byte pairs worked by hand (a tie among
// them); every tokenizer's round trip on random text of 1- to 4-byte characters, with
// tokens that cut characters in two; top-p and top-k on distributions worked by hand; the
// heads' measures on attention made by hand; sampling through the cache against the full
// forward; the vector log_softmax against its scalar twin; checkpoints saved and loaded;
// bad flags and bad texts refused; the format of --bench's lines.
#define _POSIX_C_SOURCE 200809L
#include "harness.h"

#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define main lesson_main
#include "../lessons/17-language/language.c"
#undef main
#include "../lessons/17-language/adamw.c"
#include "../lessons/17-language/bench.c"
#include "../lessons/17-language/checkpoint.c"
#include "../lessons/17-language/heads.c"
#include "../lessons/17-language/language_flags.c"
#include "../lessons/17-language/layers.c"
#include "../lessons/17-language/model.c"
#include "../lessons/17-language/sample.c"
#include "../lessons/17-language/show.c"
#include "../lessons/17-language/svg.c"
#include "../lessons/17-language/tokenizer.c"

#define LESSON "17-language"
#define DATA DATA_DIR "/lesson17"

// --- against PyTorch's recordings --------------------------------------------------------

// Every .npy of `reference` against the one of the same name in `got`, bit for bit.
static int compare_npy_dir(const char *got, const char *reference) {
    DIR *d = opendir(reference);
    ck_assert_msg(d != NULL, "cannot read %s", reference);
    int compared = 0;
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".npy") != 0) {
            continue;
        }
        assert_bitwise_equal(load_npy(path_join("%s/%s", got, e->d_name)),
                             load_npy(path_join("%s/%s", reference, e->d_name)),
                             path_join("%s/%s", reference, e->d_name));
        compared += 1;
    }
    closedir(d);
    return compared;
}

// A fresh directory to run the lesson in, which sees the repository's lessons/ and tests/
// (the texts' paths are relative to the root) as the recording's did.
static const char *work_dir(void) {
    const char *tmp = make_temp_dir();
    char *cwd = getcwd(NULL, 0);
    const char *names[2] = {"lessons", "tests"};
    for (int i = 0; i < 2; i++) {
        ck_assert_int_eq(symlink(path_join("%s/%s", cwd, names[i]),
                                 path_join("%s/%s", tmp, names[i])), 0);
    }
    free(cwd);
    return tmp;
}

// The lesson with the case's flags, in a fresh directory: --dump dump --save trained. Its
// printed text, every dump and every saved file must be PyTorch's exactly.
START_TEST(test_matches_pytorch) {
    const RecordedCase *c = recorded_case(DATA, _i);
    const char *tmp = work_dir();
    const char *argv[MAX_CASE_WORDS + 8];
    int n = 0;
    for (; c->args[n] != NULL; n++) {
        argv[n] = c->args[n];
    }
    const char *extra[] = {"--dump", "dump", "--save", "trained", NULL};
    for (int i = 0; extra[i] != NULL; i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    char *cwd = getcwd(NULL, 0);
    const char *binary = path_join("%s/%s", cwd, lesson_binary(LESSON));
    free(cwd);
    RunResult r = run_program_with(tmp, 120, binary, argv);
    ck_assert_msg(r.status == 0 && r.err[0] == '\0', "%s: exit %d: %s", c->dir, r.status, r.err);
    const char *expected = read_text(path_join("%s/stdout.txt", c->reference));
    const char *missing = NULL;
    ck_assert_msg(strcmp(r.out, expected) == 0, "%s: the lesson does not print PyTorch's text: "
                  "%s", c->dir, lines_in_order(r.out, expected, &missing) ? "more lines"
                  : path_join("'%.200s' is missing", missing));
    int compared = compare_npy_dir(path_join("%s/dump", tmp), c->reference);
    int parameters = 3 + 9 * (int)case_int(c, "layers");   // each with its .grad, and 9 more
    ck_assert_int_eq(compared, 2 * parameters + 9);
    int saved = compare_npy_dir(path_join("%s/trained", tmp),
                                path_join("%s/trained", c->reference));
    ck_assert_int_eq(saved, parameters);
    ck_assert_msg(strcmp(read_text(path_join("%s/trained/tokenizer.txt", tmp)),
                         read_text(path_join("%s/trained/tokenizer.txt", c->reference))) == 0,
                  "%s: tokenizer.txt is not the script's", c->dir);
    remove_tree(tmp);
}
END_TEST

// --- UTF-8 -------------------------------------------------------------------------------------

START_TEST(test_utf8_by_hand) {
    struct {
        const char *bytes;
        long n, at;   // at: where the first ill-formed character starts, -1 if none
    } cases[] = {
        {"a\xC3\xA9\xE8\xAE\xAD\xF0\x9F\x98\x80", 10, -1},   // a é 训 😀: 1, 2, 3, 4 bytes
        {"\xC0\x80", 2, 0},              // an overlong NUL: C0 never starts a character
        {"\xE0\x80\xAF", 3, 0},          // an overlong '/': E0 needs A0..BF next
        {"\xED\xA0\x80", 3, 0},          // a surrogate, U+D800: ED needs 80..9F next
        {"\xF4\x90\x80\x80", 4, 0},      // past U+10FFFF
        {"\xF5\x80\x80\x80", 4, 0},      // F5 never starts a character
        {"ab\xE8\xAE", 4, 2},            // 训 cut off by the end
        {"\xE8\xAE" "a", 3, 0},          // 训 broken off by an 'a'
        {"\x80", 1, 0},                  // a continuation byte alone
        {"\0", 1, -1},                   // NUL is a character
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        long at = -1;
        const char *problem = utf8_problem(&at, (const unsigned char *)cases[k].bytes, cases[k].n);
        ck_assert_msg((problem == NULL) == (cases[k].at < 0), "case %zu: %s", k,
                      problem != NULL ? problem : "accepted");
        if (problem != NULL) {
            ck_assert_msg(at == cases[k].at, "case %zu: bad character at %ld, by hand %ld", k, at,
                          cases[k].at);
        }
    }
    int code[4];
    ck_assert_int_eq(utf8_decode(code, (const unsigned char *)cases[0].bytes, 10), 4);
    ck_assert_int_eq(code[0], 'a');
    ck_assert_int_eq(code[1], 0xE9);
    ck_assert_int_eq(code[2], 0x8BAD);
    ck_assert_int_eq(code[3], 0x1F600);
    unsigned char out[4];
    ck_assert_int_eq(utf8_encode(out, 0x8BAD), 3);
    ck_assert_int_eq(memcmp(out, "\xE8\xAE\xAD", 3), 0);
    ck_assert_int_eq(columns_of(0x8BAD), 2);
    ck_assert_int_eq(columns_of('a'), 1);
}
END_TEST

static int hex_value(char c) {
    return c <= '9' ? c - '0' : c - 'a' + 10;
}

// "e8ae" -> its bytes (arena); *n their count ("-": none).
static unsigned char *from_hex(const char *hex, long *n) {
    long length = strcmp(hex, "-") == 0 ? 0 : (long)strlen(hex) / 2;
    unsigned char *bytes = arena_alloc((size_t)length + 1, 1);
    for (long i = 0; i < length; i++) {
        bytes[i] = (unsigned char)(hex_value(hex[2 * i]) * 16 + hex_value(hex[2 * i + 1]));
    }
    *n = length;
    return bytes;
}

// Python's bytes.decode("utf-8", errors="replace") and "backslashreplace" on random bytes,
// recorded: utf8_replaced and visible() (which adds its own marks for spaces and control
// characters: the recorded text gets them too, here).
START_TEST(test_utf8_replacement_matches_python) {
    const char *cursor = read_text(DATA "/utf8_replace.txt");
    int checked = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (line[0] == '#') {
            continue;
        }
        char raw_hex[256], replaced_hex[512], escaped_hex[1024];
        ck_assert_int_eq(sscanf(line, "%255s %511s %1023s", raw_hex, replaced_hex, escaped_hex),
                         3);
        long n, n_replaced, n_escaped, got_n;
        unsigned char *raw = from_hex(raw_hex, &n);
        unsigned char *replaced = from_hex(replaced_hex, &n_replaced);
        unsigned char *escaped = from_hex(escaped_hex, &n_escaped);
        char *got = utf8_replaced(&got_n, raw, n);
        ck_assert_msg(got_n == n_replaced && memcmp(got, replaced, (size_t)got_n) == 0,
                      "replace: %s", raw_hex);
        // visible = backslashreplace, then ' ' -> '·', control characters -> \xNN
        char *want = arena_alloc((size_t)n_escaped * 4 + 1, 1);
        long used = 0;
        for (long i = 0; i < n_escaped; i++) {
            unsigned char c = escaped[i];
            if (c == ' ') {
                used += sprintf(want + used, "\xC2\xB7");
            } else if (c == '\n') {
                used += sprintf(want + used, "\xE2\x86\xB5");
            } else if (c == '\t') {
                used += sprintf(want + used, "\xE2\x86\x92");
            } else if (c < 0x20 || c == 0x7F) {
                used += sprintf(want + used, "\\x%02x", c);
            } else {
                want[used++] = (char)c;
            }
        }
        ck_assert_msg(strcmp(visible(raw, n), want) == 0, "visible: %s: %s against %s", raw_hex,
                      visible(raw, n), want);
        checked += 1;
    }
    ck_assert_int_eq(checked, 300);
}
END_TEST

// --- byte pairs -------------------------------------------------------------------------------

// "aaabdaaabac" (Wikipedia's example of byte pair encoding), by hand: (a, a) comes 4 times
// (overlapping: 2 and 2), becomes 256; then [256 a b d 256 a b a c] has (256, a) and (a, b)
// twice each, and (256, a) came first: 257; then (257, b) twice: 258 = "aaab"; then every
// pair of [258 d 258 a c] comes once: training stops after 3 merges.
START_TEST(test_byte_pairs_by_hand) {
    const unsigned char *text = (const unsigned char *)"aaabdaaabac";
    int ids[11];
    long n;
    Tokenizer tok = bpe_train(ids, &n, text, 11, 10);
    ck_assert_int_eq(tok.n_merges, 3);
    ck_assert_int_eq(tok.vocab_size, 259);
    const int merges[3][3] = {{'a', 'a', 4}, {256, 'a', 2}, {257, 'b', 2}};
    for (int m = 0; m < 3; m++) {
        ck_assert_int_eq(tok.merges[m][0], merges[m][0]);
        ck_assert_int_eq(tok.merges[m][1], merges[m][1]);
        ck_assert_int_eq(tok.merge_counts[m], merges[m][2]);
    }
    const int want[5] = {258, 'd', 258, 'a', 'c'};
    ck_assert_int_eq(n, 5);
    ck_assert_int_eq(memcmp(ids, want, sizeof want), 0);
    ck_assert_int_eq(tok.length[258], 4);
    ck_assert_int_eq(memcmp(tok.bytes[258], "aaab", 4), 0);
    // encoding the text again gives what training gave it; other text is cut the same way
    int again[16], missing;
    ck_assert_int_eq(encode(again, &missing, &tok, text, 11), 5);
    ck_assert_int_eq(memcmp(again, want, sizeof want), 0);
    // "aaaab": merge 0 makes [256 256 b], and no later merge finds its pair
    ck_assert_int_eq(encode(again, &missing, &tok, (const unsigned char *)"aaaab", 5), 3);
    ck_assert_int_eq(again[0], 256);
    ck_assert_int_eq(again[1], 256);
    ck_assert_int_eq(again[2], 'b');
    // a tie: in "abcdcdab" (a, b) and (c, d) come twice each; (a, b) came first
    tok = bpe_train(ids, &n, (const unsigned char *)"abcdcdab", 8, 1);
    ck_assert_int_eq(tok.merges[0][0], 'a');
    ck_assert_int_eq(tok.merges[0][1], 'b');
}
END_TEST

// The merges plain Python (minbpe's loop, tests/reference/gen_lesson17.py) learned from a few
// texts, Chinese among them, and the tokens each text became.
START_TEST(test_byte_pairs_match_python) {
    const char *cursor = read_text(DATA "/bpe_merges.txt");
    int texts = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (line[0] == '#') {
            continue;
        }
        char hex[65536];
        int asked;
        ck_assert_int_eq(sscanf(line, "text %65535s %d", hex, &asked), 2);
        long n;
        unsigned char *text = from_hex(hex, &n);
        const char *merges_line = next_line(&cursor), *ids_line = next_line(&cursor);
        int *ids = arena_alloc((size_t)n + 1, sizeof(int));
        long n_ids;
        Tokenizer tok = bpe_train(ids, &n_ids, text, n, asked);
        const char *c = merges_line + strlen("merges ");
        int count = (int)strtol(c, (char **)&c, 10);
        ck_assert_int_eq(tok.n_merges, count);
        for (int m = 0; m < count; m++) {
            for (int k = 0; k < 3; k++) {
                long value = strtol(c, (char **)&c, 10);
                long got = k < 2 ? tok.merges[m][k] : tok.merge_counts[m];
                ck_assert_msg(got == value, "text %d merge %d: %ld, Python %ld", texts, m, got,
                              value);
            }
        }
        c = ids_line + strlen("ids ");
        ck_assert_int_eq(strtol(c, (char **)&c, 10), n_ids);
        for (long i = 0; i < n_ids; i++) {
            ck_assert_int_eq(ids[i], strtol(c, (char **)&c, 10));
        }
        texts += 1;
    }
    ck_assert_int_eq(texts, 4);
}
END_TEST

// Random text of 1- to 4-byte characters, through both tokenizers: decode(encode(text)) is
// the text, byte for byte. The byte pairs are learned from part of it with enough merges
// that tokens end inside characters (checked: some token is not whole UTF-8 on its own).
START_TEST(test_round_trip_of_random_text) {
    static const int starts[4] = {0x20, 0xA0, 0x4E00, 0x1F600};   // ASCII, Latin-1, CJK, emoji
    manual_seed(17);
    for (int trial = 0; trial < 6; trial++) {
        enum { CHARS_N = 3000 };
        unsigned char *text = arena_alloc(4 * CHARS_N, 1);
        long n = 0;
        for (int i = 0; i < CHARS_N; i++) {
            int kind = (int)(random32() % 4), code = starts[kind] + (int)(random32() % 40);
            n += utf8_encode(text + n, code);
        }
        long at;
        ck_assert_ptr_null(utf8_problem(&at, text, n));
        int *code_points = arena_alloc((size_t)n, sizeof(int)), *ids = arena_alloc((size_t)n,
                                                                                  sizeof(int));
        long n_points = utf8_decode(code_points, text, n);
        Tokenizer chars = chars_tokenizer(code_points, n_points);
        // sorted(set(text)): ascending, and every character of the text in it, each used
        bool *used = arena_alloc((size_t)chars.vocab_size, sizeof(bool));
        for (long i = 0; i < n_points; i++) {
            int lo = 0, hi = chars.vocab_size - 1;
            while (lo < hi) {
                int mid = (lo + hi) / 2;
                lo = chars.code_points[mid] < code_points[i] ? mid + 1 : lo;
                hi = chars.code_points[mid] < code_points[i] ? hi : mid;
            }
            ck_assert_int_eq(chars.code_points[lo], code_points[i]);
            used[lo] = true;
        }
        for (int v = 0; v < chars.vocab_size; v++) {
            ck_assert_msg(used[v] && (v == 0 || chars.code_points[v - 1] < chars.code_points[v]),
                          "trial %d: the vocabulary is not sorted(set(text)) at %d", trial, v);
        }
        long half = n / 2;
        while ((text[half] & 0xC0) == 0x80) {
            half += 1;   // the training part ends at a character's end
        }
        long n_ids;
        Tokenizer pairs = bpe_train(ids, &n_ids, text, half, 100 + 50 * trial);
        const Tokenizer *toks[2] = {&chars, &pairs};
        for (int k = 0; k < 2; k++) {
            int missing;
            long count = encode(ids, &missing, toks[k], text, n);
            ck_assert_int_gt(count, 0);
            unsigned char *back = arena_alloc((size_t)(count * longest_token(toks[k])), 1);
            long n_back = decode(back, toks[k], ids, count);
            ck_assert_msg(n_back == n && memcmp(back, text, (size_t)n) == 0,
                          "trial %d, %s: the round trip changed the text", trial,
                          k == 0 ? "characters" : "byte pairs");
        }
        int cut = 0;
        for (int i = 256; i < pairs.vocab_size; i++) {
            cut += utf8_problem(&at, pairs.bytes[i], pairs.length[i]) != NULL;
        }
        ck_assert_msg(cut > 0, "trial %d: no token cuts a character in two", trial);
    }
}
END_TEST

// --- sampling ---------------------------------------------------------------------------------

// top_p by hand, on probabilities exact in binary: the mass above each token in order
// 0, 0.5, 0.75, 0.875; a token is kept while that is below p.
START_TEST(test_top_p_by_hand) {
    const float probs[4] = {0.125f, 0.5f, 0.125f, 0.25f};   // order: 1, 3, 0, 2 (ties by id)
    float kept[4];
    struct {
        float p;
        float want[4];
    } cases[] = {
        {0.5f, {0, 0.5f, 0, 0}},              // the first token alone holds 0.5
        {0.7f, {0, 0.5f, 0, 0.25f}},          // 0.75 >= 0.7 after two
        {0.75f, {0, 0.5f, 0, 0.25f}},         // exactly p: the third is not needed
        {0.8f, {0.125f, 0.5f, 0, 0.25f}},     // the tie of 0.125: token 0 before token 2
        {1.0f, {0.125f, 0.5f, 0.125f, 0.25f}},
        {0.01f, {0, 0.5f, 0, 0}},             // the most likely is always kept
    };
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        top_p(kept, probs, 4, cases[k].p);
        for (int i = 0; i < 4; i++) {
            ck_assert_msg(kept[i] == cases[k].want[i], "p %g: kept[%d] = %g, by hand %g",
                          (double)cases[k].p, i, (double)kept[i], (double)cases[k].want[i]);
        }
    }
    // top-k keeps ties with the k-th largest
    float logits[5] = {1.0f, 3.0f, 2.0f, 2.0f, 0.5f};
    top_k_cut(logits, 5, 2);
    ck_assert(logits[1] == 3.0f && logits[2] == 2.0f && logits[3] == 2.0f);
    ck_assert(isinf(logits[0]) && isinf(logits[4]));
}
END_TEST

// torch.multinomial(probs, 1), drawn 40 times after torch.manual_seed, recorded, and
// torch.empty(n).exponential_(): the same tokens and bits from multinomial() and its draws.
START_TEST(test_multinomial_matches_torch) {
    const char *cursor = read_text(DATA "/multinomial.txt");
    int draws = 0, exps = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (line[0] == '#') {
            continue;
        }
        char kind[8];
        unsigned long long seed;
        int n, used;
        ck_assert_int_eq(sscanf(line, "%7s %llu %d%n", kind, &seed, &n, &used), 3);
        const char *c = line + used;
        manual_seed(seed);
        if (strcmp(kind, "exp") == 0) {
            for (int i = 0; i < n; i++) {
                uint32_t bits = (uint32_t)strtoul(c, (char **)&c, 16);
                double u = (double)(random64() & ((1ULL << 53) - 1)) * 0x1p-53;
                float q = (float)(-1.0 * log(1.0 - u)), want;
                memcpy(&want, &bits, 4);
                ck_assert_msg(q == want, "exponential_ %d of seed %llu: %a, PyTorch %a", i, seed,
                              (double)q, (double)want);
            }
            exps += 1;
            continue;
        }
        float *probs = floats(n);
        for (int i = 0; i < n; i++) {
            uint32_t bits = (uint32_t)strtoul(c, (char **)&c, 16);
            memcpy(&probs[i], &bits, 4);
        }
        for (int k = 0; k < 40; k++) {
            int want = (int)strtol(c, (char **)&c, 10), got = multinomial(probs, n);
            ck_assert_msg(got == want, "seed %llu, draw %d: %d, torch.multinomial %d", seed, k,
                          got, want);
            ck_assert_msg(probs[got] > 0, "a token of probability 0 drawn");
        }
        draws += 1;
    }
    ck_assert_int_eq(draws, 5);
    ck_assert_int_eq(exps, 2);
}
END_TEST

// A small model's greedy text through the cache (with context shifts: 40 tokens after a
// prompt, in a context of 8) against the argmax of a full forward over the same window at
// every step: the same tokens.
START_TEST(test_generation_through_the_cache) {
    Config c = {30, 16, 48, 2, 2, 1, 8, 8, 10000, 1e-6f};
    manual_seed(10);
    Model model = model_init(&c);
    Activations one = activations_init(&c, 1), full = activations_init(&c, 1);
    const int prompt[3] = {4, 17, 9};
    int out[43];
    Sampler greedy = {0.0, 0, 1.0};
    generate(out, &one, &model, prompt, 3, 40, &greedy);
    ck_assert_int_eq(memcmp(out, prompt, sizeof prompt), 0);
    int used = 3;   // the window as generate keeps it: at most N, then the newest N/2
    for (int i = 0; i < 40; i++) {
        float window[8];
        for (int t = 0; t < used; t++) {
            window[t] = (float)out[3 + i - used + t];
        }
        model_forward(&full, &model, window, 1, 0, used);
        const float *logits = full.logits + (long)(used - 1) * c.vocab_size;
        int best = 0;
        for (int k = 1; k < c.vocab_size; k++) {
            best = logits[k] > logits[best] ? k : best;
        }
        ck_assert_msg(out[3 + i] == best, "token %d: %d through the cache, %d in full", i,
                      out[3 + i], best);
        used = used == 8 ? 4 : used + 1;
    }
}
END_TEST

// --- the heads' measures, on attention made by hand ----------------------------------------

START_TEST(test_measures_by_hand) {
    // text "ab cd": a boundary (the space) at position 2; one layer, two heads, one window
    Config c = {8, 8, 24, 1, 2, 1, 4, 5, 10000, 1e-6f};
    int code_points[5] = {'a', 'b', ' ', 'c', 'd'};
    Tokenizer tok = chars_tokenizer(code_points, 5);   // sorted: ' ' a b c d
    const float ids[5] = {1, 2, 0, 3, 4};
    Activations acts = activations_init(&c, 1);
    float *att = acts.layers[0].att;   // (1, 2, 5, 5)
    for (int t = 0; t < 5; t++) {
        att[t * 5 + (t > 0 ? t - 1 : 0)] = 1.0f;   // head 0: the previous token, all of it
        att[25 + t * 5 + (t >= 3 ? 2 : 0)] = 1.0f;   // head 1: the space, once it has come
    }
    HeadMeasures m = {floats(2), floats(2), floats(2), 0, 0};
    measure_windows(&m, &acts, ids, &tok, &c, 1);
    ck_assert_float_eq(m.previous[0], 1.0f);          // 4 of 4 queries after the first
    ck_assert_float_eq(m.previous[1], 0.5f);          // queries 1 and 3 look at their previous
    ck_assert_float_eq(m.boundary[0], 0.5f);          // queries 3, 4: 1 (t=3 reads 2) and 0
    ck_assert_float_eq(m.boundary[1], 1.0f);
}
END_TEST

// --- the vector kernels against their scalar twins -------------------------------------------

START_TEST(test_log_softmax_kernels_match_their_scalar_twin) {
    const Kernels *scalar = kernels_named("scalar");
    const char *names[2] = {"avx2", "avx512"};
    enum { MAX_N = 700 };
    float *x = floats(2 * MAX_N), *want = floats(2 * MAX_N), *got = floats(2 * MAX_N);
    float *g = floats(2 * MAX_N);
    manual_seed(12);
    for (int i = 0; i < 2 * MAX_N; i++) {
        x[i] = ((float)(random32() & 0xFFFF) / 65536.0f - 0.5f) * 20.0f;
        g[i] = (float)(random32() & 0xFFFF) / 65536.0f - 0.5f;
    }
    for (int k = 0; k < 2; k++) {
        const Kernels *set = kernels_named(names[k]);
        if (set == NULL) {
            note_skipped("no %s kernels on this CPU: not compared", names[k]);
            continue;
        }
        for (int n = 1; n <= MAX_N; n = n < 40 ? n + 1 : n * 2 + 3) {
            scalar->log_softmax_rows(want, x, 2, n);
            set->log_softmax_rows(got, x, 2, n);
            ck_assert_msg(memcmp(want, got, sizeof(float) * 2 * (size_t)n) == 0,
                          "%s log_softmax %d", names[k], n);
            scalar->log_softmax_backward_rows(want, g, got, 2, n);
            set->log_softmax_backward_rows(got, g, got, 2, n);
            ck_assert_msg(memcmp(want, got, sizeof(float) * 2 * (size_t)n) == 0,
                          "%s log_softmax' %d", names[k], n);
        }
    }
}
END_TEST

// Attention's kernels on causal rows, whose masked keys come in whole runs of 8 (skipped by
// the vector kernels: no exp, no division) and partial ones: causal_scale, softmax_rows on
// its output, softmax_backward_scaled, each the scalar twin's bits, at every T up to 40 and
// starts 0 and 5 (decoding). And softmax_rows on rows with eight -inf at the front and in
// the middle (sampling's cut tokens), and on a row of -inf alone (NaN from both).
START_TEST(test_attention_kernels_match_their_scalar_twin) {
    const Kernels *scalar = kernels_named("scalar");
    const char *names[2] = {"avx2", "avx512"};
    enum { MAX_T = 40, MAX_L = 45 };
    float *scores = floats(MAX_T * MAX_L), *want = floats(MAX_T * MAX_L);
    float *got = floats(MAX_T * MAX_L), *dp = floats(MAX_T * MAX_L);
    manual_seed(13);
    for (int i = 0; i < MAX_T * MAX_L; i++) {
        scores[i] = ((float)(random32() & 0xFFFF) / 65536.0f - 0.5f) * 20.0f;
        dp[i] = (float)(random32() & 0xFFFF) / 65536.0f - 0.5f;
    }
    for (int k = 0; k < 2; k++) {
        const Kernels *set = kernels_named(names[k]);
        if (set == NULL) {
            note_skipped("no %s kernels on this CPU: not compared", names[k]);
            continue;
        }
        for (int start = 0; start <= 5; start += 5) {
            for (int T = 1; T + start <= MAX_L && T <= MAX_T; T++) {
                int L = start + T;
                size_t bytes = sizeof(float) * (size_t)T * (size_t)L;
                memcpy(want, scores, bytes);
                memcpy(got, scores, bytes);
                scalar->causal_scale(want, T, L, start, 4.0f);
                set->causal_scale(got, T, L, start, 4.0f);
                ck_assert_msg(memcmp(want, got, bytes) == 0, "%s causal_scale T %d start %d",
                              names[k], T, start);
                scalar->softmax_rows(want, T, L);
                set->softmax_rows(got, T, L);
                ck_assert_msg(memcmp(want, got, bytes) == 0, "%s softmax T %d start %d",
                              names[k], T, start);
                for (int t = 0; t < T; t++) {   // got's rows: dS, from dP and want's P
                    float row = scalar->softmax_backward_row(dp + t * L, want + t * L, L);
                    scalar->softmax_backward_scaled(got + t * L, dp + t * L, want + t * L,
                                                    row, 4.0f, start + t + 1, L);
                    float d[MAX_L];
                    set->softmax_backward_scaled(d, dp + t * L, want + t * L, row, 4.0f,
                                                 start + t + 1, L);
                    ck_assert_msg(memcmp(d, got + t * L, sizeof(float) * (size_t)L) == 0,
                                  "%s softmax' T %d start %d row %d", names[k], T, start, t);
                }
            }
        }
        for (int front = 0; front <= 16; front += 16) {   // -inf at 0..7, or 16..23
            memcpy(want, scores, sizeof(float) * 40);
            for (int i = front; i < front + 8; i++) {
                want[i] = -INFINITY;
            }
            memcpy(got, want, sizeof(float) * 40);
            scalar->softmax_rows(want, 1, 40);
            set->softmax_rows(got, 1, 40);
            ck_assert_msg(memcmp(want, got, sizeof(float) * 40) == 0, "%s softmax, -inf at %d",
                          names[k], front);
        }
        for (int i = 0; i < 16; i++) {
            want[i] = got[i] = -INFINITY;
        }
        scalar->softmax_rows(want, 1, 16);
        set->softmax_rows(got, 1, 16);
        for (int i = 0; i < 16; i++) {
            ck_assert_msg(isnan(want[i]) && isnan(got[i]), "%s softmax of -inf alone",
                          names[k]);
        }
    }
}
END_TEST

// --- runs: checkpoints, bad input, --bench ------------------------------------------------------

static void write_file_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    ck_assert_int_eq(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
}

#define SMALL "--dim", "16", "--heads", "2", "--kv-heads", "1", "--seq", "16", "--batch", "4", \
              "--new", "20", "--sentence", "keys"

// Trained, saved, loaded again without training: the loaded run reads the saved tokenizer
// and weights (its first batch's loss is the trained model's, far below the untrained
// one's), and the page's script, told --load, would read the same files
// (test_matches_pytorch compares them).
START_TEST(test_a_saved_model_loads) {
    const char *tmp = make_temp_dir(), *ck = path_join("%s/ck", tmp);
    const char *train[] = {SMALL, "--steps", "150", "--tokenizer", "bpe", "--merges", "50",
                           "--save", ck, NULL};
    RunResult trained = run_program(lesson_binary(LESSON), train);
    ck_assert_msg(trained.status == 0, "exit %d: %s", trained.status, trained.err);
    ck_assert_int_eq(count_entries(ck), 22);   // 21 parameters and tokenizer.txt
    ck_assert_msg(strncmp(read_text(path_join("%s/tokenizer.txt", ck)),
                          "lesson-17 tokenizer\nbpe 50\n", 26) == 0, "tokenizer.txt");
    const char *load[] = {SMALL, "--steps", "0", "--load", ck, NULL};
    RunResult loaded = run_program(lesson_binary(LESSON), load);
    ck_assert_msg(loaded.status == 0, "exit %d: %s", loaded.status, loaded.err);
    ck_assert_msg(strstr(loaded.out, "tokenizer.txt's, byte pairs, 306 tokens") != NULL, "%s",
                  loaded.out);
    double first, later;
    const char *line = strstr(trained.out, "y.view(-1)) = "), *again = strstr(loaded.out,
                                                                                "y.view(-1)) = ");
    ck_assert(line != NULL && again != NULL);
    ck_assert_int_eq(sscanf(line, "y.view(-1)) = %lf", &first), 1);
    ck_assert_int_eq(sscanf(again, "y.view(-1)) = %lf", &later), 1);
    ck_assert_msg(later < first - 1.0, "loaded: first loss %g, untrained %g", later, first);
    const char *bad_flag[] = {SMALL, "--load", ck, "--merges", "9", NULL};
    assert_one_line_refusal(run_program(lesson_binary(LESSON), bad_flag), "lesson-17: ",
                            "--merges with --load");
    write_file_text(path_join("%s/tokenizer.txt", ck), "lesson-17 tokenizer\nbpe 2\n300 1 5\n");
    assert_one_line_refusal(run_program(lesson_binary(LESSON), load), "lesson-17: ",
                            "a merge of a token not made yet");
    remove_tree(tmp);
}
END_TEST


// Texts the lesson must refuse before any work: one line naming the problem, exit 2, and
// nothing written (--dump's directory not made).
START_TEST(test_bad_texts_are_refused) {
    const char *tmp = make_temp_dir();
    struct {
        const char *name, *bytes;
        long n;
        const char *named;
    } texts[] = {
        {"latin1.txt", "caf\xE9 au lait", 12, "not UTF-8: byte 3 (0xe9) starts a character "
                                                "the next byte breaks"},
        {"cut.txt", "\xE8\xAE\xAD\xE7\xBB", 5, "byte 3 (0xe7) starts a character the file cuts"},
        {"surrogate.txt", "a\xED\xA0\x80", 4, "byte 1 (0xed)"},
        {"empty.txt", "", 0, "the file is empty"},
        {"short.txt", "Attention: the keys and the values of the heads.", 48,
         "fewer than one window"},
    };
    for (size_t k = 0; k < sizeof texts / sizeof texts[0]; k++) {
        const char *path = path_join("%s/%s", tmp, texts[k].name);
        FILE *f = fopen(path, "wb");
        ck_assert_int_eq(fwrite(texts[k].bytes, 1, (size_t)texts[k].n, f), (size_t)texts[k].n);
        fclose(f);
        const char *dump = path_join("%s/dump", tmp);
        // one step: so that the budget admits the run with the scalar kernels too
        const char *args[] = {"--text", path, "--steps", "1", "--dump", dump, NULL};
        RunResult r = run_program(lesson_binary(LESSON), args);
        assert_one_line_refusal(r, "lesson-17: ", texts[k].named);
        ck_assert_msg(strstr(r.err, texts[k].named) != NULL, "'%s' not in: %s", texts[k].named,
                      r.err);
        ck_assert_msg(access(dump, F_OK) != 0, "%s: --dump's directory made", texts[k].name);
    }
    const char *dir[] = {"--text", tmp, NULL};
    assert_one_line_refusal(run_program(lesson_binary(LESSON), dir), "lesson-17: ",
                            "a directory");
    remove_tree(tmp);
}
END_TEST

// --- outputs: --save, --svg, --dump and --load as lesson 16's (issue 30) ------------------

// A weight of Inf (or more than 1) is the darkest shade, NaN none, in the text maps and
// the SVG: a float past an int's range is never converted to int (undefined behaviour:
// an Inf indexed the shades at INT_MIN, and was left out of the image). And the SVG's
// chart of losses that are not numbers stays inside the chart.
START_TEST(test_shades_of_weights_that_are_not_numbers) {
    ck_assert_int_eq(shade(INFINITY), '@');
    ck_assert_int_eq(shade(1e30f), '@');
    ck_assert_int_eq(shade(NAN), ' ');
    ck_assert_int_eq(shade(-INFINITY), ' ');
    ck_assert_int_eq(shade(0.5f), '+');   // the fifth ninth
    // A run of one layer, one head and a sentence of 4 characters, before any step.
    int letters[4] = {'a', 'b', 'c', 'd'}, sentence[4] = {0, 1, 2, 3};
    Run run = {0};
    run.s.config = (Config){.vocab_size = 4, .hidden_size = 8, .num_hidden_layers = 1,
                            .num_attention_heads = 1, .num_key_value_heads = 1, .head_dim = 8,
                            .seq = 4};
    run.s.batch = 1;
    run.s.eval_batches = 1;
    run.data.tok = chars_tokenizer(letters, 4);
    run.sentence = sentence;
    run.n_sentence = 4;
    float maps[3 * 16];
    for (int i = 0; i < 3 * 16; i++) {
        maps[i] = i % 4 == 0 ? INFINITY : i % 4 == 1 ? NAN : i % 4 == 2 ? 1e30f : 0.0f;
    }
    int steps[3] = {0, 1, 2};
    size_t length;
    const char *text = svg_text(&length, &run, maps, steps);
    ck_assert_uint_eq(length, strlen(text));
    // Each map's 8 cells of Inf and 1e30 drawn black (one path of the darkest shade a map),
    // its NaNs and zeros left white.
    int black_paths = 0, cells = 0;
    for (const char *at = text; (at = strstr(at, "\" fill-opacity=\"1.0000\"/>")) != NULL; at++) {
        black_paths += 1;
    }
    for (const char *at = text; (at = strstr(at, "h8v8h-8z")) != NULL; at++) {
        cells += 1;
    }
    ck_assert_int_eq(black_paths, 3);
    ck_assert_int_eq(cells, 3 * 8);
    // The chart of a run whose losses are not numbers (diverged), or of no losses at all:
    // every point inside the chart, no "nan" or "inf" in the image (the scale divided by a
    // top of 0, undefined behaviour under -fsanitize=float-divide-by-zero).
    float losses[3] = {NAN, INFINITY, 2.5f}, train[1] = {NAN}, val[1] = {INFINITY};
    int eval_step[1] = {3};
    run.s.steps = 3;
    run.loss = losses;
    run.n_evals = 1;
    run.eval_step = eval_step;
    run.eval_train = train;
    run.eval_val = val;
    text = svg_text(&length, &run, maps, steps);
    ck_assert_msg(strstr(text, "nan") == NULL && strstr(text, "inf") == NULL, "%s", text);
    // The chart at (112, 40), 480 by 150, its top the largest finite loss rounded up (3):
    // NaN and Inf drawn at the top, 2.5 at 150 - 2.5 * 50 below it.
    ck_assert_msg(strstr(text, "points=\"272.0,40.0 432.0,40.0 592.0,65.0\"") != NULL, "%s",
                  text);
}
END_TEST

// A small run's flags (SMALL, one step), then `extra`, called in this process up to where
// its work starts.
static LessonCall call_small(const char *const *extra) {
    const char *argv[40] = {SMALL, "--steps", "1"};
    int n = 0;
    while (argv[n] != NULL) {
        n++;
    }
    for (int i = 0; extra[i] != NULL; i++) {
        ck_assert(n < 39);
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    return call_lesson(lesson_main, argv);
}

// Refused with exit 2 and exactly `line` (after "lesson-17: "), before its work, and
// nothing made in `sandbox` but what was there (`entries` of them).
static void assert_paths_refused(const char *sandbox, int entries, const char *const *extra,
                                 const char *line) {
    LessonCall call = call_small(extra);
    ck_assert_msg(call.status == 2 && !call.reached_work, "%s: exit %d, reached work %d: %s",
                  line, call.status, call.reached_work, call.err);
    ck_assert_str_eq(call.err, path_join("lesson-17: %s\n", line));
    ck_assert_msg(count_entries(sandbox) == entries, "%s: something was made in %s", line,
                  sandbox);
}

// A checkpoint of the small model in <sandbox>/<name>, written by the program after 5 steps
// (after one, still in the warmup, the weights are the drawn ones).
static const char *small_checkpoint(const char *sandbox, const char *name) {
    const char *ck = path_join("%s/%s", sandbox, name);
    RunResult r = run_program(lesson_binary(LESSON), (const char *const[]){
        SMALL, "--steps", "5", "--save", ck, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    return ck;
}

// Two outputs on one path, or an output over what --load reads: the later overwrote the
// earlier, or the checkpoint --load read. Refused, however the path is spelled ("..",
// "//", a symbolic link); tokenizer.txt, this lesson's own file, as the .npy files are.
START_TEST(test_two_outputs_on_one_path_are_refused) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck");
    const char *D = path_join("%s/D", s), *F = path_join("%s/F", s);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dump", D, NULL},
                         path_join("--dump and --save both name '%s'", D));
    const char *D_again = path_join("%s/x/../D", s);   // x/ does not exist: --dump makes it
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dump", D_again, NULL},
                         path_join("--dump and --save both name '%s'", D_again));
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--dump", ck, NULL},
                         path_join("--dump and --load both name '%s'", ck));
    const char *into = path_join("%s/embed_tokens.weight.npy", D);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--dot", into, NULL},
                         path_join("--dot '%s' is a .npy name in --save's directory, where "
                                   "--save writes its <name>.npy files; give the graph "
                                   "another name", into));
    const char *logits = path_join("%s/logits.npy", D);
    assert_paths_refused(s, 1, (const char *const[]){"--svg", logits, "--dump", D, NULL},
                         path_join("--svg '%s' is a .npy name in --dump's directory, where "
                                   "--dump writes its <name>.npy files; give it another name",
                                   logits));
    const char *in_ck = path_join("%s/norm.weight.npy", ck);
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--svg", in_ck, NULL},
                         path_join("--svg '%s' is a .npy name in --load's directory, where "
                                   "--load reads its <name>.npy files; give it another name",
                                   in_ck));
    // tokenizer.txt: --svg or --dot over the one --save writes or --load reads.
    const char *D_tok = path_join("%s/tokenizer.txt", D);
    assert_paths_refused(s, 1, (const char *const[]){"--save", D, "--svg", D_tok, NULL},
                         path_join("--svg and --save both name '%s'", D_tok));
    const char *ck_tok = path_join("%s//tokenizer.txt", ck);
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--dot", ck_tok, NULL},
                         path_join("--dot and --load both name '%s'", ck_tok));
    assert_paths_refused(s, 1, (const char *const[]){"--load", ck, "--save", D, "--svg", ck_tok,
                                                     NULL},
                         path_join("--svg and --load both name '%s'", ck_tok));
    assert_paths_refused(s, 1, (const char *const[]){"--svg", F, "--dot", F, NULL},
                         path_join("--dot and --svg both name '%s'", F));
    // Through a symbolic link to the sandbox: the same file.
    const char *link = path_join("%s/link", s);
    ck_assert_int_eq(symlink(s, link), 0);
    const char *F_linked = path_join("%s/F", link);
    assert_paths_refused(s, 2, (const char *const[]){"--svg", F, "--dot", F_linked, NULL},
                         path_join("--dot and --svg both name '%s'", F_linked));
    // --save over --load's checkpoint writes what --load read: allowed (training on), also
    // spelled through the link.
    LessonCall on = call_small((const char *const[]){"--load", ck, "--save", ck, NULL});
    ck_assert_msg(on.status == 0 && on.reached_work, "exit %d: %s", on.status, on.err);
    const char *ck_linked = path_join("%s/ck", link);
    on = call_small((const char *const[]){"--load", ck, "--save", ck_linked, NULL});
    ck_assert_msg(on.status == 0 && on.reached_work, "exit %d: %s", on.status, on.err);
    remove_tree(s);
}
END_TEST

// --svg's and --save's paths checked before any work: a bad --svg path was refused only
// after training, with exit 1, and --svg onto a symbolic link replaced the link.
START_TEST(test_bad_output_paths_are_refused_up_front) {
    const char *s = make_temp_dir();
    const char *newdir = path_join("%s/newdir/", s);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", newdir, NULL},
                         path_join("--svg: '%s' ends in '/'; give a file name", newdir));
    char name[301];
    memset(name, 'a', 300);
    name[300] = '\0';
    const char *long_name = path_join("%s/%s", s, name);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", long_name, NULL},
                         "--svg: a name in the path is 300 characters long, more than the 244 "
                         "allowed");
    const char *none = path_join("%s/none/x.svg", s);
    assert_paths_refused(s, 0, (const char *const[]){"--svg", none, NULL},
                         path_join("--svg cannot write '%s': no directory '%s/none'", none, s));
    const char *F = path_join("%s/F", s), *link = path_join("%s/link.svg", s);
    write_file_text(F, "mine");
    ck_assert_int_eq(symlink(F, link), 0);
    assert_paths_refused(s, 2, (const char *const[]){"--svg", link, NULL},
                         path_join("--svg: '%s' is a symbolic link; give a regular file or a "
                                   "new name", link));
    const char *dir = path_join("%s/dir.svg", s);
    ck_assert_int_eq(mkdir(dir, 0777), 0);
    assert_paths_refused(s, 3, (const char *const[]){"--svg", dir, NULL},
                         path_join("--svg: '%s' is a directory; give a regular file or a new "
                                   "name", dir));
    assert_paths_refused(s, 3, (const char *const[]){"--save", F, NULL},
                         path_join("--save: '%s' is not a directory", F));
    // A directory where --save's tokenizer.txt goes: the rename would fail after training.
    const char *ck = path_join("%s/ck", s), *tok_dir = path_join("%s/tokenizer.txt", ck);
    ck_assert_int_eq(mkdir(ck, 0777), 0);
    ck_assert_int_eq(mkdir(tok_dir, 0777), 0);
    assert_paths_refused(s, 4, (const char *const[]){"--save", ck, NULL},
                         path_join("--save: '%s' is a directory; give a regular file or a new "
                                   "name", tok_dir));
    remove_tree(s);
}
END_TEST

// A version 1.0 .npy with header `dict` (padded with spaces to `header_length` bytes, the
// last a newline) and `n` floats.
static void write_npy(const char *path, const char *dict, size_t header_length,
                      const float *values, size_t n) {
    FILE *f = fopen(path, "wb");
    ck_assert_msg(f != NULL, "cannot write %s", path);
    unsigned char magic[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                               (unsigned char)(header_length & 0xff),
                               (unsigned char)(header_length >> 8)};
    fwrite(magic, 1, 10, f);
    fputs(dict, f);
    for (size_t i = strlen(dict); i + 1 < header_length; i++) {
        fputc(' ', f);
    }
    fputc('\n', f);
    ck_assert_int_eq(fwrite(values, sizeof(float), n, f), n);
    fclose(f);
}

static void assert_load_problem(const char *ck, const char *line) {
    LessonCall call = call_small((const char *const[]){"--load", ck, NULL});
    ck_assert_msg(call.status == 2 && !call.reached_work, "%s: exit %d: %s", line, call.status,
                  call.err);
    ck_assert_str_eq(call.err, path_join("lesson-17: --load %s: %s\n", ck, line));
}

// --load reads what numpy.load would, and refuses the rest in one line before any work.
START_TEST(test_load_reads_only_what_numpy_would) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck");
    const char *norm = path_join("%s/norm.weight.npy", ck);
    float ones[16];
    for (int i = 0; i < 16; i++) {
        ones[i] = 1.0f;
    }
    // A header longer than 4095 bytes is valid (numpy writes up to 65535 in version 1.0):
    // it was "cut short in its header".
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", 5000, ones,
              16);
    LessonCall call = call_small((const char *const[]){"--load", ck, NULL});
    ck_assert_msg(call.status == 0 && call.reached_work, "exit %d: %s", call.status, call.err);
    // A shape past an int: (4294967716, 16) was read as (420, 16), which it wraps to.
    const char *embed = path_join("%s/embed_tokens.weight.npy", ck);
    float *table = arena_alloc(420 * 16, sizeof(float));
    write_npy(embed, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967716, 16), }",
              118, table, 420 * 16);
    assert_load_problem(ck, "embed_tokens.weight.npy has shape (4294967716, 16), this model's "
                            "is (420, 16)");
    write_npy(embed, "{'descr': '<f4', 'fortran_order': False, 'shape': (420, 16), }", 118,
              table, 420 * 16);
    // NaN and Inf: they loaded without a word and trained to "loss nan".
    ones[3] = NAN;
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", 118, ones, 16);
    assert_load_problem(ck, "norm.weight.npy holds NaN at flat index 3; a checkpoint's weights "
                            "must be finite: save one from a run whose loss stayed finite");
    ones[3] = 1;
    ones[15] = -INFINITY;
    write_npy(norm, "{'descr': '<f4', 'fortran_order': False, 'shape': (16,), }", 118, ones, 16);
    assert_load_problem(ck, "norm.weight.npy holds Inf at flat index 15; a checkpoint's weights "
                            "must be finite: save one from a run whose loss stayed finite");
    // A directory where a .npy should be: it said "is not a .npy file (version 1.0)".
    ck_assert_int_eq(unlink(norm), 0);
    ck_assert_int_eq(mkdir(norm, 0777), 0);
    assert_load_problem(ck, "norm.weight.npy is a directory, not a .npy file");
    // A FIFO: opened before it was checked, the run waited for a writer for ever.
    ck_assert_int_eq(rmdir(norm), 0);
    ck_assert_int_eq(mkfifo(norm, 0666), 0);
    assert_load_problem(ck, "norm.weight.npy is not a regular file");
    // And where the tokenizer should be.
    const char *tok = path_join("%s/tokenizer.txt", ck);
    ck_assert_int_eq(unlink(tok), 0);
    ck_assert_int_eq(mkfifo(tok, 0666), 0);
    assert_load_problem(ck, "tokenizer.txt is not a regular file");
    remove_tree(s);
}
END_TEST

// A whole file's bytes (an arena buffer of *length bytes).
static unsigned char *read_bytes(const char *path, size_t *length) {
    struct stat info;
    ck_assert_msg(stat(path, &info) == 0, "cannot read %s", path);
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot read %s", path);
    unsigned char *bytes = arena_alloc((size_t)info.st_size + 1, 1);
    *length = fread(bytes, 1, (size_t)info.st_size + 1, f);
    fclose(f);
    return bytes;
}

// With --load, --dump writes the parameters the run used, the loaded ones: it wrote the
// drawn ones.
START_TEST(test_dump_under_load_writes_the_loaded_parameters) {
    const char *s = make_temp_dir();
    const char *ck = small_checkpoint(s, "ck"), *d = path_join("%s/d", s);
    const char *drawn = path_join("%s/drawn", s);
    RunResult r = run_program(lesson_binary(LESSON), (const char *const[]){
        SMALL, "--steps", "0", "--dump", drawn, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    r = run_program(lesson_binary(LESSON), (const char *const[]){
        SMALL, "--steps", "0", "--load", ck, "--dump", d, NULL});
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *names[3] = {"embed_tokens.weight", "layers.0.self_attn.q_proj.weight",
                            "norm.weight"};
    for (int i = 0; i < 3; i++) {
        size_t saved_length, dumped_length;
        const unsigned char *saved = read_bytes(path_join("%s/%s.npy", ck, names[i]),
                                                &saved_length);
        const unsigned char *dumped = read_bytes(path_join("%s/%s.npy", d, names[i]),
                                                 &dumped_length);
        ck_assert_msg(saved_length == dumped_length &&
                      memcmp(saved, dumped, saved_length) == 0, "--dump's %s is not the one "
                      "--load read", names[i]);
        size_t drawn_length;   // and the test can fail: training changed them
        const unsigned char *first = read_bytes(path_join("%s/%s.npy", drawn, names[i]),
                                                &drawn_length);
        ck_assert_msg(drawn_length == saved_length && memcmp(first, saved, saved_length) != 0,
                      "%s: the checkpoint holds the drawn weights", names[i]);
    }
    remove_tree(s);
}
END_TEST

// What a sandbox's outputs are: ck's and dd's files (sorted, each with its bytes' hash) and
// m.svg's hash.
static const char *outputs17(const char *sandbox) {
    const char *text = "";
    const char *dirs[2] = {"ck", "dd"};
    for (int k = 0; k < 2; k++) {
        struct dirent **names;
        int n = scandir(path_join("%s/%s", sandbox, dirs[k]), &names, NULL, alphasort);
        for (int i = 0; i < n; i++) {
            const char *path = path_join("%s/%s/%s", sandbox, dirs[k], names[i]->d_name);
            struct stat info;
            uint64_t hash = 0;
            if (stat(path, &info) == 0 && S_ISREG(info.st_mode)) {
                size_t length;
                const unsigned char *bytes = read_bytes(path, &length);
                hash = fnv1a(FNV1A_START, bytes, length);
            }
            text = path_join("%s%s/%s %016llx\n", text, dirs[k], names[i]->d_name,
                             (unsigned long long)hash);
            free(names[i]);
        }
        free(names);
        text = path_join("%s(%d in %s)\n", text, n, dirs[k]);
    }
    const char *svg = path_join("%s/m.svg", sandbox);
    size_t length = 0;
    const unsigned char *bytes = access(svg, F_OK) == 0 ? read_bytes(svg, &length) : NULL;
    return path_join("%sm.svg %016llx\n", text,
                     (unsigned long long)(bytes != NULL ? fnv1a(FNV1A_START, bytes, length) : 0));
}

// --save, --svg and --dump are one transaction: a rename that fails (EIO, through
// tests/rename_fault.so) on any of their files leaves all three as they were. --save used
// to be written on its own before --svg (a checkpoint kept when --svg then failed), and
// the fault hits its last file, tokenizer.txt, after its .npy files were moved.
START_TEST(test_save_svg_and_dump_roll_back_together) {
    if (access(BUILD_DIR "/tests/rename_fault.so", R_OK) != 0) {
        skip_test("no " BUILD_DIR "/tests/rename_fault.so (make builds it for test_outputs)");
    }
    char *cwd = getcwd(NULL, 0);   // the lesson runs in the sandbox: the library's whole path
    const char *library = BUILD_DIR[0] == '/' ? BUILD_DIR "/tests/rename_fault.so"
                          : path_join("%s/%s/tests/rename_fault.so", cwd, BUILD_DIR);
    free(cwd);
    const char *sandbox = work_dir();
    const char *args[] = {SMALL, "--steps", "2", "--save", "ck", "--svg", "m.svg", "--dump",
                          "dd", "--seed", "0", NULL};
    RunResult r = run_program_with(sandbox, 60, lesson_binary(LESSON), args);
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    const char *before = outputs17(sandbox);
    args[sizeof args / sizeof args[0] - 2] = "1";   // --seed 1: other outputs
    const char *fails[][2] = {
        {"ck/tokenizer.txt", "error: --save: cannot write 'ck/tokenizer.txt': "},
        {"ck/layers.0.mlp.up_proj.weight.npy",
         "error: --save: cannot write 'ck/layers.0.mlp.up_proj.weight.npy': "},
        {"m.svg", "error: --svg: cannot write 'm.svg': "},
        {"dd/logits.npy", "error: --dump: cannot write 'dd/logits.npy': "},
    };
    const char *asan = getenv("ASAN_OPTIONS");
    const char *asan_before = asan != NULL ? path_join("%s", asan) : NULL;
    setenv("ASAN_OPTIONS", path_join("%s%sverify_asan_link_order=0", asan != NULL ? asan : "",
                                     asan != NULL && asan[0] != '\0' ? ":" : ""), 1);
    for (int i = 0; i < 4; i++) {
        setenv("LD_PRELOAD", library, 1);
        setenv("ATTN_TEST_RENAME_FAILS", fails[i][0], 1);
        r = run_program_with(sandbox, 60, lesson_binary(LESSON), args);
        unsetenv("LD_PRELOAD");
        unsetenv("ATTN_TEST_RENAME_FAILS");
        ck_assert_msg(r.status == 1, "%s: exit %d: %s", fails[i][0], r.status, r.err);
        ck_assert_str_eq(r.err, path_join("%sInput/output error\n", fails[i][1]));
        ck_assert_str_eq(outputs17(sandbox), before);
    }
    if (asan_before != NULL) {
        setenv("ASAN_OPTIONS", asan_before, 1);
    } else {
        unsetenv("ASAN_OPTIONS");
    }
    r = run_program_with(sandbox, 60, lesson_binary(LESSON), args);   // without the fault
    ck_assert_msg(r.status == 0, "exit %d: %s", r.status, r.err);
    ck_assert_msg(strcmp(outputs17(sandbox), before) != 0, "--seed 1 wrote the same outputs");
    remove_tree(sandbox);
}
END_TEST

static const BadFlags BAD[] = {
    {{"--layers", "9", NULL}, "--layers expects a whole number from 1 to 8"},
    {{"--heads", "3", NULL}, "--heads 3 does not divide --dim 64"},
    {{"--kv-heads", "3", NULL}, "--kv-heads 3 does not divide --heads 4"},
    {{"--dim", "12", "--heads", "4", NULL}, "head_dim 3 is odd"},
    {{"--seq", "3", NULL}, "--seq 3"},
    {{"--tokenizer", "words", NULL}, "--tokenizer expects one of chars, bpe"},
    {{"--merges", "5000", NULL}, "--merges expects a whole number from 0 to 4096"},
    {{"--top-p", "0", NULL}, "--top-p 0"},
    {{"--top-p", "1.5", NULL}, "--top-p"},
    {{"--temperature", "-1", NULL}, "--temperature"},
    {{"--prompt", NULL}, "--prompt expects a text after it"},
    {{"--prompt=", NULL}, "--prompt expects a text after the '='"},
    {{"--sentence", "--seed", "1", NULL}, "--sentence expects a text after it"},
    {{"--prompt", "\xE2\x84\xA6hm", NULL}, "is not one of the text's characters"},
    {{"--prompt", "a\xFF", NULL}, "is not UTF-8"},
    {{"--text", "/nonexistent-file", NULL}, "--text /nonexistent-file"},
    // An output's path is checked after the budget (common/lesson/run.c): with a step or
    // two, so that the scalar kernels (make valgrind) admit the run and reach the check.
    {{"--load", "/nonexistent-dir", "--steps", "2", NULL}, "--load"},
    {{"--svg", "/nonexistent-dir/maps.svg", "--steps", "2", NULL}, "--svg"},
    {{"--dim", "512", "--steps", "100000", NULL}, "ATTN_MAX_SECONDS="},
    {{"--dim", "1024", "--layers", "8", "--hidden", "8192", NULL}, "ATTN_MAX_MIB="},
};

START_TEST(test_bad_flags) {
    check_bad_flags(LESSON, "lesson-17", BAD, (int)(sizeof BAD / sizeof BAD[0]));
}
END_TEST

// --bench on a tiny model: its two cases, the larger one twice the width and the window
// with 4 layers, each ending in one line of the format tools/bench_pytorch_language.py reads.
START_TEST(test_bench_lines) {
    const char *args[] = {"--bench", "--layers", "1", "--dim", "16", "--heads", "2",
                          "--kv-heads", "1", "--seq", "8", "--batch", "2", NULL};
    RunResult r = run_program(lesson_binary(LESSON), args);
    ck_assert_msg(r.status == 0, "--bench exited %d: %s", r.status, r.err);
    const char *want[2] = {"bench tokenizer=chars vocab=420 layers=1 dim=16 seq=8 batch=2 "
                           "ms_per_step=",
                           "bench tokenizer=chars vocab=420 layers=4 dim=32 seq=16 batch=2 "
                           "ms_per_step="};
    const char *cursor = r.out;
    int found = 0;
    for (const char *line = next_line(&cursor); line != NULL; line = next_line(&cursor)) {
        if (strncmp(line, "bench ", 6) != 0) {
            continue;
        }
        ck_assert_int_lt(found, 2);
        ck_assert_msg(strncmp(line, want[found], strlen(want[found])) == 0, "%s", line);
        double ms = 0, tokens = 0, products = 0, fma = 0, mul_add = 0;
        ck_assert_msg(sscanf(line + strlen(want[found]), "%lf tokens_per_s=%lf products_ms=%lf "
                             "fma_peak=%lf mul_add_peak=%lf", &ms, &tokens, &products, &fma,
                             &mul_add) == 5 && ms > 0 && tokens > 0 && fma > 0 && mul_add > 0,
                      "%s", line);
        // the products are part of the step: their best round is no longer than its best
        ck_assert_msg(products > 0 && products <= ms * 1.001, "%s", line);
        found += 1;
    }
    ck_assert_int_eq(found, 2);
}
END_TEST

// --- what a run may take (common/lesson/budget.h; harness.h: add_budget_tests) -----------

// Refused by the budget before anything runs, by memory (a refusal by time would name
// other figures where other kernels run), in one line that names the flags that made it big
// (called with --dot, which copies step 1's activations to draw them: 2.9 and 1.1 GiB
// without it).
static const BudgetRefusal REFUSED[] = {
    {{"--batch", "1024", NULL},
     "lesson-17: --batch 1024 would hold about 5.0 GiB at once, more than the 512 MiB allowed; "
     "choose smaller sizes, or allow it with ATTN_MAX_MIB=5200", NULL},
    {{"--batch", "64", "--seq", "512", NULL},
     "lesson-17: --batch 64 --seq 512 would hold about 2.0 GiB at once, more than the 512 MiB "
     "allowed; choose smaller sizes, or allow it with ATTN_MAX_MIB=2100", NULL},
};

// Sizes where what grows with the flags is most of what a run holds: what it holds is its
// prediction (make test runs the first, make test-long all). The first writes 4 samples of
// --new 20000 tokens: printed as they are decoded (show.c's print_wrapped), each let go
// before the next, they add 80 KB; a sample held as text, 4 of them at once, added 2 MB,
// which the prediction missed (test_fuzz_cli's --new 65536 found it).
static const SizedRun SIZED[] = {
    {{"--new", "20000", "--steps", "1", "--layers", "1", "--dim", "8", "--heads", "2",
      "--kv-heads", "1", "--seq", "16", "--batch", "256", "--eval-batches", "1", NULL}},
    {{"--layers", "2", "--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "16",
      "--eval-batches", "1", "--new", "8", "--steps", "2", "--batch", "256", "--dump", "",
      NULL}},
    {{"--layers", "1", "--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "32",
      "--eval-batches", "1", "--new", "8", "--steps", "2", "--batch", "128", "--dot", "",
      NULL}},
    {{"--tokenizer", "bpe", "--merges", "1024", "--steps", "1", "--batch", "4", "--layers",
      "1", "--dim", "8", "--heads", "2", "--kv-heads", "1", "--seq", "16", "--new", "8", NULL}},
    {{"--dim", "256", "--heads", "8", "--kv-heads", "4", "--layers", "1", "--seq", "16",
      "--batch", "4", "--steps", "2", "--eval-batches", "1", "--new", "8", NULL}},
};

// The page's runs, admitted where the CPU has the vector kernels (their price is the
// kernels'): the defaults, byte pairs without training, and the bench.
static const AdmittedRun ADMITTED[] = {
    {{NULL}, true},
    {{"--tokenizer", "bpe", "--merges", "1536", "--steps", "0", NULL}, true},
    {{"--bench", NULL}, true},
};

static const LessonBudget BUDGET = {
    LESSON, lesson_main, REFUSED, sizeof REFUSED / sizeof REFUSED[0], SIZED,
    sizeof SIZED / sizeof SIZED[0], ADMITTED, sizeof ADMITTED / sizeof ADMITTED[0],
};

static Suite *lesson17_suite(void) {
    Suite *suite = suite_create("lesson17");
    TCase *recorded = new_tcase("pytorch");
    tcase_set_timeout(recorded, 120);
    tcase_add_loop_test(recorded, test_matches_pytorch, 0, recorded_case_count(DATA));
    suite_add_tcase(suite, recorded);
    TCase *pieces = new_tcase("pieces");
    tcase_add_test(pieces, test_utf8_by_hand);
    tcase_add_test(pieces, test_utf8_replacement_matches_python);
    tcase_add_test(pieces, test_byte_pairs_by_hand);
    tcase_add_test(pieces, test_byte_pairs_match_python);
    tcase_add_test(pieces, test_round_trip_of_random_text);
    tcase_add_test(pieces, test_top_p_by_hand);
    tcase_add_test(pieces, test_multinomial_matches_torch);
    tcase_add_test(pieces, test_generation_through_the_cache);
    tcase_add_test(pieces, test_measures_by_hand);
    tcase_add_test(pieces, test_log_softmax_kernels_match_their_scalar_twin);
    tcase_add_test(pieces, test_attention_kernels_match_their_scalar_twin);
    suite_add_tcase(suite, pieces);
    TCase *runs = new_tcase("runs");
    tcase_set_timeout(runs, 120);
    tcase_add_test(runs, test_a_saved_model_loads);
    tcase_add_test(runs, test_bad_texts_are_refused);
    tcase_add_test(runs, test_bad_flags);
    tcase_add_test(runs, test_bench_lines);
    suite_add_tcase(suite, runs);
    TCase *outputs = new_tcase("outputs");
    tcase_set_timeout(outputs, 60);
    tcase_add_test(outputs, test_shades_of_weights_that_are_not_numbers);
    tcase_add_test(outputs, test_two_outputs_on_one_path_are_refused);
    tcase_add_test(outputs, test_bad_output_paths_are_refused_up_front);
    tcase_add_test(outputs, test_load_reads_only_what_numpy_would);
    tcase_add_test(outputs, test_dump_under_load_writes_the_loaded_parameters);
    tcase_add_test(outputs, test_save_svg_and_dump_roll_back_together);
    suite_add_tcase(suite, outputs);
    add_budget_tests(suite, &BUDGET);
    return suite;
}

int main(void) { return run_suite(lesson17_suite()); }
