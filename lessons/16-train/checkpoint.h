// checkpoint.h - --save and --load: the model's state_dict as .npy files (checkpoint.c).
#ifndef CHECKPOINT16_H
#define CHECKPOINT16_H

#include "adamw.h"
#include "model.h"

// Before any work: --load's directory must hold every parameter of this config as a
// float32 .npy of its shape, every weight finite, or the run ends with one line and exit 2.
// --save's directory and --load's are declared (lesson/outputs.h), so that lesson_start
// checks --save's with the run's other outputs, and that none of them writes over --load's.
void checkpoint_check(const Lesson *lesson, const Settings *settings);
// Overwrite every parameter with <dir>/<name>.npy (checked already).
void checkpoint_load(const AdamW *parameters, const Config *config, const char *dir);
// Keep every parameter as <dir>/<name>.npy, to be written with the run's other outputs, all
// or nothing (lesson/outputs.h: keep_output).
void checkpoint_save(const AdamW *parameters, const Config *config, const char *dir);


#endif
