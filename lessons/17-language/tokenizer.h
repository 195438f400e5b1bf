// tokenizer.h - text to token ids and back: characters, or byte pairs (tokenizer.c).
//
// A model reads numbers, not text. A tokenizer cuts the text into pieces from a fixed
// vocabulary and gives each piece its number (its id); decoding puts the pieces back. Two
// are written out here:
//   characters   every code point of the text is a token; the vocabulary is the text's
//                distinct characters, sorted (nanoGPT's shakespeare_char)
//   byte pairs   byte-level BPE: the 256 byte values are the first tokens, then the most
//                frequent pair of neighbouring tokens in the training text becomes a new
//                token, again and again (--merges times: GPT-2's tokenizer, without its
//                regular expression that first cuts the text into words)
// Both decode every encoded text back to the same bytes.
#ifndef TOKENIZER17_H
#define TOKENIZER17_H

#include <stdbool.h>

#define MAX_MERGES 4096    // --merges at most: a (256 + merges)^2 table of pair counts
#define MAX_VOCAB 65536    // the distinct characters a text may have

typedef enum { CHARS, BPE } TokenizerKind;

typedef struct {
    TokenizerKind kind;
    int vocab_size;                 // NV
    // characters: the code point of each token, ascending (NV of them)
    int *code_points;
    // byte pairs: merge m joined the pair (merges[m][0], merges[m][1]) into token 256 + m
    int n_merges;
    int (*merges)[2];               // (n_merges, 2)
    int *merge_counts;              // (n_merges) how often its pair came when it was merged
    // every token's bytes: token i is bytes[i][0 .. length[i]-1] (characters: UTF-8)
    unsigned char **bytes;          // (NV) each an arena string
    int *length;                    // (NV)
} Tokenizer;

// --- UTF-8 ------------------------------------------------------------------------------------

// NULL if the n bytes are well-formed UTF-8 (as Python's bytes.decode("utf-8") accepts them),
// else what is wrong with the byte at *at, where the first ill-formed character starts.
const char *utf8_problem(long *at, const unsigned char *s, long n);
// The code points of well-formed UTF-8 (at most n of them); returns how many.
long utf8_decode(int *code_points, const unsigned char *s, long n);
// The UTF-8 of one code point into out (1 to 4 bytes); returns how many.
int utf8_encode(unsigned char *out, int code_point);
// The length of the well-formed UTF-8 sequence starting at s[0] (n bytes left), or 0 when it
// is not one: the rule utf8_problem applies at each character.
int utf8_sequence(const unsigned char *s, long n);
// How many bytes from s[0] (n bytes left) are a well-formed prefix of a character (0: s[0]
// starts none); *whole is true when they are all of one. A prefix that is not whole and
// takes all n bytes may be completed by bytes that come after them.
int utf8_prefix(bool *whole, const unsigned char *s, long n);
// Bytes as text, as Python's bytes.decode("utf-8", errors="replace") makes it: each
// ill-formed piece (a maximal subpart, in Unicode's words) becomes one U+FFFD. An arena
// string; *length its bytes.
char *utf8_replaced(long *length, const unsigned char *s, long n);

// --- the two tokenizers -------------------------------------------------------------------------

// Characters: the distinct code points of the whole text, ascending (n code points given,
// each a character: 0 to 0x10FFFF).
Tokenizer chars_tokenizer(const int *code_points, long n);
// Byte pairs trained on `text` (n bytes): up to `merges` merges, each of the most frequent
// pair of neighbouring tokens (the pair seen first in the text, on a tie), stopping early
// when no pair comes twice. ids (n) gets the text's tokens at the end; *n_ids their count.
Tokenizer bpe_train(int *ids, long *n_ids, const unsigned char *text, long n, int merges);
// Every token's bytes from the merges (tok->bytes, tok->length): the 256 single bytes, then
// each merged token the bytes of its pair.
void bpe_bytes(Tokenizer *tok);
// Byte pair training's one merge: every (a, b) in ids (n) becomes `token`, left to right
// (in "a a a", the first two). Returns the new count.
long bpe_merge(int *ids, long n, int a, int b, int token);

// The ids of n bytes of text (at most n of them); returns how many, or -1 when a character
// is not in a character vocabulary (*missing: its code point).
long encode(int *ids, int *missing, const Tokenizer *tok, const unsigned char *text, long n);
// The bytes of n tokens into out (room for the sum of their lengths); returns how many.
long decode(unsigned char *out, const Tokenizer *tok, const int *ids, long n);
// The bytes n tokens decode to: the sum of their lengths (decode's room).
long decoded_length(const Tokenizer *tok, const int *ids, long n);
// The longest token, in bytes.
int longest_token(const Tokenizer *tok);

// Bytes as they print inside a line: UTF-8 characters as they are, a space as '·', a line
// break as '↵', a tab as '→', other control characters and bytes that are not UTF-8 as \xNN
// (Python's decode with errors="backslashreplace", then those replacements). An arena string.
const char *visible(const unsigned char *s, long n);
// Token id's text, visible() (an arena string).
const char *token_visible(const Tokenizer *tok, int id);

// The columns a code point takes on a terminal: 2 for the wide ones of East Asian scripts
// (CJK ideographs and punctuation, Hangul, fullwidth forms), else 1.
int columns_of(int code_point);

#endif
