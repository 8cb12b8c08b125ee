// SPDX-License-Identifier: Apache-2.0
// NVIDIA GPUs through NVML, loaded with dlopen: no build dependency on the CUDA toolkit or the
// driver. The few types and signatures used are declared here as nvml.h declares them.
#include <dlfcn.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <nnergy/framework/error.hpp>
#include <nnergy/framework/meter.hpp>

namespace nnergy::meters {
namespace {

using nvml_return = int;  // nvmlReturn_t
struct nvml_device_st;
using nvml_device = nvml_device_st*;  // nvmlDevice_t

constexpr nvml_return nvml_success = 0;
constexpr nvml_return nvml_not_supported = 3;
constexpr nvml_return nvml_no_permission = 4;
constexpr nvml_return nvml_driver_not_loaded = 9;

struct nvml_library {
    void* handle = nullptr;
    std::string path;
    nvml_return (*init)() = nullptr;
    nvml_return (*shutdown)() = nullptr;
    const char* (*error_string)(nvml_return) = nullptr;
    nvml_return (*get_count)(unsigned*) = nullptr;
    nvml_return (*get_handle)(unsigned, nvml_device*) = nullptr;
    nvml_return (*get_name)(nvml_device, char*, unsigned) = nullptr;
    nvml_return (*get_energy)(nvml_device, unsigned long long*) = nullptr;
    nvml_return (*get_power)(nvml_device, unsigned*) = nullptr;
    bool initialised = false;

    // The library stays loaded (no dlclose): the driver's library registers handlers that
    // must not outlive its code, and a process loads it once.
    ~nvml_library() {
        if (initialised) shutdown();
    }

    std::string describe(nvml_return rc) const {
        const char* s = error_string ? error_string(rc) : nullptr;
        return fmt::format("{} (NVML error {})", s ? s : "unknown error", rc);
    }
};

template <class F>
void bind(nvml_library& lib, F& fn, const char* symbol) {
    void* p = dlsym(lib.handle, symbol);
    if (!p)
        throw nnergy::error(fmt::format("NVML: {} has no symbol {}: not an NVML library, or one "
                                        "older than the driver this needs (R450 or later)",
                                        lib.path, symbol),
                            exit_code::plugin_missing);
    fn = reinterpret_cast<F>(p);
}

std::shared_ptr<nvml_library> load_nvml() {
    auto lib = std::make_shared<nvml_library>();
    const char* env = std::getenv("NNERGY_NVML_LIBRARY");
    lib->path = env && *env ? env : "libnvidia-ml.so.1";
    lib->handle = dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
        const char* why = dlerror();
        throw nnergy::error(fmt::format("NVML: cannot load {}: {} (the NVIDIA driver installs it; "
                                        "NNERGY_NVML_LIBRARY may name the file)",
                                        lib->path, why ? why : "unknown error"),
                            exit_code::plugin_missing);
    }
    bind(*lib, lib->error_string, "nvmlErrorString");
    bind(*lib, lib->init, "nvmlInit_v2");
    bind(*lib, lib->shutdown, "nvmlShutdown");
    bind(*lib, lib->get_count, "nvmlDeviceGetCount_v2");
    bind(*lib, lib->get_handle, "nvmlDeviceGetHandleByIndex_v2");
    bind(*lib, lib->get_name, "nvmlDeviceGetName");
    bind(*lib, lib->get_energy, "nvmlDeviceGetTotalEnergyConsumption");
    bind(*lib, lib->get_power, "nvmlDeviceGetPowerUsage");
    const nvml_return rc = lib->init();
    if (rc != nvml_success) {
        const char* hint = rc == nvml_driver_not_loaded ? ": the NVIDIA driver is not loaded"
                           : rc == nvml_no_permission   ? ": no permission to use the GPUs"
                                                        : "";
        throw nnergy::error(
            fmt::format("NVML: nvmlInit_v2 failed in {}: {}{}", lib->path, lib->describe(rc), hint),
            exit_code::plugin_missing);
    }
    lib->initialised = true;
    return lib;
}

class nvml_gpu final : public domain_source {
public:
    nvml_gpu(std::shared_ptr<nvml_library> lib, nvml_device dev, unsigned index, std::string name,
             bool counter, bool power)
        : lib_(std::move(lib)),
          dev_(dev),
          index_(index),
          name_(std::move(name)),
          counter_(counter),
          power_(power) {}

    std::string domain() const override { return fmt::format("gpu{}", index_); }
    std::string device() const override { return name_; }
    bool has_counter() const override { return counter_; }
    bool has_power() const override { return power_; }

