#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Whole-model latency and energy of torchvision models on an NVIDIA GPU, by the protocol of the
shared H100 validation set (tests/data/validation/h100/models.json), and their ONNX exports.

    OUT=DIR [NO_EXPORT=1] [FILE=NAME.json] python3 tools/measure_torchvision_gpu.py SECONDS MODEL[,MODEL...]

MODEL is a torchvision model's name or `bert_base` (Hugging Face transformers' BertModel(BertConfig()),
int64 token ids [batch,128], as the shared set measures it). Writes DIR/models-heldout.json (or FILE) (the shared set's format; tools/convert_validation.py converts
it) after every configuration, so a run cut short keeps what it measured, and stops starting
configurations after SECONDS. Each model is exported (classic exporter, opset 17, batch fixed at
1: tools/onnx_symbolic_batch.py makes it symbolic) to /tmp/onnx/MODEL.onnx with its weights in
MODEL.onnx.data beside it, which nnergy does not need. That export folds batch norms into the
convolutions, which PyTorch does not do when it runs the module: the graphs to estimate the
measured runs with are tools/export_model_zoo.py --heldout's. Needs PyTorch with CUDA, torchvision,
onnx and nvidia-ml-py (pynvml); energy is NVML's total-energy counter. NO_EXPORT=1 measures only.
"""
import json, os, sys, time, statistics
import torch, torchvision, pynvml
OUT = os.environ["OUT"]; DEADLINE = time.time() + float(sys.argv[1])
MODELS = sys.argv[2].split(",")
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
energy_mj = lambda: pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
torch.backends.cudnn.allow_tf32 = True; torch.backends.cuda.matmul.allow_tf32 = False
idle0 = energy_mj(); time.sleep(1.0); idle_w = (energy_mj() - idle0) / 1e3 / 1.0
doc = {"description": "Protocol of shared/validation/h100/models.json: inference_mode, random weights, "
       "cuDNN TF32 allowed, matmul TF32 not; fp16 = model.half(); eager = module call, cuda_graph = one "
       "captured graph replayed; latency median of 50 CUDA-event-timed passes after 15 warm-ups; "
       "energy_per_inference_j = NVML total-energy counter over a >= 2 s loop / passes (idle included).",
       "env": {"torch": torch.__version__, "torchvision": torchvision.__version__,
               "gpu": torch.cuda.get_device_name(0), "driver": pynvml.nvmlSystemGetDriverVersion(),
               "cudnn": torch.backends.cudnn.version()},
       "idle_power_w": idle_w, "runs": []}
def save():
    with open(f"{OUT}/{os.environ.get('FILE', 'models-heldout.json')}", "w") as f: json.dump(doc, f, indent=1)
os.makedirs("/tmp/onnx", exist_ok=True)
import onnx
from onnx.external_data_helper import convert_model_to_external_data
os.makedirs("/tmp/onnxw", exist_ok=True)
for name in MODELS:
  if time.time() > DEADLINE: break
  if name == "bert_base":
    import transformers
    m = transformers.BertModel(transformers.BertConfig()).eval()
    doc["env"]["transformers"] = transformers.__version__
  else:
    m = getattr(torchvision.models, name)(weights=None).eval()
  params = sum(p.numel() for p in m.parameters())
  if name != "bert_base" and not os.environ.get("NO_EXPORT"):
   try:
    t0 = time.time()
    with torch.no_grad():
      torch.onnx.export(m, torch.randn(1, 3, 224, 224), f"/tmp/onnxw/{name}.onnx", opset_version=17,
                        dynamo=False, input_names=["input"], output_names=["logits"])
    mp = onnx.load(f"/tmp/onnxw/{name}.onnx")
    convert_model_to_external_data(mp, all_tensors_to_one_file=True, location=f"{name}.onnx.data", size_threshold=0)
    onnx.save_model(mp, f"/tmp/onnx/{name}.onnx")
    print("exported", name, round(time.time() - t0, 1), "s", flush=True)
   except Exception as e: print("export", name, repr(e)[:300], flush=True)
  with torch.inference_mode():
      for prec in ("fp32", "fp16"):
        mm = m.cuda().half() if prec == "fp16" else m.cuda().float()
        for batch in (1, 8, 64):
          if name == "bert_base": x = torch.randint(0, 30522, (batch, 128), device="cuda")
          else: x = torch.randn(batch, 3, 224, 224, device="cuda", dtype=torch.half if prec == "fp16" else torch.float)
          for mode in ("eager", "cuda_graph"):
            if time.time() > DEADLINE: break
            f = lambda: mm(x)
            if mode == "cuda_graph":
                s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    for _ in range(3): mm(x)
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g): y = mm(x)
                f = g.replay
            for _ in range(15): f()
            torch.cuda.synchronize(); ts = []
            for _ in range(50):
                a = torch.cuda.Event(enable_timing=True); b = torch.cuda.Event(enable_timing=True)
                a.record(); f(); b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
            e0 = energy_mj(); t0 = time.perf_counter(); n = 0
            while time.perf_counter() - t0 < 2.0:
                for _ in range(5): f()
                torch.cuda.synchronize(); n += 5
            wall = time.perf_counter() - t0; ej = (energy_mj() - e0) / 1e3
            doc["runs"].append({"model": name, "precision": prec, "batch": batch,
                "latency_ms_median": statistics.median(ts), "latency_ms_min": min(ts), "latency_ms_max": max(ts),
                "energy_per_inference_j": ej / n, "mean_power_counter_w": ej / wall,
                "throughput_inf_per_s": n * batch / wall, "iters": n, "wall_s": wall, "params": params,
                "mode": mode, "input": "int64 token ids [batch,128]" if name == "bert_base" else "float [batch,3,224,224]"})
            print(name, prec, batch, mode, round(statistics.median(ts), 3), "ms", round(ej / n, 3), "J", flush=True)
            save()
            del f
            if mode == "cuda_graph": del g, y
          torch.cuda.empty_cache()
save()
