// SPDX-License-Identifier: Apache-2.0
// toml++'s implementation, compiled once into the host (TOML_HEADER_ONLY=0 everywhere else).
#define TOML_IMPLEMENTATION
#include <toml++/toml.h>
