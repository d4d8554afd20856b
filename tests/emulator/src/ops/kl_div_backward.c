/* aclnnKlDivBackward in the emulator (docs/operators/KlDivBackward.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every dtype listed (mixed float dtypes are
 * accepted: they all cast to each other; on Atlas 200I/500 A2 the list is empty, so every call is
 * 161002 there); B = broadcast(self, target), gradOutput must broadcast to it; out is self's shape.
 * Reduction values outside 0..3 behave as none, like the vendor code. The kernel, in float32 on
 * B: v = -(logTarget ? exp(target) : target); v *= gradOutput; v *= cof (1/numel(B) for mean,
 * 1/B[0] for batchmean, rounded once to float32); then summed in float32 back to self's shape (the
 * core's workspace path when B differs from self's shape) and rounded once to out's dtype. self
 * gives the shape only.
 *
 * @fault mask_target EMU_FAULT_MASK_TARGET zeroes the gradient where target <= 0 (an obsolete kernel)
 * @fault no_kl_symbol EMU_FAULT_NO_KL_SYMBOL libopapi.so lacks this operator's two symbols
 */
#include <math.h>
#include "emu.h"

#ifndef EMU_FAULT_NO_KL_SYMBOL
enum { GRAD, SELF, TARGET };
enum { REDUCTION };  /* i64 slots */
enum { LOG_TARGET }; /* flag slots */
enum { COF };        /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float tv = x[TARGET];
    float e = ex->flag[LOG_TARGET] ? expf(tv) : tv;
    float v = -e;
    v = v * x[GRAD];
    v = v * ex->f32[COF];
#ifdef EMU_FAULT_MASK_TARGET
    if (!ex->flag[LOG_TARGET] && !(tv > 0.0f)) v = 0.0f; /* obsolete kernel: target > 0 ? ... : 0 */
#endif
    return v;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    (void)in;
    ex->f32[COF] = 1.0f;
    if (ex->i64[REDUCTION] == 1) ex->f32[COF] = (float)(1.0 / (double)emu_numel_dims(ex->bdims, ex->bndim));
    else if (ex->i64[REDUCTION] == 3 && ex->bndim > 0) ex->f32[COF] = (float)(1.0 / (double)ex->bdims[0]);
}

static const emu_entry OP = {
    .op = {"KlDivBackward", emu_entry_run}, .params = "tttibo", .self = SELF, .term = term, .setup = setup,
    .unlisted_on = "atlas-200i-500-a2", .listed = EMU_INPUTS | EMU_OUT_BIT, .rank = EMU_INPUTS | EMU_OUT_BIT,
    .from = EMU_IN(SELF) | EMU_IN(TARGET), .out_shape = EMU_SHAPE_SELF,
};
EMU_ENTRY(KlDivBackward, OP,
          (const aclTensor *gradOutput, const aclTensor *self, const aclTensor *target, int64_t reduction,
           _Bool logTarget, aclTensor *out),
          gradOutput, self, target, reduction, logTarget, out)
#endif
