//===- CudaKernels.cpp - The kernel library on cuBLASLt and cuDNN ---------===//
//
// See CudaKernels.h. How each kernel maps onto the libraries:
//
// matmul: cuBLASLt is column-major, the ABI row-major. A row-major [M, N]
//   matrix is the same memory as a column-major [N, M] one, so C = op(A)
//   op(B) is computed as the column-major C^T = op(B)^T op(A)^T: cuBLASLt's
//   first operand is the ABI's B, its second the ABI's A, and the bias
//   ([N], one per row of C^T) is cuBLASLt's BIAS epilogue, fused with ReLU
//   (RELU_BIAS). `accumulate` is beta = 1 with C as both input and output.
//   Compute is CUBLAS_COMPUTE_32F (IEEE fp32, no TF32), so results match
//   the CPU to rounding. An entry with "math": "bf16" whose A and B are
//   stored in bf16 (`a_type`, `b_type`: what cleave-compile makes for cuda)
//   has CUDA_R_16BF layouts for them with CUBLAS_COMPUTE_32F: bf16 tensor
//   cores, products summed in f32 into the f32 C (mixed-precision.md, "bf16
//   storage"). One on f32 operands (a hand-written table) is
//   CUBLAS_COMPUTE_32F_FAST_16BF: the inputs rounded inside the kernel to
//   bf16 for the tensor cores (or to TF32, which the type allows cuBLASLt
//   to choose: never less precise), products summed in f32. A batch
//   without a batched B and without trans_a folds into the rows, as on the
//   CPU; otherwise the batch is a strided batch, with stride 0 for a shared
//   B.
// conv2d: cuDNN convolutions in NCHW/OIHW, cross-correlation, fp32 FMA math
//   (CUDNN_FMA_MATH: no TF32), groups through the group count. Forward adds
//   the bias with cudnnAddTensor and applies ReLU with
//   cudnnActivationForward, in place; bwd_weights accumulates with beta = 1.
//   Algorithms come from cuDNN's heuristics (the _v7 queries), once. A bf16
//   entry has every tensor bf16 (cuDNN's PSEUDO_BFLOAT16 configuration:
//   products summed in f32, the result rounded once to bf16) and tensor-op
//   math; cleave-compile makes such entries with the bias, ReLU and the
//   gradient's f32 accumulation in the generated loop that widens the result
//   (mixed-precision.md, "On cuda").
// pooling: cudnnPoolingForward / Backward; max pooling backward recomputes
//   the forward output into the workspace (the ABI passes the forward input,
//   cuDNN wants the output too), like the oneDNN kernel.
// sdpa: cuDNN 9's backend graph API, with the operation graphs
//   cudnn-frontend builds for its composite flash-attention nodes, which
//   cuDNN fuses into one kernel. The ABI's [batch, T, D] tensors are
//   [1, batch, T, D] (the batch and head dimensions flattened into cuDNN's
//   head dimension), k is bound as its transposed view [1, batch, D, S], the
//   mask as a [1, 1, T, S] bias and lse as the [1, batch, T, 1] stats. The
//   forward graph is q kᵀ, scale, mask, the causal mask (GEN_INDEX of row
//   and column, CMP_GE, BINARY_SELECT of -inf), the softmax as a row max,
//   exp, row sum and division (its P in bf16, the second product's operand),
//   the stats as max + log(sum), and P v. The backward graph recomputes P as
//   exp(scores - lse) and takes softmax_sum = rowsum(dO o) as an f32 buffer
//   in the shared workspace after cuDNN's own; Pᵀ and dSᵀ are bf16 RESHAPE
//   views for the dV and dK products, and dS k is written straight to dq
//   (cudnn-frontend's deterministic graph). With dropout the entry binds
//   keep ([1, batch, T, S] bf16, 1 kept and 0 dropped, which the compiler
//   draws with nn.dropout's counter-based stream, not cuDNN's Philox): the
//   forward multiplies P by keep and 1 / (1 - r) before P v, and the
//   backward, as cudnn-frontend's set_dropout(mask, scale), takes dV from
//   that product, multiplies dO vᵀ by keep and softmax_sum by 1 - r.
//   Scale, -inf, 1 (or 1 - r) and 1 / (1 - r) are by-value scalars, read
//   from host floats when the plan is enqueued. The engine is
//   the first of the heuristics (mode A, then fallback) that is
//   deterministic and whose execution plan finalizes. When the backward has
//   none, it takes cudnn-frontend's default graph instead, with dS k summed
//   into an f32 dQ_accum buffer (after softmax_sum) and then rounded to dq,
//   and its first engine whose plan finalizes, deterministic or not (a
//   non-deterministic one adds into dQ_accum with atomics, so dq may differ
//   in its last bits from run to run): the kernel's description and the
//   session's notes say so (KernelLibrary::notes).
//   cuDNN's fused attention takes bf16 tensors only (f32 entries are
//   refused: the compiler decomposes attention for them) and head
//   dimensions that are multiples of 8 up to 256.
//
// cuDNN's legacy descriptors take one padding per dimension and no pooling
// dilation. The ABI's padding is top, left, bottom, right: an entry is
// accepted when cuDNN's output size with padding (top, left) is the entry's
// output size, which makes every window the same (the bottom and right
// padding the entry declares is then either equal to cuDNN's or never
// reached). Otherwise, and for pooling with a dilation, the kernel is
// refused when the session is created.
//
//===----------------------------------------------------------------------===//

#include "device/cuda/CudaKernels.h"

#include "device/Device.h"
#include "device/cuda/AlgorithmChoice.h"
#include "device/cuda/CudaDriver.h"
#include "kernels/KernelContext.h"
#include "kernels/KernelLibrary.h"
#include "kernels/KernelSpec.h"

#include <cublasLt.h>
#include <cudnn.h>

#include <dlfcn.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace cleave::rt {

namespace {

//===----------------------------------------------------------------------===//
// The libraries, loaded once per process
//===----------------------------------------------------------------------===//

#define CLEAVE_CUBLASLT_FUNCTIONS(X)                                           \
  X(cublasLtCreate)                                                            \
  X(cublasLtDestroy)                                                           \
  X(cublasLtMatmulDescDestroy)                                                 \
  X(cublasLtMatrixLayoutDestroy)                                               \
  X(cublasLtGetStatusString)                                                   \
  X(cublasLtMatmulDescCreate)                                                  \
  X(cublasLtMatmulDescSetAttribute)                                            \
  X(cublasLtMatrixLayoutCreate)                                                \
  X(cublasLtMatrixLayoutSetAttribute)                                          \
  X(cublasLtMatmulPreferenceCreate)                                            \
  X(cublasLtMatmulPreferenceSetAttribute)                                      \
  X(cublasLtMatmulPreferenceDestroy)                                           \
  X(cublasLtMatmulAlgoGetHeuristic)                                            \
  X(cublasLtMatmul)

#define CLEAVE_CUDNN_FUNCTIONS(X)                                              \
  X(cudnnGetVersion)                                                           \
  X(cudnnCreate)                                                               \
  X(cudnnDestroy)                                                              \
  X(cudnnDestroyTensorDescriptor)                                              \
  X(cudnnDestroyFilterDescriptor)                                              \
  X(cudnnDestroyConvolutionDescriptor)                                         \
  X(cudnnDestroyActivationDescriptor)                                          \
  X(cudnnDestroyPoolingDescriptor)                                             \
  X(cudnnSetStream)                                                            \
  X(cudnnGetErrorString)                                                       \
  X(cudnnCreateTensorDescriptor)                                               \
  X(cudnnSetTensor4dDescriptor)                                                \
  X(cudnnCreateFilterDescriptor)                                               \
  X(cudnnSetFilter4dDescriptor)                                                \
  X(cudnnCreateConvolutionDescriptor)                                          \
  X(cudnnSetConvolution2dDescriptor)                                           \
  X(cudnnSetConvolutionGroupCount)                                             \
  X(cudnnSetConvolutionMathType)                                               \
  X(cudnnGetConvolution2dForwardOutputDim)                                     \
  X(cudnnGetConvolutionForwardAlgorithm_v7)                                    \
  X(cudnnGetConvolutionForwardWorkspaceSize)                                   \
  X(cudnnGetConvolutionBackwardDataAlgorithm_v7)                               \
  X(cudnnGetConvolutionBackwardDataWorkspaceSize)                              \
  X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)                             \
  X(cudnnGetConvolutionBackwardFilterWorkspaceSize)                            \
  X(cudnnConvolutionForward)                                                   \
  X(cudnnConvolutionBackwardData)                                              \
  X(cudnnConvolutionBackwardFilter)                                            \
  X(cudnnAddTensor)                                                            \
  X(cudnnCreateActivationDescriptor)                                           \
  X(cudnnSetActivationDescriptor)                                              \
  X(cudnnActivationForward)                                                    \
  X(cudnnCreatePoolingDescriptor)                                              \
  X(cudnnSetPooling2dDescriptor)                                               \
  X(cudnnGetPooling2dForwardOutputDim)                                         \
  X(cudnnPoolingForward)                                                       \
  X(cudnnPoolingBackward)                                                      \
  X(cudnnGetLastErrorString)                                                   \
  X(cudnnBackendCreateDescriptor)                                              \
  X(cudnnBackendDestroyDescriptor)                                             \
  X(cudnnBackendSetAttribute)                                                  \
  X(cudnnBackendGetAttribute)                                                  \
  X(cudnnBackendFinalize)                                                      \
  X(cudnnBackendExecute)

struct CublasLt {
#define CLEAVE_MEMBER(name) decltype(&::name) name = nullptr;
  CLEAVE_CUBLASLT_FUNCTIONS(CLEAVE_MEMBER)
};
struct Cudnn {
  CLEAVE_CUDNN_FUNCTIONS(CLEAVE_MEMBER)
#undef CLEAVE_MEMBER
};

/// Loads `library` and resolves `T`'s functions through `resolve`, once.
template <typename T, typename Resolve>
const T *loadLibrary(const char *library, const char *what, Resolve resolve,
                     std::string &error) {
  static T table;
  static std::string failure;
  static std::once_flag once;
  std::call_once(once, [&] {
    void *handle = ::dlopen(library, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      failure = std::string(what) + " is not available (" + library +
                " not found; it comes with the CUDA 13 toolkit)";
      return;
    }
    const char *missing = resolve(handle, table);
    if (missing)
      failure = std::string(library) + " has no " + missing +
                " (a different major version?)";
  });
  if (!failure.empty()) {
    error = failure;
    return nullptr;
  }
  return &table;
}

