/* aclnnKlDiv in the emulator (docs/operators/KlDiv.md).
 *
 * Phase 1, in the order of the op API code: workspaceSize or executor NULL, then self, target,
 * out NULL -> 161001; then 161002 for self's, target's or out's dtype outside the product's list
 * (each by itself: no integer operand), P = promote(self, target) undefined or not castable to
 * out, self then target of rank > 8, a reduction outside 0..3; an empty self or target is
 * accepted here, before any shape check; then inputs that do not broadcast, none's out not B, and
 * mean/sum/batchmean's out of more than one element (any one-element shape: [], [1], [1, 1]).
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

enum { SELF, TARGET, NIN };
enum { COF, FILL };                /* f32 slots */
enum { SCALED, NONE, LOG_TARGET }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"KlDiv", run};

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
    return ex->flag[SCALED] ? l * ex->f32[COF] : l;
}

static void run(aclOpExecutor *ex) {
    if (!ex->flag[NONE] && emu_numel_dims(ex->bdims, ex->bndim) == 0) {
        emu_fill(ex, ex->f32[FILL]); /* the op API's fill kernels */
        return;
    }
    emu_terms(ex, term);
}

EMU_EXPORT int aclnnKlDivGetWorkspaceSize(const aclTensor *self, const aclTensor *target, int64_t reduction,
                                          _Bool logTarget, aclTensor *out, uint64_t *workspaceSize,
                                          aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!self || !target || !out) return ACLNN_ERR_PARAM_NULLPTR;
    if (!emu_listed(self->dtype) || !emu_listed(target->dtype) || !emu_listed(out->dtype))
        return ACLNN_ERR_PARAM_INVALID;
    int32_t p = emu_promote(self->dtype, target->dtype);
    if (p == EMU_NO_DTYPE || !emu_listed(p) || !emu_can_cast(p, out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(self) || !emu_rank_ok(target)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 3) return ACLNN_ERR_PARAM_INVALID;
    int empty = emu_numel(self) == 0 || emu_numel(target) == 0;
    int fits = emu_bcast(B, &nb, self) && emu_bcast(B, &nb, target);
    if (!empty) {
        if (!fits) return ACLNN_ERR_PARAM_INVALID;
        if (reduction == 0 ? !emu_shape_is(out, B, nb) : emu_numel(out) != 1) return ACLNN_ERR_PARAM_INVALID;
    } else if (!fits || (reduction == 0 ? !emu_shape_is(out, B, nb) : emu_numel(out) != 1)) {
        /* outside the contract (the page asserts nothing): keep the views consistent, write nothing */
        memcpy(B, out->dims, out->ndim * sizeof *B);
        nb = out->ndim;
        reduction = 0;
    }
    const aclTensor *in[NIN] = {self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
    ex->cast_in = ex->result = p;
    ex->flag[NONE] = reduction == 0;
    ex->flag[LOG_TARGET] = logTarget ? 1 : 0;
    ex->flag[SCALED] = reduction == 1 || reduction == 3;
    int64_t n = emu_numel_dims(B, nb);
#ifdef EMU_FAULT_KLDIV_BATCHMEAN_SELF_DIM0
    int64_t batch = self->ndim ? self->dims[0] : 1;
#else
    int64_t batch = nb ? B[0] : 1; /* a 0-d input read as [1] */
#endif
    int64_t div = reduction == 1 ? n : batch;
    ex->f32[COF] = div ? (float)(1.0 / (double)div) : 1.0f;
    /* the fill of an empty reduction: mean 0/0; batchmean 0/0 by self's own first dimension */
    ex->f32[FILL] = reduction == 1 || (reduction == 3 && self->ndim && self->dims[0] == 0) ? NAN : 0.0f;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnKlDiv(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
