/* aclnnMseLoss in the emulator (docs/operators/MseLoss.md).
 *
 * Phase 1, in the order of the op API code: workspaceSize or executor NULL, then self, target,
 * out NULL -> 161001; then 161002 for P = promote(self, target) undefined or outside the product's
 * list, self's, target's or out's dtype outside the list (each by itself: no integer operand), a
 * reduction outside 0..2, self or target of rank > 8, inputs that do not broadcast, and out not B
 * (none) or not 0-d (mean, sum: [1] is rejected too).
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

enum { SELF, TARGET, NIN };
enum { SCALE };      /* f32 slots */
enum { MEAN, NONE }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"MseLoss", run};

static float term(const aclOpExecutor *ex, const float *x) {
    float d = x[SELF] - x[TARGET];
    float s = d * d;
    return ex->flag[MEAN] ? s * ex->f32[SCALE] : s;
}

static void run(aclOpExecutor *ex) {
    if (!ex->flag[NONE] && emu_numel_dims(ex->bdims, ex->bndim) == 0) {
#ifdef EMU_FAULT_MSE_MEAN_EMPTY_ZERO
        emu_fill(ex, 0.0f);
#else
        emu_fill(ex, ex->flag[MEAN] ? NAN : 0.0f); /* the op API's fill kernels */
#endif
        return;
    }
    emu_terms(ex, term);
}

EMU_EXPORT int aclnnMseLossGetWorkspaceSize(const aclTensor *self, const aclTensor *target, int64_t reduction,
                                            aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!self || !target || !out) return ACLNN_ERR_PARAM_NULLPTR;
    int32_t p = emu_promote(self->dtype, target->dtype);
    if (p == EMU_NO_DTYPE || !emu_listed(p)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(self->dtype) || !emu_listed(target->dtype) || !emu_listed(out->dtype))
        return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(self) || !emu_rank_ok(target)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, target)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0 ? !emu_shape_is(out, B, nb) : out->ndim != 0) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
    ex->cast_in = ex->result = p;
    ex->flag[MEAN] = reduction == 1;
    ex->flag[NONE] = reduction == 0;
#ifdef EMU_FAULT_MSE_MEAN_NUMEL_SELF
    int64_t N = emu_numel(self);
#else
    int64_t N = emu_numel_dims(B, nb);
#endif
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnMseLoss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