const CublasLt *cublasLt(std::string &error) {
  return loadLibrary<CublasLt>(
      "libcublasLt.so.13", "cuBLASLt",
      [](void *h, CublasLt &t) -> const char * {
#define CLEAVE_RESOLVE(name)                                                   \
  t.name = reinterpret_cast<decltype(t.name)>(::dlsym(h, #name));              \
  if (!t.name)                                                                 \
    return #name;
        CLEAVE_CUBLASLT_FUNCTIONS(CLEAVE_RESOLVE)
        return nullptr;
      },
      error);
}

const Cudnn *cudnn(std::string &error) {
  return loadLibrary<Cudnn>(
      "libcudnn.so.9", "cuDNN",
      [](void *h, Cudnn &t) -> const char * {
        CLEAVE_CUDNN_FUNCTIONS(CLEAVE_RESOLVE)
#undef CLEAVE_RESOLVE
        return nullptr;
      },
      error);
}

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

/// Thrown while kernels are built; the message names the kernel.
struct BuildError {
  Status status;
};

std::string kernelName(int64_t id, const std::string &op) {
  return "kernel " + std::to_string(id) + " (" + op + ")";
}

//===----------------------------------------------------------------------===//
// Kernels
//===----------------------------------------------------------------------===//

struct Libraries {
  const CudaDriver &driver;
  Device &device;
  const CublasLt *lt = nullptr;
  cublasLtHandle_t ltHandle = nullptr;
  const Cudnn *dnn = nullptr;
  cudnnHandle_t dnnHandle = nullptr;
};

/// The largest workspace cuBLASLt may use for one matmul; the shared
/// workspace is sized for the hungriest kernel.
constexpr size_t kMaxMatmulWorkspace = size_t(32) << 20;

/// A library descriptor a kernel owns: destroyed with the kernel, also
/// when the kernel's constructor fails after creating it (an entry refused
/// when the session is created must not leak what its kernel made).
template <typename T, typename Status> class Owned {
public:
  using Destroy = Status (*)(T);
  Owned() = default;
  Owned(const Owned &) = delete;
  Owned &operator=(const Owned &) = delete;
  ~Owned() {
    if (handle_)
      destroy_(handle_);
  }
  /// Creates it with `create(T *)`; `destroy` releases it.
  template <typename Create> Status create(Create create, Destroy destroy) {
    destroy_ = destroy;
    return create(&handle_);
  }
  operator T() const { return handle_; }

private:
  T handle_ = nullptr;
  Destroy destroy_ = nullptr;
};
template <typename T> using OwnedLt = Owned<T, cublasStatus_t>;
template <typename T> using OwnedDnn = Owned<T, cudnnStatus_t>;

class CudaKernel {
public:
  CudaKernel(KernelKind kind, int64_t id, std::string op)
      : kind(kind), id(id), op(std::move(op)) {}
  virtual ~CudaKernel() = default;
  /// Bytes of the shared workspace the kernel uses.
  virtual size_t workspaceBytes() const = 0;
  /// One line for logs: the op and how it runs.
  virtual std::string describe() const { return op; }
  /// A line for the session's notes, or empty (KernelLibrary::notes).
  virtual std::string note() const { return {}; }

  KernelKind kind;
  int64_t id;
  std::string op;
};

/// cuDNN's convolutions multiply in bf16 only on bf16 tensors (its
/// PSEUDO_BFLOAT16 configuration: bf16 inputs and result, f32 products and
/// sums): a bf16 entry must store all three operands in bf16, as
/// cleave-compile makes them for cuda, and leave the bias, the activation
/// and any accumulation to the generated loop that widens the result.
void checkBf16Convolution(const KernelSpec &spec, KernelKind kind,
                          const ConvEntry &e) {
  if (!e.bf16)
    return;
  struct Operand {
    const char *name;
    bool bf16;
  };
  std::array<Operand, 3> operands;
  switch (kind) {
  case KernelKind::ConvolutionForward:
    operands = {
        {{"src", e.srcBf16}, {"weights", e.weiBf16}, {"dst", e.dstBf16}}};
    break;
  case KernelKind::ConvolutionBackwardData:
    operands = {{{"diff_dst", e.diffDstBf16},
                 {"weights", e.weiBf16},
                 {"diff_src", e.dstBf16}}};
    break;
  default:
    operands = {{{"src", e.srcBf16},
                 {"diff_dst", e.diffDstBf16},
                 {"diff_weights", e.dstBf16}}};
    break;
  }
  std::string f32;
  for (const Operand &o : operands)
    if (!o.bf16)
      f32 += std::string(f32.empty() ? "" : ", ") + o.name;
  // With the result in bf16, readConvEntry has refused a bias, an
  // activation or accumulate already.
  if (!f32.empty())
    spec.fail("a bf16 convolution on the GPU needs every operand stored in "
              "bf16 (cuDNN multiplies bf16 only on bf16 tensors); this entry "
              "has " +
              f32 + " in f32");
}

class CudaMatmul final : public CudaKernel {
public:
  CudaMatmul(KernelSpec &spec, Libraries &libs)
      : CudaKernel(KernelKind::Matmul, spec.id(), spec.op()), libs_(libs) {
    const MatmulEntry e = readMatmulEntry(spec);
    // cuBLASLt multiplies bf16 A and B into an f32 C only when both are
    // bf16 in memory; cleave-compile narrows both for cuda.
    if (e.aBf16 != e.bBf16)
      spec.fail("'a_type' and 'b_type' must both be bf16 or both f32 on the "
                "GPU (cuBLASLt takes bf16 only for both operands); this "
                "entry stores only " +
                std::string(e.aBf16 ? "a" : "b") + " in bf16");
    stored_ = e.aBf16 && e.bBf16;
    const int64_t batch = e.batch, m = e.m, k = e.k, n = e.n;
    const bool transA = e.transA, transB = e.transB, bBatched = e.bBatched;
    const bool relu = e.relu;
    hasBias_ = e.bias;
    accumulate_ = e.accumulate;

    const CublasLt &lt = *libs.lt;
    bool fold = !bBatched && !transA;
    int64_t rows = fold ? batch * m : m;
    int64_t count = fold ? 1 : batch;
    auto check = [&](cublasStatus_t s, const char *call) {
      if (s != CUBLAS_STATUS_SUCCESS)
        spec.fail(std::string("cuBLASLt: ") + call +
                  " failed: " + lt.cublasLtGetStatusString(s));
    };
    // bf16 operands in memory: bf16 tensor cores with f32 products and
    // sums (CUBLAS_COMPUTE_32F on CUDA_R_16BF A and B). bf16 math on f32
    // operands: rounded inside the kernel for the tensor cores, f32 sums.
    check(desc_.create(
              [&](cublasLtMatmulDesc_t *d) {
                return lt.cublasLtMatmulDescCreate(
                    d,
                    e.bf16 && !stored_ ? CUBLAS_COMPUTE_32F_FAST_16BF
                                       : CUBLAS_COMPUTE_32F,
                    CUDA_R_32F);
              },
              lt.cublasLtMatmulDescDestroy),
          "cublasLtMatmulDescCreate");
    // cuBLASLt's A is the ABI's B (see the file comment).
    cublasOperation_t opA = transB ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opB = transA ? CUBLAS_OP_T : CUBLAS_OP_N;
    check(lt.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA,
                                            &opA, sizeof(opA)),
          "setting TRANSA");
    check(lt.cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB,
                                            &opB, sizeof(opB)),
          "setting TRANSB");
    cublasLtEpilogue_t epilogue =
        hasBias_ ? (relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                 : (relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT);
    check(lt.cublasLtMatmulDescSetAttribute(desc_,
                                            CUBLASLT_MATMUL_DESC_EPILOGUE,
                                            &epilogue, sizeof(epilogue)),
          "setting the epilogue");
    if (hasBias_) {
      cudaDataType_t biasType = CUDA_R_32F;
      check(lt.cublasLtMatmulDescSetAttribute(
                desc_, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &biasType,
                sizeof(biasType)),
            "setting the bias type");
    }
    // Stored shapes, column-major: B as [N, K] (or [K, N] transposed), A as
    // [K, rows] (or [rows, K] transposed), C as [N, rows].
    // A column (leading dimension) or a batch (stride) that is not a
    // multiple of an alignment in bytes misaligns every column or batch but
    // the first: the layouts bound the alignment run() may assume, as the
    // pointers do.
    auto layout = [&](OwnedLt<cublasLtMatrixLayout_t> &out, cudaDataType_t type,
                      uint64_t r, uint64_t c, int64_t stride,
                      const char *what) {
      check(out.create(
                [&](cublasLtMatrixLayout_t *l) {
                  return lt.cublasLtMatrixLayoutCreate(l, type, r, c,
                                                       int64_t(r));
                },
                lt.cublasLtMatrixLayoutDestroy),
            what);
      const uint64_t elem = type == CUDA_R_16BF ? 2 : 4;
      auto bytes = [](uint64_t n) {
        return reinterpret_cast<const void *>(uintptr_t(n));
      };
      layoutAlignment_ = std::min(
          layoutAlignment_,
          commonAlignment({bytes(r * elem),
                           bytes(count > 1 ? uint64_t(stride) * elem : 0)}));
      if (count > 1) {
        int32_t batchCount = int32_t(count);
        check(lt.cublasLtMatrixLayoutSetAttribute(
                  out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batchCount,
                  sizeof(batchCount)),
              what);
        check(lt.cublasLtMatrixLayoutSetAttribute(
                  out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                  sizeof(stride)),
              what);
      }
    };
    const cudaDataType_t operandType = stored_ ? CUDA_R_16BF : CUDA_R_32F;
    layout(aLayout_, operandType, transB ? k : n, transB ? n : k,
           bBatched ? k * n : 0, "the layout of b");
    layout(bLayout_, operandType, transA ? rows : k, transA ? k : rows,
           rows * k, "the layout of a");
    layout(cLayout_, CUDA_R_32F, n, rows, rows * n, "the layout of c");

    // An algorithm for each operand alignment the pointers may have, down to
    // an element's; run() takes the one for the alignment they do have.
    weakest_ = alignmentClass(stored_ ? 2 : 4);
    for (size_t i = 0; i <= weakest_; ++i) {
      // C, D and the bias are f32: never aligned to less than a float.
      const uint32_t f32Alignment =
          std::max(uint32_t(kMatmulAlignments[i]), uint32_t(sizeof(float)));
      cublasLtMatmulPreference_t pref = nullptr;
      check(lt.cublasLtMatmulPreferenceCreate(&pref), "preference");
      // Destroyed however this iteration ends (check throws).
      struct PreferenceGuard {
        const CublasLt &lt;
        cublasLtMatmulPreference_t pref;
        ~PreferenceGuard() { lt.cublasLtMatmulPreferenceDestroy(pref); }
      } guard{lt, pref};
      // The heuristics take the bias pointer's alignment from its value
      // (cublasLt.h): one with this class's alignment stands for it (an
      // f32 bias is never less than a float's).
      if (hasBias_) {
        auto bias = reinterpret_cast<const void *>(uintptr_t(f32Alignment));
        check(
            lt.cublasLtMatmulDescSetAttribute(
                desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias)),
            "setting the bias pointer");
      }
      auto setPreference = [&](cublasLtMatmulPreferenceAttributes_t attribute,
                               const auto &value) {
        check(lt.cublasLtMatmulPreferenceSetAttribute(pref, attribute, &value,
                                                      sizeof(value)),
              "cublasLtMatmulPreferenceSetAttribute");
      };
      setPreference(CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    uint64_t(kMaxMatmulWorkspace));
      // A and B at this class's alignment, C and D at a float's or more.
      for (cublasLtMatmulPreferenceAttributes_t operand :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES})
        setPreference(operand, uint32_t(kMatmulAlignments[i]));
      for (cublasLtMatmulPreferenceAttributes_t operand :
           {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES,
            CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES})
        setPreference(operand, f32Alignment);
      cublasLtMatmulHeuristicResult_t result = {};
      int found = 0;
      cublasStatus_t s = lt.cublasLtMatmulAlgoGetHeuristic(
          libs.ltHandle, desc_, aLayout_, bLayout_, cLayout_, cLayout_, pref, 1,
          &result, &found);
      if (s != CUBLAS_STATUS_SUCCESS || found == 0)
        continue;
      algos_[i] = result.algo;
      hasAlgo_[i] = true;
      workspace_ = std::max(workspace_, size_t(result.workspaceSize));
    }
    if (!hasAlgo_[weakest_])
      spec.fail("cuBLASLt has no algorithm for this matmul on operands "
                "aligned to " +
                std::to_string(kMatmulAlignments[weakest_]) + " bytes");
  }

  size_t workspaceBytes() const override { return workspace_; }

  Status run(const void *a, const void *b, const float *bias, float *c,
             void *workspace, size_t workspaceBytes) {
    if (!a || !b || !c)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": a NULL tensor was passed for a, b or c");
    if (hasBias_ && !bias)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": the entry has a bias but NULL was passed");
    const CublasLt &lt = *libs_.lt;
    if (hasBias_) {
      cublasStatus_t s = lt.cublasLtMatmulDescSetAttribute(
          desc_, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof(bias));
      if (s != CUBLAS_STATUS_SUCCESS)
        return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                         ": cuBLASLt: ", lt.cublasLtGetStatusString(s));
    }
    // The strongest alignment's algorithm that these pointers satisfy (one
    // chosen for a weaker alignment runs on any stronger one).
    size_t choice = alignmentClass(
        std::min(commonAlignment({a, b, c, bias}), layoutAlignment_));
    while (choice <= weakest_ && !hasAlgo_[choice])
      ++choice;
    if (choice > weakest_)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": an operand is not aligned to its element (",
                       kMatmulAlignments[weakest_], " bytes)");
    const float alpha = 1.0f, beta = accumulate_ ? 1.0f : 0.0f;
    cublasStatus_t s = lt.cublasLtMatmul(
        libs_.ltHandle, desc_, &alpha, b, aLayout_, a, bLayout_, &beta, c,
        cLayout_, c, cLayout_, &algos_[choice], workspace, workspaceBytes,
        static_cast<cudaStream_t>(libs_.device.compute().native()));
    if (s != CUBLAS_STATUS_SUCCESS)
      return makeError(
          CLEAVE_INTERNAL, kernelName(id, op),
          ": cublasLtMatmul failed: ", lt.cublasLtGetStatusString(s));
    return Status::success();
  }

