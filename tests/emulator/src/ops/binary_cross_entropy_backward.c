/* aclnnBinaryCrossEntropyBackward in the emulator (docs/operators/BinaryCrossEntropyBackward.md;
 * the specification is suite/ops/binary_cross_entropy_backward.py: `check`, `reference_terms`).
 *
 * Phase 1: the descriptor (emu.h's generic entry). weightOptional may be NULL (all ones); only
 * out's rank is checked (an input of rank > 8 fails the shape checks); every dtype listed (the
 * weight if given); B is self's shape, and target, the weight and gradOutput must broadcast to it;
 * out is self's shape. The inputs are cast to P, the promotion of the present inputs (it cannot
 * fail after the list check). An empty self skips the shape checks, succeeds with workspace 0 and
 * computes nothing. workspaceSize and executor are not checked by the vendor (a NULL is undefined
 * behaviour); the emulator answers 161001 rather than crash.
 *
 * The kernel (the TBE kernel of the four products), in float32 on self's shape after the casts to
 * P, every input broadcast to self's shape: a = x - t; b = max(x * ((-x) + 1), 1e-12f) (NaN stays
 * NaN, as numpy's maximum); r = a / b; r = w * r (skipped for a NULL weight: ones); r = g * r; mean:
 * r = r * cof, cof = 1.0f / d0 / d1 / ... over self's dims in float32; rounded to P, then to out's
 * dtype. Nothing is summed: out has self's shape.
 *
 * @fault bce_no_clamp EMU_FAULT_BCE_NO_CLAMP x * (1 - x) is not clamped to 1e-12 (x at 0, 1 or outside [0, 1] divides by 0 or a negative number)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, WEIGHT };
enum { REDUCTION }; /* i64 slots */
enum { COF };       /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    const float s = x[SELF];
    float a = s - x[TARGET];
    float b = s * (-s + 1.0f);
#ifndef EMU_FAULT_BCE_NO_CLAMP
    const float eps = (float)1e-12; /* 9.99999996e-13, as numpy's float32(1e-12) */
    if (b == b && !(b > eps)) b = eps; /* numpy's maximum: a NaN stays NaN */
#endif
    float r = a / b;
    if (ex->in[WEIGHT].present) r = x[WEIGHT] * r; /* a NULL weight is ones: nothing to multiply */
    r = x[GRAD] * r;
    if (ex->i64[REDUCTION] == 1) r = r * ex->f32[COF];
    return r;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    ex->f32[COF] = 1.0f;
    for (int64_t i = 0; i < in[SELF]->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)in[SELF]->dims[i];
}

static const emu_entry OP = {
    .op = {"BinaryCrossEntropyBackward", emu_entry_run}, .params = "ttt?io", .self = SELF, .term = term,
    .setup = setup, .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 3, .rank = EMU_OUT_BIT,
    .from = EMU_IN(SELF), .out_shape = EMU_SHAPE_SELF, .empty = EMU_EMPTY_SELF,
};
EMU_ENTRY(BinaryCrossEntropyBackward, OP,
          (const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target,
           const aclTensor *weightOptional, int64_t reduction, aclTensor *out),
          gradOutput, self, target, weightOptional, reduction, out)
