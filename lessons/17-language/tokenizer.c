// tokenizer.c - text to token ids and back: UTF-8, characters, byte pairs (tokenizer.h).
//
// Text on disk is bytes. UTF-8 spends 1 byte on an ASCII character, 2 on most accented
// letters, 3 on a Chinese character (训 is E8 AE AD), 4 on an emoji. A tokenizer of
// characters reads the bytes back into code points (utf8_decode) and gives each distinct
// one an id; one of byte pairs starts from the bytes themselves and learns which pieces
// come often enough to deserve an id of their own (bpe_train). The page's script does the
// same in Python: text.encode("utf-8"), bytes.decode("utf-8"), and minbpe's loop of
// get_stats, max and merge.
#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"

// --- UTF-8 ------------------------------------------------------------------------------------

// A well-formed sequence (Unicode's table 3-7): a lead byte, then 0 to 3 continuation bytes
// 80..BF, the second byte's range narrowed after E0, ED, F0 and F4 so that no code point
// has two spellings (overlong forms), none is a surrogate (D800..DFFF), none passes
// U+10FFFF. C0, C1 and F5..FF never occur.
static int sequence_length(unsigned char lead, unsigned char *low, unsigned char *high) {
    *low = 0x80;
    *high = 0xBF;
    if (lead < 0x80) {
        return 1;
    }
    if (lead >= 0xC2 && lead <= 0xDF) {
        return 2;
    }
    if (lead >= 0xE0 && lead <= 0xEF) {
        *low = lead == 0xE0 ? 0xA0 : 0x80;
        *high = lead == 0xED ? 0x9F : 0xBF;
        return 3;
    }
    if (lead >= 0xF0 && lead <= 0xF4) {
        *low = lead == 0xF0 ? 0x90 : 0x80;
        *high = lead == 0xF4 ? 0x8F : 0xBF;
        return 4;
    }
    return 0;   // not a lead byte
}

// How many bytes from s[0] are a well-formed prefix (the lead and the continuation bytes that
// fit); *whole is true when they are a whole character.
static int valid_prefix(bool *whole, const unsigned char *s, long n) {
    unsigned char low, high;
    int length = sequence_length(s[0], &low, &high);
    *whole = false;
    if (length == 0) {
        return 0;
    }
    int k = 1;
    while (k < length && k < n && s[k] >= low && s[k] <= high) {
        low = 0x80;   // only the second byte has a narrowed range
        high = 0xBF;
        k += 1;
    }
    *whole = k == length;
    return k;
}

int utf8_prefix(bool *whole, const unsigned char *s, long n) {
    return valid_prefix(whole, s, n);
}

int utf8_sequence(const unsigned char *s, long n) {
    bool whole;
    int k = valid_prefix(&whole, s, n);
    return whole ? k : 0;
}

const char *utf8_problem(long *at, const unsigned char *s, long n) {
    for (long i = 0; i < n;) {
        bool whole;
        int k = valid_prefix(&whole, s + i, n - i);
        if (!whole) {
            *at = i;
            return k == 0 ? "cannot start a character"
                   : i + k == n ? "starts a character the file cuts off"
                                : "starts a character the next byte breaks";
        }
        i += k;
    }
    return NULL;
}

long utf8_decode(int *code_points, const unsigned char *s, long n) {
    long count = 0;
    for (long i = 0; i < n;) {
        int k = utf8_sequence(s + i, n - i);
        // the lead byte keeps 7, 5, 4 or 3 bits; each continuation byte 6
        int code = k == 1 ? s[i] : s[i] & (0xFF >> (k + 1));
        for (int j = 1; j < k; j++) {
            code = (code << 6) | (s[i + j] & 0x3F);
        }
        code_points[count++] = code;
        i += k;
    }
    return count;
}

