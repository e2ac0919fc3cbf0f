#!/usr/bin/python3
"""Writes the seed corpora of the fuzz targets (test/fuzz/corpus/<target>/).

    make_corpus.py BUILD_DIR

BUILD_DIR is a built tree (any build type) that holds the end-to-end and
data-parallel artifacts, the session tests' fake artifacts and
libcleave_runtime; the ONNX seeds need /usr/bin/python3 with onnx and torch.
Seeds are small on purpose: libFuzzer mutates every byte of them, and a
corpus of large files spends its time on bytes that no check reads. The
script is deterministic; rerun it when a format changes, and keep the
`crash-*` reproducers (fixed findings), which it never touches.
"""

import gzip
import os
import struct
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(HERE, "corpus")


def clean(target):
    """Removes the target's seeds (not its reproducers); returns its dir."""
    directory = os.path.join(CORPUS, target)
    os.makedirs(directory, exist_ok=True)
    for name in os.listdir(directory):
        if name.startswith("seed-"):
            os.remove(os.path.join(directory, name))
    return directory


def write(directory, name, data):
    with open(os.path.join(directory, "seed-" + name), "wb") as f:
        f.write(data)


def onnx_seeds():
    """Models of the importer's lit tests: one per op family, plus the MLP
    torch.onnx exports (the patterns the recomposer matches)."""
    directory = clean("onnx-importer")
    make_model = os.path.join(SOURCE, "test/Frontend/Onnx/Inputs/make_model.py")
    models = ["gemm", "matmul_batched", "binary", "unary", "softmax",
              "reshape", "shape_reshape", "transpose", "concat", "slice",
              "split", "squeeze_unsqueeze", "gather_embedding", "conv",
              "maxpool", "avgpool", "global_avgpool", "batchnorm_train",
              "batchnorm_eval", "layernorm_chain", "gelu", "dropout",
              "torch_mlp", "runtime_shape", "dynamic_slice"]
    with tempfile.TemporaryDirectory() as tmp:
        for model in models:
            out = os.path.join(tmp, model + ".onnx")
            subprocess.run(["/usr/bin/python3", make_model, model, out],
                           check=True)
            with open(out, "rb") as f:
                write(directory, model + ".onnx", f.read())


def manifest_text(path):
    """The manifest JSON inside an artifact: cleave_manifest() returns a
    NUL-terminated string that starts with {"abi_version"."""
    with open(path, "rb") as f:
        data = f.read()
    start = data.find(b'{"abi_version"')
    if start < 0:
        raise SystemExit(path + ": no manifest found")
    return data[start:data.index(b"\0", start)]


def manifest_seeds(build):
    """Training manifests of every optimizer, reduction and sharding the
    compiler emits, and the hand-written graph manifest of the session
    tests (graph artifacts come from the tracing frontend)."""
    directory = clean("manifest")
    e2e = os.path.join(build, "test/e2e/artifacts")
    dist = os.path.join(build, "test/distributed/artifacts")
    artifacts = {
        "mlp-sgd": os.path.join(e2e, "mlp_b8_n4_sgd.cleave"),
        "lenet-adam": os.path.join(e2e, "lenet_b8_n4_adam.cleave"),
        "zero-adam": os.path.join(dist, "zero_r2_adam.cleave"),
        "adasum-momentum": os.path.join(dist, "adasum_b4_n2_momentum.cleave"),
        "graph": os.path.join(build, "test/unit/runtime/session/"
                              "graph_artifact.cleave"),
        "fake-adam": os.path.join(build, "test/unit/runtime/session/"
                                  "fake_adam.cleave"),
    }
    for name, path in artifacts.items():
        write(directory, name + ".json", manifest_text(path))


def artifact_file_seeds(build):
    """A compiled, sealed artifact (the smallest one), the same without its
    seal, and a shared object that is not an artifact."""
    directory = clean("artifact-file")
    with open(os.path.join(build, "test/distributed/artifacts/"
                           "none_b8_n2_momentum.cleave"), "rb") as f:
        sealed = f.read()
    if sealed[-24:-16] != b"CLVSEAL2":
        raise SystemExit("the compiled artifact has no seal")
    write(directory, "sealed.cleave", sealed)
    write(directory, "unsealed.cleave", sealed[:-24])
    with open(os.path.join(build, "test/unit/runtime/session/"
                           "libnosymbols.so"), "rb") as f:
        write(directory, "nosymbols.so", f.read())


CHECKPOINT_WRITER = r"""
#include "cleave/runtime.h"
#include <stdio.h>
/* Writes the checkpoints of a fresh session of argv[1]: without and with
 * user state (as cleave-train keeps its position there). */
static int check(cleave_status s) {
  if (s != CLEAVE_OK) {
    fprintf(stderr, "%s\n", cleave_last_error_message());
    return 1;
  }
  return 0;
}
int main(int argc, char **argv) {
  cleave_artifact *artifact;
  cleave_session *session;
  if (argc != 4 || check(cleave_artifact_load(argv[1], &artifact)) ||
      check(cleave_session_create(artifact, NULL, &session)) ||
      check(cleave_session_save_checkpoint(session, argv[2])) ||
      check(cleave_session_set_user_state(session, "epoch", "\x02\0\0\0", 4)) ||
      check(cleave_session_set_user_state(session, "trainer", "{}", 2)) ||
      check(cleave_session_save_checkpoint(session, argv[3])))
    return 1;
  cleave_session_destroy(session);
  cleave_artifact_release(artifact);
  return 0;
}
"""


