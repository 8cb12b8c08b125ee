#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Why BERT-base fp16 replays slower from a CUDA graph than it runs eagerly: times Hugging Face's
BertModel(BertConfig()) (seq 128, token ids only, as the shared H100 set measures it) eagerly and
as one captured CUDA graph, with and without an explicit all-ones attention mask, with the "sdpa"
and "eager" attention implementations, and its submodules on their own; writes torch.profiler's
kernel tables of the eager pass and of a replay beside it.

    OUT=DIR python3 tools/profile_bert_capture.py

Writes DIR/bert_base_capture.json (median of 40 CUDA-event timed calls after 10 warm-ups per row,
SM clock and power just after) and DIR/bert_base_capture_profile.txt. Needs PyTorch with CUDA,
transformers, torchvision and nvidia-ml-py; timing and capture are tools/gpu_protocol.py's.
tests/data/validation/h200/bert_base_capture* are its output on an H200.
"""
import os, json, statistics, traceback
import torch
from gpu_protocol import capture, event_times_ms

OUT = os.environ["OUT"]
PROFILE = os.path.join(OUT, "bert_base_capture_profile.txt")
open(PROFILE, "w").close()  # the tables of this run only
res = {"rows": [], "errors": []}
try:
    import pynvml
    pynvml.nvmlInit(); H = pynvml.nvmlDeviceGetHandleByIndex(0)
    def clocks():
        try:
            return {"sm_mhz": pynvml.nvmlDeviceGetClockInfo(H, pynvml.NVML_CLOCK_SM),
                    "power_w": pynvml.nvmlDeviceGetPowerUsage(H) / 1e3,
                    "reasons": int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(H))}
        except Exception as e:
            return {"err": repr(e)[:100]}
except Exception as e:
    def clocks(): return {}
torch.backends.cudnn.allow_tf32 = True; torch.backends.cuda.matmul.allow_tf32 = False

def save():
    with open(os.path.join(OUT, "bert_base_capture.json"), "w") as f: json.dump(res, f, indent=1)

def timeit(f):
    return statistics.median(event_times_ms(f, calls=40, warmups=10))

def both(label, fn, extra=None):
    try:
        e = timeit(fn); c1 = clocks()
        g, y = capture(fn); gr = timeit(g.replay); c2 = clocks()
        row = {"label": label, "eager_ms": e, "graph_ms": gr, "ratio": gr / e, "clk_eager": c1, "clk_graph": c2}
        if extra: row.update(extra)
        res["rows"].append(row); print(json.dumps(row), flush=True)
        del g, y
    except Exception:
        res["errors"].append(label + ": " + traceback.format_exc()[-1500:]); print("ERR", label, traceback.format_exc()[-800:], flush=True)
    save()

def profile(label, fn):
    try:
        from torch.profiler import profile as prof, ProfilerActivity
        for _ in range(3): fn()
        torch.cuda.synchronize()
        with prof(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
            for _ in range(3): fn()
            torch.cuda.synchronize()
        ka = p.key_averages()
        try: t = ka.table(sort_by="device_time_total", row_limit=30)
        except Exception: t = ka.table(sort_by="cuda_time_total", row_limit=30)
        with open(PROFILE, "a") as f: f.write(f"==== {label}\n{t}\n")
    except Exception:
        res["errors"].append("profile " + label + ": " + traceback.format_exc()[-1500:])
    save()

import transformers
from transformers import BertConfig, BertModel
res["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                   "gpu": torch.cuda.get_device_name(0)}
def make_bert(impl):
    try:
        m = transformers.AutoModel.from_config(BertConfig(), attn_implementation=impl)
    except Exception:
        res["errors"].append("from_config " + impl + ": " + traceback.format_exc()[-600:])
        m = BertModel(BertConfig())
    return m.eval().cuda()

with torch.inference_mode():
    for impl in ("sdpa", "eager"):
        m = make_bert(impl)
        res.setdefault("impl", {})[impl] = getattr(m.config, "_attn_implementation", "?")
        for prec, batch in (("fp16", 64), ("fp32", 64), ("fp16", 8)):
            mm = m.half() if prec == "fp16" else m.float()
            ids = torch.randint(0, 30522, (batch, 128), device="cuda")
            both(f"bert {impl} {prec} b{batch}", lambda: mm(ids), {"impl": impl})
            if impl == "sdpa" and prec == "fp16" and batch == 64:
                mask = torch.ones(batch, 128, dtype=torch.long, device="cuda")
                both(f"bert {impl} {prec} b{batch} ones-mask", lambda: mm(ids, attention_mask=mask))
                profile("bert sdpa fp16 b64 eager", lambda: mm(ids))
                g, y = capture(lambda: mm(ids))
                profile("bert sdpa fp16 b64 graph", g.replay)
                del g, y
                h = torch.randn(batch, 128, 768, device="cuda", dtype=torch.half)
                L = mm.encoder.layer[0]
                first = lambda o: o[0] if isinstance(o, tuple) else o
                both("sub embeddings", lambda: mm.embeddings(input_ids=ids))
                both("sub layer0", lambda: first(L(h)))
                both("sub layer0.attention", lambda: first(L.attention(h)))
                inter = L.intermediate(h)
                both("sub layer0.intermediate", lambda: L.intermediate(h))
                both("sub layer0.output", lambda: L.output(inter, h))
                both("sub encoder", lambda: first(mm.encoder(h)))
                both("sub pooler", lambda: mm.pooler(h))
        del m; torch.cuda.empty_cache()
    try:
        import torchvision
        v = torchvision.models.vit_b_16(weights=None).eval().cuda().half()
        x = torch.randn(64, 3, 224, 224, device="cuda", dtype=torch.half)
        both("vit_b_16 fp16 b64 (control)", lambda: v(x))
    except Exception:
        res["errors"].append("vit: " + traceback.format_exc()[-600:])
save()
print("profile_bert_capture: done", flush=True)
