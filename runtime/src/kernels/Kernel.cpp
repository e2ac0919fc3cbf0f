//===- Kernel.cpp - Base of the runtime's oneDNN kernels ------------------===//
//
// Arena planning, staging reorders and shared oneDNN helpers.
//
//===----------------------------------------------------------------------===//

#include "kernels/Kernel.h"

namespace cleave::rt {

Kernel::~Kernel() = default;

void ArenaPlanner::place(const dnnl::memory &memory) {
  size_t bytes = memory.get_desc().get_size();
  if (bytes == 0)
    return;
  size_t offset = (cursor_ + kAlignment - 1) / kAlignment * kAlignment;
  slots_.emplace_back(memory, offset);
  cursor_ = offset + bytes;
  size_ = std::max(size_, cursor_);
}

void ArenaPlanner::bind(char *base) {
  for (auto &[memory, offset] : slots_)
    memory.set_data_handle(base + offset);
}

dnnl::primitive_attr makeAttr() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
  return attr;
}

dnnl::memory::desc plainDesc(const dnnl::memory::dims &dims) {
  dnnl::memory::dims strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;)
    strides[i - 1] = strides[i] * dims[i];
  return dnnl::memory::desc(dims, dnnl::memory::data_type::f32, strides);
}

size_t extentBytes(const dnnl::memory::desc &desc) {
  const dnnl_memory_desc_t &d = desc.data;
  if (d.format_kind != dnnl_blocked || d.format_desc.blocking.inner_nblks != 0)
    return desc.get_size();
  size_t last = 0;
  for (int i = 0; i < d.ndims; ++i) {
    if (d.dims[i] == 0)
      return 0;
    last += size_t(d.dims[i] - 1) * size_t(d.format_desc.blocking.strides[i]);
  }
  return (last + 1) * dnnl::memory::data_type_size(desc.data_type());
}

dnnl::memory unboundMemory(const dnnl::memory::desc &desc,
                           const dnnl::engine &engine) {
  return dnnl::memory(desc, engine, DNNL_MEMORY_NONE);
}

Step::Step(dnnl::primitive primitive, const dnnl::primitive_desc_base &pd,
           BuildEnv &env)
    : primitive(std::move(primitive)) {
  dnnl::memory::desc scratch = pd.scratchpad_desc();
  if (scratch.get_size() == 0)
    return;
  dnnl::memory memory = unboundMemory(scratch, env.engine);
  env.arena.place(memory);
  args[DNNL_ARG_SCRATCHPAD] = memory;
}

Operand::Operand(Role role, const dnnl::memory::desc &plain,
                 const dnnl::memory::desc &wanted, BuildEnv &env)
    : role_(role) {
  user_ = unboundMemory(plain, env.engine);
  staged_ = role == Role::AccumulatedOutput || wanted != plain;
  if (!staged_)
    return;
  internal_ = unboundMemory(wanted, env.engine);
  env.arena.place(internal_);

  dnnl::primitive_attr attr = makeAttr();
  bool input = role == Role::Input;
  if (role == Role::AccumulatedOutput) {
    // The reorder's sum post-op turns the copy back into `user += internal`.
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  const dnnl::memory &from = input ? user_ : internal_;
  const dnnl::memory &to = input ? internal_ : user_;
  dnnl::reorder::primitive_desc pd(env.engine, from.get_desc(), env.engine,
                                   to.get_desc(), attr);
  Step step(dnnl::reorder(pd), pd, env);
  step.args[DNNL_ARG_FROM] = from;
  step.args[DNNL_ARG_TO] = to;
  reorder_.emplace(std::move(step));
}

void Operand::stageIn(dnnl::stream &stream) {
  if (staged_ && role_ == Role::Input)
    reorder_->execute(stream);
}

void Operand::stageOut(dnnl::stream &stream) {
  if (staged_ && role_ != Role::Input)
    reorder_->execute(stream);
}

} // namespace cleave::rt
