// SPDX-License-Identifier: Apache-2.0
/// \file modeling.hpp
/// \brief The nnergy modeling kit: header-only C++17 building blocks for architecture and
/// estimator plugins, the same ones the in-tree CPU, GPU, TPU, KPU and reference plugins are
/// built from (docs/modeling-kit.md). Reading a hardware description with provenance, op
/// classes with per-class constant tables, occupancy, the kernel facts every model starts from,
/// the mapping keys every architecture writes, explanation formatting, and values kept per
/// graph and partition.
///
/// Everything here is inline and lives in namespace nnergy::modeling. It uses only the standard
/// library and the SDK's own headers, so a vendor's plugin gets it with the SDK and nothing else.
#pragma once

#include <nnergy/modeling/hardware_model.hpp>
#include <nnergy/modeling/kernel_facts.hpp>
#include <nnergy/modeling/op_class.hpp>
#include <nnergy/modeling/recent_values.hpp>
#include <nnergy/modeling/text.hpp>
