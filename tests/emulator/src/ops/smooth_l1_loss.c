/* aclnnSmoothL1Loss in the emulator (docs/operators/SmoothL1Loss.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). self's and target's dtypes listed; P =
 * promote(self, target) castable to out's dtype (out's own dtype is not listed); reductions 0..2;
 * beta >= 0 false (negative or NaN) is 161002; out is B for none and not checked otherwise (any
 * shape of one element here: more is outside the contract).
 *
 * The kernel, in float32 on B after the casts to P: d = self - target; |d| < beta selects
 * (d * 0.5f) * d * (1.0f / beta), else |d| - 0.5f * beta; for mean each term times (float)(1.0 / N),
 * N = numel(B); none stores each term rounded to P; otherwise one float32 sum over B rounded to P
 * once; the op API then casts P to out's dtype. Empty inputs: none writes nothing, mean fills NaN,
 * sum 0.
 *
 * @fault smooth_l1_fwd_no_half EMU_FAULT_SMOOTH_L1_FWD_NO_HALF the band term d^2 / beta without the 0.5
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET };
enum { REDUCTION };              /* i64 slots */
enum { BETA, SCALE, INV_BETA };  /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    const float beta = ex->f32[BETA];
    float d = x[SELF] - x[TARGET], a = fabsf(d);
#ifdef EMU_FAULT_SMOOTH_L1_FWD_NO_HALF
    float band = d * d * ex->f32[INV_BETA];
#else
    float band = d * 0.5f * d * ex->f32[INV_BETA];
#endif
    float l = a < beta ? band : a - 0.5f * beta;
    return ex->i64[REDUCTION] == 1 ? l * ex->f32[SCALE] : l;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    (void)in;
    int64_t N = emu_numel_dims(ex->bdims, ex->bndim);
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    ex->f32[INV_BETA] = 1.0f / ex->f32[BETA];
    ex->fill = ex->i64[REDUCTION] != 0 && N == 0; /* the op API's fill kernels */
    ex->fill_value = ex->i64[REDUCTION] == 1 ? NAN : 0.0f;
}

static const emu_entry OP = {
    .op = {"SmoothL1Loss", emu_entry_run}, .params = "ttifo", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS, .promote = 1, .reductions = 3, .rank = EMU_INPUTS, .nonneg = 1u << BETA,
    .from = EMU_INPUTS, .out_shape = EMU_SHAPE_REDUCED_ONE,
};
EMU_ENTRY(SmoothL1Loss, OP,
          (const aclTensor *self, const aclTensor *target, int64_t reduction, float beta, aclTensor *out),
          self, target, reduction, beta, out)
