// checkpoint.h - --save and --load: the model's state_dict as .npy files (checkpoint.c).
#ifndef CHECKPOINT16_H
#define CHECKPOINT16_H

#include "adamw.h"
#include "model.h"

// Before any work: --load's directory must hold every parameter of this config as a
// float32 .npy of its shape, and --save's must be a directory that can be written or made.
// Either problem ends the run with one line and exit 2.
void checkpoint_check(const Lesson *lesson, const Settings *settings);
// Overwrite every parameter with <dir>/<name>.npy (checked already).
void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir);
// Write every parameter as <dir>/<name>.npy, all or nothing. False (errno set) on failure.
bool checkpoint_save(const AdamW *parameters, const Config *config, const char *dir);

// The directory a path is in: "a/b/c" -> "a/b", "c" -> ".", "/c" -> "/" (an arena string).
const char *parent_of(const char *path);

#endif
