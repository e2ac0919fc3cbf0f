//===- Artifact.cpp - Load and validate a Cleave artifact -----------------===//
//
// The file is checked before dlopen sees it (existence, ELF magic, shared
// object type, machine, headers and segments inside the file) because
// dlopen's own messages for foreign files are cryptic, and because dlopen
// crashes on a truncated one instead of failing. A compiled artifact ends
// with a checksum seal, verified before dlopen maps it.
//
//===----------------------------------------------------------------------===//

#include "Artifact.h"

#include "Checksum.h"
#include "CpuFeatures.h"

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <vector>

namespace cleave::rt {

namespace {

Status notAnArtifact(const std::string &path, const std::string &why) {
  return makeError(CLEAVE_INVALID_ARTIFACT, path, ": not a Cleave artifact (",
                   why, ")");
}

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
#error "unsupported host architecture"
#endif

Status truncatedElf(const std::string &path, const std::string &what,
                    uint64_t end, uint64_t size) {
  return makeError(CLEAVE_INVALID_ARTIFACT, path,
                   ": truncated or corrupt ELF file (", what, " ends at byte ",
                   end, ", the file has ", size, " bytes)");
}

/// Reads exactly `bytes` at `offset`; false on a short read.
bool readAt(int fd, void *buf, size_t bytes, uint64_t offset) {
  auto *p = static_cast<char *>(buf);
  while (bytes > 0) {
    ssize_t n = ::pread(fd, p, bytes, off_t(offset));
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    bytes -= size_t(n);
    offset += uint64_t(n);
  }
  return true;
}

/// Opens `path` for reading; it must be a regular file. `size` is its size.
Status openArtifactFile(const std::string &path, int &fd, uint64_t &size) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer; it is
  // refused below as not a regular file.
  fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot open (",
                     std::strerror(errno), ")");
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return makeError(CLEAVE_IO_ERROR, path, ": cannot stat (",
                     std::strerror(errno), ")");
  if (!S_ISREG(st.st_mode))
    return notAnArtifact(path, "not a regular file");
  size = uint64_t(st.st_size);
  return Status::success();
}

/// Checks that the `size` bytes of `fd` (the file `path`) are an ELF shared
/// object for this machine whose headers and segments all lie inside the
/// file. dlopen maps segments without checking their extent, so a truncated
/// file would fault (SIGBUS) during relocation instead of failing.
Status checkElf(const std::string &path, int fd, uint64_t size) {
  Elf64_Ehdr eh;
  unsigned char ident[EI_NIDENT] = {};
  if (size < SELFMAG ||
      !readAt(fd, ident, std::min<uint64_t>(size, EI_NIDENT), 0) ||
      std::memcmp(ident, ELFMAG, SELFMAG) != 0)
    return notAnArtifact(path, "not an ELF file");
  if (size < sizeof(eh) || !readAt(fd, &eh, sizeof(eh), 0))
    return truncatedElf(path, "the ELF header", sizeof(eh), size);
  if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_ident[EI_DATA] != ELFDATA2LSB)
    return notAnArtifact(path, "not a 64-bit little-endian ELF file");
  if (eh.e_type != ET_DYN)
    return notAnArtifact(path, "an ELF file but not a shared object");
  if (eh.e_machine != kHostMachine)
    return notAnArtifact(path, "an ELF file for another machine (e_machine " +
                                   std::to_string(eh.e_machine) + ")");
  if (eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum == 0)
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": corrupt ELF file (bad program header table)");
  uint64_t phEnd = eh.e_phoff + uint64_t(eh.e_phnum) * sizeof(Elf64_Phdr);
  if (eh.e_phoff > size || phEnd > size)
    return truncatedElf(path, "the program header table", phEnd, size);
  if (eh.e_shoff != 0) {
    uint64_t shEnd = eh.e_shoff + uint64_t(eh.e_shnum) * eh.e_shentsize;
    if (eh.e_shoff > size || shEnd > size)
      return truncatedElf(path, "the section header table", shEnd, size);
  }
  for (uint16_t i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    if (!readAt(fd, &ph, sizeof(ph), eh.e_phoff + uint64_t(i) * sizeof(ph)))
      return truncatedElf(path, "the program header table", phEnd, size);
    // Compared without forming p_offset + p_filesz first: a forged p_filesz
    // near 2^64 would wrap the sum back inside the file.
    uint64_t end = ph.p_offset + ph.p_filesz;
    if (ph.p_filesz != 0 &&
        (ph.p_offset > size || ph.p_filesz > size - ph.p_offset))
      return truncatedElf(path, "segment " + std::to_string(i), end, size);
  }
  return Status::success();
}

/// The seal cleave-compile appends (docs/design/runtime-abi.md): "CLVSEAL2",
/// then the number of bytes before the seal and their CRC-32, both
/// little-endian u64. "CLVSEAL1" seals (FNV-1a) came from cleave-compile
/// before 0.1.
constexpr char kSealMagic[8] = {'C', 'L', 'V', 'S', 'E', 'A', 'L', '2'};
constexpr char kOldSealMagic[8] = {'C', 'L', 'V', 'S', 'E', 'A', 'L', '1'};
constexpr size_t kSealBytes = 24;