def checkpoint_seeds(build):
    """Checkpoints written by the runtime for a session of the fake SGD
    artifact, which the fuzz target restores into."""
    directory = clean("checkpoint")
    cache = {}
    with open(os.path.join(build, "CMakeCache.txt")) as f:
        for line in f:
            if "=" in line and ":" in line.split("=")[0]:
                key, value = line.rstrip("\n").split("=", 1)
                cache[key.split(":")[0]] = value
    compiler = cache.get("CMAKE_C_COMPILER", "cc")
    flags = ["-fsanitize=address,undefined", "-fsanitize-link-c++-runtime",
             "-lstdc++"] \
        if cache.get("CLEAVE_SANITIZE") == "ON" else []
    lib = os.path.join(build, "lib")
    with tempfile.TemporaryDirectory() as tmp:
        source = os.path.join(tmp, "writer.c")
        with open(source, "w") as f:
            f.write(CHECKPOINT_WRITER)
        exe = os.path.join(tmp, "writer")
        subprocess.run([compiler, *flags, source, "-o", exe,
                        "-I", os.path.join(SOURCE, "runtime/include"),
                        "-L", lib, "-Wl,-rpath," + lib, "-lcleave_runtime"],
                       check=True)
        plain = os.path.join(tmp, "plain.ckpt")
        user = os.path.join(tmp, "user.ckpt")
        env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0")
        subprocess.run([exe, os.path.join(build, "test/unit/runtime/session/"
                                          "fake_sgd.cleave"), plain, user],
                       check=True, env=env)
        for name in ("plain", "user"):
            with open(os.path.join(tmp, name + ".ckpt"), "rb") as f:
                write(directory, name + ".ckpt", f.read())


def idx(magic, dims, data):
    return struct.pack(">I", magic) + b"".join(
        struct.pack(">I", d) for d in dims) + bytes(data)


def idx_seeds():
    """Images and labels as Fashion-MNIST lays them out, tiny: plain,
    gzipped, and two gzip members (which gunzip reads as one file)."""
    directory = clean("idx")
    images = idx(0x803, [2, 3, 3], range(18))
    labels = idx(0x801, [2], [7, 1])
    write(directory, "images", images)
    write(directory, "labels", labels)
    # mtime=0: the same bytes on every run.
    write(directory, "images.gz", gzip.compress(images, mtime=0))
    write(directory, "labels.gz", gzip.compress(labels, mtime=0))
    write(directory, "labels-2members.gz",
          gzip.compress(labels[:6], mtime=0) +
          gzip.compress(labels[6:], mtime=0))


def npy_seeds():
    """Tiny arrays of every dtype the reader takes, as .npy and inside .npz
    archives (stored and deflated, as np.savez and np.savez_compressed write
    them), and a two-record CIFAR-10 batch."""
    import io
    import numpy as np
    directory = clean("npy")
    arrays = {
        "f32": np.arange(6, dtype=np.float32).reshape(2, 3),
        "u8": np.arange(8, dtype=np.uint8).reshape(2, 2, 2),
        "i64": np.array([3, 1], dtype=np.int64),
        "i32": np.array([2], dtype=np.int32),
    }
    for name, a in arrays.items():
        f = io.BytesIO()
        np.save(f, a)
        write(directory, name + ".npy", f.getvalue())
    # As np.savez / np.savez_compressed lay them out, with a fixed
    # modification time so that reruns write the same bytes.
    import zipfile
    for name, method in (("stored", zipfile.ZIP_STORED),
                         ("deflated", zipfile.ZIP_DEFLATED)):
        f = io.BytesIO()
        with zipfile.ZipFile(f, "w", compression=method) as z:
            for member, a in (("x.npy", arrays["f32"]),
                              ("y.npy", arrays["i64"])):
                data = io.BytesIO()
                np.save(data, a)
                info = zipfile.ZipInfo(member, date_time=(1980, 1, 1, 0, 0, 0))
                info.compress_type = method
                z.writestr(info, data.getvalue())
        write(directory, name + ".npz", f.getvalue())
    record = bytes([3]) + bytes(range(256)) * 12
    write(directory, "cifar.bin", record + bytes([9]) + record[1:])


def main():
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    build = os.path.abspath(sys.argv[1])
    onnx_seeds()
    manifest_seeds(build)
    artifact_file_seeds(build)
    checkpoint_seeds(build)
    idx_seeds()
    npy_seeds()


if __name__ == "__main__":
    main()
