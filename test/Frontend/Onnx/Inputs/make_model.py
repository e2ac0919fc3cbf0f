#!/usr/bin/python3
"""Builds the ONNX models of the importer's lit tests.

    make_model.py NAME OUT.onnx

Most models are built node by node with onnx.helper, for exact control over
ops, attributes and initializer values; the `torch_*` ones are exported by
torch.onnx, for the patterns real exporters produce. Weights are seeded, so
every run writes the same file.

Each model is also kept in a cache (CLEAVE_MODEL_CACHE, by default
$XDG_CACHE_HOME/cleave/test-models; empty turns it off), under a key of this
file's contents, the model's name and the versions of torch, torchvision,
onnx and numpy: the normal and the sanitizer builds' lit runs each write some
150 models, and a torch export takes seconds. A hit is copied without
importing any of them.
"""

import hashlib
import os
import shutil
import sys


def cache_path(name):
    """Where the cache keeps model `name`, or None when it is off."""
    root = os.environ.get("CLEAVE_MODEL_CACHE")
    if root is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(
            os.path.expanduser("~"), ".cache")
        root = os.path.join(base, "cleave", "test-models")
    if not root:
        return None
    from importlib import metadata
    key = hashlib.sha256()
    with open(__file__, "rb") as f:
        key.update(f.read())
    key.update(name.encode())
    for package in ("torch", "torchvision", "onnx", "numpy"):
        try:
            version = metadata.version(package)
        except metadata.PackageNotFoundError:
            version = "none"
        key.update(f"\0{package}={version}".encode())
    return os.path.join(root, f"{name}-{key.hexdigest()[:16]}.onnx")


def copy_from_cache(name, path):
    cached = cache_path(name)
    if cached is None or not os.path.exists(cached):
        return False
    shutil.copyfile(cached, path)
    return True


def store_in_cache(name, path):
    cached = cache_path(name)
    if cached is None:
        return
    # Written beside and renamed into place: lit runs tests in parallel, and
    # a reader sees a whole file or none.
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    partial = f"{cached}.{os.getpid()}.partial"
    shutil.copyfile(path, partial)
    os.replace(partial, cached)


if __name__ == "__main__" and len(sys.argv) == 3 and copy_from_cache(
        sys.argv[1], sys.argv[2]):
    sys.exit(0)

# The heavy imports come after the cache's early exit, on purpose.
import io  # noqa: E402

import numpy as np  # noqa: E402
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BATCH = "N"  # the symbolic batch dimension

MODELS = {}


def model(fn):
    MODELS[fn.__name__] = fn
    return fn


def value(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def init(name, array, dtype=np.float32):
    return numpy_helper.from_array(np.asarray(array, dtype=dtype), name)


def ints(name, values):
    return init(name, values, np.int64)


def const(output, array, dtype=np.float32):
    tensor = numpy_helper.from_array(np.asarray(array, dtype=dtype), output)
    return helper.make_node("Constant", [], [output], name=output,
                            value=tensor)


def graph(nodes, inputs, outputs, inits=(), opset=13):
    g = helper.make_graph(nodes, "test", inputs, outputs,
                          initializer=list(inits))
    m = helper.make_model(g, producer_name="make_model.py",
                          opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    # The system onnx package (1.12) knows opsets up to 17; newer models are
    # checked by the importer, whose checker has the newer schemas.
    if opset <= onnx.defs.onnx_opset_version():
        onnx.checker.check_model(m)
    return m


def node(op, inputs, outputs, **attrs):
    return helper.make_node(op, inputs, outputs, name=outputs[0], **attrs)


def weights(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


# ---------------------------------------------------------------------------
# Elementwise
# ---------------------------------------------------------------------------

@model
def binary():
    return graph(
        [node("Add", ["x", "y"], ["sum"]),
         node("Sub", ["sum", "bias"], ["diff"]),
         node("Mul", ["diff", "two"], ["prod"]),
         const("thirds", np.full((1, 3, 1), 3.0)),
         node("Div", ["prod", "thirds"], ["out"])],
        [value("x", F, [BATCH, 3, 4]), value("y", F, [BATCH, 3, 4])],
        [value("out", F, [BATCH, 3, 4])],
        [init("bias", [0.5, -1.0, 0.25, 2.0]), init("two", 2.0)])


@model
def pow():
    return graph([const("three", 3.0), node("Pow", ["x", "three"], ["out"])],
                 [value("x", F, [BATCH, 4])], [value("out", F, [BATCH, 4])])


@model
def unary():
    ops = ["Relu", "Sigmoid", "Tanh", "Erf", "Sqrt", "Exp", "Log", "Neg"]
    nodes, prev = [], "x"
    for op in ops:
        nodes.append(node(op, [prev], [op.lower()]))
        prev = op.lower()
    nodes.append(node("LeakyRelu", [prev], ["out"], alpha=0.2))
    return graph(nodes, [value("x", F, [BATCH, 4])],
                 [value("out", F, [BATCH, 4])])


@model
def clip():
    """ReLU6 as torch.onnx writes it, a one-sided and an unbounded Clip."""
    return graph(
        [const("zero", 0.0), const("six", 6.0),
         node("Clip", ["x", "zero", "six"], ["relu6"]),
         node("Clip", ["relu6", "", "max"], ["upper"]),
         node("Clip", ["upper", "min"], ["lower"]),
         node("Clip", ["lower"], ["out"])],
        [value("x", F, [BATCH, 4])], [value("out", F, [BATCH, 4])],
        [init("max", 2.5), init("min", -1.0)])


@model
def hard_activations():
    """mobilenet_v3's gates: HardSigmoid (non-default too) and HardSwish."""
    return graph(
        [node("HardSigmoid", ["x"], ["gate"]),
         node("HardSigmoid", ["gate"], ["gate2"], alpha=0.25, beta=0.375),
         node("HardSwish", ["gate2"], ["out"])],
        [value("x", F, [BATCH, 4])], [value("out", F, [BATCH, 4])], opset=14)


@model
def abs_softplus_reciprocal():
    return graph(
        [node("Abs", ["x"], ["a"]), node("Softplus", ["a"], ["s"]),
         node("Reciprocal", ["s"], ["out"])],
        [value("x", F, [BATCH, 4])], [value("out", F, [BATCH, 4])])


@model
def composed_activations():
    """Elu, then PRelu with a per-channel slope (a parameter)."""
    return graph(
        [node("Elu", ["x"], ["e"], alpha=0.5),
         node("PRelu", ["e", "slope"], ["out"])],
        [value("x", F, [BATCH, 3, 4])], [value("out", F, [BATCH, 3, 4])],
        [init("slope", weights(3, 1))])


@model
def depth_space():
    """PyTorch's pixel_shuffle (DepthToSpace CRD), then SpaceToDepth."""
    return graph(
        [node("DepthToSpace", ["x"], ["up"], blocksize=2, mode="CRD"),
         node("SpaceToDepth", ["up"], ["out"], blocksize=2)],
        [value("x", F, [BATCH, 8, 3, 5])], [value("out", F, [BATCH, 8, 3, 5])])


@model
def depth_to_space_bad_block():
    return graph(
        [node("DepthToSpace", ["x"], ["out"], blocksize=3)],
        [value("x", F, [BATCH, 8, 3, 5])], [value("out", F, [BATCH, 0, 9, 15])])


@model
def log_sum_exp():
    return graph(
        [node("ReduceLogSumExp", ["x"], ["out"], axes=[1], keepdims=0)],
        [value("x", F, [BATCH, 4])], [value("out", F, [BATCH])])


@model
def lrn():
    return graph(
        [node("LRN", ["x"], ["out"], size=3, alpha=1e-3, beta=0.5, bias=2.0)],
        [value("x", F, [BATCH, 4, 2, 2])], [value("out", F, [BATCH, 4, 2, 2])])


@model
def rnn_reverse():
    """A reverse, batch-first RNN of two steps with Relu, its initial state
    given."""
    return graph(
        [node("RNN", ["x", "w", "r", "b", "", "h0"], ["y", "h"],
              hidden_size=3, direction="reverse", activations=["Relu"],
              layout=1)],
        [value("x", F, [BATCH, 2, 4]), value("h0", F, [BATCH, 1, 3])],
        [value("y", F, [BATCH, 2, 1, 3]), value("h", F, [BATCH, 1, 3])],
        [init("w", weights(1, 3, 4)), init("r", weights(1, 3, 3, seed=1)),
         init("b", weights(1, 6, seed=2))], opset=14)


@model
def lstm_input_forget():
    return graph(
        [node("LSTM", ["x", "w", "r"], ["y"], hidden_size=2, input_forget=1,
              layout=1)],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 1, 2])],
        [init("w", weights(1, 8, 4)), init("r", weights(1, 8, 2, seed=1))],
        opset=14)


@model
def gru_leaky():
    return graph(
        [node("GRU", ["x", "w", "r"], ["y"], hidden_size=2, layout=1,
              activations=["LeakyRelu", "Tanh"])],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 1, 2])],
        [init("w", weights(1, 6, 4)), init("r", weights(1, 6, 2, seed=1))],
        opset=14)


@model
def conv1d_pool():
    """A 1-D convolution (strided, padded) and a 1-D max pool over NCL."""
    return graph(
        [node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3], strides=[2],
              pads=[1, 1]),
         node("MaxPool", ["c"], ["out"], kernel_shape=[2], strides=[2])],
        [value("x", F, [BATCH, 2, 9])], [value("out", F, [BATCH, 4, 2])],
        [init("w", weights(4, 2, 3)), init("b", weights(4, seed=1))])


@model
def trig_round_pow():
    """Tan (sin / cos), Round, and Pow with a tensor of exponents."""
    return graph(
        [node("Tan", ["x"], ["t"]), node("Round", ["t"], ["r"]),
         node("Pow", ["r", "e"], ["out"])],
        [value("x", F, [BATCH, 3]), value("e", F, [BATCH, 3])],
        [value("out", F, [BATCH, 3])])


@model
def integer_ops():
    """Integer arithmetic: Max, Div (truncating), Neg, and an int64 base
    raised to float exponents."""
    I = TensorProto.INT64
    return graph(
        [node("Max", ["x", "y"], ["m"]), node("Div", ["m", "y"], ["q"]),
         node("Neg", ["q"], ["n"]), node("Pow", ["n", "e"], ["out"])],
        [value("x", I, [BATCH, 3]), value("y", I, [BATCH, 3]),
         value("e", F, [BATCH, 3])],
        [value("out", I, [BATCH, 3])])


