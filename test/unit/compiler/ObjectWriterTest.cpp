//===- ObjectWriterTest.cpp - Machine code and the artifact file ----------===//
//
// The object writer refuses code that calls a function no artifact can
// resolve when it is loaded, and links a loadable shared object otherwise.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/ObjectWriter.h"
#include "compiler/InitAll.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <dlfcn.h>
#include <gtest/gtest.h>

namespace {

using namespace mlir;

OwningOpRef<ModuleOp> parse(MLIRContext &ctx, StringRef text) {
  return parseSourceString<ModuleOp>(text, &ctx);
}

std::string tempPath(StringRef suffix) {
  SmallString<128> path;
  llvm::sys::fs::createTemporaryFile("cleave-objwriter", suffix, path);
  return path.str().str();
}

class ObjectWriterTest : public ::testing::Test {
protected:
  ObjectWriterTest() {
    cleave::registerAllDialects(registry);
    ctx = std::make_unique<MLIRContext>(registry);
    ctx->loadAllAvailableDialects();
  }
  DialectRegistry registry;
  std::unique_ptr<MLIRContext> ctx;
};

TEST_F(ObjectWriterTest, RefusesCallsNothingCanResolve) {
  auto module = parse(*ctx, R"mlir(
    llvm.func @memrefCopy(i64, !llvm.ptr, !llvm.ptr)
    llvm.func @cleave_entry_f(%a: !llvm.ptr) {
      %c = llvm.mlir.constant(4 : i64) : i64
      llvm.call @memrefCopy(%c, %a, %a) : (i64, !llvm.ptr, !llvm.ptr) -> ()
      llvm.return
    })mlir");
  ASSERT_TRUE(module);
  std::string error, object = tempPath("o");
  EXPECT_TRUE(failed(cleave::emitObject(*module, object, error)));
  EXPECT_NE(error.find("'memrefCopy'"), std::string::npos) << error;
  llvm::sys::fs::remove(object);
}

TEST_F(ObjectWriterTest, LinksALoadableSharedObject) {
  // libm and the runtime's ABI are fine: expf resolves in libm and
  // cleave_* in the runtime that loads the artifact.
  auto module = parse(*ctx, R"mlir(
    llvm.func @expf(f32) -> f32
    llvm.func @cleave_answer(%x: f32) -> f32 {
      %y = llvm.call @expf(%x) : (f32) -> f32
      llvm.return %y : f32
    })mlir");
  ASSERT_TRUE(module);
  std::string error, object = tempPath("o"), so = tempPath("so");
  ASSERT_TRUE(succeeded(cleave::emitObject(*module, object, error))) << error;
  ASSERT_TRUE(succeeded(cleave::linkSharedObject(object, so, error))) << error;
  void *handle = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(handle, nullptr) << dlerror();
  auto answer = reinterpret_cast<float (*)(float)>(dlsym(handle, "cleave_answer"));
  ASSERT_NE(answer, nullptr);
  EXPECT_FLOAT_EQ(answer(0.0f), 1.0f);
  dlclose(handle);
  llvm::sys::fs::remove(object);
  llvm::sys::fs::remove(so);
}

} // namespace
