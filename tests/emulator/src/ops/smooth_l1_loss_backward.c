/* aclnnSmoothL1LossBackward in the emulator (docs/operators/SmoothL1LossBackward.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every dtype listed; beta >= 0 false (negative
 * or NaN; -0.0 and +inf pass) is 161002. Mixed input dtypes are accepted and cast to P =
 * promote(promote(gradOut, self), target); out may be any listed dtype; out is B.
 *
 * The kernel (the bfloat16-capable TBE revision), in float32 on B after the casts to P:
 * x = self - target; t = x / (beta + 1e-6f); x0 = x == x ? x : 0;
 * r = ((x0 <= -beta ? -1 : 0) + (x0 >= beta ? 1 : 0)) + (|x0| < beta ? t : 0);
 * res = r * gradOut; for mean res *= cof, cof = 1.0f / d0 / d1 / ... over self's dims as passed
 * (numel(self), not numel(B)); rounded to P, then to out's dtype. beta arrives as a C float.
 *
 * @fault smooth_l1_no_eps EMU_FAULT_SMOOTH_L1_NO_EPS the quadratic branch divides by beta, not beta + 1e-6
 */
#include <math.h>
#include "emu.h"

enum { GRAD, SELF, TARGET };
enum { REDUCTION };  /* i64 slots */
enum { BETA, COF };  /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    const float beta = ex->f32[BETA];
    float d = x[SELF] - x[TARGET];
#ifdef EMU_FAULT_SMOOTH_L1_NO_EPS
    float t = d / beta;
#else
    float t = d / (beta + 1e-6f);
#endif
    float d0 = d == d ? d : 0.0f;
    float s1 = d0 <= -beta ? -1.0f : 0.0f, s2 = d0 >= beta ? 1.0f : 0.0f, s3 = fabsf(d0) < beta ? t : 0.0f;
    float r = (s1 + s2) + s3;
    float res = r * x[GRAD];
    return ex->i64[REDUCTION] == 1 ? res * ex->f32[COF] : res;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    ex->f32[COF] = 1.0f;
    for (int64_t i = 0; i < in[SELF]->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)in[SELF]->dims[i];
}

static const emu_entry OP = {
    .op = {"SmoothL1LossBackward", emu_entry_run}, .params = "tttifo", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 3, .rank = EMU_INPUTS, .nonneg = 1u << BETA,
    .from = EMU_INPUTS, .out_shape = EMU_SHAPE_B,
};
EMU_ENTRY(SmoothL1LossBackward, OP,
          (const aclTensor *gradOut, const aclTensor *self, const aclTensor *target, int64_t reduction, float beta,
           aclTensor *gradInput),
          gradOut, self, target, reduction, beta, gradInput)