@model
def isnan_f64():
    """IsNaN of float64 data, negated: a boolean consumer of its mask."""
    D = TensorProto.DOUBLE
    return graph(
        [node("IsNaN", ["x"], ["nan"]), node("Not", ["nan"], ["out"])],
        [value("x", D, [BATCH, 3])], [value("out", TensorProto.BOOL, [BATCH, 3])])


@model
def softmax():
    return graph(
        [node("Softmax", ["x"], ["probs"], axis=1),
         node("LogSoftmax", ["probs"], ["out"])],
        [value("x", F, [BATCH, 4, 5])], [value("out", F, [BATCH, 4, 5])])


@model
def scalar_folding():
    """x / sqrt(x.shape[-1]) as exporters spell it: folds to x / 2."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "last"], ["dim"], axis=0),
         node("Cast", ["dim"], ["dim_f"], to=F),
         const("half", 0.5),
         node("Pow", ["dim_f", "half"], ["scale"]),
         node("Div", ["x", "scale"], ["y"])],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 4])],
        [ints("last", -1)])


# ---------------------------------------------------------------------------
# Gemm and MatMul
# ---------------------------------------------------------------------------

@model
def gemm():
    w = [[0.1, 0.2, 0.3], [-0.5, 1.5, 2.25]]
    return graph([node("Gemm", ["x", "fc.weight", "fc.bias"], ["y"],
                       alpha=1.0, beta=1.0, transB=1)],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 2])],
                 [init("fc.weight", w), init("fc.bias", [0.125, -3.0])])


@model
def gemm_nobias():
    return graph([node("Gemm", ["x", "w"], ["y"], transB=1)],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 2])],
                 [init("w", weights(2, 3))])


@model
def gemm_tied():
    """Two layers sharing a weight under two names, as exporters alias
    tied parameters with Identity."""
    return graph([node("Identity", ["w"], ["w_again"]),
                  node("Gemm", ["x", "w"], ["h"], transB=1),
                  node("Gemm", ["h", "w_again"], ["y"], transB=1)],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 3])],
                 [init("w", weights(3, 3))])


@model
def gemm_general():
    return graph([node("Gemm", ["a", "b", "c"], ["y"], alpha=0.5, beta=2.0,
                       transA=1)],
                 [value("a", F, [3, 4])], [value("y", F, [4, 5])],
                 [init("b", weights(3, 5)), init("c", weights(4, 5, seed=1))])


@model
def matmul():
    return graph([node("MatMul", ["x", "w"], ["y"])],
                 [value("x", F, [BATCH, 4, 3])], [value("y", F, [BATCH, 4, 5])],
                 [init("w", weights(3, 5))])


@model
def matmul_vector():
    return graph([node("MatMul", ["x", "v"], ["y"])],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH])],
                 [init("v", [1.0, 2.0, 3.0])])


@model
def matmul_batched():
    return graph([node("MatMul", ["a", "b"], ["y"])],
                 [value("a", F, [BATCH, 2, 3, 4]),
                  value("b", F, [BATCH, 2, 4, 5])],
                 [value("y", F, [BATCH, 2, 3, 5])])


# ---------------------------------------------------------------------------
# Shapes
# ---------------------------------------------------------------------------

@model
def matmul_broadcast():
    """numpy batch broadcasting: per-head matrices shared over the batch,
    a left-hand matrix shared over the batch, and a right-hand side whose
    batch dimensions are all 1."""
    return graph(
        [node("MatMul", ["x", "heads"], ["per_head"]),
         node("MatMul", ["left", "y"], ["mixed"]),
         node("MatMul", ["y", "unit"], ["z"])],
        [value("x", F, [BATCH, 2, 3, 4]), value("y", F, [BATCH, 4, 5])],
        [value("per_head", F, [BATCH, 2, 3, 5]),
         value("mixed", F, [BATCH, 3, 5]), value("z", F, [BATCH, 4, 2])],
        [init("heads", weights(2, 4, 5)), init("left", weights(3, 4, seed=1)),
         init("unit", weights(1, 5, 2, seed=2))])


@model
def matmul_batch_mismatch():
    """Batch dimensions 2 and 3 do not broadcast."""
    return graph([node("MatMul", ["x", "w"], ["y"])],
                 [value("x", F, [BATCH, 2, 3, 4])],
                 [value("y", F, [BATCH, 2, 3, 5])],
                 [init("w", weights(3, 4, 5))])


@model
def flatten():
    return graph([node("Flatten", ["x"], ["y"], axis=2)],
                 [value("x", F, [BATCH, 2, 3, 4])], [value("y", F, [None, 12])])


@model
def swish_chain():
    """64 x = x * sigmoid(x), then a Flatten that asks for the symbolic
    shape: each Mul reaches the input along two paths, 2^64 in all if
    shapes are recomputed per query instead of remembered per value."""
    nodes, x = [], "x"
    for i in range(64):
        nodes.append(node("Sigmoid", [x], [f"s{i}"]))
        nodes.append(node("Mul", [x, f"s{i}"], [f"m{i}"]))
        x = f"m{i}"
    nodes.append(node("Flatten", [x], ["y"], axis=1))
    return graph(nodes, [value("x", F, [BATCH, 2, 3])],
                 [value("y", F, [None, 6])])


@model
def reshape():
    return graph([node("Reshape", ["x", "shape"], ["y"])],
                 [value("x", F, [BATCH, 2, 3, 4])],
                 [value("y", F, [BATCH, 6, 4])], [ints("shape", [0, -1, 4])])


@model
def shape_reshape():
    """x.view(x.size(0), -1), then rows = x.view(-1, *x.shape[2:]) and
    rows.view(rows.size(0) // 2, -1), as torch.onnx exports them."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
         node("Concat", ["batch1", "minus1"], ["target"], axis=0),
         node("Reshape", ["x", "target"], ["flat"]),
         node("Shape", ["x"], ["tail"], start=2),
         node("Concat", ["minus1", "tail"], ["target2"], axis=0),
         node("Reshape", ["x", "target2"], ["rows"]),
         node("Shape", ["rows"], ["rows_shape"]),
         node("Gather", ["rows_shape", "zero"], ["rows_batch"], axis=0),
         node("Div", ["rows_batch", "two"], ["half"]),
         node("Unsqueeze", ["half", "axes0"], ["half1"]),
         node("Concat", ["half1", "minus1"], ["target3"], axis=0),
         node("Reshape", ["rows", "target3"], ["y"])],
        [value("x", F, [BATCH, 2, 3, 4])],
        [value("flat", F, [BATCH, 24]), value("y", F, [BATCH, 24])],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1]),
         ints("two", 2)],
        opset=15)


@model
def transpose():
    return graph(
        [node("Transpose", ["x"], ["t"], perm=[0, 2, 1]),
         node("Transpose", ["t"], ["y"])],
        [value("x", F, [BATCH, 2, 3])], [value("y", F, [2, 3, None])])


@model
def concat():
    return graph([node("Concat", ["x", "y"], ["z"], axis=-1)],
                 [value("x", F, [BATCH, 2]), value("y", F, [BATCH, 3])],
                 [value("z", F, [BATCH, 5])])


@model
def slice():
    return graph(
        [node("Slice", ["x", "starts", "ends", "axes", "steps"], ["y"])],
        [value("x", F, [4, 6])], [value("y", F, [3, 3])],
        [ints("starts", [1, -100]), ints("ends", [2**62, 100]),
         ints("axes", [0, -1]), ints("steps", [1, 2])])


@model
def split():
    return graph([node("Split", ["x", "sizes"], ["a", "b"], axis=1)],
                 [value("x", F, [4, 6])],
                 [value("a", F, [4, 2]), value("b", F, [4, 4])],
                 [ints("sizes", [2, 4])])


@model
def batch_slice_split():
    """Slices and splits of features on batched tensors (attention's packed
    q/k/v): the batch dimension stays whole, up to x.size(0) included."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
         node("Concat", ["zero1", "one"], ["starts"], axis=0),
         node("Concat", ["batch1", "big"], ["ends"], axis=0),
         node("Slice", ["x", "starts", "ends", "axes", "steps"], ["q"]),
         node("Split", ["x", "sizes"], ["k", "v"], axis=-1),
         node("Gather", ["x", "zero"], ["first"], axis=2)],
        [value("x", F, [BATCH, 3, 6])],
        [value("q", F, [BATCH, 3, 3]), value("k", F, [BATCH, 3, 2]),
         value("v", F, [BATCH, 3, 4]), value("first", F, [BATCH, 3])],
        [ints("zero", 0), ints("zero1", [0]), ints("one", [1]),
         ints("axes0", [0]), ints("big", [2**63 - 1]), ints("axes", [0, 2]),
         ints("steps", [1, 2]), ints("sizes", [2, 4])])


@model
def class_token():
    """torchvision's VisionTransformer: class_token.expand(n, -1, -1), as
    torch.onnx exports it (ConstantOfShape, Equal, Where on the shape), then
    concatenated before the patches."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
         node("Concat", ["batch1", "minus1", "minus1"], ["target"], axis=0),
         node("Shape", ["target"], ["target_shape"]),
         node("ConstantOfShape", ["target_shape"], ["ones"],
              value=numpy_helper.from_array(np.array([1], np.int64))),
         node("Mul", ["ones", "minus1_scalar"], ["minus_ones"]),
         node("Equal", ["target", "minus_ones"], ["is_minus1"]),
         node("Not", ["is_minus1"], ["given"]),
         node("Where", ["given", "target", "ones"], ["size"]),
         node("Expand", ["cls", "size"], ["tokens"]),
         node("Concat", ["tokens", "x"], ["y"], axis=1)],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 4, 4])],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1]),
         ints("minus1_scalar", -1), init("cls", weights(1, 1, 4))])


@model
def masked_fill():
    """A causal mask as torch.onnx exports masked_fill(tril == 0, -inf)
    with the triangle a Constant: Equal folds, Where selects at run time."""
    return graph(
        [const("tril", np.tril(np.ones((3, 3)))),
         const("zero", 0.0), const("fill", -np.inf),
         node("Equal", ["tril", "zero"], ["above"]),
         node("Where", ["above", "fill", "x"], ["masked"]),
         node("Softmax", ["masked"], ["y"], axis=-1)],
        [value("x", F, [BATCH, 3, 3])], [value("y", F, [BATCH, 3, 3])])


