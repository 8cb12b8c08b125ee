#!/usr/bin/python3
# SPDX-License-Identifier: Apache-2.0
"""The eager CPU runtime's per-call choices, through the real binary: the float32 convolutions
PyTorch leaves to its native path (squeeze-excitation 1x1 convolutions of one image) are priced
as GEMMs without oneDNN's set-up, and only at batch 1; bf16 convolutions never are; max pooling
is its own class; autocast casts a float32 model's weights at bf16 only; the bytes weights and
fresh outputs (above 32 MiB, zeroed by the system) move are in the energy events.

usage: check_cpu_eager_paths.py NNERGY OUT_DIR
"""
import json
import os
import subprocess
import sys


def kernels(nnergy, out, model, batch, precision):
    path = os.path.join(out, "%s-b%d-%s.json" % (model, batch, precision))
    p = subprocess.run([nnergy, "--quiet", "analyze", model, "--hw", "xeon-5th-gen-16vcpu",
                        "--runtime", "pytorch-eager-cpu", "--batch", str(batch), "--precision",
                        precision, "--format", "json", "-o", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("FAIL: analyze %s exited %d: %s" % (model, p.returncode, p.stderr))
    return json.load(open(path))["runs"][0]["kernels"]


def native(ks):
    return [k for k in ks if "the runtime's native path" in k["mapping"].get("explanation", "")]


def main():
    nnergy, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    failures = []

    b1 = kernels(nnergy, out, "efficientnet_b0", 1, "float32")
    convs = [k for k in b1 if k["mapping"]["op_class"] == "conv"]
    # EfficientNet-B0 has 16 squeeze-excitation blocks of two 1x1 convolutions on a 1x1 image.
    se = [k for k in convs if k["parallelism"]["spatial"] == 1]
    if len(se) != 32:
        failures.append("expected 32 squeeze-excitation convolutions, found %d" % len(se))
    missed = [k["name"] for k in se if k not in native(b1)]
    if missed:
        failures.append("squeeze-excitation convolutions not on the native path: %s" % missed[:3])
    for k in native(b1):
        m = k["mapping"]
        if "weight_prep_s" in m:
            failures.append("%s: native, yet its weights are repacked" % k["name"])
        if "as gemv" not in m["explanation"] and "as gemm" not in m["explanation"]:
            failures.append("%s: native, yet not priced as a GEMM: %s" % (k["name"], m["explanation"]))
    # Above batch 1 oneDNN takes them all, with its set-up.
    b8 = kernels(nnergy, out, "efficientnet_b0", 8, "float32")
    if native(b8):
        failures.append("batch 8: %d convolutions on the native path (expected none)" % len(native(b8)))
    bf16 = kernels(nnergy, out, "efficientnet_b0", 1, "bfloat16")
    if native(bf16):
        failures.append("bf16: %d convolutions on the native path (expected none)" % len(native(bf16)))
    casts = [k for k in bf16 if k["mapping"].get("weight_cast_s", 0) > 0]
    if not casts:
        failures.append("bf16: no weights cast by autocast")
    if any(k["mapping"].get("weight_cast_s", 0) > 0 for k in b1):
        failures.append("float32: weights cast, though stored in the compute precision")

    # Weight repacking (every oneDNN convolution) and casting (bf16) move bytes: the energy
    # events count them beside the kernel's own. An output above the runtime's 32 MiB is fresh
    # memory, zeroed by the system once more through the caches (not the registers).
    zeroed_kernels = 0
    for ks, label in ((b8, "float32"), (bf16, "bfloat16")):
        checked = 0
        for k in ks:
            m = k["mapping"]
            if m.get("weight_prep_s", 0) <= 0:
                continue
            own = sum(level["bytes"] for level in m["levels"])
            scale = m["bytes_scale"]
            extra = 2 * k["weight_bytes"] * scale
            if m.get("weight_cast_s", 0) > 0:
                extra += k["weight_bytes"] + k["weight_bytes"] * scale
            zeroed = k["output_bytes"] * scale if m.get("first_touch_s", 0) > 0 else 0.0
            zeroed_kernels += zeroed > 0

            def count(event):
                return [e["count"] for e in m["events"]
                        if e["category"] == "memory" and e["event"] == event]
            l1, registers = count("l1"), count("register_file")
            if len(l1) != 1 or abs(l1[0] - (own + extra + zeroed)) > 1e-6 * (own + extra + zeroed):
                failures.append("%s %s: l1 bytes %s, expected %g (own %g + weights %g + zeroed %g)"
                                % (label, k["name"], l1, own + extra + zeroed, own, extra, zeroed))
            if len(registers) != 1 or abs(registers[0] - (own + extra)) > 1e-6 * (own + extra):
                failures.append("%s %s: register file bytes %s, expected %g" %
                                (label, k["name"], registers, own + extra))
            checked += 1
        if not checked:
            failures.append("%s: no kernel repacks its weights" % label)
    if not zeroed_kernels:
        failures.append("batch 8: no convolution writes a fresh output (above 32 MiB)")

    r18 = kernels(nnergy, out, "resnet18", 1, "float32")
    pools = [k for k in r18 if k["mapping"]["op_class"] == "window_pool"]
    if [k["ops"] for k in pools] != [["MaxPool"]]:
        failures.append("resnet18: expected one window_pool kernel (the max pool), got %s" %
                        [k["ops"] for k in pools])
    # The 7x7 stem and every convolution of a ResNet at 224x224 go to oneDNN.
    if native(r18):
        failures.append("resnet18: %d convolutions on the native path" % len(native(r18)))

    if failures:
        sys.exit("FAIL:\n  " + "\n  ".join(failures))
    print("ok: %d native convolutions at batch 1, none at batch 8 or in bf16; %d casts in bf16"
          % (len(native(b1)), len(casts)))


if __name__ == "__main__":
    main()
