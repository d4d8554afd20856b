/* aclnnL1LossBackward in the emulator (docs/operators/L1LossBackward.md).
 *
 * Phase 1, in the order of the op API code: workspaceSize or executor NULL, then gradOutput, self,
 * target, gradInput NULL -> 161001; then 161002 for a reduction outside 0..2, promote(gradOutput,
 * self) undefined, promote(target, that) = P undefined, P not castable to out's dtype (an integral
 * or BOOL out), P outside the product's list, a rank > 8 (self, target, gradOutput, gradInput),
 * inputs that do not broadcast, and out not of the broadcast shape B. Only P is list-checked:
 * mixed input dtypes (and integer or BOOL inputs next to a float one) are accepted and cast to P;
 * out's dtype is not list-checked. An out the emulator cannot write (complex) gets 561103, as
 * building the final Cast may on the device (not established; outside the contract).
 *
 * The kernel (the TBE kernel of the four products), in float32 on B after the casts to P:
 * s = self > target ? 1 : -1, then 0 where self == target (NaN gives -1); c = gradOutput * cof for
 * mean, else gradOutput; r = s * c; rounded to P, then to out's dtype. cof is the host tiling's
 * float32 1.0f / d0 / d1 / ... over B's dims: the mean divides by numel(B), not numel(self).
 *
 * @fault l1_mean_numel_self EMU_FAULT_L1_MEAN_NUMEL_SELF mean divides by numel(self) instead of numel(B)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, NIN };
enum { COF };  /* f32 slots */
enum { MEAN }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"L1LossBackward", run};

static float term(const aclOpExecutor *ex, const float *x) {
    float s = x[SELF] > x[TARGET] ? 1.0f : -1.0f;
    if (x[SELF] == x[TARGET]) s = 0.0f;
    float c = ex->flag[MEAN] ? x[GRAD] * ex->f32[COF] : x[GRAD];
    return s * c;
}

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

EMU_EXPORT int aclnnL1LossBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                   const aclTensor *target, int64_t reduction, aclTensor *gradInput,
                                                   uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!gradOutput || !self || !target || !gradInput) return ACLNN_ERR_PARAM_NULLPTR;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    int32_t p = emu_promote(gradOutput->dtype, self->dtype);
    if (p == EMU_NO_DTYPE) return ACLNN_ERR_PARAM_INVALID;
    p = emu_promote(target->dtype, p);
    if (p == EMU_NO_DTYPE) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_can_cast(p, gradInput->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(p)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(self) || !emu_rank_ok(target) || !emu_rank_ok(gradOutput) || !emu_rank_ok(gradInput))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, gradOutput) || !emu_bcast(B, &nb, target))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_shape_is(gradInput, B, nb)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_storable(gradInput->dtype) || !emu_loadable(gradOutput->dtype) || !emu_loadable(self->dtype) ||
        !emu_loadable(target->dtype))
        return ACLNN_ERR_INNER_NULLPTR;
    const aclTensor *in[NIN] = {gradOutput, self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, gradInput, B, nb);
    ex->cast_in = ex->result = p;
    ex->flag[MEAN] = reduction == 1;
    ex->f32[COF] = 1.0f;
#ifdef EMU_FAULT_L1_MEAN_NUMEL_SELF
    for (int64_t i = 0; i < self->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)self->dims[i];
#else
    for (int64_t i = 0; i < nb; i++) ex->f32[COF] = ex->f32[COF] / (float)B[i];
#endif
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnL1LossBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