@model
def zeros_like_batch():
    """torch.zeros(x.size(0), 1, 4) in forward, concatenated to the input;
    and an integer one, which nn cannot hold."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
         node("Concat", ["batch1", "tail"], ["target"], axis=0),
         node("ConstantOfShape", ["target"], ["zeros"]),
         node("Concat", ["zeros", "x"], ["y"], axis=1)],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 4, 4])],
        [ints("zero", 0), ints("axes0", [0]), ints("tail", [1, 4])])


@model
def int_zeros_like_batch():
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("ConstantOfShape", ["shape"], ["zeros"],
              value=numpy_helper.from_array(np.array([0], np.int64))),
         node("Cast", ["zeros"], ["fz"], to=F),
         node("Add", ["fz", "x"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])])


@model
def huge_constant_of_shape():
    """A tiny file asking for a vast constant: the float splat is folded
    without writing its elements (the Equal on it too), the integer vector
    (a shape value, one entry each) is refused."""
    return graph(
        [node("ConstantOfShape", ["big"], ["ones"],
              value=numpy_helper.from_array(np.array([1.0], np.float32))),
         node("Equal", ["ones", "one"], ["all"]),
         node("Slice", ["ones", "zero1", "two", "zero1"], ["head"]),
         node("ConstantOfShape", ["long"], ["ints"],
              value=numpy_helper.from_array(np.array([1], np.int64))),
         node("Add", ["x", "head"], ["y"])],
        [value("x", F, [BATCH, 2])], [value("y", F, [BATCH, 2])],
        [ints("big", [2**40]), init("one", 1.0), ints("zero1", [0]),
         ints("two", [2]), ints("long", [100000])])


@model
def expand_static():
    """Expand to a static shape, and to the batch of a batched input."""
    return graph(
        [node("Expand", ["b", "shape"], ["e"]),
         node("Shape", ["x"], ["xs"]),
         node("Expand", ["x", "xs"], ["same"]),
         node("Add", ["same", "e"], ["y"])],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 4])],
        [ints("shape", [3, 1]), init("b", weights(4))])


@model
def squeeze_unsqueeze():
    return graph(
        [node("Squeeze", ["x", "one"], ["s"]),
         node("Unsqueeze", ["s", "last"], ["y"])],
        [value("x", F, [BATCH, 1, 3])], [value("y", F, [BATCH, 3, 1])],
        [ints("one", [1]), ints("last", [-1])])


@model
def gather_embedding():
    return graph([node("Gather", ["table", "ids"], ["y"])],
                 [value("ids", I64, [BATCH, 5])],
                 [value("y", F, [BATCH, 5, 4])], [init("table", weights(10, 4))])


@model
def gather_constant():
    return graph(
        [node("Gather", ["x", "two"], ["row"], axis=1),
         node("Gather", ["row", "evens"], ["y"], axis=-1)],
        [value("x", F, [4, 5, 6])], [value("y", F, [4, 3])],
        [ints("two", 2), ints("evens", [0, 2, 4])])


@model
def constant_identity_cast():
    return graph(
        [node("Identity", ["x"], ["same"]),
         node("Cast", ["same"], ["cast"], to=F),
         helper.make_node("Constant", [], ["c"], name="c",
                          value_floats=[1.0, 2.0, 3.0]),
         node("Add", ["cast", "c"], ["y"])],
        [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 3])])


@model
def uint8_linear():
    """A classifier of uint8 pixels: x / 255 through a Gemm (torch.onnx's
    export of nn.Linear on images that stay uint8 until the model)."""
    return graph([node("Cast", ["x"], ["xf"], to=F),
                  node("Mul", ["xf", "scale"], ["xs"]),
                  node("Gemm", ["xs", "w", "b"], ["y"], transB=1)],
                 [value("x", TensorProto.UINT8, [BATCH, 4])],
                 [value("y", F, [BATCH, 3])],
                 [init("scale", np.array(1 / 255, np.float32)),
                  init("w", weights(3, 4)), init("b", weights(3, seed=1))])


@model
def cast_shape():
    """x.view(c.size(0), -1) where c = x.long(): the batch size read from
    the shape of a Cast (an elementwise op with another element type)."""
    return graph(
        [node("Cast", ["x"], ["c"], to=TensorProto.INT64),
         node("Shape", ["c"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Unsqueeze", ["batch", "axes0"], ["batch1"]),
         node("Concat", ["batch1", "minus1"], ["target"], axis=0),
         node("Reshape", ["x", "target"], ["y"])],
        [value("x", F, [BATCH, 2, 3])], [value("y", F, [BATCH, 6])],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1])])


# ---------------------------------------------------------------------------
# Convolution and pooling
# ---------------------------------------------------------------------------

@model
def conv():
    return graph([node("Conv", ["x", "w", "b"], ["y"], group=2,
                       kernel_shape=[3, 3], pads=[1, 0, 1, 2],
                       strides=[2, 1], dilations=[1, 2])],
                 [value("x", F, [BATCH, 2, 8, 8])],
                 [value("y", F, [BATCH, 4, 4, 6])],
                 [init("w", weights(4, 1, 3, 3)), init("b", weights(4))])


def conv_auto_pad(mode):
    return graph([node("Conv", ["x", "w"], ["y"], auto_pad=mode,
                       strides=[2, 2])],
                 [value("x", F, [BATCH, 1, 7, 7])],
                 [value("y", F, [BATCH, 2, 4, 4])],
                 [init("w", weights(2, 1, 4, 4))])


@model
def conv_same_upper():
    return conv_auto_pad("SAME_UPPER")


@model
def conv_same_lower():
    return conv_auto_pad("SAME_LOWER")


@model
def maxpool():
    return graph([node("MaxPool", ["x"], ["y"], kernel_shape=[3, 3],
                       strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1)],
                 [value("x", F, [BATCH, 3, 8, 8])],
                 [value("y", F, [BATCH, 3, 5, 5])])


@model
def avgpool():
    return graph([node("AveragePool", ["x"], ["y"], kernel_shape=[2, 3],
                       pads=[0, 1, 0, 1], count_include_pad=1)],
                 [value("x", F, [BATCH, 3, 6, 6])],
                 [value("y", F, [BATCH, 3, 5, 6])])


@model
def global_avgpool():
    return graph([node("GlobalAveragePool", ["x"], ["y"])],
                 [value("x", F, [BATCH, 3, 6, 6])],
                 [value("y", F, [BATCH, 3, 1, 1])])


# --- GlobalMaxPool, ConvTranspose, Resize, InstanceNormalization ----------

@model
def global_maxpool():
    return graph([node("GlobalMaxPool", ["x"], ["y"])],
                 [value("x", F, [BATCH, 3, 5, 4])],
                 [value("y", F, [BATCH, 3, 1, 1])])


@model
def global_maxpool_4d():
    return graph([node("GlobalMaxPool", ["x"], ["y"])],
                 [value("x", F, [BATCH, 3, 2, 5, 4, 2])],
                 [value("y", F, [BATCH, 3, 1, 1, 1, 1])])


@model
def maxpool_4d():
    return graph([node("MaxPool", ["x"], ["y"], kernel_shape=[1, 2, 2, 1])],
                 [value("x", F, [BATCH, 3, 2, 4, 4, 2])],
                 [value("y", F, [BATCH, 3, 2, 3, 3, 2])])


@model
def maxpool_int16():
    return graph([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
                 [value("x", TensorProto.INT16, [BATCH, 1, 4, 4])],
                 [value("y", TensorProto.INT16, [BATCH, 1, 3, 3])])


@model
def maxpool_uint8():
    """uint8 pooled in f32 (exact) and converted back."""
    return graph([node("MaxPool", ["x"], ["y"], kernel_shape=[2, 2])],
                 [value("x", TensorProto.UINT8, [BATCH, 1, 4, 4])],
                 [value("y", TensorProto.UINT8, [BATCH, 1, 3, 3])])


@model
def pool3d():
    """3-D max and average pools (two 2-D pools each) and a 3-D global max
    pool."""
    return graph([node("MaxPool", ["x"], ["m"], kernel_shape=[2, 3, 3],
                       pads=[1, 1, 1, 1, 1, 0], strides=[1, 2, 2]),
                  node("AveragePool", ["x"], ["a"], kernel_shape=[3, 2, 2],
                       strides=[2, 2, 2]),
                  node("GlobalMaxPool", ["x"], ["g"])],
                 [value("x", F, [BATCH, 2, 5, 6, 7])],
                 [value("m", F, [BATCH, 2, 6, 3, 3]),
                  value("a", F, [BATCH, 2, 2, 3, 3]),
                  value("g", F, [BATCH, 2, 1, 1, 1])])


@model
def conv3d_zero_stride():
    return graph([node("Conv", ["x", "w"], ["y"], strides=[0, 1, 1])],
                 [value("x", F, [BATCH, 1, 4, 4, 4])],
                 [value("y", F, [BATCH, 1, 3, 3, 3])],
                 [init("w", weights(1, 1, 2, 2, 2))])


@model
def conv3d():
    """A grouped, strided, padded 3-D convolution with a bias."""
    return graph([node("Conv", ["x", "w", "b"], ["y"], group=2,
                       kernel_shape=[3, 2, 2], pads=[1, 0, 1, 1, 0, 0],
                       strides=[2, 1, 1])],
                 [value("x", F, [BATCH, 2, 5, 4, 4])],
                 [value("y", F, [BATCH, 4, 3, 3, 4])],
                 [init("w", weights(4, 1, 3, 2, 2)), init("b", weights(4))])


@model
def conv_transpose():
    """Strided, padded, with output_padding, dilation, groups and a bias."""
    return graph([node("ConvTranspose", ["x", "w", "b"], ["y"], group=2,
                       kernel_shape=[3, 2], strides=[2, 3],
                       pads=[1, 0, 1, 1], output_padding=[1, 2],
                       dilations=[1, 2])],
                 [value("x", F, [BATCH, 4, 5, 4])],
                 [value("y", F, [BATCH, 6, 10, 13])],
                 [init("w", weights(4, 3, 3, 2)), init("b", weights(6))])


@model
def conv_transpose_plain():
    return graph([node("ConvTranspose", ["x", "w"], ["y"])],
                 [value("x", F, [BATCH, 2, 3, 3])],
                 [value("y", F, [BATCH, 1, 5, 5])],
                 [init("w", weights(2, 1, 3, 3))])


@model
def pool_wide_pads():
    """Pads of more than half the kernel: explicit padding around the pools
    (-inf for the max, zeros for the averages), the average without the
    padding divided by the elements each window holds."""
    pool = dict(kernel_shape=[3, 3], pads=[2, 2, 2, 2])
    return graph([node("MaxPool", ["x"], ["m"], **pool),
                  node("AveragePool", ["x"], ["a"], **pool)],
                 [value("x", F, [BATCH, 1, 2, 2])],
                 [value("m", F, [BATCH, 1, 4, 4]),
                  value("a", F, [BATCH, 1, 4, 4])])


@model
def avgpool_wide_pads_ceil():
    return graph([node("AveragePool", ["x"], ["a"], kernel_shape=[3, 3],
                       pads=[2, 2, 2, 2], strides=[2, 2], ceil_mode=1)],
                 [value("x", F, [BATCH, 1, 4, 4])],
                 [value("a", F, [BATCH, 1, 4, 4])])


def conv_transpose_with(out_shape, **attrs):
    return graph([node("ConvTranspose", ["x", "w"], ["y"], **attrs)],
                 [value("x", F, [BATCH, 2, 3, 3])],
                 [value("y", F, [BATCH, 1] + out_shape)],
                 [init("w", weights(2, 1, 3, 3))])


@model
def conv_transpose_same():
    """SAME_UPPER: the output is the input times the stride."""
    return conv_transpose_with([6, 6], auto_pad="SAME_UPPER", strides=[2, 2])


@model
def conv_transpose_output_shape():
    """output_shape sets the padding (the odd row at the beginning)."""
    return conv_transpose_with([6, 6], output_shape=[6, 6], strides=[2, 2])


@model
def conv_transpose_output_shape_too_large():
    """Beyond what the input reaches plus less than a stride."""
    return conv_transpose_with([9, 9], output_shape=[9, 9], strides=[2, 2])


@model
def conv_transpose_large_output_padding():
    return conv_transpose_with([5, 5], output_padding=[1, 1], dilations=[2, 2])


@model
def conv_transpose_1d():
    return graph([node("ConvTranspose", ["x", "w"], ["y"])],
                 [value("x", F, [BATCH, 2, 3])], [value("y", F, [BATCH, 1, 5])],
                 [init("w", weights(2, 1, 3))])


@model
def conv_transpose_3d():
    """Strided along the depth, with a bias."""
    return graph([node("ConvTranspose", ["x", "w", "b"], ["y"],
                       strides=[2, 1, 1])],
                 [value("x", F, [BATCH, 2, 3, 3, 3])],
                 [value("y", F, [BATCH, 1, 6, 5, 5])],
                 [init("w", weights(2, 1, 2, 3, 3)), init("b", weights(1))])


@model
def conv_transpose_4d():
    return graph([node("ConvTranspose", ["x", "w"], ["y"])],
                 [value("x", F, [BATCH, 2, 3, 3, 3, 3])],
                 [value("y", F, [BATCH, 1, 5, 5, 5, 5])],
                 [init("w", weights(2, 1, 3, 3, 3, 3))])


def resize_graph(inputs, out_shape, opset=13, **attrs):
    """Resize of a [N, 2, 3, 4] image; `inputs` are roi, scales, sizes as
    (name, array, dtype) or None for an absent input."""
    nodes, names = [], ["x"]
    for i, given in enumerate(inputs):
        if given is None:
            names.append("")
            continue
        name, array, dtype = given
        nodes.append(const(name, array, dtype))
        names.append(name)
    nodes.append(node("Resize", names, ["y"], **attrs))
    return graph(nodes, [value("x", F, [BATCH, 2, 3, 4])],
                 [value("y", F, out_shape)], opset=opset)


@model
def resize_nearest():
    """nn.Upsample(scale_factor=2) as torch.onnx writes it."""
    return resize_graph([None, ("scales", [1, 1, 2, 2], np.float32)],
                        [BATCH, 2, 6, 8], mode="nearest",
                        coordinate_transformation_mode="asymmetric",
                        nearest_mode="floor")


@model
def resize_linear_sizes():
    """Bilinear to sizes, half_pixel; only the width changes. The sizes are
    Concat(Shape(x)[:2], [3, 6]), as torch.onnx writes them, and roi and
    scales empty tensors."""
    return graph(
        [const("roi", [], np.float32), const("scales", [], np.float32),
         node("Shape", ["x"], ["shape"]),
         const("start", [0], np.int64), const("end", [2], np.int64),
         node("Slice", ["shape", "start", "end"], ["nc"]),
         const("hw", [3, 6], np.int64),
         node("Concat", ["nc", "hw"], ["sizes"], axis=0),
         node("Resize", ["x", "roi", "scales", "sizes"], ["y"],
              mode="linear")],
        [value("x", F, [BATCH, 2, 3, 4])], [value("y", F, [BATCH, 2, 3, 6])])


@model
def resize_linear_rows():
    """Bilinear with align_corners; only the height changes."""
    return resize_graph([None, ("scales", [1, 1, 2, 1], np.float32)],
                        [BATCH, 2, 6, 4], mode="linear",
                        coordinate_transformation_mode="align_corners")


@model
def resize_axes_opset18():
    """Opset 18: scales for the resized axes only (H and W), bilinear
    upscaling with antialias=1 (no effect when enlarging)."""
    return resize_graph([None, ("scales", [2, 2], np.float32)],
                        [BATCH, 2, 6, 8], opset=18, mode="linear",
                        axes=[-2, -1], antialias=1)


@model
def resize_antialias_shrink():
    return resize_graph([None, ("scales", [1, 1, 0.5, 0.5], np.float32)],
                        [BATCH, 2, 1, 2], opset=18, mode="linear",
                        antialias=1)


@model
def resize_aspect_policy():
    return resize_graph([None, None, ("sizes", [4, 4], np.int64)],
                        [BATCH, 2, 4, 4], opset=18, mode="nearest",
                        axes=[2, 3], keep_aspect_ratio_policy="not_larger")


@model
def groupnorm_bad_groups():
    """GroupNormalization (opset 21) with 4 groups of 6 channels."""
    return graph(
        [const("scale", np.ones(6), np.float32),
         const("bias", np.zeros(6), np.float32),
         node("GroupNormalization", ["x", "scale", "bias"], ["y"],
              num_groups=4)],
        [value("x", F, [BATCH, 6, 3, 4])], [value("y", F, [BATCH, 6, 3, 4])],
        opset=21)


@model
def resize_cubic():
    return resize_graph([None, ("scales", [1, 1, 2, 2], np.float32)],
                        [BATCH, 2, 6, 8], mode="cubic")


@model
def resize_crop():
    return resize_graph([("roi", [0, 0, 0, 0, 1, 1, 1, 1], np.float32),
                         ("scales", [1, 1, 2, 2], np.float32)],
                        [BATCH, 2, 6, 8], mode="linear",
                        coordinate_transformation_mode="tf_crop_and_resize")


@model
def resize_channels():
    return resize_graph([None, ("scales", [1, 2, 1, 1], np.float32)],
                        [BATCH, 2, 6, 8], mode="nearest")


@model
def instance_norm():
    return graph([node("InstanceNormalization", ["x", "scale", "bias"], ["y"],
                       epsilon=1e-3)],
                 [value("x", F, [BATCH, 3, 4, 5])],
                 [value("y", F, [BATCH, 3, 4, 5])],
                 [init("scale", weights(3, seed=1)),
                  init("bias", weights(3, seed=2))])


@model
def instance_norm_bad_scale():
    return graph([node("InstanceNormalization", ["x", "scale", "bias"], ["y"])],
                 [value("x", F, [BATCH, 3, 4, 5])],
                 [value("y", F, [BATCH, 3, 4, 5])],
                 [init("scale", weights(1)), init("bias", weights(3))])


def torch_norm_model(opset):
    import torch
    from torch import nn

    torch.manual_seed(0)
    m = nn.Sequential(nn.Conv2d(2, 4, 3, padding=1), nn.GroupNorm(2, 4),
                      nn.ReLU(), nn.InstanceNorm2d(4, affine=True),
                      nn.AdaptiveMaxPool2d(1), nn.Flatten())
    return export(m, torch.randn(2, 2, 6, 6), (["image"], ["features"]),
                  opset, training=True)


@model
def torch_norms13():
    return torch_norm_model(13)


@model
def torch_norms17():
    return torch_norm_model(17)


def torch_upsampler(opset):
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Upsampler(nn.Module):
        def __init__(self):
            super().__init__()
            self.up = nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1,
                                         output_padding=1)

        def forward(self, x):
            y = self.up(x)
            near = nn.functional.interpolate(y, scale_factor=2, mode="nearest")
            bilinear = nn.functional.interpolate(y, scale_factor=2,
                                                 mode="bilinear",
                                                 align_corners=False)
            corners = nn.functional.interpolate(y, size=(5, 7),
                                                mode="bilinear",
                                                align_corners=True)
            return near + bilinear, corners

    return export(Upsampler(), torch.randn(2, 3, 4, 4),
                  (["image"], ["up", "corners"]), opset, training=True)


@model
def torch_upsampler13():
    return torch_upsampler(13)


@model
def torch_upsampler17():
    return torch_upsampler(17)


# ---------------------------------------------------------------------------
# Normalisation, reductions, dropout
# ---------------------------------------------------------------------------

def batchnorm_inits():
    return [init("bn.weight", [1.0, 2.0, 3.0]), init("bn.bias", [0.0, 0.5, 1.0]),
            init("bn.running_mean", [0.1, 0.2, 0.3]),
            init("bn.running_var", [1.0, 1.5, 2.0])]


@model
def batchnorm_eval():
    return graph([node("BatchNormalization",
                       ["x", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var"], ["y"], epsilon=1e-3)],
                 [value("x", F, [BATCH, 3, 4, 4])],
                 [value("y", F, [BATCH, 3, 4, 4])], batchnorm_inits())


@model
def batchnorm_train():
    return graph([node("BatchNormalization",
                       ["x", "bn.weight", "bn.bias", "bn.running_mean",
                        "bn.running_var"], ["y", "mean", "var"],
                       momentum=0.9, training_mode=1)],
                 [value("x", F, [BATCH, 3, 4, 4])],
                 [value("y", F, [BATCH, 3, 4, 4])], batchnorm_inits(),
                 opset=15)


@model
def layernorm():
    return graph([node("LayerNormalization", ["x", "ln.weight", "ln.bias"],
                       ["y"], axis=-1, epsilon=1e-5)],
                 [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 4])],
                 [init("ln.weight", weights(4)), init("ln.bias", weights(4, seed=1))],
                 opset=17)


def layernorm_chain_graph(exponent):
    """The chain torch.onnx emits for nn.LayerNorm below opset 17."""
    return graph(
        [node("ReduceMean", ["x"], ["mean"], axes=[-1]),
         node("Sub", ["x", "mean"], ["centred"]),
         const("exponent", exponent),
         node("Pow", ["centred", "exponent"], ["square"]),
         node("ReduceMean", ["square"], ["var"], axes=[-1]),
         const("eps", 1e-5),
         node("Add", ["var", "eps"], ["shifted"]),
         node("Sqrt", ["shifted"], ["std"]),
         node("Div", ["centred", "std"], ["normed"]),
         node("Mul", ["normed", "ln.weight"], ["scaled"]),
         node("Add", ["scaled", "ln.bias"], ["y"])],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 3, 4])],
        [init("ln.weight", weights(4)), init("ln.bias", weights(4, seed=1))])


@model
def layernorm_chain():
    return layernorm_chain_graph(2.0)


@model
def layernorm_chain_mismatch():
    return layernorm_chain_graph(3.0)


@model
def reduce_mean():
    return graph([node("ReduceMean", ["x"], ["y"], axes=[1], keepdims=0)],
                 [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 4])])


@model
def reductions():
    """ReduceSum with axes as an input (opset 13), ReduceMax with the axes
    attribute, and ReduceSum with no axes and noop_with_empty_axes."""
    return graph(
        [node("ReduceSum", ["x", "axes"], ["s"]),
         node("ReduceMax", ["s"], ["m"], axes=[-1], keepdims=0),
         node("ReduceSum", ["m"], ["y"], noop_with_empty_axes=1)],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 1])],
        [ints("axes", [1])])


@model
def reduce_runtime_axes():
    """Reduction axes must fold to a constant."""
    return graph([node("ReduceSum", ["x", "axes"], ["y"])],
                 [value("x", F, [BATCH, 3]), value("axes", I64, [1])],
                 [value("y", F, [None, None])])


def gelu_graph(half):
    """x * 0.5 * (1 + erf(x / sqrt(2))) as torch.onnx emits F.gelu."""
    return graph(
        [const("sqrt2", np.sqrt(2.0)),
         node("Div", ["x", "sqrt2"], ["scaled"]),
         node("Erf", ["scaled"], ["erf"]),
         const("one", 1.0),
         node("Add", ["erf", "one"], ["shifted"]),
         node("Mul", ["x", "shifted"], ["prod"]),
         const("half", half),
         node("Mul", ["prod", "half"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])])


@model
def gelu():
    return gelu_graph(0.5)


@model
def gelu_mismatch():
    return gelu_graph(0.25)


@model
def dropout():
    return graph(
        [node("Dropout", ["x", "ratio", "training"], ["d1", "mask"]),
         node("Dropout", ["d1"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
        [init("ratio", 0.25),
         numpy_helper.from_array(np.array(True), "training")])


@model
def mlp_dropout():
    """A classifier with dropout, to train end to end."""
    return graph(
        [node("Gemm", ["x", "fc1.weight", "fc1.bias"], ["h"], transB=1),
         node("Relu", ["h"], ["r"]),
         node("Dropout", ["r", "ratio", "training"], ["d"]),
         node("Gemm", ["d", "fc2.weight", "fc2.bias"], ["logits"], transB=1)],
        [value("x", F, [BATCH, 4])], [value("logits", F, [BATCH, 3])],
        [init("fc1.weight", weights(8, 4)), init("fc1.bias", weights(8, seed=1)),
         init("fc2.weight", weights(3, 8, seed=2)),
         init("fc2.bias", weights(3, seed=3)), init("ratio", 0.5),
         numpy_helper.from_array(np.array(True), "training")])


# ---------------------------------------------------------------------------
# Exported by torch.onnx
# ---------------------------------------------------------------------------

def export(module, args, names, opset, training=False, axes=None):
    import torch

    mode = (torch.onnx.TrainingMode.TRAINING if training
            else torch.onnx.TrainingMode.EVAL)
    inputs, outputs = names
    axes = axes or {n: {0: "batch"} for n in inputs + outputs}
    buffer = io.BytesIO()
    torch.onnx.export(module, args, buffer, input_names=inputs,
                      output_names=outputs, opset_version=opset,
                      training=mode, dynamic_axes=axes,
                      do_constant_folding=not training)
    return onnx.load_from_string(buffer.getvalue())


def torch_modules():
    import torch
    from torch import nn

    torch.manual_seed(0)

    class LeNet(nn.Module):
        def __init__(self, batchnorm=False):
            super().__init__()
            self.conv1 = nn.Conv2d(1, 6, 5, padding=2)
            self.bn = nn.BatchNorm2d(6) if batchnorm else None
            self.conv2 = nn.Conv2d(6, 16, 5)
            self.fc = nn.Linear(16 * 5 * 5, 10)

        def forward(self, x):
            x = self.conv1(x)
            if self.bn is not None:
                x = self.bn(x)
            x = torch.max_pool2d(torch.relu(x), 2)
            x = torch.max_pool2d(torch.relu(self.conv2(x)), 2)
            return self.fc(x.view(x.size(0), -1))

    class Block(nn.Module):
        """A pre-norm transformer block over token embeddings, mean-pooled."""

        def __init__(self, vocab=50, dim=16, heads=2, classes=5):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.ln1 = nn.LayerNorm(dim)
            self.q = nn.Linear(dim, dim)
            self.k = nn.Linear(dim, dim)
            self.v = nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)
            self.ln2 = nn.LayerNorm(dim)
            self.fc1 = nn.Linear(dim, 4 * dim)
            self.fc2 = nn.Linear(4 * dim, dim)
            self.drop = nn.Dropout(0.1)
            self.head = nn.Linear(dim, classes)
            self.heads = heads

        def forward(self, ids):
            x = self.embed(ids)
            b, t, d = x.shape
            h = self.ln1(x)

            def split_heads(y):
                return y.view(b, t, self.heads, d // self.heads).transpose(1, 2)

            q, k, v = split_heads(self.q(h)), split_heads(self.k(h)), split_heads(self.v(h))
            scores = q @ k.transpose(-2, -1) / (d // self.heads) ** 0.5
            attn = self.drop(torch.softmax(scores, dim=-1)) @ v
            x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
            x = x + self.fc2(self.drop(nn.functional.gelu(self.fc1(self.ln2(x)))))
            return self.head(x.mean(dim=1))

    mlp = nn.Sequential(nn.Flatten(), nn.Linear(16, 8), nn.ReLU(),
                        nn.Linear(8, 3))
    return torch, mlp, LeNet, Block


@model
def torch_mlp():
    torch, mlp, _, _ = torch_modules()
    return export(mlp, torch.randn(2, 1, 4, 4), (["image"], ["logits"]), 13)


@model
def torch_mnist_mlp():
    """The Fashion-MNIST classifier of examples/mlp.mlir."""
    torch, _, _, _ = torch_modules()
    from torch import nn
    m = nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(),
                      nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
    return export(m, torch.randn(2, 1, 28, 28), (["image"], ["logits"]), 13)


@model
def torch_lenet13():
    torch, _, LeNet, _ = torch_modules()
    return export(LeNet(), torch.randn(2, 1, 28, 28), (["image"], ["logits"]),
                  13)


@model
def torch_lenet17():
    torch, _, LeNet, _ = torch_modules()
    return export(LeNet(), torch.randn(2, 1, 28, 28), (["image"], ["logits"]),
                  17)


@model
def torch_cnn_bn_train():
    torch, _, LeNet, _ = torch_modules()
    return export(LeNet(batchnorm=True), torch.randn(2, 1, 28, 28),
                  (["image"], ["logits"]), 13, training=True)


@model
def torch_cnn_bn_eval():
    torch, _, LeNet, _ = torch_modules()
    return export(LeNet(batchnorm=True).eval(), torch.randn(2, 1, 28, 28),
                  (["image"], ["logits"]), 13)


@model
def torch_block13():
    torch, _, _, Block = torch_modules()
    return export(Block(), torch.randint(0, 50, (2, 8)), (["ids"], ["logits"]),
                  13, training=True)


@model
def torch_block17():
    torch, _, _, Block = torch_modules()
    return export(Block(), torch.randint(0, 50, (2, 8)), (["ids"], ["logits"]),
                  17, training=True)


@model
def torch_encoder():
    """torch.nn.TransformerEncoder (2 pre-norm GELU layers, batch_first,
    dropout 0.1) over 8 vectors of 6 features, mean-pooled, at opset 14."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.embed = nn.Linear(6, 16)
            layer = nn.TransformerEncoderLayer(
                16, 2, dim_feedforward=32, dropout=0.1, activation="gelu",
                batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 2,
                                                 enable_nested_tensor=False)
            self.head = nn.Linear(16, 5)

        def forward(self, x):
            return self.head(self.encoder(self.embed(x)).mean(dim=1))

    return export(Encoder(), torch.randn(2, 8, 6), (["x"], ["logits"]), 14,
                  training=True)