private:
  Libraries &libs_;
  bool hasBias_ = false, accumulate_ = false;
  /// A and B are stored in bf16 (CUDA_R_16BF).
  bool stored_ = false;
  /// Index into kMatmulAlignments of the operands' element alignment.
  size_t weakest_ = 0;
  /// The alignment the layouts' leading dimensions and batch strides, in
  /// bytes, allow (256 when every one is a multiple of it).
  uint32_t layoutAlignment_ = kMatmulAlignments.front();
  OwnedLt<cublasLtMatmulDesc_t> desc_;
  OwnedLt<cublasLtMatrixLayout_t> aLayout_, bLayout_, cLayout_;
  /// Per kMatmulAlignments: the heuristics' algorithm for operands with
  /// that alignment, if there is one.
  std::array<cublasLtMatmulAlgo_t, kMatmulAlignments.size()> algos_ = {};
  std::array<bool, kMatmulAlignments.size()> hasAlgo_ = {};
  size_t workspace_ = 0;
};

/// Fails `spec` unless cuDNN's output size with padding (top, left) is
/// the entry's: then cuDNN's windows are exactly the entry's.
void checkCudnnPadding(KernelSpec &spec, const std::array<int64_t, 4> &padding,
                       int64_t cudnnOh, int64_t cudnnOw, int64_t oh,
                       int64_t ow) {
  if (cudnnOh == oh && cudnnOw == ow)
    return;
  spec.fail("padding (top " + std::to_string(padding[0]) + ", left " +
            std::to_string(padding[1]) + ", bottom " +
            std::to_string(padding[2]) + ", right " +
            std::to_string(padding[3]) +
            ") cannot be expressed with cuDNN, which pads both sides of a "
            "dimension alike (it would give a " +
            std::to_string(cudnnOh) + "x" + std::to_string(cudnnOw) +
            " output, the entry has " + std::to_string(oh) + "x" +
            std::to_string(ow) + "); this model does not run on a GPU yet");
}

class CudnnCheck {
public:
  CudnnCheck(const Cudnn &dnn, KernelSpec &spec) : dnn_(dnn), spec_(spec) {}
  void operator()(cudnnStatus_t s, const char *call) const {
    if (s != CUDNN_STATUS_SUCCESS)
      spec_.fail(std::string("cuDNN: ") + call +
                 " failed: " + dnn_.cudnnGetErrorString(s));
  }

private:
  const Cudnn &dnn_;
  KernelSpec &spec_;
};

Status cudnnError(const Cudnn &dnn, cudnnStatus_t s, int64_t id,
                  const std::string &op, const char *call) {
  return makeError(
      s == CUDNN_STATUS_ALLOC_FAILED ? CLEAVE_OUT_OF_MEMORY : CLEAVE_INTERNAL,
      kernelName(id, op), ": ", call, " failed: ", dnn.cudnnGetErrorString(s));
}

class CudnnConvolution final : public CudaKernel {
public:
  CudnnConvolution(KernelSpec &spec, Libraries &libs, KernelKind kind)
      : CudaKernel(kind, spec.id(), spec.op()), libs_(libs) {
    const ConvEntry e = readConvEntry(spec);
    checkBf16Convolution(spec, kind, e);
    const bool bf16 = e.bf16;
    const int64_t n = e.n, c = e.c, h = e.h, w = e.w, o = e.o, kh = e.kh,
                  kw = e.kw, oh = e.oh, ow = e.ow, groups = e.groups;
    const auto &strides = e.strides, &dilations = e.dilations;
    const auto &padding = e.padding;
    hasBias_ = e.bias;
    relu_ = e.relu;
    accumulate_ = e.accumulate;

    const Cudnn &dnn = *libs.dnn;
    CudnnCheck check(dnn, spec);
    check(src_.create(dnn.cudnnCreateTensorDescriptor,
                      dnn.cudnnDestroyTensorDescriptor),
          "cudnnCreateTensorDescriptor");
    check(dst_.create(dnn.cudnnCreateTensorDescriptor,
                      dnn.cudnnDestroyTensorDescriptor),
          "cudnnCreateTensorDescriptor");
    check(bias_.create(dnn.cudnnCreateTensorDescriptor,
                       dnn.cudnnDestroyTensorDescriptor),
          "cudnnCreateTensorDescriptor");
    check(wei_.create(dnn.cudnnCreateFilterDescriptor,
                      dnn.cudnnDestroyFilterDescriptor),
          "cudnnCreateFilterDescriptor");
    check(conv_.create(dnn.cudnnCreateConvolutionDescriptor,
                       dnn.cudnnDestroyConvolutionDescriptor),
          "cudnnCreateConvolutionDescriptor");
    // Every tensor f32, or every one bf16 (checkBf16Convolution); the
    // products are summed in f32 either way.
    const auto f32 = CUDNN_DATA_FLOAT;
    const auto type = bf16 ? CUDNN_DATA_BFLOAT16 : f32;
    const auto nchw = CUDNN_TENSOR_NCHW;
    check(dnn.cudnnSetTensor4dDescriptor(src_, nchw, type, int(n), int(c),
                                         int(h), int(w)),
          "cudnnSetTensor4dDescriptor(src)");
    check(dnn.cudnnSetTensor4dDescriptor(dst_, nchw, type, int(n), int(o),
                                         int(oh), int(ow)),
          "cudnnSetTensor4dDescriptor(dst)");
    check(dnn.cudnnSetTensor4dDescriptor(bias_, nchw, f32, 1, int(o), 1, 1),
          "cudnnSetTensor4dDescriptor(bias)");
    check(dnn.cudnnSetFilter4dDescriptor(wei_, type, nchw, int(o),
                                         int(c / groups), int(kh), int(kw)),
          "cudnnSetFilter4dDescriptor");
    check(dnn.cudnnSetConvolution2dDescriptor(
              conv_, int(padding[0]), int(padding[1]), int(strides[0]),
              int(strides[1]), int(dilations[0]), int(dilations[1]),
              CUDNN_CROSS_CORRELATION, f32),
          "cudnnSetConvolution2dDescriptor");
    check(dnn.cudnnSetConvolutionGroupCount(conv_, int(groups)),
          "cudnnSetConvolutionGroupCount");
    // f32: FMA math, which forbids TF32. bf16: tensor ops, which bf16
    // tensors need; the chosen algorithm's math type is set below.
    check(dnn.cudnnSetConvolutionMathType(conv_, bf16 ? CUDNN_TENSOR_OP_MATH
                                                      : CUDNN_FMA_MATH),
          "cudnnSetConvolutionMathType");
    int dn = 0, dc = 0, dh = 0, dw = 0;
    check(dnn.cudnnGetConvolution2dForwardOutputDim(conv_, src_, wei_, &dn, &dc,
                                                    &dh, &dw),
          "cudnnGetConvolution2dForwardOutputDim");
    checkCudnnPadding(spec, padding, dh, dw, oh, ow);
    if (relu_) {
      check(act_.create(dnn.cudnnCreateActivationDescriptor,
                        dnn.cudnnDestroyActivationDescriptor),
            "cudnnCreateActivationDescriptor");
      check(dnn.cudnnSetActivationDescriptor(act_, CUDNN_ACTIVATION_RELU,
                                             CUDNN_NOT_PROPAGATE_NAN, 0.0),
            "cudnnSetActivationDescriptor");
    }

    // The heuristics' first choice that needs no more workspace than it
    // says; chosen once.
    cudnnHandle_t hd = libs.dnnHandle;
    int found = 0;
    switch (kind) {
    case KernelKind::ConvolutionForward: {
      cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
      check(dnn.cudnnGetConvolutionForwardAlgorithm_v7(
                hd, src_, wei_, conv_, dst_, CUDNN_CONVOLUTION_FWD_ALGO_COUNT,
                &found, perf),
            "cudnnGetConvolutionForwardAlgorithm_v7");
      fwd_ = pick(spec, check, perf, found, bf16);
      check(dnn.cudnnGetConvolutionForwardWorkspaceSize(
                hd, src_, wei_, conv_, dst_, fwd_, &workspace_),
            "cudnnGetConvolutionForwardWorkspaceSize");
      break;
    }
    case KernelKind::ConvolutionBackwardData: {
      cudnnConvolutionBwdDataAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
      check(dnn.cudnnGetConvolutionBackwardDataAlgorithm_v7(
                hd, wei_, dst_, conv_, src_,
                CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &found, perf),
            "cudnnGetConvolutionBackwardDataAlgorithm_v7");
      bwdData_ = pick(spec, check, perf, found, bf16);
      check(dnn.cudnnGetConvolutionBackwardDataWorkspaceSize(
                hd, wei_, dst_, conv_, src_, bwdData_, &workspace_),
            "cudnnGetConvolutionBackwardDataWorkspaceSize");
      break;
    }
    default: {
      cudnnConvolutionBwdFilterAlgoPerf_t
          perf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
      check(dnn.cudnnGetConvolutionBackwardFilterAlgorithm_v7(
                hd, src_, dst_, conv_, wei_,
                CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &found, perf),
            "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
      bwdFilter_ = pick(spec, check, perf, found, bf16);
      check(dnn.cudnnGetConvolutionBackwardFilterWorkspaceSize(
                hd, src_, dst_, conv_, wei_, bwdFilter_, &workspace_),
            "cudnnGetConvolutionBackwardFilterWorkspaceSize");
      break;
    }
    }
  }

  size_t workspaceBytes() const override { return workspace_; }

  Status run(const void *in0, const void *in1, const float *bias, void *out,
             void *workspace) {
    if (!in0 || !in1 || !out)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": a NULL tensor was passed");
    if (hasBias_ && !bias)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": the entry has a bias but NULL was passed");
    const Cudnn &dnn = *libs_.dnn;
    cudnnHandle_t hd = libs_.dnnHandle;
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t s;
    switch (kind) {
    case KernelKind::ConvolutionForward:
      s = dnn.cudnnConvolutionForward(hd, &one, src_, in0, wei_, in1, conv_,
                                      fwd_, workspace, workspace_, &zero, dst_,
                                      out);
      if (s != CUDNN_STATUS_SUCCESS)
        return cudnnError(dnn, s, id, op, "cudnnConvolutionForward");
      if (hasBias_) {
        s = dnn.cudnnAddTensor(hd, &one, bias_, bias, &one, dst_, out);
        if (s != CUDNN_STATUS_SUCCESS)
          return cudnnError(dnn, s, id, op, "cudnnAddTensor");
      }
      if (relu_) {
        s = dnn.cudnnActivationForward(hd, act_, &one, dst_, out, &zero, dst_,
                                       out);
        if (s != CUDNN_STATUS_SUCCESS)
          return cudnnError(dnn, s, id, op, "cudnnActivationForward");
      }
      return Status::success();
    case KernelKind::ConvolutionBackwardData:
      // in0 is diff_dst, in1 the weights.
      s = dnn.cudnnConvolutionBackwardData(hd, &one, wei_, in1, dst_, in0,
                                           conv_, bwdData_, workspace,
                                           workspace_, &zero, src_, out);
      return s == CUDNN_STATUS_SUCCESS
                 ? Status::success()
                 : cudnnError(dnn, s, id, op, "cudnnConvolutionBackwardData");
    default: {
      // in0 is src, in1 diff_dst.
      const float beta = accumulate_ ? 1.0f : 0.0f;
      s = dnn.cudnnConvolutionBackwardFilter(hd, &one, src_, in0, dst_, in1,
                                             conv_, bwdFilter_, workspace,
                                             workspace_, &beta, wei_, out);
      return s == CUDNN_STATUS_SUCCESS
                 ? Status::success()
                 : cudnnError(dnn, s, id, op, "cudnnConvolutionBackwardFilter");
    }
    }
  }

