/* aclnnL1LossBackward in the emulator (docs/operators/L1LossBackward.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Only P = promote(promote(gradOutput, self),
 * target) is list-checked (and must cast to out's dtype): mixed input dtypes (and integer or BOOL
 * inputs next to a float one) are accepted and cast to P; out's dtype is not list-checked. An out
 * the emulator cannot write (complex) gets 561103, as building the final Cast may on the device
 * (not established; outside the contract).
 *
 * The kernel (the TBE kernel of the four products), in float32 on B after the casts to P:
 * s = self > target ? 1 : -1, then 0 where self == target (NaN gives -1); c = gradOutput * cof for
 * mean, else gradOutput; r = s * c; rounded to P, then to out's dtype. cof is the host tiling's
 * float32 1.0f / d0 / d1 / ... over B's dims: the mean divides by numel(B), not numel(self).
 *
 * @fault l1_mean_numel_self EMU_FAULT_L1_MEAN_NUMEL_SELF mean divides by numel(self) instead of numel(B)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET };
enum { REDUCTION }; /* i64 slots */
enum { COF };       /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float s = x[SELF] > x[TARGET] ? 1.0f : -1.0f;
    if (x[SELF] == x[TARGET]) s = 0.0f;
    float c = ex->i64[REDUCTION] == 1 ? x[GRAD] * ex->f32[COF] : x[GRAD];
    return s * c;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    ex->f32[COF] = 1.0f;
#ifdef EMU_FAULT_L1_MEAN_NUMEL_SELF
    for (int64_t i = 0; i < in[SELF]->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)in[SELF]->dims[i];
#else
    for (int64_t i = 0; i < ex->bndim; i++) ex->f32[COF] = ex->f32[COF] / (float)ex->bdims[i];
#endif
}

static const emu_entry OP = {
    .op = {"L1LossBackward", emu_entry_run}, .params = "tttio", .self = SELF, .term = term, .setup = setup,
    .promote = 1, .reductions = 3, .rank = EMU_INPUTS | EMU_OUT_BIT, .from = EMU_INPUTS, .out_shape = EMU_SHAPE_B,
};
EMU_ENTRY(L1LossBackward, OP,
          (const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction,
           aclTensor *gradInput),
          gradOutput, self, target, reduction, gradInput)