@model
def torch_causal():
    """Causal self-attention as GPT-style decoders write it: a position
    embedding sliced to the sequence, a packed q/k/v projection split, and
    masked_fill(-inf) with the mask a registered buffer."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Causal(nn.Module):
        def __init__(self, vocab=20, tokens=6, dim=8):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.pos = nn.Parameter(torch.randn(1, tokens, dim) * 0.1)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.head = nn.Linear(dim, vocab)
            self.register_buffer("mask", torch.tril(
                torch.ones(tokens, tokens)).view(1, tokens, tokens))

        def forward(self, ids):
            t = ids.shape[1]
            x = self.embed(ids) + self.pos[:, :t]
            q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
            att = q @ k.transpose(1, 2) / x.shape[-1] ** 0.5
            att = att.masked_fill(self.mask[:, :t, :t] == 0, float("-inf"))
            return self.head(torch.softmax(att, dim=-1) @ v).mean(dim=1)

    return export(Causal(), torch.randint(0, 20, (2, 6)),
                  (["ids"], ["logits"]), 14, training=True)


@model
def torch_causal_triu():
    """Causal self-attention with the mask built in forward, as
    `torch.triu(torch.ones(t, t, dtype=torch.bool), 1)` and masked_fill."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class CausalTriu(nn.Module):
        def __init__(self, vocab=20, dim=8):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.qkv = nn.Linear(dim, 3 * dim)
            self.head = nn.Linear(dim, vocab)

        def forward(self, ids):
            t = ids.shape[1]
            x = self.embed(ids)
            q, k, v = self.qkv(x).split(x.shape[-1], dim=2)
            att = q @ k.transpose(1, 2) / x.shape[-1] ** 0.5
            future = torch.triu(torch.ones(t, t, dtype=torch.bool), 1)
            att = att.masked_fill(future, float("-inf"))
            return self.head(torch.softmax(att, dim=-1) @ v).mean(dim=1)

    return export(CausalTriu(), torch.randint(0, 20, (2, 6)),
                  (["ids"], ["logits"]), 14, training=True)


