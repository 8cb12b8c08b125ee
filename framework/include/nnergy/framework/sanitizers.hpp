// SPDX-License-Identifier: Apache-2.0
/// \file sanitizers.hpp
/// \brief NNERGY_UNDER_SANITIZER: 1 in a build with a sanitizer that brings its own allocator.
#pragma once

// GCC defines __SANITIZE_*__; clang answers __has_feature.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NNERGY_UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || \
    __has_feature(memory_sanitizer)
#define NNERGY_UNDER_SANITIZER 1
#endif
#endif
#ifndef NNERGY_UNDER_SANITIZER
#define NNERGY_UNDER_SANITIZER 0
#endif
