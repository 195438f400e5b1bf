// checkpoint.h - --save and --load: the model's state_dict as .npy files, and the tokenizer
// beside them as tokenizer.txt (checkpoint.c).
#ifndef CHECKPOINT17_H
#define CHECKPOINT17_H

#include "adamw.h"
#include "language.h"
#include "model.h"
#include "tokenizer.h"

// Before any work: --load's directory must hold a tokenizer.txt and every parameter of this
// config (its vocab_size the tokenizer's, which this sets) as a float32 .npy of its shape,
// and --save's must be a directory that can be written or made. Either problem ends the run
// with one line and exit 2.
void checkpoint_check(const Lesson *lesson, Settings *settings);
// <dir>/tokenizer.txt's tokenizer (checked already).
Tokenizer checkpoint_tokenizer(const Lesson *lesson, const char *dir);
// Overwrite every parameter with <dir>/<name>.npy (checked already).
void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir);
// Write every parameter as <dir>/<name>.npy and the tokenizer as <dir>/tokenizer.txt, all or
// nothing. False (errno set) on failure.
bool checkpoint_save(const AdamW *parameters, const Tokenizer *tok, const Config *config,
                     const char *dir);

// The directory a path is in: "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/" (an arena string).
const char *parent_of(const char *path);

#endif