private:
  /// The heuristics' first choice that is deterministic and, in f32, not a
  /// tensor-op algorithm (firstExactAlgorithm). A bf16 convolution takes
  /// tensor-op algorithms too, and its descriptor then gets the chosen
  /// algorithm's math type, which cuDNN runs it with.
  template <typename Perf>
  decltype(Perf::algo) pick(KernelSpec &spec, const CudnnCheck &check,
                            const Perf *perf, int found, bool bf16) {
    int i =
        bf16 ? firstExactAlgorithm(
                   perf, found, CUDNN_STATUS_SUCCESS, CUDNN_DETERMINISTIC,
                   {CUDNN_TENSOR_OP_MATH, CUDNN_DEFAULT_MATH, CUDNN_FMA_MATH})
             : firstExactAlgorithm(perf, found, CUDNN_STATUS_SUCCESS,
                                   CUDNN_DETERMINISTIC,
                                   {CUDNN_FMA_MATH, CUDNN_DEFAULT_MATH});
    if (i < 0)
      spec.fail(bf16 ? "cuDNN has no deterministic algorithm for this bf16 "
                       "convolution"
                     : "cuDNN has no deterministic algorithm without tensor "
                       "ops (f32 math, no TF32) for this convolution");
    if (bf16)
      check(libs_.dnn->cudnnSetConvolutionMathType(conv_, perf[i].mathType),
            "cudnnSetConvolutionMathType");
    return perf[i].algo;
  }

  Libraries &libs_;
  bool hasBias_ = false, relu_ = false, accumulate_ = false;
  OwnedDnn<cudnnTensorDescriptor_t> src_, dst_, bias_;
  OwnedDnn<cudnnFilterDescriptor_t> wei_;
  OwnedDnn<cudnnConvolutionDescriptor_t> conv_;
  OwnedDnn<cudnnActivationDescriptor_t> act_;
  cudnnConvolutionFwdAlgo_t fwd_ = {};
  cudnnConvolutionBwdDataAlgo_t bwdData_ = {};
  cudnnConvolutionBwdFilterAlgo_t bwdFilter_ = {};
  size_t workspace_ = 0;
};

class CudnnPooling final : public CudaKernel {
public:
  CudnnPooling(KernelSpec &spec, Libraries &libs, KernelKind kind, bool max)
      : CudaKernel(kind, spec.id(), spec.op()), libs_(libs), max_(max) {
    const PoolEntry e = readPoolEntry(spec);
    const int64_t n = e.n, c = e.c, h = e.h, w = e.w, oh = e.oh, ow = e.ow;
    const auto &kernel = e.kernel, &strides = e.strides;
    const auto &dilations = e.dilations;
    const auto &padding = e.padding;
    const bool includePad = e.includePad;
    for (int d = 0; d < 2; ++d) {
      if (kernel[d] > 1 && dilations[d] > 1)
        spec.fail("cuDNN pooling has no dilation (the entry has " +
                  std::to_string(dilations[d]) + " along " +
                  (d == 0 ? "h" : "w") +
                  "); this model does not run on a GPU yet");
      // A window of padding only has no max and no average (the oneDNN
      // kernel refuses it too, in more detail).
      if (padding[d] >= kernel[d] || padding[d + 2] >= kernel[d])
        spec.fail(std::string("padding along ") + (d == 0 ? "h" : "w") +
                  " reaches a whole window: some output pools only padding");
    }
    const Cudnn &dnn = *libs.dnn;
    CudnnCheck check(dnn, spec);
    check(src_.create(dnn.cudnnCreateTensorDescriptor,
                      dnn.cudnnDestroyTensorDescriptor),
          "cudnnCreateTensorDescriptor");
    check(dst_.create(dnn.cudnnCreateTensorDescriptor,
                      dnn.cudnnDestroyTensorDescriptor),
          "cudnnCreateTensorDescriptor");
    check(pool_.create(dnn.cudnnCreatePoolingDescriptor,
                       dnn.cudnnDestroyPoolingDescriptor),
          "cudnnCreatePoolingDescriptor");
    check(dnn.cudnnSetTensor4dDescriptor(src_, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, int(n), int(c),
                                         int(h), int(w)),
          "cudnnSetTensor4dDescriptor(src)");
    check(dnn.cudnnSetTensor4dDescriptor(dst_, CUDNN_TENSOR_NCHW,
                                         CUDNN_DATA_FLOAT, int(n), int(c),
                                         int(oh), int(ow)),
          "cudnnSetTensor4dDescriptor(dst)");
    cudnnPoolingMode_t mode =
        max ? CUDNN_POOLING_MAX_DETERMINISTIC
            : (includePad ? CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING
                          : CUDNN_POOLING_AVERAGE_COUNT_EXCLUDE_PADDING);
    check(dnn.cudnnSetPooling2dDescriptor(pool_, mode, CUDNN_NOT_PROPAGATE_NAN,
                                          int(kernel[0]), int(kernel[1]),
                                          int(padding[0]), int(padding[1]),
                                          int(strides[0]), int(strides[1])),
          "cudnnSetPooling2dDescriptor");
    int dn = 0, dc = 0, dh = 0, dw = 0;
    check(
        dnn.cudnnGetPooling2dForwardOutputDim(pool_, src_, &dn, &dc, &dh, &dw),
        "cudnnGetPooling2dForwardOutputDim");
    checkCudnnPadding(spec, padding, dh, dw, oh, ow);
    // Backward wants the forward output: max pooling recomputes it into the
    // workspace, average pooling never reads it (nor src).
    if (kind == KernelKind::PoolingBackward && max)
      workspace_ = size_t(n * c * oh * ow) * sizeof(float);
  }

  size_t workspaceBytes() const override { return workspace_; }

  Status forward(const float *src, float *dst) {
    if (!src || !dst)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": a NULL tensor was passed for src or dst");
    const float one = 1.0f, zero = 0.0f;
    cudnnStatus_t s = libs_.dnn->cudnnPoolingForward(
        libs_.dnnHandle, pool_, &one, src_, src, &zero, dst_, dst);
    return s == CUDNN_STATUS_SUCCESS
               ? Status::success()
               : cudnnError(*libs_.dnn, s, id, op, "cudnnPoolingForward");
  }

  Status backward(const float *src, const float *diffDst, float *diffSrc,
                  void *workspace) {
    if (!diffDst || !diffSrc || (max_ && !src))
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       max_ ? ": a NULL tensor was passed for src, diff_dst "
                              "or diff_src"
                            : ": a NULL tensor was passed for diff_dst or "
                              "diff_src");
    const float one = 1.0f, zero = 0.0f;
    const float *y = diffDst;
    if (max_) {
      auto *dst = static_cast<float *>(workspace);
      cudnnStatus_t s = libs_.dnn->cudnnPoolingForward(
          libs_.dnnHandle, pool_, &one, src_, src, &zero, dst_, dst);
      if (s != CUDNN_STATUS_SUCCESS)
        return cudnnError(*libs_.dnn, s, id, op, "cudnnPoolingForward");
      y = dst;
    }
    cudnnStatus_t s = libs_.dnn->cudnnPoolingBackward(
        libs_.dnnHandle, pool_, &one, dst_, y, dst_, diffDst, src_,
        src ? src : diffSrc, &zero, src_, diffSrc);
    return s == CUDNN_STATUS_SUCCESS
               ? Status::success()
               : cudnnError(*libs_.dnn, s, id, op, "cudnnPoolingBackward");
  }

private:
  Libraries &libs_;
  bool max_;
  OwnedDnn<cudnnTensorDescriptor_t> src_, dst_;
  OwnedDnn<cudnnPoolingDescriptor_t> pool_;
  size_t workspace_ = 0;
};

//===----------------------------------------------------------------------===//
// Attention on cuDNN's graph API
//===----------------------------------------------------------------------===//

using BackendDescriptor = cudnnBackendDescriptor_t;
using OwnedBackendDescriptor = OwnedDnn<BackendDescriptor>;

/// A 4-D tensor's dimensions and strides, in elements.
struct Layout {
  std::array<int64_t, 4> dims, strides;
};

