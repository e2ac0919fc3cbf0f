#!/usr/bin/python3
"""The ONNX backend node tests (Debian's libonnx-testdata) through Cleave.

Every node test whose op types all appear in Cleave's operator table
(`cleave-opt --list-onnx-ops`) is compiled forward-only (`cleave-compile
--inference`), run on each of its data sets with `cleave-run`, and its
outputs are compared with the expected ones: floats to
|got - expected| <= 1e-6 + 1e-4 |expected| (NaN where NaN is expected),
integers and booleans exactly.

The one adaptation, because the runtime feeds inputs by rows of a
micro-batch: every input and output gets a leading dimension of 1 (each
graph input x becomes an input of shape [1, *x.shape] reshaped to x.shape,
each output y is reshaped to [1, *y.shape]), and the model is compiled for
micro-batch 1. Boolean inputs are fed as float32 0/1, the form Cleave gives
every run-time mask (docs/user/onnx.md). An input that cleave-compile needs
as a compile-time constant (a shape, axes, pads, an exponent: the test feeds
as data what a model holds as a constant) becomes an initializer with the
data set's value, and the test is compiled once per data set.

expected.txt lists the tests that do not pass, each with a status and its
reason: `refused` (cleave-compile or the runtime says it is not supported),
`deviation` (a different answer on purpose), `bug` (a known defect). A test
whose outcome differs from the list, one that starts passing included,
fails this script until the list is updated (--update rewrites it, keeping
the reasons of entries that stay).
"""

import argparse
import collections
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import defs, helper, numpy_helper

STATUSES = ("refused", "deviation", "bug")
RTOL, ATOL = 1e-4, 1e-6
RUNTIME_DTYPES = {
    np.dtype(np.float32): np.float32,
    np.dtype(np.float64): np.float64,
    np.dtype(np.float16): np.float16,
    np.dtype(np.int64): np.int64,
    np.dtype(np.int32): np.int32,
    np.dtype(np.int16): np.int16,
    np.dtype(np.int8): np.int8,
    np.dtype(np.uint32): np.uint32,
    np.dtype(np.uint16): np.uint16,
    np.dtype(np.uint8): np.uint8,
    np.dtype(np.bool_): np.float32,
}


def expected_values(tensor, output):
    """The elements of `tensor`, the expected value of the graph output
    `output`. NumPy has no bfloat16: ONNX's test data holds a BFLOAT16
    output's elements as their bits, in a UINT16 tensor (and a BFLOAT16
    input's, which is also how the runtime takes them)."""
    array = numpy_helper.to_array(tensor)
    if output.type.tensor_type.elem_type == onnx.TensorProto.BFLOAT16:
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array


def listed_ops(cleave_opt):
    table = subprocess.run([cleave_opt, "--list-onnx-ops"], check=True,
                           capture_output=True, text=True).stdout
    return set(re.findall(r"^\| `([A-Za-z0-9]+)` \|", table, re.M))


def read_expected(path):
    """{test: (status, reason)} from `test status reason...` lines."""
    expected = {}
    with open(path) as f:
        for number, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            parts = line.split(None, 2)
            if len(parts) < 3 or parts[1] not in STATUSES:
                sys.exit(f"{path}:{number}: expected 'test_name "
                         f"{'|'.join(STATUSES)} reason', got: {line}")
            if parts[0] in expected:
                sys.exit(f"{path}:{number}: {parts[0]} is listed twice")
            expected[parts[0]] = (parts[1], parts[2])
    return expected


def static_shape(value_info):
    t = value_info.type.tensor_type
    if not t.HasField("shape"):
        return None
    dims = []
    for d in t.shape.dim:
        if not d.HasField("dim_value"):
            return None
        dims.append(d.dim_value)
    return dims


def opset_of(model):
    for o in model.opset_import:
        if o.domain in ("", "ai.onnx"):
            return o.version
    return 0


