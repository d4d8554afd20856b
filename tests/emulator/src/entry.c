/* The generic entry of libopapi.so (emu.h, "the generic entry"): phase 1 of an elementwise loss
 * as its descriptor (struct emu_entry) declares it, and its phase 2 run. An operator file that uses
 * it holds the descriptor, written from its page's facts (never computed from the suite's check()),
 * its term function and its setup; the two exported functions come from EMU_ENTRY. */
#include <stdarg.h>
#include "emu.h"

void emu_entry_run(aclOpExecutor *ex) {
    const emu_entry *d = (const emu_entry *)ex->op; /* op is the descriptor's first member */
    if (ex->fill) emu_fill(ex, ex->fill_value); /* the op API's fill kernel (an empty reduction) */
    else emu_terms(ex, d->term);
}

static int has(unsigned mask, int i) { return (int)((mask >> i) & 1u); }

/* t broadcasts to B leaving it as it is. */
static int fits(const int64_t *B, int64_t nb, const aclTensor *t) {
    int64_t G[EMU_MAX_RANK], ng = nb;
    memcpy(G, B, nb * sizeof *B);
    return emu_bcast(G, &ng, t) && ng == nb && (nb == 0 || memcmp(G, B, nb * sizeof *B) == 0);
}

static int out_fits(const emu_entry *d, const aclTensor *out, const aclTensor *self, const int64_t *B, int64_t nb,
                    int64_t reduction) {
    switch (d->out_shape) {
    case EMU_SHAPE_SELF: return emu_same_shape(out, self);
    case EMU_SHAPE_REDUCED_0D: return reduction == 0 ? emu_shape_is(out, B, nb) : out->ndim == 0;
    case EMU_SHAPE_REDUCED_ONE: return reduction == 0 ? emu_shape_is(out, B, nb) : emu_numel(out) == 1;
    default: return emu_shape_is(out, B, nb);
    }
}

int emu_entry_call(const emu_entry *d, uint64_t *workspaceSize, aclOpExecutor **executor, ...) {
    const aclTensor *in[EMU_MAX_INPUTS] = {0};
    aclTensor *out = NULL;
    int64_t i64[EMU_MAX_ATTRS] = {0};
    int flag[EMU_MAX_ATTRS] = {0}, nin = 0, ni = 0, nb_ = 0, nf = 0, missing = 0;
    float f32[EMU_MAX_ATTRS] = {0};
    va_list ap;
    va_start(ap, executor); /* the arguments as EMU_ENTRY passes them (bool as int, float as double) */
    for (const char *k = d->params; *k; k++) {
        if (*k == 't' || *k == '?') {
            in[nin] = va_arg(ap, const aclTensor *);
            missing |= *k == 't' && !in[nin];
            nin++;
        } else if (*k == 'i') {
            i64[ni++] = va_arg(ap, int64_t);
        } else if (*k == 'b') {
            flag[nb_++] = va_arg(ap, int) ? 1 : 0;
        } else if (*k == 'f') {
            f32[nf++] = (float)va_arg(ap, double);
        } else if (*k == 'o') {
            out = va_arg(ap, aclTensor *);
        }
    }
    va_end(ap);
    /* 1. NULLs */
    if (missing || !out || !workspaceSize || !executor) return ACLNN_ERR_PARAM_NULLPTR;
    const aclTensor *self = in[d->self];
    int64_t reduction = i64[0];
    /* 2., 3. dtypes */
    if (d->unlisted_on && strcmp(emu_soc_family(), d->unlisted_on) == 0) return ACLNN_ERR_PARAM_INVALID;
    for (int i = 0; i < nin; i++) {
        if (in[i] && has(d->listed, i) && !emu_listed(in[i]->dtype)) return ACLNN_ERR_PARAM_INVALID;
        if (in[i] && has(d->same, i) && in[i]->dtype != self->dtype) return ACLNN_ERR_PARAM_INVALID;
    }
    if ((d->listed & EMU_OUT_BIT) && !emu_listed(out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    int32_t p = EMU_NO_DTYPE;
    if (d->promote) {
        int first = 1;
        for (int i = 0; i < nin; i++) {
            if (!in[i]) continue;
            p = first ? in[i]->dtype : emu_promote(p, in[i]->dtype);
            first = 0;
        }
        if (p == EMU_NO_DTYPE || !emu_listed(p) || !emu_can_cast(p, out->dtype)) return ACLNN_ERR_PARAM_INVALID;
    }
    /* 4. the reduction */
    if (d->reductions && (reduction < 0 || reduction >= d->reductions))
        return d->bad_reduction ? d->bad_reduction : ACLNN_ERR_PARAM_INVALID;
    /* 5. ranks, float attributes */
    for (int i = 0; i < nin; i++)
        if (in[i] && has(d->rank, i) && !emu_rank_ok(in[i])) return ACLNN_ERR_PARAM_INVALID;
    if ((d->rank & EMU_OUT_BIT) && !emu_rank_ok(out)) return ACLNN_ERR_PARAM_INVALID;
    for (int k = 0; k < nf; k++)
        if (has(d->nonneg, k) && !(f32[k] >= 0.0f)) return ACLNN_ERR_PARAM_INVALID;
    /* 6. shapes */
    int64_t B[EMU_MAX_RANK], nb = 0;
    int empty = 0, ok = 1;
    for (int i = 0; i < nin; i++)
        if (in[i] && (d->empty == EMU_EMPTY_ANY || (d->empty == EMU_EMPTY_SELF && i == d->self)))
            empty |= emu_numel(in[i]) == 0;
    for (int i = 0; i < nin && ok; i++)
        if (in[i] && has(d->from, i)) ok = emu_bcast(B, &nb, in[i]);
    for (int i = 0; i < nin && ok; i++)
        if (in[i] && !has(d->from, i)) ok = fits(B, nb, in[i]);
    ok = ok && out_fits(d, out, self, B, nb, reduction);
    if (!ok && !empty) return ACLNN_ERR_PARAM_INVALID;
    if (!ok && d->empty == EMU_EMPTY_ANY) { /* outside the contract: consistent views, nothing written */
        memcpy(B, out->dims, out->ndim * sizeof *B);
        nb = out->ndim;
        i64[0] = 0;
    }
    /* 7. what the core can read and write */
    for (int i = 0; i < nin; i++)
        if (in[i] && !emu_loadable(in[i]->dtype)) return ACLNN_ERR_INNER_NULLPTR;
    if (!emu_storable(out->dtype)) return ACLNN_ERR_INNER_NULLPTR;
    aclOpExecutor *ex;
    if (empty && d->empty == EMU_EMPTY_SELF) { /* nothing to compute; the shapes may be anything (past the
                                                * core's rank too): no view is captured but out */
        const aclTensor *none[EMU_MAX_INPUTS] = {0};
        ex = emu_executor(&d->op, none, nin, out, B, 0);
        ex->empty = 1;
        return emu_ready(ex, workspaceSize, executor);
    }
    ex = emu_executor(&d->op, in, nin, out, B, nb);
    ex->cast_in = ex->result = p;
    memcpy(ex->i64, i64, sizeof i64);
    memcpy(ex->flag, flag, sizeof flag);
    memcpy(ex->f32, f32, sizeof f32);
    if (d->setup) d->setup(ex, in);
    return emu_ready(ex, workspaceSize, executor);
}
