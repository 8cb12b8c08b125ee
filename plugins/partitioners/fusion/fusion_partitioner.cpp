// SPDX-License-Identifier: Apache-2.0
// nnergy.partitioner.fusion: groups nodes into the kernels a fusing compiler would launch,
// following a rules file (docs/fusion-rules.md).
#include <memory>
#include <nnergy/sdk.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "partition.hpp"
#include "rules.hpp"

namespace {

using namespace nnergy;

class fusion_partitioner final : public sdk::partitioner {
public:
    explicit fusion_partitioner(const sdk::context& ctx)
        : sdk::partitioner(ctx), host_ctx_(ctx.handle()) {
        const sdk::config_view config = ctx.config();
        for (const nnergy_named_value& v : config) {
            const std::string_view key = sdk::from_sv(v.name);
            if (key != "rules" && key != "fuse")
                throw sdk::error(sdk::config_view::where(v) + ": '" + std::string(key) +
                                 "': unknown key for nnergy.partitioner.fusion (it takes rules "
                                 "and fuse)");
        }
        fuse_ = config.boolean("fuse").value_or(true);
        std::optional<std::string> path = config.string("rules");
        if (!path) {
            if (fuse_)
                throw sdk::error(
                    "nnergy.partitioner.fusion: missing 'rules' in the [partitioner] table: the "
                    "path of a fusion rules file, e.g. rules = \"../fusion/default.toml\" (or "
                    "fuse = false for one kernel per node)",
                    NNERGY_CODE_NOT_FOUND);
            return;
        }
        if (path->empty())
            throw sdk::error(sdk::config_view::where(*config.find("rules")) +
                             ": 'rules' is empty; it must name a fusion rules file");
        // Rules are read even when fusion is off, so a broken file is never hidden by a flag.
        const sdk::config_file file(ctx.handle(), *path);
        rules_ = std::make_unique<fusion::rule_set>(fusion::parse_rules(file.values(), *path));
    }

    void partition(const sdk::graph_view& graph, sdk::partition_builder& out) override {
        fusion::plan_summary summary;
        const std::vector<fusion::kernel_plan> plans =
            fusion::plan_kernels(graph, fuse_ ? rules_.get() : nullptr, &summary);
        for (const fusion::kernel_plan& k : plans) out.add_kernel(k.name, k.pattern, k.nodes);
        // The host context handle lives as long as this instance; the create arguments that
        // sdk::context points into do not, so log through the handle kept at creation.
        log_debug(std::to_string(graph.node_count()) + " nodes in " + std::to_string(plans.size()) +
                  " kernels; " + std::to_string(summary.fused_kernels) +
                  " kernels fused by rules hold " + std::to_string(summary.fused_nodes) +
                  " nodes; " + std::to_string(summary.absorbed_nodes) + " layout nodes absorbed");
    }

private:
    void log_debug(const std::string& message) const {
        sdk::host().log(host_ctx_, NNERGY_LOG_DEBUG, sdk::to_sv(message));
    }

    nnergy_host_context* host_ctx_;
    bool fuse_ = true;
    std::unique_ptr<fusion::rule_set> rules_;
};

}  // namespace

NNERGY_PLUGIN_DEFINE("nnergy_partitioner_fusion", "0.1.0", "nnergy", "Apache-2.0",
                     "Fusion partitioner driven by rules files",
                     nnergy::sdk::partitioner_component<fusion_partitioner>(
                         "nnergy.partitioner.fusion",
                         "groups nodes into fused kernels following a rules file "
                         "(conv+bn+act, gemm+bias+act, attention, layernorm, ...)"))
