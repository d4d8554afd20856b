/* aclnnEmuProbe: a made-up operator that only tests compile into the emulator (build(extra_ops=...)),
 * never part of src/ops/. It exercises what the core offers every operator and no real operator of
 * the suite uses yet: an optional tensor that may be NULL, and int64, bool and C float attributes.
 *
 *   aclnnEmuProbeGetWorkspaceSize(x, y, weightOptional, int64_t mode, bool negate, float scale, out, ...)
 *
 * Phase 1: workspaceSize, executor, x, y or out NULL -> 161001 (a NULL weightOptional is accepted);
 * then 161002 for a dtype outside the product's list (x, y, out, and the weight when given), mode
 * outside 0..1, scale NaN, inputs that do not broadcast, and out not of the required shape.
 * On B = broadcast(x, y[, weight]), in float32: r = (x - y) * scale; r = r * weight when given;
 * r = -r when negate. mode 0: out has shape B; mode 1: out has x's shape and the terms are summed
 * back to it (the core's workspace path). One rounding to out's dtype.
 */
#include <math.h>
#include "emu.h"

enum { X, Y, W, NIN };
enum { SCALE };  /* f32 slots */
enum { NEGATE }; /* flag slots */

static void run(aclOpExecutor *ex);
static const emu_op OP = {"EmuProbe", run};

static float term(const aclOpExecutor *ex, const float *x) {
    float r = (x[X] - x[Y]) * ex->f32[SCALE];
    if (ex->in[W].present) r = r * x[W];
    return ex->flag[NEGATE] ? -r : r;
}

static void run(aclOpExecutor *ex) { emu_terms(ex, term); }

EMU_EXPORT int aclnnEmuProbeGetWorkspaceSize(const aclTensor *x, const aclTensor *y, const aclTensor *weightOptional,
                                             int64_t mode, _Bool negate, float scale, aclTensor *out,
                                             uint64_t *workspaceSize, aclOpExecutor **executor) {
    int64_t B[EMU_MAX_RANK], nb = 0;
    if (!workspaceSize || !executor || !x || !y || !out) return ACLNN_ERR_PARAM_NULLPTR;
    if (!emu_listed(x->dtype) || !emu_listed(y->dtype) || !emu_listed(out->dtype) ||
        (weightOptional && !emu_listed(weightOptional->dtype)))
        return ACLNN_ERR_PARAM_INVALID;
    if (mode < 0 || mode > 1 || isnan(scale)) return ACLNN_ERR_PARAM_INVALID;
    if (!emu_rank_ok(x) || !emu_rank_ok(y) || !emu_rank_ok(out) || (weightOptional && !emu_rank_ok(weightOptional)))
        return ACLNN_ERR_PARAM_INVALID;
    if (!emu_bcast(B, &nb, x) || !emu_bcast(B, &nb, y) || (weightOptional && !emu_bcast(B, &nb, weightOptional)))
        return ACLNN_ERR_PARAM_INVALID;
    if (mode == 0 ? !emu_shape_is(out, B, nb) : !emu_same_shape(out, x)) return ACLNN_ERR_PARAM_INVALID;
    const aclTensor *in[NIN] = {x, y, weightOptional};
    aclOpExecutor *ex = emu_executor(&OP, in, NIN, out, B, nb);
    ex->f32[SCALE] = scale;
    ex->flag[NEGATE] = negate ? 1 : 0;
    return emu_ready(ex, workspaceSize, executor);
}

EMU_EXPORT int aclnnEmuProbe(void *workspace, uint64_t workspaceSize, aclOpExecutor *executor, void *stream) {
    return emu_launch(&OP, workspace, workspaceSize, executor, stream);
}