/// `dims` stored row-major.
Layout packed(const std::array<int64_t, 4> &dims) {
  Layout l{dims, {}};
  int64_t stride = 1;
  for (int d = 3; d >= 0; --d) {
    l.strides[d] = stride;
    stride *= dims[d];
  }
  return l;
}

/// The same memory with its last two dimensions swapped: a transposed view.
Layout transposed(Layout l) {
  std::swap(l.dims[2], l.dims[3]);
  std::swap(l.strides[2], l.strides[3]);
  return l;
}

/// `l` with its last dimension reduced to 1, stored row-major.
Layout rowwise(const Layout &l) {
  return packed({l.dims[0], l.dims[1], l.dims[2], 1});
}

/// The uids of the tensors a call binds; virtual tensors are numbered from
/// kFirstVirtualUid.
enum : int64_t {
  kUidQ = 1,
  kUidK,
  kUidV,
  kUidMask,
  kUidO,
  kUidStats,
  kUidDO,
  kUidDQ,
  kUidDK,
  kUidDV,
  kUidSoftmaxSum,
  kUidDQAccum,
  kUidScale,
  kUidNegInf,
  kUidOne,
  kUidKeep,
  kUidDropoutScale,
  kFirstVirtualUid = 100,
};

/// The alignment every bound tensor declares (cuDNN's SDPA needs 16 bytes).
constexpr int64_t kAttentionAlignment = 16;

/// `s`'s name and, when cuDNN left one, its message for the last failure.
std::string cudnnFailure(const Cudnn &dnn, cudnnStatus_t s) {
  std::array<char, 1024> message = {};
  dnn.cudnnGetLastErrorString(message.data(), message.size());
  std::string out = dnn.cudnnGetErrorString(s);
  if (message[0])
    out += std::string(" (") + message.data() + ")";
  return out;
}

/// A tensor of a graph being built: its finalized descriptor and layout.
struct GraphTensor {
  BackendDescriptor desc;
  Layout layout;
};

/// Makes the backend descriptors of one operation graph, each finalized as
/// it is made and owned by `owned` (the kernel's), and fails the entry with
/// cuDNN's status and message when a call fails. Operations are listed in
/// the order they are made, which is the graph's.
class GraphBuilder {
public:
  GraphBuilder(const Cudnn &dnn, KernelSpec &spec,
               std::vector<std::unique_ptr<OwnedBackendDescriptor>> &owned)
      : dnn_(dnn), spec_(spec), owned_(owned) {}

  void check(cudnnStatus_t s, const std::string &call) const {
    if (s != CUDNN_STATUS_SUCCESS)
      spec_.fail("cuDNN: " + call + " failed: " + cudnnFailure(dnn_, s));
  }

  BackendDescriptor make(cudnnBackendDescriptorType_t type) {
    auto d = std::make_unique<OwnedBackendDescriptor>();
    check(d->create(
              [&](BackendDescriptor *out) {
                return dnn_.cudnnBackendCreateDescriptor(type, out);
              },
              dnn_.cudnnBackendDestroyDescriptor),
          "cudnnBackendCreateDescriptor(type " + std::to_string(type) + ")");
    owned_.push_back(std::move(d));
    return *owned_.back();
  }

  void set(BackendDescriptor d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, int64_t count,
           const void *values) {
    check(dnn_.cudnnBackendSetAttribute(d, name, type, count, values),
          "cudnnBackendSetAttribute(attribute " + std::to_string(name) + ")");
  }
  template <typename T>
  void set(BackendDescriptor d, cudnnBackendAttributeName_t name,
           cudnnBackendAttributeType_t type, const T &value) {
    set(d, name, type, 1, &value);
  }

  void finalize(BackendDescriptor d, const char *what) {
    check(dnn_.cudnnBackendFinalize(d), std::string("finalizing ") + what);
  }

  enum class Kind { Bound, Virtual, ByValue };

  /// A tensor the caller binds (Bound), one the graph keeps to itself
  /// (Virtual), or a scalar passed by a host pointer when the graph runs
  /// (ByValue).
  GraphTensor tensor(int64_t uid, cudnnDataType_t type, const Layout &l,
                     Kind kind = Kind::Bound) {
    BackendDescriptor d = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    set(d, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, type);
    set(d, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, l.dims.data());
    set(d, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, l.strides.data());
    set(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, uid);
    set(d, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64,
        kAttentionAlignment);
    const bool yes = true;
    if (kind == Kind::Virtual)
      set(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, yes);
    if (kind == Kind::ByValue)
      set(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, yes);
    finalize(d, "a tensor descriptor");
    return {d, l};
  }
  GraphTensor virtualTensor(cudnnDataType_t type, const Layout &l) {
    return tensor(nextVirtualUid_++, type, l, Kind::Virtual);
  }
  /// An f32 scalar read from a host pointer at each execution.
  GraphTensor scalar(int64_t uid) {
    return tensor(uid, CUDNN_DATA_FLOAT, packed({1, 1, 1, 1}), Kind::ByValue);
  }

  /// y = mode(x[, b[, t]]), computed in `math`; y is a new f32 virtual
  /// tensor shaped like x unless given.
  GraphTensor pointwise(cudnnPointwiseMode_t mode, const GraphTensor &x,
                        const GraphTensor *b = nullptr,
                        const GraphTensor *t = nullptr,
                        std::optional<GraphTensor> y = std::nullopt,
                        cudnnDataType_t math = CUDNN_DATA_FLOAT,
                        std::optional<int64_t> axis = std::nullopt) {
    if (!y)
      y = virtualTensor(CUDNN_DATA_FLOAT, packed(x.layout.dims));
    BackendDescriptor pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, mode);
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, math);
    if (axis)
      set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, *axis);
    finalize(pw, "a pointwise descriptor");
    BackendDescriptor op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
        CUDNN_TYPE_BACKEND_DESCRIPTOR, pw);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        x.desc);
    if (b)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, b->desc);
    if (t)
      set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, t->desc);
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        y->desc);
    finalize(op, "a pointwise operation");
    ops_.push_back(op);
    return *y;
  }
  GraphTensor binary(cudnnPointwiseMode_t mode, const GraphTensor &x,
                     const GraphTensor &b,
                     std::optional<GraphTensor> y = std::nullopt) {
    return pointwise(mode, x, &b, nullptr, y);
  }

  /// c = a b over the last two dimensions, summed in f32; c is a new f32
  /// virtual tensor unless given.
  GraphTensor matmul(const GraphTensor &a, const GraphTensor &b,
                     std::optional<GraphTensor> c = std::nullopt) {
    if (!c)
      c = virtualTensor(CUDNN_DATA_FLOAT,
                        packed({a.layout.dims[0], a.layout.dims[1],
                                a.layout.dims[2], b.layout.dims[3]}));
    BackendDescriptor mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
        CUDNN_DATA_FLOAT);
    finalize(mm, "a matmul descriptor");
    BackendDescriptor op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        a.desc);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        b.desc);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        c->desc);
    set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        mm);
    finalize(op, "a matmul operation");
    ops_.push_back(op);
    return *c;
  }

  /// `reduction` of each row of x (its last dimension), in f32.
  GraphTensor reduceRows(cudnnReduceTensorOp_t reduction, const GraphTensor &x,
                         std::optional<GraphTensor> y = std::nullopt) {
    if (!y)
      y = virtualTensor(CUDNN_DATA_FLOAT, rowwise(x.layout));
    BackendDescriptor r = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    set(r, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE,
        reduction);
    set(r, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
        CUDNN_DATA_FLOAT);
    finalize(r, "a reduction descriptor");
    BackendDescriptor op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        x.desc);
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        y->desc);
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        r);
    finalize(op, "a reduction operation");
    ops_.push_back(op);
    return *y;
  }

  /// x's memory seen through another layout (a transpose, when `l` swaps
  /// x's last two dimensions and strides), as a virtual tensor of `type`.
  GraphTensor reshape(const GraphTensor &x, cudnnDataType_t type,
                      const Layout &l) {
    GraphTensor y = virtualTensor(type, l);
    BackendDescriptor op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        x.desc);
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        y.desc);
    finalize(op, "a reshape operation");
    ops_.push_back(op);
    return y;
  }

  /// The operation graph of every operation made so far.
  BackendDescriptor graph(cudnnHandle_t handle) {
    BackendDescriptor g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
        int64_t(ops_.size()), ops_.data());
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, handle);
    finalize(g, "the operation graph");
    return g;
  }
  size_t operations() const { return ops_.size(); }

private:
  const Cudnn &dnn_;
  KernelSpec &spec_;
  std::vector<std::unique_ptr<OwnedBackendDescriptor>> &owned_;
  std::vector<BackendDescriptor> ops_;
  int64_t nextVirtualUid_ = kFirstVirtualUid;
};

/// Fused attention on cuDNN's backend graph API, the graphs cudnn-frontend
/// builds for its composite SDPA nodes (matmuls, pointwise operations and
/// row reductions, which cuDNN fuses into one flash-attention kernel): see
/// the file comment. The graph, its engine and its execution plan are made
/// when the session is created; a call binds the pointers in a variant pack
/// and executes the plan on the handle's stream.
class CudnnAttention final : public CudaKernel {
public:
  CudnnAttention(KernelSpec &spec, Libraries &libs, KernelKind kind)
      : CudaKernel(kind, spec.id(), spec.op()), libs_(libs),
        e_(readSdpaEntry(spec)), scale_(float(e_.scale)),
        dropoutScale_(float(1.0 / (1.0 - e_.dropout))),
        // cudnn-frontend's softmax_sum with dropout: rowsum(dO o) times
        // 1 - r, the inverse of the dropout scale (see buildBackward).
        one_(float(1.0 - e_.dropout)) {
    checkSupported(spec);
    std::vector<std::string> refusals;
    if (!tryGraph(spec, refusals)) {
      if (kind == KernelKind::AttentionForward)
        spec.fail(noEngine(listed(refusals)));
      // No deterministic engine for cudnn-frontend's deterministic backward:
      // its default graph, whose engines may sum dQ with atomics.
      dq_ = DqWrite::Accumulated;
      std::vector<std::string> accumulated;
      if (!tryGraph(spec, accumulated))
        spec.fail(noEngine("with dQ written directly, " + listed(refusals) +
                           "; with dQ_accum, " + listed(accumulated)));
    }
    workspace_ = engineWorkspace_;
    if (kind == KernelKind::AttentionBackward) {
      // The backward graph's f32 buffers follow cuDNN's own workspace.
      softmaxSumOffset_ = alignUp(workspace_);
      workspace_ =
          softmaxSumOffset_ + size_t(e_.batch * e_.seqQ) * sizeof(float);
      if (dq_ == DqWrite::Accumulated) {
        dqAccumOffset_ = alignUp(workspace_);
        workspace_ = dqAccumOffset_ +
                     size_t(e_.batch * e_.seqQ * e_.headDim) * sizeof(float);
        // cuDNN before 9.6 adds into dQ_accum without clearing it first
        // (cudnn-frontend clears it for those versions only).
        clearDqAccum_ = libs.dnn->cudnnGetVersion() < 90600;
      }
    }
  }

  size_t workspaceBytes() const override { return workspace_; }

