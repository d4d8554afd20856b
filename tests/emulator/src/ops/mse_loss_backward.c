/* aclnnMseLossBackward in the emulator (docs/operators/MseLossBackward.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry), as the page tabulates: self's and out's dtypes
 * listed, gradOutput and target of self's dtype, no promotion; out is B. The kernel, in float32
 * on B: d = self - target; d *= cof; r = d * gradOutput, cof = 2/numel(self) (self as passed) for
 * mean, else 2; one rounding to out's dtype.
 *
 * @fault wrong_status EMU_FAULT_WRONG_STATUS a reduction outside 0..2 returns 161001 instead of 161002
 * @fault mean_n_b EMU_FAULT_MEAN_N_B mean divides by numel(B) instead of numel(self)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET };
enum { REDUCTION }; /* i64 slots */
enum { COF };       /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float d = x[SELF] - x[TARGET];
    d = d * ex->f32[COF];
    return d * x[GRAD];
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
#ifdef EMU_FAULT_MEAN_N_B
    int64_t N = emu_numel_dims(ex->bdims, ex->bndim);
#else
    int64_t N = emu_numel(in[SELF]); /* numel(self) as passed, before broadcasting */
#endif
    ex->f32[COF] = ex->i64[REDUCTION] == 1 ? 2.0f / (float)N : 2.0f;
}

static const emu_entry OP = {
    .op = {"MseLossBackward", emu_entry_run}, .params = "tttio", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_IN(SELF) | EMU_OUT_BIT, .same = EMU_IN(GRAD) | EMU_IN(TARGET), .reductions = 3,
    .rank = EMU_INPUTS, .from = EMU_INPUTS, .out_shape = EMU_SHAPE_B,
#ifdef EMU_FAULT_WRONG_STATUS
    .bad_reduction = ACLNN_ERR_PARAM_NULLPTR,
#endif
};
EMU_ENTRY(MseLossBackward, OP,
          (const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction,
           aclTensor *out),
          gradOutput, self, target, reduction, out)