def torchvision_model(name):
    """A torchvision classifier (10 classes) exported for training at opset
    14, as issue 10 asks: 32x32 images keep the compile tests short."""
    import torch
    import torchvision

    torch.manual_seed(0)
    module = getattr(torchvision.models, name)(num_classes=10)
    return export(module, torch.randn(2, 3, 32, 32), (["image"], ["logits"]),
                  14, training=True)


@model
def torchvision_mobilenet_v2():
    return torchvision_model("mobilenet_v2")


@model
def torchvision_mobilenet_v3_small():
    return torchvision_model("mobilenet_v3_small")


@model
def torchvision_squeezenet1_1():
    return torchvision_model("squeezenet1_1")


@model
def torchvision_shufflenet_v2():
    return torchvision_model("shufflenet_v2_x0_5")


@model
def torchvision_vit():
    """A small VisionTransformer (2 layers, width 16, 8x8 patches of 32x32
    images): its class token is expanded over the batch."""
    import torch
    import torchvision

    torch.manual_seed(0)
    module = torchvision.models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2,
        hidden_dim=16, mlp_dim=32, num_classes=10)
    return export(module, torch.randn(2, 3, 32, 32), (["image"], ["logits"]),
                  14, training=True)


# ---------------------------------------------------------------------------
# Opsets 18 to 21: forms that changed, and the ops added with them
# ---------------------------------------------------------------------------

