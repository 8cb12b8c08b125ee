// SPDX-License-Identifier: Apache-2.0
// A plugin that breaks the one rule C cannot express: its entry point lets a C++ exception escape.
// The host must catch it, skip the library and keep running.
#include <nnergy/plugin.h>

#include <stdexcept>

extern "C" NNERGY_PLUGIN_EXPORT nnergy_status* nnergy_plugin_negotiate(const nnergy_host_info*,
                                                                       nnergy_plugin_info* out) {
    out->abi_major = NNERGY_ABI_MAJOR;
    out->abi_minor = NNERGY_ABI_MINOR;
    throw std::runtime_error("fake_throws: an exception escaping negotiation");
}