  std::string describe() const override {
    return op + " on cuDNN: a graph of " + std::to_string(operations_) +
           " operations, engine " + std::to_string(engineIndex_) +
           " (heuristics " + engineSource_ + "), " +
           (nondeterministic_ ? "non-deterministic (dQ summed with atomics), "
                              : "") +
           std::to_string(engineWorkspace_) + " bytes of workspace; " + shape();
  }

  std::string note() const override {
    if (!nondeterministic_)
      return {};
    return kernelName(id, op) +
           ": cuDNN has no deterministic engine for this attention gradient "
           "here; it runs engine " +
           std::to_string(engineIndex_) +
           ", which sums dq with atomics, so dq may differ in the last bits "
           "from run to run (--fused-attention=false spells attention out "
           "deterministically)";
  }

  Status forward(const void *q, const void *k, const void *v, const void *mask,
                 const void *keep, void *o, float *lse, void *workspace) {
    Bindings b;
    b.add(kUidQ, "q", q);
    b.add(kUidK, "k", k);
    b.add(kUidV, "v", v);
    b.add(kUidO, "o", o);
    b.add(kUidStats, "lse", lse);
    if (e_.mask)
      b.add(kUidMask, "mask", mask);
    if (e_.dropout != 0)
      b.add(kUidKeep, "keep", keep);
    return execute(b, workspace);
  }

  Status backward(const AttentionGradients &x, void *workspace) {
    Bindings b;
    b.add(kUidQ, "q", x.q);
    b.add(kUidK, "k", x.k);
    b.add(kUidV, "v", x.v);
    b.add(kUidO, "o", x.o);
    b.add(kUidStats, "lse", x.lse);
    b.add(kUidDO, "d_o", x.dO);
    b.add(kUidDQ, "dq", x.dq);
    b.add(kUidDK, "dk", x.dk);
    b.add(kUidDV, "dv", x.dv);
    if (e_.mask)
      b.add(kUidMask, "mask", x.mask);
    if (e_.dropout != 0)
      b.add(kUidKeep, "keep", x.keep);
    auto *bytes = static_cast<unsigned char *>(workspace);
    b.add(kUidSoftmaxSum, "softmax_sum", bytes + softmaxSumOffset_);
    if (dq_ == DqWrite::Accumulated)
      b.add(kUidDQAccum, "dQ_accum", bytes + dqAccumOffset_);
    if (clearDqAccum_) {
      Status cleared = libs_.device.compute().fill32(
          bytes + dqAccumOffset_, 0, size_t(e_.batch * e_.seqQ * e_.headDim));
      if (!cleared.ok())
        return cleared;
    }
    return execute(b, workspace);
  }

private:
  /// How the backward graph writes dQ = dS k: straight into dq, as
  /// cudnn-frontend's deterministic graph does, or summed into the f32
  /// dQ_accum and then rounded to dq, as its default graph does (whose
  /// engines may add with atomics, in any order).
  enum class DqWrite { Direct, Accumulated };

  /// The uids and pointers of one execution.
  struct Bindings {
    void add(int64_t uid, const char *name, const void *pointer) {
      uids[count] = uid;
      names[count] = name;
      pointers[count] = const_cast<void *>(pointer);
      ++count;
    }
    /// The backward binds the most: nine tensors, the mask, keep, its
    /// buffers (softmax_sum and dQ_accum) and four scalars.
    static constexpr size_t kMax = 18;
    std::array<int64_t, kMax> uids = {};
    std::array<const char *, kMax> names = {};
    std::array<void *, kMax> pointers = {};
    size_t count = 0;
  };

  static size_t alignUp(size_t bytes) {
    constexpr size_t kAlign = 256;
    return (bytes + kAlign - 1) / kAlign * kAlign;
  }

  std::string shape() const {
    return "batch " + std::to_string(e_.batch) + ", seq_q " +
           std::to_string(e_.seqQ) + ", seq_kv " + std::to_string(e_.seqKv) +
           ", head_dim " + std::to_string(e_.headDim) + ", value_dim " +
           std::to_string(e_.valueDim) + (e_.causal ? ", causal" : "") +
           (e_.mask ? ", mask" : "") +
           (e_.dropout != 0 ? ", dropout " + std::to_string(e_.dropout) : "");
  }

  /// What cuDNN's fused attention cannot run, refused before a graph is
  /// made (cudnn-frontend's own checks; cuDNN would refuse the graph with a
  /// less helpful status).
  void checkSupported(KernelSpec &spec) const {
    if (!e_.bf16)
      spec.fail("cuDNN's fused attention needs bf16 tensors (io_type bf16); "
                "compile with --precision=bf16 or let the compiler decompose "
                "attention");
    for (auto [name, dim] :
         {std::pair<const char *, int64_t>{"head_dim", e_.headDim},
          {"value_dim", e_.valueDim}})
      if (dim % 8 != 0 || dim > 256)
        spec.fail(std::string("cuDNN's fused attention needs a ") + name +
                  " that is a multiple of 8 and at most 256, this entry has " +
                  std::to_string(dim) +
                  "; let the compiler decompose attention");
    if (kind == KernelKind::AttentionBackward && e_.seqQ == 1 && e_.seqKv == 1)
      spec.fail("cuDNN's fused attention backward has no kernel for seq_q = "
                "seq_kv = 1; let the compiler decompose attention");
  }

  /// scale · q kᵀ (+ mask): the scores before causal masking.
  GraphTensor scaledScores(GraphBuilder &g, const GraphTensor &q,
                           const GraphTensor &kT, const GraphTensor &scale) {
    GraphTensor s = g.matmul(q, kT);
    s = g.binary(CUDNN_POINTWISE_MUL, s, scale);
    if (e_.mask) {
      GraphTensor mask = g.tensor(kUidMask, CUDNN_DATA_BFLOAT16,
                                  packed({1, 1, e_.seqQ, e_.seqKv}));
      s = g.binary(CUDNN_POINTWISE_ADD, s, mask);
    }
    return s;
  }