@model
def reductions_opset18():
    """Every reduction with its axes as an input (opset 18), keepdims both
    ways, and noop_with_empty_axes with and without axes."""
    return graph(
        [node("ReduceMean", ["x", "axes1"], ["mean"]),
         node("ReduceMax", ["mean", "axes2"], ["max"], keepdims=0),
         node("ReduceMin", ["x", "axes2"], ["min"], keepdims=0),
         node("ReduceL2", ["x", "axes1"], ["l2"]),
         node("ReduceSum", ["l2"], ["same"], noop_with_empty_axes=1),
         node("ReduceSum", ["same", "axes2"], ["sum"],
              noop_with_empty_axes=1, keepdims=0)],
        [value("x", F, [BATCH, 3, 4])],
        [value("max", F, [BATCH]), value("min", F, [BATCH, 3]),
         value("sum", F, [BATCH, 1])],
        [ints("axes1", [1]), ints("axes2", [-1])], opset=18)


@model
def split_num_outputs():
    """Split with num_outputs (opset 18): 5 into 3 parts of 2, 2 and 1."""
    return graph([node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
                 [value("x", F, [BATCH, 5])],
                 [value("a", F, [BATCH, 2]), value("b", F, [BATCH, 2]),
                  value("c", F, [BATCH, 1])], opset=18)


@model
def gelu_opset20():
    """The native Gelu of opset 20, in both forms."""
    return graph([node("Gelu", ["x"], ["g"]),
                  node("Gelu", ["g"], ["y"], approximate="tanh")],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
                 opset=20)


@model
def opset21():
    """Opset 21 with a Cast carrying opset 19's saturate attribute."""
    return graph([node("Cast", ["x"], ["c"], to=F, saturate=1),
                  node("Relu", ["c"], ["y"])],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
                 opset=21)


@model
def opset22():
    return graph([node("Relu", ["x"], ["y"])], [value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4])], opset=22)


@model
def gelu_opset17():
    """Gelu is no op before opset 20."""
    g = gelu_opset20()
    g.opset_import[0].version = 17
    return g


@model
def gelu_bad_form():
    return graph([node("Gelu", ["x"], ["y"], approximate="sigmoid")],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
                 opset=20)


@model
def split_uneven_outputs():
    """num_outputs 4 of a dimension of 5 gives 3 parts of 2, 2 and 1."""
    return graph([node("Split", ["x"], ["a", "b", "c", "d"], axis=1,
                       num_outputs=4)],
                 [value("x", F, [BATCH, 5])],
                 [value(o, F, [BATCH, 2]) for o in "abcd"], opset=18)


@model
def reduce_axes_attribute_opset18():
    """The axes attribute is gone from ReduceMean-18: the checker, given the
    newer schemas, still catches what a model of opset 17 would be refused
    for."""
    return graph([node("ReduceMean", ["x"], ["y"], axes=[1])],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 1])],
                 opset=18)


# ---------------------------------------------------------------------------
# Max and Min
# ---------------------------------------------------------------------------

@model
def max_min_batch():
    """Max of batched activations, then a reshape whose target is computed
    from the result's shape (x.view(x.size(0), -1))."""
    return graph(
        [node("Max", ["x", "y"], ["m"]),
         node("Shape", ["m"], ["shape"]),
         node("Gather", ["shape", "zero"], ["n"], axis=0),
         node("Unsqueeze", ["n", "axes0"], ["n1"]),
         node("Concat", ["n1", "minus1"], ["target"], axis=0),
         node("Reshape", ["m", "target"], ["out"])],
        [value("x", F, [BATCH, 2, 3]), value("y", F, [BATCH, 2, 3])],
        [value("out", F, [BATCH, 6])],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1])])


@model
def max_min():
    """Variadic Max with broadcasting (a rank-1 parameter, a scalar), a
    one-input Min (the identity) and a two-input Min."""
    return graph(
        [node("Max", ["x", "y", "floor"], ["hi"]),
         node("Min", ["hi"], ["same"]),
         node("Min", ["same", "cap"], ["out"])],
        [value("x", F, [BATCH, 3]), value("y", F, [BATCH, 3])],
        [value("out", F, [BATCH, 3])],
        [init("floor", [0.0, -1.0, 0.5]), init("cap", 2.0)])


@model
def padding_mask():
    """A padding mask from the token ids (ids == 0) fills attention scores
    (masked_fill, with the Cast to bool torch exports); Less,
    GreaterOrEqual, Not, And and Or of run-time masks, a constant boolean
    combined with a run-time one, float operands and a float Cast to bool."""
    return graph(
        [const("ninf", -np.inf), const("half", 0.5),
         node("Equal", ["ids", "zero"], ["pad"]),
         node("Unsqueeze", ["pad", "axes1"], ["pad1"]),
         node("Cast", ["pad1"], ["pad1b"], to=TensorProto.BOOL),
         node("Where", ["pad1b", "ninf", "scores"], ["masked"]),
         node("Less", ["ids", "two"], ["small"]),
         node("GreaterOrEqual", ["x", "half"], ["big"]),
         node("Not", ["small"], ["large"]),
         node("And", ["large", "big"], ["both"]),
         node("Or", ["both", "first"], ["either"]),
         node("Cast", ["x"], ["nonzero"], to=TensorProto.BOOL),
         node("And", ["either", "nonzero"], ["chosen"]),
         node("Where", ["chosen", "x", "half"], ["picked"])],
        [value("ids", I64, [BATCH, 4]), value("scores", F, [BATCH, 2, 4]),
         value("x", F, [BATCH, 4])],
        [value("masked", F, [BATCH, 2, 4]), value("picked", F, [BATCH, 4])],
        [ints("zero", 0), ints("two", 2), ints("axes1", [1]),
         init("first", np.array([True, False, False, False]), np.bool_)])


# ---------------------------------------------------------------------------
# Tile and Trilu
# ---------------------------------------------------------------------------

@model
def tile():
    return graph([node("Tile", ["x", "repeats"], ["y"])],
                 [value("x", F, [BATCH, 2, 3])], [value("y", F, [BATCH, 4, 9])],
                 [ints("repeats", [1, 2, 3])])


@model
def tile_batch():
    """Repeating the batch axis gives a multiple of the batch size."""
    return graph([node("Tile", ["x", "repeats"], ["y"])],
                 [value("x", F, [BATCH, 3])], [value("y", F, [None, 3])],
                 [ints("repeats", [2, 1])])


@model
def trilu():
    """A causal mask built in forward: Trilu(ones, k=1) of a constant folds
    to a mask; Trilu of a run-time tensor (lower, k=-1) is an nn.where."""
    return graph(
        [node("ConstantOfShape", ["shape"], ["ones"],
              value=numpy_helper.from_array(np.array([1.0], np.float32))),
         node("Trilu", ["ones", "one"], ["future"]),
         node("Cast", ["future"], ["mask"], to=TensorProto.BOOL),
         node("Where", ["mask", "fill", "x"], ["masked"]),
         node("Trilu", ["masked", "minus1"], ["y"], upper=0)],
        [value("x", F, [BATCH, 3, 3])], [value("y", F, [BATCH, 3, 3])],
        [ints("shape", [3, 3]), ints("one", 1), ints("minus1", -1),
         init("fill", -np.inf)], opset=14)


# ---------------------------------------------------------------------------
# Pad
# ---------------------------------------------------------------------------

@model
def pad_modes():
    """Pad constant (value 1.5) of the last axis, reflect of the middle one,
    edge of the last one."""
    return graph(
        [node("Pad", ["x", "pads_c", "value"], ["c"]),
         node("Pad", ["c", "pads_r"], ["r"], mode="reflect"),
         node("Pad", ["r", "pads_e"], ["y"], mode="edge")],
        [value("x", F, [BATCH, 3, 4])], [value("y", F, [BATCH, 5, 9])],
        [ints("pads_c", [0, 0, 1, 0, 0, 2]), init("value", 1.5),
         ints("pads_r", [0, 1, 0, 0, 1, 0]), ints("pads_e", [0, 0, 2, 0, 0, 0])])


@model
def pad_axes_opset18():
    """Pad with axes (opset 18) of a static tensor: constant zeros."""
    return graph([node("Pad", ["x", "pads", "", "axes"], ["y"])],
                 [value("x", F, [2, 3])], [value("y", F, [2, 6])],
                 [ints("pads", [1, 2]), ints("axes", [-1])], opset=18)


@model
def pad_wrap():
    return graph([node("Pad", ["x", "pads"], ["y"], mode="wrap")],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 5])],
                 [ints("pads", [0, 1, 0, 1])], opset=19)


