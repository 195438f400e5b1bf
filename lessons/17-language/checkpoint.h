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
// every weight finite, or the run ends with one line and exit 2. --save's directory and
// --load's are declared (lesson/outputs.h), so that lesson_start checks --save's with the
// run's other outputs, and that none of them writes over --load's.
void checkpoint_check(const Lesson *lesson, Settings *settings);
// <dir>/tokenizer.txt's tokenizer (checked already).
Tokenizer checkpoint_tokenizer(const Lesson *lesson, const char *dir);
// Overwrite every parameter with <dir>/<name>.npy (checked already).
void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir);
// Keep every parameter as <dir>/<name>.npy and the tokenizer as <dir>/tokenizer.txt, to be
// written with the run's other outputs, all or nothing (lesson/outputs.h: keep_output).
void checkpoint_save(const AdamW *parameters, const Tokenizer *tok, const Config *config,
                     const char *dir);

#endif
