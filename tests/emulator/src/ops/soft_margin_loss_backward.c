/* aclnnSoftMarginLossBackward in the emulator (docs/operators/SoftMarginLossBackward.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every tensor's dtype listed, P =
 * promote(gradOutput, self, target); no reduction check (the op API indexes a three-entry table with
 * it: a value outside 0..2 is outside the contract, computed as none here); out is B.
 *
 * The kernel, in float32 on B after the casts to P: the TBE kernel's order e = exp(-y * x);
 * q = e / (e + 1), 1 where e overflows (the contract's limit; the kernels give inf / inf);
 * r = (-y * q) * g; for mean r * (float)(1.0 / N), N = numel(B); rounded to P, then to out's dtype.
 *
 * @fault smlb_naive_exp EMU_FAULT_SMLB_NAIVE_EXP e / (1 + e) as the kernels write it: NaN once exp(-y * x) overflows
 */
#include <math.h>
#include "emu.h"

enum { GRAD, SELF, TARGET };
enum { REDUCTION }; /* i64 slots */
enum { COF };       /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float e = expf(-x[TARGET] * x[SELF]);
#ifdef EMU_FAULT_SMLB_NAIVE_EXP
    float q = e / (e + 1.0f);
#else
    float q = isinf(e) ? 1.0f : e / (e + 1.0f);
#endif
    float r = -x[TARGET] * q * x[GRAD];
    return ex->i64[REDUCTION] == 1 ? r * ex->f32[COF] : r;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    (void)in;
    int64_t N = emu_numel_dims(ex->bdims, ex->bndim);
    ex->f32[COF] = N ? (float)(1.0 / (double)N) : 1.0f;
}

static const emu_entry OP = {
    .op = {"SoftMarginLossBackward", emu_entry_run}, .params = "tttio", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 0, .rank = EMU_INPUTS, .from = EMU_INPUTS,
    .out_shape = EMU_SHAPE_B,
};
EMU_ENTRY(SoftMarginLossBackward, OP,
          (const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction,
           aclTensor *out),
          gradOutput, self, target, reduction, out)
