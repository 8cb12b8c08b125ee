#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The TorchScript frontend on real archives (docs/torchscript.md).

  fixtures DIR                 writes the fixtures (tools/make_torchscript_fixtures.py) into DIR
  agreement DIR                traced and scripted archives give PyTorch's parameter count
                               exactly, the same MACs as each other, MACs within 0.5% of the ONNX
                               export of the same module, and a batch dim that stays symbolic
  bad DIR                      bad archives and bad shapes: a clear error, a non-zero exit
  startup DIR                  libtorch is loaded only by runs that read TorchScript, and
                               `bench --startup` times a run that does

usage: check_torchscript.py NNERGY TORCH_PYTHON TOOLS_DIR MODE DIR
Exits 77 (skip) where TORCH_PYTHON cannot import torch and torchvision.
"""
import json
import os
import subprocess
import sys
import zipfile

NNERGY, TORCH_PYTHON, TOOLS, MODE, DIR = sys.argv[1:6]
failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL: " + what)


def analyze(path, *extra):
    out = os.path.join(DIR, os.path.basename(path) + "".join(extra).replace("/", "_") + ".json")
    p = subprocess.run([NNERGY, "--quiet", "analyze", path, "--hw", "h100-sxm5", "--format", "json",
                        "-o", out] + list(extra), capture_output=True, text=True)
    if p.returncode != 0:
        return None, p.stderr.strip()
    return json.load(open(out))["runs"][0]["totals"], ""


def torch_ready():
    p = subprocess.run([TORCH_PYTHON, "-c", "import torch, torchvision"], capture_output=True)
    return p.returncode == 0


def fixtures():
    if not torch_ready():
        print("SKIP: %s cannot import torch and torchvision (python3-torch, "
              "python3-torchvision)" % TORCH_PYTHON)
        return 77
    p = subprocess.run([TORCH_PYTHON, os.path.join(TOOLS, "make_torchscript_fixtures.py"), DIR],
                       capture_output=True, text=True)
    print(p.stdout)
    if p.returncode != 0:
        print(p.stderr)
        return 1
    return 0


def agreement():
    manifest = os.path.join(DIR, "manifest.json")
    if not os.path.exists(manifest):
        print("SKIP: no fixtures (the fixtures test was skipped)")
        return 77
    for m in json.load(open(manifest))["models"]:
        name, shapes = m["name"], m["input_shapes"]
        args = []
        for s in shapes:
            args += ["--input-shape", s]
        onnx = None
        if m["onnx"]:
            onnx, err = analyze(os.path.join(DIR, name + ".onnx"))
            check(onnx is not None, "%s.onnx: %s" % (name, err))
        kinds = ["traced"] + (["scripted"] if m["scripted"] else [])
        results = {}
        for kind in kinds:
            path = os.path.join(DIR, "%s.%s.pt" % (name, kind))
            t, err = analyze(path, *args)
            check(t is not None, "%s: %s" % (path, err))
            if t is None:
                continue
            results[kind] = t
            check(t["params"] == m["params"], "%s: %d parameters, PyTorch counts %d" %
                  (path, t["params"], m["params"]))
            if onnx:
                diff = abs(t["macs"] - onnx["macs"]) / onnx["macs"]
                check(diff <= 0.005, "%s: %.0f MACs, the ONNX export %.0f (%.2f%% apart)" %
                      (path, t["macs"], onnx["macs"], 100 * diff))
            # The batch stays symbolic: --batch 4 scales the work by 4, or, for a model with
            # work done once per forward pass (Swin V2's position-bias MLP), adds three times
            # what --batch 2 adds.
            t4, err = analyze(path, *(args + ["--batch", "4"]))
            if m.get("macs_per_pass", False):
                t2, err2 = analyze(path, *(args + ["--batch", "2"]))
                per_image = t2["macs"] - t["macs"] if t2 else 0
                check(t4 is not None and per_image > 0 and
                      abs(t4["macs"] - t["macs"] - 3 * per_image) <= 1e-6 * t["macs"],
                      "%s: --batch 1, 2, 4 give %.0f, %s, %s MACs, not a fixed part plus one "
                      "per image %s %s" % (path, t["macs"], t2 and t2["macs"],
                                           t4 and t4["macs"], err, err2))
            else:
                check(t4 is not None and abs(t4["macs"] - 4 * t["macs"]) <= 1e-6 * t["macs"],
                      "%s: --batch 4 gives %s MACs, not 4 x %.0f %s" %
                      (path, t4 and t4["macs"], t["macs"], err))
            print("%-28s params %9d  MACs %14.0f  (ONNX %s)" %
                  (os.path.basename(path), t["params"], t["macs"],
                   "%.0f" % onnx["macs"] if onnx else "no twin"))
        if len(results) == 2:
            check(results["traced"]["macs"] == results["scripted"]["macs"] and
                  results["traced"]["params"] == results["scripted"]["params"],
                  "%s: traced and scripted archives disagree" % name)
    # nnergy convert writes the archive as a JSON graph with the batch symbolic: the same
    # counts at batch 4.
    first = json.load(open(manifest))["models"][0]
    traced = os.path.join(DIR, first["name"] + ".traced.pt")
    graph = os.path.join(DIR, first["name"] + ".converted.json")
    shape_args = []
    for s in first["input_shapes"]:
        shape_args += ["--input-shape", s]
    p = subprocess.run([NNERGY, "--quiet", "convert", traced, "-o", graph] + shape_args,
                       capture_output=True, text=True)
    check(p.returncode == 0, "convert %s: %s" % (traced, p.stderr.strip()))
    if p.returncode == 0:
        direct, _ = analyze(traced, *(shape_args + ["--batch", "4"]))
        converted, err = analyze(graph, "--batch", "4")
        check(converted is not None and direct is not None and
              converted["macs"] == direct["macs"] and converted["params"] == direct["params"],
              "%s: the converted graph gives %s, the archive %s %s" % (graph, converted, direct, err))

    # validate reads a model of the measurements from a TorchScript archive in --models, its
    # shapes given as MODEL:SHAPE: ResNet-18 traced estimates as the bundled ONNX ResNet-18 does.
    measurements = os.path.join(os.path.dirname(TOOLS), "tests", "data", "measurements",
                                "h100-models.json")
    models = os.path.join(DIR, "validate-models")
    os.makedirs(models, exist_ok=True)
    link = os.path.join(models, "resnet18.pt")
    if not os.path.lexists(link):
        os.symlink(os.path.join(DIR, "resnet18.traced.pt"), link)

    def predicted(extra):
        out = os.path.join(DIR, "validate.json")
        p = subprocess.run([NNERGY, "--quiet", "validate", "--hw", "h100-sxm5", measurements,
                            "--dim", "bert_base:seq=128", "--format", "json", "-o", out] + extra,
                           capture_output=True, text=True)
        if p.returncode != 0:
            return None, p.stderr.strip()
        return {(c["precision"], c["batch"], c["mode"]):
                (c["latency_s"]["predicted"], c["energy_j"]["predicted"])
                for c in json.load(open(out))["configurations"] if c["model"] == "resnet18"}, ""

    bundled, err = predicted([])
    archive, err2 = predicted(["--models", models, "--input-shape", "resnet18:1x3x224x224"])
    check(bundled and archive and len(archive) == 12 and archive.keys() == bundled.keys() and
          all(abs(archive[k][i] - bundled[k][i]) <= 1e-9 * bundled[k][i]
              for k in bundled for i in range(2)),
          "validate --models (resnet18.pt): %s %s, bundled: %s %s" % (archive, err2, bundled, err))

    # Without its shapes the archive's configurations are skipped, saying how to give them.
    p = subprocess.run([NNERGY, "validate", "--hw", "h100-sxm5", measurements, "--dim",
                        "bert_base:seq=128", "--models", models], capture_output=True, text=True)
    check(p.returncode == 0 and "skipped 6 configurations of resnet18" in p.stderr and
          "(validate: --input-shape resnet18:SHAPE, once per input)" in p.stderr,
          "validate --models without shapes: exit %d, %s" % (p.returncode, p.stderr.strip()))

    # A pipeline's [model] input_shapes: the leading number is the batch binding.
    pipeline = os.path.join(DIR, "pipeline.toml")
    report = os.path.join(DIR, "pipeline-report.json")
    with open(pipeline, "w") as f:
        f.write('[model]\npath = "%s.traced.pt"\ninput_shapes = ["4x%s"]\n'
                '[partitioner]\nplugin = "nnergy.partitioner.fusion"\nfuse = false\n'
                '[[architecture]]\nplugin = "nnergy.architecture.gpu"\nhardware = "h100-sxm5"\n'
                '[[estimator]]\nplugin = "nnergy.estimator.roofline"\n'
                '[[reporter]]\nplugin = "nnergy.reporter.json"\noutput = "%s"\n' %
                (first["name"], first["input_shapes"][0].split("x", 1)[1], report))
    p = subprocess.run([NNERGY, "--quiet", "run", pipeline], capture_output=True, text=True)
    check(p.returncode == 0, "%s: %s" % (pipeline, p.stderr.strip()))
    if p.returncode == 0:
        run = json.load(open(report))["runs"][0]
        check(run["dims"].get("batch") == 4 and run["totals"]["params"] == first["params"],
              "%s: dims %s, params %s" % (pipeline, run["dims"], run["totals"]["params"]))
    return 1 if failures else 0


def expect_error(path, args, *needles):
    p = subprocess.run([NNERGY, "analyze", path, "--hw", "h100-sxm5"] + args,
                       capture_output=True, text=True)
    message = p.stderr.strip()
    check(p.returncode != 0, "%s %s: exit 0, expected an error" % (path, args))
    check(p.returncode < 128, "%s: crashed (exit %d)" % (path, p.returncode))
    for n in needles:
        check(n in message, "%s %s: the error does not say %r:\n%s" % (path, args, n, message))
    print("%s %s -> %s" % (os.path.basename(path), " ".join(args), message.splitlines()[-1][:160]
                           if message else ""))


def bad():
    if not torch_ready():
        print("SKIP: %s cannot import torch" % TORCH_PYTHON)
        return 77
    os.makedirs(DIR, exist_ok=True)
    text = os.path.join(DIR, "not_a_zip.pt")
    open(text, "w").write("this is not a model\n")
    expect_error(text, ["--input-shape", "1x3"], "not_a_zip.pt", "not a TorchScript archive",
                 "zip")
    other_zip = os.path.join(DIR, "other.pt")
    with zipfile.ZipFile(other_zip, "w") as z:
        z.writestr("readme.txt", "a zip archive, but no model")
    expect_error(other_zip, ["--input-shape", "1x3"], "other.pt", "not a TorchScript")
    # What torch.save writes, a script module with an op the frontend does not map, and an
    # archive stamped with a file-format version from the future.
    script = r'''
import sys, torch, zipfile
d = sys.argv[1]
torch.save(torch.nn.Linear(4, 2).state_dict(), d + "/state_dict.pt")
class Odd(torch.nn.Module):
    def forward(self, x):
        return torch.cumsum(torch.relu(x), 1)
torch.jit.trace(Odd(), torch.randn(2, 8)).save(d + "/unsupported_op.pt")
torch.jit.trace(torch.nn.AdaptiveAvgPool2d((3, 3)), torch.randn(1, 4, 9, 9)).save(
    d + "/adaptive_pool.pt")
class MaxPool(torch.nn.Module):
    def forward(self, x):
        return torch.nn.functional.adaptive_max_pool2d(x, (3, 2))
torch.jit.trace(MaxPool(), torch.randn(1, 4, 9, 9)).save(d + "/adaptive_max_pool.pt")
class Casts(torch.nn.Module):
    def forward(self, x):
        return (x.half() * 2.0).float().softmax(-1).type_as(x)
torch.jit.trace(Casts(), torch.randn(2, 8)).save(d + "/casts.pt")
class IntScalars(torch.nn.Module):
    def forward(self, x):
        return x.half() * 2 + 1
torch.jit.trace(IntScalars(), torch.randn(2, 8)).save(d + "/int_scalars.pt")
class OnData(torch.nn.Module):
    # A branch on the data, known only when it runs: never answered.
    def forward(self, x):
        if bool(x.mean() > 0):
            return x * 2.0
        return x + 1.0
torch.jit.script(OnData()).save(d + "/on_data.pt")
class OnRank(torch.nn.Module):
    # A branch on the input's rank and on gradients, known before it runs: answered.
    def forward(self, x):
        if x.dim() == 3 and not torch.is_grad_enabled():
            return torch.relu(x)
        return torch.cumsum(x, 1)
torch.jit.script(OnRank()).save(d + "/on_rank.pt")
class OnSize(torch.nn.Module):
    # Branches on numbers computed from the input's size (a padding to whole windows, then the
    # padded size): answered for the shape given.
    def __init__(self):
        super().__init__()
        self.big = torch.nn.Conv2d(3, 8, 3)
        self.small = torch.nn.Conv2d(3, 4, 1)
    def forward(self, x):
        pad = (7 - x.size(3) % 7) % 7
        x = torch.nn.functional.pad(x, [0, pad, 0, pad])
        if x.size(3) >= 14:
            return self.big(x)
        return self.small(x)
torch.jit.script(OnSize()).save(d + "/on_size.pt")
class OnBatch(torch.nn.Module):
    # A branch on the batch, which stays symbolic: never answered (whatever batch is given).
    def forward(self, x):
        if x.size(0) > 64:
            return x * 2.0
        return x + 1.0
torch.jit.script(OnBatch()).save(d + "/on_batch.pt")
class ListOnData(torch.nn.Module):
    # A list changed in a branch on the data (not taken on zeros): what it holds is known only
    # when the model runs, so the branch on it is not answered either.
    def forward(self, x):
        s = [1, 2]
        if bool(x.mean() > 0):
            s[0] = 5
        if s[0] > 3:
            return x * 2.0
        return x + 1.0
torch.jit.script(ListOnData()).save(d + "/list_on_data.pt")
class ShapeOnData(torch.nn.Module):
    # A size that depends on the data (how many elements are not zero): never answered (the
    # branch stays, and with it the nonzero, which has no mapping).
    def forward(self, x):
        if x.nonzero().size(0) > 3:
            return x * 2.0
        return x + 1.0
torch.jit.script(ShapeOnData()).save(d + "/shape_on_data.pt")
class LoopOnSize(torch.nn.Module):
    # A loop as long as a dimension: its result is known for the shape given (28 for 8
    # columns, 6 for 4), though the values in its body change every turn.
    def forward(self, x):
        total = 0
        for i in range(x.size(1)):
            total += i
        if total > 20:
            return torch.relu(x)
        return torch.cumsum(x, 1)
torch.jit.script(LoopOnSize()).save(d + "/loop_on_size.pt")
lin = torch.jit.trace(torch.nn.Linear(8, 4), torch.randn(2, 8))
lin.save(d + "/linear.pt")
with zipfile.ZipFile(d + "/linear.pt") as src, zipfile.ZipFile(d + "/future.pt", "w") as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith("/version"):
            data = b"99\n"
        dst.writestr(item, data)
class Transposed(torch.nn.Module):
    def forward(self, x):
        return torch.transpose(x, -2, -1) * 2.0
torch.jit.trace(Transposed(), torch.randn(2, 4, 8)).save(d + "/transpose.pt")
# The same archive with a dim beyond any rank written into its code (as a damaged or hand-edited
# file might hold): a clear error, not a write beyond the permutation it indexes.
with zipfile.ZipFile(d + "/transpose.pt") as src, \
        zipfile.ZipFile(d + "/transpose_dim.pt", "w") as dst:
    edited = 0
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith(".py") and b", -2, -1)" in data:
            data = data.replace(b", -2, -1)", b", -9223372036854775807, -1)")
            edited += 1
        dst.writestr(item, data)
    assert edited == 1, "the traced code holds no torch.transpose(x, -2, -1)"
# Damaged pickles that libtorch 1.13's unpickler would crash on (a value taken from an empty
# stack) or size its memo table by (slot 1,610,809,857).
# A constant's data record cut short: libtorch would read past it.
with zipfile.ZipFile(d + "/transpose.pt") as src, \
        zipfile.ZipFile(d + "/short_constant.pt", "w") as dst:
    for item in src.infolist():
        data = src.read(item.filename)
        if item.filename.endswith("/constants/0"):
            data = data[:len(data) // 2]
        dst.writestr(item, data)
for name, pickle in (("pickle_underflow", b"\x80\x02Q."), ("pickle_memo", b"\x80\x02Nr\x01\x02\x03\x60.")):
    with zipfile.ZipFile(d + "/linear.pt") as src, \
            zipfile.ZipFile(d + "/" + name + ".pt", "w") as dst:
        for item in src.infolist():
            data = src.read(item.filename)
            if item.filename.endswith("/constants.pkl"):
                data = pickle
            dst.writestr(item, data)
'''
    # From a file: torch.jit.script reads the classes' source.
    maker = os.path.join(DIR, "make_bad_archives.py")
    with open(maker, "w") as f:
        f.write(script)
    p = subprocess.run([TORCH_PYTHON, maker, DIR], capture_output=True, text=True)
    check(p.returncode == 0, "writing the bad archives: " + p.stderr)
    expect_error(os.path.join(DIR, "state_dict.pt"), ["--input-shape", "1x4"], "state_dict.pt",
                 "torch.jit.save")
    expect_error(os.path.join(DIR, "unsupported_op.pt"), ["--input-shape", "1x8"],
                 "unsupported_op.pt", "aten::cumsum", "no mapping")
    expect_error(os.path.join(DIR, "future.pt"), ["--input-shape", "1x8"], "future.pt",
                 "version 99", "newer than")
    expect_error(os.path.join(DIR, "on_data.pt"), ["--input-shape", "1x8"], "on_data.pt",
                 "no mapping")
    expect_error(os.path.join(DIR, "pickle_underflow.pt"), ["--input-shape", "1x8"],
                 "pickle_underflow.pt", "constants.pkl is not a well-formed pickle (byte 2: "
                 "opcode 0x51 takes 1 value(s) from a stack holding 0", "damaged")
    expect_error(os.path.join(DIR, "pickle_memo.pt"), ["--input-shape", "1x8"],
                 "pickle_memo.pt", "constants.pkl is not a well-formed pickle (byte 3: memo slot "
                 "1610809857 beyond any written so far)")
    expect_error(os.path.join(DIR, "short_constant.pt"), ["--input-shape", "2x4x8"],
                 "short_constant.pt", "constants/0 holds", "constants.pkl says 1 elements of",
                 "damaged")
    ok, err = analyze(os.path.join(DIR, "transpose.pt"), "--input-shape", "2x4x8")
    check(ok, "transpose.pt: " + err)
    expect_error(os.path.join(DIR, "transpose_dim.pt"), ["--input-shape", "2x4x8"],
                 "transpose_dim.pt",
                 "aten::transpose with dim -9223372036854775807, out of range for a tensor of "
                 "rank 3")
    # On a rank-3 input the branch folds to the relu; on a rank-2 one, to the cumsum, which has
    # no mapping.
    ok, err = analyze(os.path.join(DIR, "on_rank.pt"), "--input-shape", "1x4x8")
    check(ok, "on_rank.pt, rank 3: " + err)
    expect_error(os.path.join(DIR, "on_rank.pt"), ["--input-shape", "1x8"], "on_rank.pt",
                 "aten::cumsum")
    # Padded 16 -> 21 and 8 -> 14 take the 3x3 convolution (8 outputs of 27 MACs per pixel of
    # 19x19 and 12x12), padded 5 -> 7 the 1x1 one (4 of 3 MACs per pixel of 7x7); the
    # parameters of both count.
    for size, macs in ((16, 19 * 19 * 8 * 27), (8, 12 * 12 * 8 * 27), (5, 7 * 7 * 4 * 3)):
        ok, err = analyze(os.path.join(DIR, "on_size.pt"), "--input-shape", "1x3x%dx%d" % (size, size))
        check(ok is not None and ok["macs"] == macs and ok["params"] == 8 * 27 + 8 + 4 * 3 + 4,
              "on_size.pt at %dx%d: %s %s, expected %d MACs" % (size, size, ok, err, macs))
    expect_error(os.path.join(DIR, "on_batch.pt"), ["--input-shape", "1x8"], "on_batch.pt",
                 "prim::If on a value known only when the model runs")
    expect_error(os.path.join(DIR, "on_batch.pt"), ["--input-shape", "1x8", "--batch", "128"],
                 "on_batch.pt", "prim::If")
    expect_error(os.path.join(DIR, "list_on_data.pt"), ["--input-shape", "1x8"],
                 "list_on_data.pt", "could not be evaluated", "aten::_set_item",
                 "in a branch taken on tensor data")
    expect_error(os.path.join(DIR, "shape_on_data.pt"), ["--input-shape", "1x8"],
                 "shape_on_data.pt", "aten::nonzero")
    ok, err = analyze(os.path.join(DIR, "loop_on_size.pt"), "--input-shape", "1x8")
    check(ok is not None, "loop_on_size.pt at 1x8: " + err)
    expect_error(os.path.join(DIR, "loop_on_size.pt"), ["--input-shape", "1x4"],
                 "loop_on_size.pt", "aten::cumsum")
    linear = os.path.join(DIR, "linear.pt")
    ok, err = analyze(linear, "--input-shape", "1x8")
    check(ok is not None and ok["params"] == 8 * 4 + 4, "linear.pt: %s %s" % (ok, err))
    expect_error(linear, [], "linear.pt", "has no shape", "--input-shape")
    expect_error(linear, ["--input-shape", "1x8", "--input-shape", "1x8"], "matches no input")
    expect_error(linear, ["--input-shape", "1xfoo-bar"], "foo-bar", "neither a positive integer")
    expect_error(linear, ["--input-shape", "1x8x3"], "linear.pt")
    expect_error(linear, ["--input-shape", "nope=1x8"], "matches no input", "'input'")
    # Adaptive pooling reads PyTorch's windows at any input size: window i of a dim of size d
    # pooled to o spans [floor(i d / o), ceil((i + 1) d / o)), overlapping where o does not
    # divide d (7x7 into 3x3), wider outputs than inputs included. An average counts each
    # window element once (window - 1 adds and a divide), a max window - 1 comparisons.
    def window_elements(dims, sizes):
        total = 1
        for d, o in zip(dims, sizes):
            total *= sum(-(-((i + 1) * d) // o) - (i * d) // o for i in range(o))
        return total
    for name, sizes, is_max in (("adaptive_pool.pt", (3, 3), False),
                                ("adaptive_max_pool.pt", (3, 2), True)):
        pool = os.path.join(DIR, name)
        for hw in (9, 7, 13, 2):
            ok, err = analyze(pool, "--input-shape", "1x4x%dx%d" % (hw, hw))
            want = 4 * window_elements((hw, hw), sizes)
            if is_max:
                want -= 4 * sizes[0] * sizes[1]
            check(ok is not None and ok["params"] == 0 and ok["flops"] == want,
                  "%s at %dx%d: %s FLOPs, expected %d %s" %
                  (name, hw, hw, ok and ok["flops"], want, err))
    # Casts are read as casts (the element types downstream follow them), and the first says
    # that a cast to a type the value already has is counted too.
    casts, casts_graph = os.path.join(DIR, "casts.pt"), os.path.join(DIR, "casts.json")
    p = subprocess.run([NNERGY, "convert", casts, "--input-shape", "2x8", "-o", casts_graph],
                       capture_output=True, text=True)
    check(p.returncode == 0 and "is read as a Cast" in p.stderr,
          "casts.pt: exit %d, %s" % (p.returncode, p.stderr.strip()))
    if p.returncode == 0:
        with open(casts_graph) as f:
            graph = json.load(f)
        ops = [(n["op"], n.get("attributes", {}).get("to")) for n in graph["nodes"]]
        check(("Cast", "float16") in ops and ("Cast", "float32") in ops and
              ("CastLike", None) in ops, "casts.pt read as %s" % ops)
    # Integer 0-d tensors a trace records for Python ints take the float16 operand's type, and
    # their casts fold: the cast of x, the Mul and the Add are the only device work.
    ok, err = analyze(os.path.join(DIR, "int_scalars.pt"), "--input-shape", "2x8")
    check(ok is not None and ok["flops"] == 2 * 16 and ok["params"] == 0,
          "int_scalars.pt: %s %s" % (ok, err))
    # Frontends that read no options refuse them (input shapes included) rather than ignore them.
    expect_error("resnet18", ["--input-shape", "1x3x224x224"], "input_shapes[0]",
                 "nnergy.frontend.json_graph", "takes no keys")
    empty = os.path.join(DIR, "empty_shapes.toml")
    with open(empty, "w") as f:
        f.write('[model]\npath = "%s"\ninput_shapes = []\n' % linear)
    p = subprocess.run([NNERGY, "run", empty], capture_output=True, text=True)
    check(p.returncode != 0 and "empty_shapes.toml:3" in p.stderr and
          "'model.input_shapes' lists no shapes" in p.stderr,
          "%s: exit %d, %s" % (empty, p.returncode, p.stderr.strip()))
    return 1 if failures else 0


def startup():
    """libtorch is loaded by runs that read TorchScript and by no other (the dynamic loader's
    own log of the files it opens says which)."""
    def loads_libtorch(args):
        env = dict(os.environ, LD_DEBUG="files")
        p = subprocess.run([NNERGY, "--quiet"] + args, capture_output=True, text=True, env=env)
        check(p.returncode == 0, "nnergy %s: exit %d" % (" ".join(args), p.returncode))
        return "libtorch_cpu.so" in p.stderr
    check(not loads_libtorch(["analyze", "resnet18", "--hw", "h100-sxm5"]),
          "a run on an ONNX/JSON model loads libtorch")
    os.makedirs(DIR, exist_ok=True)
    if torch_ready():
        linear = os.path.join(DIR, "linear_startup.pt")
        p = subprocess.run([TORCH_PYTHON, "-c", "import sys, torch; torch.jit.trace("
                            "torch.nn.Linear(8, 4), torch.randn(2, 8)).save(sys.argv[1])", linear])
        check(p.returncode == 0, "tracing a linear layer")
        check(loads_libtorch(["analyze", linear, "--hw", "h100-sxm5", "--input-shape", "1x8"]),
              "a run on a TorchScript model does not load libtorch: the check above proves "
              "nothing")
        # The speed figure's command: its analysis gets the input shape a TorchScript model
        # needs, and prints a row of times for it.
        p = subprocess.run([NNERGY, "bench", "--startup", linear, "--input-shape", "1x8",
                            "--repeats", "1"], capture_output=True, text=True)
        row = [l.split() for l in p.stdout.splitlines() if l.startswith("nnergy analyze")]
        check(p.returncode == 0 and len(row) == 1 and len(row[0]) == 4 and
              float(row[0][2]) > 0 and float(row[0][3]) > 0,
              "bench --startup on a TorchScript model: exit %d, %s%s" %
              (p.returncode, p.stdout[-400:], p.stderr[-400:]))
    return 1 if failures else 0


if __name__ == "__main__":
    code = {"fixtures": fixtures, "agreement": agreement, "bad": bad, "startup": startup}[MODE]()
    if failures:
        print("%d check(s) failed" % len(failures))
    sys.exit(code)