def adapt(model_in, constants):
    """The model with a leading dimension of 1 on every input and output:
    a Reshape, or (for zero-size tensors, whose shapes Reshape reads as
    "copy this dimension") a Squeeze or Unsqueeze from opset 13 on."""
    model = model_in
    graph = model.graph
    initializers = {i.name for i in graph.initializer}
    nodes, inputs, outputs, inits = [], [], [], []
    axes0 = "batch__axes"
    opset = opset_of(model)
    if opset < 5:
        # Reshape takes its shape as an input from opset 5 on. Models of
        # opsets 1 to 4 move to 5 when none of their ops changes meaning.
        if any(defs.get_schema(n.op_type, opset).since_version !=
               defs.get_schema(n.op_type, 5).since_version
               for n in graph.node):
            raise ValueError(f"opset {opset}: Reshape takes no shape input "
                             "before opset 5")
        model = onnx.ModelProto()
        model.CopyFrom(model_in)
        for o in model.opset_import:
            if o.domain in ("", "ai.onnx"):
                o.version = 5
        graph = model.graph
    if opset_of(model) >= 13:
        inits.append(numpy_helper.from_array(np.array([0], np.int64), axes0))

    def view(source, target, shape, squeeze):
        if 0 not in shape:
            name = target + "__shape"
            inits.append(numpy_helper.from_array(
                np.array(shape, np.int64), name))
            return helper.make_node("Reshape", [source, name], [target])
        if opset_of(model) < 13:
            raise ValueError(f"'{source}' is empty (a shape with 0) in an "
                             "opset below 13")
        op = "Squeeze" if squeeze else "Unsqueeze"
        return helper.make_node(op, [source, axes0], [target])
    for inp in graph.input:
        if inp.name in initializers:
            inputs.append(inp)
            continue
        if inp.name in constants:
            inits.append(numpy_helper.from_array(constants[inp.name],
                                                 inp.name))
            continue
        shape = static_shape(inp)
        if shape is None:
            raise ValueError(f"input '{inp.name}' has no static shape")
        elem = inp.type.tensor_type.elem_type
        batched = inp.name + "__batched"
        inputs.append(helper.make_tensor_value_info(batched, elem, [1] + shape))
        nodes.append(view(batched, inp.name, shape, squeeze=True))
    nodes.extend(graph.node)
    for out in graph.output:
        shape = static_shape(out)
        if shape is None:
            raise ValueError(f"output '{out.name}' has no static shape")
        elem = out.type.tensor_type.elem_type
        batched = out.name + "__batched"
        nodes.append(view(out.name, batched, [1] + shape, squeeze=False))
        outputs.append(helper.make_tensor_value_info(batched, elem,
                                                     [1] + shape))
    # Before IR version 4 every initializer is a graph input too.
    if model.ir_version < 4:
        inputs += [helper.make_tensor_value_info(
            i.name, i.data_type, list(i.dims)) for i in inits]
    new_graph = helper.make_graph(nodes, graph.name, inputs, outputs,
                                  list(graph.initializer) + inits)
    new_graph.value_info.extend(graph.value_info)
    adapted = helper.make_model(new_graph, opset_imports=model.opset_import,
                                ir_version=model.ir_version)
    return adapted


def parse_outputs(text):
    """{name: the printed values, as text} from cleave-run's --print=output
    text."""
    values = collections.OrderedDict()
    current = None
    for line in text.splitlines():
        m = re.match(r"^eval_step\.(\w+)(?:: \S+ \[[^\]]*\]| = (.*))$", line)
        if m:
            current = m.group(1)
            values[current] = [m.group(2)] if m.group(2) is not None else []
            continue
        if current is None:
            continue
        line = re.sub(r"^\s*\[\d+\]", "", line)
        values[current].extend(line.split())
    return values


def compare(texts, expected):
    """None if the printed values `texts` match `expected`, else why not:
    integers and booleans exactly (as integers, not through float64),
    floats to ATOL + RTOL |expected| with NaN where NaN is expected."""
    if len(texts) != expected.size:
        return f"{len(texts)} values, expected {expected.size}"
    if expected.dtype.kind in "iub":
        got = np.array([int(float(t)) if "." in t or "e" in t else int(t)
                        for t in texts], np.int64)
        want = expected.astype(np.int64).reshape(-1)
        bad = np.nonzero(got != want)[0]
    else:
        got = np.array([float(t) for t in texts], np.float64)
        want = expected.astype(np.float64).reshape(-1)
        bad = np.nonzero(~np.isclose(got, want, rtol=RTOL, atol=ATOL,
                                     equal_nan=True))[0]
    if bad.size == 0:
        return None
    i = bad[0]
    return (f"{bad.size} of {want.size} values differ, first at {i}: "
            f"{got[i]:.9g}, expected {want[i]:.9g}")


def first_error(stderr):
    for line in stderr.splitlines():
        if "error:" in line:
            return re.sub(r"^.*?error: ", "", line).strip()
    return stderr.strip().splitlines()[-1] if stderr.strip() else "no output"


# What cleave-compile says of an input that must be known when compiling
# (a shape, axes, an exponent): the test feeds it as data, a model has it as
# a constant. The test is then compiled with the data set's value.
CONSTANT_INPUT = re.compile(
    r"\('([^']+)'\) (is computed at run time; it must fold to a constant|"
    r"must be a compile-time constant)")
