// A planted mistake for tests/exercises.sh: no bias correction: right at step 1 only.
// expect: both bias corrections
#include <math.h>

#include "lessons/16-train/adamw.h"

void adamw_step(AdamW *opt, double lr) {
    opt->step += 1;
    double correction1 = 1.0 - pow(opt->beta1, (double)opt->step);
    double correction2 = 1.0 - pow(opt->beta2, (double)opt->step);
    for (int i = 0; i < opt->n_params; i++) {
        Param *p = &opt->params[i];
        for (long j = 0; j < p->numel; j++) {
            float g = p->grad[j];
            (void)correction1;
            (void)correction2;
            p->value[j] *= (float)(1.0 - lr * opt->weight_decay);
            p->exp_avg[j] = (float)opt->beta1 * p->exp_avg[j] + (float)(1.0 - opt->beta1) * g;
            p->exp_avg_sq[j] = (float)opt->beta2 * p->exp_avg_sq[j] +
                               (float)(1.0 - opt->beta2) * g * g;
            float denom = sqrtf(p->exp_avg_sq[j]) + (float)opt->eps;
            p->value[j] -= (float)lr * p->exp_avg[j] / denom;
        }
    }
}
