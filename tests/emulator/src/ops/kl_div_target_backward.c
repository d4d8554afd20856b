/* aclnnKlDivTargetBackward in the emulator (docs/operators/KlDivTargetBackward.md).
 *
 * Phase 1: the descriptor with target in its `self` slot (out has target's shape); before it, once
 * no tensor is NULL, what it cannot state: no dtype listed but on A2, A3 and the 950, and out's dtype
 * not target's (161002). Reductions outside 0..3 are none. The kernel, A2/A3's l0 ops in float32 on
 * B: g = gradOutput / N (numel(B) for mean, B[0] for batchmean), g*log(t) - g*self + (g*t)/t, or
 * (g*(t - self))*exp(t) + g*exp(t); summed back to target's shape, rounded once to out's dtype.
 *
 * @fault klt_no_plus_one EMU_FAULT_KLT_NO_PLUS_ONE drops the +1 of the gradient: g * (log(target) - self)
 */
#include <math.h>
#include "emu.h"

enum { GRAD, SELF, TARGET };
enum { REDUCTION };  /* i64 slots */
enum { LOG_TARGET }; /* flag slots */
enum { N };          /* f32 slots */

static float term(const aclOpExecutor *ex, const float *x) {
    float g = ex->f32[N] > 0.0f ? x[GRAD] / ex->f32[N] : x[GRAD], t = x[TARGET], s = x[SELF];
    if (ex->flag[LOG_TARGET]) {
        float e = expf(t);
        return g * (t - s) * e + g * e;
    }
#ifdef EMU_FAULT_KLT_NO_PLUS_ONE
    return g * logf(t) - g * s;
#else
    return (g * logf(t) - g * s) + (g * t) / t;
#endif
}

static void setup(aclOpExecutor *ex, const aclTensor *const *in) {
    (void)in;
    ex->f32[N] = 0.0f;
    if (ex->i64[REDUCTION] == 1) ex->f32[N] = (float)emu_numel_dims(ex->bdims, ex->bndim);
    else if (ex->i64[REDUCTION] == 3 && ex->bndim > 0) ex->f32[N] = (float)ex->bdims[0];
}

static const emu_entry OP = {
    .op = {"KlDivTargetBackward", emu_entry_run}, .params = "tttibo", .self = TARGET, .term = term,
    .setup = setup, .listed = EMU_INPUTS | EMU_OUT_BIT, .rank = EMU_INPUTS | EMU_OUT_BIT,
    .from = EMU_IN(SELF) | EMU_IN(TARGET), .out_shape = EMU_SHAPE_SELF,
};

EMU_EXPORT int aclnnKlDivTargetBackwardGetWorkspaceSize(const aclTensor *gradOutput, const aclTensor *self,
                                                        const aclTensor *target, int64_t reduction, _Bool logTarget,
                                                        aclTensor *gradTarget, uint64_t *workspaceSize,
                                                        aclOpExecutor **executor) {
    const char *f = emu_soc_family();
    if (gradOutput && self && target && gradTarget && workspaceSize && executor &&
        ((strcmp(f, "atlas-a2") && strcmp(f, "atlas-a3") && strcmp(f, "ascend-950")) ||
         gradTarget->dtype != target->dtype))
        return ACLNN_ERR_PARAM_INVALID;
    return emu_entry_call(&OP, workspaceSize, executor, gradOutput, self, target, reduction, logTarget, gradTarget);
}

EMU_EXPORT int aclnnKlDivTargetBackward(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor,
                                        void *stream) {
    return emu_launch(&OP.op, workspace, workspaceSize, executor, stream);
}
