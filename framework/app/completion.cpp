// SPDX-License-Identifier: Apache-2.0
#include "completion.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace nnergy::cli {
namespace {

/// One command of the tree ("nnergy hardware show") and what may follow it.
struct command {
    std::string path;
    std::vector<std::string> subcommands, options, value_options;
    std::string positional;  ///< the first positional argument's name, if any
    const completion_values* positional_values = nullptr;
    std::vector<std::pair<std::string, const completion_values*>> option_values;
};

const completion_values* lookup(const completion_table& table, const std::string& path,
                                const std::string& name) {
    // path is "nnergy analyze": the key names the command without the program.
    const size_t space = path.find(' ');
    if (space != std::string::npos) {
        auto it = table.find(path.substr(space + 1) + " " + name);
        if (it != table.end()) return &it->second;
    }
    auto it = table.find(name);
    return it == table.end() ? nullptr : &it->second;
}

void walk(const CLI::App& app, const std::string& path, const completion_table& table,
          std::vector<command>& out) {
    command c;
    c.path = path;
    const std::vector<const CLI::App*> subs =
        app.get_subcommands([](const CLI::App*) { return true; });
    for (const CLI::App* s : subs) c.subcommands.push_back(s->get_name());
    for (const CLI::Option* o : app.get_options()) {
        if (!o->nonpositional()) {
            if (c.positional.empty()) {
                c.positional = o->get_name();
                c.positional_values = lookup(table, path, c.positional);
            }
            continue;
        }
        std::vector<std::string> names;
        for (const std::string& s : o->get_snames()) names.push_back("-" + s);
        for (const std::string& l : o->get_lnames()) names.push_back("--" + l);
        const bool takes_value = o->get_items_expected_max() > 0;  // flags expect none
        for (const std::string& n : names) {
            c.options.push_back(n);
            if (!takes_value) continue;
            c.value_options.push_back(n);
            if (const completion_values* v = lookup(table, path, n))
                c.option_values.emplace_back(n, v);
        }
    }
    out.push_back(std::move(c));
    for (const CLI::App* s : subs) walk(*s, path + " " + s->get_name(), table, out);
}

// Words go into the script between single quotes, joined by spaces: a word that could break
// the quoting or the splitting is left out (names are file stems, plugin and dtype names).
bool plain(const std::string& w) {
    return !w.empty() && std::all_of(w.begin(), w.end(), [](char ch) {
        return std::isalnum(static_cast<unsigned char>(ch)) ||
               std::string_view("._-+:,=@/").find(ch) != std::string_view::npos;
    });
}

std::string words(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& w : v)
        if (plain(w)) out += (out.empty() ? "" : " ") + w;
    return out;
}

/// The tables as assignments: `NAME['KEY']='VALUE'` in bash, `NAME+=('KEY' 'VALUE')` in zsh
/// (which keeps the quotes of a subscript in the key).
std::string tables(const std::vector<command>& commands, std::string_view shell) {
    std::string out;
    const auto set = [&](std::string_view table, const std::string& key, const std::string& v) {
        if (shell == "zsh")
            out += fmt::format("{}+=('{}' '{}')\n", table, key, v);
        else
            out += fmt::format("{}['{}']='{}'\n", table, key, v);
    };
    const auto set_values = [&](const std::string& key, const completion_values& v) {
        set("_nnergy_values", key, words(v.words));
        set("_nnergy_files", key, v.files ? "1" : "0");
    };
    for (const command& c : commands) {
        if (!c.subcommands.empty()) set("_nnergy_subs", c.path, words(c.subcommands));
        set("_nnergy_opts", c.path, words(c.options));
        set("_nnergy_valopts", c.path, words(c.value_options));
        if (c.positional_values) set_values(c.path + " @", *c.positional_values);
        for (const auto& [name, v] : c.option_values) set_values(c.path + " " + name, *v);
    }
    return out;
}