    double read_counter_j() override {
        unsigned long long mj = 0;
        const nvml_return rc = lib_->get_energy(dev_, &mj);
        if (rc != nvml_success)
            throw nnergy::error(fmt::format("NVML: GPU {}: nvmlDeviceGetTotalEnergyConsumption: {}",
                                            index_, lib_->describe(rc)),
                                exit_code::failure);
        return static_cast<double>(mj) * 1e-3;
    }

    double read_power_w() override {
        unsigned mw = 0;
        const nvml_return rc = lib_->get_power(dev_, &mw);
        if (rc != nvml_success)
            throw nnergy::error(fmt::format("NVML: GPU {}: nvmlDeviceGetPowerUsage: {}", index_,
                                            lib_->describe(rc)),
                                exit_code::failure);
        return static_cast<double>(mw) * 1e-3;
    }

private:
    std::shared_ptr<nvml_library> lib_;
    nvml_device dev_;
    unsigned index_;
    std::string name_;
    bool counter_, power_;
};

}  // namespace

std::unique_ptr<meter> open_nvml_meter(const std::vector<unsigned>& gpus, meter_options options) {
    std::shared_ptr<nvml_library> lib = load_nvml();
    unsigned count = 0;
    if (nvml_return rc = lib->get_count(&count); rc != nvml_success)
        throw nnergy::error(fmt::format("NVML: nvmlDeviceGetCount_v2: {}", lib->describe(rc)),
                            exit_code::plugin_missing);
    std::vector<nvml_device> devices(count, nullptr);
    std::vector<std::string> names(count);
    for (unsigned i = 0; i < count; ++i) {
        if (nvml_return rc = lib->get_handle(i, &devices[i]); rc != nvml_success)
            throw nnergy::error(fmt::format("NVML: GPU {}: nvmlDeviceGetHandleByIndex_v2: {}", i,
                                            lib->describe(rc)),
                                exit_code::plugin_missing);
        char buf[96] = {};
        if (lib->get_name(devices[i], buf, sizeof buf - 1) == nvml_success) names[i] = buf;
        if (names[i].empty()) names[i] = fmt::format("GPU {}", i);
    }
    const auto available = [&] {
        if (count == 0) return std::string("NVML reports no GPU");
        std::string s = fmt::format("NVML reports {} GPU{}:", count, count == 1 ? "" : "s");
        for (unsigned i = 0; i < count; ++i)
            s += fmt::format("{} {} ({})", i ? "," : "", i, names[i]);
        return s;
    };
    std::vector<unsigned> chosen;
    for (unsigned i : gpus)  // one domain per GPU, however often it is named
        if (std::find(chosen.begin(), chosen.end(), i) == chosen.end()) chosen.push_back(i);
    if (chosen.empty())
        for (unsigned i = 0; i < count; ++i) chosen.push_back(i);
    if (chosen.empty()) throw nnergy::error("NVML: " + available(), exit_code::plugin_missing);
    std::vector<std::unique_ptr<domain_source>> sources;
    for (unsigned i : chosen) {
        if (i >= count)
            throw nnergy::error(fmt::format("GPU {}: no such GPU; {}", i, available()),
                                exit_code::plugin_missing);
        unsigned long long mj = 0;
        const nvml_return erc = lib->get_energy(devices[i], &mj);
        unsigned mw = 0;
        const nvml_return prc = lib->get_power(devices[i], &mw);
        if (erc != nvml_success && erc != nvml_not_supported)
            throw nnergy::error(fmt::format("NVML: GPU {} ({}): the energy counter: {}", i,
                                            names[i], lib->describe(erc)),
                                exit_code::plugin_missing);
        if (prc != nvml_success && prc != nvml_not_supported)
            throw nnergy::error(fmt::format("NVML: GPU {} ({}): power readings: {}", i, names[i],
                                            lib->describe(prc)),
                                exit_code::plugin_missing);
        if (erc != nvml_success && prc != nvml_success)
            throw nnergy::error(fmt::format("NVML: GPU {} ({}) supports neither the energy counter "
                                            "nor power readings",
                                            i, names[i]),
                                exit_code::plugin_missing);
        sources.push_back(std::make_unique<nvml_gpu>(lib, devices[i], i, names[i],
                                                     erc == nvml_success, prc == nvml_success));
    }
    return make_meter("nvml", std::move(sources), std::move(options));
}

}  // namespace nnergy::meters
