# oh's .zshrc for the agent's zsh (docs/protocol.md §3.4.1), after a header that oh writes per shell:
# __oh_n (the marker nonce), __oh_fd (the fd of the private command pipe), __oh_run, __oh_snap, __oh_zdot
# (oh's ZDOTDIR for this shell).
# Also read by a zsh that an `exec` in the agent's shell started (`exec zsh`, `exec zsh -l`): the `exec`
# alias below hands that one process oh's ZDOTDIR and __oh_boot ("<pid> <command fd> <marker fd> <token>";
# the private fds survive the exec).
ZDOTDIR=$__oh_user_zd
builtin unset __oh_user_zd __oh_zd
if [[ -n ${__oh_boot-} ]]; then
  builtin read -r __oh_bpid __oh_fd __oh_m __oh_b <<<"$__oh_boot"
  builtin unset __oh_b
  builtin unset __oh_boot
  if [[ $__oh_bpid != $$ ]]; then
    # A shell that a program the agent exec'd started later (another process): the user's rc, no hooks.
    builtin unset __oh_bpid __oh_fd __oh_m __oh_n __oh_run __oh_snap __oh_zdot
    [[ -r $ZDOTDIR/.zshrc ]] && builtin source $ZDOTDIR/.zshrc
    builtin return
  fi
fi
__oh_rcst=0; if [[ -r $ZDOTDIR/.zshrc ]]; then builtin source $ZDOTDIR/.zshrc; __oh_rcst=$?; fi
[[ -n ${__oh_bpid-} ]] || builtin exec {__oh_m}>&2
if [[ -o errexit || -o nounset ]]; then __oh_eu=1; else __oh_eu=; fi
builtin unsetopt errexit nounset zle notify prompt_sp prompt_cr check_jobs check_running_jobs
builtin setopt monitor
builtin unset HISTFILE
PS2=
__oh_ran=
__oh_pc() {
  builtin local __oh_st=$?
  if [[ -n ${__oh_ran-} ]]; then
    __oh_ran=
    [[ -n $__oh_snap ]] && builtin export -p >| "$__oh_snap" 2>/dev/null
  fi
  __oh_last=$__oh_st
  builtin printf '\e]6973;%s;D;%s\x1f%s\x1f%s\a' "$__oh_n" "$__oh_st" "$PWD" "$PATH" >&$__oh_m
  builtin return $__oh_st
}
__oh_ret() { builtin return "$1"; }  # the previous command's $? for the next one, as in a terminal
__oh_x() { (( ZSH_SUBSHELL )) || builtin printf '\e]6973;%s;X;%s\x1f%s\a' "$__oh_n" "$?" "$PWD" >&$__oh_m; }
builtin typeset -ga precmd_functions zshexit_functions
__oh_hooks() {
  # zsh runs a function named precmd before precmd_functions: keep ours first by moving it into the array.
  if (( $+functions[precmd] )); then
    functions[__oh_user_precmd]=$functions[precmd]
    builtin unfunction precmd
    precmd_functions=(__oh_user_precmd ${precmd_functions:#__oh_user_precmd})
  fi
  [[ ${precmd_functions[1]-} == __oh_pc ]] || precmd_functions=(__oh_pc ${precmd_functions:#__oh_pc})
}
# Again after each command (run.zsh): one that empties precmd_functions must not take away the end marker.
__oh_keep() { __oh_hooks; builtin return "${1:-0}"; }
__oh_hooks
zshexit_functions+=(__oh_x)
# `exec <program>` typed by the agent: the E marker says an exec may follow (oh holds the output back from
# here: a shell that boots drops it), and the program's environment, for it only, points zsh at oh's
# ZDOTDIR. An alias, not a function: `exec 3<file` and `exec >log` must keep their redirections.
__oh_e() {
  builtin local t=$RANDOM$RANDOM
  builtin printf '\e]6973;%s;E;%s\a' "$__oh_n" "$t" >&$__oh_m
  builtin printf %s "$t"
}
builtin alias exec='__oh_boot="$$ $__oh_fd $__oh_m $(__oh_e)" OH_USER_ZDOTDIR=$ZDOTDIR ZDOTDIR=$__oh_zdot exec'
if [[ -n ${__oh_bpid-} ]]; then
  builtin unset __oh_bpid
  # Output since the `exec` (the new rc files' banner) was the startup's, not the command's; then its end.
  builtin printf '\e]6973;%s;B\a' "$__oh_n" >&$__oh_m
  __oh_ran=1
  __oh_ret 0 && __oh_pc
else
  builtin printf '\e]6973;%s;R;%s;%s\a' "$__oh_n" "$__oh_eu" "${__oh_rcst:-0}" >&$__oh_m
fi
