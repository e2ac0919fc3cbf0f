/*===- main.c - Train a Cleave artifact through the C API ---------*- C -*-===//
 *
 * Loads the artifact named on the command line, creates a session, trains
 * one window plus a partial one on synthetic data and prints the losses.
 *
 *   cleave-embed model.cleave [classes]
 *
 * Float inputs get values in [-1, 1); integer inputs are taken to be class
 * labels and get values in [0, classes) (default 2).
 *
 *===----------------------------------------------------------------------===*/

#include <cleave/runtime.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what) {
  fprintf(stderr, "cleave-embed: %s: %s\n", what, cleave_last_error_message());
  return 1;
}

/* A small deterministic generator, so that runs are reproducible. */
static uint32_t nextRandom(uint32_t *state) {
  *state = *state * 1664525u + 1013904223u;
  return *state >> 8;
}

/* Fills `count` elements of `dtype` at `data` with synthetic values. */
static void fillSynthetic(void *data, cleave_dtype dtype, size_t count,
                          int64_t classes, uint32_t *state) {
  for (size_t i = 0; i < count; ++i) {
    uint32_t r = nextRandom(state);
    double u = (double)(r & 0xffff) / 65536.0 * 2.0 - 1.0;
    switch (dtype) {
    case CLEAVE_DTYPE_F32:
      ((float *)data)[i] = (float)u;
      break;
    case CLEAVE_DTYPE_F64:
      ((double *)data)[i] = u;
      break;
    case CLEAVE_DTYPE_I32:
      ((int32_t *)data)[i] = (int32_t)(r % (uint32_t)classes);
      break;
    case CLEAVE_DTYPE_I64:
      ((int64_t *)data)[i] = (int64_t)(r % (uint32_t)classes);
      break;
    default: /* the narrow types a model may exchange data in: zeros */
      memset((char *)data + i * cleave_dtype_size(dtype), 0,
             cleave_dtype_size(dtype));
      break;
    }
  }
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: %s model.cleave [classes]\n", argv[0]);
    return 2;
  }
  int64_t classes = argc == 3 ? atoll(argv[2]) : 2;
  if (classes < 1) {
    fprintf(stderr, "cleave-embed: classes must be positive\n");
    return 2;
  }

  cleave_artifact *model = NULL;
  if (cleave_artifact_load(argv[1], &model) != CLEAVE_OK)
    return fail("load");
  int64_t microBatch = 0, accumulate = 0;
  size_t numInputs = 0;
  if (cleave_artifact_micro_batch(model, &microBatch) != CLEAVE_OK ||
      cleave_artifact_accumulate(model, &accumulate) != CLEAVE_OK ||
      cleave_artifact_num_inputs(model, &numInputs) != CLEAVE_OK)
    return fail("describe");
  printf("artifact: micro-batch %lld, accumulate %lld, %zu inputs\n",
         (long long)microBatch, (long long)accumulate, numInputs);

  cleave_session_options options;
  cleave_session_options_init(&options);
  options.seed = 1;
  cleave_session *session = NULL;
  if (cleave_session_create(model, &options, &session) != CLEAVE_OK)
    return fail("create session");
  cleave_artifact_release(model); /* the session keeps it alive */

  /* One buffer per input, sized for a full micro-batch. */
  void **data = calloc(numInputs, sizeof(void *));
  size_t *rowBytes = calloc(numInputs, sizeof(size_t));
  size_t *bytes = calloc(numInputs, sizeof(size_t));
  cleave_dtype *dtypes = calloc(numInputs, sizeof(cleave_dtype));
  if (numInputs > 0 && (!data || !rowBytes || !bytes || !dtypes)) {
    fprintf(stderr, "cleave-embed: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < numInputs; ++i) {
    cleave_tensor_info info;
    cleave_artifact *borrowed = NULL;
    if (cleave_session_artifact(session, &borrowed) != CLEAVE_OK ||
        cleave_artifact_input(borrowed, i, &info) != CLEAVE_OK)
      return fail("describe input");
    printf("input %zu: %s\n", i, info.name);
    dtypes[i] = info.dtype;
    rowBytes[i] = info.bytes / (size_t)microBatch;
    data[i] = malloc(info.bytes > 0 ? info.bytes : 1);
    if (!data[i]) {
      fprintf(stderr, "cleave-embed: out of memory\n");
      return 1;
    }
  }

  /* A full window of full micro-batches, then a short one that the runtime
   * pads, then a flush that applies the partial window. */
  uint32_t state = 12345;
  int64_t steps = accumulate + 1;
  for (int64_t s = 0; s < steps; ++s) {
    int64_t k = s < accumulate ? microBatch : (microBatch + 1) / 2;
    for (size_t i = 0; i < numInputs; ++i) {
      bytes[i] = (size_t)k * rowBytes[i];
      fillSynthetic(data[i], dtypes[i], bytes[i] / cleave_dtype_size(dtypes[i]),
                    classes, &state);
    }
    cleave_batch batch = {k, numInputs, (const void *const *)data, bytes};
    double loss = 0.0;
    if (cleave_session_micro_step(session, &batch) != CLEAVE_OK ||
        cleave_session_last_loss(session, &loss) != CLEAVE_OK)
      return fail("micro-step");
    printf("micro-step %lld (%lld samples): loss %.6f\n", (long long)s,
           (long long)k, loss);
  }
  if (cleave_session_flush(session) != CLEAVE_OK)
    return fail("flush");
  int64_t step = 0;
  if (cleave_session_step(session, &step) != CLEAVE_OK)
    return fail("step");
  printf("optimizer steps: %lld\n", (long long)step);

  for (size_t i = 0; i < numInputs; ++i)
    free(data[i]);
  free(data);
  free(rowBytes);
  free(bytes);
  free(dtypes);
  cleave_session_destroy(session);
  return 0;
}