# ... or of a value computed from one: the graph input it names (the
# adapted model's, `NAME__batched`).
SOURCE_INPUT = re.compile(r"it is computed from the graph input '([^']+)'")


def constant_input(why):
    """The graph input a refusal asks to be a constant, if any."""
    m = SOURCE_INPUT.search(why or "")
    if m:
        return m.group(1).removesuffix("__batched")
    m = CONSTANT_INPUT.search(why or "")
    return m.group(1) if m else None


class Crash(Exception):
    """A tool ended by a signal: never a refusal."""


def compile_model(model, constants, work, tag, args):
    """(artifact, None) or (None, why cleave-compile refused it)."""
    try:
        adapted = adapt(model, constants)
    except ValueError as e:
        return None, f"adapting: {e}"
    model_path = os.path.join(work, f"model{tag}.onnx")
    onnx.save(adapted, model_path)
    artifact = os.path.join(work, f"model{tag}.cleave")
    compiled = subprocess.run(
        [args.cleave_compile, model_path, "--inference", "--micro-batch=1",
         "-o", artifact], capture_output=True, text=True, timeout=300)
    if compiled.returncode < 0:
        raise Crash(f"cleave-compile died of signal {-compiled.returncode}")
    if compiled.returncode != 0:
        return None, "cleave-compile: " + first_error(compiled.stderr)
    return artifact, None


def load_inputs(ds, graph_inputs):
    return {inp.name: numpy_helper.to_array(
        onnx.load_tensor(os.path.join(ds, f"input_{k}.pb")))
        for k, inp in enumerate(graph_inputs)}


