//===- onednn_gemm_rates.cpp - oneDNN's f32 and bf16 GEMM rates -----------===//
//
// Times oneDNN matmuls alone, hot in cache, one thread (OMP_NUM_THREADS=1),
// in f32 and in bf16 (f32 destination), with B plain, transposed and in the
// layout oneDNN prefers: how fast this CPU multiplies in bf16 against f32,
// whatever Cleave does around the calls (mixed-precision.md, "Which CPUs").
// Prints a Markdown table in GFLOP/s, best of 7 x 20 calls.
//
//   OMP_NUM_THREADS=1 build/bin/cleave-gemm-rates
//
//===----------------------------------------------------------------------===//

#include <dnnl.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unordered_map>

namespace {

using dnnl::memory;

/// B's layout: row-major, transposed (column-major), or oneDNN's choice.
enum class Layout { Plain, Transposed, Packed };

double gflops(dnnl::engine &engine, dnnl::stream &stream, int m, int k,
              int n, memory::data_type type, Layout layout) {
  using tag = memory::format_tag;
  memory::desc a({m, k}, type, tag::ab);
  memory::desc b({k, n}, type,
                 layout == Layout::Packed       ? tag::any
                 : layout == Layout::Transposed ? tag::ba
                                                : tag::ab);
  memory::desc c({m, n}, memory::data_type::f32, tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a, b, c), engine);
  memory mA(a, engine), mB(pd.weights_desc(), engine), mC(c, engine);
  std::memset(mA.get_data_handle(), 0, a.get_size());
  std::memset(mB.get_data_handle(), 0, pd.weights_desc().get_size());
  dnnl::matmul matmul(pd);
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, mA}, {DNNL_ARG_WEIGHTS, mB}, {DNNL_ARG_DST, mC}};
  double best = 1e30;
  for (int round = 0; round < 7; ++round) {
    auto start = std::chrono::steady_clock::now();
    for (int call = 0; call < 20; ++call)
      matmul.execute(stream, args);
    stream.wait();
    std::chrono::duration<double> seconds =
        std::chrono::steady_clock::now() - start;
    best = std::min(best, seconds.count() / 20);
  }
  return 2.0 * m * k * n / best / 1e9;
}

} // namespace

int main() {
  dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  dnnl::stream stream(engine);
  // The MLP's GEMMs (784-512-512-10) at micro-batches 256 and 32.
  const int shapes[][3] = {
      {256, 512, 512}, {256, 784, 512}, {32, 512, 512}, {512, 256, 784}};
  using type = memory::data_type;
  std::printf("| GEMM (M x K x N) | f32, B plain | f32, B packed | bf16, B "
              "plain | bf16, B transposed | bf16, B packed |\n"
              "|---|---|---|---|---|---|\n");
  for (const auto &s : shapes)
    std::printf(
        "| %d x %d x %d | %.0f | %.0f | %.0f | %.0f | %.0f GFLOP/s |\n", s[0],
        s[1], s[2], gflops(engine, stream, s[0], s[1], s[2], type::f32,
                           Layout::Plain),
        gflops(engine, stream, s[0], s[1], s[2], type::f32, Layout::Packed),
        gflops(engine, stream, s[0], s[1], s[2], type::bf16, Layout::Plain),
        gflops(engine, stream, s[0], s[1], s[2], type::bf16,
               Layout::Transposed),
        gflops(engine, stream, s[0], s[1], s[2], type::bf16, Layout::Packed));
  return 0;
}
