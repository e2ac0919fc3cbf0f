//===- ArtifactAbi.cpp - The artifact's exported symbols ------------------===//
//
// The runtime calls every entry point the same way, `(ctx, void **args)`, so
// that it needs no knowledge of any particular model's signature: one
// wrapper per entry unpacks the argument array.
//
//===----------------------------------------------------------------------===//

#include "compiler/Artifact/Passes.h"
#include "dialects/Runtime/IR/RtOps.h"
#include "runtime/include/cleave/kernel_abi.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace mlir::cleave {
#define GEN_PASS_DEF_CLEAVEEMITARTIFACTABI
#include "compiler/Artifact/Passes.h.inc"
} // namespace mlir::cleave

using namespace mlir;
using namespace mlir::cleave;

namespace {

struct EmitArtifactAbiPass
    : cleave::impl::CleaveEmitArtifactAbiBase<EmitArtifactAbiPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    auto manifest =
        module->getAttrOfType<StringAttr>(rt::RtDialect::kManifestJsonAttr);
    auto entries =
        module->getAttrOfType<ArrayAttr>(rt::RtDialect::kEntriesAttr);
    if (!manifest || !entries) {
      module.emitError("no manifest; run cleave-write-manifest first");
      return signalPassFailure();
    }
    OpBuilder b(module.getBodyRegion());
    b.setInsertionPointToEnd(module.getBody());
    Location loc = module.getLoc();
    auto ptr = LLVM::LLVMPointerType::get(ctx);

    for (Attribute e : entries) {
      StringRef name = cast<StringAttr>(e).getValue();
      auto callee = module.lookupSymbol<LLVM::LLVMFuncOp>(name);
      if (!callee) {
        module.emitError("entry point @")
            << name << " was not lowered to the LLVM dialect";
        return signalPassFailure();
      }
      auto type = callee.getFunctionType();
      if (type.getNumParams() == 0 ||
          !llvm::all_of(type.getParams(),
                        [](Type t) { return isa<LLVM::LLVMPointerType>(t); }))
        return (void)(callee.emitError("entry points must take only pointers "
                                       "(lower with bare-pointer memrefs)"),
                      signalPassFailure());
      auto wrapper = LLVM::LLVMFuncOp::create(
          b, loc, (CLEAVE_SYMBOL_ENTRY_PREFIX + name).str(),
          LLVM::LLVMFunctionType::get(LLVM::LLVMVoidType::get(ctx),
                                      {ptr, ptr}));
      OpBuilder::InsertionGuard guard(b);
      Block *block = wrapper.addEntryBlock(b);
      b.setInsertionPointToStart(block);
      SmallVector<Value> args = {block->getArgument(0)};
      for (unsigned i = 1; i < type.getNumParams(); ++i) {
        Value slot =
            LLVM::GEPOp::create(b, loc, ptr, ptr, block->getArgument(1),
                                ArrayRef<LLVM::GEPArg>{int32_t(i - 1)});
        args.push_back(LLVM::LoadOp::create(b, loc, ptr, slot));
      }
      LLVM::CallOp::create(b, loc, callee, args);
      LLVM::ReturnOp::create(b, loc, ValueRange{});
      // Only the wrapper is exported; the entry itself may be inlined.
      callee.setLinkage(LLVM::Linkage::Internal);
    }

    // cleave_abi_version
    {
      auto f = LLVM::LLVMFuncOp::create(
          b, loc, CLEAVE_SYMBOL_ABI_VERSION,
          LLVM::LLVMFunctionType::get(b.getI32Type(), {}));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.addEntryBlock(b));
      Value v = LLVM::ConstantOp::create(
          b, loc, b.getI32IntegerAttr(CLEAVE_KERNEL_ABI_VERSION));
      LLVM::ReturnOp::create(b, loc, v);
    }

    // A constant byte array and a function returning its address.
    auto exportBytes = [&](StringRef fn, StringRef global, Attribute value,
                           int64_t size) {
      {
        OpBuilder::InsertionGuard guard(b);
        auto arrayType = LLVM::LLVMArrayType::get(b.getI8Type(), size);
        auto g = LLVM::GlobalOp::create(b, loc, arrayType, /*isConstant=*/true,
                                        LLVM::Linkage::Internal, global, value,
                                        /*alignment=*/64);
        (void)g;
      }
      auto f = LLVM::LLVMFuncOp::create(b, loc, fn,
                                        LLVM::LLVMFunctionType::get(ptr, {}));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.addEntryBlock(b));
      Value addr = LLVM::AddressOfOp::create(b, loc, ptr, global);
      LLVM::ReturnOp::create(b, loc, addr);
    };
    std::string text = manifest.str();
    text.push_back('\0');
    exportBytes(CLEAVE_SYMBOL_MANIFEST, "__cleave_manifest",
                b.getStringAttr(text), text.size());
    if (auto data = module->getAttrOfType<DenseElementsAttr>(
            rt::RtDialect::kInitDataAttr)) {
      exportBytes(CLEAVE_SYMBOL_INIT_DATA, "__cleave_init_data", data,
                  data.getNumElements());
    } else {
      auto f = LLVM::LLVMFuncOp::create(b, loc, CLEAVE_SYMBOL_INIT_DATA,
                                        LLVM::LLVMFunctionType::get(ptr, {}));
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPointToStart(f.addEntryBlock(b));
      LLVM::ReturnOp::create(b, loc,
                             LLVM::ZeroOp::create(b, loc, ptr).getResult());
    }
    module->removeAttr(rt::RtDialect::kManifestJsonAttr);
    module->removeAttr(rt::RtDialect::kInitDataAttr);
    module->removeAttr(rt::RtDialect::kEntriesAttr);
  }
};

} // namespace