  /// x with -inf where the key comes after the query (column > row), the
  /// top-left aligned causal mask.
  GraphTensor causal(GraphBuilder &g, const GraphTensor &x) {
    GraphTensor negInf = g.scalar(kUidNegInf);
    auto index = [&](int64_t axis) {
      GraphTensor i = g.virtualTensor(CUDNN_DATA_INT32, x.layout);
      return g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, nullptr, i,
                         CUDNN_DATA_FLOAT, axis);
    };
    GraphTensor row = index(2);
    GraphTensor column = index(3);
    GraphTensor keep = g.pointwise(
        CUDNN_POINTWISE_CMP_GE, row, &column, nullptr,
        g.virtualTensor(CUDNN_DATA_BOOLEAN, x.layout), CUDNN_DATA_BOOLEAN);
    return g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, &negInf, &keep);
  }

  /// cudnn-frontend's forward with stats: the softmax as max, exp(x - max),
  /// its sum and their quotient, and lse = max + log(sum).
  void buildForward(GraphBuilder &g) {
    const int64_t b = e_.batch, T = e_.seqQ, S = e_.seqKv, D = e_.headDim,
                  Dv = e_.valueDim;
    const auto bf16 = CUDNN_DATA_BFLOAT16;
    GraphTensor q = g.tensor(kUidQ, bf16, packed({1, b, T, D}));
    GraphTensor kT = g.tensor(kUidK, bf16, transposed(packed({1, b, S, D})));
    GraphTensor v = g.tensor(kUidV, bf16, packed({1, b, S, Dv}));
    GraphTensor s = scaledScores(g, q, kT, g.scalar(kUidScale));
    if (e_.causal)
      s = causal(g, s);
    GraphTensor max = g.reduceRows(CUDNN_REDUCE_TENSOR_MAX, s);
    GraphTensor shifted = g.binary(CUDNN_POINTWISE_SUB, s, max);
    GraphTensor exp = g.pointwise(CUDNN_POINTWISE_EXP, shifted);
    GraphTensor sum = g.reduceRows(CUDNN_REDUCE_TENSOR_ADD, exp);
    GraphTensor log = g.pointwise(CUDNN_POINTWISE_LOG, sum);
    g.binary(CUDNN_POINTWISE_ADD, max, log,
             g.tensor(kUidStats, CUDNN_DATA_FLOAT, rowwise(s.layout)));
    // The second product's first operand in the tensors' type, as cuDNN's
    // fused kernels take it; with dropout, times keep and 1 / (1 - r), as
    // cudnn-frontend's set_dropout(mask, scale) multiplies.
    if (e_.dropout == 0) {
      GraphTensor p = g.binary(CUDNN_POINTWISE_DIV, exp, sum,
                               g.virtualTensor(bf16, s.layout));
      g.matmul(p, v, g.tensor(kUidO, bf16, packed({1, b, T, Dv})));
      return;
    }
    GraphTensor p = g.binary(CUDNN_POINTWISE_DIV, exp, sum);
    p = g.binary(CUDNN_POINTWISE_MUL, p, keepTensor(g));
    p = g.binary(CUDNN_POINTWISE_MUL, p, g.scalar(kUidDropoutScale),
                 g.virtualTensor(bf16, s.layout));
    g.matmul(p, v, g.tensor(kUidO, bf16, packed({1, b, T, Dv})));
  }

  /// The bound dropout mask, [1, batch, T, S] in bf16: 1 kept, 0 dropped.
  GraphTensor keepTensor(GraphBuilder &g) {
    return g.tensor(kUidKeep, CUDNN_DATA_BFLOAT16,
                    packed({1, e_.batch, e_.seqQ, e_.seqKv}));
  }

  /// cudnn-frontend's backward: P recomputed from q, k and lse;
  /// softmax_sum = rowsum(dO o) (f32) is a bound buffer, and so is
  /// dQ_accum when dQ is summed into it (dq_).
  void buildBackward(GraphBuilder &g) {
    const int64_t b = e_.batch, T = e_.seqQ, S = e_.seqKv, D = e_.headDim,
                  Dv = e_.valueDim;
    const auto bf16 = CUDNN_DATA_BFLOAT16, f32 = CUDNN_DATA_FLOAT;
    GraphTensor q = g.tensor(kUidQ, bf16, packed({1, b, T, D}));
    GraphTensor kT = g.tensor(kUidK, bf16, transposed(packed({1, b, S, D})));
    GraphTensor vT = g.tensor(kUidV, bf16, transposed(packed({1, b, S, Dv})));
    GraphTensor o = g.tensor(kUidO, bf16, packed({1, b, T, Dv}));
    GraphTensor dO = g.tensor(kUidDO, bf16, packed({1, b, T, Dv}));
    GraphTensor stats = g.tensor(kUidStats, f32, packed({1, b, T, 1}));
    GraphTensor scale = g.scalar(kUidScale), one = g.scalar(kUidOne);

    GraphTensor dOo = g.binary(CUDNN_POINTWISE_MUL, dO, o);
    GraphTensor rowSum = g.reduceRows(CUDNN_REDUCE_TENSOR_ADD, dOo);
    GraphTensor softmaxSum =
        g.binary(CUDNN_POINTWISE_MUL, rowSum, one,
                 g.tensor(kUidSoftmaxSum, f32, packed({1, b, T, 1})));

    GraphTensor s = scaledScores(g, q, kT, scale);
    s = g.binary(CUDNN_POINTWISE_SUB, s, stats);
    if (e_.causal)
      s = causal(g, s);
    GraphTensor p = g.pointwise(CUDNN_POINTWISE_EXP, s);

    // With dropout (keep, r), cudnn-frontend's composite backward: the
    // product with v saw K = P keep / (1 - r); dS = P (keep dP / (1 - r) -
    // rowsum(dO o)) = (P / (1 - r)) (keep dP - (1 - r) rowsum(dO o)), whose
    // second factor subtracts softmax_sum (rowsum(dO o) times 1 - r, the
    // scalar `one_`).
    GraphTensor pScaled = p, pKept = p;
    std::optional<GraphTensor> keep;
    if (e_.dropout != 0) {
      keep = keepTensor(g);
      pScaled = g.binary(CUDNN_POINTWISE_MUL, p, g.scalar(kUidDropoutScale));
      pKept = g.binary(CUDNN_POINTWISE_MUL, pScaled, *keep);
    }

    // dV = Kᵀ dO, with Kᵀ a bf16 view of K.
    GraphTensor pT = g.reshape(pKept, bf16, transposed(pKept.layout));
    g.matmul(pT, dO, g.tensor(kUidDV, bf16, packed({1, b, S, Dv})));

    // dS = scale · P (dO vᵀ - softmax_sum), or with dropout scale · (P /
    // (1 - r)) (keep dO vᵀ - softmax_sum).
    GraphTensor dP = g.matmul(dO, vT);
    if (keep)
      dP = g.binary(CUDNN_POINTWISE_MUL, dP, *keep);
    GraphTensor dS = g.binary(CUDNN_POINTWISE_SUB, dP, softmaxSum);
    dS = g.binary(CUDNN_POINTWISE_MUL, dS, pScaled);
    dS = g.binary(CUDNN_POINTWISE_MUL, dS, scale);

    // dK = dSᵀ q, with dSᵀ a bf16 view of dS.
    GraphTensor dST = g.reshape(dS, bf16, transposed(dS.layout));
    g.matmul(dST, q, g.tensor(kUidDK, bf16, packed({1, b, S, D})));

    // dQ = dS k, written to dq or summed into dQ_accum and then rounded.
    GraphTensor k = g.reshape(kT, f32, packed({1, b, S, D}));
    GraphTensor dQ = g.tensor(kUidDQ, bf16, packed({1, b, T, D}));
    if (dq_ == DqWrite::Direct) {
      g.matmul(dS, k, dQ);
      return;
    }
    GraphTensor dQAccum =
        g.matmul(dS, k, g.tensor(kUidDQAccum, f32, packed({1, b, T, D})));
    g.pointwise(CUDNN_POINTWISE_IDENTITY, dQAccum, nullptr, nullptr, dQ);
  }

  /// Builds the kernel's graph (the backward's with dQ written as dq_ says)
  /// and takes an engine for it; false, with cuDNN's reasons in `refusals`,
  /// when there is none. Descriptors of an earlier attempt are destroyed.
  bool tryGraph(KernelSpec &spec, std::vector<std::string> &refusals) {
    descriptors_.clear();
    GraphBuilder g(*libs_.dnn, spec, descriptors_);
    if (kind == KernelKind::AttentionForward)
      buildForward(g);
    else
      buildBackward(g);
    operations_ = g.operations();
    graph_ = g.graph(libs_.dnnHandle);
    return choosePlan(g, refusals);
  }

  /// Takes the first engine config of cuDNN's heuristics (mode A, then its
  /// fallback list) that is deterministic and whose execution plan
  /// finalizes. Cleave's kernels give the same bits on every run, so a
  /// config with the NONDETERMINISTIC numerical note (atomic accumulation)
  /// is passed over, as for convolutions, except for a backward graph with
  /// dQ_accum: that is the last resort, and describe() and note() say so.
  bool choosePlan(GraphBuilder &g, std::vector<std::string> &refusals) {
    const Cudnn &dnn = *libs_.dnn;
    for (cudnnBackendHeurMode_t mode :
         {CUDNN_HEUR_MODE_A, CUDNN_HEUR_MODE_FALLBACK}) {
      const char *source = mode == CUDNN_HEUR_MODE_A ? "mode A" : "fallback";
      BackendDescriptor heuristics =
          g.make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
      g.set(heuristics, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
            CUDNN_TYPE_BACKEND_DESCRIPTOR, graph_);
      g.set(heuristics, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, mode);
      cudnnStatus_t s = dnn.cudnnBackendFinalize(heuristics);
      if (s != CUDNN_STATUS_SUCCESS) {
        refusals.push_back(std::string("heuristics ") + source + ": " +
                           cudnnFailure(dnn, s));
        continue;
      }
      int64_t count = 0;
      g.check(dnn.cudnnBackendGetAttribute(
                  heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr),
              "counting the heuristics' engine configs");
      std::vector<BackendDescriptor> configs(static_cast<size_t>(count),
                                             nullptr);
      for (BackendDescriptor &config : configs)
        config = g.make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
      g.check(dnn.cudnnBackendGetAttribute(
                  heuristics, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                  CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &count, configs.data()),
              "reading the heuristics' engine configs");
      if (count == 0)
        refusals.push_back(std::string("heuristics ") + source +
                           ": no engine config");
      for (int64_t i = 0; i < count; ++i)
        if (tryConfig(g, configs[size_t(i)], source, refusals))
          return true;
    }
    return false;
  }

  /// The first four of `refusals`, and how many more there are.
  static std::string listed(const std::vector<std::string> &refusals) {
    std::string out;
    for (size_t i = 0; i < refusals.size() && i < 4; ++i)
      out += (i ? "; " : "") + refusals[i];
    if (refusals.size() > 4)
      out += "; and " + std::to_string(refusals.size() - 4) + " more";
    return out;
  }

  std::string noEngine(const std::string &why) const {
    return "cuDNN has no engine for this attention (" + shape() + "): " + why;
  }

  /// Takes `config` if choosePlan may and its plan finalizes; else says
  /// why not in `refusals`.
  bool tryConfig(GraphBuilder &g, BackendDescriptor config, const char *source,
                 std::vector<std::string> &refusals) {
    const Cudnn &dnn = *libs_.dnn;
    OwnedBackendDescriptor engine;
    g.check(engine.create(
                [&](BackendDescriptor *out) {
                  return dnn.cudnnBackendCreateDescriptor(
                      CUDNN_BACKEND_ENGINE_DESCRIPTOR, out);
                },
                dnn.cudnnBackendDestroyDescriptor),
            "cudnnBackendCreateDescriptor(engine)");
    BackendDescriptor engineOut = engine;
    int64_t n = 0;
    g.check(dnn.cudnnBackendGetAttribute(config, CUDNN_ATTR_ENGINECFG_ENGINE,
                                         CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                         &engineOut),
            "reading an engine config's engine");
    int64_t index = -1;
    g.check(dnn.cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX,
                                         CUDNN_TYPE_INT64, 1, &n, &index),
            "reading an engine's index");
    std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT>
        notes = {};
    int64_t noteCount = 0;
    g.check(dnn.cudnnBackendGetAttribute(
                engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                CUDNN_TYPE_NUMERICAL_NOTE, int64_t(notes.size()), &noteCount,
                notes.data()),
            "reading an engine's numerical notes");
    const std::string name = "engine " + std::to_string(index);
    const bool nondeterministic =
        std::find(notes.begin(), notes.begin() + noteCount,
                  CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) !=
        notes.begin() + noteCount;
    if (nondeterministic && dq_ != DqWrite::Accumulated) {
      refusals.push_back(name + " is non-deterministic");
      return false;
    }
    auto plan = std::make_unique<OwnedBackendDescriptor>();
    g.check(plan->create(
                [&](BackendDescriptor *out) {
                  return dnn.cudnnBackendCreateDescriptor(
                      CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, out);
                },
                dnn.cudnnBackendDestroyDescriptor),
            "cudnnBackendCreateDescriptor(execution plan)");
    g.set(*plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
          CUDNN_TYPE_BACKEND_DESCRIPTOR, config);
    cudnnStatus_t s = dnn.cudnnBackendFinalize(*plan);
    if (s != CUDNN_STATUS_SUCCESS) {
      refusals.push_back(name + "'s plan: " + cudnnFailure(dnn, s));
      return false;
    }
    int64_t bytes = 0;
    g.check(dnn.cudnnBackendGetAttribute(
                *plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                CUDNN_TYPE_INT64, 1, &n, &bytes),
            "reading the plan's workspace size");
    plan_ = std::move(plan);
    engineIndex_ = index;
    engineSource_ = source;
    engineWorkspace_ = size_t(bytes);
    nondeterministic_ = nondeterministic;
    return true;
  }

  /// Binds the scalars and `b` and executes the plan.
  Status execute(Bindings &b, void *workspace) {
    for (size_t i = 0; i < b.count; ++i) {
      if (!b.pointers[i])
        return makeError(CLEAVE_INTERNAL, kernelName(id, op), ": ", b.names[i],
                         " is NULL");
      if (reinterpret_cast<uintptr_t>(b.pointers[i]) % kAttentionAlignment)
        return makeError(CLEAVE_INTERNAL, kernelName(id, op), ": ", b.names[i],
                         " is not aligned to ", kAttentionAlignment,
                         " bytes, which cuDNN's fused attention needs");
    }
    // Host pointers, read when the plan is enqueued (so a captured graph
    // replays these values).
    b.add(kUidScale, "scale", &scale_);
    if (e_.causal)
      b.add(kUidNegInf, "-inf", &negInf_);
    if (e_.dropout != 0)
      b.add(kUidDropoutScale, "1 / (1 - dropout)", &dropoutScale_);
    if (kind == KernelKind::AttentionBackward)
      b.add(kUidOne, "1", &one_);
    const Cudnn &dnn = *libs_.dnn;
    OwnedBackendDescriptor pack;
    cudnnStatus_t s = pack.create(
        [&](BackendDescriptor *out) {
          return dnn.cudnnBackendCreateDescriptor(
              CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, out);
        },
        dnn.cudnnBackendDestroyDescriptor);
    const int64_t n = int64_t(b.count);
    if (s == CUDNN_STATUS_SUCCESS)
      s = dnn.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                       CUDNN_TYPE_INT64, n, b.uids.data());
    if (s == CUDNN_STATUS_SUCCESS)
      s = dnn.cudnnBackendSetAttribute(
          pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n,
          b.pointers.data());
    if (s == CUDNN_STATUS_SUCCESS)
      s = dnn.cudnnBackendSetAttribute(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                       CUDNN_TYPE_VOID_PTR, 1, &workspace);
    if (s == CUDNN_STATUS_SUCCESS)
      s = dnn.cudnnBackendFinalize(pack);
    if (s != CUDNN_STATUS_SUCCESS)
      return makeError(
          CLEAVE_INTERNAL, kernelName(id, op),
          ": building the variant pack failed: ", cudnnFailure(dnn, s));
    s = dnn.cudnnBackendExecute(libs_.dnnHandle, *plan_, pack);
    if (s != CUDNN_STATUS_SUCCESS)
      return makeError(CLEAVE_INTERNAL, kernelName(id, op),
                       ": cudnnBackendExecute failed: ", cudnnFailure(dnn, s),
                       " (", describe(), ")");
    return Status::success();
  }

  Libraries &libs_;
  const SdpaEntry e_;
  /// The by-value scalars' host values, bound at each execution.
  const float scale_, dropoutScale_;
  const float negInf_ = -std::numeric_limits<float>::infinity();
  /// rowsum(dO o)'s factor: 1, or 1 - r with dropout.
  const float one_;
  /// Every descriptor of the graph, its heuristics and engine configs.
  std::vector<std::unique_ptr<OwnedBackendDescriptor>> descriptors_;
  BackendDescriptor graph_ = nullptr;
  std::unique_ptr<OwnedBackendDescriptor> plan_;
  size_t operations_ = 0;
  int64_t engineIndex_ = -1;
  const char *engineSource_ = "";
  size_t engineWorkspace_ = 0;
  bool nondeterministic_ = false;
  DqWrite dq_ = DqWrite::Direct;
  /// The backward graph's buffers in the shared workspace, after cuDNN's.
  size_t softmaxSumOffset_ = 0, dqAccumOffset_ = 0;
  bool clearDqAccum_ = false;
  size_t workspace_ = 0;
};

