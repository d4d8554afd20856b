/* aclnnMseLoss in the emulator (docs/operators/MseLoss.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every dtype listed, P = promote(self, target);
 * out is B (none) or 0-d (mean, sum: [1] is rejected too).
 *
 * The kernel (MSELossV2), in float32 on B after the casts to P: d = self - target; s = d * d;
 * for mean s * scale, scale = (float)(1.0 / N) with N = numel(B), computed in double and rounded
 * once; none stores each s rounded to P; mean and sum add the terms in float32 (the core's
 * reduction to out, here 0-d: one element summing every term) and round the sum to P once. The
 * op API then casts P to out's dtype. Empty inputs: none writes nothing, mean fills NaN, sum 0.
 *
 * @fault mse_mean_numel_self EMU_FAULT_MSE_MEAN_NUMEL_SELF mean divides by numel(self) instead of numel(B)
 * @fault mse_mean_empty_zero EMU_FAULT_MSE_MEAN_EMPTY_ZERO the mean of empty inputs is 0 instead of NaN
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET };
enum { REDUCTION }; /* i64 slots */
enum { SCALE };     /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float d = x[SELF] - x[TARGET];
    float s = d * d;
    return ex->i64[REDUCTION] == 1 ? s * ex->f32[SCALE] : s;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
#ifdef EMU_FAULT_MSE_MEAN_NUMEL_SELF
    int64_t N = emu_numel(in[SELF]);
#else
    int64_t N = emu_numel_dims(ex->bdims, ex->bndim);
#endif
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    ex->fill = ex->i64[REDUCTION] != 0 && emu_numel_dims(ex->bdims, ex->bndim) == 0; /* the op API's fill kernels */
#ifdef EMU_FAULT_MSE_MEAN_EMPTY_ZERO
    ex->fill_value = 0.0f;
#else
    ex->fill_value = ex->i64[REDUCTION] == 1 ? NAN : 0.0f;
#endif
}

static const emu_entry OP = {
    .op = {"MseLoss", emu_entry_run}, .params = "ttio", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 3, .rank = EMU_INPUTS, .from = EMU_INPUTS,
    .out_shape = EMU_SHAPE_REDUCED_0D,
};
EMU_ENTRY(MseLoss, OP, (const aclTensor *self, const aclTensor *target, int64_t reduction, aclTensor *out),
          self, target, reduction, out)
