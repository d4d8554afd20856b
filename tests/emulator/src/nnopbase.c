/* libnnopbase.so of the emulator: aclTensor objects keep the view metadata exactly as given.
 * As lenient as CANN's aclCreateTensor, which checks nothing about the view: negative strides,
 * offsets or dims are all kept (phase 1's view check, in opapi.c, judges them), and only a NULL
 * array with a non-zero count returns NULL.
 */
#include <stdlib.h>
#include "emu.h"

static int64_t *copy_dims(const int64_t *src, uint64_t n) {
    int64_t *d = malloc((n ? n : 1) * sizeof *d);
    if (n) memcpy(d, src, n * sizeof *d);
    return d;
}

EMU_EXPORT aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, int32_t dataType,
                                      const int64_t *stride, int64_t offset, int32_t format,
                                      const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    if ((viewDimsNum && !viewDims) || (storageDimsNum && !storageDims)) return NULL;
    aclTensor *t = calloc(1, sizeof *t);
    t->magic = EMU_TENSOR_MAGIC;
    t->ndim = (int64_t)viewDimsNum;
    t->dims = copy_dims(viewDims, viewDimsNum);
    t->strides = malloc((viewDimsNum ? viewDimsNum : 1) * sizeof(int64_t));
    for (int64_t i = t->ndim - 1, run = 1; i >= 0; i--) { /* NULL stride = contiguous */
        t->strides[i] = stride ? stride[i] : run;
        run *= viewDims[i];
    }
    t->offset = offset;
    t->dtype = dataType;
    t->format = format;
    t->nstorage = (int64_t)storageDimsNum;
    t->storage_dims = copy_dims(storageDims, storageDimsNum);
    t->data = tensorData;
    aclemu_count(EMU_TENSORS, 1);
    return t;
}

EMU_EXPORT int aclDestroyTensor(const aclTensor *tensor) {
    aclTensor *t = (aclTensor *)tensor;
    if (!t) return ACLNN_ERR_PARAM_NULLPTR;
    if (t->magic != EMU_TENSOR_MAGIC) return ACLNN_ERR_INNER_NULLPTR;
    t->magic = 0;
    free(t->dims);
    free(t->strides);
    free(t->storage_dims);
    free(t);
    aclemu_count(EMU_TENSORS, -1);
    return 0;
}

/* Phase 2 may run the executor again and again; the caller destroys it (aclDestroyAclOpExecutor).
 * ACLNN_EMU_NO_REPEATABLE=1 makes it refuse, as opbase does for an executor it cannot reuse (its
 * ACLNN_ERR_INNER), so tests can prove the backend's fallback. */
EMU_EXPORT int aclSetAclOpExecutorRepeatable(aclOpExecutor *executor) {
    const char *no = getenv("ACLNN_EMU_NO_REPEATABLE");
    if (!executor) return ACLNN_ERR_INNER_NULLPTR;
    if (executor->magic != EMU_EXEC_MAGIC || (no && *no == '1')) return ACLNN_ERR_INNER;
    executor->repeatable = 1;
    return 0;
}

EMU_EXPORT int aclDestroyAclOpExecutor(aclOpExecutor *executor) {
    if (!executor) return ACLNN_ERR_INNER_NULLPTR;
    if (executor->magic != EMU_EXEC_MAGIC) return ACLNN_ERR_INNER_NULLPTR;
    if (executor->pending) return ACLNN_ERR_PARAM_INVALID; /* launches still queued: kept, and counted live */
    executor->magic = 0;
    free(executor);
    aclemu_count(EMU_EXECUTORS, -1);
    return 0;
}