def run_test(test_dir, args, workdir):
    """(status, detail): status is pass, refused or mismatch; a tool that
    dies raises Crash."""
    name = os.path.basename(test_dir)
    work = os.path.join(workdir, name)
    os.makedirs(work, exist_ok=True)
    model = onnx.load(os.path.join(test_dir, "model.onnx"))
    initializers = {i.name for i in model.graph.initializer}
    graph_inputs = [i for i in model.graph.input if i.name not in initializers]
    input_names = {i.name for i in graph_inputs}
    data_sets = sorted(d for d in os.listdir(test_dir)
                       if d.startswith("test_data_set_"))
    # Which inputs the compiler needs as constants: found on the first data
    # set, one refusal at a time.
    constant_names = set()
    first = load_inputs(os.path.join(test_dir, data_sets[0]), graph_inputs)
    while True:
        artifact, why = compile_model(
            model, {n: first[n] for n in constant_names}, work, "", args)
        name = constant_input(why)
        if artifact or name not in input_names or name in constant_names:
            break
        constant_names.add(name)
    if not artifact:
        return "refused", why
    for index, data_set in enumerate(data_sets):
        ds = os.path.join(test_dir, data_set)
        values = load_inputs(ds, graph_inputs)
        if constant_names and index > 0:
            artifact, why = compile_model(
                model, {n: values[n] for n in constant_names}, work,
                f".{index}", args)
            if not artifact:
                return "refused", why
        command = [args.cleave_run, artifact, "--print=output",
                   "--precision=17"]
        for k, inp in enumerate(graph_inputs):
            if inp.name in constant_names:
                continue
            array = values[inp.name]
            declared = [d.dim_value if d.HasField("dim_value") else None
                        for d in inp.type.tensor_type.shape.dim]
            if None not in declared and list(array.shape) != declared:
                return "refused", (f"the test data's '{inp.name}' has shape "
                                   f"{list(array.shape)}, the model "
                                   f"declares {declared}")
            dtype = RUNTIME_DTYPES.get(array.dtype)
            if dtype is None:
                return "refused", (f"input '{inp.name}' is {array.dtype}, "
                                   "which the runtime does not take")
            raw = os.path.join(work, f"{data_set}.{k}.bin")
            np.ascontiguousarray(array, dtype).tofile(raw)
            command += ["--input", f"{inp.name}__batched={raw}"]
        ran = subprocess.run(command, capture_output=True, text=True,
                             timeout=300)
        if ran.returncode < 0:
            raise Crash(f"cleave-run died of signal {-ran.returncode}")
        if ran.returncode != 0:
            return "refused", "cleave-run: " + first_error(ran.stderr)
        got = list(parse_outputs(ran.stdout).values())
        if len(got) != len(model.graph.output):
            return "mismatch", (f"{len(got)} outputs, expected "
                                f"{len(model.graph.output)}")
        for k, out in enumerate(model.graph.output):
            tensor = onnx.load_tensor(os.path.join(ds, f"output_{k}.pb"))
            why = compare(got[k], expected_values(tensor, out))
            if why:
                return "mismatch", f"{data_set} output '{out.name}': {why}"
    shutil.rmtree(work, ignore_errors=True)
    return "pass", ""


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="/usr/share/libonnx-testdata/data/node")
    parser.add_argument("--cleave-opt", required=True)
    parser.add_argument("--cleave-compile", required=True)
    parser.add_argument("--cleave-run", required=True)
    parser.add_argument("--expected", required=True)
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--filter", default="", help="only tests matching")
    parser.add_argument("--update", action="store_true",
                        help="rewrite the expected list from this run")
    args = parser.parse_args()

    if not os.path.isdir(args.data):
        sys.exit(f"error: {args.data} does not exist; install Debian's "
                 "libonnx-testdata (scripts/setup.sh does)")
    ops = listed_ops(args.cleave_opt)
    expected = read_expected(args.expected)
    tests, unlisted, suite_ops = [], [], set()
    for name in sorted(os.listdir(args.data)):
        test_dir = os.path.join(args.data, name)
        if not os.path.isfile(os.path.join(test_dir, "model.onnx")):
            continue
        types = {n.op_type for n in onnx.load(
            os.path.join(test_dir, "model.onnx")).graph.node}
        suite_ops |= types
        if not re.search(args.filter, name):
            continue
        if types <= ops:
            tests.append(test_dir)
        else:
            unlisted.append(name)
    unknown = sorted(set(expected) - {os.path.basename(t) for t in tests})
    if unknown and not args.filter:
        sys.exit(f"error: {args.expected} lists tests that are not node tests of "
                 "listed ops: " + ", ".join(unknown))

    workdir = args.workdir or tempfile.mkdtemp(prefix="cleave-onnx-node-")
    os.makedirs(workdir, exist_ok=True)
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_test, t, args, workdir): t for t in tests}
        for future in concurrent.futures.as_completed(futures):
            name = os.path.basename(futures[future])
            try:
                results[name] = future.result()
            except subprocess.TimeoutExpired as e:
                results[name] = ("crash", f"timed out: {e.cmd[0]}")
            except Crash as e:
                results[name] = ("crash", str(e))
            except ValueError as e:
                # Sequence and optional inputs are no tensors.
                results[name] = ("refused", f"reading the test data: {e}")

    counts = collections.Counter()
    surprises = []
    for name in sorted(results):
        status, detail = results[name]
        listed = expected.get(name)
        if status == "pass":
            counts["pass"] += 1
            if listed:
                surprises.append(f"{name}: passes, but the list has it "
                                 f"as {listed[0]} ({listed[1]}); remove it")
            continue
        if not listed:
            surprises.append(f"{name}: {status}: {detail}")
            counts["unexpected"] += 1
            continue
        counts[listed[0]] += 1
        if (status == "refused") != (listed[0] == "refused"):
            surprises.append(f"{name}: {status} ({detail}), but the list "
                             f"has it as {listed[0]} ({listed[1]})")

    total = len(results)
    supported = suite_ops & ops
    print(f"ONNX backend node tests ({args.data}): {len(results) + len(unlisted)}"
          f" tests, {total} of them on op types Cleave lists")
    print(f"  passed {counts['pass']} ({100.0 * counts['pass'] / max(total, 1):.1f}%), "
          f"refused {counts['refused']}, deviations {counts['deviation']}, "
          f"known bugs {counts['bug']}, unexpected {counts['unexpected']}")
    print(f"  op types: {len(supported)} of the suite's {len(suite_ops)} "
          f"are listed ({len(unlisted)} tests use others)")

    if args.update:
        # Entries of tests this run did not run (--filter) stay as they are.
        entries = dict(expected)
        for name, (status, detail) in results.items():
            if status == "pass":
                entries.pop(name, None)
            elif name not in entries or (entries[name][0] == "refused") != (
                    status == "refused"):
                entries[name] = ("refused" if status == "refused" else "bug",
                                 detail)
        with open(args.expected) as f:
            header = [l for l in f if l.startswith("#")]
        with open(args.expected, "w") as f:
            f.writelines(header)
            for name in sorted(entries):
                f.write(f"{name} {entries[name][0]} {entries[name][1]}\n")
        print(f"updated {args.expected}")
        return 0
    if surprises:
        print(f"\n{len(surprises)} tests differ from {args.expected}:")
        for s in surprises:
            print("  " + s)
        return 1
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
