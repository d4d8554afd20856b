/* aclnnKlDivBackward in the emulator (docs/operators/KlDivBackward.md).
 *
 * Phase 1: NULL -> 161001 first; then 161002 for any dtype (of the three inputs and out) outside
 * the product's list (mixed float dtypes are accepted: they all cast to each other; on Atlas 200I/500
 * A2 the list is empty, so every call is 161002 there), a rank > 8
 * (out included), self and target that do not broadcast, a gradOutput that does not broadcast to
 * B = broadcast(self, target), and out not of self's shape. Reduction values outside 0..3 behave
 * as none, like the vendor code. The kernel, in float32 on B: v = -(logTarget ? exp(target) :
 * target); v *= gradOutput; v *= cof (1/numel(B) for mean, 1/B[0] for batchmean, rounded once to
 * float32); then summed in float32 back to self's shape (the core's workspace path when B differs
 * from self's shape) and rounded once to out's dtype. self gives the shape only.
 *
 * @fault mask_target EMU_FAULT_MASK_TARGET zeroes the gradient where target <= 0 (an obsolete kernel)
 * @fault no_kl_symbol EMU_FAULT_NO_KL_SYMBOL libopapi.so lacks this operator's two symbols
 */
#include <math.h>
#include "emu.h"

#ifndef EMU_FAULT_NO_KL_SYMBOL
enum { GRAD, SELF, TARGET, NIN };
enum { COF };        /* f32 slots */
enum { LOG_TARGET }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"KlDivBackward", run};

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

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

EMU_EXPORT int aclnnKlDivBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                  const aclTensor *target, int64_t reduction, _Bool logTarget,
                                                  aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0, G[EMU_MAX_RANK], ng;
    if (!gradOutput || !self || !target || !out || !workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (strcmp(emu_soc_family(), "atlas-200i-500-a2") == 0) return ACLNN_ERR_PARAM_INVALID; /* no dtype listed */
    if (!emu_listed(gradOutput->dtype) || !emu_listed(self->dtype) || !emu_listed(target->dtype) ||
        !emu_listed(out->dtype))
        return ACLNN_ERR_PARAM_INVALID; /* floats all cast to each other: no separate cast check needed */
    if (!emu_rank_ok(gradOutput) || !emu_rank_ok(self) || !emu_rank_ok(target) || !emu_rank_ok(out))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, target)) return ACLNN_ERR_PARAM_INVALID;
    memcpy(G, B, nb * sizeof *B);
    ng = nb;
    if (!emu_bcast(G, &ng, gradOutput) || ng != nb || memcmp(G, B, nb * sizeof *B) != 0)
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_same_shape(out, self)) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {gradOutput, self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
    int64_t n = emu_numel_dims(B, nb);
    ex->flag[LOG_TARGET] = logTarget ? 1 : 0;
    ex->f32[COF] = 1.0f;
    if (reduction == 1) ex->f32[COF] = (float)(1.0 / (double)n);
    else if (reduction == 3 && nb > 0) ex->f32[COF] = (float)(1.0 / (double)B[0]);
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnKlDivBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
#endif
