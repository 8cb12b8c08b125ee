// SPDX-License-Identifier: Apache-2.0
/// \file pooled_name.hpp
/// \brief Names the host stores once for the whole process (mapping keys and events, report
/// members).
#pragma once

#include <nnergy/plugin.h>

#include <cstddef>
#include <nnergy/modeling/text.hpp>
#include <string>
#include <string_view>

namespace nnergy::detail {

/// A name stored once for the whole process: the keys, levels and event names of mappings and
/// the member names of report documents. Every kernel of every run uses the same few dozen of
/// them, so a kernel keeps a pointer (8 bytes) where a string of its own cost 32 bytes and
/// often an allocation. The pool only grows, by the distinct names plugins and the host use,
/// and never moves a name.
class pooled_name {
public:
    constexpr pooled_name() noexcept : text_(&empty_) {}
    /// The pooled copy of `text`; thread-safe.
    static pooled_name of(std::string_view text);
    /// The same, where `hint` is the name the caller expects (the one last placed at the same
    /// position of the same kind of list on this thread): plugins set their keys in a fixed
    /// order, so the hint usually saves the lookup. The hint is updated.
    static pooled_name of(std::string_view text, pooled_name& hint) {
        if (!modeling::same_text(hint.view(), text)) hint = of(text);
        return hint;
    }
    /// Like of(text, hint), with a hint per position of the list kind `Tag`.
    template <class Tag>
    static pooled_name at(std::string_view text, size_t position) {
        constexpr size_t hinted = 64;
        thread_local pooled_name hints[hinted];
        return position < hinted ? of(text, hints[position]) : of(text);
    }
    /// As the ABI hands it out (nnergy_host_api::name_intern): the pooled string's address, the
    /// same for the same text for the rest of the process. Null for the empty name.
    const nnergy_name* handle() const noexcept {
        return text_ == &empty_ ? nullptr : reinterpret_cast<const nnergy_name*>(text_);
    }
    /// The name a handle() stands for; the empty name for null.
    static pooled_name from_handle(const nnergy_name* h) noexcept {
        return h ? pooled_name(reinterpret_cast<const std::string*>(h)) : pooled_name();
    }
    /// Becomes the pooled copy of `text`.
    pooled_name& operator=(std::string_view text) { return *this = of(text); }
    std::string_view view() const noexcept { return *text_; }
    /// Text around a name, as with a string.
    friend std::string operator+(std::string before, pooled_name name) {
        before += name.view();
        return before;
    }
    friend std::string operator+(pooled_name name, std::string_view after) {
        std::string s(name.view());
        s += after;
        return s;
    }
    bool empty() const noexcept { return text_->empty(); }
    operator std::string_view() const noexcept { return *text_; }
    friend bool operator==(pooled_name a, std::string_view b) noexcept {
        return modeling::same_text(a.view(), b);
    }
    /// One pool holds each name once: equal names are the same entry.
    friend bool operator==(pooled_name a, pooled_name b) noexcept { return a.text_ == b.text_; }

private:
    explicit pooled_name(const std::string* text) noexcept : text_(text) {}
    static const std::string empty_;
    const std::string* text_;
};

}  // namespace nnergy::detail
