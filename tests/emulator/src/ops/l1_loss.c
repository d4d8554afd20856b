/* aclnnL1Loss in the emulator (docs/operators/L1Loss.md): MseLoss's entry with |self - target| and
 * the op API's own phase-1 order: workspaceSize or executor NULL, self, target, out NULL -> 161001;
 * then 161002 for a reduction outside 0..2, none with a non-floating self beside a floating target,
 * mean with neither floating, P = promote(self, target) undefined or outside the list (FLOAT,
 * FLOAT16, INT64, and BFLOAT16 where the SoC has it), P not castable to out's dtype, a rank > 8,
 * inputs that do not broadcast, out not B (none) or not 0-d (mean, sum). An INT64 result (P =
 * INT64, the vendor's Sub/Abs/ReduceSum path) is outside the contract: 561103 here.
 *
 * The kernel (the TBE LpLoss), in float32 on B after the casts to P: |x - y|, for mean times
 * scale = (float)(1.0 / numel(B)) per term; the sum in float32, rounded to P, then to out's dtype.
 *
 * @fault l1fwd_mean_numel_self EMU_FAULT_L1FWD_MEAN_NUMEL_SELF mean divides by numel(self) instead of numel(B)
 */
#include <math.h>
#include "emu.h"

enum { SELF, TARGET, NIN };
enum { SCALE };      /* f32 slots */
enum { MEAN, NONE }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"L1Loss", run};

static float term(const aclOpExecutor *ex, const float *x) {
    float s = fabsf(x[SELF] - x[TARGET]);
    return ex->flag[MEAN] ? s * ex->f32[SCALE] : s;
}

static void run(aclOpExecutor *ex) {
    if (!ex->flag[NONE] && emu_numel_dims(ex->bdims, ex->bndim) == 0) {
        emu_fill(ex, ex->flag[MEAN] ? NAN : 0.0f); /* the op API's fill kernels */
        return;
    }
    emu_terms(ex, term);
}

EMU_EXPORT int aclnnL1LossGetWorkspaceSize(const aclTensor *self, const aclTensor *target, int64_t reduction,
                                           aclTensor *out, uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    if (!self || !target || !out) return ACLNN_ERR_PARAM_NULLPTR;
    if (reduction < 0 || reduction > 2) return ACLNN_ERR_PARAM_INVALID;
    int fs = emu_is_floating(self->dtype), ft = emu_is_floating(target->dtype);
    if ((reduction == 0 && !fs && ft) || (reduction == 1 && !fs && !ft)) return ACLNN_ERR_PARAM_INVALID;
    int32_t p = emu_promote(self->dtype, target->dtype);
    if (p == EMU_NO_DTYPE || !(p == ACL_INT64 || emu_listed(p))) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_can_cast(p, out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(self) || !emu_rank_ok(target)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, self) || !emu_bcast(B, &nb, target)) return ACLNN_ERR_PARAM_INVALID;
    if (reduction == 0 ? !emu_shape_is(out, B, nb) : out->ndim != 0) return ACLNN_ERR_PARAM_INVALID;
    if (p == ACL_INT64 || !emu_storable(out->dtype) || !emu_loadable(self->dtype) || !emu_loadable(target->dtype))
        return ACLNN_ERR_INNER_NULLPTR;
    const aclTensor *in[NIN] = {self, target};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
    ex->cast_in = ex->result = p;
    ex->flag[MEAN] = reduction == 1;
    ex->flag[NONE] = reduction == 0;
#ifdef EMU_FAULT_L1FWD_MEAN_NUMEL_SELF
    int64_t N = emu_numel(self);
#else
    int64_t N = emu_numel_dims(B, nb);
#endif
    ex->f32[SCALE] = N ? (float)(1.0 / (double)N) : 1.0f;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnL1Loss(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
