/* aclnnSmoothL1LossBackward in the emulator (docs/operators/SmoothL1LossBackward.md).
 *
 * Phase 1, in the order of the op API code: workspaceSize or executor NULL, then gradOut, self,
 * target, gradInput NULL -> 161001; then 161002 for a dtype outside the product's list (gradOut,
 * self, target, gradInput, each), a largest input rank > 8, a reduction outside 0..2, beta >= 0
 * false (negative or NaN; -0.0 and +inf pass), inputs that do not broadcast, and out not of the
 * broadcast shape B. Mixed input dtypes are accepted and cast to P = promote(promote(gradOut,
 * self), target); out may be any listed dtype.
 *
 * The kernel (the bfloat16-capable TBE revision), in float32 on B after the casts to P:
 * x = self - target; t = x / (beta + 1e-6f); x0 = x == x ? x : 0;
 * r = ((x0 <= -beta ? -1 : 0) + (x0 >= beta ? 1 : 0)) + (|x0| < beta ? t : 0);
 * res = r * gradOut; for mean res *= cof, cof = 1.0f / d0 / d1 / ... over self's dims as passed
 * (numel(self), not numel(B)); rounded to P, then to out's dtype. beta arrives as a C float.
 *
 * @fault smooth_l1_no_eps EMU_FAULT_SMOOTH_L1_NO_EPS the quadratic branch divides by beta, not beta + 1e-6
 */
#include <math.h>
#include "emu.h"

enum { GRAD, SELF, TARGET, NIN };
enum { COF, BETA }; /* f32 slots */
enum { MEAN };      /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"SmoothL1LossBackward", run};

static float term(const aclOpExecutor *ex, const float *x) {
    const float beta = ex->f32[BETA];
    float d = x[SELF] - x[TARGET];
#ifdef EMU_FAULT_SMOOTH_L1_NO_EPS
    float t = d / beta;
#else
    float t = d / (beta + 1e-6f);
#endif
    float d0 = d == d ? d : 0.0f;
    float s1 = d0 <= -beta ? -1.0f : 0.0f, s2 = d0 >= beta ? 1.0f : 0.0f, s3 = fabsf(d0) < beta ? t : 0.0f;
    float r = (s1 + s2) + s3;
    float res = r * x[GRAD];
    return ex->flag[MEAN] ? res * ex->f32[COF] : res;
}

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

EMU_EXPORT int aclnnSmoothL1LossBackwardGetWorkspaceSize(const aclTensor *gradOut, const aclTensor *self,
                                                         const aclTensor *target, int64_t reduction, float beta,
                                                         aclTensor *gradInput, uint64_t *workspaceSize,
                                                         aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!gradOut || !self || !target || !gradInput) return ACLNN_ERR_PARAM_NULLPTR;
    if (!emu_listed(gradOut->dtype) || !emu_listed(self->dtype) || !emu_listed(target->dtype) ||
        !emu_listed(gradInput->dtype))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(gradOut) || !emu_rank_ok(self) || !emu_rank_ok(target)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    if (!(beta >= 0.0f)) return ACLNN_ERR_PARAM_INVALID;
    int32_t p = emu_promote(emu_promote(gradOut->dtype, self->dtype), target->dtype);
    if (p == EMU_NO_DTYPE || !emu_listed(p) || !emu_can_cast(p, gradInput->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, gradOut) || !emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, target))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_shape_is(gradInput, B, nb)) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {gradOut, self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, gradInput, B, nb);
    ex->cast_in = ex->result = p;
    ex->flag[MEAN] = reduction == 1;
    ex->f32[BETA] = beta;
    ex->f32[COF] = 1.0f;
    for (int64_t i = 0; i < self->ndim; i++) ex->f32[COF] = ex->f32[COF] / (float)self->dims[i];
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnSmoothL1LossBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                         void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
