#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole-model latency and energy of torchvision models on an NVIDIA GPU, by the protocol of the
shared H100 validation set (tests/data/validation/h100/models.json), and their ONNX exports.

    OUT=DIR [NO_EXPORT=1] [FILE=NAME.json] python3 tools/measure_torchvision_gpu.py SECONDS MODEL[,...]

MODEL is a torchvision model's name or `bert_base` (Hugging Face transformers'
BertModel(BertConfig()) on int64 token ids [batch, 128], as the shared set measures it). Writes
DIR/models-heldout.json (or DIR/FILE; the shared set's format, which tools/convert_validation.py
converts) after every configuration, so a run cut short keeps what it measured, and stops
starting configurations after SECONDS. Unless NO_EXPORT=1, each torchvision model is exported
(classic exporter, opset 17, batch fixed at 1: tools/onnx_symbolic_batch.py makes it symbolic) to
/tmp/onnx/MODEL.onnx with its weights in MODEL.onnx.data beside it, which nnergy does not need.
That export folds batch norms into the convolutions, which PyTorch does not do when it runs the
module: the graphs to estimate the measured runs with are tools/export_model_zoo.py --heldout's.
Needs PyTorch with CUDA, torchvision, onnx (to export), transformers (for bert_base) and
nvidia-ml-py (pynvml); energy is NVML's total-energy counter (tools/gpu_protocol.py).
"""
import json, os, sys, time, statistics
import torch, torchvision, pynvml
from gpu_protocol import capture, counter_loop, event_times_ms, idle_power_w

OUT = os.environ["OUT"]; DEADLINE = time.time() + float(sys.argv[1])
MODELS = sys.argv[2].split(",")
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
energy_mj = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
torch.backends.cudnn.allow_tf32 = True; torch.backends.cuda.matmul.allow_tf32 = False
doc = {"description": "Protocol of shared/validation/h100/models.json: inference_mode, random weights, "
       "cuDNN TF32 allowed, matmul TF32 not; fp16 = model.half(); eager = module call, cuda_graph = one "
       "captured graph replayed; latency median of 50 CUDA-event-timed passes after 15 warm-ups; "
       "energy_per_inference_j = NVML total-energy counter over a >= 2 s loop / passes (idle included).",
       "env": {"torch": torch.__version__, "torchvision": torchvision.__version__,
               "gpu": torch.cuda.get_device_name(0), "driver": pynvml.nvmlSystemGetDriverVersion(),
               "cudnn": torch.backends.cudnn.version()},
       "idle_power_w": idle_power_w(energy_mj), "runs": []}


def save():
    with open(os.path.join(OUT, os.environ.get("FILE", "models-heldout.json")), "w") as f:
        json.dump(doc, f, indent=1)


def model_of(name):
    """(module, input of a batch and precision, what the input is, whether to export it)."""
    if name == "bert_base":
        import transformers
        doc["env"]["transformers"] = transformers.__version__
        ids = lambda batch, prec: torch.randint(0, 30522, (batch, 128), device="cuda")
        return transformers.BertModel(transformers.BertConfig()), ids, "int64 token ids [batch,128]", False
    image = lambda batch, prec: torch.randn(batch, 3, 224, 224, device="cuda",
                                            dtype=torch.half if prec == "fp16" else torch.float)
    return getattr(torchvision.models, name)(weights=None), image, "float [batch,3,224,224]", True


def export(m, name):
    import onnx
    from onnx.external_data_helper import convert_model_to_external_data
    os.makedirs("/tmp/onnxw", exist_ok=True); os.makedirs("/tmp/onnx", exist_ok=True)
    t0 = time.time()
    with torch.no_grad():
        torch.onnx.export(m, torch.randn(1, 3, 224, 224), f"/tmp/onnxw/{name}.onnx", opset_version=17,
                          dynamo=False, input_names=["input"], output_names=["logits"])
    mp = onnx.load(f"/tmp/onnxw/{name}.onnx")
    convert_model_to_external_data(mp, all_tensors_to_one_file=True, location=f"{name}.onnx.data",
                                   size_threshold=0)
    onnx.save_model(mp, f"/tmp/onnx/{name}.onnx")
    print("exported", name, round(time.time() - t0, 1), "s", flush=True)


for name in MODELS:
    if time.time() > DEADLINE: break
    m, make_input, input_text, exportable = model_of(name)
    m.eval()
    params = sum(p.numel() for p in m.parameters())
    if exportable and not os.environ.get("NO_EXPORT"):
        try:
            export(m, name)
        except Exception as e:
            print("export", name, repr(e)[:300], flush=True)
    with torch.inference_mode():
        for prec in ("fp32", "fp16"):
            mm = m.cuda().half() if prec == "fp16" else m.cuda().float()
            for batch in (1, 8, 64):
                x = make_input(batch, prec)
                for mode in ("eager", "cuda_graph"):
                    if time.time() > DEADLINE: break
                    f = lambda: mm(x)
                    if mode == "cuda_graph":
                        g, y = capture(f)
                        f = g.replay
                    ts = event_times_ms(f, calls=50, warmups=15)
                    ej, wall, n = counter_loop(energy_mj, f, seconds=2.0, calls_per_sync=5)
                    doc["runs"].append({"model": name, "precision": prec, "batch": batch,
                        "latency_ms_median": statistics.median(ts), "latency_ms_min": min(ts),
                        "latency_ms_max": max(ts), "energy_per_inference_j": ej / n,
                        "mean_power_counter_w": ej / wall, "throughput_inf_per_s": n * batch / wall,
                        "iters": n, "wall_s": wall, "params": params, "mode": mode, "input": input_text})
                    print(name, prec, batch, mode, round(statistics.median(ts), 3), "ms", round(ej / n, 3),
                          "J", flush=True)
                    save()
                    del f
                    if mode == "cuda_graph": del g, y
                torch.cuda.empty_cache()
save()
