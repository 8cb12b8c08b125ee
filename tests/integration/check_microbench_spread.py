#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The harness's --spread order (tools/microbench/plan.py spread): the same runs, and any
prefix of it samples every class and, within a class, more than its first shapes. Needs no
PyTorch: the plans are pure Python."""
import os
import sys

sys.path.insert(0, sys.argv[1])  # tools/microbench
import plan  # noqa: E402

failures = []
for device, cases in (("cuda", plan.gpu_plan(set(plan.CLASSES), True)),
                      ("cpu", plan.cpu_plan([1, 2, 4], set(plan.CLASSES), True))):
    spread = plan.spread(cases)
    if sorted(map(id, spread)) != sorted(map(id, cases)):
        failures.append(f"{device}: spread is not a permutation of the plan")
    classes = {c["op_class"] for c in cases}
    head = spread[:2 * len(classes)]
    if {c["op_class"] for c in head} != classes:
        failures.append(f"{device}: the first {len(head)} runs miss classes "
                        f"{sorted(classes - {c['op_class'] for c in head})}")
    # Within a class, the first tenth of its spread runs reaches past the first tenth of the
    # plan's (which a plain prefix would not), and keeps the class's order stable otherwise.
    for cls in classes:
        planned = [c for c in cases if c["op_class"] == cls]
        spread_cls = [c for c in spread if c["op_class"] == cls]
        tenth = max(3, len(planned) // 10)
        if len(planned) >= 20:
            positions = sorted(planned.index(c) for c in spread_cls[:tenth])
            if positions[-1] < len(planned) // 2:
                failures.append(f"{device} {cls}: the first {tenth} spread runs all come from "
                                f"the first half of the plan (last at {positions[-1]})")
    # Deterministic: the same plan gives the same order.
    if [id(c) for c in plan.spread(cases)] != [id(c) for c in spread]:
        failures.append(f"{device}: spread is not deterministic")
    print(f"{device}: {len(cases)} runs, {len(classes)} classes, first {len(head)} spread runs "
          "cover every class")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
