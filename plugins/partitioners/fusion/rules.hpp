// SPDX-License-Identifier: Apache-2.0
// Fusion rules as data: the in-memory form of a rules file (docs/fusion-rules.md) and its reader.
#pragma once

#include <cstddef>
#include <cstdint>
#include <nnergy/sdk.hpp>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace nnergy::fusion {

/// The `schema` a rules file must declare.
inline constexpr std::string_view k_schema = "nnergy.fusion/1";
/// Op id of an op type that no rule names.
inline constexpr uint32_t k_no_op = 0xFFFFFFFFu;

/// A producer of another input of a chain node that joins the kernel with it (`with`): the
/// branches of a small DAG, such as the halves of rotate_half that meet in a Concat.
struct producer {
    std::vector<uint32_t> ops;  ///< op ids, sorted
    bool optional = false;

    bool matches(uint32_t op) const noexcept;
};

/// One position of a chain: which ops may stand there and how it links to the previous one.
struct position {
    std::vector<uint32_t> ops;  ///< op ids, sorted
    bool optional = false;
    /// Input slot of this node that the previous node's output must feed; -1 for any slot.
    int64_t input = -1;
    /// Producers of this node's other inputs that join the kernel, in order.
    std::vector<producer> with;
    /// Every input the previous node does not feed is a weight (an initializer or a Constant
    /// node's output): a bias add, not a residual add.
    bool weights = false;
    /// The node also reads an activation the previous node reads: x * sigmoid(x) reads x in
    /// both, a sigmoid gate sigmoid(a) * b does not.
    bool shares_input = false;

    bool matches(uint32_t op) const noexcept;
};

/// A chain rule: consecutive producer -> consumer nodes fused into one kernel.
struct rule {
    std::string name;  ///< becomes the kernel's pattern
    std::vector<position> chain;
    size_t min_nodes = 2;
    std::string where;  ///< "file:line" of the rule, for messages
};

/// Ops that do no arithmetic of their own and join the kernel that consumes them.
struct absorb_entry {
    bool any_op = false;         ///< ops = ["*"]
    std::vector<uint32_t> ops;   ///< op ids, sorted
    bool only_constant = false;  ///< when = "constant": every output is a known constant
    /// shared = "producer": a kernel of such ops that several kernels read joins the one kernel
    /// producing what it reads (a view costs nothing wherever it is read); "keep" (default):
    /// it stays a kernel of its own.
    bool shared_to_producer = false;
    std::vector<uint32_t> into;  ///< the consuming kernel's core must hold one of these; empty: any

    bool matches_op(uint32_t op) const noexcept;
};

/// A parsed rules file.
class rule_set {
public:
    std::string file;
    std::vector<rule> rules;
    std::vector<absorb_entry> absorb;
    /// Pattern of a kernel made only of absorbable ops ("layout").
    std::string layout_pattern = "layout";

    /// Id of the op a node runs; k_no_op when no rule or absorb entry names it. The default
    /// ONNX domain is "" (or "ai.onnx"); other domains are named "domain:Op" in rules files.
    uint32_t op_id(std::string_view domain, std::string_view op_type) const;
    /// Id of an op key ("Conv", "com.example:Fused"), adding it when new.
    uint32_t intern(const std::string& key);

private:
    struct key_hash {
        using is_transparent = void;
        size_t operator()(std::string_view s) const noexcept {
            return std::hash<std::string_view>{}(s);
        }
    };
    std::unordered_map<std::string, uint32_t, key_hash, std::equal_to<>> ids_;
};

/// Reads the flattened values of a rules file. Every error names the file and line at fault and
/// what was expected; `file` names the file when no value carries a location (an empty file).
/// Throws nnergy::sdk::error.
rule_set parse_rules(const sdk::config_view& values, std::string_view file);

}  // namespace nnergy::fusion
