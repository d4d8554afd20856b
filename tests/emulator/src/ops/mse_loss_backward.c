/* aclnnMseLossBackward in the emulator (docs/operators/MseLossBackward.md).
 *
 * Phase 1 validates as the page tabulates: NULL -> 161001 first, then 161002 for a self dtype
 * outside the product's list, gradOutput or target of another dtype, out's dtype outside the list,
 * a reduction outside 0..2, an input of rank > 8, inputs that do not broadcast, and out not of the
 * broadcast shape B. The kernel, in float32 on B: d = self - target; d *= cof; r = d * gradOutput,
 * cof = 2/numel(self) (self as passed) for mean, else 2; one rounding to out's dtype.
 *
 * @fault wrong_status EMU_FAULT_WRONG_STATUS a reduction outside 0..2 returns 161001 instead of 161002
 * @fault mean_n_b EMU_FAULT_MEAN_N_B mean divides by numel(B) instead of numel(self)
 */
#include "emu.h"

enum { GRAD, SELF, TARGET, NIN };
enum { COF }; /* f32 slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"MseLossBackward", run};

static float term(const aclOpExecutor *ex, const float *x) {
    float d = x[SELF] - x[TARGET];
    d = d * ex->f32[COF];
    return d * x[GRAD];
}

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

EMU_EXPORT int aclnnMseLossBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                    const aclTensor *target, int64_t reduction, aclTensor *out,
                                                    uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!gradOutput || !self || !target || !out || !workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!emu_listed(self->dtype) || gradOutput->dtype != self->dtype || target->dtype != self->dtype)
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_listed(out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) {
#ifdef EMU_FAULT_WRONG_STATUS
        return ACLNN_ERR_PARAM_NULLPTR;
#else
        return ACLNN_ERR_PARAM_INVALID;
#endif
    }
    if (!emu_rank_ok(gradOutput) || !emu_rank_ok(self) || !emu_rank_ok(target)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, gradOutput) || !emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, target))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_shape_is(out, B, nb)) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {gradOutput, self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
#ifdef EMU_FAULT_MEAN_N_B
    int64_t N = emu_numel_dims(B, nb);
#else
    int64_t N = emu_numel(self); /* numel(self) as passed, before broadcasting */
#endif
    ex->f32[COF] = reduction == 1 ? 2.0f / (float)N : 2.0f;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnMseLossBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