# ---------------------------------------------------------------------------
# Einsum
# ---------------------------------------------------------------------------

@model
def einsum_attention():
    """Attention's two products as einsum writes them."""
    return graph(
        [node("Einsum", ["q", "k"], ["scores"], equation="bhqd,bhkd->bhqk"),
         node("Softmax", ["scores"], ["probs"], axis=-1),
         node("Einsum", ["probs", "v"], ["y"], equation="bhqk,bhkd->bhqd")],
        [value("q", F, [BATCH, 2, 3, 4]), value("k", F, [BATCH, 2, 5, 4]),
         value("v", F, [BATCH, 2, 5, 4])], [value("y", F, [BATCH, 2, 3, 4])])


@model
def einsum_forms():
    """A shared right-hand matrix, a contraction first in the left operand
    (transpose_a), and an output in another order (a transpose)."""
    return graph(
        [node("Einsum", ["x", "w"], ["h"], equation="bij,jk->bik"),
         node("Einsum", ["h", "u"], ["g"], equation="bki, bkj -> bji")],
        [value("x", F, [BATCH, 3, 4]), value("u", F, [BATCH, 3, 2])],
        [value("g", F, [BATCH, 2, 5])], [init("w", weights(4, 5))])


@model
def einsum_general():
    """Einsum beyond matrix products: a batched diagonal with an ellipsis,
    then an implicit-output inner product over the last axis."""
    return graph(
        [node("Einsum", ["x"], ["d"], equation="...ii->...i"),
         node("Einsum", ["d", "d"], ["y"], equation="...i,...i")],
        [value("x", F, [BATCH, 3, 3])], [value("y", F, [BATCH])])


@model
def einsum_unsupported():
    return graph([node("Einsum", ["x", "y"], ["z"], equation="bij,bij->bk")],
                 [value("x", F, [BATCH, 3, 4]), value("y", F, [BATCH, 3, 4])],
                 [value("z", F, [BATCH, 3])])


# ---------------------------------------------------------------------------
# Ranges and logical ops (folded)
# ---------------------------------------------------------------------------

@model
def range_mask():
    """A causal mask built from positions, as `torch.arange(t)[None] >
    torch.arange(t)[:, None]` exports it, combined with And/Or; and a float
    Range added to the scores."""
    return graph(
        [node("Range", ["start", "limit", "delta"], ["pos"]),
         node("Unsqueeze", ["pos", "axes0"], ["row"]),
         node("Unsqueeze", ["pos", "axes1"], ["col"]),
         node("Greater", ["row", "col"], ["upper"]),
         node("Less", ["row", "col"], ["lower"]),
         node("Or", ["upper", "lower"], ["offdiag"]),
         node("And", ["offdiag", "upper"], ["future"]),
         node("Range", ["fstart", "flimit", "fdelta"], ["ramp"]),
         node("Add", ["x", "ramp"], ["shifted"]),
         node("Where", ["future", "fill", "shifted"], ["y"])],
        [value("x", F, [BATCH, 3, 3])], [value("y", F, [BATCH, 3, 3])],
        [ints("start", 0), ints("limit", 3), ints("delta", 1),
         ints("axes0", [0]), ints("axes1", [1]), init("fstart", 1.0),
         init("flimit", -0.25), init("fdelta", -0.5), init("fill", -np.inf)])


@model
def range_batch():
    """A Range whose length is the batch size: nn.iota over the batch."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["n"], axis=0),
         node("Range", ["zero", "n", "one"], ["pos"]),
         node("Cast", ["pos"], ["fpos"], to=F),
         node("Add", ["x", "fpos"], ["y"])],
        [value("x", F, [BATCH])], [value("y", F, [BATCH])],
        [ints("zero", 0), ints("one", 1)])


# ---------------------------------------------------------------------------
# Models the importer refuses
# ---------------------------------------------------------------------------

@model
def unsupported_op():
    return graph([node("Relu", ["x"], ["r"]),
                  helper.make_node("Hardmax", ["r"], ["y"], name="pick")],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])])


@model
def opset11_squeeze():
    """Squeeze-11 takes its axes as an attribute; 13 made them an input."""
    return graph([helper.make_node("Squeeze", ["x"], ["y"], name="squeeze",
                                   axes=[1])],
                 [value("x", F, [BATCH, 1, 4])], [value("y", F, [BATCH, 4])],
                 opset=11)


@model
def opset11_conv():
    """Conv-11 and Relu-6 at opset 11: the definitions of opset 13 (Relu-13
    only added bfloat16)."""
    return graph([node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
                  node("Relu", ["c"], ["y"])],
                 [value("x", F, [BATCH, 1, 4, 4])],
                 [value("y", F, [BATCH, 2, 4, 4])],
                 [init("w", np.ones((2, 1, 3, 3)))], opset=11)


@model
def opset18():
    return graph([node("Relu", ["x"], ["y"])], [value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4])], opset=18)


@model
def opset14():
    return graph([node("Relu", ["x"], ["y"])], [value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4])], opset=14)


@model
def opset16():
    return graph([node("Relu", ["x"], ["y"])], [value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4])], opset=16)


@model
def layernorm_opset13():
    m = layernorm()
    m.opset_import[0].version = 13
    return m


@model
def float16_initializer():
    return graph([node("Add", ["x", "b"], ["y"])],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
                 [init("b", [1, 2, 3, 4], np.float16)])


@model
def uint64_input():
    """uint64 needs unsigned 64-bit arithmetic, which nn does not have."""
    U64 = TensorProto.UINT64
    return graph([node("Max", ["x", "x"], ["y"])],
                 [value("x", U64, [BATCH, 4])], [value("y", U64, [BATCH, 4])])


@model
def runtime_shape():
    """A reshape target computed from run-time data cannot fold."""
    return graph([node("Reshape", ["x", "shape"], ["y"])],
                 [value("x", F, [BATCH, 4]), value("shape", I64, [2])],
                 [value("y", F, [None, None])])


@model
def batch_squared():
    """x.view(B * B, -1) has no single batch-dependent dimension."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Mul", ["batch", "batch"], ["square"]),
         node("Unsqueeze", ["square", "axes0"], ["square1"]),
         node("Concat", ["square1", "minus1"], ["target"], axis=0),
         node("Reshape", ["x", "target"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [None, None])],
        [ints("zero", 0), ints("axes0", [0]), ints("minus1", [-1])])


@model
def batch_slice():
    """x[1:] on the batch: a slice of the batch dimension is refused."""
    return graph([node("Slice", ["x", "starts", "ends", "axes"], ["y"])],
                 [value("x", F, [BATCH, 6])], [value("y", F, [None, 6])],
                 [ints("starts", [1]), ints("ends", [2**63 - 1]),
                  ints("axes", [0])])


@model
def batch_dependent_expand():
    """expand(B * B, ...) has a batch-dependent size that is not a multiple
    of B."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Mul", ["batch", "batch"], ["twice"]),
         node("Unsqueeze", ["twice", "axes0"], ["twice1"]),
         node("Concat", ["twice1", "four"], ["target"], axis=0),
         node("Expand", ["b", "target"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [None, 4])],
        [ints("zero", 0), ints("two", 2), ints("axes0", [0]),
         ints("four", [4]), init("b", weights(1, 4))])


@model
def compare_batch():
    """B == 4 depends on the batch size."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Equal", ["shape", "four"], ["eq"]),
         node("Where", ["eq", "shape", "shape"], ["target"]),
         node("Reshape", ["x", "target"], ["y"])],
        [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])],
        [ints("four", [4, 4])])


@model
def compare_masks():
    """Comparing run-time booleans (a mask with True) is refused: masks are
    combined with Not, And and Or."""
    return graph([node("Equal", ["ids", "zero"], ["pad"]),
                  node("Equal", ["pad", "yes"], ["y"])],
                 [value("ids", I64, [BATCH, 4])],
                 [value("y", TensorProto.BOOL, [BATCH, 4])],
                 [ints("zero", 0), init("yes", True, np.bool_)])


@model
def bool_input():
    """A boolean graph input (a padding mask given to the model): a
    masked_fill, its negation, and its Cast to float (a count of the real
    positions)."""
    return graph([node("Where", ["c", "minf", "x"], ["y"]),
                  node("Not", ["c"], ["keep"]),
                  node("Cast", ["keep"], ["fkeep"], to=F),
                  node("Mul", ["x", "fkeep"], ["z"])],
                 [value("c", TensorProto.BOOL, [BATCH, 4]),
                  value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4]), value("z", F, [BATCH, 4])],
                 [init("minf", np.array(-np.inf, np.float32))])


@model
def narrow_types():
    """uint8, int8 and float16 data: uint8 addition wraps (with a uint8
    initializer), int8 negation wraps, float16 products round, and a Cast
    leaves the narrow type."""
    U8, I8, H = TensorProto.UINT8, TensorProto.INT8, TensorProto.FLOAT16
    return graph([node("Add", ["p", "bias"], ["sum"]),
                  node("Neg", ["s"], ["neg"]),
                  node("Mul", ["h", "h"], ["square"]),
                  node("Cast", ["h"], ["wide"], to=F)],
                 [value("p", U8, [BATCH, 4]), value("s", I8, [BATCH, 4]),
                  value("h", H, [BATCH, 4])],
                 [value("sum", U8, [BATCH, 4]), value("neg", I8, [BATCH, 4]),
                  value("square", H, [BATCH, 4]),
                  value("wide", F, [BATCH, 4])],
                 [init("bias", [0, 1, 128, 255], np.uint8)])


@model
def dynamic_feature():
    return graph([node("Relu", ["x"], ["y"])], [value("x", F, [BATCH, "seq"])],
                 [value("y", F, [BATCH, "seq"])])


@model
def clip_runtime_bound():
    """nn.clamp needs its bounds at compile time."""
    return graph([node("Clip", ["x", "lo"], ["y"])],
                 [value("x", F, [BATCH, 4]), value("lo", F, [])],
                 [value("y", F, [BATCH, 4])])


@model
def clip_inverted():
    """min > max, which ONNX defines and no exporter writes."""
    return graph([const("lo", 2.0), const("hi", 1.0),
                  node("Clip", ["x", "lo", "hi"], ["y"])],
                 [value("x", F, [BATCH, 4])], [value("y", F, [BATCH, 4])])


@model
def bad_gemm():
    """Shapes nn.linear's type inference refuses."""
    return graph([node("Gemm", ["x", "w", "b"], ["y"], transB=1)],
                 [value("x", F, [BATCH, 3])], [value("y", F, [BATCH, 2])],
                 [init("w", weights(2, 3)), init("b", weights(5))])