uint64_t readLe64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i)
    v = (v << 8) | p[i];
  return v;
}

/// An artifact resolves the kernel ABI (cleave_kernel_*) against the global
/// symbol scope. A program that links libcleave_runtime puts it there; a
/// host that dlopens it with RTLD_LOCAL (Python loads extension modules and
/// their libraries that way) does not, and every artifact would fail to load
/// with "undefined symbol: cleave_kernel_...". Re-opening the library that
/// holds this function with RTLD_NOLOAD | RTLD_GLOBAL promotes it, once.
void exposeKernelAbi() {
  static std::once_flag once;
  std::call_once(once, [] {
    Dl_info info;
    if (::dladdr(reinterpret_cast<void *>(&exposeKernelAbi), &info) &&
        info.dli_fname)
      // The handle only pins what is already loaded; it is never closed.
      (void)::dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD | RTLD_GLOBAL);
  });
}

/// If the `size` bytes of `fd` (the file `path`) end with a seal, verifies
/// it (`sealed` is then true). A damaged file fails here, before dlopen maps
/// and relocates it.
Status checkSeal(const std::string &path, int fd, uint64_t size,
                 bool &sealed) {
  sealed = false;
  unsigned char trailer[kSealBytes];
  if (size < kSealBytes || !readAt(fd, trailer, kSealBytes, size - kSealBytes))
    return Status::success();
  if (std::memcmp(trailer, kOldSealMagic, sizeof(kOldSealMagic)) == 0)
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": compiled by an older cleave-compile (its seal is of "
                     "another kind); compile it again");
  if (std::memcmp(trailer, kSealMagic, sizeof(kSealMagic)) != 0)
    return Status::success();
  sealed = true;
  const uint64_t covered = readLe64(trailer + 8);
  if (covered != size - kSealBytes)
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": damaged artifact (its seal covers ", covered,
                     " bytes, the file has ", size - kSealBytes,
                     " before the seal)");
  std::vector<char> buffer(size_t(1) << 20);
  uint32_t crc = 0;
  for (uint64_t offset = 0; offset < covered;) {
    size_t n = size_t(std::min<uint64_t>(buffer.size(), covered - offset));
    if (!readAt(fd, buffer.data(), n, offset))
      return makeError(CLEAVE_IO_ERROR, path, ": cannot read (",
                       std::strerror(errno), ")");
    crc = crc32(buffer.data(), n, crc);
    offset += n;
  }
  if (crc != readLe64(trailer + 16))
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": damaged artifact (its contents do not match the "
                     "checksum written by cleave-compile); compile it again");
  return Status::success();
}

} // namespace

Status checkArtifactFile(const std::string &path, int fd, uint64_t size,
                         bool &sealed) {
  CLEAVE_RETURN_IF_ERROR(checkElf(path, fd, size));
  return checkSeal(path, fd, size, sealed);
}