int utf8_encode(unsigned char *out, int c) {
    if (c < 0x80) {
        out[0] = (unsigned char)c;
        return 1;
    }
    if (c < 0x800) {
        out[0] = (unsigned char)(0xC0 | c >> 6);
        out[1] = (unsigned char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c < 0x10000) {
        out[0] = (unsigned char)(0xE0 | c >> 12);
        out[1] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
        out[2] = (unsigned char)(0x80 | (c & 0x3F));
        return 3;
    }
    out[0] = (unsigned char)(0xF0 | c >> 18);
    out[1] = (unsigned char)(0x80 | (c >> 12 & 0x3F));
    out[2] = (unsigned char)(0x80 | (c >> 6 & 0x3F));
    out[3] = (unsigned char)(0x80 | (c & 0x3F));
    return 4;
}

// One piece at a time: a whole character is copied; an ill-formed piece, as long as it is a
// prefix of some character (at least its first byte), is replaced. Python's decoder does
// the same (Unicode's "substitution of maximal subparts").
char *utf8_replaced(long *length, const unsigned char *s, long n) {
    char *out = arena_alloc((size_t)n * 3 + 1, 1);   // a byte becomes at most U+FFFD
    long used = 0;
    for (long i = 0; i < n;) {
        bool whole;
        int k = valid_prefix(&whole, s + i, n - i);
        if (whole) {
            memcpy(out + used, s + i, (size_t)k);
            used += k;
        } else {
            memcpy(out + used, "\xEF\xBF\xBD", 3);   // U+FFFD, the replacement character
            used += 3;
        }
        i += k > 0 ? k : 1;
    }
    *length = used;
    return out;
}

int columns_of(int c) {
    bool wide = (c >= 0x1100 && c <= 0x115F) || (c >= 0x2E80 && c <= 0xA4CF) ||
                (c >= 0xAC00 && c <= 0xD7A3) || (c >= 0xF900 && c <= 0xFAFF) ||
                (c >= 0xFE30 && c <= 0xFE4F) || (c >= 0xFF00 && c <= 0xFF60) ||
                (c >= 0xFFE0 && c <= 0xFFE6);
    return wide ? 2 : 1;
}

const char *visible(const unsigned char *s, long n) {
    char *out = arena_alloc((size_t)n * 4 + 1, 1);   // a byte becomes at most \xNN
    long used = 0;
    for (long i = 0; i < n;) {
        bool whole;
        int k = valid_prefix(&whole, s + i, n - i);
        if (!whole) {   // each byte of the ill-formed piece as \xNN (at least the first)
            for (int j = 0; j < (k > 0 ? k : 1); j++) {
                used += sprintf(out + used, "\\x%02x", s[i + j]);
            }
        } else if (k > 1) {
            memcpy(out + used, s + i, (size_t)k);
            used += k;
        } else if (s[i] == ' ' || s[i] == '\n' || s[i] == '\t') {
            const char *shown = s[i] == ' ' ? "\xC2\xB7" : s[i] == '\n' ? "\xE2\x86\xB5"
                                                                         : "\xE2\x86\x92";
            used += sprintf(out + used, "%s", shown);   // · ↵ →
        } else if (s[i] < 0x20 || s[i] == 0x7F) {
            used += sprintf(out + used, "\\x%02x", s[i]);
        } else {
            out[used++] = (char)s[i];
        }
        i += k > 0 ? k : 1;
    }
    out[used] = '\0';
    return out;
}

const char *token_visible(const Tokenizer *tok, int id) {
    return visible(tok->bytes[id], tok->length[id]);
}

// --- characters ---------------------------------------------------------------------------------

// sorted(set(text)) in two passes. set(): one flag per code point Unicode has (0x110000 of
// them, a bit each: 136 KiB), raised for every character of the text; sorted(): the raised
// flags read in order. (Sorting the text's n code points with qsort, then keeping each once,
// gives the same vocabulary in 17 times the time on the default text: 17 ms against 1.)
// Each token's bytes are its character's UTF-8.
Tokenizer chars_tokenizer(const int *code_points, long n) {
    enum { N_CODE_POINTS = 0x110000 };
    unsigned char *seen = arena_alloc(N_CODE_POINTS / 8, 1);   // (0x110000 / 8,), zeros
    int distinct = 0;
    for (long i = 0; i < n; i++) {
        int c = code_points[i], bit = 1 << (c % 8);
        distinct += (seen[c / 8] & bit) == 0;   // counted the first time it is seen
        seen[c / 8] |= (unsigned char)bit;
    }
    Tokenizer tok = {.kind = CHARS, .vocab_size = distinct,
                     .code_points = arena_alloc((size_t)distinct, sizeof(int))};
    for (int c = 0, k = 0; c < N_CODE_POINTS; c++) {
        if (seen[c / 8] & (1 << (c % 8))) {
            tok.code_points[k++] = c;
        }
    }
    tok.bytes = arena_alloc((size_t)distinct, sizeof(unsigned char *));
    tok.length = arena_alloc((size_t)distinct, sizeof(int));
    for (int i = 0; i < distinct; i++) {
        tok.bytes[i] = arena_alloc(4, 1);
        tok.length[i] = utf8_encode(tok.bytes[i], tok.code_points[i]);
    }
    return tok;
}

// stoi[c]: the id of code point c, by binary search in the sorted vocabulary; -1 if absent.
static int char_id(const Tokenizer *tok, int c) {
    int lo = 0, hi = tok->vocab_size - 1;
    while (lo <= hi) {
        int mid = (lo + hi) / 2;
        if (tok->code_points[mid] == c) {
            return mid;
        }
        lo = tok->code_points[mid] < c ? mid + 1 : lo;
        hi = tok->code_points[mid] > c ? mid - 1 : hi;
    }
    return -1;
}

// --- byte pairs ---------------------------------------------------------------------------------

long bpe_merge(int *ids, long n, int a, int b, int token) {
    long kept = 0;
    for (long i = 0; i < n; i++) {
        if (i + 1 < n && ids[i] == a && ids[i + 1] == b) {
            ids[kept++] = token;
            i += 1;   // the pair's second token is used up
        } else {
            ids[kept++] = ids[i];
        }
    }
    return kept;
}

void bpe_bytes(Tokenizer *tok) {
    int NV = tok->vocab_size;
    tok->bytes = arena_alloc((size_t)NV, sizeof(unsigned char *));
    tok->length = arena_alloc((size_t)NV, sizeof(int));
    for (int i = 0; i < 256; i++) {
        tok->bytes[i] = arena_alloc(1, 1);
        tok->bytes[i][0] = (unsigned char)i;
        tok->length[i] = 1;
    }
    for (int m = 0; m < tok->n_merges; m++) {
        int a = tok->merges[m][0], b = tok->merges[m][1], id = 256 + m;
        tok->length[id] = tok->length[a] + tok->length[b];
        tok->bytes[id] = arena_alloc((size_t)tok->length[id], 1);
        memcpy(tok->bytes[id], tok->bytes[a], (size_t)tok->length[a]);
        memcpy(tok->bytes[id] + tok->length[a], tok->bytes[b], (size_t)tok->length[b]);
    }
}

// Each merge counts every pair of neighbours (a, b) in the current ids, as minbpe's
// get_stats fills a Python dict: count[a][b] += 1, and the pairs listed in the order they
// first appear (a dict keeps its keys in insertion order). The winner is the largest count,
// the first listed on a tie (what max(stats, key=stats.get) returns). Then every occurrence
// becomes the new token (bpe_merge) and the next merge counts again, from scratch: n pairs a
// merge, merges * n in all. (Real tokenizers update the counts where a merge changed the
// text instead, and cut the text into words first, so that no token spans two words.)
Tokenizer bpe_train(int *ids, long *n_ids, const unsigned char *text, long n, int merges) {
    long V = 256 + merges;                                   // the ids a merge can produce
    int *count = arena_alloc((size_t)(V * V), sizeof(int));  // (V, V) count[a * V + b]
    long *listed = arena_alloc((size_t)n + 1, sizeof(long)); // pairs a * V + b, first seen first
    Tokenizer tok = {.kind = BPE, .merges = arena_alloc((size_t)merges + 1, sizeof(int[2])),
                     .merge_counts = arena_alloc((size_t)merges + 1, sizeof(int))};
    for (long i = 0; i < n; i++) {
        ids[i] = text[i];   // list(text.encode("utf-8")): the bytes are the first tokens
    }
    for (int m = 0; m < merges; m++) {
        long n_listed = 0;
        for (long i = 0; i + 1 < n; i++) {   // get_stats
            long pair = ids[i] * V + ids[i + 1];
            if (count[pair]++ == 0) {
                listed[n_listed++] = pair;
            }
        }
        long best = n_listed > 0 ? listed[0] : 0;
        for (long k = 1; k < n_listed; k++) {   // max(stats, key=stats.get): the first largest
            best = count[listed[k]] > count[best] ? listed[k] : best;
        }
        int best_count = n_listed > 0 ? count[best] : 0;
        for (long k = 0; k < n_listed; k++) {
            count[listed[k]] = 0;   // clean for the next merge
        }
        if (best_count < 2) {
            break;   // no pair comes twice: a merge would not shorten the text
        }
        int a = (int)(best / V), b = (int)(best % V);
        tok.merges[m][0] = a;
        tok.merges[m][1] = b;
        tok.merge_counts[m] = best_count;
        tok.n_merges = m + 1;
        n = bpe_merge(ids, n, a, b, 256 + m);
    }
    tok.vocab_size = 256 + tok.n_merges;
    bpe_bytes(&tok);
    *n_ids = n;
    return tok;
}

// --- encoding and decoding ---------------------------------------------------------------------

// Characters: one id a code point. Byte pairs: the bytes, then every merge in the order it
// was learned, each over the whole text. That gives what training gave the training text,
// and what minbpe's encode gives (which merges the present pair learned first, again and
// again): a merge can only make pairs that contain its new token, which no earlier merge
// names, so once merge m is done no pair of an earlier merge appears again.
long encode(int *ids, int *missing, const Tokenizer *tok, const unsigned char *text, long n) {
    if (tok->kind == CHARS) {
        long count = utf8_decode(ids, text, n);
        for (long i = 0; i < count; i++) {
            int id = char_id(tok, ids[i]);
            if (id < 0) {
                *missing = ids[i];
                return -1;
            }
            ids[i] = id;
        }
        return count;
    }
    for (long i = 0; i < n; i++) {
        ids[i] = text[i];
    }
    for (int m = 0; m < tok->n_merges; m++) {
        n = bpe_merge(ids, n, tok->merges[m][0], tok->merges[m][1], 256 + m);
    }
    return n;
}

long decode(unsigned char *out, const Tokenizer *tok, const int *ids, long n) {
    long used = 0;
    for (long i = 0; i < n; i++) {
        memcpy(out + used, tok->bytes[ids[i]], (size_t)tok->length[ids[i]]);
        used += tok->length[ids[i]];
    }
    return used;
}

long decoded_length(const Tokenizer *tok, const int *ids, long n) {
    long length = 0;
    for (long i = 0; i < n; i++) {
        length += tok->length[ids[i]];
    }
    return length;
}

int longest_token(const Tokenizer *tok) {
    int longest = 1;
    for (int i = 0; i < tok->vocab_size; i++) {
        longest = tok->length[i] > longest ? tok->length[i] : longest;
    }
    return longest;
}
