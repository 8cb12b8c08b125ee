// SPDX-License-Identifier: Apache-2.0
// The TorchScript frontend plugin: reads traced or scripted .pt archives (docs/torchscript.md).
// This library does not link libtorch: every plugin library is opened when the host scans its
// plugin directory, and libtorch would cost every run its start-up. The reader library that
// links libtorch lives in the "torchscript" folder beside this one and is opened on first use.
#include <dlfcn.h>

#include <filesystem>
#include <mutex>
#include <nnergy/sdk.hpp>
#include <string>
#include <vector>

#include "reader_api.h"

namespace {

/// This library's own file, found through one of its symbols.
std::filesystem::path own_file() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&own_file), &info) == 0 || !info.dli_fname) return {};
    return std::filesystem::path(info.dli_fname);
}

/// The reader's entry point; the reader stays loaded (libtorch does not unload cleanly).
nnergy_torchscript_read_fn reader() {
    static std::mutex lock;
    static nnergy_torchscript_read_fn read = nullptr;
    static std::string failure;
    std::lock_guard<std::mutex> guard(lock);
    if (read) return read;
    if (failure.empty()) {
        const std::filesystem::path file =
            own_file().parent_path() / "torchscript" / "libnnergy_torchscript_reader.so";
        void* handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            const char* why = dlerror();
            failure = "cannot open the TorchScript reader " + file.string() + ": " +
                      (why ? why : "unknown error") +
                      " (it is built with the plugin when libtorch-dev is installed)";
        } else if (void* symbol = dlsym(handle, NNERGY_TORCHSCRIPT_READER_SYMBOL)) {
            read = reinterpret_cast<nnergy_torchscript_read_fn>(symbol);
            return read;
        } else {
            failure = file.string() + " has no " NNERGY_TORCHSCRIPT_READER_SYMBOL;
        }
    }
    throw nnergy::sdk::error(failure, NNERGY_CODE_FAILED_PRECONDITION);
}

class torchscript_frontend final : public nnergy::sdk::frontend {
public:
    explicit torchscript_frontend(const nnergy::sdk::context& ctx) : frontend(ctx) {
        ctx.config().expect_only({"input_shapes"}, "nnergy.frontend.torchscript");
    }

    void load(std::string_view path, nnergy::sdk::graph_builder& out) override {
        // [model] input_shapes / --input-shape, flattened to input_shapes[i] (or one string).
        std::vector<std::string> shapes;
        for (const nnergy_named_value& v : ctx().config()) {
            if (v.kind != NNERGY_VALUE_STRING)
                throw nnergy::sdk::error(
                    nnergy::sdk::config_view::where(v) +
                        ": input_shapes must be strings such as \"batchx3x224x224\"",
                    NNERGY_CODE_INVALID_ARGUMENT);
            shapes.emplace_back(nnergy::sdk::from_sv(v.string_value));
        }
        std::vector<const char*> shape_ptrs;
        for (const std::string& s : shapes) shape_ptrs.push_back(s.c_str());
        const std::string file(path);
        std::vector<char> message(16384, '\0');
        const int code = reader()(&nnergy::sdk::host(), file.c_str(), shape_ptrs.data(),
                                  shape_ptrs.size(), out.handle(), message.data(), message.size());
        if (code != NNERGY_CODE_OK)
            throw nnergy::sdk::error(message.data(), static_cast<nnergy_status_code>(code));
    }
};

}  // namespace

NNERGY_PLUGIN_DEFINE("nnergy_frontend_torchscript", "0.1.0", "nnergy", "Apache-2.0",
                     "Reads TorchScript archives through libtorch",
                     nnergy::sdk::frontend_component<torchscript_frontend>(
                         "nnergy.frontend.torchscript",
                         "TorchScript archives from torch.jit.trace or torch.jit.script "
                         "(docs/torchscript.md)",
                         ".pt;.pth;.torchscript"))
