/* aclnnKlDiv in the emulator (docs/operators/KlDiv.md).
 *
 * Phase 1: the descriptor (emu.h's generic entry). Every dtype listed (no integer operand), P =
 * promote(self, target); reductions 0..3; an empty self or target is accepted before any shape
 * check; none's out is B, mean/sum/batchmean's any one-element shape ([], [1], [1, 1]).
 *
 * The kernel (the TBE KLDivV2), in float32 on B after the casts to P: without logTarget a zero
 * target is replaced by 1 before the log, l = t * (log t' - x) (0 for t = 0, NaN for t < 0); with
 * logTarget l = exp(t) * (t - x); for mean and batchmean each term times the coefficient
 * (float)(1.0 / N), N = numel(B) or B[0] (a 0-d B read as [1]), before the float32 sum (the
 * core's reduction to out: one element summing every term), rounded to P once; the op API then
 * casts P to out's dtype. Empty inputs: none writes nothing, mean fills NaN, sum 0, batchmean NaN
 * when self's own first dimension is 0, else 0.
 *
 * @fault kldiv_batchmean_self_dim0 EMU_FAULT_KLDIV_BATCHMEAN_SELF_DIM0 batchmean divides by self's first dimension (PyTorch's) instead of B[0]
 * @fault kldiv_zero_target_nan EMU_FAULT_KLDIV_ZERO_TARGET_NAN a zero target is not replaced by 1 before the log: 0 * log 0 gives NaN
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET };
enum { REDUCTION };  /* i64 slots */
enum { LOG_TARGET }; /* flag slots */
enum { COF };        /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float t = x[TARGET], l;
    if (ex->flag[LOG_TARGET]) {
        l = expf(t) * (t - x[SELF]);
    } else {
#ifdef EMU_FAULT_KLDIV_ZERO_TARGET_NAN
        float t1 = t;
#else
        float t1 = t == 0.0f ? 1.0f : t; /* vcmp with 0, vsel 1 */
#endif
        l = t * (logf(t1) - x[SELF]);
    }
    return ex->i64[REDUCTION] == 1 || ex->i64[REDUCTION] == 3 ? l * ex->f32[COF] : l;
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    const aclTensor *self = in[SELF];
    int64_t reduction = ex->i64[REDUCTION], n = emu_numel_dims(ex->bdims, ex->bndim);
#ifdef EMU_FAULT_KLDIV_BATCHMEAN_SELF_DIM0
    int64_t batch = self->ndim ? self->dims[0] : 1;
#else
    int64_t batch = ex->bndim ? ex->bdims[0] : 1; /* a 0-d input read as [1] */
#endif
    int64_t div = reduction == 1 ? n : batch;
    ex->f32[COF] = div ? (float)(1.0 / (double)div) : 1.0f;
    /* the fill of an empty reduction: mean 0/0; batchmean 0/0 by self's own first dimension */
    ex->fill = reduction != 0 && n == 0;
    ex->fill_value = reduction == 1 || (reduction == 3 && self->ndim && self->dims[0] == 0) ? NAN : 0.0f;
}

static const emu_entry OP = {
    .op = {"KlDiv", emu_entry_run}, .params = "ttibo", .self = SELF, .term = term, .setup = setup,
    .listed = EMU_INPUTS | EMU_OUT_BIT, .promote = 1, .reductions = 4, .rank = EMU_INPUTS, .from = EMU_INPUTS,
    .out_shape = EMU_SHAPE_REDUCED_ONE, .empty = EMU_EMPTY_ANY,
};
EMU_ENTRY(KlDiv, OP,
          (const aclTensor *self, const aclTensor *target, int64_t reduction, _Bool logTarget, aclTensor *out),
          self, target, reduction, logTarget, out)