constexpr std::string_view bash_body = R"(
# The candidates for COMP_WORDS[COMP_CWORD]: the command is found by walking the words before it,
# skipping options and the values of those that take one.
_nnergy() {
    local cmd=nnergy cur="${COMP_WORDS[COMP_CWORD]}" prev="" w key i expect=0 files=1 list=""
    for (( i = 1; i < COMP_CWORD; i++ )); do
        w="${COMP_WORDS[i]}"
        if (( expect )); then expect=0; continue; fi
        if [[ $w == -* ]]; then
            [[ $w != *=* && " ${_nnergy_valopts[$cmd]} " == *" $w "* ]] && expect=1
            continue
        fi
        [[ " ${_nnergy_subs[$cmd]} " == *" $w "* ]] && cmd="$cmd $w"
    done
    (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"
    if (( expect )); then
        key="$cmd $prev"
    elif [[ $cur == -* ]]; then
        key="" files=0 list="${_nnergy_opts[$cmd]}"
    elif [[ -n ${_nnergy_subs[$cmd]} ]]; then
        key="" files=0 list="${_nnergy_subs[$cmd]}"
    else
        key="$cmd @"
    fi
    if [[ -n $key && -n ${_nnergy_files[$key]} ]]; then
        list="${_nnergy_values[$key]}" files="${_nnergy_files[$key]}"
    fi
    COMPREPLY=($(compgen -W "$list" -- "$cur"))
    if (( files )); then
        local f
        while IFS= read -r f; do COMPREPLY+=("$f"); done < <(compgen -f -- "$cur")
    fi
}
complete -o filenames -F _nnergy nnergy
)";

constexpr std::string_view zsh_body = R"(
# The candidates for words[CURRENT] (zsh's completion variables) in reply, and REPLY=1 when file
# names fit too: the command is found by walking the words before it, skipping options and the
# values of those that take one.
_nnergy_candidates() {
    local cmd=nnergy w key cur=${words[CURRENT]}
    integer i expect=0
    reply=() REPLY=1
    for (( i = 2; i < CURRENT; i++ )); do
        w=${words[i]}
        if (( expect )); then expect=0; continue; fi
        if [[ $w == -* ]]; then
            [[ $w != *=* && " ${_nnergy_valopts[$cmd]} " == *" $w "* ]] && expect=1
            continue
        fi
        [[ " ${_nnergy_subs[$cmd]} " == *" $w "* ]] && cmd="$cmd $w"
    done
    if (( expect )); then
        key="$cmd ${words[CURRENT-1]}"
    elif [[ $cur == -* ]]; then
        reply=(${=_nnergy_opts[$cmd]}) REPLY=0; return
    elif [[ -n ${_nnergy_subs[$cmd]} ]]; then
        reply=(${=_nnergy_subs[$cmd]}) REPLY=0; return
    else
        key="$cmd @"
    fi
    if (( ${+_nnergy_files[$key]} )); then
        reply=(${=_nnergy_values[$key]}) REPLY=${_nnergy_files[$key]}
    fi
}

_nnergy() {
    local -a reply
    local REPLY
    _nnergy_candidates
    (( ${#reply} )) && compadd -a reply
    (( REPLY )) && _files
}

if [[ ${funcstack[1]} == _nnergy ]]; then
    _nnergy "$@"
elif (( ${+functions[compdef]} )); then
    compdef _nnergy nnergy
else
    print -u2 "nnergy completion: run compinit before loading this script"
fi
)";

}  // namespace

std::string completion_script(const CLI::App& app, std::string_view shell,
                              const completion_table& table) {
    std::vector<command> commands;
    walk(app, "nnergy", table, commands);
    std::string out;
    if (shell == "zsh") out += "#compdef nnergy\n";
    out += fmt::format(
        "# {} completion for nnergy, written by `nnergy completion {}` from its command "
        "definitions.\n",
        shell, shell);
    if (shell == "zsh")
        out +=
            "# Load it with `source <(nnergy completion zsh)` after compinit, or save it as "
            "_nnergy in a\n# directory of $fpath.\n"
            "typeset -gA _nnergy_subs _nnergy_opts _nnergy_valopts _nnergy_values "
            "_nnergy_files\n";
    else
        out +=
            "# Load it with `source <(nnergy completion bash)`, or save it in\n"
            "# ~/.local/share/bash-completion/completions/nnergy.\n"
            "declare -gA _nnergy_subs _nnergy_opts _nnergy_valopts _nnergy_values "
            "_nnergy_files\n";
    out += tables(commands, shell);
    out += shell == "zsh" ? zsh_body : bash_body;
    return out;
}

}  // namespace nnergy::cli