@model
def cast_runtime():
    """Numbers only: a run-time Cast to strings is refused."""
    return graph([node("Cast", ["x"], ["y"], to=TensorProto.STRING)],
                 [value("x", F, [BATCH, 4])],
                 [value("y", TensorProto.STRING, [BATCH, 4])])


@model
def dropout_mask():
    """Dropout with its mask output."""
    return graph([node("Dropout", ["x"], ["y", "mask"])],
                 [value("x", F, [BATCH, 4])],
                 [value("y", F, [BATCH, 4]),
                  value("mask", TensorProto.BOOL, [BATCH, 4])])


@model
def short_raw_data():
    """An initializer whose raw bytes do not fill its shape."""
    m = gemm()
    weight = m.graph.initializer[0]
    weight.raw_data = weight.raw_data[:8]
    return m


@model
def dangling_input():
    """Refers to a value nothing defines (the checker's business)."""
    g = helper.make_graph([node("Add", ["x", "ghost"], ["y"])], "test",
                          [value("x", F, [BATCH, 4])],
                          [value("y", F, [BATCH, 4])])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m


def torch_last_token(gather_elements):
    """A sequence classifier reading the hidden state at the last
    non-padding position, its index counted from the ids at run time:
    `h[torch.arange(B), lengths - 1]` (Range over the batch, a flattening and
    a Gather) or `torch.gather` (GatherElements)."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class LastToken(nn.Module):
        def __init__(self, vocab=20, dim=8, classes=4):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            self.proj = nn.Linear(dim, dim)
            self.head = nn.Linear(dim, classes)

        def forward(self, ids):
            h = torch.tanh(self.proj(self.embed(ids)))
            lengths = (ids != 0).sum(1)
            if gather_elements:
                index = (lengths - 1).view(-1, 1, 1).expand(-1, 1, h.shape[2])
                return self.head(h.gather(1, index)[:, 0])
            return self.head(h[torch.arange(ids.shape[0]), lengths - 1])

    return export(LastToken(), torch.randint(1, 20, (2, 6)),
                  (["ids"], ["logits"]), 14, training=True)


@model
def torch_last_token_index():
    return torch_last_token(False)


@model
def torch_last_token_gather():
    return torch_last_token(True)


@model
def gather_runtime():
    """Gather and GatherElements on activations at run-time indices, a
    data input: a negative axis, and indices of rank 2."""
    return graph(
        [node("Gather", ["x", "ids"], ["rows"], axis=-2),
         node("GatherElements", ["x", "picks"], ["picked"], axis=1)],
        [value("x", F, [BATCH, 5, 3]), value("ids", I64, [2, 2]),
         value("picks", I64, [BATCH, 2, 3])],
        [value("rows", F, [BATCH, 2, 2, 3]), value("picked", F, [BATCH, 2, 3])])


@model
def gather_float_indices():
    """Float indices that are not counts: a Cast of data to int64, which
    truncates (nn.cast)."""
    return graph(
        [node("Cast", ["f"], ["ids"], to=I64),
         node("Gather", ["x", "ids"], ["y"], axis=1)],
        [value("x", F, [BATCH, 5]), value("f", F, [BATCH])],
        [value("y", F, [BATCH, BATCH])])


@model
def gather_float_data_indices():
    """GatherElements whose indices are float data."""
    return graph(
        [node("GatherElements", ["x", "f"], ["y"], axis=1)],
        [value("x", F, [BATCH, 5]), value("f", F, [BATCH, 5])],
        [value("y", F, [BATCH, 5])])


@model
def range_batch_offset():
    """Range(1, B, 1): bounds over the batch other than Range(0, k * B, k)."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["b"], axis=0),
         node("Range", ["one", "b", "one"], ["r"]),
         node("Cast", ["r"], ["y"], to=F)],
        [value("x", F, [BATCH, 3])], [value("y", F, [BATCH])],
        [ints("zero", 0), ints("one", 1)])


@model
def batch_multiples():
    """Sizes that are multiples of the batch size B: expand(2 * B, 4) of a
    parameter, and ConstantOfShape([2 * B, 1, 3]) as nn.MultiheadAttention
    builds the zeros of its key padding mask, added to a reshape of the
    input to the same shape."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Gather", ["shape", "zero"], ["batch"], axis=0),
         node("Mul", ["batch", "two"], ["twice"]),
         node("Unsqueeze", ["twice", "axes0"], ["twice1"]),
         node("Concat", ["twice1", "four"], ["target"], axis=0),
         node("Expand", ["b", "target"], ["y"]),
         node("Concat", ["twice1", "one", "three"], ["mask_shape"], axis=0),
         node("ConstantOfShape", ["mask_shape"], ["zeros"]),
         node("Reshape", ["x", "rows"], ["flat"]),
         node("Add", ["zeros", "flat"], ["z"])],
        [value("x", F, [BATCH, 6])],
        [value("y", F, [None, 4]), value("z", F, [None, 1, 3])],
        [ints("zero", 0), ints("two", 2), ints("axes0", [0]),
         ints("four", [4]), ints("one", [1]), ints("three", [3]),
         ints("rows", [-1, 1, 3]), init("b", weights(1, 4))])


@model
def batch_multiples_rows():
    """batch_multiples with its [2 * B, 4] folded back into rows of the
    batch, [B, 8], so that it can be trained: the prediction's first
    dimension must be the batch."""
    m = batch_multiples()
    m.graph.node.append(node("Reshape", ["y", "per_sample"], ["y_rows"]))
    m.graph.initializer.append(ints("per_sample", [-1, 8]))
    m.graph.output[0].CopyFrom(value("y_rows", F, [None, 8]))
    onnx.checker.check_model(m)
    return m


@model
def shape_only_input():
    """An input the prediction uses only through its shape: a parameter
    expanded to the input's shape."""
    return graph(
        [node("Shape", ["x"], ["shape"]),
         node("Expand", ["p", "shape"], ["y"])],
        [value("x", F, [BATCH, 4])],
        [value("y", F, [None, 4])],
        [init("p", [[1.0, 2.0, 3.0, 4.0]])])


@model
def forward_only():
    """A graph without parameters and with two outputs: forward-only."""
    return graph(
        [node("Relu", ["x"], ["relu"]),
         node("Neg", ["x"], ["neg"])],
        [value("x", F, [BATCH, 3])],
        [value("relu", F, [None, 3]), value("neg", F, [None, 3])])


@model
def forward_only_no_input():
    """No graph input: an int64 range and its float cosines."""
    I = TensorProto.INT64
    return graph(
        [const("start", [0], np.int64), const("limit", [4], np.int64),
         const("delta", [1], np.int64),
         node("Squeeze", ["start"], ["s"]), node("Squeeze", ["limit"], ["l"]),
         node("Squeeze", ["delta"], ["d"]),
         node("Range", ["s", "l", "d"], ["r"]),
         node("Mul", ["r", "r"], ["squares"]),
         node("Cast", ["r"], ["rf"], to=TensorProto.FLOAT),
         node("Cos", ["rf"], ["cos"])],
        [], [value("squares", I, [4]), value("cos", F, [4])])


@model
def forward_only_affine():
    """x W + b with initializers: an inference artifact starts from them."""
    return graph(
        [node("MatMul", ["x", "w"], ["xw"]),
         node("Add", ["xw", "b"], ["y"])],
        [value("x", F, [BATCH, 2])],
        [value("y", F, [None, 2])],
        [init("w", [[1.0, 2.0], [3.0, 4.0]]), init("b", [0.5, -0.5])])


@model
def torch_encoder_key_padding():
    """torch.nn.TransformerEncoder with src_key_padding_mask from the ids:
    torch 1.13 expands the mask to [B * heads, 1, T] and adds it to the
    scores with the zeros of a ConstantOfShape of that shape."""
    import torch
    from torch import nn

    torch.manual_seed(0)

    class Encoder(nn.Module):
        def __init__(self, vocab=20, dim=8, heads=2):
            super().__init__()
            self.embed = nn.Embedding(vocab, dim)
            layer = nn.TransformerEncoderLayer(
                dim, heads, dim_feedforward=16, dropout=0.0,
                batch_first=True, norm_first=True)
            self.encoder = nn.TransformerEncoder(layer, 1,
                                                 enable_nested_tensor=False)

        def forward(self, ids):
            x = self.encoder(self.embed(ids), src_key_padding_mask=ids == 0)
            return x.mean(dim=1)

    return export(Encoder(), torch.randint(1, 20, (2, 6)),
                  (["ids"], ["y"]), 14, training=True)


@model
def gather_elements_out_of_range():
    """GatherElements at a constant index past the end of its axis."""
    return graph(
        [node("GatherElements", ["x", "picks"], ["y"], axis=1)],
        [value("x", F, [BATCH, 5])], [value("y", F, [1, 2])],
        [ints("picks", [[-5, 5]])])


@model
def carried_integers():
    """Integer arithmetic on a mask: the lengths (ids != 0).sum(1), a
    comparison of them with an int64 constant, and the last position
    lengths - 1 indexing x with GatherElements."""
    return graph(
        [node("Equal", ["ids", "zero"], ["pad"]),
         node("Not", ["pad"], ["real"]),
         node("Cast", ["real"], ["counts"], to=I64),
         node("ReduceSum", ["counts", "axes1"], ["lengths"], keepdims=1),
         node("Equal", ["lengths", "four"], ["full"]),
         node("Cast", ["full"], ["y"], to=F),
         node("Sub", ["lengths", "one"], ["last"]),
         node("GatherElements", ["x", "last"], ["z"], axis=1)],
        [value("ids", I64, [BATCH, 4]), value("x", F, [BATCH, 4])],
        [value("y", F, [BATCH, 1]), value("z", F, [BATCH, 1])],
        [ints("zero", 0), ints("axes1", [1]), ints("four", 4),
         ints("one", 1)])


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    name, path = sys.argv[1], sys.argv[2]
    if name == "truncated":
        data = gemm().SerializeToString()
        with open(path, "wb") as f:
            f.write(data[: len(data) // 2])
        return
    if name == "text":
        with open(path, "w") as f:
            f.write("this is not an ONNX model\n")
        return
    if name not in MODELS:
        sys.exit(f"unknown model '{name}'; known: {', '.join(sorted(MODELS))}")
    onnx.save(MODELS[name](), path)
    store_in_cache(name, path)


if __name__ == "__main__":
    main()