//===----------------------------------------------------------------------===//
// The kernel table
//===----------------------------------------------------------------------===//

class CudaKernels final : public KernelLibrary {
public:
  CudaKernels(const CudaDriver &driver, Device &device)
      : libs_{driver, device} {}
  ~CudaKernels() override {
    // The kernels' descriptors first, then the handles they were made with.
    kernels_.clear();
    if (libs_.ltHandle)
      libs_.lt->cublasLtDestroy(libs_.ltHandle);
    if (libs_.dnnHandle)
      libs_.dnn->cudnnDestroy(libs_.dnnHandle);
  }

  Status build(const nlohmann::json &kernels) {
    if (!kernels.is_array())
      return makeError(CLEAVE_INVALID_ARTIFACT,
                       "manifest field 'kernels' must be an array");
    kernels_.resize(kernels.size());
    try {
      for (size_t i = 0; i < kernels.size(); ++i) {
        const nlohmann::json &entry = kernels[i];
        KernelHeader header = readKernelHeader(entry, i, kernels.size());
        if (kernels_[header.id])
          throw KernelSpecError("kernel " + std::to_string(header.id) +
                                ": duplicate id (kernels[" + std::to_string(i) +
                                "] reuses it)");
        KernelSpec spec(entry, header);
        kernels_[header.id] = buildOne(spec);
      }
    } catch (const BuildError &e) {
      return e.status;
    } catch (const KernelSpecError &e) {
      return makeError(CLEAVE_INVALID_ARTIFACT, e.what());
    }
    size_t bytes = 0;
    for (const auto &k : kernels_)
      bytes = std::max(bytes, k->workspaceBytes());
    workspaceBytes_ = bytes;
    if (bytes > 0)
      CLEAVE_RETURN_IF_ERROR(allocateWorkspace(bytes));
    return Status::success();
  }

  void *queue() const override { return libs_.device.compute().native(); }
  size_t numKernels() const override { return kernels_.size(); }
  std::string describeKernel(int64_t id) const override {
    if (id < 0 || uint64_t(id) >= kernels_.size())
      return {};
    return kernels_[id]->describe();
  }
  std::vector<std::string> notes() const override {
    std::vector<std::string> out;
    for (const auto &k : kernels_)
      if (std::string line = k->note(); !line.empty())
        out.push_back(std::move(line));
    return out;
  }

  Status matmul(int64_t id, const void *a, const void *b, const float *bias,
                float *c) override {
    CudaMatmul *k = find<CudaMatmul>(id, KernelKind::Matmul, "matmul");
    if (!k)
      return lookupError_;
    return k->run(a, b, bias, c, workspace_, workspaceBytes_);
  }

  Status convolution(KernelKind kind, int64_t id, const void *in0,
                     const void *in1, const float *bias, void *out) override {
    auto *k = find<CudnnConvolution>(id, kind, kernelKindName(kind));
    if (!k)
      return lookupError_;
    return k->run(in0, in1, bias, out, workspace_);
  }

  Status poolForward(int64_t id, const float *src, float *dst) override {
    auto *k = find<CudnnPooling>(id, KernelKind::PoolingForward,
                                 "max_pool2d_fwd or avg_pool2d_fwd");
    if (!k)
      return lookupError_;
    return k->forward(src, dst);
  }

  Status poolBackward(int64_t id, const float *src, const float *diffDst,
                      float *diffSrc) override {
    auto *k = find<CudnnPooling>(id, KernelKind::PoolingBackward,
                                 "max_pool2d_bwd or avg_pool2d_bwd");
    if (!k)
      return lookupError_;
    return k->backward(src, diffDst, diffSrc, workspace_);
  }

  Status attentionForward(int64_t id, const void *q, const void *k,
                          const void *v, const void *mask, const void *keep,
                          void *o, float *lse) override {
    auto *a =
        find<CudnnAttention>(id, KernelKind::AttentionForward, "sdpa_fwd");
    if (!a)
      return lookupError_;
    return a->forward(q, k, v, mask, keep, o, lse, workspace_);
  }

  Status attentionBackward(int64_t id,
                           const AttentionGradients &operands) override {
    auto *a =
        find<CudnnAttention>(id, KernelKind::AttentionBackward, "sdpa_bwd");
    if (!a)
      return lookupError_;
    return a->backward(operands, workspace_);
  }

  Status copy(float *dst, const float *src, int64_t floats) override {
    return libs_.device.compute().copy(dst, src,
                                       size_t(floats) * sizeof(float));
  }

  Status zero(float *dst, int64_t floats) override {
    return libs_.device.compute().fill32(dst, 0, size_t(floats));
  }

private:
  Status allocateWorkspace(size_t bytes) {
    Buffer buffer;
    CLEAVE_RETURN_IF_ERROR(libs_.device.allocate(
        bytes, Usage::DeviceOnly, "the kernels' workspace", buffer));
    workspace_ = buffer.data;
    return Status::success();
  }

  std::unique_ptr<CudaKernel> buildOne(KernelSpec &spec) {
    switch (spec.kernelOp()) {
    case abi::KernelOp::matmul:
      loadCublasLt(spec);
      return std::make_unique<CudaMatmul>(spec, libs_);
    case abi::KernelOp::conv2d_fwd:
      loadCudnn(spec);
      return std::make_unique<CudnnConvolution>(spec, libs_,
                                                KernelKind::ConvolutionForward);
    case abi::KernelOp::conv2d_bwd_data:
      loadCudnn(spec);
      return std::make_unique<CudnnConvolution>(
          spec, libs_, KernelKind::ConvolutionBackwardData);
    case abi::KernelOp::conv2d_bwd_weights:
      loadCudnn(spec);
      return std::make_unique<CudnnConvolution>(
          spec, libs_, KernelKind::ConvolutionBackwardWeights);
    case abi::KernelOp::max_pool2d_fwd:
    case abi::KernelOp::avg_pool2d_fwd:
    case abi::KernelOp::max_pool2d_bwd:
    case abi::KernelOp::avg_pool2d_bwd: {
      const bool max = spec.kernelOp() == abi::KernelOp::max_pool2d_fwd ||
                       spec.kernelOp() == abi::KernelOp::max_pool2d_bwd;
      const bool backward = spec.kernelOp() == abi::KernelOp::max_pool2d_bwd ||
                            spec.kernelOp() == abi::KernelOp::avg_pool2d_bwd;
      loadCudnn(spec);
      return std::make_unique<CudnnPooling>(
          spec, libs_,
          backward ? KernelKind::PoolingBackward : KernelKind::PoolingForward,
          max);
    }
    case abi::KernelOp::sdpa_fwd:
      loadCudnn(spec);
      return std::make_unique<CudnnAttention>(spec, libs_,
                                              KernelKind::AttentionForward);
    case abi::KernelOp::sdpa_bwd:
      loadCudnn(spec);
      return std::make_unique<CudnnAttention>(spec, libs_,
                                              KernelKind::AttentionBackward);
    }
    spec.fail("no cuda kernel for this op");
  }

  void loadCublasLt(KernelSpec &spec) {
    if (libs_.lt)
      return;
    std::string error;
    const CublasLt *lt = cublasLt(error);
    if (!lt)
      spec.fail(error);
    cublasStatus_t s = lt->cublasLtCreate(&libs_.ltHandle);
    if (s != CUBLAS_STATUS_SUCCESS)
      spec.fail(std::string("cublasLtCreate failed: ") +
                lt->cublasLtGetStatusString(s));
    libs_.lt = lt;
  }

  void loadCudnn(KernelSpec &spec) {
    if (libs_.dnn)
      return;
    std::string error;
    const Cudnn *dnn = cudnn(error);
    if (!dnn)
      spec.fail(error);
    if (dnn->cudnnGetVersion() / 10000 != CUDNN_MAJOR)
      spec.fail("libcudnn.so.9 reports version " +
                std::to_string(dnn->cudnnGetVersion()) +
                ", this runtime was built for cuDNN " +
                std::to_string(CUDNN_MAJOR));
    cudnnStatus_t s = dnn->cudnnCreate(&libs_.dnnHandle);
    if (s != CUDNN_STATUS_SUCCESS)
      spec.fail(std::string("cudnnCreate failed: ") +
                dnn->cudnnGetErrorString(s));
    s = dnn->cudnnSetStream(
        libs_.dnnHandle,
        static_cast<cudaStream_t>(libs_.device.compute().native()));
    if (s != CUDNN_STATUS_SUCCESS)
      spec.fail(std::string("cudnnSetStream failed: ") +
                dnn->cudnnGetErrorString(s));
    libs_.dnn = dnn;
  }

  /// Kernel `id` if it is of `kind`; else null with lookupError_ set.
  /// (Every id of a built table has a kernel.)
  template <typename K> K *find(int64_t id, KernelKind kind, const char *what) {
    if (id < 0 || uint64_t(id) >= kernels_.size()) {
      lookupError_ = makeError(CLEAVE_INTERNAL, "no kernel ", id,
                               " (the context has ", kernels_.size(), ")");
      return nullptr;
    }
    CudaKernel *k = kernels_[id].get();
    if (k->kind != kind) {
      lookupError_ = makeError(CLEAVE_INTERNAL, kernelName(id, k->op),
                               " is not a ", what, " kernel");
      return nullptr;
    }
    return static_cast<K *>(k);
  }

  Libraries libs_;
  std::vector<std::unique_ptr<CudaKernel>> kernels_;
  void *workspace_ = nullptr;
  size_t workspaceBytes_ = 0;
  Status lookupError_;
};

} // namespace

Status createCudaKernels(const CudaDriver &driver, Device &device,
                         const nlohmann::json &kernels,
                         std::unique_ptr<KernelLibrary> &out) {
  auto k = std::make_unique<CudaKernels>(driver, device);
  CLEAVE_RETURN_IF_ERROR(k->build(kernels));
  out = std::move(k);
  return Status::success();
}

} // namespace cleave::rt