Status Artifact::load(const std::string &path, std::shared_ptr<Artifact> &out,
                      ArtifactKind expected) {
  if (path.empty())
    return makeError(CLEAVE_INVALID_ARGUMENT, "artifact path is empty");
  bool sealed = false;
  {
    int fd = -1;
    uint64_t size = 0;
    Status opened = openArtifactFile(path, fd, size);
    struct Closer {
      int fd;
      ~Closer() {
        if (fd >= 0)
          ::close(fd);
      }
    } closer{fd};
    CLEAVE_RETURN_IF_ERROR(opened);
    CLEAVE_RETURN_IF_ERROR(checkArtifactFile(path, fd, size, sealed));
  }

  std::shared_ptr<Artifact> artifact(new Artifact());
  artifact->path_ = path;
  // A name without a slash would make dlopen search the library path.
  std::string dlPath = path.find('/') == std::string::npos ? "./" + path : path;
  exposeKernelAbi();
  // RTLD_NOW: an artifact whose kernel symbols do not resolve against this
  // runtime fails here, not in the middle of a training step.
  artifact->handle_ = ::dlopen(dlPath.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!artifact->handle_) {
    const char *why = ::dlerror();
    return makeError(CLEAVE_INVALID_ARTIFACT, path, ": cannot load (",
                     why ? why : "unknown dlopen error", ")");
  }
  auto lookup = [&](const std::string &name) {
    ::dlerror();
    return ::dlsym(artifact->handle_, name.c_str());
  };

  auto abiVersion = reinterpret_cast<cleave_abi_version_fn>(
      lookup(CLEAVE_SYMBOL_ABI_VERSION));
  if (!abiVersion)
    return notAnArtifact(path, "missing symbol " CLEAVE_SYMBOL_ABI_VERSION);
  auto manifestFn =
      reinterpret_cast<cleave_manifest_fn>(lookup(CLEAVE_SYMBOL_MANIFEST));
  if (!manifestFn)
    return notAnArtifact(path, "missing symbol " CLEAVE_SYMBOL_MANIFEST);
  auto initDataFn =
      reinterpret_cast<cleave_init_data_fn>(lookup(CLEAVE_SYMBOL_INIT_DATA));
  if (!initDataFn)
    return notAnArtifact(path, "missing symbol " CLEAVE_SYMBOL_INIT_DATA);

  int32_t version = abiVersion();
  if (version != kManifestAbiVersion)
    return makeError(CLEAVE_INVALID_ARTIFACT, path, ": ABI version ", version,
                     ", this runtime loads version ", kManifestAbiVersion);
  const char *text = manifestFn();
  if (!text)
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": cleave_manifest() returned NULL");
  CLEAVE_RETURN_IF_ERROR(
      parseManifest(text, artifact->manifest_).withContext(path));
  // The seal itself may be what was damaged.
  if (artifact->manifest_.sealed && !sealed)
    return makeError(CLEAVE_INVALID_ARTIFACT, path,
                     ": damaged artifact (the checksum seal cleave-compile "
                     "writes at its end is missing); compile it again");
  // Before any of its code runs: code for a CPU with features this one
  // lacks would die with SIGILL in the middle of a step.
  if (const std::optional<TargetDesc> &target = artifact->manifest_.target) {
    std::string flags = hostCpuFlags();
    std::vector<std::string> missing =
        flags.empty() ? std::vector<std::string>{}
                      : missingCpuFeatures(target->features, flags);
    if (!missing.empty()) {
      std::string list;
      for (const std::string &f : missing)
        list += (list.empty() ? "" : ", ") + f;
      return makeError(CLEAVE_INVALID_ARTIFACT, path, ": compiled for CPU '",
                       target->cpu, "', whose features ", list,
                       " this machine's CPU lacks; compile it with a "
                       "--target-cpu this machine has (x86-64-v2, "
                       "x86-64-v3, ...) or on this machine");
    }
  }
  // Sessions run training and inference artifacts alike.
  auto graph = [](ArtifactKind kind) { return kind == ArtifactKind::graph; };
  if (graph(artifact->manifest_.kind) != graph(expected))
    return makeError(CLEAVE_INVALID_ARTIFACT, path, ": a ",
                     abi::name(artifact->manifest_.kind), " artifact; ",
                     !graph(expected)
                         ? "graph artifacts run through cleave_executable_load"
                         : "training and inference artifacts run through "
                           "cleave_session_create");

  artifact->initData_ = static_cast<const unsigned char *>(initDataFn());
  artifact->initDataBegin_ = SIZE_MAX;
  for (const GlobalDesc &g : artifact->manifest_.globals) {
    if (g.init.kind != InitKind::data)
      continue;
    if (!artifact->initData_)
      return makeError(CLEAVE_INVALID_ARTIFACT, path, ": global '", g.name,
                       "' is initialised from data but cleave_init_data() "
                       "returned NULL");
    artifact->initDataBegin_ =
        std::min(artifact->initDataBegin_, size_t(g.init.offset));
    artifact->initDataEnd_ =
        std::max(artifact->initDataEnd_, size_t(g.init.offset) + g.bytes);
  }

  for (size_t i = 0; i < kNumEntryKinds; ++i) {
    auto kind = static_cast<EntryKind>(i);
    if (!artifact->manifest_.entry(kind).present)
      continue;
    std::string symbol =
        CLEAVE_SYMBOL_ENTRY_PREFIX + std::string(abi::name(kind));
    artifact->entries_[i] = reinterpret_cast<EntryFn>(lookup(symbol));
    if (!artifact->entries_[i])
      return makeError(CLEAVE_INVALID_ARTIFACT, path,
                       ": the manifest declares entry '", abi::name(kind),
                       "' but the artifact does not export ", symbol);
  }
  for (const GraphEntryDesc &e : artifact->manifest_.graphEntries) {
    std::string symbol = CLEAVE_SYMBOL_ENTRY_PREFIX + e.name;
    auto fn = reinterpret_cast<EntryFn>(lookup(symbol));
    if (!fn)
      return makeError(CLEAVE_INVALID_ARTIFACT, path,
                       ": the manifest declares entry '", e.name,
                       "' but the artifact does not export ", symbol);
    artifact->graphEntries_.push_back(fn);
  }
  out = std::move(artifact);
  return Status::success();
}

Artifact::~Artifact() {
  if (handle_)
    ::dlclose(handle_);
}

void Artifact::releaseInitData() const {
  if (!initData_ || initDataBegin_ >= initDataEnd_)
    return;
  // Whole pages inside the data only: the pages at its ends may hold other
  // constants of the artifact.
  const auto page = uintptr_t(::sysconf(_SC_PAGESIZE));
  const auto begin =
      (uintptr_t(initData_) + initDataBegin_ + page - 1) / page * page;
  const auto end = (uintptr_t(initData_) + initDataEnd_) / page * page;
  // MADV_PAGEOUT (Linux 5.4) only reclaims: clean pages of the file mapping
  // are dropped and read again on use, and nothing changes what the memory
  // holds, wherever cleave_init_data() points. On an older kernel it is an
  // error, and the pages stay.
#ifdef MADV_PAGEOUT
  if (begin < end)
    (void)::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_PAGEOUT);
#endif
}

} // namespace cleave::rt
